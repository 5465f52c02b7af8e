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
	struct op_call *op = xzalloc(sizeof *op);
	*op = (struct op_call){cb, arg};
	cleanup_free char *path = xasprintf(OPS "%s", method);
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
		w->out = xstrdup(json_out);
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
	OP_PROCESSES, /* ---- procs ---- */
	OP_USAGE, /* ---- usage ---- */
	OP_FOLLOW, /* stream */
	OP_CELLS,  /* stream */
	OP_BRANCHED, /* ---- density: only the blocking form ---- */
};

/* Any answer, decoded: the member op_kind names. */
union answer {
	struct wire_operator_sessions sessions;
	struct wire_operator_session session;
	struct wire_operator_closed closed;
	struct wire_operator_leaks leaks;
	struct wire_operator_evidence evidence;
	struct wire_operator_records records;
	struct wire_operator_events events;
	struct wire_operator_files files;
	struct wire_operator_file file;
	struct wire_operator_processes processes; /* ---- procs ---- */
	struct wire_operator_usage usage; /* ---- usage ---- */
	struct wire_operator_follow follow; /* stream */
	struct wire_operator_cells cells;   /* stream */
	struct wire_operator_branched branched; /* ---- density ---- */
};

struct typed_op {
	enum op_kind kind;
	const char *method;
	enum wire_operator_leak_list leaks; /* OP_LEAKS: which list */
	bool one;                           /* OP_RECORDS: the record at (session, sequence) */
	char session[65];
	uint64_t sequence;
	/* An asynchronous caller's callback, or a blocking form's waiter. */
	union {
		bh_client_done_cb done;
		bh_client_sessions_cb sessions;
		bh_client_closed_cb closed;
		bh_client_leaks_cb leaks;
		bh_client_evidence_cb evidence;
		bh_client_records_cb records;
		bh_client_events_cb events;
		bh_client_session_cb session; /* ---- truth ---- */
		/* ---- procs ---- */
		bh_client_processes_cb processes;
		bh_client_files_cb files;
		bh_client_file_cb file;
		bh_client_usage_cb usage; /* ---- usage ---- */
		bh_client_follow_cb follow; /* stream */
	} cb;
	void *arg;
	struct waiter *wait;
};

static int decode(const struct typed_op *op, const char *json, union answer *res,
		  struct wire_status *st)
{
	size_t len = json ? strlen(json) : 0;
	switch (op->kind) {
	case OP_DONE:
		return wire_operator_decode_done(op->method, json, len, st);
	case OP_SESSIONS:
		return wire_operator_decode_sessions(json, len, &res->sessions, st);
	case OP_SESSION:
		return wire_operator_decode_session(json, len, &res->session, st);
	case OP_CLOSED:
		return wire_operator_decode_closed(json, len, &res->closed, st);
	case OP_LEAKS:
		return wire_operator_decode_leaks(json, len, op->leaks, &res->leaks, st);
	case OP_EVIDENCE:
		return wire_operator_decode_evidence(json, len, &res->evidence, st);
	case OP_RECORDS:
		return wire_operator_decode_records(json, len, &res->records, st);
	case OP_EVENTS:
		return wire_operator_decode_events(json, len, &res->events, st);
	case OP_FILES:
		return wire_operator_decode_files(json, len, &res->files, st);
	case OP_FILE:
		return wire_operator_decode_file(json, len, &res->file, st);
	case OP_PROCESSES: /* ---- procs ---- */
		return wire_operator_decode_processes(json, len, &res->processes, st);
	case OP_USAGE: /* ---- usage ---- */
		return wire_operator_decode_usage(json, len, &res->usage, st);
	case OP_FOLLOW: /* stream */
		return wire_operator_decode_follow(json, len, &res->follow, st);
	case OP_CELLS:
		return wire_operator_decode_cells(json, len, &res->cells, st);
	case OP_BRANCHED: /* ---- density ---- */
		return wire_operator_decode_branched(json, len, &res->branched, st);
	}
	*st = (struct wire_status){.code = WIRE_INTERNAL};
	snprintf(st->msg, sizeof st->msg, "%s: no decoder for its answer", op->method);
	return -1;
}

