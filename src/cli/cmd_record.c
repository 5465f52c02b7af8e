/* bulkhead record SCRIPT.json [-o OUT.json]: plays the agent of a scripted
 * conversation with chat-run hook semantics (turn start warms, an idle
 * window suspends and disposes, completion disposes), drives the
 * conversation manager against a real daemon of its own, and writes what
 * happened, step by step, as a scenario (docs/scenarios.md). Nothing in a
 * scenario is invented: every answer is the tool's answer as returned. */
#include "manager.h"
#include "recorder.h"
#include "scenario.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: bulkhead record SCRIPT.json [-o OUT.json]\n"
	"Plays the scripted conversation against a daemon of its own and writes the\n"
	"scenario (default: data/scenarios/NAME.json beside the script's directory).\n";

static const char *const counted[] = {"OpenSession", "SessionRun", "CloseSession"};

static long elapsed_ms(const struct recording *r)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - r->t0.tv_sec) * 1000 + (now.tv_nsec - r->t0.tv_nsec) / 1000000;
}

/* ---- workers ---- */

static void worker_drop(struct recording *r, struct worker *w, bool dispose)
{
	if (!w->c)
		return;
	if (dispose && w->m) {
		bh_manager_dispose_all(w->m);
		for (int i = 0; i < 300 && bh_client_pending(w->c); i++)
			bh_manager_wait(w->m, NULL, 100);
	}
	for (size_t i = 0; i < 3; i++)
		r->base_calls[i] += bh_client_procedure_count(w->c, counted[i]);
	bh_manager_free(w->m);
	bh_client_free(w->c);
	w->m = NULL;
	w->c = NULL;
}

static struct worker *worker(struct recording *r, const char *name)
{
	struct worker *w = NULL;
	for (size_t i = 0; i < r->n_workers; i++)
		if (!strcmp(r->workers[i].name, name))
			w = &r->workers[i];
	if (!w) {
		if (r->n_workers == MAX_WORKERS)
			return NULL;
		w = &r->workers[r->n_workers++];
		snprintf(w->name, sizeof w->name, "%s", name);
	}
	if (!w->c) {
		struct bh_client_options co = {.target = r->d.sock, .token = r->d.token};
		struct bh_client_error *err = NULL;
		struct bh_manager_options mo = r->mo;
		if (bh_client_new(&co, &w->c, &err) < 0 ||
		    (mo.client = w->c, bh_manager_new(&mo, &w->m, &err) < 0)) {
			cli_client_error(err);
			bh_client_error_free(err);
			return NULL;
		}
		bh_client_set_tap(w->c, rec_tap_on, &r->tap); /* ---- hops ---- */
	}
	return w;
}

static uint64_t calls_so_far(struct recording *r, size_t which)
{
	uint64_t n = r->base_calls[which];
	for (size_t i = 0; i < r->n_workers; i++)
		if (r->workers[i].c)
			n += bh_client_procedure_count(r->workers[i].c, counted[which]);
	return n;
}

/* Lets every worker's loop run (answers, closes, idle timers) for ms. */
static void run_loops(struct recording *r, long ms)
{
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		for (size_t i = 0; i < r->n_workers; i++)
			if (r->workers[i].m)
				bh_manager_wait(r->workers[i].m, NULL, 10);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long done = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (done >= ms)
			return;
		struct timespec nap = {0, 10 * 1000000L};
		nanosleep(&nap, NULL);
	}
}

/* Until nothing is in flight for this worker (closes sent after a dispose). */
static void settle(struct worker *w)
{
	for (int i = 0; i < 600 && w->c && bh_client_pending(w->c); i++)
		bh_manager_wait(w->m, NULL, 100);
}

/* ---- steps ---- */

/* The n hops from first on, in pipeline order: a step lights a run of them
 * (the format's names, scenario_hop_name). */
static cJSON *hops(enum scenario_hop first, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n && first + (int)i < SCENARIO_HOP_COUNT; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(scenario_hop_name(first + (int)i)));
	return a;
}

/* A call that came back lit every hop, model to sandbox. */
static cJSON *every_hop(void)
{
	return hops(SCENARIO_HOP_MODEL, SCENARIO_HOP_COUNT);
}

