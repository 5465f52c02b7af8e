/* A session's clocks: idle -> paused -> hibernated (or closed where the
 * tier cannot hibernate), its lifetime of awake time, the retention of its
 * image and the images' shared disk budget; waking it for a call; and the
 * operator's pause, resume, hibernate and kill. */
#include "session_priv.h"

static void finish_action(bh_session *s, const bh_error *err)
{
	/* ---- ci: attribution: the action's steps are done; a wake for what
	 * waits in the queue (a close, a call) is theirs still ---- */
	if (!s->queue)
		session_acting_done(s);
	if (!s->act_cb)
		return;
	bh_action_cb cb = s->act_cb;
	s->act_cb = NULL;
	cb(s->act_arg, err);
}

void session_on_retention(bh_engine *e, void *arg)
{
	(void)e;
	bh_session *s = arg;
	s->retention_t = NULL;
	if (s->state == BH_SESSION_HIBERNATED)
		session_acting_policy(s, "policy:retention"); /* ---- ci: attribution ---- */
	if (s->state == BH_SESSION_HIBERNATED)
		end_session(s, BH_END_RETENTION_EXPIRED,
			    "its hibernation image outlived the retention");
}

/* Hibernation images share one disk budget: past it the oldest images go
 * first (their sessions end as if their retention had passed), the one just
 * written last — and it too when it alone does not fit. */
void sessions_enforce_images_budget(bh_engine *e, bh_session *newest)
{
	uint64_t cap = (uint64_t)e->policy.images_budget_mb * 1048576u, total = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATED)
			total += s->image_bytes;
	while (total > cap) {
		bh_session *oldest = NULL;
		for (bh_session *s = e->sessions; s; s = s->next)
			if (s->state == BH_SESSION_HIBERNATED && s != newest &&
			    (!oldest || s->hibernated_ms < oldest->hibernated_ms))
				oldest = s;
		if (!oldest && newest && newest->state == BH_SESSION_HIBERNATED)
			oldest = newest;
		if (!oldest)
			return;
		char detail[160];
		snprintf(detail, sizeof detail,
			 "hibernation images exceeded their %u MiB disk budget; the oldest go first",
			 e->policy.images_budget_mb);
		bh_log(e, BH_LOG_INFO, "session %.12s: image of %llu MiB deleted: %s", oldest->fp,
		       (unsigned long long)(oldest->image_bytes >> 20), detail);
		total -= oldest->image_bytes;
		session_acting_policy(oldest, "policy:images_budget"); /* ---- ci: attribution ---- */
		end_session(oldest, BH_END_RETENTION_EXPIRED, detail);
	}
}

static void on_hibernated(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	(void)sb;
	bh_session *s = arg;
	if (s->state != BH_SESSION_HIBERNATING)
		return;
	if (err) {
		bh_log(e, BH_LOG_WARN, "session %.12s: %s", s->fp, err->msg);
		finish_action(s, err);
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		return;
	}
	if (s->awake_since_us) {
		s->awake_used_us += now_mono_us() - s->awake_since_us;
		s->awake_since_us = 0;
	}
	loop_timer_cancel(e->loop, s->life_t);
	s->life_t = NULL;
	session_egress_detach(s); /* ---- egress: no socket while on disk ---- */
	set_state(s, BH_SESSION_HIBERNATED);
	store_session_hibernated(e->store, s->fp, (int64_t)(s->awake_used_us / 1000u),
				 (int64_t)s->lifetime_ms, s->egress_profile, NULL);
	engine_maybe_crash(e, "hibernated"); /* the row says so: the next engine restores it */
	s->retention_t = loop_timer(e->loop, e->policy.retention_ms, session_on_retention, s);
	s->hibernated_ms = (int64_t)now_real_ms();
	s->image_bytes = disk_usage(s->sb->image_dir);
	finish_action(s, NULL);
	sessions_enforce_images_budget(e, s);
	if (s->state == BH_SESSION_HIBERNATED)
		session_dispatch(s);
}

int session_hibernate(bh_session *s, bh_error **err)
{
	assert(err);
	cleanup_free char *image = engine_image_path(s->e, s->sandbox_name);
	set_state(s, BH_SESSION_HIBERNATING);
	if (sandbox_hibernate(s->e, s->sb, image, on_hibernated, s, err) < 0) {
		set_state(s, s->sb->state == SB_PAUSED ? BH_SESSION_PAUSED : BH_SESSION_READY);
		return -1;
	}
	/* Dying with the checkpoint in flight: the next engine reaps the
	 * session (its row never said hibernated) and its half-written image. */
	engine_maybe_crash(s->e, "hibernate");
	return 0;
}

