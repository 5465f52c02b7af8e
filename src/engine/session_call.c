/* A session's calls: the queue of at most two operations (the one in
 * flight and one waiting), a cell's frame and its answer, files listed and
 * read through the init. Each answered cell becomes a version-2 record
 * chained to the previous one, committed to the store before the answer is
 * handed back; a cell that may have run but got no answer becomes a
 * version-3 record. */
#include "session_priv.h"
#include "project.h" /* ---- project ---- */
#include "store.h"

#include <string.h>
#include <unistd.h>

#define PROTOCOL 3u

static size_t queue_len(bh_session *s)
{
	size_t n = 0;
	for (struct op *o = s->queue; o; o = o->next)
		n++;
	return n;
}

static void flags_text(char *out, size_t n, const struct bh_cell_result *r)
{
	snprintf(out, n, "%s%s%s%s%s%s%s%s", r->timed_out ? "timed_out," : "",
		 r->stdout_truncated ? "stdout_truncated," : "",
		 r->stderr_truncated ? "stderr_truncated," : "",
		 r->interpreter_started ? "interpreter_started," : "",
		 r->interpreter_ended ? "interpreter_ended," : "", r->oom ? "oom," : "",
		 /* stream: the store's own cut, apart from the cell's */
		 r->out_len > BH_STORE_OUTPUT_CAP ? "stored_stdout_truncated," : "",
		 r->errout_len > BH_STORE_OUTPUT_CAP ? "stored_stderr_truncated," : "");
	size_t len = strlen(out);
	if (len)
		out[len - 1] = '\0';
}

static void request_digest(const struct op *op, const bh_session *s, char out[65])
{
	if (op->project) { /* ---- project ---- */
		struct bh_request_fields pf;
		session_project_request_fields(op, &pf);
		bh_request_digest(&pf, out);
		return;
	}
	struct bh_request_fields rf = {
		.protocol = PROTOCOL,
		.minimum_isolation = op->cell.floor > BH_TIER_NONE ? bh_tier_name(op->cell.floor) : "",
		.timeout_ms = op->cell.has_sent_timeout ? op->cell.sent_timeout_ms : op->cell.timeout_ms,
		.software_mode = "",
		.kind = op->cell.fresh_process ? "javascript" : "cell",
		.language = bh_language_name(op->cell.language),
		.code = (const uint8_t *)op->code,
		.code_len = op->cell.code_len,
		.grant_profile = op->grant ? op->grant : "", /* ---- egress ---- */
		.files = op->files,
		.n_files = op->cell.n_files,
	};
	(void)s;
	bh_request_digest(&rf, out);
}

void session_fill_record(bh_session *s, struct bh_record *rec, const struct op *op, int version)
{
	bh_engine *e = s->e;
	memset(rec, 0, sizeof *rec);
	rec->version = version;
	request_digest(op, s, rec->request_sha256);
	rec->provider = engine_provider(s->tier);
	rec->isolation = bh_tier_name(s->tier);
	rec->environment = e->tiers[s->tier].environment;
	rec->policy = "";
	rec->software_identity = "";
	rec->software_rule_id = "";
	rec->started_unix_ms = op->started_unix_ms;
	rec->ended_unix_ms = (int64_t)now_real_ms();
	snprintf(rec->session, sizeof rec->session, "%s", s->fp);
	rec->sequence = s->calls + 1;
	snprintf(rec->previous_sha256, sizeof rec->previous_sha256, "%s", s->last_record);
}

/* ---- project: the commit a project's answer shares ---- */
int session_commit_extra(bh_session *s, struct bh_record *rec,
			 const struct store_record_extra *x, bh_error **err)
{
	assert(err);
	bh_engine *e = s->e;
	bh_record_seal(rec);
	if (store_record_commit(e->store, rec, x, e->keep_content, err) < 0)
		return -1;
	s->calls = rec->sequence;
	snprintf(s->last_record, sizeof s->last_record, "%s", rec->record_sha256);
	engine_maybe_crash(e, "commit");
	return 0;
}

