/* plimsoll.v1.SandboxService over the engine: Describe, Run (a JavaScript
 * snippet in a fresh sandbox), OpenSession, SessionRun (a cell), and
 * CloseSession. Decoding and the protocol gate are wire's; this file maps
 * the decoded requests onto the engine and its answers back, and keeps
 * plimsoll's session rules: an id is found only by the principal that
 * opened it, and an unknown id and another principal's get the same answer. */
#include "daemon_priv.h"

#include "project.h" /* ---- project ---- */
#include "record.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CALL_TIMEOUT_MS (5u * 60u * 1000u) /* plimsoll's RPC edge ceiling */

static const char *provider_of(enum bh_tier t)
{
	return t == BH_TIER_KERNEL ? "bulkhead-runsc" : "bulkhead-crun";
}

/* ---- project ---- */
const char *sandbox_provider_of(enum bh_tier t)
{
	return provider_of(t);
}

/* A software rule names identities a run's software must match; bulkhead
 * offers no software identity, so no rule can be met. */
static bool refuse_rule(struct call *c, const struct wire_rule *rule)
{
	if (!rule->mode || !*rule->mode)
		return false;
	call_refuse(c, WIRE_FAILED_PRECONDITION, WIRE_REFUSAL_ENVIRONMENT,
		    "this daemon states no software identity, so the software rule cannot be met; "
		    "send the call without one");
	return true;
}

static void refuse_status(struct call *c, const struct wire_status *st)
{
	struct wire_error e;
	wire_error_from_status(st, &e);
	call_answer_error(c, &e);
	wire_error_free(&e);
}

/* An unknown id, and another principal's, answer exactly this. */
static void answer_not_found(struct call *c)
{
	struct wire_error e = {
		.code = WIRE_NOT_FOUND,
		.message = "no such session",
		.not_dispatched = true,
		.reason = WIRE_REFUSAL_REQUEST,
		.session_ended = true,
		.end = WIRE_END_NOT_FOUND,
	};
	call_answer_error(c, &e);
}

static uint32_t call_timeout(int32_t sent)
{
	if (sent <= 0)
		return 0; /* the engine's default */
	return (uint32_t)sent > MAX_CALL_TIMEOUT_MS ? MAX_CALL_TIMEOUT_MS : (uint32_t)sent;
}

/* ---- Describe ---- */

static void describe(struct call *c)
{
	struct wire_status st;
	if (wire_decode_describe_request(c->body, c->body_len, &st) < 0) {
		refuse_status(c, &st);
		return;
	}
	bh_engine *e = c->srv->e;
	enum bh_tier best = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier : bh_engine_best_tier(e);
	const struct bh_policy *p = bh_engine_policy(e);
	const char *env = best == BH_TIER_UNKNOWN ? "" : bh_engine_environment(e, best);
	static const char *const js[] = {"javascript"};
	/* What a session's cells may use. plimsoll's clients look for it on
	 * projectEnvironment.languages (a cell in a language missing there is
	 * refused before it is sent), newer ones on sessionEnvironment too.
	 * ---- project: a project runs where a cell does, within plimsoll's
	 * project budget (120 s), its steps by /bin/sh with both languages. */
	static const char *const both[] = {"javascript", "python"};
	uint32_t mem = 0, pids = 0;
	bh_engine_limits(e, &mem, &pids);
	struct wire_describe_response d = {
		.sandbox = best == BH_TIER_UNKNOWN ? "" : provider_of(best),
		.isolation = best == BH_TIER_UNKNOWN ? "" : bh_tier_name(best),
		.protocol = WIRE_PROTOCOL,
		.javascript_environment = {.present = true, .identity = env,
					   .max_timeout_ms = MAX_CALL_TIMEOUT_MS,
					   .languages = js, .n_languages = 1},
		.supports_project = true, /* ---- project ---- */
		.project_environment = {.present = true, .identity = env,
					.max_timeout_ms = BH_PROJECT_MAX_TIMEOUT_MS,
					.languages = both, .n_languages = 2},
		.session_environment = {.present = true, .identity = env,
					.max_timeout_ms = MAX_CALL_TIMEOUT_MS,
					.languages = both, .n_languages = 2},
		.resources = {.present = true, .memory_mb = mem, .cpus = 1, .pids = pids,
			      .disk_mb = p->disk_budget_mb},
		.supports_sessions = true,
		.session_lifetime_ms = p->lifetime_ms,
		.session_idle_timeout_ms = p->idle_ms,
		.max_sessions_per_caller = p->max_per_principal,
		.max_sessions_per_owner = p->max_per_owner,
	};
	/* ---- profiles: the ones this caller may name ---- */
	struct wire_grant_profile *granted = daemon_egress_describe(c, &d);
	call_answer_json(c, wire_encode_describe_response(&d));
	free(granted);
}

