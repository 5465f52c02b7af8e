/* Sessions: one sandbox kept warm for many calls of one conversation.
 *
 * A session owns its sandbox and a queue of at most two operations (the
 * one in flight and one waiting). Each answered cell becomes a version-2
 * record chained to the previous one, committed to the store before the
 * answer is handed back; a cell that may have run but got no answer becomes
 * a version-3 record. The id is a capability: only its fingerprint is ever
 * logged or stored. */
#include "engine_priv.h"
#include "record.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define DEFAULT_LIFETIME_MS (30u * 60u * 1000u)
#define MAX_LIFETIME_MS (12u * 60u * 60u * 1000u)
#define DEFAULT_TIMEOUT_MS 30000u
#define MAX_TIMEOUT_MS (5u * 60u * 1000u)
#define DEFAULT_OUTPUT_CAP (64u * 1024u)
#define MAX_OUTPUT_CAP (1u * 1024u * 1024u)
#define MAX_CODE (256u * 1024u)
#define MAX_FILES 200u
#define MAX_FILES_BYTES (4u * 1024u * 1024u)
#define MAX_PATH_BYTES 4096u
#define BACKSTOP_GRACE_MS 5000u
#define PROTOCOL 3u

#define TOMBSTONE_MS (10u * 60u * 1000u)

enum op_kind { OP_CELL, OP_LIST, OP_READ, OP_CLOSE };

struct op {
	enum op_kind kind;
	/* cell */
	struct bh_cell cell;
	char *code;
	struct bh_file *files;
	bh_cell_cb cell_cb;
	/* list / read */
	char *path;
	uint32_t max_bytes;
	bh_list_cb list_cb;
	bh_read_cb read_cb;
	/* close */
	bh_close_cb close_cb;
	void *arg;
	uint64_t queued_us;
	int64_t started_unix_ms;
	struct op *next;
};

struct bh_session {
	bh_engine *e;
	char id[33];
	char fp[65];
	char sandbox_name[40];
	enum bh_tier tier, floor;
	uint32_t languages;
	uint32_t lifetime_ms;
	uint32_t idle_ms; /* 0: the engine's */
	char *principal, *owner, *run_key;
	enum bh_session_state state;
	struct sandbox *sb;
	bh_session_open_cb open_cb;
	void *open_arg;
	struct op *queue; /* head is in flight when state is BH_SESSION_BUSY */
	uint64_t calls;
	char last_record[65];
	enum bh_end_reason end_reason;
	char end_detail[256];
	struct bh_record last; /* the last record handed out, for the callback */
	/* lifecycle */
	struct bh_timer *idle_t, *sleep_t, *life_t, *retention_t, *tomb_t;
	uint64_t awake_used_us, awake_since_us; /* lifetime counts awake time only */
	int64_t created_ms, last_call_ms;
	bool claimed;        /* a call named it: it is not "unclaimed" */
	bool expire_pending; /* the lifetime ran out during a call */
	uint64_t woke_us;    /* for the next cell's answer */
	int64_t hibernated_ms; /* when its image was written */
	uint64_t image_bytes;  /* and how much disk it takes */
	bh_action_cb act_cb; /* an operator's pause/resume/hibernate in flight */
	void *act_arg;
	bool from_pool;      /* its sandbox came from the warm pool */
	struct sandbox *handoff;        /* a pooled sandbox on its way (handoff_t) */
	struct bh_timer *handoff_t;
	bool end_unstored;              /* its end is not in the store yet (end_retry_t) */
	struct bh_timer *end_retry_t;
	struct bh_session *next;
};

static void arm_idle(bh_session *s);
static void arm_life(bh_session *s);
static void wake(bh_session *s);

const char *bh_session_id(const bh_session *s)
{
	return s->id;
}

const char *bh_session_fingerprint(const bh_session *s)
{
	return s->fp;
}

enum bh_tier bh_session_tier(const bh_session *s)
{
	return s->tier;
}

bh_session *bh_engine_find_session(bh_engine *e, const char *session_id, const char *principal)
{
	if (!session_id)
		return NULL;
	char fp[65];
	bh_fingerprint_of(session_id, fp);
	for (bh_session *s = e->sessions; s; s = s->next) {
		/* Compare fingerprints, not ids: the lookup's time does not depend
		 * on how much of a guessed id was right. */
		if (strcmp(s->fp, fp))
			continue;
		if (strcmp(s->principal, principal ? principal : ""))
			return NULL;
		return s;
	}
	return NULL;
}

static void set_state(bh_session *s, enum bh_session_state st)
{
	if (s->state == st)
		return;
	const char *from = bh_session_state_name(s->state), *to = bh_session_state_name(st);
	bh_log(s->e, BH_LOG_DEBUG, "session %.12s: %s -> %s", s->fp, from, to);
	/* ready <-> busy happens twice a call: it is not persisted (one
	 * transaction per cell, the record's). */
	bool hot = (s->state == BH_SESSION_READY && st == BH_SESSION_BUSY) ||
		   (s->state == BH_SESSION_BUSY && st == BH_SESSION_READY);
	if (s->e->store && st != BH_SESSION_ENDED && st != BH_SESSION_WAITING && !hot) {
		char detail[64];
		snprintf(detail, sizeof detail, "%s -> %s", from, to);
		store_session_state(s->e->store, s->fp, st, NULL);
		store_event(s->e->store, "state", s->fp, s->sandbox_name, detail);
	}
	s->state = st;
}

/* ---- operations ---- */

static void op_free(struct op *op)
{
	if (!op)
		return;
	free(op->code);
	for (size_t i = 0; op->files && i < op->cell.n_files; i++) {
		free((char *)op->files[i].path);
		free((uint8_t *)op->files[i].content);
	}
	free(op->files);
	free(op->path);
	free(op);
}

static size_t queue_len(bh_session *s)
{
	size_t n = 0;
	for (struct op *o = s->queue; o; o = o->next)
		n++;
	return n;
}

static void refuse_op(struct op *op, const bh_error *err)
{
	switch (op->kind) {
	case OP_CELL:
		op->cell_cb(op->arg, NULL, err);
		break;
	case OP_LIST:
		op->list_cb(op->arg, NULL, 0, false, err);
		break;
	case OP_READ:
		op->read_cb(op->arg, NULL, 0, 0, false, err);
		break;
	case OP_CLOSE:
		break; /* closes are answered by end_session */
	}
}

static void ended_error(bh_session *s, bh_error **err)
{
	bh_refuse(err, BH_REFUSAL_REQUEST, "the session has ended (%s)%s%s",
		  bh_end_reason_name(s->end_reason),
		  s->end_detail[0] ? ": " : "", s->end_detail);
	(*err)->session_end = s->end_reason;
}

static void answer_close(bh_session *s, struct op *op)
{
	struct bh_close_result r = {
		.fingerprint = s->fp,
		.calls = s->calls,
		.last_record_sha256 = s->last_record,
		.end_reason = s->end_reason,
	};
	op->close_cb(op->arg, &r, NULL);
}

static void store_end(bh_session *s);

static void session_free(bh_session *s)
{
	if (s->handoff_t)
		loop_timer_cancel(s->e->loop, s->handoff_t);
	if (s->end_retry_t)
		loop_timer_cancel(s->e->loop, s->end_retry_t);
	s->end_retry_t = NULL;
	if (s->end_unstored && s->e->store)
		store_end(s); /* a last try (engine close): else the next engine's sweep ends it */
	if (s->handoff && sandbox_alive(s->e, s->handoff))
		sandbox_close(s->e, s->handoff);
	free(s->principal);
	free(s->owner);
	free(s->run_key);
	free(s);
}

