/* A session as a careful client keeps it: its id (a capability that goes
 * to the daemon and nowhere else), the evidence stated at open, and the
 * chain of records it has seen. Calls are sent one at a time, in order, so
 * every answer can be checked against the chain: a record that does not
 * continue it means someone else holding the id made a call. A call that
 * ended without an answer this client could check may have run and moved
 * the daemon's chain on, so every later call is refused here, before it is
 * sent, marked not dispatched (request), as plimsoll's clients do. */
#include "client_priv.h"

#include <stdio.h>
#include <string.h>

enum op_kind { OP_CELL, OP_CLOSE };

struct session_op {
	enum op_kind kind;
	bh_client_session *s;
	struct sent sent;          /* OP_CELL: what the request digest covers */
	char *code;
	struct bh_file *files;     /* owned copies */
	size_t n_files;
	char *body;                /* the encoded request (holds the id: wiped when freed) */
	bh_client_cell_cb cell_cb;
	bh_client_close_cb close_cb;
	void *arg;
	struct session_op *next;
};

struct bh_client_session {
	bh_client *c;
	char *id;
	char fingerprint[65];
	char *sandbox, *isolation, *software_identity;
	bool evidence_known;       /* false for an adopted session until its first answer */
	enum bh_tier floor;
	int64_t expires_unix_ms;
	uint32_t idle_timeout_ms;
	uint64_t calls;
	char last[65];
	enum wire_session_end end;
	char *end_detail;
	char *stopped;
	struct session_op *queue, *tail;
	struct session_op *current; /* in flight */
	struct xfer *inflight;
	int in_callback;
	bool doomed;               /* freed from its own callback: freed once it returns */
};

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void op_free(struct session_op *op)
{
	free(op->code);
	for (size_t i = 0; i < op->n_files; i++) {
		free((char *)op->files[i].path);
		free((uint8_t *)op->files[i].content);
	}
	free(op->files);
	wipe_free(op->body);
	free(op);
}

bh_client_session *session_new(bh_client *c, const char *id,
			       const struct wire_open_session_response *r, enum bh_tier floor)
{
	bh_client_session *s = xzalloc(sizeof *s);
	s->c = c;
	s->id = xstrdup(id);
	bh_fingerprint_of(id, s->fingerprint);
	s->floor = floor;
	s->end_detail = xstrdup("");
	s->sandbox = xstrdup(r ? r->sandbox : "");
	s->isolation = xstrdup(r ? r->isolation : "");
	s->software_identity = xstrdup(r ? r->software_identity : "");
	s->evidence_known = r != NULL;
	if (r) {
		s->expires_unix_ms = r->expires_unix_ms;
		s->idle_timeout_ms = r->idle_timeout_ms;
	}
	return s;
}

static bool hex64ish(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

int bh_client_session_adopt(bh_client *c, const char *session_id, uint64_t calls,
			    const char *last_record_sha256, enum bh_tier floor,
			    bh_client_session **out, struct bh_client_error **err)
{
	const char *last = last_record_sha256 ? last_record_sha256 : "";
	if (!session_id || !*session_id || strlen(session_id) > 128)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a session id is needed"));
	if ((calls == 0) != (*last == '\0') || (*last && !hex64ish(last)))
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a chain is a call count and the last record's "
						     "digest, both or neither"));
	bh_client_session *s = session_new(c, session_id, NULL, floor);
	s->calls = calls;
	snprintf(s->last, sizeof s->last, "%s", last);
	*out = s;
	return 0;
}

static void really_free(bh_client_session *s)
{
	if (s->inflight)
		xfer_abandon(s->c, s->inflight);
	if (s->current)
		op_free(s->current);
	while (s->queue) {
		struct session_op *op = s->queue;
		s->queue = op->next;
		s->c->queued--;
		op_free(op);
	}
	wipe_free(s->id);
	free(s->sandbox);
	free(s->isolation);
	free(s->software_identity);
	free(s->end_detail);
	free(s->stopped);
	free(s);
}

void bh_client_session_free(bh_client_session *s)
{
	if (!s)
		return;
	if (s->in_callback) {
		s->doomed = true;
		return;
	}
	really_free(s);
}

