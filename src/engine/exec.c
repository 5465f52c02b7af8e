/* One fresh call (bh_exec): a new sandbox runs one program, then is
 * deleted. A call that names no decided tier waits for the proofs; once
 * admitted it holds a place (admission.c) until it is answered. */
#include "engine_priv.h"
#include "record.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "project.h"

/* ---- project: a project's plan (its files, steps and artifacts) is one
 * EXEC's stdin ---- */
#define MAX_INPUT_BYTES (8u * 1024u * 1024u)
_Static_assert(BH_PROJECT_PLAN_MAX <= MAX_INPUT_BYTES, "a project's plan must be one EXEC's input");

struct pending_exec {
	bh_engine *e;
	char **argv;
	uint8_t *input;
	struct bh_exec_request req;
	bh_exec_cb cb;
	void *arg;
	uint64_t t0;
	char *principal;
	bool placed;                   /* admitted: holds a place until it is freed */
	/* ---- egress: a granted run's profile, the name the broker knows it
	 * by (the fingerprint of an id of its own), its socket and hold ---- */
	char *grant;
	char grant_fp[65];
	char sandbox[40];
	bool grant_open, grant_held;
	struct pending_exec *next;     /* waiting for the proofs */
	struct pending_exec *run_next; /* e->running, while placed */
};

static void pending_free(struct pending_exec *p)
{
	for (struct pending_exec **pp = &p->e->running; p->placed && *pp; pp = &(*pp)->run_next)
		if (*pp == p) {
			*pp = p->run_next;
			break;
		}
	free(p->principal);
	free(p->grant); /* ---- egress ---- */
	argv_free(p->argv);
	free(p->input);
	free(p);
}

static void exec_finish(struct pending_exec *p, const struct bh_exec_result *res,
			const bh_error *err)
{
	if (res) {
		struct bh_exec_result r = *res;
		r.wall_us = now_mono_us() - p->t0;
		p->cb(p->arg, &r, NULL);
	} else {
		p->cb(p->arg, NULL, err);
	}
	pending_free(p);
}

