/* The scenario loader (docs/scenarios.md). Strict on purpose: a recording
 * that says something the player would have to guess at (an unknown hop, a
 * refused call with an answer, a count that went down) is refused with the
 * step and key that are wrong, rather than replayed as a half-truth. Unknown
 * keys are ignored, as the format says.
 *
 * Input is untrusted (a fuzz target drives scenario_parse): every value is
 * type-checked before use, every allocation checked, and one free path
 * (scenario_free) releases whatever a failed parse had built. */
#include "scenario.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds that no real recording approaches: a file past them is refused
 * rather than held in memory. */
#define MAX_FILE_BYTES (16u << 20)
#define MAX_STEPS 10000

static const char *const hop_names[SCENARIO_HOP_COUNT] = {"model", "agent", "execute_code",
							   "manager", "daemon", "sandbox"};
static const char *const kind_names[] = {"hook", "call", "wait", "operator"};
static const char *const outcome_names[] = {"answered", "refused", "may_have_run"};
static const char *const leg_names[] = {"down", "up"};
static const char *const hook_names[] = {"turn_start", "suspend", "complete"};
/* docs/scenarios.md's actions, and those `bulkhead record` also writes. */
static const char *const action_names[] = {"pause", "resume",	   "hibernate",	     "inspect", "leaks",
					   "gc",    "kill_worker", "kill_daemon", "restart_daemon"};
/* The isolation tiers, weakest first (the engine's names; this file links
 * without the engine). */
static const char *const tier_names[] = {"none", "process", "container", "kernel", "vm"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *scenario_hop_name(enum scenario_hop h)
{
	return h >= 0 && h < SCENARIO_HOP_COUNT ? hop_names[h] : "none";
}

const char *scenario_kind_name(enum scenario_kind k)
{
	return (size_t)k < COUNT(kind_names) ? kind_names[k] : "?";
}

const char *scenario_outcome_name(enum scenario_outcome o)
{
	return (size_t)o < COUNT(outcome_names) ? outcome_names[o] : "?";
}

const char *scenario_leg_name(enum scenario_leg l)
{
	return (size_t)l < COUNT(leg_names) ? leg_names[l] : "?";
}

/* ---- errors ---- */

struct ctx {
	char *err;
	size_t errlen;
	size_t step; /* 1-based while a step is read, else 0 */
};

static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
	if (!c->err || !c->errlen)
		return -1;
	size_t used = 0;
	if (c->step)
		used = (size_t)snprintf(c->err, c->errlen, "step %zu: ", c->step);
	if (used < c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err + used, c->errlen - used, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- typed getters: a missing or mistyped key is an error naming it ---- */

static int dup_to(struct ctx *c, const char *s, char **out)
{
	*out = strdup(s);
	return *out ? 0 : fail(c, "out of memory");
}

/* A string; nullable: null (or absent, unless required) gives NULL. */
static int get_string(struct ctx *c, const cJSON *obj, const char *key, const char *label, bool required,
		      bool nullable, char **out)
{
	*out = NULL;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return required ? fail(c, "missing \"%s\"", label) : 0;
	if (cJSON_IsNull(it))
		return nullable ? 0 : fail(c, "\"%s\" is null, not a string", label);
	if (!cJSON_IsString(it) || !it->valuestring)
		return fail(c, "\"%s\" is not a string", label);
	return dup_to(c, it->valuestring, out);
}

static bool integral(const cJSON *it, long long *v)
{
	if (!cJSON_IsNumber(it))
		return false;
	double d = it->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < -9007199254740992.0 || d > 9007199254740992.0)
		return false;
	*v = (long long)d;
	return true;
}

/* An integer >= min; absent and not required gives dflt. */
static int get_int(struct ctx *c, const cJSON *obj, const char *key, const char *label, bool required,
		   long long min, long long dflt, long long *out)
{
	*out = dflt;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return required ? fail(c, "missing \"%s\"", label) : 0;
	long long v;
	if (!integral(it, &v))
		return fail(c, "\"%s\" is not an integer", label);
	if (v < min)
		return fail(c, "\"%s\" is %lld, below %lld", label, v, min);
	*out = v;
	return 0;
}

static int get_bool(struct ctx *c, const cJSON *obj, const char *key, const char *label, bool *out)
{
	*out = false;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return 0;
	if (!cJSON_IsBool(it))
		return fail(c, "\"%s\" is not true or false", label);
	*out = cJSON_IsTrue(it);
	return 0;
}

/* A string that must be one of names; its index. */
static int get_enum(struct ctx *c, const cJSON *obj, const char *key, const char *label,
		    const char *const *names, size_t n, const char *what, int *out)
{
	/* Written on every path, a failure's too: fail() is out of line, so
	 * the optimiser cannot see that a caller reads it only after a 0. */
	*out = -1;
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!it)
		return fail(c, "missing \"%s\"", label);
	if (!cJSON_IsString(it) || !it->valuestring)
		return fail(c, "\"%s\" is not a string", label);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(it->valuestring, names[i])) {
			*out = (int)i;
			return 0;
		}
	return fail(c, "unknown %s \"%.64s\"", what, it->valuestring);
}

