/* Sessions: one sandbox kept warm for many calls of one conversation.
 *
 * A session owns its sandbox and a queue of at most two operations (the
 * one in flight and one waiting). The id is a capability: only its
 * fingerprint is ever logged or stored.
 *
 * This file is the session itself: its accessors, the one door for its
 * state, its end and its free. The calls are in session_call.c, opening
 * and admission in session_open.c, the clocks and operator actions in
 * session_life.c, the engine's start and close in session_recover.c; they
 * share session_priv.h. */
#include "session_priv.h"

#include <string.h>

#define TOMBSTONE_MS (10u * 60u * 1000u)

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

bh_session *session_create(bh_engine *e)
{
	bh_session *s = xzalloc(sizeof *s);
	s->e = e;
	s->state = BH_SESSION_WAITING; /* born, not changed: no door to pass */
	return s;
}

static void change_state(bh_session *s, enum bh_session_state st, bool persist)
{
	if (s->state == st)
		return;
	const char *from = bh_session_state_name(s->state), *to = bh_session_state_name(st);
	bh_log(s->e, BH_LOG_DEBUG, "session %.12s: %s -> %s", s->fp, from, to);
	/* ready <-> busy happens twice a call: it is not persisted (one
	 * transaction per cell, the record's). */
	bool hot = (s->state == BH_SESSION_READY && st == BH_SESSION_BUSY) ||
		   (s->state == BH_SESSION_BUSY && st == BH_SESSION_READY);
	if (persist && s->e->store && st != BH_SESSION_ENDED && st != BH_SESSION_WAITING && !hot) {
		char detail[64];
		snprintf(detail, sizeof detail, "%s -> %s", from, to);
		store_session_state(s->e->store, s->fp, st, NULL);
		session_event(s, "state", detail); /* ---- ci: attribution ---- */
	}
	s->state = st;
	engine_changed(s->e); /* ---- light ---- */
}

void set_state(bh_session *s, enum bh_session_state st)
{
	change_state(s, st, true);
}

void set_state_quiet(bh_session *s, enum bh_session_state st)
{
	change_state(s, st, false);
}

void op_free(struct op *op)
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
	project_call_free(op->project); /* ---- project ---- */
	free(op->grant); /* ---- egress ---- */
	free(op);
}

void op_refuse(struct op *op, const bh_error *err)
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

void session_ended_error(const bh_session *s, bh_error **err)
{
	assert(err);
	bh_refuse(err, BH_REFUSAL_REQUEST, "the session has ended (%s)%s%s",
		  bh_end_reason_name(s->end_reason),
		  s->end_detail[0] ? ": " : "", s->end_detail);
	(*err)->session_end = s->end_reason;
}

void session_answer_close(bh_session *s, struct op *op)
{
	struct bh_close_result r = {
		.fingerprint = s->fp,
		.calls = s->calls,
		.last_record_sha256 = s->last_record,
		.end_reason = s->end_reason,
	};
	op->close_cb(op->arg, &r, NULL);
}

void session_answer_queue(bh_session *s, const bh_error *err)
{
	struct op *q = s->queue;
	s->queue = NULL;
	while (q) {
		struct op *n = q->next;
		if (q->kind == OP_CLOSE)
			session_answer_close(s, q);
		else
			op_refuse(q, err);
		op_free(q);
		q = n;
	}
}

void session_free(bh_session *s)
{
	if (s->handoff_t)
		loop_timer_cancel(s->e->loop, s->handoff_t);
	if (s->end_retry_t)
		loop_timer_cancel(s->e->loop, s->end_retry_t);
	s->end_retry_t = NULL;
	if (s->end_unstored && s->e->store)
		/* A last try (engine close): else the next engine's sweep ends it. */
		session_store_end(s);
	if (s->handoff && sandbox_alive(s->e, s->handoff))
		sandbox_close(s->e, s->handoff);
	session_egress_detach(s); /* ---- egress ---- */
	free(s->egress_profile);
	free(s->principal);
	free(s->owner);
	free(s->run_key);
	session_live_free(s); /* stream */
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
			engine_changed(e); /* ---- light ---- */
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
	session_store_end(s);
}

/* A session's end the store could not take (its disk full: the close is
 * still answered and the sandbox still goes) is retried every second until
 * it is stored; a row left saying ready would be a ghost to the leak finder
 * and a lost session to the next engine, though nothing of it is alive. */
void session_store_end(bh_session *s)
{
	bh_engine *e = s->e;
	bh_error *err = NULL;
	if (store_session_end(e->store, s->fp, s->end_reason, s->end_detail, &err) == 0) {
		if (s->end_unstored)
			bh_log(e, BH_LOG_INFO, "session %.12s: its end is stored now", s->fp);
		s->end_unstored = false;
		session_event(s, "ended", bh_end_reason_name(s->end_reason)); /* ---- ci ---- */
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
void end_session(bh_session *s, enum bh_end_reason reason, const char *detail)
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
		session_store_end(s);
	bh_log(e, BH_LOG_INFO, "session %.12s ended: %s%s%s", s->fp,
	       bh_end_reason_name(reason), detail ? ": " : "",
	       detail ? detail : "");
	session_egress_detach(s); /* ---- egress: before its sandbox goes ---- */
	if (s->sb) {
		struct sandbox *sb = s->sb;
		s->sb = NULL;
		sb->lost_fn = NULL;
		sandbox_close(e, sb);
		/* The row says ended; the kill and delete are in flight. */
		engine_maybe_crash(e, "close");
	}
	bh_error *err = NULL;
	session_ended_error(s, &err);
	session_answer_queue(s, err);
	bh_error_free(err);
	err = NULL;
	if (s->act_cb) {
		bh_action_cb cb = s->act_cb;
		s->act_cb = NULL;
		session_ended_error(s, &err);
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

uint32_t session_idle_ms(const bh_session *s)
{
	return s->idle_ms ? s->idle_ms : s->e->policy.idle_ms;
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
		.idle_ms = session_idle_ms(s),
		.end_reason = s->state == BH_SESSION_ENDED ? s->end_reason : BH_END_NONE,
		.from_pool = s->from_pool,
		/* ---- replay: refused calls ---- */
		.refused = s->refused,
		.last_refusal = s->last_refusal,
		.branched_from = s->branched_from, /* ---- density ---- */
		.branched_after = s->branched_after,
	};
	session_info_truth(s, o);
	/* ---- egress ---- */
	o->egress_profile = s->egress_profile ? s->egress_profile : "";
	o->egress_requests = s->egress_requests;
	o->egress_last = s->egress_last;
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
