/* The manager's engine backend: sessions of an engine in this process (the
 * console and the CLI run one embedded). Its answers need no checking on
 * the way — they never left the process — and its refusals become the same
 * errors a daemon's would, so the retry rule and the messages are one. */
#include "manager_priv.h"

#include <stdio.h>
#include <string.h>

/* The engine's error as the daemon would have answered it. */
static struct bh_client_error *error_of(const bh_error *err)
{
	struct wire_error we;
	wire_error_from_bh(err, NULL, &we);
	struct bh_client_error *e = xzalloc(sizeof *e);
	e->code = we.code;
	e->not_dispatched = we.not_dispatched;
	e->reason = we.reason;
	e->session_ended = we.session_ended;
	e->end = we.end;
	e->end_detail = xstrdup(we.end_detail);
	client_error_reword(e, we.message ? we.message : err->msg);
	wire_error_free(&we);
	return e;
}

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	struct entry *e = arg;
	if (!err) {
		mgr_opened(e, s, NULL);
		return;
	}
	struct bh_client_error *ce = error_of(err);
	mgr_opened(e, NULL, ce);
	bh_client_error_free(ce);
}

static int open_session(bh_manager *m, struct entry *e, struct bh_client_error **err)
{
	struct bh_session_opts o = {
		.tier = BH_TIER_UNKNOWN,
		.floor = m->o.floor,
		.languages = m->o.languages,
		.lifetime_ms = m->o.lifetime_ms,
		.principal = m->o.principal ? m->o.principal : "",
		.owner = e->owner ? e->owner_digest : NULL,
		.run_key = e->key,
		/* ---- profiles: the embedding host checked it (the daemon's
		 * daemon_egress_refuse); the engine holds it through its broker ---- */
		.egress_profile = e->grant_profile,
	};
	bh_session *s = NULL;
	bh_error *be = NULL;
	if (bh_session_open(m->o.engine, &o, on_open, e, &s, &be) < 0) {
		client_fail(err, error_of(be));
		bh_error_free(be);
		return -1;
	}
	return 0;
}

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct call *c = arg;
	if (err) {
		struct bh_client_error *ce = error_of(err);
		mgr_failed(c, ce);
		bh_client_error_free(ce);
		return;
	}
	size_t max = c->m->o.max_output_chars;
	bool cut = false;
	struct bh_exec_output out = {
		.language = c->language,
		.exit_code = r->exit_code,
		.timed_out = r->timed_out,
		.stdout_text = mgr_text(r->out, r->out_len, max, &cut),
		.stderr_text = mgr_text(r->errout, r->errout_len, max, &cut),
		.state_kept = !r->interpreter_ended && r->ended == BH_END_NONE,
		.files_persist = r->ended == BH_END_NONE,
		.fresh_interpreter = r->interpreter_started,
	};
	out.truncated = cut || r->stdout_truncated || r->stderr_truncated;
	snprintf(out.isolation, sizeof out.isolation, "%s",
		 bh_tier_name(bh_session_tier(c->e->h)));
	if (r->record)
		snprintf(out.record_sha256, sizeof out.record_sha256, "%s", r->record->record_sha256);
	mgr_answered(c, &out, r->ended != BH_END_NONE);
}

static int run_cell(bh_manager *m, struct call *c, struct bh_client_error **err)
{
	struct bh_cell cell = {
		.language = c->language,
		.code = c->code,
		.code_len = strlen(c->code),
		.files = c->files,
		.n_files = c->n_files,
		.timeout_ms = m->o.timeout_ms > 0 ? (uint32_t)m->o.timeout_ms : 0,
		.floor = m->o.floor,
	};
	bh_error *be = NULL;
	if (bh_session_run(c->e->h, &cell, on_cell, c, &be) < 0) {
		client_fail(err, error_of(be));
		bh_error_free(be);
		return -1;
	}
	return 0;
}

static void on_closed(void *arg, const struct bh_close_result *res, const bh_error *err)
{
	(void)res;
	(void)err;
	mgr_closed(arg);
}

static int close_session(bh_manager *m, struct entry *e, struct bh_client_error **err)
{
	(void)m;
	bh_error *be = NULL;
	if (bh_session_close(e->h, on_closed, e, &be) < 0) {
		client_fail(err, error_of(be));
		bh_error_free(be);
		return -1;
	}
	return 0;
}

static void release(bh_manager *m, struct entry *e)
{
	(void)m;
	e->h = NULL; /* the engine owns its sessions */
}

static const char *fingerprint(bh_manager *m, const struct entry *e)
{
	(void)m;
	return bh_session_fingerprint(e->h);
}

static bool stopped(bh_manager *m, const struct entry *e)
{
	(void)m;
	(void)e;
	return false; /* in-process answers are never unchecked */
}

static bool wait_loop(bh_manager *m, const bool *done, int t)
{
	bh_error *err = NULL;
	bh_engine_wait(m->o.engine, done, t, &err);
	bh_error_free(err);
	return true;
}

const struct mgr_backend mgr_engine_backend = {
	.open = open_session,
	.run = run_cell,
	.close = close_session,
	.release = release,
	.fingerprint = fingerprint,
	.stopped = stopped,
	.wait = wait_loop,
};