/* Ten minutes after it ended, a session is forgotten (its row stays). */
static void on_tombstone(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	s->tomb_t = NULL;
	for (bh_session **pp = &e->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	session_free(s);
}

#define END_RETRY_MS 1000u

static void on_end_retry(bh_engine *e, void *arg)
{
	(void)e;
	bh_session *s = arg;
	s->end_retry_t = NULL;
	store_end(s);
}

/* A session's end the store could not take (its disk full: the close is
 * still answered and the sandbox still goes) is retried every second until
 * it is stored; a row left saying ready would be a ghost to the leak finder
 * and a lost session to the next engine, though nothing of it is alive. */
static void store_end(bh_session *s)
{
	bh_engine *e = s->e;
	bh_error *err = NULL;
	if (store_session_end(e->store, s->fp, s->end_reason, s->end_detail, &err) == 0) {
		if (s->end_unstored)
			bh_log(e, BH_LOG_INFO, "session %.12s: its end is stored now", s->fp);
		s->end_unstored = false;
		store_event(e->store, "ended", s->fp, s->sandbox_name,
			    bh_end_reason_name(s->end_reason));
		return;
	}
	if (!s->end_unstored)
		bh_log(e, BH_LOG_WARN, "session %.12s: its end could not be stored (retrying): %s",
		       s->fp, err->msg);
	bh_error_free(err);
	s->end_unstored = true;
	if (!e->closing && !s->end_retry_t)
		s->end_retry_t = loop_timer(e->loop, END_RETRY_MS, on_end_retry, s);
}

/* The one place a session ends: the store learns why, waiting operations
 * are refused (a close is answered), and the sandbox goes. */
static void end_session(bh_session *s, enum bh_end_reason reason, const char *detail)
{
	if (s->state == BH_SESSION_ENDED)
		return;
	bh_engine *e = s->e;
	loop_timer_cancel(e->loop, s->idle_t);
	loop_timer_cancel(e->loop, s->sleep_t);
	loop_timer_cancel(e->loop, s->life_t);
	loop_timer_cancel(e->loop, s->retention_t);
	s->idle_t = s->sleep_t = s->life_t = s->retention_t = NULL;
	if (s->awake_since_us) {
		s->awake_used_us += now_mono_us() - s->awake_since_us;
		s->awake_since_us = 0;
	}
	s->end_reason = reason;
	snprintf(s->end_detail, sizeof s->end_detail, "%s", detail ? detail : "");
	set_state(s, BH_SESSION_ENDED);
	if (e->store && s->sandbox_name[0])
		store_end(s);
	bh_log(e, BH_LOG_INFO, "session %.12s ended: %s%s%s", s->fp,
	       bh_end_reason_name(reason), detail ? ": " : "",
	       detail ? detail : "");
	if (s->sb) {
		struct sandbox *sb = s->sb;
		s->sb = NULL;
		sb->lost_fn = NULL;
		sandbox_close(e, sb);
		/* The row says ended; the kill and delete are in flight. */
		engine_maybe_crash(e, "close");
	}
	struct op *q = s->queue;
	s->queue = NULL;
	bh_error *err = NULL;
	ended_error(s, &err);
	while (q) {
		struct op *n = q->next;
		if (q->kind == OP_CLOSE)
			answer_close(s, q);
		else
			refuse_op(q, err);
		op_free(q);
		q = n;
	}
	bh_error_free(err);
	err = NULL;
	if (s->act_cb) {
		bh_action_cb cb = s->act_cb;
		s->act_cb = NULL;
		ended_error(s, &err);
		cb(s->act_arg, err);
		bh_error_free(err);
		err = NULL;
	}
	if (!e->closing)
		s->tomb_t = loop_timer(e->loop, TOMBSTONE_MS, on_tombstone, s);
	if (s->open_cb) {
		bh_session_open_cb cb = s->open_cb;
		s->open_cb = NULL;
		bh_fail(&err, BH_E_SANDBOX, 0, "the session's sandbox could not be opened: %s",
			s->end_detail);
		err->session_end = reason;
		cb(s->open_arg, s, err);
		bh_error_free(err);
	}
}

/* ---- the cell in flight ---- */

static void dispatch(bh_session *s);

static void flags_text(char *out, size_t n, const struct bh_cell_result *r)
{
	snprintf(out, n, "%s%s%s%s%s%s", r->timed_out ? "timed_out," : "",
		 r->stdout_truncated ? "stdout_truncated," : "",
		 r->stderr_truncated ? "stderr_truncated," : "",
		 r->interpreter_started ? "interpreter_started," : "",
		 r->interpreter_ended ? "interpreter_ended," : "", r->oom ? "oom," : "");
	size_t len = strlen(out);
	if (len)
		out[len - 1] = '\0';
}

static void request_digest(const struct op *op, const bh_session *s, char out[65])
{
	struct bh_request_fields rf = {
		.protocol = PROTOCOL,
		.minimum_isolation = op->cell.floor > BH_TIER_NONE ? bh_tier_name(op->cell.floor) : "",
		.timeout_ms = op->cell.has_sent_timeout ? op->cell.sent_timeout_ms : op->cell.timeout_ms,
		.software_mode = "",
		.kind = op->cell.fresh_process ? "javascript" : "cell",
		.language = bh_language_name(op->cell.language),
		.code = (const uint8_t *)op->code,
		.code_len = op->cell.code_len,
		.grant_profile = "",
		.files = op->files,
		.n_files = op->cell.n_files,
	};
	(void)s;
	bh_request_digest(&rf, out);
}

static void fill_record(bh_session *s, struct bh_record *rec, const struct op *op, int version)
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

static int commit(bh_session *s, struct bh_record *rec, const struct op *op,
		  const struct bh_cell_result *r, bh_error **err)
{
	bh_engine *e = s->e;
	bh_record_seal(rec);
	char flags[160] = "";
	if (r)
		flags_text(flags, sizeof flags, r);
	struct store_record_extra x = {
		.language = bh_language_name(op->cell.language),
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
	if (store_record_commit(e->store, rec, &x, e->keep_content, err) < 0)
		return -1;
	s->calls = rec->sequence;
	snprintf(s->last_record, sizeof s->last_record, "%s", rec->record_sha256);
	engine_maybe_crash(e, "commit");
	return 0;
}

static void cell_answered(bh_session *s, struct op *op, const struct done_frame *d, bool oom)
{
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
	fill_record(s, &s->last, op, 2);
	bh_result_digest(&rf, s->last.result_sha256);
	bh_error *err = NULL;
	if (commit(s, &s->last, op, &r, &err) < 0) {
		/* Nothing unrecorded is acknowledged: the code ran, its answer is withheld. */
		bh_error_wrap(err, "the code ran but its record could not be stored");
		op->cell_cb(op->arg, NULL, err);
		bh_error_free(err);
		return;
	}
	r.record = &s->last;
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
	if (over)
		end_session(s, BH_END_DISK_EXCEEDED, detail);
}

/* The call may have run and there is no answer: a version-3 record keeps
 * its place in the chain, and the session ends with its sandbox. */
static void cell_unanswered(bh_session *s, struct op *op, const char *code_name, const char *why,
			    bool oom, enum bh_end_reason end)
{
	fill_record(s, &s->last, op, 3);
	s->last.unanswered = code_name;
	bh_error *err = NULL;
	bh_error *store_err = NULL;
	struct bh_cell_result r = {.record = &s->last, .oom = oom};
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
	if (!rep->type) {
		s->sb = NULL; /* the sandbox is already being torn down */
		/* A breach of the channel is the boundary failing, whatever
		 * else happened; otherwise an OOM kill is the likeliest end. */
		enum bh_end_reason end =
			rep->breach ? BH_END_BOUNDARY_FAILED : BH_END_MAIN_PROCESS_ENDED;
		cell_unanswered(s, op,
				rep->breach ? "data_loss" : rep->oom ? "resource_exhausted" : "unknown",
				rep->lost, rep->oom, end);
		op_free(op);
		end_session(s, end, rep->oom && !rep->breach ? "oom" : rep->lost);
		return;
	}
	if (rep->type == BH_CHAN_DONE) {
		struct done_frame d;
		if (sandbox_decode_done(rep, &d) < 0) {
			cell_unanswered(s, op, "data_loss", "a malformed answer", false,
					BH_END_BOUNDARY_FAILED);
			op_free(op);
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
		set_state(s, BH_SESSION_READY);
		op->cell_cb(op->arg, NULL, err);
		bh_error_free(err);
	}
	op_free(op);
	dispatch(s);
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
		refuse_op(op, err);
		bh_error_free(err);
		op_free(op);
		s->sb = NULL;
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
		refuse_op(op, err);
		bh_error_free(err);
	} else if (op->kind == OP_LIST && rep->type == BH_CHAN_LISTING) {
		struct reader r = {.p = rep->payload, .left = rep->len};
		uint32_t n = get_u32(&r);
		bool more = n & 0x80000000u;
		n &= 0x7fffffffu;
		struct bh_file_entry *ents = xzalloc((n + 1) * sizeof *ents);
		char **owned = xzalloc((2 * n + 1) * sizeof *owned);
		for (uint32_t i = 0; i < n && !r.bad; i++) {
			size_t nl = 0, tl = 0;
			const uint8_t *name = get_str(&r, &nl);
			uint8_t type = r.left ? *r.p : '?';
			if (r.left) {
				r.p++;
				r.left--;
			}
			ents[i].type = (char)type;
			ents[i].size = get_u64(&r);
			ents[i].mtime_ms = get_u64(&r);
			const uint8_t *target = get_str(&r, &tl);
			owned[2 * i] = xasprintf("%.*s", (int)nl, name ? (const char *)name : "");
			owned[2 * i + 1] = xasprintf("%.*s", (int)tl, target ? (const char *)target : "");
			ents[i].name = owned[2 * i];
			ents[i].target = owned[2 * i + 1];
		}
		if (r.bad) {
			bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox sent a malformed listing");
			refuse_op(op, err);
			bh_error_free(err);
		} else {
			op->list_cb(op->arg, ents, n, more, NULL);
		}
		for (uint32_t i = 0; i < 2 * n; i++)
			free(owned[i]);
		free(owned);
		free(ents);
	} else if (op->kind == OP_READ && rep->type == BH_CHAN_CONTENT) {
		struct reader r = {.p = rep->payload, .left = rep->len};
		uint64_t size = get_u64(&r);
		bool truncated = r.left && *r.p;
		if (r.left) {
			r.p++;
			r.left--;
		}
		size_t n = 0;
		const uint8_t *data = get_str(&r, &n);
		if (r.bad) {
			bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox sent a malformed file");
			refuse_op(op, err);
			bh_error_free(err);
		} else {
			op->read_cb(op->arg, data, n, size, truncated, NULL);
		}
	} else {
		bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox answered with an unexpected frame");
		refuse_op(op, err);
		bh_error_free(err);
	}
	op_free(op);
	dispatch(s);
}

/* A snippet in the session's sandbox: an EXEC of `node -` with the code
 * on its stdin. The init's sweep after it spares the interpreters. */
static void exec_frame(struct buf *f, uint64_t call_id, const struct op *op)
{
	uint8_t type = BH_CHAN_EXEC;
	buf_append(f, &type, 1);
	put_u64(f, call_id);
	put_u32(f, op->cell.timeout_ms);
	put_u32(f, op->cell.output_cap);
	static const char *const argv[] = {"/usr/bin/node", "-"};
	put_u32(f, 2);
	for (int i = 0; i < 2; i++)
		put_str(f, argv[i], strlen(argv[i]));
	put_str(f, op->code, op->cell.code_len);
}

static int send_cell(bh_session *s, struct op *op, bh_error **err)
{
	uint64_t call_id = sandbox_next_call_id();
	struct buf f = {0};
	if (op->cell.fresh_process) {
		exec_frame(&f, call_id, op);
		goto send;
	}
	uint8_t type = BH_CHAN_CELL;
	buf_append(&f, &type, 1);
	put_u64(&f, call_id);
	put_u32(&f, op->cell.timeout_ms);
	put_u32(&f, op->cell.output_cap);
	uint8_t lang = (uint8_t)op->cell.language;
	buf_append(&f, &lang, 1);
	put_str(&f, op->code, op->cell.code_len);
	put_u32(&f, (uint32_t)op->cell.n_files);
	for (size_t i = 0; i < op->cell.n_files; i++) {
		put_str(&f, op->files[i].path, strlen(op->files[i].path));
		put_str(&f, op->files[i].content ? op->files[i].content : (const uint8_t *)"",
			op->files[i].len);
	}
send:
	op->started_unix_ms = (int64_t)now_real_ms();
	int ret = sandbox_request(s->e, s->sb, call_id, &f, op->cell.timeout_ms + BACKSTOP_GRACE_MS,
				  on_cell_reply, s, err);
	buf_free(&f);
	if (ret == 0)
		engine_maybe_crash(s->e, "cell");
	return ret;
}

static int send_files_op(bh_session *s, struct op *op, bh_error **err)
{
	uint64_t call_id = sandbox_next_call_id();
	struct buf f = {0};
	uint8_t type = op->kind == OP_LIST ? BH_CHAN_LIST : BH_CHAN_READ;
	buf_append(&f, &type, 1);
	put_u64(&f, call_id);
	put_str(&f, op->path, strlen(op->path));
	put_u32(&f, op->kind == OP_LIST ? BH_CHAN_LIST_MAX_ENTRIES : op->max_bytes);
	int ret = sandbox_request(s->e, s->sb, call_id, &f, 30000, on_files_reply, s, err);
	buf_free(&f);
	return ret;
}

/* Starts the operation at the head of the queue when the sandbox is free. */
static void dispatch(bh_session *s)
{
	if (s->queue && (s->state == BH_SESSION_PAUSED || s->state == BH_SESSION_HIBERNATED)) {
		wake(s);
		return;
	}
	if (s->state == BH_SESSION_READY && s->expire_pending) {
		end_session(s, BH_END_EXPIRED, "its lifetime of awake time ran out");
		return;
	}
	if (s->state == BH_SESSION_READY && s->queue && s->idle_t) {
		loop_timer_cancel(s->e->loop, s->idle_t);
		s->idle_t = NULL;
	}
	if (s->state == BH_SESSION_READY && !s->queue)
		arm_idle(s);
	while (s->state == BH_SESSION_READY && s->queue) {
		struct op *op = s->queue;
		if (op->kind == OP_CLOSE) {
			s->queue = op->next;
			end_session(s, BH_END_CLOSED, NULL);
			answer_close(s, op);
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
		refuse_op(op, err);
		bh_error_free(err);
		op_free(op);
	}
}

/* ---- opening ---- */

/* The sandbox went while no call was in flight (killed out of band, its
 * init exited): the session ends now, not at its next call. */
static void on_sandbox_lost(bh_engine *e, void *arg, struct sandbox *sb, const char *why)
{
	(void)e;
	bh_session *s = arg;
	if (s->sb != sb)
		return;
	s->sb = NULL; /* it is already closing */
	end_session(s, sb->breached ? BH_END_BOUNDARY_FAILED : BH_END_MAIN_PROCESS_ENDED, why);
}

static void own_sandbox(bh_session *s, struct sandbox *sb)
{
	s->sb = sb;
	sb->lost_fn = on_sandbox_lost;
	sb->lost_arg = s;
}

static void on_sandbox_open(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	bh_session *s = arg;
	if (err) {
		end_session(s, BH_END_BOUNDARY_FAILED, err->msg);
		return;
	}
	if (s->state == BH_SESSION_ENDED) { /* closed while opening */
		sandbox_close(e, sb);
		return;
	}
	own_sandbox(s, sb);
	set_state(s, BH_SESSION_READY);
	s->awake_since_us = now_mono_us();
	arm_life(s);
	if (s->languages) {
		struct buf f = {0};
		uint8_t type = BH_CHAN_WARM;
		buf_append(&f, &type, 1);
		put_u32(&f, s->languages);
		sandbox_send(e, sb, &f);
		buf_free(&f);
	}
	if (s->open_cb) {
		bh_session_open_cb cb = s->open_cb;
		s->open_cb = NULL;
		cb(s->open_arg, s, NULL);
	}
	dispatch(s);
}

static const char *validate_owner(const char *owner)
{
	if (!owner || !*owner)
		return NULL;
	regex_t re;
	regcomp(&re, "^[A-Za-z0-9._:-]{1,64}$", REG_EXTENDED | REG_NOSUB);
	int bad = regexec(&re, owner, 0, NULL, 0);
	regfree(&re);
	return bad ? "the owner must be 1 to 64 of A-Z a-z 0-9 . _ : -" : NULL;
}

/* A pooled sandbox is handed over from the loop, not from inside
 * bh_session_open: its caller has not seen the session yet. */
static void on_handoff(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	struct sandbox *sb = s->handoff;
	s->handoff_t = NULL;
	s->handoff = NULL;
	if (!sandbox_alive(e, sb) || sb->state != SB_READY) {
		bh_error *err = NULL;
		bh_fail(&err, BH_E_SYSTEM, 0, "the pooled sandbox %s died before it was handed over",
			sb->name);
		if (sandbox_alive(e, sb))
			sandbox_close(e, sb);
		on_sandbox_open(e, s, NULL, err);
		bh_error_free(err);
		return;
	}
	on_sandbox_open(e, s, sb, NULL);
}

/* A full state disk would fail the intent row, the bundle or a record half
 * way through; refuse a new session before anything is written while the
 * state directory's filesystem has less than the minimum free. Calls, reads
 * and closes of open sessions are not refused (they write little, and a
 * record that cannot be stored is never acknowledged), and nothing is
 * latched: the first open after space returns is admitted. */
static int refuse_if_disk_low(bh_engine *e, bh_error **err)
{
	struct statvfs v;
	if (statvfs(e->state_dir, &v) < 0)
		return 0; /* the store's own writes will say what is wrong */
	uint64_t free_b = (uint64_t)v.f_bavail * v.f_frsize;
	uint64_t min_b = (uint64_t)e->policy.state_min_free_mb << 20;
	if (free_b >= min_b)
		return 0;
	bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
		  "no space for a new session: the state directory's disk (%s) has %llu KiB free, "
		  "below the %u MiB minimum; open sessions go on",
		  e->state_dir, (unsigned long long)(free_b >> 10), e->policy.state_min_free_mb);
	if (err)
		(*err)->sys_errno = ENOSPC;
	return -1;
}

/* Tier, floor and offer; then the intent row, then the runtime. */
static int start_open(bh_session *s, bh_error **err)
{
	bh_engine *e = s->e;
	enum bh_tier tier = s->tier == BH_TIER_UNKNOWN ? bh_engine_best_tier(e) : s->tier;
	if (tier == BH_TIER_UNKNOWN)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				 "no isolation tier is offered on this host (run `bulkhead doctor`)");
	if (!bh_tier_meets(tier, s->floor))
		return bh_refuse(err, BH_REFUSAL_ISOLATION, "the floor %s is above the %s tier",
				 bh_tier_name(s->floor), bh_tier_name(tier));
	if (!e->tiers[tier].report.offered)
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED, "the %s tier is not offered here: %s",
				 bh_tier_name(tier), e->tiers[tier].report.reason);
	s->tier = tier;
	if (refuse_if_disk_low(e, err) < 0)
		return -1;
	struct sandbox *pooled = pool_take(e, tier);
	if (pooled)
		snprintf(s->sandbox_name, sizeof s->sandbox_name, "%s", pooled->name);
	else if (sandbox_new_name(s->sandbox_name) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	int64_t now = (int64_t)now_real_ms();
	struct store_session_row row = {
		.fingerprint = s->fp,
		.sandbox = s->sandbox_name,
		.runtime = e->runtimes[tier].ops->name,
		.tier = bh_tier_name(tier),
		.floor = s->floor > BH_TIER_NONE ? bh_tier_name(s->floor) : "",
		.principal = s->principal,
		.owner = s->owner,
		.run_key = s->run_key,
		.state = BH_SESSION_OPENING,
		.engine_pid = getpid(),
		.lease_until_ms = now + 120000,
		.created_ms = now,
		.expires_ms = now + (int64_t)s->lifetime_ms,
	};
	/* The intent row comes first: a crash after this line is recoverable. */
	bh_error *store_err = NULL;
	if (store_session_intent(e->store, &row, &store_err) < 0) {
		if (pooled)
			sandbox_close(e, pooled);
		/* The disk filled below the minimum's margin (SQLITE_FULL): nothing
		 * was created, so it is a refusal naming the disk, not a failure. */
		if (store_err->sys_errno == ENOSPC) {
			bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				  "no space for a new session: the state directory's disk is full (%s)",
				  store_err->msg);
			if (err)
				(*err)->sys_errno = ENOSPC;
			bh_error_free(store_err);
		} else if (err) {
			bh_error_free(*err);
			*err = store_err;
		} else {
			bh_error_free(store_err);
		}
		return -1;
	}
	s->state = BH_SESSION_OPENING;
	/* The store takes writes again: ends it could not take go in now, not
	 * at their next retry. */
	for (bh_session *o = e->sessions; o; o = o->next)
		if (o->end_unstored)
			store_end(o);
	store_event(e->store, "state", s->fp, s->sandbox_name, pooled ? "opening from the pool" : "opening");
	if (pooled) {
		s->from_pool = true;
		s->handoff = pooled;
		s->handoff_t = loop_timer(e->loop, 0, on_handoff, s);
		return 0;
	}
	if (sandbox_open(e, tier, s->sandbox_name, on_sandbox_open, s, err) < 0) {
		store_session_end(e->store, s->fp, BH_END_BOUNDARY_FAILED, (*err)->msg, NULL);
		return -1;
	}
	engine_maybe_crash(e, "open");
	return 0;
}