static cJSON *step_new(struct recording *r, const cJSON *src, enum scenario_kind kind)
{
	rec_tap_reset(&r->tap); /* ---- hops ---- the step's exchanges start here */
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "kind", scenario_kind_name(kind));
	const cJSON *turn = cJSON_GetObjectItemCaseSensitive(src, "turn");
	if (cJSON_IsNumber(turn))
		r->turn = turn->valueint;
	cJSON_AddNumberToObject(s, "turn", r->turn);
	const char *msg = rec_str(src, "user_message", NULL);
	if (msg)
		cJSON_AddStringToObject(s, "user_message", msg);
	cJSON_AddStringToObject(s, "narration", rec_str(src, "narration", ""));
	if (kind == SCENARIO_CALL) /* ---- presenter: the lanes' times ---- */
		cJSON_AddNumberToObject(s, "sent_ms", (double)elapsed_ms(r));
	return s;
}

static void step_finish(struct recording *r, cJSON *s, cJSON *lit, enum scenario_hop stopped_at)
{
	cJSON_AddItemToObject(s, "hops", lit);
	if (stopped_at != SCENARIO_HOP_NONE)
		cJSON_AddStringToObject(s, "stopped_at", scenario_hop_name(stopped_at));
	else
		cJSON_AddNullToObject(s, "stopped_at");
	cJSON *calls = cJSON_CreateObject();
	for (size_t i = 0; i < 3; i++)
		cJSON_AddNumberToObject(calls, counted[i], (double)calls_so_far(r, i));
	cJSON_AddItemToObject(s, "daemon_calls", calls);
	cJSON_AddNumberToObject(s, "t_ms", (double)elapsed_ms(r));
	/* ---- presenter: a call is finished when its answer is back ---- */
	if (cJSON_GetObjectItemCaseSensitive(s, "sent_ms") &&
	    !cJSON_GetObjectItemCaseSensitive(s, "answered_ms"))
		cJSON_AddNumberToObject(s, "answered_ms", (double)elapsed_ms(r));
	cJSON_AddItemToArray(r->steps, s);
}

static int parse_files(const cJSON *call, struct bh_file **out, size_t *n)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(call, "files");
	*out = NULL;
	*n = 0;
	if (!files)
		return 0;
	if (!cJSON_IsArray(files))
		return -1;
	size_t count = (size_t)cJSON_GetArraySize(files);
	*out = calloc(count ? count : 1, sizeof **out);
	const cJSON *f;
	cJSON_ArrayForEach(f, files) {
		const char *path = rec_str(f, "path", NULL), *content = rec_str(f, "content", NULL);
		if (!path || !content)
			return -1;
		(*out)[*n].path = path;
		(*out)[*n].content = (const uint8_t *)content;
		(*out)[*n].len = strlen(content);
		(*n)++;
	}
	return 0;
}

struct outcome {
	bool done;
	struct bh_exec_output out;
	struct bh_client_error *err;
};

static void on_answer(void *arg, struct bh_exec_output *out, const struct bh_client_error *err)
{
	struct outcome *o = arg;
	o->done = true;
	if (err)
		o->err = bh_client_error_dup(err);
	else {
		o->out = *out;
		memset(out, 0, sizeof *out);
	}
}

static void add_answer(cJSON *s, const struct bh_exec_output *out)
{
	char *json = bh_exec_output_json(out);
	cJSON_AddItemToObject(s, "answer", cJSON_Parse(json));
	free(json);
	cJSON_AddBoolToObject(s, "retried", out->retried);
}

/* The hops a refused call lit, up to the one that refused it. */
static cJSON *hops_until(enum scenario_hop stopped_at)
{
	return hops(SCENARIO_HOP_MODEL, (size_t)stopped_at + 1);
}

static int ensure_op(struct recording *r);

/* ---- approvals: the operator decides a held call while the agent waits ---- */
/* The daemon (serve --approval required, from the script's daemon_args)
 * holds the call: the worker's request stays open while the operator's
 * client finds it and decides it. What the operator saw and did goes into
 * the step ("approval"); the call's outcome is then recorded as usual. */
