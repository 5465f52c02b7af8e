/* ---- project: plimsoll.v1's project payload on Run (a fresh sandbox) and
 * SessionRun (the session's sandbox, whose /work its cells share). The
 * request was decoded and held to plimsoll's limits by the wire; this maps
 * it onto bh_run_project / bh_session_run_project and their answer onto a
 * ProjectResult. The budget is plimsoll's docker project budget: 30 s when
 * none is sent, at most 120 s. ---- */
#include "daemon_priv.h"

#include "project.h"
#include "record.h"

#include <stdlib.h>
#include <string.h>

struct project_ctx {
	struct call *c;
	struct wire_run_request req; /* owned: the engine copied what it keeps */
	bool in_session;
	enum bh_tier tier;
};

static void project_ctx_free(void *p)
{
	struct project_ctx *x = p;
	wire_run_request_free(&x->req);
	free(x);
}

static uint32_t project_budget(int32_t sent)
{
	if (sent <= 0)
		return 0; /* the engine's default, 30 s */
	return (uint32_t)sent > BH_PROJECT_MAX_TIMEOUT_MS ? BH_PROJECT_MAX_TIMEOUT_MS : (uint32_t)sent;
}

static void fill_run(struct wire_run_response *a, enum bh_tier tier,
		     const struct bh_project_result *res)
{
	*a = (struct wire_run_response){
		.sandbox = sandbox_provider_of(tier),
		.isolation = bh_tier_name(tier),
		.duration_ms = (int64_t)(res->duration_us / 1000u),
		.has_record = res->record != NULL,
		.environment = res->record ? res->record->environment : "",
		.result = {.kind = "project",
			   .outcome = (int)res->outcome,
			   .outcome_detail = res->detail,
			   .artifacts_truncated = res->artifacts_truncated,
			   .steps = res->steps,
			   .n_steps = res->n_steps,
			   .artifacts = res->artifacts,
			   .n_artifacts = res->n_artifacts},
	};
	if (res->record)
		a->record = *res->record;
}

static void on_project(void *arg, const struct bh_project_result *res, const bh_error *err)
{
	struct project_ctx *x = arg;
	struct call *c = x->c;
	if (!c->gone) {
		if (err || !res) {
			call_answer_bh(c, err, res ? res->record : NULL);
		} else if (!x->in_session) {
			struct wire_run_response a;
			fill_run(&a, res->tier, res);
			c->srv->metrics.runs++;
			call_answer_json(c, wire_encode_run_response(&a));
		} else {
			struct wire_session_run_response a = {
				.has_run = true,
				.ended = wire_session_end_of(res->ended),
			};
			fill_run(&a.run, x->tier, res);
			char *detail = res->ended ? wire_session_end_detail(res->ended, res->ended_detail)
						  : NULL;
			a.end_detail = detail;
			c->srv->metrics.cells++;
			call_answer_json(c, wire_encode_session_run_response(&a));
			free(detail);
		}
	}
	call_wake(c);
}

/* The engine's request over the decoded one (borrowed: the engine copies). */
static void project_of(const struct wire_run_request *w, struct bh_project *p)
{
	*p = (struct bh_project){
		.floor = w->env.floor,
		.files = w->project.files,
		.n_files = w->project.n_files,
		.steps = (const char *const *)w->project.steps,
		.n_steps = w->project.n_steps,
		.artifacts = (const char *const *)w->project.artifacts,
		.n_artifacts = w->project.n_artifacts,
		.timeout_ms = project_budget(w->env.timeout_ms),
		.has_sent_timeout = true,
		.sent_timeout_ms = w->env.timeout_ms,
		.grant_profile = w->project.grant_profile,
	};
}

/* ---- egress: under an approval policy a project run is held like a code
 * call: the person sees it named a project, its steps one a line ("$ step",
 * the stored record's code), its files, and the request digest its record
 * will carry. Approved, the call is decoded again and runs (c->approved). ---- */
static bool held_for_approval(struct call *c, const struct wire_run_request *w, bh_session *s,
			      const char *procedure)
{
	if (!approvals_wanted(c->srv, c))
		return false;
	struct buf steps = {0};
	for (size_t i = 0; i < w->project.n_steps; i++) {
		buf_append(&steps, "$ ", 2);
		buf_append(&steps, w->project.steps[i], strlen(w->project.steps[i]));
		buf_append(&steps, "\n", 1);
	}
	struct bh_project p;
	project_of(w, &p);
	char digest[65];
	bh_project_request_digest(&p, digest); /* the engine's own fields: one definition */
	enum bh_tier tier = s                                  ? bh_session_tier(s)
			    : c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier
							       : bh_engine_best_tier(c->srv->e);
	struct approval_subject held = {
		.procedure = procedure,
		.session = s,
		.tier = tier,
		.kind = "project",
		.code = steps.data ? (const char *)steps.data : "",
		.code_len = steps.len,
		.files = w->project.files,
		.n_files = w->project.n_files,
		.request_sha256 = digest,
		.grant_profile = p.grant_profile,
	};
	approvals_hold(c, &held);
	buf_free(&steps);
	return true;
}

static struct project_ctx *take(struct call *c, struct wire_run_request *req, bool in_session)
{
	struct project_ctx *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->c = c;
	x->req = *req;
	x->in_session = in_session;
	memset(req, 0, sizeof *req);
	req->env.floor = BH_TIER_UNKNOWN;
	return x;
}

void sandbox_project_run(struct call *c, struct wire_run_request *req)
{
	/* ---- pgrant: the project's grant, checked as a snippet's (one text
	 * for a profile that is unknown and one this caller may not use) ---- */
	if (daemon_egress_refuse(c, req->project.grant_profile, false))
		return;
	if (held_for_approval(c, req, NULL, "Run"))
		return;
	struct project_ctx *x = take(c, req, false);
	struct bh_project p;
	project_of(&x->req, &p);
	p.tier = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier : BH_TIER_UNKNOWN;
	p.principal = c->who.name; /* a Run in flight holds one of the caller's places */
	call_pending(c, x, project_ctx_free);
	bh_error *err = NULL;
	if (bh_run_project(c->srv->e, &p, on_project, x, &err) < 0)
		call_not_started(c, err);
}

void sandbox_project_session(struct call *c, bh_session *s, struct wire_session_run_request *req)
{
	/* ---- pgrant: in a session the profile must allow sessions too
	 * (plimsoll §4.7: whatever the call leaves running could use it) ---- */
	if (daemon_egress_refuse(c, req->call.project.grant_profile, true))
		return;
	if (held_for_approval(c, &req->call, s, "SessionRun"))
		return;
	struct project_ctx *x = take(c, &req->call, true);
	x->tier = bh_session_tier(s);
	struct bh_project p;
	project_of(&x->req, &p);
	call_pending(c, x, project_ctx_free);
	bh_error *err = NULL;
	if (bh_session_run_project(s, &p, on_project, x, &err) < 0)
		call_not_started(c, err);
}