static int hop_of(struct ctx *c, const cJSON *it, const char *label, enum scenario_hop *out)
{
	*out = SCENARIO_HOP_NONE; /* on every path, as get_enum's */
	if (!cJSON_IsString(it) || !it->valuestring)
		return fail(c, "\"%s\" is not a hop name", label);
	for (int i = 0; i < SCENARIO_HOP_COUNT; i++)
		if (!strcmp(it->valuestring, hop_names[i])) {
			*out = (enum scenario_hop)i;
			return 0;
		}
	return fail(c, "unknown hop \"%.64s\"", it->valuestring);
}

/* Every member of an object, its value kept as compact JSON. */
static int get_values(struct ctx *c, const cJSON *obj, const char *label, struct scenario_value **out,
		      size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!cJSON_IsObject(obj))
		return fail(c, "\"%s\" is not an object", label);
	size_t count = (size_t)cJSON_GetArraySize(obj);
	if (!count)
		return 0;
	*out = calloc(count, sizeof **out);
	if (!*out)
		return fail(c, "out of memory");
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		struct scenario_value *v = &(*out)[(*n)++];
		if (dup_to(c, it->string ? it->string : "", &v->key) < 0)
			return -1;
		v->json = cJSON_PrintUnformatted(it);
		if (!v->json)
			return fail(c, "out of memory");
		if (cJSON_IsString(it) && it->valuestring && dup_to(c, it->valuestring, &v->text) < 0)
			return -1;
	}
	return 0;
}

/* ---- the answer ---- */

/* The executeCode answer's keys and their types (plimsoll §4.5); others are
 * kept and shown as recorded. */
static const struct {
	const char *key;
	char type; /* s string, i integer, b boolean, h a SHA-256 in hex */
} answer_keys[] = {
	{"language", 's'},  {"exitCode", 'i'},	   {"timedOut", 'b'},	      {"stdout", 's'},
	{"stderr", 's'},    {"truncated", 'b'},	   {"stateKept", 'b'},	      {"freshInterpreter", 'b'},
	{"filesPersist", 'b'}, {"freshSandbox", 'b'}, {"isolation", 's'},     {"recordSha256", 'h'},
};

static bool is_sha256(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

static int check_answer(struct ctx *c, const cJSON *ans)
{
	if (!cJSON_GetObjectItemCaseSensitive(ans, "exitCode"))
		return fail(c, "missing \"answer.exitCode\"");
	for (size_t i = 0; i < COUNT(answer_keys); i++) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(ans, answer_keys[i].key);
		long long v;
		if (!it)
			continue;
		bool ok = answer_keys[i].type == 's'   ? cJSON_IsString(it)
			  : answer_keys[i].type == 'i' ? integral(it, &v)
			  : answer_keys[i].type == 'b' ? cJSON_IsBool(it)
						       : cJSON_IsString(it) && is_sha256(it->valuestring);
		if (!ok)
			return fail(c, "\"answer.%s\" is not %s", answer_keys[i].key,
				    answer_keys[i].type == 's'	 ? "a string"
				    : answer_keys[i].type == 'i' ? "an integer"
				    : answer_keys[i].type == 'b' ? "true or false"
								 : "a SHA-256 in lowercase hex");
	}
	return 0;
}

/* ---- one step ---- */