static int decide_held(struct recording *r, struct worker *w, cJSON *s, const cJSON *approval,
		       bool *done)
{
	const char *decision = rec_str(approval, "decision", "approve");
	const char *reason = rec_str(approval, "reason", "");
	if (ensure_op(r) < 0)
		return -1;
	for (int i = 0; i < 300 && !*done; i++) {
		bh_manager_wait(w->m, done, 100);
		struct wire_operator_approvals list;
		struct bh_client_error *err = NULL;
		if (bh_client_list_approvals(r->op, &list, &err) < 0) {
			cli_error("%s: ListApprovals: %s", r->script_path, err->message);
			bh_client_error_free(err);
			return -1;
		}
		if (!list.n) {
			wire_operator_approvals_free(&list);
			continue;
		}
		char line[1024];
		/* Not the call's id: it is new on every recording. */
		snprintf(line, sizeof line, "held: %s of %s, waiting for a decision",
			 list.approvals[0].procedure, list.approvals[0].principal);
		struct wire_operator_decision out;
		int rc = bh_client_decide_approval(r->op, list.approvals[0].id,
						   !strcmp(decision, "approve"), reason, &out, &err);
		wire_operator_approvals_free(&list);
		if (rc < 0) {
			cli_error("%s: DecideApproval: %s", r->script_path, err->message);
			bh_client_error_free(err);
			return -1;
		}
		cJSON *a = cJSON_AddObjectToObject(s, "approval");
		cJSON_AddStringToObject(a, "decision", out.decision);
		cJSON_AddStringToObject(a, "reason", out.reason);
		cJSON_AddStringToObject(a, "by", out.by);
		size_t len = strlen(line);
		snprintf(line + len, sizeof line - len, "; %s by %s%s%s",
			 !strcmp(out.decision, "approve") ? "approved" : "denied", out.by,
			 *out.reason ? ": " : "", out.reason);
		cJSON_AddStringToObject(a, "output", line);
		wire_operator_decision_free(&out);
		return 0;
	}
	cli_error("%s: the call was never held (is the daemon started with --approval required?)",
		  r->script_path);
	return -1;
}

/* ---- hops ---- whether w's manager holds key's sandbox (still opening),
 * and its fingerprint ("" when none). */
static void entry_of(struct worker *w, const char *key, bool *has, bool *opening, char fp[65])
{
	struct bh_manager_entry e[16];
	size_t n = bh_manager_entries(w->m, e, 16);
	*has = *opening = false;
	fp[0] = '\0';
	for (size_t i = 0; i < n && i < 16; i++)
		if (!strcmp(e[i].key, key)) {
			*has = true;
			*opening = e[i].opening;
			snprintf(fp, 65, "%s", e[i].fingerprint);
		}
}

static int do_call(struct recording *r, const cJSON *src, const cJSON *call)
{
	const char *lang_name = rec_str(call, "language", "python"), *code = rec_str(call, "code", NULL);
	enum bh_language lang;
	if (!code || bh_language_parse(lang_name, &lang) < 0) {
		cli_error("%s: a call needs code and a language (python or javascript)", r->script_path);
		return -1;
	}
	struct bh_file *files = NULL;
	size_t n_files = 0;
	if (parse_files(call, &files, &n_files) < 0) {
		free(files);
		cli_error("%s: a call's files are [{\"path\", \"content\"}]", r->script_path);
		return -1;
	}
	struct worker *w = worker(r, rec_str(src, "worker", "A"));
	if (!w) {
		free(files);
		return -1;
	}
	const char *key = rec_str(src, "run", "run-1"), *owner = rec_str(src, "owner", NULL);
	cJSON *s = step_new(r, src, SCENARIO_CALL);
	cJSON *in = cJSON_CreateObject();
	cJSON_AddStringToObject(in, "language", lang_name);
	cJSON_AddStringToObject(in, "code", code);
	if (n_files)
		cJSON_AddItemToObject(in, "files",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(call, "files"), 1));
	cJSON_AddItemToObject(s, "call", in);
	uint64_t before = calls_so_far(r, 0) + calls_so_far(r, 1);
	/* ---- hops ---- what the manager held, and the counts, before the call */
	struct rec_call_seen seen = {.key = key, .owner = owner, .language = lang_name, .code = code,
				     .floor = r->floor, .tier = r->d.isolation, .tap = &r->tap};
	entry_of(w, key, &seen.had_entry, &seen.was_opening, seen.fp_before);
	long long counts_before[3];
	for (size_t i = 0; i < 3; i++)
		counts_before[i] = (long long)calls_so_far(r, i);
	struct outcome o = {0};
	struct bh_exec_input ei = {.language = lang, .code = code, .files = files, .n_files = n_files};
	struct bh_client_error *err = NULL;
	if (bh_manager_run_async(w->m, key, owner, &ei, on_answer, &o, &err) < 0) {
		o.done = true;
		o.err = err;
	}
	const cJSON *approval = cJSON_GetObjectItemCaseSensitive(src, "approval");
	if (approval && decide_held(r, w, s, approval, &o.done) < 0) {
		while (!o.done)
			bh_manager_wait(w->m, &o.done, 1000);
		free(files);
		cJSON_Delete(s);
		return -1;
	}
	while (!o.done)
		bh_manager_wait(w->m, &o.done, 1000);
	bool ignored;
	entry_of(w, key, &ignored, &ignored, seen.fp_after);
	seen.opened = (long long)calls_so_far(r, 0) - counts_before[0];
	seen.ran = (long long)calls_so_far(r, 1) - counts_before[1];
	seen.closed = (long long)calls_so_far(r, 2) - counts_before[2];
	seen.in = &ei;
	if (!o.err) {
		cJSON_AddStringToObject(s, "outcome", scenario_outcome_name(SCENARIO_ANSWERED));
		add_answer(s, &o.out);
		cJSON_AddNullToObject(s, "error");
		seen.out = &o.out;
		seen.stopped = SCENARIO_HOP_NONE;
		cJSON *path = rec_call_path(&seen);
		rec_egress_annotate(r, src, path); /* ---- egress ---- what the broker did */
		cJSON_AddItemToObject(s, "path", path);
		free(files);
		bh_exec_output_free(&o.out);
		step_finish(r, s, every_hop(), SCENARIO_HOP_NONE);
		return 0;
	}
	bool refused = o.err->not_dispatched;
	/* Refused before a request left the worker: the manager stopped it. */
	enum scenario_hop stopped = !refused ? SCENARIO_HOP_NONE
				    : calls_so_far(r, 0) + calls_so_far(r, 1) == before ? SCENARIO_HOP_MANAGER
											 : SCENARIO_HOP_DAEMON;
	cJSON_AddStringToObject(s, "outcome",
				scenario_outcome_name(refused ? SCENARIO_REFUSED : SCENARIO_MAY_HAVE_RUN));
	cJSON_AddNullToObject(s, "answer");
	cJSON_AddStringToObject(s, "error", o.err->message);
	seen.err = o.err;
	seen.stopped = stopped;
	cJSON *path = rec_call_path(&seen);
	rec_egress_annotate(r, src, path); /* ---- egress ---- */
	cJSON_AddItemToObject(s, "path", path);
	free(files);
	bh_client_error_free(o.err);
	step_finish(r, s, refused ? hops_until(stopped) : every_hop(), stopped);
	return 0;
}