void bh_client_session_get(const bh_client_session *s, struct bh_client_session_view *out)
{
	*out = (struct bh_client_session_view){
		.fingerprint = s->fingerprint,
		.sandbox = s->sandbox,
		.isolation = s->isolation,
		.expires_unix_ms = s->expires_unix_ms,
		.idle_timeout_ms = s->idle_timeout_ms,
		.calls = s->calls,
		.last_record_sha256 = s->last,
		.end = s->end,
		.end_detail = s->end_detail,
		.stopped = s->stopped,
	};
}

/* ---- the queue ---- */

static void pump(bh_client_session *s);

/* Hands an outcome to the op's callback; true when the session went away
 * meanwhile (freed from the callback). */
static bool deliver(bh_client_session *s, struct session_op *op, void *res,
		    const struct bh_client_error *err)
{
	s->in_callback++;
	if (op->kind == OP_CELL)
		op->cell_cb(op->arg, res, err);
	else
		op->close_cb(op->arg, res, err);
	s->in_callback--;
	op_free(op);
	if (s->doomed && !s->in_callback) {
		really_free(s);
		return true;
	}
	return false;
}

static void stop(bh_client_session *s, const char *why)
{
	if (!s->stopped)
		s->stopped = xstrdup(why);
}

static void note_end(bh_client_session *s, enum wire_session_end end, const char *detail)
{
	if (end == WIRE_END_OPEN)
		return;
	s->end = end;
	free(s->end_detail);
	s->end_detail = xstrdup(detail);
}

static void on_cell(void *arg, const struct bh_client_http *a);
static void on_close(void *arg, const struct bh_client_http *a);

static void pump(bh_client_session *s)
{
	while (!s->current && s->queue && !s->doomed) {
		struct session_op *op = s->queue;
		s->queue = op->next;
		if (!s->queue)
			s->tail = NULL;
		op->next = NULL;
		s->c->queued--;
		struct bh_client_error *err = NULL;
		if (op->kind == OP_CELL && s->stopped) {
			err = client_error(WIRE_FAILED_PRECONDITION, WIRE_REFUSAL_REQUEST,
					   "an earlier call of this session ended without an answer "
					   "this client could check (%s); it may have run, so nothing "
					   "more is sent on the session: open a new one",
					   s->stopped);
		} else {
			const char *path = op->kind == OP_CELL ? "plimsoll.v1.SandboxService/SessionRun"
							       : "plimsoll.v1.SandboxService/CloseSession";
			s->current = op;
			s->inflight = xfer_start(s->c, path, op->body, op->kind == OP_CELL ? on_cell : on_close,
						 op, &err);
			if (s->inflight)
				return;
			s->current = NULL;
		}
		bool gone = deliver(s, op, NULL, err);
		bh_client_error_free(err);
		if (gone)
			return;
	}
}

static void enqueue(bh_client_session *s, struct session_op *op)
{
	op->s = s;
	if (s->tail)
		s->tail->next = op;
	else
		s->queue = op;
	s->tail = op;
	s->c->queued++;
	if (!s->in_callback)
		pump(s);
}

/* ---- SessionRun ---- */

/* An error that may carry the daemon's version-3 record of the call: checked
 * and kept in the chain when it holds, else the session stops. */
