/* Opening a session: the checks of its options, admission (global, per
 * principal, per owner with LRU replacement, memory), the intent row, then
 * a sandbox from the runtime or the warm pool. Opening is asynchronous; a
 * session whose tier is still being proven waits for the proof. */
#include "session_priv.h"

#include <errno.h>
#include <regex.h>
#include <string.h>
#include <sys/statvfs.h>


/* The sandbox went while no call was in flight (killed out of band, its
 * init exited): the session ends now, not at its next call. */
static void on_sandbox_lost(bh_engine *e, void *arg, struct sandbox *sb, const char *why)
{
	(void)e;
	bh_session *s = arg;
	if (s->sb != sb)
		return;
	s->sb = NULL; /* it is already closing */
	session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
	end_session(s, sb->breached ? BH_END_BOUNDARY_FAILED : BH_END_MAIN_PROCESS_ENDED, why);
}

void session_own_sandbox(bh_session *s, struct sandbox *sb)
{
	s->sb = sb;
	sb->lost_fn = on_sandbox_lost;
	sb->lost_arg = s;
}

static void on_sandbox_open(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	bh_session *s = arg;
	if (err) {
		end_session(s, BH_END_BOUNDARY_FAILED, err->msg);
		return;
	}
	if (s->state == BH_SESSION_ENDED) { /* closed while opening */
		sandbox_close(e, sb);
		return;
	}
	session_own_sandbox(s, sb);
	/* ---- egress: the broker listens (and serves the session's profile)
	 * before anything the caller sends runs; if it cannot, the open
	 * fails as any other (end_session answers the opener) ---- */
	bh_error *eerr = NULL;
	if (session_egress_attach(s, &eerr) < 0) {
		session_acting_done(s);
		end_session(s, BH_END_BOUNDARY_FAILED, eerr->msg);
		bh_error_free(eerr);
		return;
	}
	set_state(s, BH_SESSION_READY);
	s->awake_since_us = now_mono_us();
	session_arm_life(s);
	if (s->languages) {
		struct buf f = {0};
		uint8_t type = BH_CHAN_WARM;
		buf_append(&f, &type, 1);
		proto_put_u32(&f, s->languages);
		sandbox_send(e, sb, &f);
		buf_free(&f);
	}
	if (s->open_cb) {
		bh_session_open_cb cb = s->open_cb;
		s->open_cb = NULL;
		cb(s->open_arg, s, NULL);
	}
	session_acting_done(s); /* ---- ci: attribution: the open is done ---- */
	session_dispatch(s);
}

static const char *validate_owner(const char *owner)
{
	if (!owner || !*owner)
		return NULL;
	regex_t re;
	regcomp(&re, "^[A-Za-z0-9._:-]{1,64}$", REG_EXTENDED | REG_NOSUB);
	int bad = regexec(&re, owner, 0, NULL, 0);
	regfree(&re);
	return bad ? "the owner must be 1 to 64 of A-Z a-z 0-9 . _ : -" : NULL;
}

/* A pooled sandbox is handed over from the loop, not from inside
 * bh_session_open: its caller has not seen the session yet. */
static void on_handoff(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	struct sandbox *sb = s->handoff;
	s->handoff_t = NULL;
	s->handoff = NULL;
	if (!sandbox_alive(e, sb) || sb->state != SB_READY) {
		bh_error *err = NULL;
		bh_fail(&err, BH_E_SYSTEM, 0, "the pooled sandbox %s died before it was handed over",
			sb->name);
		if (sandbox_alive(e, sb))
			sandbox_close(e, sb);
		on_sandbox_open(e, s, NULL, err);
		bh_error_free(err);
		return;
	}
	on_sandbox_open(e, s, sb, NULL);
}

/* A full state disk would fail the intent row, the bundle or a record half
 * way through; refuse a new session before anything is written while the
 * state directory's filesystem has less than the minimum free. Calls, reads
 * and closes of open sessions are not refused (they write little, and a
 * record that cannot be stored is never acknowledged), and nothing is
 * latched: the first open after space returns is admitted. */
