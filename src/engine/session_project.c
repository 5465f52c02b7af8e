/* A project in a session's sandbox: queued as a cell is (one call in
 * flight, one waiting), sent as one EXEC of the runner, its files left in
 * /work for the calls after it, its record chained as a cell's. The plan,
 * the judge and the record's fields are project.c's; this file is the
 * session's side: the op, the answer, the chain. */
#include "project_priv.h"
#include "session_priv.h"

#include <string.h>

const struct buf *session_project_plan(const struct op *op)
{
	return &op->project->plan;
}

void session_project_request_fields(const struct op *op, struct bh_request_fields *rf)
{
	project_request_fields(op->project, rf);
}

/* The session's refusals and unanswered calls come through the op's cell
 * callback: the project's callback hears them with the record, if any. */
static void project_cell_cb(void *arg, const struct bh_cell_result *res, const bh_error *err)
{
	struct project_call *pc = arg;
	struct bh_project_result r = {0};
	if (res) {
		r.record = res->record;
		r.ended = res->ended;
		r.ended_detail = res->ended_detail;
	}
	pc->cb(pc->arg, res ? &r : NULL, err);
}

void session_project_answered(bh_session *s, struct op *op, const struct done_frame *d, bool oom)
{
	struct project_call *pc = op->project;
	struct project_outcome o;
	project_judge(pc, d->out, d->out_len, d->flags & BH_CHAN_STDOUT_TRUNCATED,
		      d->flags & BH_CHAN_TIMED_OUT, d->exit_code, &o);
	if (oom && o.outcome == BH_PROJECT_PROTOCOL_ERROR)
		snprintf(o.detail, sizeof o.detail,
			 "the runner did not report (the sandbox's memory limit killed it)");
	struct bh_result_fields rf;
	project_result_fields(&o, &rf);
	session_fill_record(s, &s->last, op, 2);
	bh_result_digest(&rf, s->last.result_sha256);
	char flags[64];
	struct store_record_extra x;
	project_store_extra(pc, &o, d->duration_us, flags, sizeof flags, &x);
	bh_error *err = NULL;
	if (session_commit_extra(s, &s->last, &x, &err) < 0) {
		/* Nothing unrecorded is acknowledged. */
		session_live_end(s, op, NULL, NULL);
		bh_error_wrap(err, "the project ran but its record could not be stored");
		pc->cb(pc->arg, NULL, err);
		bh_error_free(err);
		project_outcome_free(&o);
		return;
	}
	usage_note_disk(s, d->disk_used);
	/* A follower sees the steps' output, not the report's bytes. */
	struct done_frame shown = *d;
	shown.out = o.out.data;
	shown.out_len = o.out.len;
	shown.err = o.err.data;
	shown.err_len = o.err.len;
	shown.exit_code = o.last_exit;
	session_live_end(s, op, &shown, &s->last);
	bool over = d->disk_used > (uint64_t)s->e->policy.disk_budget_mb * 1048576u;
	char detail[160];
	struct bh_project_result r;
	project_result_of(&o, s->tier, &s->last, &r);
	r.duration_us = d->duration_us;
	r.wall_us = now_mono_us() - op->queued_us;
	if (over) {
		snprintf(detail, sizeof detail,
			 "the session's files in /work, /tmp and /dev/shm use %llu MiB; its disk "
			 "budget is %u MiB",
			 (unsigned long long)(d->disk_used >> 20), s->e->policy.disk_budget_mb);
		r.ended = BH_END_DISK_EXCEEDED;
		r.ended_detail = detail;
	}
	pc->cb(pc->arg, &r, NULL);
	project_outcome_free(&o);
	if (over) {
		session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(s, BH_END_DISK_EXCEEDED, detail);
	}
}

int bh_session_run_project(bh_session *s, const struct bh_project *req, bh_project_cb cb,
			   void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (!cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a project run needs a callback");
	if (project_check(req, err) < 0)
		return -1;
	/* ---- pgrant: the engine's own guard (the daemon checked the caller and
	 * allow_in_sessions); without a broker, refused permission ---- */
	if (egress_check_profile(s->e, req->grant_profile, err) < 0)
		return -1;
	if (req->floor != BH_TIER_UNKNOWN && s->state != BH_SESSION_WAITING &&
	    !bh_tier_meets(s->tier, req->floor))
		return bh_refuse(err, BH_REFUSAL_ISOLATION, "the floor %s is above the session's %s tier",
				 bh_tier_name(req->floor), bh_tier_name(s->tier));
	struct project_call *pc = project_call_new(req);
	pc->cb = cb;
	pc->arg = arg;
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_CELL;
	op->project = pc;
	op->code = xzalloc(pc->summary_len + 1);
	memcpy(op->code, pc->summary, pc->summary_len);
	op->cell = (struct bh_cell){
		.language = BH_LANG_JAVASCRIPT,
		.code = op->code,
		.code_len = pc->summary_len,
		.fresh_process = true, /* an EXEC, not a cell in an interpreter */
		.timeout_ms = pc->budget_ms + BH_PROJECT_RUNNER_GRACE_MS,
		.output_cap = BH_PROJECT_REPORT_CAP,
		.floor = req->floor,
		.has_sent_timeout = true,
		.sent_timeout_ms = pc->sent_timeout_ms,
	};
	/* ---- pgrant: the grant is held for this call only, as a granted
	 * snippet's (session_call.c send_cell, on_cell_reply): from before the
	 * EXEC until the runner's report is in, released before the answer;
	 * the runner, and so every step, gets the proxy and CA variables on
	 * its argv (session_egress_argv). ---- */
	if (*pc->grant_profile)
		op->grant = xstrdup(pc->grant_profile);
	op->cell.grant_profile = op->grant;
	op->cell_cb = project_cell_cb;
	op->arg = pc;
	return session_enqueue(s, op, err);
}