static struct bh_client_error *settle_error(bh_client_session *s, struct session_op *op,
					    struct bh_client_error *e)
{
	if (e->session_ended)
		note_end(s, e->end, e->end_detail);
	if (e->not_dispatched)
		return e; /* nothing ran: the chain did not move */
	if (!e->unanswered) {
		stop(s, client_error_words(e));
		return e;
	}
	char why[512];
	const struct bh_record *r = &e->record;
	const char *problem = check_unanswered(&op->sent, r, why, sizeof why);
	if (!problem && (strcmp(r->session, s->fingerprint) || r->sequence != s->calls + 1 ||
			 strcmp(r->previous_sha256, s->last))) {
		snprintf(why, sizeof why,
			 "the session's chain is broken: call %llu after \"%s\", this client's last "
			 "was call %llu, \"%s\"",
			 (unsigned long long)r->sequence, r->previous_sha256,
			 (unsigned long long)s->calls, s->last);
		problem = why;
	}
	/* With no answer to compare it with, the record's evidence must be what
	 * the session stated at open. */
	if (!problem && (!s->evidence_known || strcmp(r->provider, s->sandbox) ||
			 strcmp(r->isolation, s->isolation) ||
			 strcmp(r->software_identity, s->software_identity))) {
		snprintf(why, sizeof why,
			 "the unanswered call's record names %s at \"%s\", the session opened as %s "
			 "at \"%s\"",
			 r->provider, r->isolation, s->sandbox, s->isolation);
		problem = why;
	}
	if (problem) {
		stop(s, problem);
		bh_client_error_free(e);
		return client_data_loss("%s", problem);
	}
	s->calls = r->sequence;
	snprintf(s->last, sizeof s->last, "%s", r->record_sha256);
	return e;
}

/* Why a decoded answer does not continue the session, or NULL. */
static const char *check_chained(bh_client_session *s, struct session_op *op,
				 const struct wire_session_run_response *m, char *why, size_t len)
{
	if (!m->has_run) {
		snprintf(why, len, "the session call's answer carries no run");
		return why;
	}
	const char *problem = check_answered(&op->sent, &m->run, why, len);
	if (problem)
		return problem;
	const struct bh_record *r = &m->run.record;
	if (strcmp(r->session, s->fingerprint) || r->sequence != s->calls + 1 ||
	    strcmp(r->previous_sha256, s->last)) {
		snprintf(why, len,
			 "the session's chain is broken: call %llu after \"%s\", this client's last "
			 "was call %llu, \"%s\"",
			 (unsigned long long)r->sequence, r->previous_sha256,
			 (unsigned long long)s->calls, s->last);
		return why;
	}
	if (s->evidence_known && (strcmp(m->run.sandbox, s->sandbox) ||
				  strcmp(m->run.isolation, s->isolation))) {
		snprintf(why, len, "the call ran on %s at \"%s\", the session opened as %s at \"%s\"",
			 m->run.sandbox, m->run.isolation, s->sandbox, s->isolation);
		return why;
	}
	return NULL;
}

static void on_cell(void *arg, const struct bh_client_http *a)
{
	struct session_op *op = arg;
	bh_client_session *s = op->s;
	s->current = NULL;
	s->inflight = NULL;
	struct bh_client_error *e = bh_client_error_of(a);
	struct wire_session_run_response m;
	memset(&m, 0, sizeof m);
	if (e) {
		e = settle_error(s, op, e);
	} else {
		struct wire_status st;
		char why[512];
		const char *problem = NULL;
		if (wire_decode_session_run_response(a->body, a->len, &m, &st) < 0)
			problem = st.msg;
		else
			problem = check_chained(s, op, &m, why, sizeof why);
		if (problem) {
			stop(s, problem);
			e = client_data_loss("%s", problem);
		} else {
			note_end(s, m.ended, m.end_detail);
			s->calls = m.run.record.sequence;
			snprintf(s->last, sizeof s->last, "%s", m.run.record.record_sha256);
			if (!s->evidence_known) {
				free(s->sandbox);
				free(s->isolation);
				s->sandbox = xstrdup(m.run.sandbox);
				s->isolation = xstrdup(m.run.isolation);
				s->evidence_known = true;
			}
		}
	}
	bool gone = deliver(s, op, e ? NULL : &m, e);
	bh_client_error_free(e);
	wire_session_run_response_free(&m);
	if (!gone)
		pump(s);
}

static void copy_files(struct session_op *op, const struct bh_file *files, size_t n)
{
	if (!n)
		return;
	op->files = xzalloc(n * sizeof *op->files);
	op->n_files = n;
	for (size_t i = 0; i < n; i++) {
		uint8_t *content = xzalloc(files[i].len + 1);
		memcpy(content, files[i].content, files[i].len);
		op->files[i] = (struct bh_file){.path = xstrdup(files[i].path),
						.content = content, .len = files[i].len};
	}
}