/* ---- approvals ---- */

/* The request digest the call's record will carry (the engine's own
 * fields: session_call.c, snippet.c), so its approval events name it. */
static void held_request_digest(const struct approval_subject *w, enum bh_tier floor,
				int64_t sent_timeout_ms, char out[65])
{
	bool cell = !strcmp(w->kind, "cell");
	struct bh_request_fields rf = {
		.protocol = 3,
		.minimum_isolation = floor > BH_TIER_NONE ? bh_tier_name(floor) : "",
		.timeout_ms = sent_timeout_ms,
		.software_mode = "",
		.kind = w->kind,
		.language = bh_language_name(w->language),
		.code = (const uint8_t *)w->code,
		.code_len = w->code_len,
		.grant_profile = w->grant_profile ? w->grant_profile : "", /* ---- profiles ---- */
		.files = cell ? w->files : NULL,
		.n_files = cell ? w->n_files : 0,
	};
	bh_request_digest(&rf, out);
}

/* Holds the call when its caller's policy says a person decides first;
 * true when it was held (or refused for the queue being full). */
static bool held_for_approval(struct call *c, struct approval_subject *w, enum bh_tier floor,
			      int64_t sent_timeout_ms)
{
	if (!approvals_wanted(c->srv, c))
		return false;
	char digest[65];
	held_request_digest(w, floor, sent_timeout_ms, digest);
	w->request_sha256 = digest;
	approvals_hold(c, w);
	return true;
}

/* ---- Run: one snippet ---- */

struct run_ctx {
	struct call *c;
	struct wire_run_request req;
};

static void run_ctx_free(void *p)
{
	struct run_ctx *r = p;
	wire_run_request_free(&r->req);
	free(r);
}

static void on_run(void *arg, const struct bh_snippet_result *res, const bh_error *err)
{
	struct run_ctx *r = arg;
	struct call *c = r->c;
	if (!c->gone) {
		if (!res) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_run_response a = {
				.sandbox = provider_of(res->tier),
				.isolation = bh_tier_name(res->tier),
				.duration_ms = (int64_t)(res->duration_us / 1000u),
				.has_record = true,
				.record = *res->record,
				.environment = res->record->environment,
				.result = {.kind = "javascript", .exit_code = res->exit_code,
					   .timed_out = res->timed_out, .out = res->out,
					   .out_len = res->out_len, .err = res->errout,
					   .err_len = res->errout_len,
					   .stdout_truncated = res->stdout_truncated,
					   .stderr_truncated = res->stderr_truncated},
			};
			c->srv->metrics.runs++;
			call_answer_json(c, wire_encode_run_response(&a));
		}
	}
	call_wake(c);
}

static void run(struct call *c)
{
	struct run_ctx *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	r->c = c;
	struct wire_status st;
	if (wire_decode_run_request(c->body, c->body_len, &r->req, &st) < 0) {
		refuse_status(c, &st);
		free(r);
		return;
	}
	if (refuse_rule(c, &r->req.env.rule) ||
	    daemon_egress_refuse(c, r->req.javascript.grant_profile, false)) { /* ---- profiles ---- */
		run_ctx_free(r);
		return;
	}
	if (r->req.kind == WIRE_PAYLOAD_PROJECT) { /* ---- project ---- */
		sandbox_project_run(c, &r->req);
		run_ctx_free(r);
		return;
	}
	struct approval_subject held = {
		.procedure = "Run",
		.grant_profile = r->req.javascript.grant_profile, /* ---- profiles ---- */
		.tier = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier
							 : bh_engine_best_tier(c->srv->e),
		.kind = "javascript",
		.language = BH_LANG_JAVASCRIPT,
		.code = r->req.javascript.code,
		.code_len = r->req.javascript.code_len,
	};
	if (held_for_approval(c, &held, r->req.env.floor, r->req.env.timeout_ms)) {
		run_ctx_free(r);
		return;
	}
	struct bh_snippet sn = {
		.tier = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier : BH_TIER_UNKNOWN,
		.floor = r->req.env.floor,
		.code = r->req.javascript.code,
		.code_len = r->req.javascript.code_len,
		.timeout_ms = call_timeout(r->req.env.timeout_ms),
		.has_sent_timeout = true,
		.sent_timeout_ms = r->req.env.timeout_ms,
		.principal = c->who.name, /* a Run in flight holds one of the caller's places */
		.grant_profile = r->req.javascript.grant_profile, /* ---- profiles: checked above ---- */
	};
	call_pending(c, r, run_ctx_free);
	bh_error *err = NULL;
	if (bh_run_javascript(c->srv->e, &sn, on_run, r, &err) < 0) {
		call_not_started(c, err);
	}
}

/* ---- OpenSession ---- */