static int commit(bh_session *s, struct bh_record *rec, const struct op *op,
		  const struct bh_cell_result *r, bh_error **err)
{
	assert(err);
	char flags[160] = "";
	if (r)
		flags_text(flags, sizeof flags, r);
	struct store_record_extra x = {
		.language = op->project ? "project" : bh_language_name(op->cell.language),
		.exit_code = r ? r->exit_code : -1,
		.flags = r ? flags : rec->unanswered,
		.duration_us = r ? r->duration_us : 0,
		.code = (const uint8_t *)op->code,
		.code_len = op->cell.code_len,
		.out = r ? r->out : NULL,
		.out_len = r ? r->out_len : 0,
		.err = r ? r->errout : NULL,
		.err_len = r ? r->errout_len : 0,
	};
	return session_commit_extra(s, rec, &x, err);
}

static void cell_answered(bh_session *s, struct op *op, const struct done_frame *d, bool oom)
{
	if (op->project) { /* ---- project ---- */
		session_project_answered(s, op, d, oom);
		return;
	}
	struct bh_cell_result r = {
		.exit_code = d->exit_code,
		.timed_out = d->flags & BH_CHAN_TIMED_OUT,
		.stdout_truncated = d->flags & BH_CHAN_STDOUT_TRUNCATED,
		.stderr_truncated = d->flags & BH_CHAN_STDERR_TRUNCATED,
		.interpreter_started = d->flags & BH_CHAN_INTERP_STARTED,
		.interpreter_ended = d->flags & BH_CHAN_INTERP_ENDED,
		.oom = oom,
		.out = d->out,
		.out_len = d->out_len,
		.errout = d->err,
		.errout_len = d->err_len,
		.duration_us = d->duration_us,
		.wall_us = now_mono_us() - op->queued_us,
		.woke_us = s->woke_us,
	};
	s->woke_us = 0;
	struct bh_result_fields rf = {
		.kind = op->cell.fresh_process ? "javascript" : "cell",
		.exit_code = r.exit_code,
		.timed_out = r.timed_out,
		.out = r.out,
		.out_len = r.out_len,
		.err = r.errout,
		.err_len = r.errout_len,
		.stdout_truncated = r.stdout_truncated,
		.stderr_truncated = r.stderr_truncated,
		.interpreter_started = r.interpreter_started,
		.interpreter_ended = r.interpreter_ended,
	};
	session_fill_record(s, &s->last, op, 2);
	bh_result_digest(&rf, s->last.result_sha256);
	bh_error *err = NULL;
	if (commit(s, &s->last, op, &r, &err) < 0) {
		/* Nothing unrecorded is acknowledged: the code ran, its answer is withheld. */
		session_live_end(s, op, NULL, NULL); /* stream */
		bh_error_wrap(err, "the code ran but its record could not be stored");
		op->cell_cb(op->arg, NULL, err);
		bh_error_free(err);
		return;
	}
	r.record = &s->last;
	usage_note_disk(s, d->disk_used);
	session_live_end(s, op, d, &s->last); /* stream */
	/* The disk budget is measured after the call; the call that crossed it
	 * is answered (and told), the next one finds the session ended. */
	bool over = d->disk_used > (uint64_t)s->e->policy.disk_budget_mb * 1048576u;
	char detail[160];
	if (over) {
		/* The answer that ends the session says why, as the refusal of
		 * every later call does. */
		snprintf(detail, sizeof detail,
			 "the session's files in /work, /tmp and /dev/shm use %llu MiB; its disk "
			 "budget is %u MiB",
			 (unsigned long long)(d->disk_used >> 20), s->e->policy.disk_budget_mb);
		r.ended = BH_END_DISK_EXCEEDED;
		r.ended_detail = detail;
	}
	op->cell_cb(op->arg, &r, NULL);
	if (over) {
		session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(s, BH_END_DISK_EXCEEDED, detail);
	}
}

/* The call may have run and there is no answer: a version-3 record keeps
 * its place in the chain, and the session ends with its sandbox. */
static void cell_unanswered(bh_session *s, struct op *op, const char *code_name, const char *why,
			    bool oom, enum bh_end_reason end)
{
	session_fill_record(s, &s->last, op, 3);
	s->last.unanswered = code_name;
	bh_error *err = NULL;
	bh_error *store_err = NULL;
	struct bh_cell_result r = {.record = &s->last, .oom = oom};
	session_live_end(s, op, NULL, NULL); /* stream */
	if (commit(s, &s->last, op, NULL, &store_err) < 0) {
		r.record = NULL;
		bh_log(s->e, BH_LOG_ERROR, "session %.12s: %s", s->fp, store_err->msg);
		bh_error_free(store_err);
	}
	bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox ended during the call (%s); the code may have run", why);
	err->session_end = end;
	op->cell_cb(op->arg, &r, err);
	bh_error_free(err);
}