static void session_open_failed(bh_session *s, const bh_error *err)
{
	/* Refused before anything was created: no row, no sandbox. */
	s->end_reason = BH_END_BOUNDARY_FAILED;
	snprintf(s->end_detail, sizeof s->end_detail, "%s", err->msg);
	s->state = BH_SESSION_ENDED;
	if (s->open_cb) {
		bh_session_open_cb cb = s->open_cb;
		s->open_cb = NULL;
		cb(s->open_arg, s, err);
	}
	struct op *q = s->queue;
	s->queue = NULL;
	while (q) {
		struct op *n = q->next;
		if (q->kind == OP_CLOSE)
			answer_close(s, q);
		else
			refuse_op(q, err);
		op_free(q);
		q = n;
	}
}

/* ---- admission: global, per principal, per owner (LRU replacement), memory ---- */

static bool live(const bh_session *s)
{
	return s->state != BH_SESSION_ENDED;
}

static bool holds_memory(const bh_session *s)
{
	return live(s) && s->state != BH_SESSION_HIBERNATED;
}

static bool replaceable(const bh_session *s)
{
	return !s->queue && (s->state == BH_SESSION_READY || s->state == BH_SESSION_PAUSED ||
			     s->state == BH_SESSION_HIBERNATED);
}

void sessions_census(bh_engine *e, const char *principal, struct census *c)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (!live(s))
			continue;
		c->places++;
		c->memory += holds_memory(s);
		c->mine += !strcmp(s->principal, principal);
	}
}