/* What the callback did not move out of res. */
static void release(enum op_kind kind, union answer *res)
{
	switch (kind) {
	case OP_DONE:
		break;
	case OP_SESSIONS:
		wire_operator_sessions_free(&res->sessions);
		break;
	case OP_SESSION:
		wire_operator_session_free(&res->session);
		break;
	case OP_CLOSED:
		wire_operator_closed_free(&res->closed);
		break;
	case OP_LEAKS:
		wire_operator_leaks_free(&res->leaks);
		break;
	case OP_EVIDENCE:
		wire_operator_evidence_free(&res->evidence);
		break;
	case OP_RECORDS:
		wire_operator_records_free(&res->records);
		break;
	case OP_EVENTS:
		wire_operator_events_free(&res->events);
		break;
	case OP_FILES:
		wire_operator_files_free(&res->files);
		break;
	case OP_FILE:
		wire_operator_file_free(&res->file);
		break;
	case OP_PROCESSES: /* ---- procs ---- */
		wire_operator_processes_free(&res->processes);
		break;
	case OP_USAGE: /* ---- usage ---- */
		wire_operator_usage_free(&res->usage);
		break;
	case OP_FOLLOW: /* stream */
		wire_operator_follow_free(&res->follow);
		break;
	case OP_CELLS:
		wire_operator_cells_free(&res->cells);
		break;
	case OP_BRANCHED: /* ---- density ---- */
		wire_operator_branched_free(&res->branched);
		break;
	}
}

/* The asynchronous caller's callback: the answer (res NULL with an error). */
static void deliver(const struct typed_op *op, union answer *res,
		    const struct bh_client_error *err)
{
	switch (op->kind) {
	case OP_DONE:
		op->cb.done(op->arg, err);
		break;
	case OP_SESSIONS:
		op->cb.sessions(op->arg, res ? &res->sessions : NULL, err);
		break;
	case OP_CLOSED:
		op->cb.closed(op->arg, res ? &res->closed : NULL, err);
		break;
	case OP_LEAKS:
		op->cb.leaks(op->arg, res ? &res->leaks : NULL, err);
		break;
	case OP_EVIDENCE:
		op->cb.evidence(op->arg, res ? &res->evidence : NULL, err);
		break;
	case OP_RECORDS:
		op->cb.records(op->arg, res ? &res->records : NULL, err);
		break;
	case OP_EVENTS:
		op->cb.events(op->arg, res ? &res->events : NULL, err);
		break;
	case OP_SESSION:
		op->cb.session(op->arg, res ? &res->session : NULL, err);
		break;
	case OP_FOLLOW: /* stream */
		op->cb.follow(op->arg, res ? &res->follow : NULL, err);
		break;
	case OP_CELLS: /* only the blocking form: answered through op->wait */
	case OP_BRANCHED:
		break;
	/* ---- procs ---- */
	case OP_USAGE: /* ---- usage ---- */
		op->cb.usage(op->arg, res ? &res->usage : NULL, err);
		break;
	case OP_FILES:
		op->cb.files(op->arg, res ? &res->files : NULL, err);
		break;
	case OP_FILE:
		op->cb.file(op->arg, res ? &res->file : NULL, err);
		break;
	case OP_PROCESSES:
		op->cb.processes(op->arg, res ? &res->processes : NULL, err);
		break;
	}
}

/* record_at asks for one record: an answer with another (or several) is
 * not the one asked for. */
static const char *not_the_record(const struct typed_op *op, const struct wire_operator_records *r)
{
	if (r->n > 1 || (r->n == 1 && (r->rows[0].record.sequence != op->sequence ||
				       strcmp(r->rows[0].record.session, op->session))))
		return "ListRecords: the daemon answered another record than the one asked for";
	return NULL;
}

/* Decodes the answer for its kind and hands it (or the error) on; then
 * frees whatever was not moved out. */