static void on_cell_reply(bh_engine *e, void *arg, struct sandbox *sb, const struct sandbox_reply *rep)
{
	(void)e;
	(void)sb;
	bh_session *s = arg;
	struct op *op = s->queue;
	s->queue = op->next;
	bh_error *err = NULL;
	/* ---- egress: the grant ends with the call, before its answer ---- */
	session_egress_ungrant(s, op->grant_hold);
	op->grant_hold = 0;
	if (!rep->type) {
		s->sb = NULL; /* the sandbox is already being torn down */
		/* A breach of the channel is the boundary failing, whatever
		 * else happened; otherwise an OOM kill is the likeliest end. */
		enum bh_end_reason end =
			rep->breach ? BH_END_BOUNDARY_FAILED : BH_END_MAIN_PROCESS_ENDED;
		/* Out of memory is failed_precondition, plimsoll's code for a call
		 * its session did not survive: resource_exhausted is a shed
		 * refusal's (HTTP 429, which invites a retry of code that may have
		 * run), and plimsoll's Python client reads it as one, dropping the
		 * SessionEnded detail. */
		cell_unanswered(s, op,
				rep->breach ? "data_loss" : rep->oom ? "failed_precondition" : "unknown",
				rep->lost, rep->oom, end);
		op_free(op);
		session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(s, end, rep->oom && !rep->breach ? "oom" : rep->lost);
		return;
	}
	if (rep->type == BH_CHAN_DONE) {
		struct done_frame d;
		if (sandbox_decode_done(rep, &d) < 0) {
			cell_unanswered(s, op, "data_loss", "a malformed answer", false,
					BH_END_BOUNDARY_FAILED);
			op_free(op);
			session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
			end_session(s, BH_END_BOUNDARY_FAILED, "the init sent a malformed answer");
			return;
		}
		set_state(s, BH_SESSION_READY);
		cell_answered(s, op, &d, rep->oom);
	} else {
		int reason, err_no;
		char msg[512];
		sandbox_decode_refusal(rep, &reason, &err_no, msg, sizeof msg);
		enum bh_refusal why = rep->type == BH_CHAN_REJECTED && reason == BH_CHAN_REJECT_LANGUAGE
					      ? BH_REFUSAL_UNSUPPORTED
					      : rep->type == BH_CHAN_REJECTED ? BH_REFUSAL_REQUEST
									       : BH_REFUSAL_ENVIRONMENT;
		bh_refuse(&err, why, "%s", msg);
		err->sys_errno = err_no;
		if (e->store) /* inflight: refused, so nothing ran and no record comes */
			store_inflight_settle(e->store, s->fp, s->calls + 1);
		session_live_end(s, op, NULL, NULL); /* stream */
		set_state(s, BH_SESSION_READY);
		op->cell_cb(op->arg, NULL, err);
		bh_error_free(err);
	}
	op_free(op);
	session_dispatch(s);
}