static int refuse_if_disk_low(bh_engine *e, bh_error **err)
{
	assert(err);
	struct statvfs v;
	if (statvfs(e->state_dir, &v) < 0)
		return 0; /* the store's own writes will say what is wrong */
	uint64_t free_b = (uint64_t)v.f_bavail * v.f_frsize;
	uint64_t min_b = (uint64_t)e->policy.state_min_free_mb << 20;
	if (free_b >= min_b)
		return 0;
	bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
		  "no space for a new session: the state directory's disk (%s) has %llu KiB free, "
		  "below the %u MiB minimum; open sessions go on",
		  e->state_dir, (unsigned long long)(free_b >> 10), e->policy.state_min_free_mb);
	(*err)->sys_errno = ENOSPC;
	return -1;
}

/* Tier, floor and offer; then the intent row, then the runtime. */
static int start_open(bh_session *s, bh_error **err)
{
	assert(err);
	bh_engine *e = s->e;
	enum bh_tier tier = s->tier == BH_TIER_UNKNOWN ? bh_engine_best_tier(e) : s->tier;
	if (tier == BH_TIER_UNKNOWN)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				 "no isolation tier is offered on this host (run `bulkhead doctor`)");
	if (!bh_tier_meets(tier, s->floor))
		return bh_refuse(err, BH_REFUSAL_ISOLATION, "the floor %s is above the %s tier",
				 bh_tier_name(s->floor), bh_tier_name(tier));
	if (!e->tiers[tier].report.offered)
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED, "the %s tier is not offered here: %s",
				 bh_tier_name(tier), e->tiers[tier].report.reason);
	s->tier = tier;
	if (refuse_if_disk_low(e, err) < 0)
		return -1;
	/* ---- egress: a session with a profile has the proxy in its
	 * sandbox's environment from the start, so never a pooled one ---- */
	struct sandbox *pooled = s->egress_profile ? NULL : pool_take(e, tier);
	if (pooled)
		snprintf(s->sandbox_name, sizeof s->sandbox_name, "%s", pooled->name);
	else if (sandbox_new_name(s->sandbox_name) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	int64_t now = (int64_t)now_real_ms();
	struct store_session_row row = {
		.fingerprint = s->fp,
		.sandbox = s->sandbox_name,
		.runtime = e->runtimes[tier].ops->name,
		.tier = bh_tier_name(tier),
		.floor = s->floor > BH_TIER_NONE ? bh_tier_name(s->floor) : "",
		.principal = s->principal,
		.owner = s->owner,
		.run_key = s->run_key,
		.state = BH_SESSION_OPENING,
		.engine_pid = getpid(),
		.lease_until_ms = now + 120000,
		.created_ms = now,
		.expires_ms = now + (int64_t)s->lifetime_ms,
	};
	/* The intent row comes first: a crash after this line is recoverable. */
	if (store_session_intent(e->store, &row, err) < 0) {
		if (pooled)
			sandbox_close(e, pooled);
		/* The disk filled below the minimum's margin (SQLITE_FULL): nothing
		 * was created, so it is a refusal naming the disk, not a failure. */
		if ((*err)->sys_errno == ENOSPC) {
			cleanup_free char *why = xstrdup((*err)->msg);
			bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				  "no space for a new session: the state directory's disk is full (%s)",
				  why);
			(*err)->sys_errno = ENOSPC;
		}
		return -1;
	}
	set_state_quiet(s, BH_SESSION_OPENING); /* the intent row says so; the event follows */
	/* The store takes writes again: ends it could not take go in now, not
	 * at their next retry. */
	for (bh_session *o = e->sessions; o; o = o->next)
		if (o->end_unstored)
			session_store_end(o);
	session_event(s, "state", pooled ? "opening from the pool" : "opening"); /* ---- ci ---- */
	if (pooled) {
		s->from_pool = true;
		s->handoff = pooled;
		s->handoff_t = loop_timer(e->loop, 0, on_handoff, s);
		return 0;
	}
	enum egress_mount em = !e->egress ? EGRESS_NONE : s->egress_profile ? EGRESS_PROXY : EGRESS_SOCKET;
	if (sandbox_open_egress(e, tier, s->sandbox_name, em, on_sandbox_open, s, err) < 0) {
		store_session_end(e->store, s->fp, BH_END_BOUNDARY_FAILED, (*err)->msg, NULL);
		return -1;
	}
	engine_maybe_crash(e, "open");
	return 0;
}