static int parse_call(struct ctx *c, const cJSON *j, struct scenario_step *st)
{
	const cJSON *call = cJSON_GetObjectItemCaseSensitive(j, "call");
	if (!call)
		return fail(c, "missing \"call\"");
	if (!cJSON_IsObject(call))
		return fail(c, "\"call\" is not an object");
	if (get_string(c, call, "language", "call.language", true, false, &st->language) < 0 ||
	    get_string(c, call, "code", "call.code", true, false, &st->code) < 0)
		return -1;
	if (!*st->language)
		return fail(c, "\"call.language\" is empty");
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(call, "files");
	if (files && !cJSON_IsNull(files)) {
		if (!cJSON_IsArray(files))
			return fail(c, "\"call.files\" is not an array");
		size_t n = (size_t)cJSON_GetArraySize(files);
		st->files = n ? calloc(n, sizeof *st->files) : NULL;
		if (n && !st->files)
			return fail(c, "out of memory");
		const cJSON *f;
		cJSON_ArrayForEach(f, files)
		{
			char label[64];
			snprintf(label, sizeof label, "call.files[%zu]", st->n_files);
			if (!cJSON_IsObject(f))
				return fail(c, "\"%s\" is not an object", label);
			struct scenario_file *sf = &st->files[st->n_files++];
			char lp[80], lc[80];
			snprintf(lp, sizeof lp, "%s.path", label);
			snprintf(lc, sizeof lc, "%s.content", label);
			if (get_string(c, f, "path", lp, true, false, &sf->path) < 0 ||
			    get_string(c, f, "content", lc, true, false, &sf->content) < 0)
				return -1;
			if (!*sf->path)
				return fail(c, "\"%s\" is empty", lp);
		}
	}
	int o;
	if (get_enum(c, j, "outcome", "outcome", outcome_names, COUNT(outcome_names), "outcome", &o) < 0)
		return -1;
	st->outcome = (enum scenario_outcome)o;
	const cJSON *ans = cJSON_GetObjectItemCaseSensitive(j, "answer");
	bool has_answer = ans && !cJSON_IsNull(ans);
	if (get_string(c, j, "error", "error", false, true, &st->error) < 0 ||
	    get_bool(c, j, "retried", "retried", &st->retried) < 0)
		return -1;
	/* ---- approvals ---- */
	const cJSON *held = cJSON_GetObjectItemCaseSensitive(j, "approval");
	if (held && !cJSON_IsNull(held)) {
		if (!cJSON_IsObject(held))
			return fail(c, "\"approval\" is not an object");
		if (get_string(c, held, "output", "approval.output", true, false, &st->approval) < 0)
			return -1;
	}
	if (st->outcome == SCENARIO_ANSWERED) {
		if (!has_answer)
			return fail(c, "outcome \"answered\" with no \"answer\"");
		if (!cJSON_IsObject(ans))
			return fail(c, "\"answer\" is not an object");
		if (st->error)
			return fail(c, "outcome \"answered\" with an \"error\"");
		if (st->stopped_at != SCENARIO_HOP_NONE)
			return fail(c, "outcome \"answered\" but \"stopped_at\" is \"%s\"",
				    hop_names[st->stopped_at]);
		if (check_answer(c, ans) < 0)
			return -1;
		if (get_values(c, ans, "answer", &st->answer, &st->n_answer) < 0)
			return -1;
		if (!st->n_answer)
			return fail(c, "\"answer\" is empty");
	} else {
		if (has_answer)
			return fail(c, "outcome \"%s\" with an \"answer\" (nothing was answered)",
				    outcome_names[st->outcome]);
		if (!st->error || !*st->error)
			return fail(c, "outcome \"%s\" with no \"error\" text", outcome_names[st->outcome]);
		if (st->outcome == SCENARIO_REFUSED && st->stopped_at == SCENARIO_HOP_NONE)
			return fail(c, "outcome \"refused\" with no \"stopped_at\" hop");
	}
	return 0;
}

/* ---- hops: the step's path ---- */
/* "path": [{"hop", "leg": "down"|"up", "narration", "wire": {"what", "text"}}].
 * Strict, because the player walks it a hop at a time: the down leg is the
 * step's hops in their order (so the two never disagree), ending at
 * stopped_at when something refused; the up leg climbs back through hops the
 * call passed, each higher than the last. */
