/* Where a plimsoll.v1 call is answered, in a fleet. Before its handler
 * runs here:
 *  - OpenSession goes where bh_fleet_place says (here when this host is as
 *    good), forwarded whole otherwise;
 *  - SessionRun and CloseSession look the fingerprint of their session id
 *    up in the directory: held here, or not listed, they are handled here
 *    exactly as today (so an unknown or another principal's id answers the
 *    same from every host); held by another live host, forwarded to it and
 *    its answer returned byte for byte; held by a host that is gone, a
 *    live session answers host_lost (and its entry becomes a tombstone
 *    saying so, for every host), a hibernated one is claimed and adopted
 *    here from the shared images directory, then handled here.
 * A call another host forwarded (headless) is always handled here. */
#include "daemon_priv.h"
#include "daemon_fleet.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SANDBOX_PREFIX "/plimsoll.v1.SandboxService/"
#define OPEN_FORWARD_MS 120000u /* an open waits for its tier at most this long */
/* The library's words for a request no subscriber received: nothing ran. */
#define NO_RESPONDER "no responder"
#define RETRY_EVERY_MS 250u
#define RETRY_FOR_MS 5000u

/* The directory's key of a session: the engine's fingerprint of its id. */
static void fingerprint_of(const char *id, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_Digest(id, strlen(id), d, &n, EVP_sha256(), NULL);
	for (unsigned i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	out[64] = '\0';
}

static void utc_text(int64_t unix_ms, char *out, size_t n)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	if (unix_ms <= 0 || !gmtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "an unknown time");
}

/* host_lost: nothing ran; the session ended when its host was lost. */
static void refuse_host_lost(struct call *c, const char *detail)
{
	char *end_detail = wire_session_end_detail(BH_END_HOST_LOST, detail);
	char msg[512];
	snprintf(msg, sizeof msg, "the session ended: %s; nothing ran", detail);
	struct wire_error e = {
		.code = WIRE_FAILED_PRECONDITION,
		.message = msg,
		.not_dispatched = true,
		.reason = WIRE_REFUSAL_REQUEST,
		.session_ended = true,
		.end = wire_session_end_of(BH_END_HOST_LOST),
		.end_detail = end_detail,
	};
	c->srv->metrics.fleet_host_lost++;
	call_answer_error(c, &e);
	free(end_detail);
}

/* ---- forwarding ---- */

struct forward_ctx {
	struct call *c;     /* NULL: answered without it (its host died), freed by its callback */
	struct daemon_fleet *df;
	char host[BH_FLEET_ID_MAX + 1];
	char method[32];
	bool open;
	bool in_library;    /* its answer callback is still to come */
	struct forward_ctx *next_orphan;
};

/* The call's ctx_free: a forward the library still holds outlives its call
 * (listed, so that what the library never answers is freed at the stop). */
static void forward_free(void *p)
{
	struct forward_ctx *x = p;
	if (!x->in_library) {
		free(x);
		return;
	}
	x->c = NULL;
	x->next_orphan = x->df->orphans;
	x->df->orphans = x;
}

static void orphan_forget(struct forward_ctx *x)
{
	for (struct forward_ctx **pp = &x->df->orphans; *pp; pp = &(*pp)->next_orphan)
		if (*pp == x) {
			*pp = x->next_orphan;
			return;
		}
}

void daemon_fleet_orphan_forwards(struct server *s)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (c->ctx_free == forward_free) {
			forward_free(c->ctx);
			c->ctx = NULL;
			c->ctx_free = NULL;
		}
}

void daemon_fleet_free_orphans(struct daemon_fleet *df)
{
	while (df->orphans) {
		struct forward_ctx *x = df->orphans;
		df->orphans = x->next_orphan;
		free(x);
	}
}

/* An OpenSession another host answered: remembered for a while as that
 * host's, in case the caller's next call is quicker than the directory. */
