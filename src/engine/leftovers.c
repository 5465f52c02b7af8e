/* What a dead engine left in a state directory: surveyed at open before
 * anything is touched (the console's header, `serve`'s log), and the calls
 * it was running (their intents never settled) as findings. The findings
 * themselves are leaks.c's: one definition of each kind. */
#include "engine_priv.h"
#include "session_priv.h"
#include "store.h"

#include <cjson/cJSON.h>
#include <dirent.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void leftovers_survey(bh_engine *e, bool tell)
{
	struct bh_leftovers *l = &e->leftovers;
	memset(l, 0, sizeof *l);
	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(e, &v);
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == BH_LEAK_OVERDUE)
			continue; /* this engine's own: it holds nothing yet */
		l->by_kind[v[i].kind]++;
		l->any = true;
		char state[16] = "";
		if (v[i].kind == BH_LEAK_ABANDONED && e->store &&
		    store_live_state(e->store, v[i].sandbox, state, sizeof state) &&
		    !strcmp(state, "paused"))
			l->paused++;
	}
	free(v);
	if (e->store)
		store_previous_engine(e->store, (int64_t)getpid(), &l->engine_pid, &l->last_sign_ms);
	/* ---- report ---- */
	l->bounded_reaped = e->bounded_reaped;
	if (e->store) {
		int64_t *pids = NULL;
		l->dead_engines = store_dead_engines(e->store, (int64_t)getpid(), &pids);
		free(pids);
	}
	if (!l->any || !tell)
		return;
	char text[512];
	bh_leftovers_text(l, text, sizeof text);
	bh_log(e, BH_LOG_WARN, "%s; %s", text,
	       e->inspect_only || e->keep_leftovers
		       ? "kept as evidence: `bulkhead leaks` lists them, `bulkhead gc` (or the "
			 "console's ctrl-d) reaps them"
		       : "reaped as this engine takes over");
}

void bh_engine_leftovers(bh_engine *e, struct bh_leftovers *out)
{
	*out = e->leftovers;
}

static size_t put(char *buf, size_t n, size_t at, const char *fmt, size_t count, const char *one,
		  const char *many)
{
	if (!count || at >= n)
		return at;
	int w = snprintf(buf + at, n - at, fmt, at ? ", " : "", count, count == 1 ? one : many);
	return w > 0 ? at + (size_t)w : at;
}

void bh_leftovers_text(const struct bh_leftovers *l, char *buf, size_t n)
{
	if (!n)
		return;
	buf[0] = '\0';
	if (!l->any)
		return;
	char who[96];
	if (l->engine_pid && l->last_sign_ms) {
		time_t t = (time_t)(l->last_sign_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		char hms[16];
		strftime(hms, sizeof hms, "%H:%M:%S", &tm);
		/* Its last sign of life: it died after that, and before we came. */
		snprintf(who, sizeof who, "the previous engine (pid %lld, died ~%s UTC)",
			 (long long)l->engine_pid, hms);
	} else if (l->engine_pid) {
		snprintf(who, sizeof who, "the previous engine (pid %lld)", (long long)l->engine_pid);
	} else {
		snprintf(who, sizeof who, "a previous engine");
	}
	char what[320];
	size_t at = 0;
	const size_t *k = l->by_kind;
	size_t awake = k[BH_LEAK_ABANDONED] - l->paused;
	at = put(what, sizeof what, at, "%s%zu paused %s", l->paused, "sandbox", "sandboxes");
	at = put(what, sizeof what, at, "%s%zu abandoned %s", awake, "sandbox", "sandboxes");
	at = put(what, sizeof what, at, "%s%zu orphan %s", k[BH_LEAK_ORPHAN], "container",
		 "containers");
	at = put(what, sizeof what, at, "%s%zu ghost %s", k[BH_LEAK_GHOST], "row", "rows");
	at = put(what, sizeof what, at, "%s%zu %s", k[BH_LEAK_STRAY_CGROUP], "cgroup", "cgroups");
	at = put(what, sizeof what, at, "%s%zu %s", k[BH_LEAK_STALE_IMAGE], "image", "images");
	at = put(what, sizeof what, at, "%s%zu %s", k[BH_LEAK_INTERRUPTED], "call was running",
		 "calls were running");
	int w = snprintf(buf, n, "%s %s: %s", who, l->reaped_at_open ? "left (reaped at open)" : "left",
			 at ? what : "nothing");
	/* ---- report: a crash loop's, said ---- */
	size_t used = w > 0 ? (size_t)w : 0;
	if (l->dead_engines > 1 && used < n)
		used += (size_t)snprintf(buf + used, n - used, " (leftovers of %zu dead engines)",
					 l->dead_engines);
	if (l->bounded_reaped && used < n)
		snprintf(buf + used, n - used,
			 "; %zu finding%s of older dead engines captured into %s/ and reaped",
			 l->bounded_reaped, l->bounded_reaped == 1 ? "" : "s", BH_LEFTOVERS_CAPTURES);
}

/* ---- calls in flight ---- */

static bool session_held(bh_engine *e, const char *fp)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (!strcmp(s->fp, fp) && s->end_reason == BH_END_NONE)
			return true;
	return false;
}