struct open_ctx {
	struct call *c;
	struct wire_open_session_request req;
};

static void open_ctx_free(void *p)
{
	struct open_ctx *o = p;
	wire_open_session_request_free(&o->req);
	free(o);
}

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	struct open_ctx *o = arg;
	struct call *c = o->c;
	if (c->gone) {
		/* Nobody will learn the id: close what was opened for them. */
		if (!err && s)
			bh_session_kill(s);
	} else if (err) {
		call_answer_bh(c, err, NULL);
	} else {
		struct bh_session_info info;
		bh_session_get_info(s, &info);
		daemon_fleet_session_changed(c->srv); /* ---- fleet: in the directory now ---- */
		snprintf(c->session_fp, sizeof c->session_fp, "%s", info.fingerprint);
		struct wire_open_session_response a = {
			.session_id = bh_session_id(s),
			.session = info.fingerprint,
			.sandbox = provider_of(info.tier),
			.isolation = bh_tier_name(info.tier),
			.expires_unix_ms = info.expires_unix_ms,
			.idle_timeout_ms = info.idle_ms, /* the request's, when shorter */
		};
		call_answer_json(c, wire_encode_open_session_response(&a));
	}
	call_wake(c);
}

static void open_session(struct call *c)
{
	struct open_ctx *o = calloc(1, sizeof *o);
	if (!o)
		abort();
	o->c = c;
	struct wire_status st;
	if (wire_decode_open_session_request(c->body, c->body_len, &o->req, &st) < 0) {
		refuse_status(c, &st);
		free(o);
		return;
	}
	if (refuse_rule(c, &o->req.env.rule) ||
	    daemon_egress_refuse(c, o->req.grant_profile, true)) { /* ---- profiles ---- */
		open_ctx_free(o);
		return;
	}
	struct bh_session_opts opts = {
		.tier = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier : BH_TIER_UNKNOWN,
		.floor = o->req.env.floor,
		.languages = o->req.languages,
		.lifetime_ms = o->req.lifetime_ms,
		.idle_ms = o->req.idle_timeout_ms,
		.principal = c->who.name,
		.owner = o->req.owner,
		/* ---- truth: the client's trace id is the session's run (B26) ---- */
		.run_key = o->req.env.trace_id,
		.actor = call_actor(c), /* ---- ci: attribution ---- */
		.egress_profile = o->req.grant_profile, /* ---- profiles: checked above ---- */
	};
	call_pending(c, o, open_ctx_free);
	bh_session *s = NULL;
	bh_error *err = NULL;
	if (bh_session_open(c->srv->e, &opts, on_open, o, &s, &err) < 0) {
		call_not_started(c, err);
	}
}

/* ---- SessionRun ---- */

struct cell_ctx {
	struct call *c;
	struct wire_session_run_request req;
	enum bh_tier tier;
	bool snippet; /* a javascript payload: a fresh node in the session's sandbox */
};

static void cell_ctx_free(void *p)
{
	struct cell_ctx *x = p;
	wire_session_run_request_free(&x->req);
	free(x);
}

static void on_cell(void *arg, const struct bh_cell_result *res, const bh_error *err)
{
	struct cell_ctx *x = arg;
	struct call *c = x->c;
	struct server *srv = c->srv;
	if (res && !err)
		metrics_cell_latency(&srv->metrics, res->wall_us);
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, res ? res->record : NULL);
		} else {
			struct wire_session_run_response a = {
				.has_run = true,
				.run = {
					.sandbox = provider_of(x->tier),
					.isolation = bh_tier_name(x->tier),
					.duration_ms = (int64_t)(res->duration_us / 1000u),
					.has_record = res->record != NULL,
					.environment = res->record ? res->record->environment : "",
					.result = {.kind = x->snippet ? "javascript" : "cell",
					   .exit_code = res->exit_code,
						   .timed_out = res->timed_out, .out = res->out,
						   .out_len = res->out_len, .err = res->errout,
						   .err_len = res->errout_len,
						   .stdout_truncated = res->stdout_truncated,
						   .stderr_truncated = res->stderr_truncated,
						   .interpreter_started = res->interpreter_started,
						   .interpreter_ended = res->interpreter_ended},
				},
				.ended = wire_session_end_of(res->ended),
			};
			if (res->record)
				a.run.record = *res->record;
			char *detail = res->ended ? wire_session_end_detail(res->ended, res->ended_detail)
					       : NULL;
			a.end_detail = detail;
			srv->metrics.cells++;
			call_answer_json(c, wire_encode_session_run_response(&a));
			free(detail);
		}
	}
	call_wake(c);
}