static void remember_open(struct daemon_fleet *df, const char *host, const struct bh_fleet_msg *ans)
{
	if (ans->status != 200)
		return;
	struct wire_open_session_response r;
	struct wire_status st;
	if (wire_decode_open_session_response((const char *)ans->body, ans->body_len, &r, &st) < 0)
		return;
	if (r.session && strlen(r.session) == 64) {
		struct recent_open *o = &df->recent[df->next_recent++ % FLEET_RECENT_OPENS];
		snprintf(o->fp, sizeof o->fp, "%s", r.session);
		snprintf(o->host, sizeof o->host, "%s", host);
		o->until_ms = now_mono_ms() + FLEET_RECENT_MS;
	}
	wire_open_session_response_free(&r);
}

static bool recent_open(struct daemon_fleet *df, const char *fp, struct bh_fleet_entry *out)
{
	uint64_t now = now_mono_ms();
	for (size_t i = 0; i < FLEET_RECENT_OPENS; i++) {
		const struct recent_open *o = &df->recent[i];
		if (o->until_ms > now && !strcmp(o->fp, fp)) {
			memset(out, 0, sizeof *out);
			snprintf(out->fingerprint, sizeof out->fingerprint, "%s", fp);
			snprintf(out->host, sizeof out->host, "%s", o->host);
			out->state = BH_FLEET_LIVE;
			return true;
		}
	}
	return false;
}

/* Nobody received it: routed again in a moment (the owner may be moving
 * to another NATS server, or gone: the route then says so). */
static bool retry_later(struct call *c, const char *method)
{
	struct daemon_fleet *df = c->srv->fleet;
	uint64_t now = now_mono_ms();
	if (!df || c->gone || now >= c->fleet_first_ms + RETRY_FOR_MS)
		return false;
	struct forward_retry *more = realloc(df->retries, (df->n_retries + 1) * sizeof *more);
	if (!more)
		abort();
	df->retries = more;
	struct forward_retry *r = &df->retries[df->n_retries++];
	r->c = c;
	snprintf(r->method, sizeof r->method, "%s", method);
	r->due_ms = now + RETRY_EVERY_MS;
	return true;
}

static void on_answer(void *arg, const struct bh_fleet_msg *ans, const char *why)
{
	struct forward_ctx *x = arg;
	x->in_library = false;
	struct call *c = x->c;
	if (!c) { /* answered already: its host died while it was in flight */
		orphan_forget(x);
		free(x);
		return;
	}
	struct server *s = c->srv;
	bool nobody = !ans && why && !strncmp(why, NO_RESPONDER, strlen(NO_RESPONDER));
	if (nobody && retry_later(c, x->method))
		return; /* still pending: its ctx is freed when it is routed again */
	if (!ans)
		s->metrics.fleet_forward_failed++;
	if (!c->gone && nobody) {
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "host %s, which holds the session, is not reachable over the fleet: %s; "
			    "nothing ran", x->host, why);
	} else if (!c->gone) {
		if (ans) {
			if (x->open && s->fleet)
				remember_open(s->fleet, x->host, ans);
			call_answer_relayed(c, ans->status, ans->n_headers, ans->header_names,
					    ans->header_values, ans->body, ans->body_len);
		} else {
			daemon_log(BH_LOG_WARN, "fleet", "%s forwarded to host %s: no answer: %s",
				   c->procedure, x->host, why ? why : "");
			/* Whether it ran there is not known: no NotDispatched. */
			call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_UNSPECIFIED,
				    "host %s, which holds the session, did not answer: %s", x->host,
				    why ? why : "no reason given");
		}
	}
	call_wake(c);
}

static uint32_t forward_timeout(const struct call *c, const char *method)
{
	if (!strcmp(method, "OpenSession"))
		return OPEN_FORWARD_MS;
	/* A cell's longest run, a held call's longest wait, and a margin. */
	uint32_t approval = c->srv->cfg->approval_timeout_ms ? c->srv->cfg->approval_timeout_ms : 60000;
	return 5u * 60u * 1000u + approval + 30000u;
}

/* The headers that matter to the owner, as the client sent them. */
static const char *const forwarded_headers[] = {
	"Authorization", "Content-Type", "Connect-Protocol-Version", "Connect-Timeout-Ms",
	"Plimsoll-Request-Id",
};