static void on_typed(void *arg, const char *json, const struct bh_client_error *err)
{
	struct typed_op *op = arg;
	struct bh_client_error *e = NULL;
	union answer res;
	memset(&res, 0, sizeof res);
	if (!err) {
		struct wire_status st;
		const char *wrong = NULL;
		if (decode(op, json, &res, &st) < 0)
			e = client_data_loss("%s", st.msg);
		else if (op->kind == OP_RECORDS && op->one && (wrong = not_the_record(op, &res.records)))
			e = client_error(WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "%s", wrong);
		err = e;
	}
	if (op->wait)
		waiter_settle(op->wait, err ? NULL : &res, err);
	else
		deliver(op, err ? NULL : &res, err);
	release(op->kind, &res);
	bh_client_error_free(e);
	free(op);
}

static struct typed_op *op_new(enum op_kind kind, const char *method, void *arg)
{
	struct typed_op *op = xzalloc(sizeof *op);
	op->kind = kind;
	op->method = method;
	op->arg = arg;
	return op;
}

/* Sends req to op's method; op is the client's from here, freed after its
 * callback or at once when the call cannot start. */
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

/* The blocking form of a typed call: the answer is moved into out (size
 * bytes; NULL for an answer with nothing in it). */
static int typed_wait(bh_client *c, struct typed_op *op, const struct wire_operator_request *req,
		      void *out, size_t size, struct bh_client_error **err)
{
	struct waiter w = {.out = out, .size = size};
	op->wait = &w;
	if (typed_call(c, op, req, err) < 0)
		return -1;
	return waiter_wait(c, &w, err);
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
	memset(out, 0, sizeof *out);
	return typed_wait(c, op_new(OP_SESSIONS, "ListSessions", NULL),
			  &(struct wire_operator_request){.state = state}, out, sizeof *out, err);
}

int bh_client_get_session(bh_client *c, const char *fingerprint, struct wire_operator_session *out,
			  struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	return typed_wait(c, op_new(OP_SESSION, "GetSession", NULL),
			  &(struct wire_operator_request){.session = fingerprint}, out, sizeof *out,
			  err);
}

/* ---- truth: describe's one session, from the console's loop ---- */

int bh_client_get_session_async(bh_client *c, const char *fingerprint, bh_client_session_cb cb,
				void *arg, struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_SESSION, "GetSession", arg);
	op->cb.session = cb;
	return typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err);
}

/* ---- actions ---- */

static const char *action_method(enum bh_client_action action)
{
	switch (action) {
	case BH_CLIENT_PAUSE:
		return "Pause";
	case BH_CLIENT_RESUME:
		return "Resume";
	case BH_CLIENT_HIBERNATE:
		return "Hibernate";
	case BH_CLIENT_KILL:
		return "Kill";
	}
	return NULL;
}

int bh_client_act_async(bh_client *c, enum bh_client_action action, const char *fingerprint,
			bh_client_done_cb cb, void *arg, struct bh_client_error **err)
{
	const char *method = action_method(action);
	if (!method)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "no such operator action"));
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_DONE, method, arg);
	op->cb.done = cb;
	return typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err);
}

static int act(bh_client *c, enum bh_client_action action, const char *fp,
	       struct bh_client_error **err)
{
	if (check_fingerprint(fp, err) < 0)
		return -1;
	return typed_wait(c, op_new(OP_DONE, action_method(action), NULL),
			  &(struct wire_operator_request){.session = fp}, NULL, 0, err);
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
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fp, err) < 0)
		return -1;
	return typed_wait(c, op_new(OP_CLOSED, "Close", NULL),
			  &(struct wire_operator_request){.session = fp}, out, sizeof *out, err);
}

/* ---- density: a branch (the children's ids in out: wire_operator_branched_free) ---- */
int bh_client_branch(bh_client *c, const char *fp, unsigned count,
		     struct wire_operator_branched *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fp, err) < 0)
		return -1;
	if (count < 1 || count > BH_BRANCH_MAX)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a branch makes 1 to 16 children"));
	return typed_wait(c, op_new(OP_BRANCHED, "Branch", NULL),
			  &(struct wire_operator_request){.session = fp, .count = count}, out,
			  sizeof *out, err);
}