static int do_hook(struct recording *r, const cJSON *src, const char *hook)
{
	struct worker *w = worker(r, rec_str(src, "worker", "A"));
	if (!w)
		return -1;
	const char *key = rec_str(src, "run", "run-1"), *owner = rec_str(src, "owner", NULL);
	cJSON *s = step_new(r, src, SCENARIO_HOOK);
	cJSON_AddStringToObject(s, "hook", hook);
	/* ---- hops ---- what the manager held before and after, and what was sent */
	struct rec_hook_seen seen = {.hook = hook, .key = key, .floor = r->floor, .tap = &r->tap};
	bool opening;
	entry_of(w, key, &seen.had_entry, &opening, seen.fp_before);
	if (!strcmp(hook, "turn_start"))
		bh_manager_warm(w->m, key, owner);
	else /* suspend or complete (record_script.c's check took every other name) */
		bh_manager_dispose(w->m, key);
	/* The turn does not wait; the recorder does, so steps stay in order. */
	settle(w);
	entry_of(w, key, &seen.holds_after, &opening, seen.fp_after);
	cJSON *lit = cJSON_CreateArray();
	enum scenario_hop stopped;
	cJSON *path = rec_hook_path(&seen, lit, &stopped);
	rec_egress_annotate(r, src, path); /* ---- egress ---- the session's hold on its profile */
	cJSON_AddItemToObject(s, "path", path);
	step_finish(r, s, lit, stopped);
	return 0;
}

/* The fingerprint of key's sandbox in any worker ("" when none holds it). */
static const char *fingerprint_of(struct recording *r, const char *key)
{
	static char fp[65];
	fp[0] = '\0';
	for (size_t i = 0; i < r->n_workers; i++) {
		if (!r->workers[i].m)
			continue;
		struct bh_manager_entry e[16];
		size_t n = bh_manager_entries(r->workers[i].m, e, 16);
		for (size_t j = 0; j < n && j < 16; j++)
			if (!strcmp(e[j].key, key))
				snprintf(fp, sizeof fp, "%s", e[j].fingerprint);
	}
	return fp;
}