/* The owner's cap (replacing its least recently used idle session), then
 * the engine's admission (admission.c). */
static int admit(bh_engine *e, const struct bh_session_opts *o, bh_error **err)
{
	const char *principal = o->principal ? o->principal : "";
	const char *owner = o->owner ? o->owner : "";
	size_t owned = 0;
	bh_session *lru = NULL;
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (!live(s) || strcmp(s->principal, principal))
			continue;
		/* Owners of different principals never meet. */
		if (!*owner || strcmp(s->owner, owner))
			continue;
		owned++;
		int64_t used = s->last_call_ms ? s->last_call_ms : s->created_ms;
		int64_t best = lru ? (lru->last_call_ms ? lru->last_call_ms : lru->created_ms) : 0;
		if (replaceable(s) && (!lru || used < best))
			lru = s;
	}
	if (*owner && owned >= e->policy.max_per_owner) {
		if (!lru)
			return bh_refuse(err, BH_REFUSAL_CAPACITY,
					 "this owner already has %zu sandboxes, all with a call in flight",
					 owned);
		bh_log(e, BH_LOG_INFO, "owner cap %u reached: replacing session %.12s",
		       e->policy.max_per_owner, lru->fp);
		end_session(lru, BH_END_REPLACED,
			    "its owner opened another sandbox at the owner cap");
	}
	enum bh_tier tier = o->tier == BH_TIER_UNKNOWN ? bh_engine_best_tier(e) : o->tier;
	struct admit_ask ask = {.kind = ADMIT_SESSION, .principal = principal, .tier = tier};
	return admit_sandbox(e, &ask, err);
}