/* ---- leaks and gc ---- */

static struct typed_op *leaks_op(enum wire_operator_leak_list list, void *arg)
{
	struct typed_op *op = op_new(OP_LEAKS, list == WIRE_LEAKS_FOUND ? "Leaks" : "Gc", arg);
	op->leaks = list;
	return op;
}

static struct wire_operator_request leaks_request(enum wire_operator_leak_list list)
{
	return (struct wire_operator_request){.dry_run = list == WIRE_LEAKS_WOULD_REAP};
}

static enum wire_operator_leak_list gc_list(bool dry_run)
{
	return dry_run ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED;
}

static int leaks_async(bh_client *c, enum wire_operator_leak_list list, bh_client_leaks_cb cb,
		       void *arg, struct bh_client_error **err)
{
	struct typed_op *op = leaks_op(list, arg);
	op->cb.leaks = cb;
	struct wire_operator_request req = leaks_request(list);
	return typed_call(c, op, &req, err);
}

static int leaks_wait(bh_client *c, enum wire_operator_leak_list list,
		      struct wire_operator_leaks *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	struct wire_operator_request req = leaks_request(list);
	return typed_wait(c, leaks_op(list, NULL), &req, out, sizeof *out, err);
}

int bh_client_leaks_async(bh_client *c, bh_client_leaks_cb cb, void *arg,
			  struct bh_client_error **err)
{
	return leaks_async(c, WIRE_LEAKS_FOUND, cb, arg, err);
}

int bh_client_gc_async(bh_client *c, bool dry_run, bh_client_leaks_cb cb, void *arg,
		       struct bh_client_error **err)
{
	return leaks_async(c, gc_list(dry_run), cb, arg, err);
}

int bh_client_leaks(bh_client *c, struct wire_operator_leaks *out, struct bh_client_error **err)
{
	return leaks_wait(c, WIRE_LEAKS_FOUND, out, err);
}

int bh_client_gc(bh_client *c, bool dry_run, struct wire_operator_leaks *out,
		 struct bh_client_error **err)
{
	return leaks_wait(c, gc_list(dry_run), out, err);
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
	memset(out, 0, sizeof *out);
	return typed_wait(c, op_new(OP_EVIDENCE, "Evidence", NULL), &(struct wire_operator_request){0},
			  out, sizeof *out, err);
}

/* ---- records ---- */

static struct typed_op *records_op(const struct wire_operator_request *req, void *arg)
{
	struct typed_op *op = op_new(OP_RECORDS, "ListRecords", arg);
	if (req->has_sequence) {
		op->one = true;
		op->sequence = req->sequence;
		snprintf(op->session, sizeof op->session, "%s", req->session ? req->session : "");
	}
	return op;
}

int bh_client_list_records_async(bh_client *c, const struct wire_operator_request *req,
				 bh_client_records_cb cb, void *arg, struct bh_client_error **err)
{
	struct typed_op *op = records_op(req, arg);
	op->cb.records = cb;
	return typed_call(c, op, req, err);
}

static int records(bh_client *c, const struct wire_operator_request *req,
		   struct wire_operator_records *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	return typed_wait(c, records_op(req, NULL), req, out, sizeof *out, err);
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
	memset(out, 0, sizeof *out);
	return typed_wait(c, op_new(OP_EVENTS, "ListEvents", NULL), req, out, sizeof *out, err);
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
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : ""};
	return typed_wait(c, op_new(OP_FILES, "ListFiles", NULL), &req, out, sizeof *out, err);
}

int bh_client_read_file(bh_client *c, const char *fingerprint, const char *path,
			uint32_t max_bytes, struct wire_operator_file *out,
			struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : "",
					    .max_bytes = max_bytes};
	return typed_wait(c, op_new(OP_FILE, "ReadFile", NULL), &req, out, sizeof *out, err);
}

/* ---- procs ---- */