static void session_run(struct call *c)
{
	struct cell_ctx *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->c = c;
	struct wire_status st;
	if (wire_decode_session_run_request(c->body, c->body_len, &x->req, &st) < 0) {
		refuse_status(c, &st);
		free(x);
		return;
	}
	bh_session *s = bh_engine_find_session(c->srv->e, x->req.session_id, c->who.name);
	if (!s) {
		answer_not_found(c);
		cell_ctx_free(x);
		return;
	}
	snprintf(c->session_fp, sizeof c->session_fp, "%s", bh_session_fingerprint(s));
	x->snippet = x->req.call.kind == WIRE_PAYLOAD_JAVASCRIPT;
	/* ---- profiles: a snippet's grant, for this call only (a cell has none) ---- */
	const char *grant = x->snippet ? x->req.call.javascript.grant_profile : NULL;
	if (refuse_rule(c, &x->req.call.env.rule) || daemon_egress_refuse(c, grant, true) ||
	    daemon_egress_session_refuse(c, s)) { /* ---- egress: the session's own ---- */
		cell_ctx_free(x);
		return;
	}
	if (x->req.call.kind == WIRE_PAYLOAD_PROJECT) { /* ---- project ---- */
		sandbox_project_session(c, s, &x->req);
		cell_ctx_free(x);
		return;
	}
	x->tier = bh_session_tier(s);
	const struct wire_cell_run *w = &x->req.call.cell;
	const struct wire_javascript_run *js = &x->req.call.javascript;
	struct bh_cell cell = {
		.language = x->snippet ? BH_LANG_JAVASCRIPT : w->language,
		.code = x->snippet ? js->code : w->code,
		.code_len = x->snippet ? js->code_len : w->code_len,
		.files = x->snippet ? NULL : w->files,
		.n_files = x->snippet ? 0 : w->n_files,
		.fresh_process = x->snippet,
		.timeout_ms = call_timeout(x->req.call.env.timeout_ms),
		.floor = x->req.call.env.floor,
		.has_sent_timeout = true,
		.sent_timeout_ms = x->req.call.env.timeout_ms,
		.grant_profile = grant, /* ---- profiles: checked above ---- */
	};
	struct approval_subject held = {
		.procedure = "SessionRun",
		.grant_profile = grant, /* ---- profiles ---- */
		.session = s,
		.tier = x->tier,
		.kind = x->snippet ? "javascript" : "cell",
		.language = cell.language,
		.code = cell.code,
		.code_len = cell.code_len,
		.files = cell.files,
		.n_files = cell.n_files,
	};
	if (held_for_approval(c, &held, cell.floor, cell.sent_timeout_ms)) {
		cell_ctx_free(x);
		return;
	}
	call_pending(c, x, cell_ctx_free);
	bh_error *err = NULL;
	if (bh_session_run(s, &cell, on_cell, x, &err) < 0) {
		call_not_started(c, err);
	}
}

/* ---- CloseSession ---- */

struct close_ctx {
	struct call *c;
};

static void on_close(void *arg, const struct bh_close_result *res, const bh_error *err)
{
	struct close_ctx *x = arg;
	struct call *c = x->c;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_close_session_response a = {
				.session = res->fingerprint,
				.calls = res->calls,
				.last_record_sha256 = res->last_record_sha256,
				.ended = wire_session_end_of(res->end_reason),
			};
			call_answer_json(c, wire_encode_close_session_response(&a));
		}
	}
	call_wake(c);
}

static void close_session(struct call *c)
{
	struct wire_close_session_request req = {0};
	struct wire_status st;
	if (wire_decode_close_session_request(c->body, c->body_len, &req, &st) < 0) {
		refuse_status(c, &st);
		return;
	}
	bh_session *s = bh_engine_find_session(c->srv->e, req.session_id, c->who.name);
	wire_close_session_request_free(&req);
	if (!s) {
		answer_not_found(c);
		return;
	}
	snprintf(c->session_fp, sizeof c->session_fp, "%s", bh_session_fingerprint(s));
	struct close_ctx *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->c = c;
	call_pending(c, x, free);
	bh_error *err = NULL;
	struct bh_actor who = call_actor(c); /* ---- ci: attribution ---- */
	if (bh_session_close_as(s, &who, on_close, x, &err) < 0) {
		call_not_started(c, err);
	}
}

void sandbox_service(struct call *c, const char *method)
{
	static const struct {
		const char *name;
		void (*fn)(struct call *c);
	} methods[] = {
		{"Describe", describe},         {"Run", run},
		{"OpenSession", open_session},  {"SessionRun", session_run},
		{"CloseSession", close_session},
	};
	/* ---- fleet: a session another host holds is its to answer ---- */
	if (daemon_fleet_route(c, method))
		return;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(method, methods[i].name)) {
			methods[i].fn(c);
			return;
		}
	call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported",
			  "plimsoll.v1.SandboxService has no such procedure");
}