/* ---- lifecycle: idle -> paused -> hibernated (or closed); lifetime; retention ---- */

static void finish_action(bh_session *s, const bh_error *err)
{
	if (!s->act_cb)
		return;
	bh_action_cb cb = s->act_cb;
	s->act_cb = NULL;
	cb(s->act_arg, err);
}

static void on_retention(bh_engine *e, void *arg)
{
	(void)e;
	bh_session *s = arg;
	s->retention_t = NULL;
	if (s->state == BH_SESSION_HIBERNATED)
		end_session(s, BH_END_RETENTION_EXPIRED,
			    "its hibernation image outlived the retention");
}

/* Hibernation images share one disk budget: past it the oldest images go
 * first (their sessions end as if their retention had passed), the one just
 * written last — and it too when it alone does not fit. */
static void enforce_images_budget(bh_engine *e, bh_session *newest)
{
	uint64_t cap = (uint64_t)e->policy.images_budget_mb * 1048576u, total = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATED)
			total += s->image_bytes;
	while (total > cap) {
		bh_session *oldest = NULL;
		for (bh_session *s = e->sessions; s; s = s->next)
			if (s->state == BH_SESSION_HIBERNATED && s != newest &&
			    (!oldest || s->hibernated_ms < oldest->hibernated_ms))
				oldest = s;
		if (!oldest && newest && newest->state == BH_SESSION_HIBERNATED)
			oldest = newest;
		if (!oldest)
			return;
		char detail[160];
		snprintf(detail, sizeof detail,
			 "hibernation images exceeded their %u MiB disk budget; the oldest go first",
			 e->policy.images_budget_mb);
		bh_log(e, BH_LOG_INFO, "session %.12s: image of %llu MiB deleted: %s", oldest->fp,
		       (unsigned long long)(oldest->image_bytes >> 20), detail);
		total -= oldest->image_bytes;
		end_session(oldest, BH_END_RETENTION_EXPIRED, detail);
	}
}

static void on_hibernated(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	(void)sb;
	bh_session *s = arg;
	if (s->state != BH_SESSION_HIBERNATING)
		return;
	if (err) {
		bh_log(e, BH_LOG_WARN, "session %.12s: %s", s->fp, err->msg);
		finish_action(s, err);
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		return;
	}
	if (s->awake_since_us) {
		s->awake_used_us += now_mono_us() - s->awake_since_us;
		s->awake_since_us = 0;
	}
	loop_timer_cancel(e->loop, s->life_t);
	s->life_t = NULL;
	set_state(s, BH_SESSION_HIBERNATED);
	store_session_hibernated(e->store, s->fp, (int64_t)(s->awake_used_us / 1000u),
				 (int64_t)s->lifetime_ms, NULL);
	engine_maybe_crash(e, "hibernated"); /* the row says so: the next engine restores it */
	s->retention_t = loop_timer(e->loop, e->policy.retention_ms, on_retention, s);
	s->hibernated_ms = (int64_t)now_real_ms();
	s->image_bytes = disk_usage(s->sb->image_dir);
	finish_action(s, NULL);
	enforce_images_budget(e, s);
	if (s->state == BH_SESSION_HIBERNATED)
		dispatch(s);
}

static int hibernate(bh_session *s, bh_error **err)
{
	char image[4200];
	snprintf(image, sizeof image, "%s/images/%s", s->e->state_dir, s->sandbox_name);
	set_state(s, BH_SESSION_HIBERNATING);
	if (sandbox_hibernate(s->e, s->sb, image, on_hibernated, s, err) < 0) {
		set_state(s, s->sb->state == SB_PAUSED ? BH_SESSION_PAUSED : BH_SESSION_READY);
		return -1;
	}
	/* Dying with the checkpoint in flight: the next engine reaps the
	 * session (its row never said hibernated) and its half-written image. */
	engine_maybe_crash(s->e, "hibernate");
	return 0;
}

static void on_sleep(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	s->sleep_t = NULL;
	if (s->state != BH_SESSION_PAUSED)
		return;
	if (!sandbox_can_hibernate(s->sb)) {
		/* The container tier cannot checkpoint here; closing frees the
		 * memory, and the next call learns it has a fresh sandbox. */
		end_session(s, BH_END_IDLE_CLOSED,
			    "paused past hibernate_after; this tier cannot hibernate");
		return;
	}
	bh_error *err = NULL;
	if (hibernate(s, &err) < 0) {
		bh_log(e, BH_LOG_WARN, "session %.12s: hibernate: %s", s->fp, err->msg);
		bh_error_free(err);
	}
}

static void on_paused(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	(void)sb;
	bh_session *s = arg;
	if (s->state != BH_SESSION_PAUSING)
		return;
	if (err) {
		bh_log(e, BH_LOG_WARN, "session %.12s: %s", s->fp, err->msg);
		set_state(s, BH_SESSION_READY);
		finish_action(s, err);
		dispatch(s);
		return;
	}
	set_state(s, BH_SESSION_PAUSED);
	s->sleep_t = loop_timer(e->loop, e->policy.hibernate_after_ms, on_sleep, s);
	finish_action(s, NULL);
	dispatch(s); /* a call that arrived meanwhile wakes it again */
}