static void on_sleep(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	s->sleep_t = NULL;
	if (s->state != BH_SESSION_PAUSED)
		return;
	session_acting_policy(s, "policy:idle"); /* ---- ci: attribution: idle, then asleep ---- */
	if (!sandbox_can_hibernate(s->sb)) {
		/* The container tier cannot checkpoint here; closing frees the
		 * memory, and the next call learns it has a fresh sandbox. */
		end_session(s, BH_END_IDLE_CLOSED,
			    "paused past hibernate_after; this tier cannot hibernate");
		return;
	}
	bh_error *err = NULL;
	if (session_hibernate(s, &err) < 0) {
		bh_log(e, BH_LOG_WARN, "session %.12s: hibernate: %s", s->fp, err->msg);
		bh_error_free(err);
	}
}

static void on_paused(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	(void)sb;
	bh_session *s = arg;
	if (s->state != BH_SESSION_PAUSING)
		return;
	if (err) {
		bh_log(e, BH_LOG_WARN, "session %.12s: %s", s->fp, err->msg);
		set_state(s, BH_SESSION_READY);
		finish_action(s, err);
		session_dispatch(s);
		return;
	}
	set_state(s, BH_SESSION_PAUSED);
	s->sleep_t = loop_timer(e->loop, e->policy.hibernate_after_ms, on_sleep, s);
	finish_action(s, NULL);
	session_dispatch(s); /* a call that arrived meanwhile wakes it again */
}

static int pause_now(bh_session *s, bh_error **err)
{
	assert(err);
	loop_timer_cancel(s->e->loop, s->idle_t);
	s->idle_t = NULL;
	set_state(s, BH_SESSION_PAUSING);
	if (sandbox_pause(s->e, s->sb, on_paused, s, err) < 0) {
		set_state(s, BH_SESSION_READY);
		return -1;
	}
	engine_maybe_crash(s->e, "pause"); /* the freeze is in flight */
	return 0;
}

int session_pause_now(bh_session *s, bh_error **err)
{
	return pause_now(s, err);
}

static void on_idle(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	s->idle_t = NULL;
	if (s->state != BH_SESSION_READY || s->queue)
		return;
	session_acting_policy(s, "policy:idle"); /* ---- ci: attribution ---- */
	if (!s->claimed) {
		end_session(s, BH_END_UNCLAIMED, "no call named it before its first idle timeout");
		return;
	}
	bh_error *err = NULL;
	if (pause_now(s, &err) < 0) {
		bh_log(e, BH_LOG_WARN, "session %.12s: pause: %s", s->fp, err->msg);
		bh_error_free(err);
	}
}

void session_arm_idle(bh_session *s)
{
	loop_timer_cancel(s->e->loop, s->idle_t);
	s->idle_t = loop_timer(s->e->loop, session_idle_ms(s), on_idle, s);
}

static void on_lifetime(bh_engine *e, void *arg)
{
	(void)e;
	bh_session *s = arg;
	s->life_t = NULL;
	if (s->state == BH_SESSION_BUSY || s->state == BH_SESSION_WAKING ||
	    s->state == BH_SESSION_PAUSING || s->state == BH_SESSION_HIBERNATING) {
		s->expire_pending = true; /* ends once the sandbox is free */
		return;
	}
	session_acting_policy(s, "policy:ttl"); /* ---- ci: attribution ---- */
	end_session(s, BH_END_EXPIRED, "its lifetime of awake time ran out");
}

void session_arm_life(bh_session *s)
{
	loop_timer_cancel(s->e->loop, s->life_t);
	uint64_t used = s->awake_used_us + (s->awake_since_us ? now_mono_us() - s->awake_since_us : 0);
	uint64_t limit = (uint64_t)s->lifetime_ms * 1000u;
	uint64_t left_ms = used >= limit ? 0 : (limit - used) / 1000u;
	s->life_t = loop_timer(s->e->loop, left_ms, on_lifetime, s);
}

