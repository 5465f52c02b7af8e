/* plimsoll.v1.SandboxService calls that stand alone: Describe, Run (one
 * JavaScript snippet in a fresh sandbox) and OpenSession. Each answer is
 * decoded by wire and checked here before a caller sees it. */
#include "client_priv.h"

#include <stdio.h>
#include <string.h>

#define SVC "plimsoll.v1.SandboxService/"

/* Only a session call's error carries a record this client can check. */
static struct bh_client_error *plain(struct bh_client_error *e)
{
	if (e && e->unanswered) {
		wire_record_free(&e->record);
		e->unanswered = false;
	}
	return e;
}

/* ---- Describe ---- */

struct describe_op {
	bh_client_describe_cb cb;
	void *arg;
};

static void on_describe(void *arg, const struct bh_client_http *a)
{
	struct describe_op *op = arg;
	struct bh_client_error *e = plain(bh_client_error_of(a));
	struct wire_describe_response d;
	memset(&d, 0, sizeof d);
	struct wire_status st;
	if (!e && wire_decode_describe_response(a->body, a->len, &d, &st) < 0)
		e = client_data_loss("%s", st.msg);
	op->cb(op->arg, e ? NULL : &d, e);
	bh_client_error_free(e);
	wire_describe_response_free(&d);
	free(op);
}

int bh_client_describe_async(bh_client *c, bh_client_describe_cb cb, void *arg,
			     struct bh_client_error **err)
{
	struct describe_op *op = xzalloc(sizeof *op);
	*op = (struct describe_op){cb, arg};
	if (!xfer_start(c, SVC "Describe", "{}", on_describe, op, err)) {
		free(op);
		return -1;
	}
	return 0;
}

static void on_describe_wait(void *arg, struct wire_describe_response *res,
			     const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}