static void session_open_failed(bh_session *s, const bh_error *err)
{
	/* Refused before anything was created: no row, no sandbox. */
	s->end_reason = BH_END_BOUNDARY_FAILED;
	snprintf(s->end_detail, sizeof s->end_detail, "%s", err->msg);
	set_state(s, BH_SESSION_ENDED);
	if (s->open_cb) {
		bh_session_open_cb cb = s->open_cb;
		s->open_cb = NULL;
		cb(s->open_arg, s, err);
	}
	session_answer_queue(s, err);
}

static bool live(const bh_session *s)
{
	return s->state != BH_SESSION_ENDED;
}

static bool holds_memory(const bh_session *s)
{
	return live(s) && s->state != BH_SESSION_HIBERNATED;
}

static bool replaceable(const bh_session *s)
{
	return !s->queue && (s->state == BH_SESSION_READY || s->state == BH_SESSION_PAUSED ||
			     s->state == BH_SESSION_HIBERNATED);
}

void sessions_census(bh_engine *e, const char *principal, struct census *c)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (!live(s))
			continue;
		c->places++;
		c->memory += holds_memory(s);
		c->mine += !strcmp(s->principal, principal);
	}
}

/* ---- density: the live sessions of principal's owner (0 for no owner) ---- */
size_t sessions_owned(bh_engine *e, const char *principal, const char *owner)
{
	size_t n = 0;
	if (!owner || !*owner)
		return 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		n += live(s) && !strcmp(s->principal, principal ? principal : "") &&
		     !strcmp(s->owner, owner);
	return n;
}

/* The owner's cap (replacing its least recently used idle session), then
 * the engine's admission (admission.c). */
static int admit(bh_engine *e, const struct bh_session_opts *o, bh_error **err)
{
	assert(err);
	const char *principal = o->principal ? o->principal : "";
	const char *owner = o->owner ? o->owner : "";
	size_t owned = 0;
	bh_session *lru = NULL;
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (!live(s) || strcmp(s->principal, principal))
			continue;
		/* Owners of different principals never meet. */
		if (!*owner || strcmp(s->owner, owner))
			continue;
		owned++;
		int64_t used = s->last_call_ms ? s->last_call_ms : s->created_ms;
		int64_t best = lru ? (lru->last_call_ms ? lru->last_call_ms : lru->created_ms) : 0;
		if (replaceable(s) && (!lru || used < best))
			lru = s;
	}
	if (*owner && owned >= e->policy.max_per_owner) {
		if (!lru)
			return bh_refuse(err, BH_REFUSAL_CAPACITY,
					 "this owner already has %zu sandboxes, all with a call in flight",
					 owned);
		bh_log(e, BH_LOG_INFO, "owner cap %u reached: replacing session %.12s",
		       e->policy.max_per_owner, lru->fp);
		session_acting_done(lru); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(lru, BH_END_REPLACED,
			    "its owner opened another sandbox at the owner cap");
	}
	enum bh_tier tier = o->tier == BH_TIER_UNKNOWN ? bh_engine_best_tier(e) : o->tier;
	struct admit_ask ask = {.kind = ADMIT_SESSION, .principal = principal, .tier = tier};
	return admit_sandbox(e, &ask, err);
}