int bh_client_session_run_async(bh_client_session *s, const struct bh_client_cell *cell,
				bh_client_cell_cb cb, void *arg, struct bh_client_error **err)
{
	if (s->stopped && !s->current && !s->queue)
		return client_fail(err, client_error(WIRE_FAILED_PRECONDITION, WIRE_REFUSAL_REQUEST,
						     "an earlier call of this session ended without an "
						     "answer this client could check (%s); it may have "
						     "run, so nothing more is sent on the session: open "
						     "a new one",
						     s->stopped));
	if (!cell->code)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a cell needs code"));
	struct session_op *op = xzalloc(sizeof *op);
	op->kind = OP_CELL;
	op->cell_cb = cb;
	op->arg = arg;
	size_t len = cell->code_len ? cell->code_len : strlen(cell->code);
	op->code = xzalloc(len + 1);
	memcpy(op->code, cell->code, len);
	copy_files(op, cell->files, cell->n_files);
	sent_init(&op->sent, "cell", client_floor(s->floor, cell->floor), cell->timeout_ms);
	op->sent.req.cell = (struct wire_cell_run){.language = cell->language, .code = op->code,
						   .code_len = len, .files = op->files,
						   .n_files = op->n_files};
	struct wire_session_run_request req = {.call = op->sent.req, .session_id = s->id};
	op->body = wire_encode_session_run_request(&req);
	enqueue(s, op);
	return 0;
}

static void on_cell_wait(void *arg, struct wire_session_run_response *res,
			 const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}

int bh_client_session_run(bh_client_session *s, const struct bh_client_cell *cell,
			  struct wire_session_run_response *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_session_run_async(s, cell, on_cell_wait, &w, err) < 0)
		return -1;
	return waiter_wait(s->c, &w, err);
}

/* ---- CloseSession ---- */

static void on_close(void *arg, const struct bh_client_http *a)
{
	struct session_op *op = arg;
	bh_client_session *s = op->s;
	s->current = NULL;
	s->inflight = NULL;
	struct bh_client_error *e = bh_client_error_of(a);
	struct wire_close_session_response m;
	memset(&m, 0, sizeof m);
	if (e) {
		if (e->session_ended)
			note_end(s, e->end, e->end_detail);
		if (e->unanswered) { /* a close runs no code: a record here checks nothing */
			wire_record_free(&e->record);
			e->unanswered = false;
		}
	} else {
		struct wire_status st;
		if (wire_decode_close_session_response(a->body, a->len, &m, &st) < 0) {
			e = client_data_loss("%s", st.msg);
		} else {
			note_end(s, m.ended == WIRE_END_OPEN ? WIRE_END_CLOSED : m.ended, "");
			if (strcmp(m.session, s->fingerprint) || m.calls != s->calls ||
			    strcmp(m.last_record_sha256, s->last))
				e = client_data_loss("the daemon counts %llu calls ending \"%s\", this "
						     "client saw %llu ending \"%s\"",
						     (unsigned long long)m.calls, m.last_record_sha256,
						     (unsigned long long)s->calls, s->last);
		}
	}
	bool gone = deliver(s, op, e ? NULL : &m, e);
	bh_client_error_free(e);
	wire_close_session_response_free(&m);
	if (!gone)
		pump(s);
}

int bh_client_session_close_async(bh_client_session *s, bh_client_close_cb cb, void *arg,
				  struct bh_client_error **err)
{
	(void)err;
	struct session_op *op = xzalloc(sizeof *op);
	op->kind = OP_CLOSE;
	op->close_cb = cb;
	op->arg = arg;
	struct wire_close_session_request req = {.protocol = WIRE_PROTOCOL, .session_id = s->id};
	op->body = wire_encode_close_session_request(&req);
	enqueue(s, op);
	return 0;
}

static void on_close_wait(void *arg, struct wire_close_session_response *res,
			  const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}

int bh_client_session_close(bh_client_session *s, struct wire_close_session_response *out,
			    struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_session_close_async(s, on_close_wait, &w, err) < 0)
		return -1;
	return waiter_wait(s->c, &w, err);
}