static void on_files_reply(bh_engine *e, void *arg, struct sandbox *sb,
			   const struct sandbox_reply *rep)
{
	(void)e;
	(void)sb;
	bh_session *s = arg;
	struct op *op = s->queue;
	s->queue = op->next;
	bh_error *err = NULL;
	if (!rep->type) {
		bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox ended: %s", rep->lost);
		op_refuse(op, err);
		bh_error_free(err);
		op_free(op);
		s->sb = NULL;
		session_acting_done(s); /* ---- ci: attribution: the engine's verdict ---- */
		end_session(s, rep->breach ? BH_END_BOUNDARY_FAILED : BH_END_MAIN_PROCESS_ENDED,
			    rep->lost);
		return;
	}
	set_state(s, BH_SESSION_READY);
	if (rep->type == BH_CHAN_FAIL) {
		int reason, err_no;
		char msg[512];
		sandbox_decode_refusal(rep, &reason, &err_no, msg, sizeof msg);
		bh_fail(&err, BH_E_INVALID, err_no, "%s", msg);
		op_refuse(op, err);
		bh_error_free(err);
	} else if (op->kind == OP_LIST && rep->type == BH_CHAN_LISTING) {
		struct proto_cursor r = proto_cursor(rep->payload, rep->len);
		uint32_t n;
		proto_get_u32(&r, &n);
		bool more = n & 0x80000000u;
		n &= 0x7fffffffu;
		struct bh_file_entry *ents = xzalloc((n + 1) * sizeof *ents);
		char **owned = xzalloc((2 * n + 1) * sizeof *owned);
		for (uint32_t i = 0; i < n && !r.bad; i++) {
			uint32_t nl = 0, tl = 0;
			const uint8_t *name, *target;
			uint8_t type;
			proto_get_str(&r, &name, &nl);
			proto_get_u8(&r, &type);
			ents[i].type = (char)type;
			proto_get_u64(&r, &ents[i].size);
			proto_get_u64(&r, &ents[i].mtime_ms);
			proto_get_str(&r, &target, &tl);
			owned[2 * i] = xasprintf("%.*s", (int)nl, name ? (const char *)name : "");
			owned[2 * i + 1] = xasprintf("%.*s", (int)tl, target ? (const char *)target : "");
			ents[i].name = owned[2 * i];
			ents[i].target = owned[2 * i + 1];
		}
		if (r.bad) {
			bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox sent a malformed listing");
			op_refuse(op, err);
			bh_error_free(err);
		} else {
			op->list_cb(op->arg, ents, n, more, NULL);
		}
		for (uint32_t i = 0; i < 2 * n; i++)
			free(owned[i]);
		free(owned);
		free(ents);
	} else if (op->kind == OP_READ && rep->type == BH_CHAN_CONTENT) {
		struct proto_cursor r = proto_cursor(rep->payload, rep->len);
		uint64_t size;
		uint8_t truncated;
		uint32_t n;
		const uint8_t *data;
		proto_get_u64(&r, &size);
		proto_get_u8(&r, &truncated);
		proto_get_str(&r, &data, &n);
		if (r.bad) {
			bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox sent a malformed file");
			op_refuse(op, err);
			bh_error_free(err);
		} else {
			op->read_cb(op->arg, data, n, size, truncated, NULL);
		}
	} else {
		bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox answered with an unexpected frame");
		op_refuse(op, err);
		bh_error_free(err);
	}
	op_free(op);
	session_dispatch(s);
}

/* A snippet in the session's sandbox: an EXEC of `node -` with the code
 * on its stdin. The init's sweep after it spares the interpreters. */
static void exec_frame(struct buf *f, uint64_t call_id, const struct op *op)
{
	uint8_t type = BH_CHAN_EXEC;
	buf_append(f, &type, 1);
	proto_put_u64(f, call_id);
	proto_put_u32(f, op->cell.timeout_ms);
	proto_put_u32(f, op->cell.output_cap);
	static const char *const node[] = {"/usr/bin/node", "-", NULL};
	/* ---- project: the runner, its plan on stdin (project.h) ---- */
	static const char *const runner[] = {BH_INIT_SANDBOX_PATH, BH_INIT_PROJECT, NULL};
	const char *const *base = op->project ? runner : node;
	/* ---- egress: a granted call's process alone has the proxy variables
	 * (the session's interpreters do not) ---- */
	const char *wrapped[24];
	const char *const *argv = op->grant_hold ? session_egress_argv(base, wrapped, 24) : base;
	uint32_t argc = 0;
	while (argv[argc])
		argc++;
	proto_put_u32(f, argc);
	for (uint32_t i = 0; i < argc; i++)
		proto_put_str(f, argv[i], strlen(argv[i]));
	if (op->project)
		proto_put_str(f, session_project_plan(op)->data, session_project_plan(op)->len);
	else
		proto_put_str(f, op->code, op->cell.code_len);
}

/* ---- inflight ---- */
static int commit_intent(bh_session *s, struct op *op, bh_error **err)
{
	bh_engine *e = s->e;
	if (!e->store)
		return 0;
	char digest[65];
	sha256_hex(op->code, op->cell.code_len, digest);
	struct store_inflight_row row = {
		.session = s->fp,
		.sequence = s->calls + 1,
		.code_sha256 = digest,
		.language = op->project ? "project" /* ---- project ---- */
			    : op->cell.fresh_process ? "javascript" : bh_language_name(op->cell.language),
		.principal = s->principal ? s->principal : "",
		.owner = s->owner ? s->owner : "",
		.code = (const uint8_t *)op->code,
		.code_len = op->cell.code_len,
		.engine_pid = (int64_t)getpid(),
		.started_ms = op->started_unix_ms,
	};
	if (store_inflight_begin(e->store, &row, e->keep_content, err) < 0) {
		/* The words of a record that could not be stored: the same cause,
		 * found before the code ran rather than after. */
		bh_error_wrap(*err, "nothing was sent to the sandbox: its record could not be stored");
		return -1;
	}
	return 0;
}