static void forward(struct call *c, const char *method, const char *host)
{
	struct server *s = c->srv;
	char path[128];
	snprintf(path, sizeof path, SANDBOX_PREFIX "%s", method);
	struct bh_fleet_msg req = {.path = path, .body = (const uint8_t *)c->body,
				   .body_len = c->body_len};
	for (size_t i = 0; i < sizeof forwarded_headers / sizeof forwarded_headers[0]; i++) {
		const char *v = call_header(c, forwarded_headers[i]);
		if (!v || (c->request_id_minted && !strcmp(forwarded_headers[i], "Plimsoll-Request-Id")))
			continue;
		req.header_names[req.n_headers] = forwarded_headers[i];
		req.header_values[req.n_headers++] = v;
	}
	struct forward_ctx *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->c = c;
	x->df = s->fleet;
	snprintf(x->host, sizeof x->host, "%s", host);
	x->open = !strcmp(method, "OpenSession");
	snprintf(x->method, sizeof x->method, "%s", method);
	if (!c->fleet_first_ms)
		c->fleet_first_ms = now_mono_ms();
	c->fleet_routed = true;
	call_pending(c, x, forward_free);
	x->in_library = true;
	char *why = NULL;
	if (bh_fleet_forward(s->fleet->f, host, &req, forward_timeout(c, method), on_answer, x,
			     &why) < 0) {
		x->in_library = false;
		c->engine_pending = false;
		s->metrics.fleet_forward_failed++;
		s->metrics.fleet_forwarded++;
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "host %s holds the session but the call cannot reach it: %s; nothing ran",
			    host, why ? why : "no reason given");
		free(why);
		return;
	}
	s->metrics.fleet_forwarded++;
}

/* ---- a gone host's sessions ---- */

static void end_lost(struct daemon_fleet *df, const struct bh_fleet_entry *seen,
		     const char *detail)
{
	struct bh_fleet_entry ended = *seen;
	ended.state = BH_FLEET_ENDED;
	ended.end_reason = BH_END_HOST_LOST;
	ended.updated_unix_ms = (int64_t)now_real_ms();
	snprintf(ended.end_detail, sizeof ended.end_detail, "%.255s", detail); /* cut to fit */
	/* Of two hosts writing it, one wins; the tombstone says the same. */
	bh_fleet_claim(df->f, seen, &ended, NULL, NULL);
}

static bool engine_holds(bh_engine *e, const char *fp)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(e, &list);
	bool held = false;
	for (size_t i = 0; i < n && !held; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		held = info.state != BH_SESSION_ENDED && !strcmp(info.fingerprint, fp);
	}
	free(list);
	return held;
}

struct adopt_ctx {
	struct call *c;
	char method[32];
	struct bh_fleet_entry seen;
};