static void exec_refuse(struct pending_exec *p, enum bh_refusal reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void exec_refuse(struct pending_exec *p, enum bh_refusal reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	bh_error *err = NULL;
	bh_refuse(&err, reason, "%s", msg);
	exec_finish(p, NULL, err);
	bh_error_free(err);
}

/* ---- egress: the grant ends before the answer; the socket goes with
 * the sandbox ---- */
static void grant_end(bh_engine *e, struct pending_exec *p, char fp[65])
{
	fp[0] = '\0';
	if (p->grant_held)
		egress_release(e, p->grant_fp, 1);
	p->grant_held = false;
	if (p->grant_open)
		snprintf(fp, 65, "%s", p->grant_fp);
	p->grant_open = false;
}

static void on_exec_done(bh_engine *e, void *arg, struct sandbox *sb,
			 const struct bh_exec_result *res, const bh_error *err)
{
	struct pending_exec *p = arg;
	char open_fp[65];
	grant_end(e, p, open_fp);
	exec_finish(p, res, err);
	if (open_fp[0])
		egress_close_session(e, open_fp);
	/* A fresh call's sandbox serves one call. */
	if (sb)
		sandbox_close(e, sb);
}

static int grant_begin(bh_engine *e, struct pending_exec *p, struct sandbox *sb, bh_error **err)
{
	if (!p->grant)
		return 0;
	snprintf(p->sandbox, sizeof p->sandbox, "%s", sb->name);
	if (egress_open_session(e, p->grant_fp, sb, err) < 0)
		return -1;
	p->grant_open = true;
	if (egress_hold(e, p->grant_fp, 1, p->grant, err) < 0)
		return -1;
	p->grant_held = true;
	return 0;
}

static void on_exec_open(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	struct pending_exec *p = arg;
	if (err) {
		exec_finish(p, NULL, err);
		return;
	}
	bh_error *e2 = NULL;
	if (grant_begin(e, p, sb, &e2) < 0 || sandbox_exec(e, sb, &p->req, on_exec_done, p, &e2) < 0) {
		char open_fp[65];
		grant_end(e, p, open_fp);
		exec_finish(p, NULL, e2);
		bh_error_free(e2);
		if (open_fp[0])
			egress_close_session(e, open_fp);
		sandbox_close(e, sb);
	}
}

const char *execs_sandbox_of(bh_engine *e, const char *fp)
{
	for (struct pending_exec *p = e->running; p; p = p->run_next)
		if (p->grant && !strcmp(p->grant_fp, fp))
			return p->sandbox;
	return NULL;
}

static void exec_dispatch(bh_engine *e, struct pending_exec *p)
{
	if (e->closing) {
		bh_error *err = NULL;
		bh_fail(&err, BH_E_CLOSED, 0, "the engine is shutting down; nothing ran");
		exec_finish(p, NULL, err);
		bh_error_free(err);
		return;
	}
	enum bh_tier tier = p->req.tier == BH_TIER_UNKNOWN ? bh_engine_best_tier(e) : p->req.tier;
	if (tier == BH_TIER_UNKNOWN) {
		exec_refuse(p, BH_REFUSAL_ENVIRONMENT,
			    "no isolation tier is offered on this host (run `bulkhead doctor`)");
		return;
	}
	/* The floor first: a request the tier cannot honour creates nothing. */
	if (!bh_tier_meets(tier, p->req.floor)) {
		exec_refuse(p, BH_REFUSAL_ISOLATION, "the floor %s is above the %s tier",
			    bh_tier_name(p->req.floor), bh_tier_name(tier));
		return;
	}
	if (!e->tiers[tier].report.offered) {
		exec_refuse(p, BH_REFUSAL_UNSUPPORTED, "the %s tier is not offered here: %s",
			    bh_tier_name(tier), e->tiers[tier].report.reason);
		return;
	}
	p->req.tier = tier;
	bh_error *err = NULL;
	struct admit_ask ask = {.kind = ADMIT_RUN, .principal = p->principal, .tier = tier};
	if (admit_sandbox(e, &ask, &err) < 0) {
		exec_finish(p, NULL, err);
		bh_error_free(err);
		return;
	}
	p->placed = true;
	p->run_next = e->running;
	e->running = p;
	if (sandbox_open_egress(e, tier, NULL, p->grant ? EGRESS_PROXY : EGRESS_NONE, on_exec_open, p,
				&err) < 0) {
		exec_finish(p, NULL, err);
		bh_error_free(err);
	}
}

void execs_census(bh_engine *e, const char *principal, struct census *c)
{
	for (const struct pending_exec *p = e->running; p; p = p->run_next) {
		c->places++;
		c->memory++;
		c->mine += !strcmp(p->principal, principal);
	}
}

/* Calls that named this tier need not wait for the other proofs. */
void engine_tier_proven(bh_engine *e, enum bh_tier tier)
{
	struct pending_exec **pp = &e->pending, *ready = NULL;
	while (*pp) {
		struct pending_exec *p = *pp;
		if (p->req.tier == tier) {
			*pp = p->next;
			p->next = ready; /* the list is newest first: this restores arrival order */
			ready = p;
		} else {
			pp = &p->next;
		}
	}
	while (ready) {
		struct pending_exec *n = ready->next;
		ready->next = NULL;
		exec_dispatch(e, ready);
		ready = n;
	}
	sessions_tier_proven(e, tier);
}

void engine_proofs_done(bh_engine *e)
{
	proof_watch_stop(e);
	sessions_tier_proven(e, BH_TIER_UNKNOWN);
	pool_fill(e);
	struct pending_exec *list = e->pending;
	e->pending = NULL;
	/* In arrival order. */
	struct pending_exec *rev = NULL;
	while (list) {
		struct pending_exec *n = list->next;
		list->next = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		struct pending_exec *n = rev->next;
		rev->next = NULL;
		exec_dispatch(e, rev);
		rev = n;
	}
}

int exec_request_check(const struct bh_exec_request *req, bh_error **err)
{
	if (!req || !req->argv || !req->argv[0])
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a call needs a program to run");
	if (req->argv[0][0] != '/')
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "the program must be an absolute path inside the sandbox, not \"%s\"",
				 req->argv[0]);
	if (req->timeout_ms > MAX_TIMEOUT_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "timeout %u ms is above the %u ms maximum",
				 req->timeout_ms, MAX_TIMEOUT_MS);
	/* More than the init could send back in one DONE: it would keep less
	 * than asked without a word. */
	if (req->output_cap > BH_MAX_OUTPUT_CAP)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "output cap %u is above the %u maximum",
				 req->output_cap, BH_MAX_OUTPUT_CAP);
	if (req->input_len > MAX_INPUT_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "input of %zu bytes is above the %u maximum",
				 req->input_len, MAX_INPUT_BYTES);
	if (req->tier != BH_TIER_UNKNOWN && (req->tier < 0 || req->tier >= BH_TIER_COUNT))
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown tier %d", (int)req->tier);
	if (req->floor < BH_TIER_UNKNOWN || req->floor >= BH_TIER_COUNT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown floor %d", (int)req->floor);
	return 0;
}

