/* bulkhead.v1.OperatorService: one generic call (method + JSON in, JSON
 * out), and typed calls that are that call with the request encoded and the
 * answer decoded by wire (wire_operator.h), the codec the daemon encodes
 * with. The console calls the asynchronous forms, the CLI the blocking ones:
 * both read every answer the same way. */
#include "client_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define OPS WIRE_OPERATOR_SERVICE "/"

/* ---- the generic call ---- */

struct op_call {
	bh_client_operator_cb cb;
	void *arg;
};

static void on_operator(void *arg, const struct bh_client_http *a)
{
	struct op_call *op = arg;
	struct bh_client_error *e = bh_client_error_of(a);
	if (e && e->unanswered) { /* an operator call runs no code: no record to check */
		wire_record_free(&e->record);
		e->unanswered = false;
	}
	op->cb(op->arg, e ? NULL : a->body, e);
	bh_client_error_free(e);
	free(op);
}

int bh_client_operator_call_async(bh_client *c, const char *method, const char *json_in,
				  bh_client_operator_cb cb, void *arg, struct bh_client_error **err)
{
	for (const char *p = method; p && *p; p++)
		if (!isalpha((unsigned char)*p))
			method = NULL;
	if (!method || !*method)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "an operator method is a name like ListSessions"));
	struct op_call *op = client_xzalloc(sizeof *op);
	*op = (struct op_call){cb, arg};
	cleanup_free char *path = client_xasprintf(OPS "%s", method);
	if (!xfer_start(c, path, json_in && *json_in ? json_in : "{}", on_operator, op, err)) {
		free(op);
		return -1;
	}
	return 0;
}

struct op_wait {
	bool done;
	char *out;
	struct bh_client_error *err;
};

static void on_operator_wait(void *arg, const char *json_out, const struct bh_client_error *err)
{
	struct op_wait *w = arg;
	w->done = true;
	if (err)
		w->err = bh_client_error_dup(err);
	else
		w->out = client_xstrdup(json_out);
}

int bh_client_operator_call(bh_client *c, const char *method, const char *json_in,
			    char **json_out, struct bh_client_error **err)
{
	struct op_wait w = {0};
	*json_out = NULL;
	if (bh_client_operator_call_async(c, method, json_in, on_operator_wait, &w, err) < 0)
		return -1;
	if (bh_client_wait(c, &w.done, -1) < 0 && !w.done)
		return client_fail(err, client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
						     "the client's loop stopped before the answer"));
	if (w.err)
		return client_fail(err, w.err);
	*json_out = w.out;
	return 0;
}

/* ---- typed calls ---- */

/* What answer a typed call reads, and so which callback it has. */
enum op_kind {
	OP_DONE,
	OP_SESSIONS,
	OP_SESSION,
	OP_CLOSED,
	OP_LEAKS,
	OP_EVIDENCE,
	OP_RECORDS,
	OP_EVENTS,
	OP_FILES,
	OP_FILE,
};

typedef void (*session_cb)(void *arg, struct wire_operator_session *res,
			   const struct bh_client_error *err);
typedef void (*files_cb)(void *arg, struct wire_operator_files *res,
			 const struct bh_client_error *err);
typedef void (*file_cb)(void *arg, struct wire_operator_file *res,
			const struct bh_client_error *err);

struct typed_op {
	enum op_kind kind;
	const char *method;
	enum wire_operator_leak_list leaks; /* OP_LEAKS: which list */
	bool one;                           /* OP_RECORDS: the record at (session, sequence) */
	char session[65];
	uint64_t sequence;
	union {
		bh_client_done_cb done;
		bh_client_sessions_cb sessions;
		session_cb session;
		bh_client_closed_cb closed;
		bh_client_leaks_cb leaks;
		bh_client_evidence_cb evidence;
		bh_client_records_cb records;
		bh_client_events_cb events;
		files_cb files;
		file_cb file;
	} cb;
	void *arg;
};

/* record_at asks for one record: an answer with another (or several) is
 * not the one asked for. */
static const char *not_the_record(const struct typed_op *op, const struct wire_operator_records *r)
{
	if (r->n > 1 || (r->n == 1 && (r->rows[0].record.sequence != op->sequence ||
				       strcmp(r->rows[0].record.session, op->session))))
		return "ListRecords: the daemon answered another record than the one asked for";
	return NULL;
}