static void on_claimed(void *arg, bool won, const char *why)
{
	struct adopt_ctx *x = arg;
	struct call *c = x->c;
	struct server *s = c->srv;
	struct daemon_fleet *df = s->fleet;
	char method[32];
	snprintf(method, sizeof method, "%s", x->method);
	struct bh_fleet_entry seen = x->seen;
	/* Ours no longer: the handler that runs next keeps its own. */
	c->ctx = NULL;
	c->ctx_free = NULL;
	c->engine_pending = false;
	free(x);
	if (!df || !s->e) {
		if (!c->gone)
			call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
				    "the daemon is shutting down; nothing ran");
		call_wake(c);
		return;
	}
	if (!won && c->gone) {
		call_wake(c); /* frees it */
		return;
	}
	if (!won && engine_holds(s->e, seen.fingerprint)) {
		/* This host's own claim came first (an earlier call adopted it). */
		sandbox_service(c, method);
		if (!c->engine_pending)
			call_wake(c);
		return;
	}
	if (!won) {
		/* Another host claimed it first: it is that host's now. */
		struct bh_fleet_entry now;
		struct bh_fleet_host h;
		if (!c->headless && bh_fleet_lookup(df->f, seen.fingerprint, &now) == 0 &&
		    strcmp(now.host, seen.host) &&
		    strcmp(now.host, df->self) && bh_fleet_host(df->f, now.host, &h) == 0 && !h.gone &&
		    now.state != BH_FLEET_ENDED) {
			forward(c, method, now.host);
			if (c->answered)
				call_wake(c);
			return;
		}
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "another host is adopting the session of gone host %s (%s); nothing ran, "
			    "retry", seen.host, why ? why : "its claim came first");
		call_wake(c);
		return;
	}
	bh_session *adopted = NULL;
	bh_error *err = NULL;
	if (bh_engine_adopt_hibernated(s->e, &seen.hib, seen.host, &adopted, &err) < 0) {
		char detail[384];
		snprintf(detail, sizeof detail, "host %s is gone and its hibernated session could not "
			 "be adopted on host %s: %s", seen.host, df->self, err ? err->msg : "");
		daemon_log(BH_LOG_ERROR, "fleet", "session %.12s: %s", seen.fingerprint, detail);
		bh_error_free(err);
		struct bh_fleet_entry mine;
		if (bh_fleet_lookup(df->f, seen.fingerprint, &mine) == 0)
			end_lost(df, &mine, detail);
		if (!c->gone)
			refuse_host_lost(c, detail);
		call_wake(c);
		return;
	}
	s->metrics.fleet_adopted++;
	daemon_log(BH_LOG_INFO, "fleet", "adopted hibernated session %.12s of gone host %s (%llu "
		   "calls so far); its next call restores it here", seen.fingerprint, seen.host,
		   (unsigned long long)seen.hib.calls);
	daemon_fleet_session_changed(s); /* the directory says HIBERNATED here */
	if (c->gone) { /* adopted all the same: the claim made it this host's */
		call_wake(c);
		return;
	}
	/* Handled here now, as if it had come in so. */
	sandbox_service(c, method);
	if (!c->engine_pending)
		call_wake(c);
}

static void adopt(struct call *c, const char *method, const struct bh_fleet_entry *seen)
{
	struct daemon_fleet *df = c->srv->fleet;
	struct adopt_ctx *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->c = c;
	snprintf(x->method, sizeof x->method, "%s", method);
	x->seen = *seen;
	struct bh_fleet_entry mine = *seen;
	snprintf(mine.host, sizeof mine.host, "%s", df->self);
	mine.updated_unix_ms = (int64_t)now_real_ms();
	c->fleet_routed = true;
	call_pending(c, x, free);
	if (bh_fleet_claim(df->f, seen, &mine, on_claimed, x) < 0) {
		c->ctx = NULL;
		c->ctx_free = NULL;
		c->engine_pending = false;
		free(x);
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "the session's host %s is gone and the fleet cannot be written to claim "
			    "it; nothing ran, retry", seen->host);
	}
}

/* ---- the routes ---- */

static bool route_open(struct call *c)
{
	struct daemon_fleet *df = c->srv->fleet;
	struct wire_open_session_request req = {0};
	struct wire_status st;
	if (wire_decode_open_session_request(c->body, c->body_len, &req, &st) < 0)
		return false; /* refused here, as today */
	enum bh_tier floor = req.env.floor;
	wire_open_session_request_free(&req);
	char host[BH_FLEET_ID_MAX + 1];
	if (bh_fleet_place(df->f, floor, host) < 0 || !strcmp(host, df->self))
		return false; /* no host meets the floor: this one says why, as today */
	forward(c, "OpenSession", host);
	return true;
}

static bool session_id_of(const struct call *c, const char *method, char fp[65])
{
	struct wire_status st;
	char *id = NULL;
	if (!strcmp(method, "SessionRun")) {
		struct wire_session_run_request req = {0};
		if (wire_decode_session_run_request(c->body, c->body_len, &req, &st) < 0)
			return false;
		id = req.session_id;
		req.session_id = NULL;
		wire_session_run_request_free(&req);
	} else {
		struct wire_close_session_request req = {0};
		if (wire_decode_close_session_request(c->body, c->body_len, &req, &st) < 0)
			return false;
		id = req.session_id;
		req.session_id = NULL;
		wire_close_session_request_free(&req);
	}
	if (!id || !*id) {
		free(id);
		return false;
	}
	fingerprint_of(id, fp);
	free(id);
	return true;
}