int bh_exec(bh_engine *e, const struct bh_exec_request *req, bh_exec_cb cb, void *arg,
	    bh_error **err)
{
	return exec_start(e, req, NULL, cb, arg, err);
}

int exec_start(bh_engine *e, const struct bh_exec_request *req, const char *grant, bh_exec_cb cb,
	       void *arg, bh_error **err)
{
	if (!cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a call needs a program to run");
	if (exec_request_check(req, err) < 0)
		return -1;
	if (e->closing)
		return bh_fail(err, BH_E_CLOSED, 0, "the engine is shutting down; nothing ran");
	struct pending_exec *p = xzalloc(sizeof *p);
	p->e = e;
	p->cb = cb;
	p->arg = arg;
	p->t0 = now_mono_us();
	size_t argc = 0;
	while (req->argv[argc])
		argc++;
	p->argv = xzalloc((argc + 1) * sizeof *p->argv);
	for (size_t i = 0; i < argc; i++)
		p->argv[i] = xstrdup(req->argv[i]);
	p->req = *req;
	p->req.argv = (const char *const *)p->argv;
	p->principal = xstrdup(req->principal ? req->principal : "");
	p->req.principal = p->principal;
	if (req->input_len) {
		p->input = xzalloc(req->input_len);
		memcpy(p->input, req->input, req->input_len);
	}
	p->req.input = p->input;
	if (grant && *grant) { /* ---- egress ---- */
		char id[33];
		if (random_hex(16, id) < 0) {
			pending_free(p);
			return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
		}
		bh_fingerprint_of(id, p->grant_fp);
		p->grant = xstrdup(grant);
	}
	p->req.timeout_ms = req->timeout_ms ? req->timeout_ms : DEFAULT_TIMEOUT_MS;
	p->req.output_cap = req->output_cap ? req->output_cap : DEFAULT_OUTPUT_CAP;
	if (!engine_tier_decided(e, p->req.tier)) {
		p->next = e->pending;
		e->pending = p;
		return 0;
	}
	exec_dispatch(e, p);
	return 0;
}

void engine_seal_fresh_record(bh_engine *e, enum bh_tier tier, const struct bh_request_fields *rq,
			      const struct bh_result_fields *rs, int64_t started_unix_ms,
			      struct bh_record *rec)
{
	rec->version = 2;
	bh_request_digest(rq, rec->request_sha256);
	bh_result_digest(rs, rec->result_sha256);
	rec->provider = engine_provider(tier);
	rec->isolation = bh_tier_name(tier);
	rec->environment = e->tiers[tier].environment;
	rec->policy = rec->software_identity = rec->software_rule_id = "";
	rec->started_unix_ms = started_unix_ms;
	rec->ended_unix_ms = (int64_t)now_real_ms();
	bh_record_seal(rec);
}