static int parse_visit(struct ctx *c, const cJSON *v, size_t i, struct scenario_visit *out)
{
	char label[48], lw[64], lt[64];
	snprintf(label, sizeof label, "path[%zu]", i);
	if (!cJSON_IsObject(v))
		return fail(c, "\"%s\" is not an object", label);
	const cJSON *hop = cJSON_GetObjectItemCaseSensitive(v, "hop");
	if (!hop)
		return fail(c, "missing \"%s.hop\"", label);
	if (hop_of(c, hop, label, &out->hop) < 0)
		return -1;
	char lleg[64], ln[64];
	snprintf(lleg, sizeof lleg, "%s.leg", label);
	snprintf(ln, sizeof ln, "%s.narration", label);
	int leg;
	if (get_enum(c, v, "leg", lleg, leg_names, COUNT(leg_names), "leg", &leg) < 0)
		return -1;
	out->leg = (enum scenario_leg)leg;
	if (get_string(c, v, "narration", ln, true, false, &out->narration) < 0)
		return -1;
	if (!*out->narration)
		return fail(c, "\"%s\" is empty", ln);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "wire");
	if (!w || cJSON_IsNull(w))
		return 0;
	snprintf(lw, sizeof lw, "%s.wire.what", label);
	snprintf(lt, sizeof lt, "%s.wire.text", label);
	if (!cJSON_IsObject(w))
		return fail(c, "\"%s.wire\" is not an object", label);
	out->wire = calloc(1, sizeof *out->wire);
	if (!out->wire)
		return fail(c, "out of memory");
	if (get_string(c, w, "what", lw, true, false, &out->wire->what) < 0 ||
	    get_string(c, w, "text", lt, true, false, &out->wire->text) < 0)
		return -1;
	if (!*out->wire->what)
		return fail(c, "\"%s\" is empty", lw);
	return 0;
}

static int parse_path(struct ctx *c, const cJSON *j, struct scenario_step *st)
{
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(j, "path");
	if (!path || cJSON_IsNull(path))
		return 0;
	if (!cJSON_IsArray(path))
		return fail(c, "\"path\" is not an array");
	size_t n = (size_t)cJSON_GetArraySize(path);
	/* Each hop at most once down and once up. */
	if (n > 2 * SCENARIO_HOP_COUNT)
		return fail(c, "\"path\" has %zu hops: more than down and back up", n);
	if (!n)
		return st->n_hops ? fail(c, "\"path\" is empty but the step lit %zu hops", st->n_hops) : 0;
	st->path = calloc(n, sizeof *st->path);
	if (!st->path)
		return fail(c, "out of memory");
	size_t down = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, path)
	{
		size_t i = st->n_path;
		struct scenario_visit *vi = &st->path[st->n_path++];
		if (parse_visit(c, v, i, vi) < 0)
			return -1;
		if (vi->leg == SCENARIO_LEG_DOWN) {
			if (i != down)
				return fail(c, "\"path[%zu]\" goes down after the path came back up", i);
			if (down >= st->n_hops || st->hops[down] != vi->hop)
				return fail(c, "\"path[%zu]\" goes down to \"%s\", not the step's hop %zu (%s)", i,
					    hop_names[vi->hop], down + 1,
					    down < st->n_hops ? hop_names[st->hops[down]] : "none: it lit fewer");
			if (down && vi->hop <= st->path[down - 1].hop)
				return fail(c, "\"path[%zu]\" goes down to \"%s\", which is not below \"%s\"", i,
					    hop_names[vi->hop], hop_names[st->path[down - 1].hop]);
			down++;
			continue;
		}
		if (!down)
			return fail(c, "\"path[%zu]\" comes back up before anything went down", i);
		enum scenario_hop above = st->path[i - 1].hop;
		if (vi->hop >= above)
			return fail(c, "\"path[%zu]\" comes back up to \"%s\", not above \"%s\"", i,
				    hop_names[vi->hop], hop_names[above]);
		bool passed = false;
		for (size_t k = 0; k < down; k++)
			passed |= st->path[k].hop == vi->hop;
		if (!passed)
			return fail(c, "\"path[%zu]\" comes back up through \"%s\", which the call never passed", i,
				    hop_names[vi->hop]);
	}
	if (down != st->n_hops)
		return fail(c, "\"path\" goes down through %zu hops but the step lit %zu", down, st->n_hops);
	if (st->stopped_at != SCENARIO_HOP_NONE && st->path[down - 1].hop != st->stopped_at)
		return fail(c, "\"path\" goes down past \"stopped_at\" \"%s\"", hop_names[st->stopped_at]);
	return 0;
}