static bool route_session(struct call *c, const char *method)
{
	struct server *s = c->srv;
	struct daemon_fleet *df = s->fleet;
	char fp[65];
	struct bh_fleet_entry en;
	if (!session_id_of(c, method, fp) ||
	    (bh_fleet_lookup(df->f, fp, &en) < 0 && !recent_open(df, fp, &en)))
		return false; /* not in the directory: here, as today */
	for (size_t i = 0; i < df->n_lost; i++)
		if (!strcmp(df->lost[i].fp, fp) && en.state != BH_FLEET_ENDED) {
			snprintf(en.end_detail, sizeof en.end_detail, "%s", df->lost[i].detail);
			en.state = BH_FLEET_ENDED;
			en.end_reason = BH_END_HOST_LOST;
		}
	/* Another principal's session answers as an unknown one does: here. */
	if (en.hib.principal[0] && strcmp(en.hib.principal, c->who.name))
		return false;
	snprintf(c->session_fp, sizeof c->session_fp, "%s", fp);
	if (en.state == BH_FLEET_ENDED) {
		if (en.end_reason != BH_END_HOST_LOST)
			return false;
		refuse_host_lost(c, en.end_detail[0] ? en.end_detail : "its host was lost");
		return true;
	}
	if (!strcmp(en.host, df->self))
		return false;
	struct bh_fleet_host h;
	bool gone = bh_fleet_host(df->f, en.host, &h) < 0 || h.gone;
	if (!gone) {
		if (c->headless)
			return false; /* never forwarded twice: answered here, as today */
		forward(c, method, en.host);
		return true;
	}
	/* A host cut off from NATS sees every other host go gone: it judges
	 * nobody lost until its own view is current again. */
	struct bh_fleet_status fs;
	bh_fleet_get_status(df->f, &fs);
	if (!fs.fresh) {
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "host %s, which holds the session, is not heard from and this host's own "
			    "view of the fleet is not current (NATS unreachable?); nothing ran, retry",
			    en.host);
		return true;
	}
	if (en.state == BH_FLEET_HIBERNATED) {
		/* Adopted by a host that can restore it: this one when it gives
		 * the session's tier and has proven it (a refusal then would
		 * leave a claim nobody holds), else one the placement names. */
		bool here = bh_engine_proven(s->e) && daemon_served_tier(s) >= en.hib.tier;
		char other[BH_FLEET_ID_MAX + 1];
		if (!here && !c->headless && bh_fleet_place(df->f, en.hib.tier, other) == 0 &&
		    strcmp(other, df->self)) {
			forward(c, method, other);
			return true;
		}
		if (!here) {
			call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
				    "the session's host %s is gone and this host cannot restore its %s-tier "
				    "image yet%s; nothing ran, retry", en.host, bh_tier_name(en.hib.tier),
				    bh_engine_proven(s->e) ? "" : " (its tiers are still being proven)");
			return true;
		}
		adopt(c, method, &en);
		return true;
	}
	char since[32], detail[256];
	utc_text(gone && bh_fleet_host(df->f, en.host, &h) == 0 ? h.heartbeat_unix_ms
								  : en.updated_unix_ms,
		 since, sizeof since);
	snprintf(detail, sizeof detail, "host_lost: host %s, which held it, is gone (no heartbeat "
		 "since %s)", en.host, since);
	daemon_log(BH_LOG_WARN, "fleet", "session %.12s of gone host %s: host_lost", fp, en.host);
	end_lost(df, &en, detail);
	refuse_host_lost(c, detail);
	return true;
}

/* Every tick: a call forwarded to a host that is gone meanwhile (killed in
 * the middle of it) is answered now, not at its forward's deadline
 * minutes later. Whether it ran there is not known: no NotDispatched. Its
 * session ended with its host: SessionEnded host_lost, and the entry says
 * so for every host's next call. */