static int pause_now(bh_session *s, bh_error **err)
{
	loop_timer_cancel(s->e->loop, s->idle_t);
	s->idle_t = NULL;
	set_state(s, BH_SESSION_PAUSING);
	if (sandbox_pause(s->e, s->sb, on_paused, s, err) < 0) {
		set_state(s, BH_SESSION_READY);
		return -1;
	}
	engine_maybe_crash(s->e, "pause"); /* the freeze is in flight */
	return 0;
}

static void on_idle(bh_engine *e, void *arg)
{
	bh_session *s = arg;
	s->idle_t = NULL;
	if (s->state != BH_SESSION_READY || s->queue)
		return;
	if (!s->claimed) {
		end_session(s, BH_END_UNCLAIMED, "no call named it before its first idle timeout");
		return;
	}
	bh_error *err = NULL;
	if (pause_now(s, &err) < 0) {
		bh_log(e, BH_LOG_WARN, "session %.12s: pause: %s", s->fp, err->msg);
		bh_error_free(err);
	}
}

/* A request may ask for a shorter idle window, never one under a second or
 * past the engine's own (plimsoll's `shorter`, with its 1 s floor). */
#define MIN_IDLE_MS 1000u

static uint32_t effective_idle_ms(const bh_engine *e, uint32_t asked)
{
	uint32_t own = e->policy.idle_ms;
	if (!asked || asked >= own)
		return own;
	return asked < MIN_IDLE_MS ? (own < MIN_IDLE_MS ? own : MIN_IDLE_MS) : asked;
}

static uint32_t idle_ms_of(const bh_session *s)
{
	return s->idle_ms ? s->idle_ms : s->e->policy.idle_ms;
}

static void arm_idle(bh_session *s)
{
	loop_timer_cancel(s->e->loop, s->idle_t);
	s->idle_t = loop_timer(s->e->loop, idle_ms_of(s), on_idle, s);
}

static void on_lifetime(bh_engine *e, void *arg)
{
	(void)e;
	bh_session *s = arg;
	s->life_t = NULL;
	if (s->state == BH_SESSION_BUSY || s->state == BH_SESSION_WAKING ||
	    s->state == BH_SESSION_PAUSING || s->state == BH_SESSION_HIBERNATING) {
		s->expire_pending = true; /* ends once the sandbox is free */
		return;
	}
	end_session(s, BH_END_EXPIRED, "its lifetime of awake time ran out");
}

static void arm_life(bh_session *s)
{
	loop_timer_cancel(s->e->loop, s->life_t);
	uint64_t used = s->awake_used_us + (s->awake_since_us ? now_mono_us() - s->awake_since_us : 0);
	uint64_t limit = (uint64_t)s->lifetime_ms * 1000u;
	uint64_t left_ms = used >= limit ? 0 : (limit - used) / 1000u;
	s->life_t = loop_timer(s->e->loop, left_ms, on_lifetime, s);
}

static void on_woken(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	bh_session *s = arg;
	if (s->state != BH_SESSION_WAKING)
		return;
	if (err) {
		finish_action(s, err);
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		return;
	}
	s->woke_us = now_mono_us() - sb->control_started_us;
	char detail[64];
	snprintf(detail, sizeof detail, "%.1f ms", s->woke_us / 1000.0);
	bool from_disk = sb->image_dir != NULL && s->retention_t != NULL;
	store_event(e->store, from_disk ? "restored" : "resumed", s->fp, s->sandbox_name, detail);
	if (from_disk)
		s->image_bytes = 0; /* the restore deleted the image it was done with */
	loop_timer_cancel(e->loop, s->retention_t);
	s->retention_t = NULL;
	set_state(s, BH_SESSION_READY);
	if (!s->awake_since_us)
		s->awake_since_us = now_mono_us();
	arm_life(s);
	finish_action(s, NULL);
	dispatch(s);
}

/* A restore the memory budget has no room for: the session stays on
 * disk, what waited on it is refused (capacity), and a close needs no
 * memory. */
static void stay_hibernated(bh_session *s, const bh_error *why)
{
	struct op *q = s->queue;
	s->queue = NULL;
	finish_action(s, why);
	while (q) {
		struct op *n = q->next;
		if (q->kind == OP_CLOSE) {
			end_session(s, BH_END_CLOSED, NULL);
			answer_close(s, q);
		} else {
			refuse_op(q, why);
		}
		op_free(q);
		q = n;
	}
}

static void wake(bh_session *s)
{
	bh_engine *e = s->e;
	bool hibernated = s->state == BH_SESSION_HIBERNATED;
	bh_error *err = NULL;
	struct admit_ask ask = {.kind = ADMIT_WAKE, .principal = s->principal, .tier = s->tier};
	if (hibernated && admit_sandbox(e, &ask, &err) < 0) {
		stay_hibernated(s, err);
		bh_error_free(err);
		return;
	}
	loop_timer_cancel(e->loop, s->sleep_t);
	s->sleep_t = NULL;
	set_state(s, BH_SESSION_WAKING);
	int r = hibernated ? sandbox_restore(e, s->sb, on_woken, s, &err)
			   : sandbox_resume(e, s->sb, on_woken, s, &err);
	if (r < 0) {
		end_session(s, BH_END_MAIN_PROCESS_ENDED, err->msg);
		bh_error_free(err);
	}
}

/* ---- operator actions ---- */

static int start_action(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	if (s->state == BH_SESSION_ENDED) {
		ended_error(s, err);
		return -1;
	}
	if (s->act_cb)
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "another action on this session is in flight");
	s->act_cb = cb;
	s->act_arg = arg;
	return 0;
}

int bh_session_pause(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if (s->state != BH_SESSION_READY || s->queue) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "the session is %s; only an idle one pauses",
				 bh_session_state_name(s->state));
	}
	if (pause_now(s, err) < 0) {
		s->act_cb = NULL;
		return -1;
	}
	return 0;
}

int bh_session_resume(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if (s->state != BH_SESSION_PAUSED && s->state != BH_SESSION_HIBERNATED) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the session is %s, not asleep",
				 bh_session_state_name(s->state));
	}
	wake(s);
	return 0;
}

int bh_session_hibernate(bh_session *s, bh_action_cb cb, void *arg, bh_error **err)
{
	if (start_action(s, cb, arg, err) < 0)
		return -1;
	if ((s->state != BH_SESSION_READY && s->state != BH_SESSION_PAUSED) || s->queue || !s->sb) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "the session is %s; only an idle one hibernates",
				 bh_session_state_name(s->state));
	}
	if (!sandbox_can_hibernate(s->sb)) {
		s->act_cb = NULL;
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED,
				 "the %s tier cannot hibernate on this host (no working CRIU)",
				 bh_tier_name(s->tier));
	}
	loop_timer_cancel(s->e->loop, s->idle_t);
	loop_timer_cancel(s->e->loop, s->sleep_t);
	s->idle_t = s->sleep_t = NULL;
	if (hibernate(s, err) < 0) {
		s->act_cb = NULL;
		return -1;
	}
	return 0;
}

void bh_session_kill(bh_session *s)
{
	end_session(s, BH_END_KILLED, "an operator killed it");
}