static int parse_step(struct ctx *c, const cJSON *j, struct scenario_step *st, const struct scenario_step *prev)
{
	st->stopped_at = SCENARIO_HOP_NONE;
	st->t_ms = -1;
	st->sent_ms = st->answered_ms = -1; /* ---- presenter ---- */
	if (!cJSON_IsObject(j))
		return fail(c, "not an object");
	int k;
	if (get_enum(c, j, "kind", "kind", kind_names, COUNT(kind_names), "kind", &k) < 0)
		return -1;
	st->kind = (enum scenario_kind)k;
	long long turn;
	if (get_int(c, j, "turn", "turn", true, 0, 0, &turn) < 0)
		return -1;
	if (turn > 1000000)
		return fail(c, "\"turn\" is %lld, past any conversation", turn);
	st->turn = (int)turn;
	if (get_string(c, j, "user_message", "user_message", false, true, &st->user_message) < 0 ||
	    get_string(c, j, "narration", "narration", true, false, &st->narration) < 0 ||
	    get_int(c, j, "t_ms", "t_ms", false, 0, -1, &st->t_ms) < 0)
		return -1;
	/* ---- presenter: a call's times, for the lanes ---- */
	if (get_int(c, j, "sent_ms", "sent_ms", false, 0, -1, &st->sent_ms) < 0 ||
	    get_int(c, j, "answered_ms", "answered_ms", false, 0, -1, &st->answered_ms) < 0)
		return -1;
	if (st->sent_ms >= 0 && st->answered_ms >= 0 && st->answered_ms < st->sent_ms)
		return fail(c, "\"answered_ms\" %lld is before \"sent_ms\" %lld", st->answered_ms,
			    st->sent_ms);

	const cJSON *hops = cJSON_GetObjectItemCaseSensitive(j, "hops");
	if (!hops)
		return fail(c, "missing \"hops\"");
	if (!cJSON_IsArray(hops))
		return fail(c, "\"hops\" is not an array");
	const cJSON *h;
	cJSON_ArrayForEach(h, hops)
	{
		enum scenario_hop hop;
		if (hop_of(c, h, "hops[]", &hop) < 0)
			return -1;
		for (size_t i = 0; i < st->n_hops; i++)
			if (st->hops[i] == hop)
				return fail(c, "hop \"%s\" lit twice", hop_names[hop]);
		st->hops[st->n_hops++] = hop; /* at most six: a seventh repeats one */
	}
	const cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stopped_at");
	if (stop && !cJSON_IsNull(stop)) {
		if (hop_of(c, stop, "stopped_at", &st->stopped_at) < 0)
			return -1;
		bool lit = false;
		for (size_t i = 0; i < st->n_hops; i++)
			lit |= st->hops[i] == st->stopped_at;
		if (!lit)
			return fail(c, "\"stopped_at\" \"%s\" is not one of the step's hops",
				    hop_names[st->stopped_at]);
	}

	if (parse_path(c, j, st) < 0) /* ---- hops ---- */
		return -1;

	/* The procedures so far: cumulative, so none may go down. */
	const cJSON *dc = cJSON_GetObjectItemCaseSensitive(j, "daemon_calls");
	if (!dc)
		return fail(c, "missing \"daemon_calls\"");
	if (!cJSON_IsObject(dc))
		return fail(c, "\"daemon_calls\" is not an object");
	size_t ndc = (size_t)cJSON_GetArraySize(dc);
	st->daemon_calls = ndc ? calloc(ndc, sizeof *st->daemon_calls) : NULL;
	if (ndc && !st->daemon_calls)
		return fail(c, "out of memory");
	const cJSON *d;
	cJSON_ArrayForEach(d, dc)
	{
		struct scenario_count *cnt = &st->daemon_calls[st->n_daemon_calls++];
		if (dup_to(c, d->string ? d->string : "", &cnt->name) < 0)
			return -1;
		if (!*cnt->name)
			return fail(c, "\"daemon_calls\" has a procedure with no name");
		if (!integral(d, &cnt->n) || cnt->n < 0)
			return fail(c, "\"daemon_calls.%.64s\" is not a count", cnt->name);
		for (size_t i = 0; prev && i < prev->n_daemon_calls; i++)
			if (!strcmp(prev->daemon_calls[i].name, cnt->name) && prev->daemon_calls[i].n > cnt->n)
				return fail(c, "\"daemon_calls.%.64s\" went down from %lld to %lld (they are cumulative)",
					    cnt->name, prev->daemon_calls[i].n, cnt->n);
	}

	switch (st->kind) {
	case SCENARIO_HOOK: {
		int hk;
		if (get_enum(c, j, "hook", "hook", hook_names, COUNT(hook_names), "hook", &hk) < 0)
			return -1;
		return dup_to(c, hook_names[hk], &st->hook);
	}
	case SCENARIO_CALL:
		return parse_call(c, j, st);
	case SCENARIO_WAIT:
		return get_int(c, j, "ms", "ms", true, 0, 0, &st->ms);
	case SCENARIO_OPERATOR: {
		int ak;
		if (get_enum(c, j, "action", "action", action_names, COUNT(action_names), "operator action", &ak) < 0)
			return -1;
		if (dup_to(c, action_names[ak], &st->action) < 0)
			return -1;
		return get_string(c, j, "output", "output", true, false, &st->output);
	}
	}
	return fail(c, "unknown kind");
}

