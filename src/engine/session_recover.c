/* The engine's side of its sessions: at close, hibernating the idle ones
 * (shutdown_hibernate) and ending the rest; at open, re-adopting the
 * hibernated sessions a previous engine left and reaping the rows of those
 * that died with it. */
#include "session_priv.h"

#include <fcntl.h>
#include <string.h>

void sessions_close_all(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (s->state == BH_SESSION_HIBERNATED && s->sb) {
			/* An image on disk survives its engine: the next one re-adopts it. */
			loop_timer_cancel(e->loop, s->retention_t);
			s->retention_t = NULL;
			sandbox_detach(e, s->sb);
			s->sb = NULL;
			continue;
		}
		session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(s, BH_END_SHUTDOWN, NULL);
	}
}

void sessions_hibernate_for_shutdown(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if ((s->state != BH_SESSION_READY && s->state != BH_SESSION_PAUSED) || s->queue ||
		    !s->sb || !sandbox_can_hibernate(s->sb))
			continue;
		loop_timer_cancel(e->loop, s->idle_t);
		loop_timer_cancel(e->loop, s->sleep_t);
		s->idle_t = s->sleep_t = NULL;
		bh_error *err = NULL;
		if (session_hibernate(s, &err) < 0) {
			bh_log(e, BH_LOG_WARN, "session %.12s: hibernate at shutdown: %s", s->fp, err->msg);
			bh_error_free(err);
		}
	}
}

bool sessions_hibernating(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATING)
			return true;
	return false;
}

void sessions_free(bh_engine *e)
{
	while (e->sessions) {
		bh_session *s = e->sessions;
		e->sessions = s->next;
		session_free(s);
	}
}

struct reap_ctx {
	bh_engine *e;
	size_t n;
	char (*fps)[65];
};

static void collect_live(void *arg, const char *fp, const char *sandbox, const char *runtime,
			 const char *state, int64_t engine_pid)
{
	struct reap_ctx *c = arg;
	(void)runtime;
	if (!strcmp(state, "hibernated"))
		return; /* re-adopted (or ended) by readopt */
	bh_log(c->e, BH_LOG_WARN,
	       "session %.12s (sandbox %s) was %s under engine %lld, which is gone: reaped", fp,
	       sandbox, state, (long long)engine_pid);
	c->fps = realloc(c->fps, (c->n + 1) * sizeof *c->fps);
	if (!c->fps)
		abort();
	snprintf(c->fps[c->n++], 65, "%s", fp);
}

/* Both ours: reached with no link followed (a linked image would be
 * restored from, and deleted at retention, wherever it points). */
static bool image_and_bundle(bh_engine *e, const char *sandbox)
{
	cleanup_free char *img = engine_image_path(e, sandbox);
	cleanup_free char *cfg = xasprintf("%s/%s/config.json", e->bundles_dir, sandbox);
	cleanup_close int i = open_nofollow(AT_FDCWD, img, O_PATH | O_DIRECTORY, 0);
	cleanup_close int c = open_nofollow(AT_FDCWD, cfg, O_PATH, 0);
	return i >= 0 && c >= 0;
}

struct keep_ctx {
	bh_engine *e;
	const char *sandbox;
	bool keep;
};

static void keep_if(void *arg, const struct store_hibernated_row *r)
{
	struct keep_ctx *c = arg;
	if (!strcmp(r->sandbox, c->sandbox))
		c->keep = true;
}

bool sessions_keeps_bundle(bh_engine *e, const char *sandbox)
{
	struct keep_ctx c = {.e = e, .sandbox = sandbox};
	if (e->store)
		store_hibernated_sessions(e->store, keep_if, &c, NULL);
	return c.keep;
}

/* A hibernated session a previous engine left: re-adopted, so its next call
 * restores it with its variables and files. */