static int send_cell(bh_session *s, struct op *op, bh_error **err)
{
	assert(err);
	uint64_t call_id = sandbox_next_call_id();
	struct buf f = {0};
	if (op->cell.fresh_process) {
		/* ---- egress: held for this call only, from before it runs ---- */
		if (session_egress_grant(s, op->grant, &op->grant_hold, err) < 0)
			return -1;
		exec_frame(&f, call_id, op);
		goto send;
	}
	uint8_t type = BH_CHAN_CELL;
	buf_append(&f, &type, 1);
	proto_put_u64(&f, call_id);
	proto_put_u32(&f, op->cell.timeout_ms);
	proto_put_u32(&f, op->cell.output_cap);
	uint8_t lang = (uint8_t)op->cell.language;
	buf_append(&f, &lang, 1);
	proto_put_str(&f, op->code, op->cell.code_len);
	proto_put_u32(&f, (uint32_t)op->cell.n_files);
	for (size_t i = 0; i < op->cell.n_files; i++) {
		proto_put_str(&f, op->files[i].path, strlen(op->files[i].path));
		proto_put_str(&f, op->files[i].content ? op->files[i].content : (const uint8_t *)"",
			op->files[i].len);
	}
	proto_put_u32(&f, s->e->relay_ms); /* stream: channel.h, version 2 */
send:
	op->started_unix_ms = (int64_t)now_real_ms();
	/* ---- inflight: the intent is committed before the init sees the
	 * code, so a kill -9 during the call leaves "this cell was running";
	 * the record that answers it replaces it. Nothing runs unrecorded:
	 * a store that cannot take the intent refuses the call. ---- */
	if (commit_intent(s, op, err) < 0) {
		buf_free(&f);
		session_egress_ungrant(s, op->grant_hold); /* ---- egress ---- */
		op->grant_hold = 0;
		return -1;
	}
	usage_note_call(s);
	int ret = sandbox_request(s->e, s->sb, call_id, &f, op->cell.timeout_ms + BACKSTOP_GRACE_MS,
				  on_cell_reply, s, err);
	buf_free(&f);
	if (ret < 0 && s->e->store) /* inflight: never sent */
		store_inflight_settle(s->e->store, s->fp, s->calls + 1);
	if (ret < 0) { /* ---- egress ---- */
		session_egress_ungrant(s, op->grant_hold);
		op->grant_hold = 0;
	}
	if (ret == 0)
		session_live_begin(s, op); /* stream */
	if (ret == 0)
		engine_maybe_crash(s->e, "cell");
	return ret;
}

static int send_files_op(bh_session *s, struct op *op, bh_error **err)
{
	assert(err);
	uint64_t call_id = sandbox_next_call_id();
	struct buf f = {0};
	uint8_t type = op->kind == OP_LIST ? BH_CHAN_LIST : BH_CHAN_READ;
	buf_append(&f, &type, 1);
	proto_put_u64(&f, call_id);
	proto_put_str(&f, op->path, strlen(op->path));
	proto_put_u32(&f, op->kind == OP_LIST ? BH_CHAN_LIST_MAX_ENTRIES : op->max_bytes);
	int ret = sandbox_request(s->e, s->sb, call_id, &f, 30000, on_files_reply, s, err);
	buf_free(&f);
	return ret;
}

/* Starts the operation at the head of the queue when the sandbox is free. */
void session_dispatch(bh_session *s)
{
	if (s->queue && (s->state == BH_SESSION_PAUSED || s->state == BH_SESSION_HIBERNATED)) {
		/* ---- ci: attribution: a call wakes it, its principal's; a
		 * queued close or a file read keeps whoever asked for it ---- */
		if (!s->act_cb && s->queue->kind == OP_CELL) {
			struct bh_actor caller = {.name = s->principal};
			session_acting(s, &caller);
		}
		session_wake(s);
		return;
	}
	if (s->state == BH_SESSION_READY && s->expire_pending) {
		session_acting_policy(s, "policy:ttl"); /* ---- ci: attribution ---- */
		end_session(s, BH_END_EXPIRED, "its lifetime of awake time ran out");
		return;
	}
	if (s->state == BH_SESSION_READY && s->queue && s->idle_t) {
		loop_timer_cancel(s->e->loop, s->idle_t);
		s->idle_t = NULL;
	}
	if (s->state == BH_SESSION_READY && !s->queue)
		session_arm_idle(s);
	while (s->state == BH_SESSION_READY && s->queue) {
		struct op *op = s->queue;
		if (op->kind == OP_CLOSE) {
			s->queue = op->next;
			end_session(s, BH_END_CLOSED, NULL);
			session_answer_close(s, op);
			op_free(op);
			return;
		}
		bh_error *err = NULL;
		set_state(s, BH_SESSION_BUSY);
		int ret = op->kind == OP_CELL ? send_cell(s, op, &err) : send_files_op(s, op, &err);
		if (ret == 0)
			return;
		s->queue = op->next;
		set_state(s, BH_SESSION_READY);
		op_refuse(op, err);
		bh_error_free(err);
		op_free(op);
	}
}