/* ---- the file ---- */

static int parse_source(struct ctx *c, const cJSON *j, struct scenario_source *src)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "source");
	if (!s)
		return fail(c, "missing \"source\" (how it was recorded)");
	if (!cJSON_IsObject(s))
		return fail(c, "\"source\" is not an object");
	if (get_string(c, s, "recorder", "source.recorder", true, false, &src->recorder) < 0 ||
	    get_string(c, s, "recorded_at", "source.recorded_at", true, false, &src->recorded_at) < 0 ||
	    get_string(c, s, "script", "source.script", false, true, &src->script) < 0 ||
	    get_string(c, s, "daemon", "source.daemon", false, true, &src->daemon) < 0 ||
	    get_string(c, s, "how", "source.how", false, true, &src->how) < 0)
		return -1;
	const cJSON *fx = cJSON_GetObjectItemCaseSensitive(s, "fixtures");
	if (fx && !cJSON_IsNull(fx)) {
		if (!cJSON_IsArray(fx))
			return fail(c, "\"source.fixtures\" is not an array");
		size_t n = (size_t)cJSON_GetArraySize(fx);
		src->fixtures = n ? calloc(n, sizeof *src->fixtures) : NULL;
		if (n && !src->fixtures)
			return fail(c, "out of memory");
		const cJSON *f;
		cJSON_ArrayForEach(f, fx)
		{
			if (!cJSON_IsString(f) || !f->valuestring)
				return fail(c, "\"source.fixtures[%zu]\" is not a string", src->n_fixtures);
			if (dup_to(c, f->valuestring, &src->fixtures[src->n_fixtures++]) < 0)
				return -1;
		}
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "versions");
	if (v && !cJSON_IsNull(v) && get_values(c, v, "source.versions", &src->versions, &src->n_versions) < 0)
		return -1;
	return 0;
}

static int parse_tier(struct ctx *c, const char *label, const char *value)
{
	for (size_t i = 0; i < COUNT(tier_names); i++)
		if (!strcmp(value, tier_names[i]))
			return 0;
	return fail(c, "\"%s\" is \"%.32s\", not a tier (none, process, container, kernel, vm)", label, value);
}

static int parse_root(struct ctx *c, const cJSON *j, struct scenario *s)
{
	if (!cJSON_IsObject(j))
		return fail(c, "not a " SCENARIO_FORMAT " file (the top level is not an object)");
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "format");
	if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, SCENARIO_FORMAT)) {
		if (cJSON_IsString(fmt))
			return fail(c, "not a " SCENARIO_FORMAT " file (its format is \"%.64s\")", fmt->valuestring);
		return fail(c, "not a " SCENARIO_FORMAT " file (no \"format\")");
	}
	if (get_string(c, j, "name", "name", true, false, &s->name) < 0 ||
	    get_string(c, j, "title", "title", true, false, &s->title) < 0 ||
	    get_string(c, j, "teaches", "teaches", true, false, &s->teaches) < 0 ||
	    get_string(c, j, "tier", "tier", true, false, &s->tier) < 0 ||
	    get_string(c, j, "floor", "floor", false, true, &s->floor) < 0 ||
	    get_int(c, j, "idle_window_ms", "idle_window_ms", false, 0, 0, &s->idle_window_ms) < 0)
		return -1;
	if (!*s->name || strchr(s->name, '/'))
		return fail(c, "\"name\" \"%.64s\" is not a file name", s->name);
	if (parse_tier(c, "tier", s->tier) < 0 || (s->floor && parse_tier(c, "floor", s->floor) < 0))
		return -1;
	if (parse_source(c, j, &s->source) < 0)
		return -1;
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps");
	if (!steps)
		return fail(c, "missing \"steps\"");
	if (!cJSON_IsArray(steps))
		return fail(c, "\"steps\" is not an array");
	size_t n = (size_t)cJSON_GetArraySize(steps);
	if (!n)
		return fail(c, "no steps");
	if (n > MAX_STEPS)
		return fail(c, "%zu steps: more than %d", n, MAX_STEPS);
	s->steps = calloc(n, sizeof *s->steps);
	if (!s->steps)
		return fail(c, "out of memory");
	const cJSON *st;
	cJSON_ArrayForEach(st, steps)
	{
		c->step = s->n_steps + 1;
		struct scenario_step *prev = s->n_steps ? &s->steps[s->n_steps - 1] : NULL;
		if (parse_step(c, st, &s->steps[s->n_steps++], prev) < 0)
			return -1;
	}
	c->step = 0;
	return 0;
}