/* Runs this binary with args; its stdout and stderr, or NULL. */
static char *run_self(const char *const *args)
{
	int p[2];
	if (pipe(p) < 0)
		return NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv("/proc/self/exe", (char **)args);
		_exit(127);
	}
	close(p[1]);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	ssize_t n;
	while ((n = read(p[0], buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	close(p[0]);
	buf[len] = '\0';
	waitpid(pid, NULL, 0);
	return buf;
}

static int ensure_op(struct recording *r)
{
	if (r->op)
		return 0;
	struct bh_client_options co = {.target = r->d.sock, .token = r->d.token};
	struct bh_client_error *err = NULL;
	if (bh_client_new(&co, &r->op, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return -1;
	}
	bh_client_set_tap(r->op, rec_tap_on, &r->tap); /* ---- hops ---- */
	return 0;
}

static int do_operator(struct recording *r, const cJSON *src, const char *action)
{
	cJSON *s = step_new(r, src, SCENARIO_OPERATOR);
	cJSON_AddStringToObject(s, "action", action);
	const char *key = rec_str(src, "run", "run-1");
	char text[8192] = "";
	struct bh_client_error *err = NULL;
	int rc = 0;
	if (!strcmp(action, "pause") || !strcmp(action, "resume") || !strcmp(action, "hibernate") ||
	    !strcmp(action, "inspect")) {
		const char *fp = fingerprint_of(r, key);
		if (!*fp || ensure_op(r) < 0) {
			cJSON_Delete(s);
			cli_error("%s: operator %s: no sandbox holds run %s", r->script_path, action, key);
			return -1;
		}
		if (!strcmp(action, "pause"))
			rc = bh_client_pause(r->op, fp, &err);
		else if (!strcmp(action, "resume"))
			rc = bh_client_resume(r->op, fp, &err);
		else if (!strcmp(action, "hibernate"))
			rc = bh_client_hibernate(r->op, fp, &err);
		if (rc == 0) {
			struct wire_operator_session info;
			if (bh_client_get_session(r->op, fp, &info, &err) == 0) {
				snprintf(text, sizeof text, "session %.12s: %s, %llu calls, %s tier", fp,
					 info.state, (unsigned long long)info.calls, info.isolation);
				wire_operator_session_free(&info);
			} else {
				rc = -1;
			}
		}
		if (rc < 0)
			snprintf(text, sizeof text, "%s", err ? err->message : "failed");
		bh_client_error_free(err);
		cJSON_AddStringToObject(s, "output", text);
		cJSON *lit = cJSON_CreateArray(); /* ---- hops ---- */
		cJSON_AddItemToObject(s, "path", rec_operator_path(action, fp, text, r->daemon_dead, &r->tap, lit));
		step_finish(r, s, lit, SCENARIO_HOP_NONE);
		return 0;
	}
	if (!strcmp(action, "kill_daemon")) {
		snprintf(text, sizeof text, "kill -9 %d (bulkhead serve)", (int)r->d.pid);
		rec_daemon_kill(&r->d);
		/* The dead worker's clients go with it: nothing disposes. */
		for (size_t i = 0; i < r->n_workers; i++)
			worker_drop(r, &r->workers[i], false);
		bh_client_free(r->op);
		r->op = NULL;
		cJSON_AddStringToObject(s, "output", text);
		r->daemon_dead = true; /* ---- hops ---- */
		step_finish(r, s, cJSON_CreateArray(), SCENARIO_HOP_NONE);
		return 0;
	}
	if (!strcmp(action, "leaks") || !strcmp(action, "gc")) {
		const char *args[] = {"bulkhead", action, "--state", r->d.state, NULL};
		char *out = run_self(args);
		cJSON_AddStringToObject(s, "output", out ? out : "");
		cJSON *lit = cJSON_CreateArray(); /* ---- hops ---- */
		cJSON_AddItemToObject(s, "path", rec_operator_path(action, "", out ? out : "", r->daemon_dead, &r->tap, lit));
		free(out);
		step_finish(r, s, lit, SCENARIO_HOP_NONE);
		return 0;
	}
	if (!strcmp(action, "restart_daemon")) {
		if (rec_daemon_start(&r->d) < 0) {
			cJSON_Delete(s);
			return -1;
		}
		snprintf(text, sizeof text, "bulkhead serve started again (pid %d)", (int)r->d.pid);
		cJSON_AddStringToObject(s, "output", text);
		r->daemon_dead = false; /* ---- hops ---- */
		cJSON *lit = cJSON_CreateArray();
		cJSON_AddItemToObject(s, "path", rec_operator_path(action, "", text, false, &r->tap, lit));
		step_finish(r, s, lit, SCENARIO_HOP_NONE);
		return 0;
	}
	cJSON_Delete(s);
	cli_error("%s: unknown operator action \"%s\"", r->script_path, action);
	return -1;
}

/* ---- three calls at once on one session: the daemon's turn rule ---- */

struct raw {
	bool done;
	long status;
	char *body;
	enum wire_code code;
	bool not_dispatched;
	/* ---- presenter: when it was sent and answered (the lanes) ---- */
	const struct recording *r;
	long sent_ms, answered_ms;
};

static void on_raw(void *arg, const struct bh_client_http *a)
{
	struct raw *x = arg;
	x->done = true;
	if (x->r) /* ---- presenter ---- */
		x->answered_ms = elapsed_ms(x->r);
	x->status = a->status;
	x->body = strdup(a->body ? a->body : "");
	struct bh_client_error *e = bh_client_error_of(a);
	if (e) {
		x->code = e->code;
		x->not_dispatched = e->not_dispatched;
		free(x->body);
		x->body = strdup(e->message);
		bh_client_error_free(e);
	}
}

static bool raw_wait(bh_client *c, struct raw *x, size_t n)
{
	for (;;) {
		bool all = true;
		for (size_t i = 0; i < n; i++)
			all = all && x[i].done;
		if (all)
			return true;
		if (!bh_client_pending(c))
			return false; /* nothing in flight could finish them */
		bool never = false;
		bh_client_wait(c, &never, 200);
	}
}

/* ---- hops ---- the SessionRun exchange that carried this code. */
static const struct rec_exchange *exchange_for(const struct rec_tap *t, const char *code)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->ex[i].procedure, "SessionRun"))
			continue;
		cJSON *req = cJSON_Parse(t->ex[i].request);
		const char *c = rec_str(cJSON_GetObjectItemCaseSensitive(req, "cell"), "code", NULL);
		bool same = c && !strcmp(c, code);
		cJSON_Delete(req);
		if (same)
			return &t->ex[i];
	}
	return NULL;
}