/* Relative, below /work, no "..", ".", empty parts or control characters
 * (the rule the init walks by, path_rule.h). */
static const char *path_problem(const char *p)
{
	enum proto_path_problem why = proto_path_check(p, p ? strlen(p) : 0, 0);
	return why == PROTO_PATH_OK ? NULL : proto_path_problem_text(why);
}

int session_enqueue(bh_session *s, struct op *op, bh_error **err)
{
	assert(err);
	if (s->state == BH_SESSION_ENDED) {
		session_ended_error(s, err);
		op_free(op);
		return -1;
	}
	if (queue_len(s) >= 2) {
		op_free(op);
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "a call is running on this session and another is waiting");
	}
	op->queued_us = now_mono_us();
	if (op->kind == OP_CELL) {
		s->claimed = true;
		s->last_call_ms = (int64_t)now_real_ms();
		engine_changed(s->e); /* ---- light ---- */
	}
	struct op **pp = &s->queue;
	while (*pp)
		pp = &(*pp)->next;
	*pp = op;
	session_dispatch(s);
	return 0;
}

static int session_run(bh_session *s, const struct bh_cell *cell, bh_cell_cb cb, void *arg,
		       bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (!cell || !cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a call needs a cell and a callback");
	if (cell->language != BH_LANG_PYTHON && cell->language != BH_LANG_JAVASCRIPT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown language %d", (int)cell->language);
	if (cell->code_len > BH_MAX_CODE_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the code is %zu bytes, above the %u limit",
				 cell->code_len, BH_MAX_CODE_BYTES);
	if (cell->timeout_ms > MAX_TIMEOUT_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "timeout %u ms is above the %u ms maximum",
				 cell->timeout_ms, MAX_TIMEOUT_MS);
	if (cell->output_cap > BH_MAX_CELL_OUTPUT_CAP)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "output cap %u is above the %u maximum",
				 cell->output_cap, BH_MAX_CELL_OUTPUT_CAP);
	if (cell->n_files > BH_MAX_FILES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%zu files is more than %u", cell->n_files,
				 BH_MAX_FILES);
	/* ---- egress: the engine's own guard; a cell carries no grant (its
	 * interpreter outlives the call: plimsoll's rule) ---- */
	if (cell->grant_profile && *cell->grant_profile) {
		if (egress_check_profile(s->e, cell->grant_profile, err) < 0)
			return -1;
		if (!cell->fresh_process)
			return bh_refuse(err, BH_REFUSAL_REQUEST,
					 "a cell carries no grant (its interpreter outlives the call); "
					 "send the code as a snippet");
	}
	if (cell->fresh_process && (cell->language != BH_LANG_JAVASCRIPT || cell->n_files))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "a snippet in a fresh process is JavaScript and carries no files");
	size_t total = 0;
	for (size_t i = 0; i < cell->n_files; i++) {
		const char *why = path_problem(cell->files[i].path);
		if (why)
			return bh_refuse(err, BH_REFUSAL_REQUEST, "file path \"%s\" %s",
					 cell->files[i].path ? cell->files[i].path : "", why);
		total += cell->files[i].len;
	}
	if (total > BH_MAX_FILES_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the files hold %zu bytes, above the %u limit",
				 total, BH_MAX_FILES_BYTES);
	if (cell->floor != BH_TIER_UNKNOWN && s->state != BH_SESSION_WAITING &&
	    !bh_tier_meets(s->tier, cell->floor))
		return bh_refuse(err, BH_REFUSAL_ISOLATION, "the floor %s is above the session's %s tier",
				 bh_tier_name(cell->floor), bh_tier_name(s->tier));
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_CELL;
	op->cell = *cell;
	op->cell.timeout_ms = cell->timeout_ms ? cell->timeout_ms : DEFAULT_TIMEOUT_MS;
	op->cell.output_cap = cell->output_cap ? cell->output_cap : DEFAULT_OUTPUT_CAP;
	op->code = xzalloc(cell->code_len + 1);
	if (cell->code_len)
		memcpy(op->code, cell->code, cell->code_len);
	op->cell.code = op->code;
	if (cell->n_files) {
		op->files = xzalloc(cell->n_files * sizeof *op->files);
		for (size_t i = 0; i < cell->n_files; i++) {
			op->files[i].path = xstrdup(cell->files[i].path);
			uint8_t *c = xzalloc(cell->files[i].len + 1);
			if (cell->files[i].len)
				memcpy(c, cell->files[i].content, cell->files[i].len);
			op->files[i].content = c;
			op->files[i].len = cell->files[i].len;
		}
	}
	op->cell.files = op->files;
	if (cell->grant_profile && *cell->grant_profile) /* ---- egress ---- */
		op->grant = xstrdup(cell->grant_profile);
	op->cell.grant_profile = op->grant;
	op->cell_cb = cb;
	op->arg = arg;
	return session_enqueue(s, op, err);
}