/* Decodes the answer for its kind, hands it (or the error) to the callback,
 * then frees whatever the callback did not move out. */
static void on_typed(void *arg, const char *json, const struct bh_client_error *err)
{
	struct typed_op *op = arg;
	struct bh_client_error *e = NULL;
	struct wire_status st;
	size_t len = json ? strlen(json) : 0;
	union {
		struct wire_operator_sessions sessions;
		struct wire_operator_session session;
		struct wire_operator_closed closed;
		struct wire_operator_leaks leaks;
		struct wire_operator_evidence evidence;
		struct wire_operator_records records;
		struct wire_operator_events events;
		struct wire_operator_files files;
		struct wire_operator_file file;
	} res;
	memset(&res, 0, sizeof res);
	int rc = 0;
	if (!err) {
		switch (op->kind) {
		case OP_DONE:
			rc = wire_operator_decode_done(op->method, json, len, &st);
			break;
		case OP_SESSIONS:
			rc = wire_operator_decode_sessions(json, len, &res.sessions, &st);
			break;
		case OP_SESSION:
			rc = wire_operator_decode_session(json, len, &res.session, &st);
			break;
		case OP_CLOSED:
			rc = wire_operator_decode_closed(json, len, &res.closed, &st);
			break;
		case OP_LEAKS:
			rc = wire_operator_decode_leaks(json, len, op->leaks, &res.leaks, &st);
			break;
		case OP_EVIDENCE:
			rc = wire_operator_decode_evidence(json, len, &res.evidence, &st);
			break;
		case OP_RECORDS:
			rc = wire_operator_decode_records(json, len, &res.records, &st);
			break;
		case OP_EVENTS:
			rc = wire_operator_decode_events(json, len, &res.events, &st);
			break;
		case OP_FILES:
			rc = wire_operator_decode_files(json, len, &res.files, &st);
			break;
		case OP_FILE:
			rc = wire_operator_decode_file(json, len, &res.file, &st);
			break;
		}
		if (rc < 0)
			e = client_data_loss("%s", st.msg);
		const char *wrong = NULL;
		if (!e && op->kind == OP_RECORDS && op->one && (wrong = not_the_record(op, &res.records))) {
			wire_operator_records_free(&res.records);
			e = client_error(WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "%s", wrong);
		}
		err = e;
	}
	bool ok = !err;
	switch (op->kind) {
	case OP_DONE:
		op->cb.done(op->arg, err);
		break;
	case OP_SESSIONS:
		op->cb.sessions(op->arg, ok ? &res.sessions : NULL, err);
		wire_operator_sessions_free(&res.sessions);
		break;
	case OP_SESSION:
		op->cb.session(op->arg, ok ? &res.session : NULL, err);
		wire_operator_session_free(&res.session);
		break;
	case OP_CLOSED:
		op->cb.closed(op->arg, ok ? &res.closed : NULL, err);
		wire_operator_closed_free(&res.closed);
		break;
	case OP_LEAKS:
		op->cb.leaks(op->arg, ok ? &res.leaks : NULL, err);
		wire_operator_leaks_free(&res.leaks);
		break;
	case OP_EVIDENCE:
		op->cb.evidence(op->arg, ok ? &res.evidence : NULL, err);
		wire_operator_evidence_free(&res.evidence);
		break;
	case OP_RECORDS:
		op->cb.records(op->arg, ok ? &res.records : NULL, err);
		wire_operator_records_free(&res.records);
		break;
	case OP_EVENTS:
		op->cb.events(op->arg, ok ? &res.events : NULL, err);
		wire_operator_events_free(&res.events);
		break;
	case OP_FILES:
		op->cb.files(op->arg, ok ? &res.files : NULL, err);
		wire_operator_files_free(&res.files);
		break;
	case OP_FILE:
		op->cb.file(op->arg, ok ? &res.file : NULL, err);
		wire_operator_file_free(&res.file);
		break;
	}
	bh_client_error_free(e);
	free(op);
}

/* Sends req to method; op (the caller's allocation) is the client's from
 * here, freed after its callback or at once when the call cannot start. */
static int typed_call(bh_client *c, struct typed_op *op, const struct wire_operator_request *req,
		      struct bh_client_error **err)
{
	cleanup_free char *body = wire_operator_encode_request(req);
	if (bh_client_operator_call_async(c, op->method, body, on_typed, op, err) < 0) {
		free(op);
		return -1;
	}
	return 0;
}