struct interrupted_ctx {
	bh_engine *e;
	struct bh_leak **v;
	size_t *n;
};

static int add_interrupted(void *arg, const struct bh_inflight *r)
{
	struct interrupted_ctx *c = arg;
	if (session_held(c->e, r->session))
		return 0; /* running now, under this engine */
	*c->v = realloc(*c->v, (*c->n + 1) * sizeof **c->v);
	if (!*c->v)
		abort();
	struct bh_leak *l = &(*c->v)[(*c->n)++];
	memset(l, 0, sizeof *l);
	l->kind = BH_LEAK_INTERRUPTED;
	snprintf(l->sandbox, sizeof l->sandbox, "#%llu", (unsigned long long)r->sequence);
	snprintf(l->fingerprint, sizeof l->fingerprint, "%s", r->session);
	snprintf(l->reason, sizeof l->reason,
		 "a %s cell (code %.12s) was running when engine %lld died: no answer was recorded",
		 *r->language ? r->language : "?", r->code_sha256, (long long)r->engine_pid);
	snprintf(l->holder, sizeof l->holder, "intent of call #%llu, engine pid %lld",
		 (unsigned long long)r->sequence, (long long)r->engine_pid);
	l->first_seen_ms = r->started_ms;
	return 0;
}

void leftovers_interrupted(bh_engine *e, struct bh_leak **v, size_t *n)
{
	if (!e->store)
		return;
	struct interrupted_ctx c = {.e = e, .v = v, .n = n};
	bh_error *err = NULL;
	if (store_inflight_rows(e->store, NULL, true, add_interrupted, &c, &err) < 0) {
		bh_log(e, BH_LOG_WARN, "%s", err->msg);
		bh_error_free(err);
	}
}

struct judged_ctx {
	bh_engine *e;
	bh_inflight_fn fn;
	void *arg;
};

static int judged(void *arg, const struct bh_inflight *r)
{
	struct judged_ctx *c = arg;
	struct bh_inflight row = *r;
	row.interrupted = row.reaped_ms || !session_held(c->e, r->session);
	return c->fn(c->arg, &row);
}

int bh_engine_inflight(bh_engine *e, const char *session, bh_inflight_fn fn, void *arg,
		       bh_error **err)
{
	if (!e->store)
		return 0;
	struct judged_ctx c = {.e = e, .fn = fn, .arg = arg};
	return store_inflight_rows(e->store, session, false, judged, &c, err);
}

/* The take-over (keep_leftovers off): the calls the dead engine was
 * running are settled as reaped, as its rows are ended. The intents stay
 * for the timeline. */
void leftovers_reap_interrupted(bh_engine *e)
{
	struct bh_leak *v = NULL;
	size_t n = 0;
	leftovers_interrupted(e, &v, &n);
	for (size_t i = 0; i < n; i++) {
		store_inflight_reaped(e->store, v[i].fingerprint, strtoull(v[i].sandbox + 1, NULL, 10),
				      (int64_t)now_real_ms());
		store_event(e->store, "reaped", v[i].fingerprint, "", "its call was running when its engine died");
	}
	free(v);
}

/* Every bundle at open is a dead engine's (or a hibernated session's): the
 * uid range its config maps is held. A bundle that is not bulkhead's JSON
 * holds nothing (and is a finding's business, not this). */
int bundle_uid_slot(bh_engine *e, const char *name)
{
	if (!sandbox_name_valid(name))
		return -1;
	cleanup_free char *path = xasprintf("%s/%s/config.json", e->bundles_dir, name);
	cleanup_free char *text = read_file(path, 1u << 20, NULL);
	cJSON *cfg = text ? cJSON_Parse(text) : NULL;
	const cJSON *maps = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "linux"), "uidMappings");
	const cJSON *host = cJSON_GetObjectItem(cJSON_GetArrayItem(maps, 0), "hostID");
	int slot = -1;
	if (cJSON_IsNumber(host) && host->valuedouble >= 0 && host->valuedouble < 4294967296.0)
		slot = uid_slot_of(e, (uint32_t)host->valuedouble);
	cJSON_Delete(cfg);
	return slot;
}

void leftovers_hold_uids(bh_engine *e)
{
	cleanup_dir DIR *d = opendir_nofollow(e->bundles_dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !sandbox_name_valid(de->d_name))
			continue;
		uid_slot_hold(e, bundle_uid_slot(e, de->d_name));
	}
}