int bh_client_list_processes(bh_client *c, const char *fingerprint,
			     struct wire_operator_processes *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct wire_operator_request req = {.session = fingerprint};
	return typed_wait(c, op_new(OP_PROCESSES, "ListProcesses", NULL), &req, out, sizeof *out,
			  err);
}

int bh_client_list_processes_async(bh_client *c, const char *fingerprint,
				   bh_client_processes_cb cb, void *arg,
				   struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_PROCESSES, "ListProcesses", arg);
	op->cb.processes = cb;
	return typed_call(c, op, &(struct wire_operator_request){.session = fingerprint}, err);
}

int bh_client_list_files_async(bh_client *c, const char *fingerprint, const char *path,
			       bh_client_files_cb cb, void *arg, struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_FILES, "ListFiles", arg);
	op->cb.files = cb;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : ""};
	return typed_call(c, op, &req, err);
}

int bh_client_read_file_async(bh_client *c, const char *fingerprint, const char *path,
			      uint32_t max_bytes, bh_client_file_cb cb, void *arg,
			      struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_FILE, "ReadFile", arg);
	op->cb.file = cb;
	struct wire_operator_request req = {.session = fingerprint, .path = path ? path : "",
					    .max_bytes = max_bytes};
	return typed_call(c, op, &req, err);
}

/* ---- usage ---- */

int bh_client_usage_async(bh_client *c, bh_client_usage_cb cb, void *arg,
			  struct bh_client_error **err)
{
	struct typed_op *op = op_new(OP_USAGE, "Usage", arg);
	op->cb.usage = cb;
	return typed_call(c, op, &(struct wire_operator_request){0}, err);
}

int bh_client_usage(bh_client *c, struct wire_operator_usage *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	return typed_wait(c, op_new(OP_USAGE, "Usage", NULL), &(struct wire_operator_request){0},
			  out, sizeof *out, err);
}

/* ---- stream: FollowCell, ListCells ---- */

int bh_client_follow_cell_async(bh_client *c, const char *fingerprint,
				const struct bh_client_follow_cursor *cur, uint32_t wait_ms,
				bh_client_follow_cb cb, void *arg, struct bh_client_error **err)
{
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct typed_op *op = op_new(OP_FOLLOW, "FollowCell", arg);
	op->cb.follow = cb;
	struct wire_operator_request req = {.session = fingerprint, .has_sequence = true,
					    .sequence = cur->sequence,
					    .stdout_after = cur->stdout_after,
					    .stderr_after = cur->stderr_after, .wait_ms = wait_ms};
	return typed_call(c, op, &req, err);
}

int bh_client_follow_cell(bh_client *c, const char *fingerprint,
			  const struct bh_client_follow_cursor *cur, uint32_t wait_ms,
			  struct wire_operator_follow *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct wire_operator_request req = {.session = fingerprint, .has_sequence = true,
					    .sequence = cur->sequence,
					    .stdout_after = cur->stdout_after,
					    .stderr_after = cur->stderr_after, .wait_ms = wait_ms};
	return typed_wait(c, op_new(OP_FOLLOW, "FollowCell", NULL), &req, out, sizeof *out, err);
}

void bh_client_follow_advance(struct bh_client_follow_cursor *cur,
			      const struct wire_operator_follow *f)
{
	if (!f->sequence || f->sequence < cur->sequence)
		return; /* nothing yet: the cursor stays */
	cur->sequence = f->sequence;
	cur->stdout_after = f->stdout_offset + f->out_len;
	cur->stderr_after = f->stderr_offset + f->err_len;
	if (f->done) /* its end seen: wait for the cell after it */
		*cur = (struct bh_client_follow_cursor){.sequence = f->sequence + 1};
}

int bh_client_list_cells(bh_client *c, const char *fingerprint, uint64_t before_sequence,
			 uint32_t limit, struct wire_operator_cells *out,
			 struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	if (check_fingerprint(fingerprint, err) < 0)
		return -1;
	struct wire_operator_request req = {.session = fingerprint,
					    .before_sequence = before_sequence, .limit = limit};
	return typed_wait(c, op_new(OP_CELLS, "ListCells", NULL), &req, out, sizeof *out, err);
}