static void on_woken(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	bh_session *s = arg;
	if (s->state != BH_SESSION_WAKING)
		return;
	if (err) {
		finish_action(s, err);
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		return;
	}
	s->woke_us = now_mono_us() - sb->control_started_us;
	char detail[64];
	snprintf(detail, sizeof detail, "%.1f ms", s->woke_us / 1000.0);
	bool from_disk = sb->image_dir != NULL && s->retention_t != NULL;
	session_event(s, from_disk ? "restored" : "resumed", detail); /* ---- ci: attribution ---- */
	if (from_disk)
		s->image_bytes = 0; /* the restore deleted the image it was done with */
	loop_timer_cancel(e->loop, s->retention_t);
	s->retention_t = NULL;
	set_state(s, BH_SESSION_READY);
	if (!s->awake_since_us)
		s->awake_since_us = now_mono_us();
	session_arm_life(s);
	finish_action(s, NULL);
	session_dispatch(s);
}

/* A restore the memory budget has no room for: the session stays on
 * disk, what waited on it is refused (capacity), and a close needs no
 * memory. */
static void stay_hibernated(bh_session *s, const bh_error *why)
{
	struct op *q = s->queue;
	s->queue = NULL;
	finish_action(s, why);
	while (q) {
		struct op *n = q->next;
		if (q->kind == OP_CLOSE) {
			end_session(s, BH_END_CLOSED, NULL);
			session_answer_close(s, q);
		} else {
			op_refuse(q, why);
		}
		op_free(q);
		q = n;
	}
}

void session_wake(bh_session *s)
{
	bh_engine *e = s->e;
	bool hibernated = s->state == BH_SESSION_HIBERNATED;
	bh_error *err = NULL;
	struct admit_ask ask = {.kind = ADMIT_WAKE, .principal = s->principal, .tier = s->tier};
	if (hibernated && admit_sandbox(e, &ask, &err) < 0) {
		stay_hibernated(s, err);
		bh_error_free(err);
		return;
	}
	loop_timer_cancel(e->loop, s->sleep_t);
	s->sleep_t = NULL;
	/* ---- egress: the socket is back before the sandbox is. A profile that
	 * cannot be held again (gone from the profiles file since, or a broker
	 * that is not there) keeps the session on disk: nothing it left running
	 * gets a credential, and a profiles reload that brings the profile back
	 * lets the next call wake it. ---- */
	if (hibernated && session_egress_attach(s, &err) < 0) {
		bh_error *plain = NULL;
		bh_refuse(&plain, BH_REFUSAL_PERMISSION,
			  "this hibernated session holds egress profile %s, which cannot be held "
			  "again (%s); it stays hibernated: restore the profile and reload the "
			  "profiles, or close the session",
			  s->egress_profile ? s->egress_profile : "", err->msg);
		bh_error_free(err);
		stay_hibernated(s, plain);
		bh_error_free(plain);
		return;
	}
	set_state(s, BH_SESSION_WAKING);
	int r = hibernated ? sandbox_restore(e, s->sb, on_woken, s, &err)
			   : sandbox_resume(e, s->sb, on_woken, s, &err);
	if (r < 0) {
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		bh_error_free(err);
	}
}

static int start_action(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	assert(err);
	if (s->state == BH_SESSION_ENDED) {
		session_ended_error(s, err);
		return -1;
	}
	if (s->act_cb)
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "another action on this session is in flight");
	s->act_cb = cb;
	s->act_arg = arg;
	return 0;
}

int bh_session_pause(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if (s->state != BH_SESSION_READY || s->queue) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "the session is %s; only an idle one pauses",
				 bh_session_state_name(s->state));
	}
	if (pause_now(s, err) < 0) {
		s->act_cb = NULL;
		return -1;
	}
	return 0;
}

int bh_session_resume(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if (s->state != BH_SESSION_PAUSED && s->state != BH_SESSION_HIBERNATED) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the session is %s, not asleep",
				 bh_session_state_name(s->state));
	}
	session_wake(s);
	return 0;
}

int bh_session_hibernate(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if ((s->state != BH_SESSION_READY && s->state != BH_SESSION_PAUSED) || s->queue || !s->sb) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "the session is %s; only an idle one hibernates",
				 bh_session_state_name(s->state));
	}
	if (!sandbox_can_hibernate(s->sb)) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED,
				 "the %s tier cannot hibernate on this host (no working CRIU)",
				 bh_tier_name(s->tier));
	}
	loop_timer_cancel(s->e->loop, s->idle_t);
	loop_timer_cancel(s->e->loop, s->sleep_t);
	s->idle_t = s->sleep_t = NULL;
	if (session_hibernate(s, err) < 0) {
		s->act_cb = NULL;
		return -1;
	}
	return 0;
}

void bh_session_kill(bh_session *s)
{
	end_session(s, BH_END_KILLED, "an operator killed it");
}