/* A request may ask for a shorter idle window, never one under a second or
 * past the engine's own (plimsoll's `shorter`, with its 1 s floor). */
#define MIN_IDLE_MS 1000u

static uint32_t effective_idle_ms(const bh_engine *e, uint32_t asked)
{
	uint32_t own = e->policy.idle_ms;
	if (!asked || asked >= own)
		return own;
	return asked < MIN_IDLE_MS ? (own < MIN_IDLE_MS ? own : MIN_IDLE_MS) : asked;
}

int bh_session_open(bh_engine *e, const struct bh_session_opts *opts, bh_session_open_cb cb,
		    void *arg, bh_session **out, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	*out = NULL;
	struct bh_session_opts none = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN};
	if (!opts)
		opts = &none;
	if (e->closing)
		return bh_fail(err, BH_E_CLOSED, 0, "the engine is shutting down; nothing ran");
	if (!e->store)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT, "this engine has no store");
	const char *bad = validate_owner(opts->owner);
	if (bad)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%s", bad);
	if (opts->lifetime_ms > SESSION_MAX_LIFETIME_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a lifetime of %u ms is above the %u ms maximum",
				 opts->lifetime_ms, SESSION_MAX_LIFETIME_MS);
	if (opts->languages >> BH_LANG_COUNT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown language in the hint (mask %#x)",
				 opts->languages);
	if ((opts->tier != BH_TIER_UNKNOWN && (opts->tier < 0 || opts->tier >= BH_TIER_COUNT)) ||
	    opts->floor < BH_TIER_UNKNOWN || opts->floor >= BH_TIER_COUNT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown tier or floor");
	/* ---- egress: the engine's own guard (the daemon checked the caller) ---- */
	if (opts->egress_profile && *opts->egress_profile &&
	    egress_check_profile(e, opts->egress_profile, err) < 0)
		return -1;
	if (admit(e, opts, err) < 0)
		return -1;
	bh_session *s = session_create(e);
	if (opts->egress_profile && *opts->egress_profile) /* ---- egress ---- */
		s->egress_profile = xstrdup(opts->egress_profile);
	s->created_ms = (int64_t)now_real_ms();
	s->tier = opts->tier;
	s->floor = opts->floor;
	s->languages = opts->languages;
	s->lifetime_ms = opts->lifetime_ms ? opts->lifetime_ms : e->policy.lifetime_ms;
	s->idle_ms = effective_idle_ms(e, opts->idle_ms);
	s->principal = xstrdup(opts->principal);
	s->owner = xstrdup(opts->owner);
	s->run_key = xstrdup(opts->run_key);
	/* ---- ci: attribution: the open's events are the opener's ---- */
	struct bh_actor opener = {.name = opts->actor.name ? opts->actor.name : opts->principal,
				  .request_id = opts->actor.request_id};
	session_acting(s, &opener);
	s->open_cb = cb;
	s->open_arg = arg;
	if (random_hex(16, s->id) < 0) {
		session_free(s);
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	}
	bh_fingerprint_of(s->id, s->fp);
	/* Born waiting: it stays so until its tier is proven (sessions_tier_proven). */
	if (engine_tier_decided(e, s->tier) && start_open(s, err) < 0) {
		session_free(s);
		return -1;
	}
	s->next = e->sessions;
	e->sessions = s;
	engine_changed(e); /* ---- light ---- */
	*out = s;
	return 0;
}

void sessions_tier_proven(bh_engine *e, enum bh_tier tier)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (s->state != BH_SESSION_WAITING || !engine_tier_decided(e, s->tier) ||
		    (tier != BH_TIER_UNKNOWN && s->tier != tier))
			continue;
		bh_error *err = NULL;
		if (start_open(s, &err) < 0) {
			session_open_failed(s, err);
			bh_error_free(err);
		}
	}
}