static int do_concurrent(struct recording *r, const cJSON *src, const cJSON *codes)
{
	struct worker *w = worker(r, rec_str(src, "worker", "A"));
	if (!w || !cJSON_IsArray(codes) || cJSON_GetArraySize(codes) < 2 ||
	    cJSON_GetArraySize(codes) > 4) {
		cli_error("%s: concurrent takes 2 to 4 Python snippets", r->script_path);
		return -1;
	}
	struct bh_client_error *err = NULL;
	cJSON *open = cJSON_CreateObject();
	cJSON_AddNumberToObject(open, "protocol", WIRE_PROTOCOL);
	cJSON_AddStringToObject(open, "minimumIsolation", r->floor);
	char *body = cJSON_PrintUnformatted(open);
	cJSON_Delete(open);
	struct raw opened = {0};
	int rc = bh_client_call_async(w->c, "plimsoll.v1.SandboxService/OpenSession", body, on_raw,
				      &opened, &err);
	free(body);
	if (rc < 0 || !raw_wait(w->c, &opened, 1) || opened.status != 200) {
		cli_error("%s: concurrent: OpenSession failed: %s", r->script_path,
			  err ? err->message : opened.body ? opened.body : "?");
		bh_client_error_free(err);
		free(opened.body);
		return -1;
	}
	cJSON *ans = cJSON_Parse(opened.body);
	free(opened.body);
	char id[80];
	snprintf(id, sizeof id, "%s", rec_str(ans, "sessionId", ""));
	cJSON_Delete(ans);

	size_t n = (size_t)cJSON_GetArraySize(codes);
	struct raw x[4] = {0};
	const cJSON *code;
	size_t i = 0;
	cJSON_ArrayForEach(code, codes) {
		cJSON *req = cJSON_CreateObject();
		cJSON_AddNumberToObject(req, "protocol", WIRE_PROTOCOL);
		cJSON_AddStringToObject(req, "sessionId", id);
		cJSON *cell = cJSON_AddObjectToObject(req, "cell");
		cJSON_AddStringToObject(cell, "language", "python");
		cJSON_AddStringToObject(cell, "code", cJSON_IsString(code) ? code->valuestring : "");
		body = cJSON_PrintUnformatted(req);
		cJSON_Delete(req);
		x[i].r = r; /* ---- presenter ---- */
		x[i].sent_ms = x[i].answered_ms = elapsed_ms(r);
		if (bh_client_call_async(w->c, "plimsoll.v1.SandboxService/SessionRun", body, on_raw,
					 &x[i], &err) < 0) {
			x[i].done = true;
			x[i].body = strdup(err ? err->message : "not sent");
			bh_client_error_free(err);
			err = NULL;
		}
		free(body);
		i++;
		/* In this order at the daemon: the first is running when the
		 * second arrives, the second waiting when the third does. */
		if (i < n) {
			bool never = false;
			bh_client_wait(w->c, &never, 400);
		}
	}
	raw_wait(w->c, x, n);
	/* ---- hops ---- the exchanges were all seen now: step_new resets the tap */
	struct rec_tap seen = r->tap;
	memset(&r->tap, 0, sizeof r->tap);
	i = 0;
	bool first = true;
	const cJSON *narrations = cJSON_GetObjectItemCaseSensitive(src, "narrations");
	cJSON_ArrayForEach(code, codes) {
		cJSON *s = step_new(r, src, SCENARIO_CALL);
		const cJSON *own = cJSON_GetArrayItem(narrations, (int)i);
		if (cJSON_IsString(own))
			cJSON_ReplaceItemInObject(s, "narration", cJSON_CreateString(own->valuestring));
		/* ---- presenter: each call's own times, not the step's ---- */
		cJSON_ReplaceItemInObject(s, "sent_ms", cJSON_CreateNumber((double)x[i].sent_ms));
		cJSON_AddNumberToObject(s, "answered_ms", (double)x[i].answered_ms);
		cJSON *in = cJSON_CreateObject();
		cJSON_AddStringToObject(in, "language", "python");
		cJSON_AddStringToObject(in, "code", cJSON_IsString(code) ? code->valuestring : "");
		cJSON_AddItemToObject(s, "call", in);
		const struct rec_exchange *mine = exchange_for(&seen, cJSON_IsString(code) ? code->valuestring : "");
		if (x[i].status == 200) {
			struct wire_session_run_response res;
			struct wire_status st;
			if (wire_decode_session_run_response(x[i].body, strlen(x[i].body), &res, &st) == 0) {
				struct bh_exec_output out;
				bh_exec_output_from(&res, BH_LANG_PYTHON, first, 0, &out);
				first = false;
				cJSON_AddStringToObject(s, "outcome", scenario_outcome_name(SCENARIO_ANSWERED));
				add_answer(s, &out);
				cJSON_AddNullToObject(s, "error");
				bh_exec_output_free(&out);
				wire_session_run_response_free(&res);
				cJSON_AddItemToObject(s, "path", rec_concurrent_path(i, n, code->valuestring, mine,
										  SCENARIO_ANSWERED, ""));
			} else {
				cJSON_AddStringToObject(s, "outcome", scenario_outcome_name(SCENARIO_MAY_HAVE_RUN));
				cJSON_AddNullToObject(s, "answer");
				cJSON_AddStringToObject(s, "error", st.msg);
				cJSON_AddItemToObject(s, "path", rec_concurrent_path(i, n, code->valuestring, mine,
										  SCENARIO_MAY_HAVE_RUN, st.msg));
			}
			step_finish(r, s, every_hop(), SCENARIO_HOP_NONE);
		} else {
			bool refused = x[i].not_dispatched;
			cJSON_AddStringToObject(s, "outcome",
						scenario_outcome_name(refused ? SCENARIO_REFUSED : SCENARIO_MAY_HAVE_RUN));
			cJSON_AddNullToObject(s, "answer");
			cJSON_AddStringToObject(s, "error", x[i].body ? x[i].body : "");
			cJSON_AddItemToObject(s, "path",
					      rec_concurrent_path(i, n, cJSON_IsString(code) ? code->valuestring : "", mine,
								  refused ? SCENARIO_REFUSED : SCENARIO_MAY_HAVE_RUN,
								  x[i].body ? x[i].body : ""));
			step_finish(r, s, refused ? hops_until(SCENARIO_HOP_DAEMON) : every_hop(),
				    refused ? SCENARIO_HOP_DAEMON : SCENARIO_HOP_NONE);
		}
		free(x[i].body);
		i++;
	}
	rec_tap_reset(&seen);
	cJSON *close = cJSON_CreateObject();
	cJSON_AddNumberToObject(close, "protocol", WIRE_PROTOCOL);
	cJSON_AddStringToObject(close, "sessionId", id);
	body = cJSON_PrintUnformatted(close);
	cJSON_Delete(close);
	struct raw closed = {0};
	if (bh_client_call_async(w->c, "plimsoll.v1.SandboxService/CloseSession", body, on_raw,
				 &closed, &err) == 0)
		raw_wait(w->c, &closed, 1);
	bh_client_error_free(err);
	free(closed.body);
	free(body);
	explicit_bzero(id, sizeof id);
	return 0;
}