/* "line 3, column 5" of a position in the text. */
static void where(const char *json, size_t len, const char *at, char *buf, size_t n)
{
	size_t line = 1, col = 1;
	for (const char *p = json; p < json + len && p < at; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	snprintf(buf, n, "line %zu, column %zu", line, col);
}

int scenario_parse(const char *json, size_t len, struct scenario **out, char *err, size_t errlen)
{
	struct ctx c = {.err = err, .errlen = errlen};
	*out = NULL;
	if (err && errlen)
		*err = '\0';
	if (!json)
		return fail(&c, "no input");
	if (len > MAX_FILE_BYTES)
		return fail(&c, "%zu bytes: more than a scenario may hold (%u)", len, MAX_FILE_BYTES);
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!j) {
		char pos[64];
		where(json, len, end ? end : json, pos, sizeof pos);
		return fail(&c, "not JSON (a syntax error at %s)", pos);
	}
	/* Only blanks may follow the value: two values is not one file. */
	for (const char *p = end; p && p < json + len; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			char pos[64];
			where(json, len, p, pos, sizeof pos);
			cJSON_Delete(j);
			return fail(&c, "not JSON (something follows the value at %s)", pos);
		}
	struct scenario *s = calloc(1, sizeof *s);
	if (!s) {
		cJSON_Delete(j);
		return fail(&c, "out of memory");
	}
	int r = parse_root(&c, j, s);
	cJSON_Delete(j);
	if (r < 0) {
		scenario_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

static void values_free(struct scenario_value *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].key);
		free(v[i].json);
		free(v[i].text);
	}
	free(v);
}

void scenario_free(struct scenario *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->steps && i < s->n_steps; i++) {
		struct scenario_step *st = &s->steps[i];
		free(st->user_message);
		free(st->narration);
		for (size_t k = 0; st->daemon_calls && k < st->n_daemon_calls; k++)
			free(st->daemon_calls[k].name);
		free(st->daemon_calls);
		free(st->hook);
		free(st->language);
		free(st->code);
		for (size_t k = 0; st->files && k < st->n_files; k++) {
			free(st->files[k].path);
			free(st->files[k].content);
		}
		free(st->files);
		values_free(st->answer, st->n_answer);
		free(st->error);
		free(st->action);
		free(st->output);
		free(st->approval); /* ---- approvals ---- */
		for (size_t k = 0; st->path && k < st->n_path; k++) { /* ---- hops ---- */
			free(st->path[k].narration);
			if (st->path[k].wire) {
				free(st->path[k].wire->what);
				free(st->path[k].wire->text);
			}
			free(st->path[k].wire);
		}
		free(st->path);
	}
	free(s->steps);
	free(s->name);
	free(s->title);
	free(s->teaches);
	free(s->tier);
	free(s->floor);
	free(s->source.recorder);
	free(s->source.recorded_at);
	free(s->source.script);
	free(s->source.daemon);
	free(s->source.how);
	for (size_t i = 0; s->source.fixtures && i < s->source.n_fixtures; i++)
		free(s->source.fixtures[i]);
	free(s->source.fixtures);
	values_free(s->source.versions, s->source.n_versions);
	free(s);
}

const char *scenario_answer_get(const struct scenario_step *st, const char *key)
{
	for (size_t i = 0; st && i < st->n_answer; i++)
		if (!strcmp(st->answer[i].key, key))
			return st->answer[i].json;
	return NULL;
}

/* ---- files ---- */

static char *slurp(const char *path, size_t *len, char *why, size_t whylen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(why, whylen, "%s", strerror(errno));
		return NULL;
	}
	struct stat sb;
	if (fstat(fileno(f), &sb) < 0 || !S_ISREG(sb.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		fclose(f);
		return NULL;
	}
	if ((unsigned long long)sb.st_size > MAX_FILE_BYTES) {
		snprintf(why, whylen, "%lld bytes: more than a scenario may hold", (long long)sb.st_size);
		fclose(f);
		return NULL;
	}
	char *b = malloc((size_t)sb.st_size + 1);
	size_t got = b ? fread(b, 1, (size_t)sb.st_size, f) : 0;
	if (!b || ferror(f)) {
		snprintf(why, whylen, "%s", b ? "a read error" : "out of memory");
		free(b);
		fclose(f);
		return NULL;
	}
	b[got] = '\0';
	*len = got;
	fclose(f);
	return b;
}