static struct typed_op *op_new(enum op_kind kind, const char *method, void *arg)
{
	struct typed_op *op = client_xzalloc(sizeof *op);
	op->kind = kind;
	op->method = method;
	op->arg = arg;
	return op;
}

/* A fingerprint is checked before anything is sent. */
static int check_fingerprint(const char *fp, struct bh_client_error **err)
{
	if (!fp || strlen(fp) != 64 || strspn(fp, "0123456789abcdef") != 64)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a session is named by its fingerprint (64 hex "
						     "digits)"));
	return 0;
}

/* ---- the blocking forms: a typed call run to its answer ---- */

static void settle_done(void *arg, const struct bh_client_error *err)
{
	waiter_settle(arg, NULL, err);
}
static void settle_sessions(void *arg, struct wire_operator_sessions *res,
			    const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_session(void *arg, struct wire_operator_session *res,
			   const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_closed(void *arg, struct wire_operator_closed *res,
			  const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_leaks(void *arg, struct wire_operator_leaks *res,
			 const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_evidence(void *arg, struct wire_operator_evidence *res,
			    const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_records(void *arg, struct wire_operator_records *res,
			   const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_events(void *arg, struct wire_operator_events *res,
			  const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_files(void *arg, struct wire_operator_files *res,
			 const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}
static void settle_file(void *arg, struct wire_operator_file *res, const struct bh_client_error *err)
{
	waiter_settle(arg, res, err);
}

/* ---- sessions ---- */

int bh_client_list_sessions_async(bh_client *c, const char *state, bh_client_sessions_cb cb,
				  void *arg, struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_SESSIONS, "ListSessions", arg);
	op->cb.sessions = cb;
	return typed_call(c, op, &(struct wire_operator_request){.state = state}, err);
}

int bh_client_list_sessions(bh_client *c, const char *state, struct wire_operator_sessions *out,
			    struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_list_sessions_async(c, state, settle_sessions, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

int bh_client_get_session(bh_client *c, const char *fingerprint, struct wire_operator_session *out,
			  struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_SESSION, "GetSession", &w);
	op->cb.session = settle_session;
	if (typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- actions ---- */

int bh_client_act_async(bh_client *c, enum bh_client_action action, const char *fingerprint,
			bh_client_done_cb cb, void *arg, struct bh_client_error **err)
{
	static const char *const methods[] = {
		[BH_CLIENT_PAUSE] = "Pause",
		[BH_CLIENT_RESUME] = "Resume",
		[BH_CLIENT_HIBERNATE] = "Hibernate",
		[BH_CLIENT_KILL] = "Kill",
	};
	if ((size_t)action >= sizeof methods / sizeof methods[0])
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "no such operator action"));
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_DONE, methods[action], arg);
	op->cb.done = cb;
	return typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err);
}

static int act(bh_client *c, enum bh_client_action action, const char *fp,
	       struct bh_client_error **err)
{
	struct waiter w = {0};
	if (bh_client_act_async(c, action, fp, settle_done, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

int bh_client_pause(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return act(c, BH_CLIENT_PAUSE, fp, err);
}

int bh_client_resume(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return act(c, BH_CLIENT_RESUME, fp, err);
}

int bh_client_hibernate(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return act(c, BH_CLIENT_HIBERNATE, fp, err);
}

int bh_client_kill(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return act(c, BH_CLIENT_KILL, fp, err);
}

int bh_client_close_async(bh_client *c, const char *fingerprint, bh_client_closed_cb cb, void *arg,
			  struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_CLOSED, "Close", arg);
	op->cb.closed = cb;
	return typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err);
}

int bh_client_close(bh_client *c, const char *fp, struct wire_operator_closed *out,
		    struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_close_async(c, fp, settle_closed, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- leaks and gc ---- */

static int leaks_async(bh_client *c, enum wire_operator_leak_list list, bh_client_leaks_cb cb,
		       void *arg, struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_LEAKS, list == WIRE_LEAKS_FOUND ? "Leaks" : "Gc", arg);
	op->leaks = list;
	op->cb.leaks = cb;
	struct wire_operator_request req = {.dry_run = list == WIRE_LEAKS_WOULD_REAP};
	return typed_call(c, op, &req, err);
}

int bh_client_leaks_async(bh_client *c, bh_client_leaks_cb cb, void *arg,
			  struct bh_client_error **err)
{
	return leaks_async(c, WIRE_LEAKS_FOUND, cb, arg, err);
}

int bh_client_gc_async(bh_client *c, bool dry_run, bh_client_leaks_cb cb, void *arg,
		       struct bh_client_error **err)
{
	return leaks_async(c, dry_run ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED, cb, arg, err);
}

int bh_client_leaks(bh_client *c, struct wire_operator_leaks *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_leaks_async(c, settle_leaks, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

int bh_client_gc(bh_client *c, bool dry_run, struct wire_operator_leaks *out,
		 struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_gc_async(c, dry_run, settle_leaks, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- evidence ---- */

int bh_client_evidence_async(bh_client *c, bh_client_evidence_cb cb, void *arg,
			     struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_EVIDENCE, "Evidence", arg);
	op->cb.evidence = cb;
	return typed_call(c, op, &(struct wire_operator_request){0}, err);
}

int bh_client_evidence(bh_client *c, struct wire_operator_evidence *out,
		       struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_evidence_async(c, settle_evidence, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* ---- records ---- */

int bh_client_list_records_async(bh_client *c, const struct wire_operator_request *req,
				 bh_client_records_cb cb, void *arg, struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_RECORDS, "ListRecords", arg);
	op->cb.records = cb;
	if (req->has_sequence) {
		op->one = true;
		op->sequence = req->sequence;
		snprintf(op->session, sizeof op->session, "%s", req->session ? req->session : "");
	}
	return typed_call(c, op, req, err);
}

static int records(bh_client *c, const struct wire_operator_request *req,
		   struct wire_operator_records *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_list_records_async(c, req, settle_records, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

/* NULL or "": every session's. */
static const char *session_or_all(const char *session)
{
	return session && *session ? session : NULL;
}

int bh_client_list_records(bh_client *c, const char *session, int64_t after_id, uint32_t limit,
			   struct wire_operator_records *out, struct bh_client_error **err)
{
	struct wire_operator_request req = {.session = session_or_all(session), .after_id = after_id,
					    .limit = limit};
	return records(c, &req, out, err);
}

int bh_client_list_records_newest(bh_client *c, const char *session, int64_t before_id,
				  uint32_t limit, struct wire_operator_records *out,
				  struct bh_client_error **err)
{
	struct wire_operator_request req = {.session = session_or_all(session), .newest = true,
					    .before_id = before_id, .limit = limit};
	return records(c, &req, out, err);
}

int bh_client_record_at(bh_client *c, const char *session, uint64_t sequence,
			struct wire_operator_records *out, struct bh_client_error **err)
{
	struct wire_operator_request req = {.session = session ? session : "",
					    .has_sequence = true, .sequence = sequence};
	return records(c, &req, out, err);
}

/* ---- events ---- */

int bh_client_list_events_async(bh_client *c, const struct wire_operator_request *req,
				bh_client_events_cb cb, void *arg, struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_EVENTS, "ListEvents", arg);
	op->cb.events = cb;
	return typed_call(c, op, req, err);
}

static int events(bh_client *c, const struct wire_operator_request *req,
		  struct wire_operator_events *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (bh_client_list_events_async(c, req, settle_events, &w, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

int bh_client_list_events(bh_client *c, int64_t after_id, uint32_t limit, uint32_t wait_ms,
			  struct wire_operator_events *out, struct bh_client_error **err)
{
	struct wire_operator_request req = {.after_id = after_id, .limit = limit, .wait_ms = wait_ms};
	return events(c, &req, out, err);
}

int bh_client_list_events_newest(bh_client *c, int64_t before_id, uint32_t limit,
				 struct wire_operator_events *out, struct bh_client_error **err)
{
	struct wire_operator_request req = {.newest = true, .before_id = before_id, .limit = limit};
	return events(c, &req, out, err);
}

/* ---- files ---- */

int bh_client_list_files(bh_client *c, const char *fingerprint, const char *path,
			 struct wire_operator_files *out, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_FILES, "ListFiles", &w);
	op->cb.files = settle_files;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : ""};
	if (typed_call(c, op, &req, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}

int bh_client_read_file(bh_client *c, const char *fingerprint, const char *path,
			uint32_t max_bytes, struct wire_operator_file *out,
			struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = sizeof *out};
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_FILE, "ReadFile", &w);
	op->cb.file = settle_file;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : "",
					    .max_bytes = max_bytes};
	if (typed_call(c, op, &req, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
}