void bh_session_get_info(const bh_session *s, struct bh_session_info *o)
{
	uint64_t used = s->awake_used_us + (s->awake_since_us ? now_mono_us() - s->awake_since_us : 0);
	*o = (struct bh_session_info){
		.fingerprint = s->fp,
		.sandbox = s->sandbox_name,
		.state = s->state,
		.tier = s->tier,
		.floor = s->floor,
		.principal = s->principal,
		.owner = s->owner,
		.run_key = s->run_key,
		.calls = s->calls,
		.last_record_sha256 = s->last_record,
		.created_unix_ms = s->created_ms,
		.last_call_unix_ms = s->last_call_ms,
		.expires_unix_ms = (int64_t)now_real_ms() + ((int64_t)s->lifetime_ms - (int64_t)(used / 1000u)),
		.awake_ms = used / 1000u,
		.idle_ms = idle_ms_of(s),
		.end_reason = s->state == BH_SESSION_ENDED ? s->end_reason : BH_END_NONE,
		.from_pool = s->from_pool,
	};
}

size_t bh_engine_sessions(bh_engine *e, bh_session ***out)
{
	size_t n = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		n++;
	bh_session **list = xzalloc((n + 1) * sizeof *list);
	size_t i = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		list[i++] = s;
	*out = list;
	return n;
}

int bh_session_open(bh_engine *e, const struct bh_session_opts *opts, bh_session_open_cb cb,
		    void *arg, bh_session **out, bh_error **err)
{
	*out = NULL;
	struct bh_session_opts none = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN};
	if (!opts)
		opts = &none;
	if (e->closing)
		return bh_fail(err, BH_E_CLOSED, 0, "the engine is shutting down; nothing ran");
	if (!e->store)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT, "this engine has no store");
	const char *bad = validate_owner(opts->owner);
	if (bad)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%s", bad);
	if (opts->lifetime_ms > MAX_LIFETIME_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a lifetime of %u ms is above the %u ms maximum",
				 opts->lifetime_ms, MAX_LIFETIME_MS);
	if (opts->languages >> BH_LANG_COUNT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown language in the hint (mask %#x)",
				 opts->languages);
	if ((opts->tier != BH_TIER_UNKNOWN && (opts->tier < 0 || opts->tier >= BH_TIER_COUNT)) ||
	    opts->floor < BH_TIER_UNKNOWN || opts->floor >= BH_TIER_COUNT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown tier or floor");
	if (admit(e, opts, err) < 0)
		return -1;
	bh_session *s = xzalloc(sizeof *s);
	s->e = e;
	s->created_ms = (int64_t)now_real_ms();
	s->tier = opts->tier;
	s->floor = opts->floor;
	s->languages = opts->languages;
	s->lifetime_ms = opts->lifetime_ms ? opts->lifetime_ms : e->policy.lifetime_ms;
	s->idle_ms = effective_idle_ms(e, opts->idle_ms);
	s->principal = xstrdup(opts->principal);
	s->owner = xstrdup(opts->owner);
	s->run_key = xstrdup(opts->run_key);
	s->open_cb = cb;
	s->open_arg = arg;
	if (random_hex(16, s->id) < 0) {
		free(s->principal), free(s->owner), free(s->run_key), free(s);
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	}
	bh_fingerprint_of(s->id, s->fp);
	if (!engine_tier_decided(e, s->tier)) {
		s->state = BH_SESSION_WAITING;
	} else if (start_open(s, err) < 0) {
		free(s->principal), free(s->owner), free(s->run_key), free(s);
		return -1;
	}
	s->next = e->sessions;
	e->sessions = s;
	*out = s;
	return 0;
}

void sessions_tier_proven(bh_engine *e, enum bh_tier tier)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (s->state != BH_SESSION_WAITING || !engine_tier_decided(e, s->tier) ||
		    (tier != BH_TIER_UNKNOWN && s->tier != tier))
			continue;
		bh_error *err = NULL;
		if (start_open(s, &err) < 0) {
			session_open_failed(s, err);
			bh_error_free(err);
		}
	}
}

/* ---- calls ---- */

/* Relative, below /work, no "..", ".", empty parts or control characters. */
static const char *path_problem(const char *p)
{
	if (!p || !*p)
		return "is empty";
	if (strlen(p) > MAX_PATH_BYTES)
		return "is longer than 4096 bytes";
	if (p[0] == '/')
		return "is absolute";
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return "has a control character";
	const char *part = p;
	for (;;) {
		const char *slash = strchr(part, '/');
		size_t n = slash ? (size_t)(slash - part) : strlen(part);
		if (n == 0)
			return "has an empty part";
		if ((n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
			return "has a . or .. part";
		if (!slash)
			break;
		part = slash + 1;
	}
	return NULL;
}

static int enqueue(bh_session *s, struct op *op, bh_error **err)
{
	if (s->state == BH_SESSION_ENDED) {
		ended_error(s, err);
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
	}
	struct op **pp = &s->queue;
	while (*pp)
		pp = &(*pp)->next;
	*pp = op;
	dispatch(s);
	return 0;
}

int bh_session_run(bh_session *s, const struct bh_cell *cell, bh_cell_cb cb, void *arg,
		   bh_error **err)
{
	if (!cell || !cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a call needs a cell and a callback");
	if (cell->language != BH_LANG_PYTHON && cell->language != BH_LANG_JAVASCRIPT)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "unknown language %d", (int)cell->language);
	if (cell->code_len > MAX_CODE)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the code is %zu bytes, above the %u limit",
				 cell->code_len, MAX_CODE);
	if (cell->timeout_ms > MAX_TIMEOUT_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "timeout %u ms is above the %u ms maximum",
				 cell->timeout_ms, MAX_TIMEOUT_MS);
	if (cell->output_cap > MAX_OUTPUT_CAP)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "output cap %u is above the %u maximum",
				 cell->output_cap, MAX_OUTPUT_CAP);
	if (cell->n_files > MAX_FILES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%zu files is more than %u", cell->n_files,
				 MAX_FILES);
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
	if (total > MAX_FILES_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the files hold %zu bytes, above the %u limit",
				 total, MAX_FILES_BYTES);
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
	op->cell_cb = cb;
	op->arg = arg;
	return enqueue(s, op, err);
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
		answer_close(s, close_op);
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
		refuse_op(waiting, e2);
		bh_error_free(e2);
		op_free(waiting);
	}
	if (s->state == BH_SESSION_WAITING || s->state == BH_SESSION_OPENING) {
		/* Nothing ran yet: end it now; the opening sandbox is closed when it arrives. */
		end_session(s, BH_END_CLOSED, NULL);
		answer_close(s, close_op);
		op_free(close_op);
		return 0;
	}
	close_op->queued_us = now_mono_us();
	struct op **pp = &s->queue;
	while (*pp)
		pp = &(*pp)->next;
	*pp = close_op;
	dispatch(s);
	return 0;
}

int bh_session_list_files(bh_session *s, const char *path, bh_list_cb cb, void *arg, bh_error **err)
{
	const char *why = path && *path ? path_problem(path) : NULL;
	if (why)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "path \"%s\" %s", path, why);
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_LIST;
	op->path = xstrdup(path ? path : "");
	op->list_cb = cb;
	op->arg = arg;
	return enqueue(s, op, err);
}

int bh_session_read_file(bh_session *s, const char *path, uint32_t max_bytes, bh_read_cb cb,
			 void *arg, bh_error **err)
{
	const char *why = path_problem(path);
	if (why)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "path \"%s\" %s", path ? path : "", why);
	struct op *op = xzalloc(sizeof *op);
	op->kind = OP_READ;
	op->path = xstrdup(path);
	op->max_bytes = max_bytes ? max_bytes : 1u << 20;
	op->read_cb = cb;
	op->arg = arg;
	return enqueue(s, op, err);
}

/* ---- the engine's side ---- */