/* ---- replay: refused calls, for :live ---- */
/* A call refused here ran nothing and leaves no record: the session counts
 * it and keeps its refusal, so the operator API can show it (a console
 * following the next call sees it stop at the daemon). */
int bh_session_run(bh_session *s, const struct bh_cell *cell, bh_cell_cb cb, void *arg,
		   bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	int rc = session_run(s, cell, cb, arg, err);
	if (rc < 0 && s && *err) {
		s->refused++;
		snprintf(s->last_refusal, sizeof s->last_refusal, "Nothing ran (%s): %s",
			 bh_refusal_name((*err)->refusal), (*err)->msg);
		engine_changed(s->e); /* ---- light: an Overview poll wakes ---- */
	}
	return rc;
}

int bh_session_close(bh_session *s, bh_close_cb cb, void *arg, bh_error **err)
{
	if (!cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "close needs a callback");
	struct op *close_op = xzalloc(sizeof *close_op);
	close_op->kind = OP_CLOSE;
	close_op->close_cb = cb;
	close_op->arg = arg;
	if (s->state == BH_SESSION_ENDED) {
		session_answer_close(s, close_op);
		op_free(close_op);
		return 0;
	}
	/* A call waiting behind the one in flight is refused; the close takes
	 * its place and runs once the sandbox is free. */
	if (s->queue && s->queue->next) {
		struct op *waiting = s->queue->next;
		s->queue->next = NULL;
		bh_error *e2 = NULL;
		bh_refuse(&e2, BH_REFUSAL_REQUEST, "the session is closing");
		e2->session_end = BH_END_CLOSED;
		op_refuse(waiting, e2);
		bh_error_free(e2);
		op_free(waiting);
	}
	if (s->state == BH_SESSION_WAITING || s->state == BH_SESSION_OPENING) {
		/* Nothing ran yet: end it now; the opening sandbox is closed when it arrives. */
		end_session(s, BH_END_CLOSED, NULL);
		session_answer_close(s, close_op);
		op_free(close_op);
		return 0;
	}
	close_op->queued_us = now_mono_us();
	struct op **pp = &s->queue;
	while (*pp)
		pp = &(*pp)->next;
	*pp = close_op;
	session_dispatch(s);
	return 0;
}

int bh_session_list_files(bh_session *s, const char *path, bh_list_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	const char *why = path && *path ? path_problem(path) : NULL;
	if (why)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "path \"%s\" %s", path, why);
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_LIST;
	op->path = xstrdup(path ? path : "");
	op->list_cb = cb;
	op->arg = arg;
	return session_enqueue(s, op, err);
}

int bh_session_read_file(bh_session *s, const char *path, uint32_t max_bytes, bh_read_cb cb,
			 void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	const char *why = path_problem(path);
	if (why)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "path \"%s\" %s", path ? path : "", why);
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_READ;
	op->path = xstrdup(path);
	op->max_bytes = max_bytes ? max_bytes : 1u << 20;
	op->read_cb = cb;
	op->arg = arg;
	return session_enqueue(s, op, err);
}