int bh_client_describe(bh_client *c, struct wire_describe_response *out,
		       struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_describe_async(c, on_describe_wait, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- Run ---- */

struct run_op {
	struct sent sent;
	char *code;
	struct wire_project_run project; /* ---- project: owned, sent.req borrows it ---- */
	char *grant; /* ---- profiles: "" for none ---- */
	bh_client_run_cb cb;
	void *arg;
};

static void on_run(void *arg, const struct bh_client_http *a)
{
	struct run_op *op = arg;
	struct bh_client_error *e = plain(bh_client_error_of(a));
	struct wire_run_response r;
	memset(&r, 0, sizeof r);
	if (!e) {
		struct wire_status st;
		char why[512];
		const char *problem = NULL;
		if (wire_decode_run_response(a->body, a->len, &r, &st) < 0)
			problem = st.msg;
		else if (!(problem = check_answered(&op->sent, &r, why, sizeof why)) &&
			 (r.record.session[0] || r.record.sequence || r.record.previous_sha256[0]))
			problem = "a single run's record carries session fields";
		if (problem)
			e = client_data_loss("%s", problem);
	}
	op->cb(op->arg, e ? NULL : &r, e);
	bh_client_error_free(e);
	wire_run_response_free(&r);
	free(op->code);
	wire_project_run_free(&op->project);
	free(op->grant);
	free(op);
}

int bh_client_run_async(bh_client *c, const char *code, const struct bh_client_run_opts *opts,
			bh_client_run_cb cb, void *arg, struct bh_client_error **err)
{
	struct bh_client_run_opts none = {.floor = BH_TIER_UNKNOWN};
	if (!opts)
		opts = &none;
	if (!code)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a run needs code"));
	struct run_op *op = xzalloc(sizeof *op);
	op->cb = cb;
	op->arg = arg;
	op->code = xstrdup(code);
	op->grant = xstrdup(opts->grant_profile); /* NULL -> "" */
	sent_init(&op->sent, "javascript", opts->floor, opts->timeout_ms);
	op->sent.req.javascript = (struct wire_javascript_run){.code = op->code,
							       .code_len = strlen(op->code),
							       .grant_profile = op->grant};
	cleanup_free char *body = wire_encode_run_request(&op->sent.req);
	if (!xfer_start(c, SVC "Run", body, on_run, op, err)) {
		free(op->code);
		free(op->grant);
		free(op);
		return -1;
	}
	return 0;
}

static void on_run_wait(void *arg, struct wire_run_response *res, const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}

int bh_client_run(bh_client *c, const char *code, const struct bh_client_run_opts *opts,
		  struct wire_run_response *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_run_async(c, code, opts, on_run_wait, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- project: Run with a project payload, checked as a snippet's answer ---- */

static char **strings_copy(char *const *v, size_t n)
{
	char **out = xzalloc((n + 1) * sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

int bh_client_run_project_async(bh_client *c, const struct wire_project_run *p,
				const struct bh_client_run_opts *opts, bh_client_run_cb cb,
				void *arg, struct bh_client_error **err)
{
	struct bh_client_run_opts none = {.floor = BH_TIER_UNKNOWN};
	if (!opts)
		opts = &none;
	if (!p || !p->n_steps)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a project needs at least one step"));
	struct run_op *op = xzalloc(sizeof *op);
	op->cb = cb;
	op->arg = arg;
	struct wire_project_run *q = &op->project;
	q->files = xzalloc((p->n_files + 1) * sizeof *q->files);
	for (size_t i = 0; i < p->n_files; i++) {
		uint8_t *content = xzalloc(p->files[i].len + 1);
		if (p->files[i].len)
			memcpy(content, p->files[i].content, p->files[i].len);
		q->files[i] = (struct bh_file){xstrdup(p->files[i].path), content, p->files[i].len};
	}
	q->n_files = p->n_files;
	q->steps = strings_copy(p->steps, p->n_steps);
	q->n_steps = p->n_steps;
	q->artifacts = strings_copy(p->artifacts, p->n_artifacts);
	q->n_artifacts = p->n_artifacts;
	q->grant_profile = xstrdup(p->grant_profile);
	sent_init(&op->sent, "project", opts->floor, opts->timeout_ms);
	op->sent.req.project = *q;
	cleanup_free char *body = wire_encode_run_request(&op->sent.req);
	if (!xfer_start(c, SVC "Run", body, on_run, op, err)) {
		wire_project_run_free(&op->project);
		free(op);
		return -1;
	}
	return 0;
}

int bh_client_run_project(bh_client *c, const struct wire_project_run *p,
			  const struct bh_client_run_opts *opts, struct wire_run_response *out,
			  struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_run_project_async(c, p, opts, on_run_wait, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- OpenSession ---- */

struct open_op {
	bh_client *c;
	enum bh_tier floor;
	char floor_name[16];
	bh_client_open_cb cb;
	void *arg;
	struct bh_client_error *pending; /* what the caller learns once a bad session is closed */
	bh_client_session *closing;
};

/* A session that did not check is closed before the caller hears why: the
 * daemon holds it either way, and nothing else holds its id. */
static void on_bad_closed(void *arg, struct wire_close_session_response *res,
			  const struct bh_client_error *err)
{
	(void)res, (void)err;
	struct open_op *op = arg;
	op->cb(op->arg, NULL, op->pending);
	bh_client_error_free(op->pending);
	bh_client_session_free(op->closing);
	free(op);
}

static void on_open(void *arg, const struct bh_client_http *a)
{
	struct open_op *op = arg;
	struct bh_client_error *e = plain(bh_client_error_of(a));
	struct wire_open_session_response r;
	memset(&r, 0, sizeof r);
	struct wire_status st;
	if (!e && wire_decode_open_session_response(a->body, a->len, &r, &st) < 0)
		e = client_data_loss("%s", st.msg);
	if (e) {
		op->cb(op->arg, NULL, e);
		bh_client_error_free(e);
		free(op);
		return;
	}
	char fp[65];
	bh_fingerprint_of(r.session_id, fp);
	bh_client_session *s = session_new(op->c, r.session_id, &r, op->floor);
	if (!*r.session_id || strcmp(fp, r.session))
		op->pending = client_data_loss("the daemon's session fingerprint does not match its "
					       "session id; the session was closed");
	else if (!client_tier_meets(r.isolation, op->floor))
		op->pending = client_data_loss("the session opened at %s, below the requested %s; the "
					       "session was closed",
					       *r.isolation ? r.isolation : "(no tier)", op->floor_name);
	wire_open_session_response_free(&r);
	if (!op->pending) {
		op->cb(op->arg, s, NULL);
		free(op);
		return;
	}
	op->closing = s;
	struct bh_client_error *cerr = NULL;
	if (bh_client_session_close_async(s, on_bad_closed, op, &cerr) < 0) {
		bh_client_error_free(cerr);
		on_bad_closed(op, NULL, NULL);
	}
}

int bh_client_open_async(bh_client *c, const struct bh_client_open_opts *opts,
			 bh_client_open_cb cb, void *arg, struct bh_client_error **err)
{
	struct bh_client_open_opts none = {.floor = BH_TIER_UNKNOWN};
	if (!opts)
		opts = &none;
	struct open_op *op = xzalloc(sizeof *op);
	op->c = c;
	op->floor = opts->floor > BH_TIER_NONE ? opts->floor : BH_TIER_UNKNOWN;
	op->cb = cb;
	op->arg = arg;
	if (op->floor != BH_TIER_UNKNOWN)
		snprintf(op->floor_name, sizeof op->floor_name, "%s", bh_tier_name(op->floor));
	struct wire_open_session_request req = {
		.env = {.protocol = WIRE_PROTOCOL, .minimum_isolation = op->floor_name,
			.trace_id = (char *)opts->trace_id},
		.lifetime_ms = opts->lifetime_ms,
		.languages = opts->languages,
		.owner = (char *)opts->owner,
		.grant_profile = (char *)opts->grant_profile, /* ---- profiles ---- */
	};
	cleanup_free char *body = wire_encode_open_session_request(&req);
	if (!xfer_start(c, SVC "OpenSession", body, on_open, op, err)) {
		free(op);
		return -1;
	}
	return 0;
}

struct open_wait {
	struct waiter w;
	bh_client_session *s;
};

static void on_open_wait(void *arg, bh_client_session *s, const struct bh_client_error *err)
{
	struct open_wait *ow = arg;
	ow->s = s;
	waiter_settle(&ow->w, NULL, err);
}

int bh_client_open(bh_client *c, const struct bh_client_open_opts *opts, bh_client_session **out,
		   struct bh_client_error **err)
{
	struct open_wait ow = {0};
	*out = NULL;
	if (bh_client_open_async(c, opts, on_open_wait, &ow, err) < 0)
		return -1;
	if (waiter_wait(c, &ow.w, err) < 0) {
		bh_client_session_free(ow.s);
		return -1;
	}
	*out = ow.s;
	return 0;
}