void daemon_fleet_forwards_check(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	struct bh_fleet_status fs;
	bh_fleet_get_status(df->f, &fs);
	if (!fs.fresh)
		return;
	for (struct call *c = s->calls, *next; c; c = next) {
		next = c->next;
		if (c->ctx_free != forward_free || !c->engine_pending)
			continue;
		struct forward_ctx *x = c->ctx;
		struct bh_fleet_host h;
		if (!x->in_library || (bh_fleet_host(df->f, x->host, &h) == 0 && !h.gone))
			continue;
		char method[32], host[BH_FLEET_ID_MAX + 1];
		snprintf(method, sizeof method, "%s", x->method);
		snprintf(host, sizeof host, "%s", x->host);
		c->ctx = NULL;
		c->ctx_free = NULL;
		forward_free(x); /* the library's callback frees it */
		c->engine_pending = false;
		s->metrics.fleet_forward_failed++;
		char since[32], detail[256];
		utc_text(bh_fleet_host(df->f, host, &h) == 0 ? h.heartbeat_unix_ms : (int64_t)now_real_ms(),
			 since, sizeof since);
		snprintf(detail, sizeof detail, "host_lost: host %s, which held it, died while the call "
			 "was in flight (no heartbeat since %s)", host, since);
		daemon_log(BH_LOG_WARN, "fleet", "%s in flight on host %s, which is gone: answered "
			   "host_lost", c->procedure, host);
		struct bh_fleet_entry en;
		if (c->session_fp[0] && bh_fleet_lookup(df->f, c->session_fp, &en) == 0 &&
		    !strcmp(en.host, host) && en.state == BH_FLEET_LIVE)
			end_lost(df, &en, detail);
		if (!c->gone) {
			if (!strcmp(method, "OpenSession")) {
				call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_UNSPECIFIED,
					    "host %s, where the session was being opened, died meanwhile; "
					    "open again", host);
			} else {
				char *end_detail = wire_session_end_detail(BH_END_HOST_LOST, detail);
				char msg[512];
				snprintf(msg, sizeof msg, "the session ended: %s; whether the call ran there "
					 "is not known", detail);
				struct wire_error e = {
					.code = WIRE_FAILED_PRECONDITION,
					.message = msg,
					.session_ended = true,
					.end = wire_session_end_of(BH_END_HOST_LOST),
					.end_detail = end_detail,
				};
				s->metrics.fleet_host_lost++;
				call_answer_error(c, &e);
				free(end_detail);
			}
		}
		call_wake(c);
	}
}

void daemon_fleet_retry_due(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	uint64_t now = now_mono_ms();
	for (size_t i = 0; i < df->n_retries;) {
		struct forward_retry r = df->retries[i];
		if (r.due_ms > now && !r.c->gone) {
			i++;
			continue;
		}
		df->retries[i] = df->retries[--df->n_retries];
		struct call *c = r.c;
		if (c->ctx_free)
			c->ctx_free(c->ctx);
		c->ctx = NULL;
		c->ctx_free = NULL;
		c->engine_pending = false;
		if (c->gone) {
			call_wake(c); /* frees it */
			continue;
		}
		/* From the top: the directory may say otherwise by now. */
		c->fleet_routed = false;
		sandbox_service(c, r.method);
		if (!c->engine_pending)
			call_wake(c);
	}
}

bool daemon_fleet_route(struct call *c, const char *method)
{
	if (!c->srv->fleet || c->fleet_routed || c->approved)
		return false;
	/* A forwarded call is never forwarded again (fleet_serve.c); it is
	 * still refused host_lost, or adopts, as any call here would. */
	if (!strcmp(method, "OpenSession"))
		return !c->headless && route_open(c);
	if (!strcmp(method, "SessionRun") || !strcmp(method, "CloseSession"))
		return route_session(c, method);
	return false; /* Describe, and Run: a fresh call stays on the host that got it */
}