static void readopt(void *arg, const struct store_hibernated_row *r)
{
	bh_engine *e = arg;
	enum bh_tier tier;
	/* The row is input: its name becomes a path only if bulkhead made it. */
	if (!sandbox_name_valid(r->sandbox)) {
		char detail[200];
		snprintf(detail, sizeof detail, "sandbox \"%.64s\" is not a name bulkhead makes",
			 r->sandbox);
		bh_log(e, BH_LOG_WARN,
		       "registry row %.12s: %s (a tampered store?): ended, nothing of it touched",
		       r->fingerprint, detail);
		store_session_end(e->store, r->fingerprint, BH_END_REAPED, detail, NULL);
		store_event(e->store, "invalid_row", r->fingerprint, "", detail);
		return;
	}
	if (bh_tier_parse(r->tier, &tier) < 0 || !image_and_bundle(e, r->sandbox)) {
		/* ---- fleet: another engine sharing the images directory may
		 * have adopted it (renamed it to a name of its own): nothing of
		 * that is touched; our bundle for it has nothing to restore ---- */
		cleanup_free char *bundle = xasprintf("%s/%s", e->bundles_dir, r->sandbox);
		rm_rf(bundle);
		store_session_end(e->store, r->fingerprint, BH_END_REAPED,
				  "its hibernation image is gone", NULL);
		return;
	}
	struct sandbox *sb = sandbox_adopt_hibernated(e, tier, r->sandbox);
	if (!sb) {
		store_session_end(e->store, r->fingerprint, BH_END_REAPED,
				  "its tier's runtime is not available to restore it", NULL);
		return;
	}
	bh_session *s = session_register_hibernated(e, sb, tier, r);
	store_event(e->store, "readopted", s->fp, s->sandbox_name, "hibernated");
}

bh_session *session_register_hibernated(bh_engine *e, struct sandbox *sb, enum bh_tier tier,
					const struct store_hibernated_row *r)
{
	bh_session *s = session_create(e);
	session_own_sandbox(s, sb);
	snprintf(s->fp, sizeof s->fp, "%s", r->fingerprint);
	snprintf(s->sandbox_name, sizeof s->sandbox_name, "%s", r->sandbox);
	s->tier = tier;
	if (bh_tier_parse(r->floor, &s->floor) < 0)
		s->floor = BH_TIER_UNKNOWN;
	s->principal = xstrdup(r->principal);
	s->owner = xstrdup(r->owner);
	s->run_key = xstrdup(r->run_key);
	/* ---- egress: its profile, held again at wake (looked up in the set
	 * current then; the daemon checks the caller may still use it) ---- */
	if (r->egress_profile && *r->egress_profile)
		s->egress_profile = xstrdup(r->egress_profile);
	s->calls = r->calls;
	snprintf(s->last_record, sizeof s->last_record, "%s", r->last_record_sha256);
	s->created_ms = r->created_ms;
	s->last_call_ms = r->last_call_ms;
	s->lifetime_ms = r->lifetime_ms > 0 ? (uint32_t)r->lifetime_ms : e->policy.lifetime_ms;
	s->awake_used_us = (uint64_t)r->awake_ms * 1000u;
	s->claimed = true;
	set_state_quiet(s, BH_SESSION_HIBERNATED); /* its row says so */
	int64_t slept = (int64_t)now_real_ms() - r->hibernated_ms;
	int64_t left = (int64_t)e->policy.retention_ms - (slept > 0 ? slept : 0);
	s->retention_t = loop_timer(e->loop, left > 0 ? (uint64_t)left : 0, session_on_retention, s);
	s->hibernated_ms = r->hibernated_ms;
	s->image_bytes = disk_usage(sb->image_dir);
	s->next = e->sessions;
	e->sessions = s;
	engine_changed(e); /* ---- light ---- */
	return s;
}

void sessions_readopt(bh_engine *e)
{
	store_hibernated_sessions(e->store, readopt, e, NULL);
	sessions_enforce_images_budget(e, NULL);
}

void sessions_reconcile(bh_engine *e)
{
	sessions_readopt(e);
	/* We hold the state directory's lock, so every live row was left by a
	 * dead engine; its sandbox died with it (or was just deleted by the
	 * leftover sweep). */
	struct reap_ctx c = {.e = e};
	store_live_sessions(e->store, collect_live, &c, NULL);
	for (size_t i = 0; i < c.n; i++) {
		store_session_end(e->store, c.fps[i], BH_END_REAPED, "its engine died", NULL);
		store_event(e->store, "reaped", c.fps[i], "", "its engine died");
	}
	free(c.fps);
}