int scenario_load(const char *path, struct scenario **out, char *err, size_t errlen)
{
	*out = NULL;
	char why[256];
	size_t len = 0;
	char *text = slurp(path, &len, why, sizeof why);
	if (!text) {
		snprintf(err, errlen, "%s: %s", path, why);
		return -1;
	}
	char inner[512];
	int r = scenario_parse(text, len, out, inner, sizeof inner);
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, inner);
		return -1;
	}
	/* The name is the file's: the player and `bulkhead replay NAME` find
	 * a scenario by it. */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t bl = strlen(base);
	if (bl < 6 || strcmp(base + bl - 5, ".json") || strlen((*out)->name) != bl - 5 ||
	    strncmp(base, (*out)->name, bl - 5)) {
		snprintf(err, errlen, "%s: \"name\" is \"%.64s\", not the file's name without .json", path,
			 (*out)->name);
		scenario_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

const char *scenario_dir(char *buf, size_t n)
{
	const char *env = getenv("BULKHEAD_SCENARIOS");
	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return buf;
	}
	/* The data directory is found the way the CLI finds data/interp: by
	 * its cell servers, beside the binary (a build directory in the source
	 * tree, or an installed bin/ next to share/bulkhead). */
	static const char *const tries[][2] = {{"%s/../data", "%s/../data/scenarios"},
					       {"%s/../share/bulkhead", "%s/../share/bulkhead/scenarios"},
					       {"%s/../../data", "%s/../../data/scenarios"}};
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0';
		const char *dir = dirname(self);
		for (size_t i = 0; i < COUNT(tries); i++) {
			char probe[PATH_MAX + 64];
			snprintf(probe, sizeof probe, tries[i][0], dir);
			strncat(probe, "/interp/python/cell.py", sizeof probe - strlen(probe) - 1);
			if (access(probe, R_OK) == 0) {
				char resolved[PATH_MAX + 64];
				snprintf(resolved, sizeof resolved, tries[i][1], dir);
				/* Shown in the console and in errors: without "/../". */
				char real[PATH_MAX];
				snprintf(real, sizeof real, tries[i][0], dir);
				char canon[PATH_MAX];
				if (realpath(real, canon))
					snprintf(buf, n, "%s/scenarios", canon);
				else
					snprintf(buf, n, "%s", resolved);
				return buf;
			}
		}
	}
	snprintf(buf, n, "data/scenarios");
	return buf;
}

int scenario_resolve(const char *dir, const char *name_or_path, char *path, size_t n, char *err, size_t errlen)
{
	size_t len = strlen(name_or_path);
	bool is_path = strchr(name_or_path, '/') || (len > 5 && !strcmp(name_or_path + len - 5, ".json"));
	if (is_path)
		snprintf(path, n, "%s", name_or_path);
	else
		snprintf(path, n, "%s/%s.json", dir, name_or_path);
	if (!*name_or_path) {
		snprintf(err, errlen, "no scenario named (give a NAME from %s, or a file)", dir);
		return -1;
	}
	if (access(path, R_OK) < 0) {
		if (is_path)
			snprintf(err, errlen, "no scenario file %s: %s", path, strerror(errno));
		else
			snprintf(err, errlen, "no scenario \"%s\": no %s", name_or_path, path);
		return -1;
	}
	return 0;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct scenario_entry *)x)->name, ((const struct scenario_entry *)y)->name);
}

int scenario_list(const char *dir, struct scenario_entry **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") || e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct scenario_entry *grown = realloc(*out, cap * sizeof **out);
			if (!grown) {
				closedir(d);
				scenario_list_free(*out, *n);
				*out = NULL;
				*n = 0;
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			*out = grown;
		}
		struct scenario_entry *en = &(*out)[(*n)++];
		memset(en, 0, sizeof *en);
		snprintf(en->name, sizeof en->name, "%.*s", (int)(len - 5), e->d_name);
		snprintf(en->path, sizeof en->path, "%s/%s", dir, e->d_name);
		if (scenario_load(en->path, &en->s, en->err, sizeof en->err) < 0) {
			/* The list names the file once: the error needs no path. */
			size_t pl = strlen(en->path);
			if (!strncmp(en->err, en->path, pl) && en->err[pl] == ':')
				memmove(en->err, en->err + pl + 2, strlen(en->err + pl + 2) + 1);
		}
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof **out, by_name);
	return 0;
}

void scenario_list_free(struct scenario_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		scenario_free(e[i].s);
	free(e);
}