void sessions_close_all(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (s->state == BH_SESSION_HIBERNATED && s->sb) {
			/* An image on disk survives its engine: the next one re-adopts it. */
			loop_timer_cancel(e->loop, s->retention_t);
			s->retention_t = NULL;
			sandbox_detach(e, s->sb);
			s->sb = NULL;
			continue;
		}
		end_session(s, BH_END_SHUTDOWN, NULL);
	}
}

void sessions_hibernate_for_shutdown(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next) {
		if ((s->state != BH_SESSION_READY && s->state != BH_SESSION_PAUSED) || s->queue ||
		    !s->sb || !sandbox_can_hibernate(s->sb))
			continue;
		loop_timer_cancel(e->loop, s->idle_t);
		loop_timer_cancel(e->loop, s->sleep_t);
		s->idle_t = s->sleep_t = NULL;
		bh_error *err = NULL;
		if (hibernate(s, &err) < 0) {
			bh_log(e, BH_LOG_WARN, "session %.12s: hibernate at shutdown: %s", s->fp, err->msg);
			bh_error_free(err);
		}
	}
}

bool sessions_hibernating(bh_engine *e)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATING)
			return true;
	return false;
}

void sessions_free(bh_engine *e)
{
	while (e->sessions) {
		bh_session *s = e->sessions;
		e->sessions = s->next;
		session_free(s);
	}
}

struct reap_ctx {
	bh_engine *e;
	size_t n;
	char (*fps)[65];
};

static void collect_live(void *arg, const char *fp, const char *sandbox, const char *runtime,
			 const char *state, int64_t engine_pid)
{
	struct reap_ctx *c = arg;
	(void)runtime;
	if (!strcmp(state, "hibernated"))
		return; /* re-adopted (or ended) by readopt */
	bh_log(c->e, BH_LOG_WARN,
	       "session %.12s (sandbox %s) was %s under engine %lld, which is gone: reaped", fp,
	       sandbox, state, (long long)engine_pid);
	c->fps = realloc(c->fps, (c->n + 1) * sizeof *c->fps);
	if (!c->fps)
		abort();
	snprintf(c->fps[c->n++], 65, "%s", fp);
}

/* Both ours: reached with no link followed (a linked image would be
 * restored from, and deleted at retention, wherever it points). */
static bool image_and_bundle(bh_engine *e, const char *sandbox)
{
	cleanup_free char *img = xasprintf("%s/images/%s", e->state_dir, sandbox);
	cleanup_free char *cfg = xasprintf("%s/%s/config.json", e->bundles_dir, sandbox);
	cleanup_close int i = open_nofollow(AT_FDCWD, img, O_PATH | O_DIRECTORY, 0);
	cleanup_close int c = open_nofollow(AT_FDCWD, cfg, O_PATH, 0);
	return i >= 0 && c >= 0;
}

struct keep_ctx {
	bh_engine *e;
	const char *sandbox;
	bool keep;
};

static void keep_if(void *arg, const struct store_hibernated_row *r)
{
	struct keep_ctx *c = arg;
	if (!strcmp(r->sandbox, c->sandbox))
		c->keep = true;
}

bool sessions_keeps_bundle(bh_engine *e, const char *sandbox)
{
	struct keep_ctx c = {.e = e, .sandbox = sandbox};
	if (e->store)
		store_hibernated_sessions(e->store, keep_if, &c, NULL);
	return c.keep;
}

/* A hibernated session a previous engine left: re-adopted, so its next call
 * restores it with its variables and files. */
static void readopt(void *arg, const struct store_hibernated_row *r)
{
	bh_engine *e = arg;
	enum bh_tier tier;
	/* The row is input: its name becomes a path only if bulkhead made it. */
	if (!sandbox_name_valid(r->sandbox)) {
		char detail[200];
		snprintf(detail, sizeof detail, "sandbox \"%.64s\" is not a name bulkhead makes",
			 r->sandbox);
		bh_log(e, BH_LOG_WARN,
		       "registry row %.12s: %s (a tampered store?): ended, nothing of it touched",
		       r->fingerprint, detail);
		store_session_end(e->store, r->fingerprint, BH_END_REAPED, detail, NULL);
		store_event(e->store, "invalid_row", r->fingerprint, "", detail);
		return;
	}
	if (bh_tier_parse(r->tier, &tier) < 0 || !image_and_bundle(e, r->sandbox)) {
		store_session_end(e->store, r->fingerprint, BH_END_REAPED,
				  "its hibernation image is gone", NULL);
		return;
	}
	struct sandbox *sb = sandbox_adopt_hibernated(e, tier, r->sandbox);
	if (!sb) {
		store_session_end(e->store, r->fingerprint, BH_END_REAPED,
				  "its tier's runtime is not available to restore it", NULL);
		return;
	}
	bh_session *s = xzalloc(sizeof *s);
	s->e = e;
	own_sandbox(s, sb);
	snprintf(s->fp, sizeof s->fp, "%s", r->fingerprint);
	snprintf(s->sandbox_name, sizeof s->sandbox_name, "%s", r->sandbox);
	s->tier = tier;
	if (bh_tier_parse(r->floor, &s->floor) < 0)
		s->floor = BH_TIER_UNKNOWN;
	s->principal = xstrdup(r->principal);
	s->owner = xstrdup(r->owner);
	s->run_key = xstrdup(r->run_key);
	s->calls = r->calls;
	snprintf(s->last_record, sizeof s->last_record, "%s", r->last_record_sha256);
	s->created_ms = r->created_ms;
	s->last_call_ms = r->last_call_ms;
	s->lifetime_ms = r->lifetime_ms > 0 ? (uint32_t)r->lifetime_ms : e->policy.lifetime_ms;
	s->awake_used_us = (uint64_t)r->awake_ms * 1000u;
	s->claimed = true;
	s->state = BH_SESSION_HIBERNATED;
	int64_t slept = (int64_t)now_real_ms() - r->hibernated_ms;
	int64_t left = (int64_t)e->policy.retention_ms - (slept > 0 ? slept : 0);
	s->retention_t = loop_timer(e->loop, left > 0 ? (uint64_t)left : 0, on_retention, s);
	s->hibernated_ms = r->hibernated_ms;
	s->image_bytes = disk_usage(sb->image_dir);
	s->next = e->sessions;
	e->sessions = s;
	store_event(e->store, "readopted", s->fp, s->sandbox_name, "hibernated");
}

void sessions_reconcile(bh_engine *e)
{
	store_hibernated_sessions(e->store, readopt, e, NULL);
	enforce_images_budget(e, NULL);
	/* We hold the state directory's lock, so every live row was left by a
	 * dead engine; its sandbox died with it (or was just deleted by the
	 * leftover sweep). */
	struct reap_ctx c = {.e = e};
	store_live_sessions(e->store, collect_live, &c, NULL);
	for (size_t i = 0; i < c.n; i++) {
		store_session_end(e->store, c.fps[i], BH_END_REAPED, "its engine died", NULL);
		store_event(e->store, "reaped", c.fps[i], "", "its engine died");
	}
	free(c.fps);
}

/* crash_at is "point" or "point:N" (the Nth time the point is reached). */
void engine_maybe_crash(bh_engine *e, const char *point)
{
	if (!e->crash_at)
		return;
	size_t n = strlen(point);
	if (strncmp(e->crash_at, point, n) || (e->crash_at[n] && e->crash_at[n] != ':'))
		return;
	long nth = e->crash_at[n] == ':' ? strtol(e->crash_at + n + 1, NULL, 10) : 1;
	if (++e->crash_count >= nth)
		raise(SIGKILL);
}