/* The steps were validated before the daemon started (record_script.c). */
static int play(struct recording *r)
{
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(r->script, "steps");
	const cJSON *st;
	int index = 0;
	cJSON_ArrayForEach(st, steps) {
		index++;
		const cJSON *call = cJSON_GetObjectItemCaseSensitive(st, "call");
		const char *hook = rec_str(st, "hook", NULL), *op = rec_str(st, "operator", NULL);
		const cJSON *conc = cJSON_GetObjectItemCaseSensitive(st, "concurrent");
		int rc;
		if (call)
			rc = do_call(r, st, call);
		else if (hook)
			rc = do_hook(r, st, hook);
		else if (op)
			rc = do_operator(r, st, op);
		else if (conc)
			rc = do_concurrent(r, st, conc);
		else if (cJSON_GetObjectItemCaseSensitive(st, "project")) /* ---- project ---- */
			rc = rec_do_project(r, st, cJSON_GetObjectItemCaseSensitive(st, "project"));
		else { /* wait_ms: record_script.c's check let nothing else through */
			double wait = rec_num(st, "wait_ms", 0);
			cJSON *s = step_new(r, st, SCENARIO_WAIT);
			cJSON_AddNumberToObject(s, "ms", wait);
			run_loops(r, (long)wait);
			step_finish(r, s, cJSON_CreateArray(), SCENARIO_HOP_NONE);
			rc = 0;
		}
		if (rc < 0) {
			cli_error("%s: recording stopped at step %d", r->script_path, index);
			return -1;
		}
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	const char *script = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (argv[i][0] != '-' && !script)
			script = argv[i];
		else {
			fputs(usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (!script) {
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	struct recording r = {.script_path = script};
	r.script = rec_load_script(script);
	if (!r.script || rec_setup(&r) < 0) {
		cJSON_Delete(r.steps);
		cJSON_Delete(r.script);
		return CLI_EXIT_USAGE;
	}
	char out_buf[8400];
	if (!out) {
		/* data/scenarios/scripts/X.json -> data/scenarios/NAME.json */
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", script);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof dir, ".");
		snprintf(out_buf, sizeof out_buf, "%s/../%s.json", dir, rec_str(r.script, "name", "x"));
		out = out_buf;
	}
	snprintf(r.d.dir, sizeof r.d.dir, "/tmp/bulkhead-record.XXXXXX");
	if (!mkdtemp(r.d.dir)) {
		cli_error("mkdtemp: %s", strerror(errno));
		cJSON_Delete(r.script);
		return CLI_EXIT_BULKHEAD;
	}
	chmod(r.d.dir, 0711); /* sandboxes run as other uids */
	int rc = CLI_EXIT_BULKHEAD;
	fprintf(stderr, "recording %s against a %s-tier daemon...\n", script, r.d.tier);
	/* ---- egress ---- the upstream and the profiles before the daemon */
	if (rec_egress_setup(&r) == 0 && rec_daemon_start(&r.d) == 0 && rec_egress_begin(&r) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &r.t0);
		int played = play(&r);
		for (size_t i = 0; i < r.n_workers; i++)
			worker_drop(&r, &r.workers[i], true);
		bh_client_free(r.op);
		int n_steps = cJSON_GetArraySize(r.steps);
		if (played == 0 && rec_write_scenario(&r, out) == 0) {
			fprintf(stderr, "wrote %s (%d steps)\n", out, n_steps);
			rc = 0;
		}
	}
	rec_daemon_stop(&r.d);
	rec_egress_stop(&r); /* ---- egress ---- */
	/* Whatever a killed daemon left: the next engine on the directory reaps. */
	const char *gc[] = {"bulkhead", "gc", "--state", r.d.state, NULL};
	free(run_self(gc));
	char cmd[4200 + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r.d.dir);
	if (system(cmd) != 0)
		cli_error("could not remove %s", r.d.dir);
	rec_tap_reset(&r.tap); /* ---- hops ---- */
	cJSON_Delete(r.steps);
	cJSON_Delete(r.script);
	return rc;
}

/* ---- egress and projects: the step helpers, for record_egress.c and record_project.c ---- */
cJSON *rec_step_new(struct recording *r, const cJSON *src, enum scenario_kind kind)
{
	return step_new(r, src, kind);
}

void rec_step_finish(struct recording *r, cJSON *s, cJSON *lit, enum scenario_hop stopped_at)
{
	step_finish(r, s, lit, stopped_at);
}

struct worker *rec_worker(struct recording *r, const char *name)
{
	return worker(r, name);
}
