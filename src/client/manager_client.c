/* The manager's daemon backend: sessions through the C client, whose every
 * answer is checked (request id, record and chain, tier against floor)
 * before the manager sees it. */
#include "manager_priv.h"

#include <poll.h>

static void on_open(void *arg, bh_client_session *s, const struct bh_client_error *err)
{
	mgr_opened(arg, s, err);
}

static int open_session(bh_manager *m, struct entry *e, struct bh_client_error **err)
{
	struct bh_client_open_opts oo = {
		.floor = m->o.floor,
		.languages = m->o.languages,
		.lifetime_ms = m->o.lifetime_ms,
		.owner = e->owner ? e->owner_digest : NULL,
		/* The conversation's key names its run on the daemon, as the
		 * embedded backend's run_key does (B26). */
		.trace_id = e->key,
		.grant_profile = e->grant_profile, /* ---- profiles ---- */
	};
	return bh_client_open_async(m->o.client, &oo, on_open, e, err);
}

static void on_cell(void *arg, struct wire_session_run_response *res,
		    const struct bh_client_error *err)
{
	struct call *c = arg;
	if (err) {
		mgr_failed(c, err);
		return;
	}
	struct bh_exec_output out;
	bh_exec_output_from(res, c->language, false, c->m->o.max_output_chars, &out);
	mgr_answered(c, &out, res->ended != WIRE_END_OPEN);
}

static int run_cell(bh_manager *m, struct call *c, struct bh_client_error **err)
{
	struct bh_client_cell cell = {
		.language = c->language,
		.code = c->code,
		.files = c->files,
		.n_files = c->n_files,
		.timeout_ms = m->o.timeout_ms,
	};
	return bh_client_session_run_async(c->e->h, &cell, on_cell, c, err);
}

static void on_closed(void *arg, struct wire_close_session_response *res,
		      const struct bh_client_error *err)
{
	(void)res;
	(void)err;
	mgr_closed(arg);
}

static int close_session(bh_manager *m, struct entry *e, struct bh_client_error **err)
{
	(void)m;
	return bh_client_session_close_async(e->h, on_closed, e, err);
}

static void release(bh_manager *m, struct entry *e)
{
	(void)m;
	bh_client_session_free(e->h);
	e->h = NULL;
}

static const char *fingerprint(bh_manager *m, const struct entry *e)
{
	(void)m;
	struct bh_client_session_view v;
	bh_client_session_get(e->h, &v);
	return v.fingerprint;
}

static bool stopped(bh_manager *m, const struct entry *e)
{
	(void)m;
	struct bh_client_session_view v;
	bh_client_session_get(e->h, &v);
	return v.stopped != NULL;
}

static bool wait_loop(bh_manager *m, const bool *done, int t)
{
	if (bh_client_pending(m->o.client)) {
		bh_client_wait(m->o.client, done, t);
		return true;
	}
	if (t < 0)
		return false;
	poll(NULL, 0, t); /* only an idle timer can be due */
	return true;
}

const struct mgr_backend mgr_client_backend = {
	.open = open_session,
	.run = run_cell,
	.close = close_session,
	.release = release,
	.fingerprint = fingerprint,
	.stopped = stopped,
	.wait = wait_loop,
};
