/* bulkhead.v1.OperatorService: what the console and an operator's tools
 * see and do. Sessions are named by fingerprint — an operator never holds a
 * session id, so it can steer a sandbox but never run code in it.
 * Messages are Connect JSON like plimsoll's; docs/api.md lists them. */
#include "daemon_priv.h"

#include "wire_operator.h"

#include <stdlib.h>
#include <string.h>

/* The request, read the daemon's lenient way (wire_operator_requests.c); -1
 * once the call is refused. */
static int request_of(struct call *c, struct wire_operator_request *req)
{
	struct wire_status st;
	if (wire_operator_decode_request(c->body ? c->body : "{}", c->body ? c->body_len : 2, req,
					 &st) < 0) {
		call_refuse(c, st.code, st.reason, "%s", st.msg);
		return -1;
	}
	return 0;
}

/* The session this fingerprint names, or an answer saying there is none. */
static bh_session *find_fp(struct call *c, const struct wire_operator_request *req)
{
	if (!req->session || strlen(req->session) != 64) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "session: give the session's fingerprint (64 hex digits)");
		return NULL;
	}
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(c->srv->e, &list);
	bh_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), req->session))
			found = list[i];
	free(list);
	if (!found)
		call_refuse(c, WIRE_NOT_FOUND, WIRE_REFUSAL_REQUEST, "no session has that fingerprint");
	else
		snprintf(c->session_fp, sizeof c->session_fp, "%s", req->session);
	return found;
}

static void list_sessions(struct call *c, const struct wire_operator_request *req)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(c->srv->e, &list);
	struct bh_session_info *info = calloc(n ? n : 1, sizeof *info);
	struct wire_operator_sessions out = {.sessions = calloc(n ? n : 1, sizeof *out.sessions)};
	if (!info || !out.sessions)
		abort();
	for (size_t i = 0; i < n; i++) {
		bh_session_get_info(list[i], &info[i]);
		if (req->state && strcmp(req->state, bh_session_state_name(info[i].state)))
			continue;
		out.sessions[out.n] = wire_operator_session_of(&info[i]);
		/* ---- truth: a list stays light; GetSession gives the code ---- */
		out.sessions[out.n++].call_code = "";
	}
	call_answer_json(c, wire_operator_encode_sessions(&out));
	free(out.sessions);
	free(info);
	free(list);
}

static void get_session(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	struct wire_operator_session out = wire_operator_session_of(&i);
	call_answer_json(c, wire_operator_encode_session(&out));
}

/* ---- actions ---- */

static void on_action(void *arg, const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			call_answer_json(c, wire_operator_encode_done());
		}
	}
	audit_event(c->srv, c->procedure + strlen(WIRE_OPERATOR_SERVICE "/"), c->session_fp,
		    err ? err->msg : "done");
	call_wake(c);
}

static void action(struct call *c, const struct wire_operator_request *req,
		   int (*fn)(bh_session *, const struct bh_actor *, bh_action_cb, void *, bh_error **))
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	struct bh_actor who = call_actor(c); /* ---- ci: attribution ---- */
	if (fn(s, &who, on_action, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void pause_session(struct call *c, const struct wire_operator_request *req)
{
	action(c, req, bh_session_pause_as);
}

static void resume_session(struct call *c, const struct wire_operator_request *req)
{
	action(c, req, bh_session_resume_as);
}

static void hibernate_session(struct call *c, const struct wire_operator_request *req)
{
	action(c, req, bh_session_hibernate_as);
}

/* ---- density: a branch's children, ids and all (an operator hands them
 * to the agent; a call still needs the parent's principal's token) ---- */
static void on_branched(void *arg, const struct bh_branch_result *r, const bh_error *err)
{
	struct call *c = arg;
	char detail[160];
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_branch_child kids[BH_BRANCH_MAX];
			struct wire_operator_branched out = {.children = kids,
							     .n = r->n,
							     .parent_paused_us = r->parent_paused_us,
							     .after = r->after};
			snprintf(out.after_sha256, sizeof out.after_sha256, "%s", r->after_sha256);
			for (size_t i = 0; i < r->n && i < BH_BRANCH_MAX; i++) {
				snprintf(kids[i].session, sizeof kids[i].session, "%s",
					 r->children[i].fingerprint);
				snprintf(kids[i].session_id, sizeof kids[i].session_id, "%s",
					 r->children[i].session_id);
				snprintf(kids[i].sandbox, sizeof kids[i].sandbox, "%s",
					 r->children[i].sandbox);
			}
			call_answer_json(c, wire_operator_encode_branched(&out));
		}
	}
	if (err)
		snprintf(detail, sizeof detail, "%s", err->msg);
	else
		snprintf(detail, sizeof detail, "into %zu children", r->n);
	audit_event(c->srv, "Branch", c->session_fp, detail);
	call_wake(c);
}

static void branch_session(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	struct bh_actor who = call_actor(c);
	if (bh_session_branch_as(s, &who, req->count, on_branched, c, &err) < 0)
		call_not_started(c, err);
}

static void on_closed(void *arg, const struct bh_close_result *res, const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_closed out = {
				.session = res->fingerprint,
				.calls = res->calls,
				.last_record_sha256 = res->last_record_sha256,
				.end_reason = bh_end_reason_name(res->end_reason),
			};
			call_answer_json(c, wire_operator_encode_closed(&out));
		}
	}
	audit_event(c->srv, "Close", c->session_fp, err ? err->msg : "closed by an operator");
	call_wake(c);
}

static void close_session(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	struct bh_actor who = call_actor(c); /* ---- ci: attribution ---- */
	if (bh_session_close_as(s, &who, on_closed, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void kill_session(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	struct bh_actor who = call_actor(c); /* ---- ci: attribution ---- */
	bh_session_kill_as(s, &who);
	audit_event(c->srv, "Kill", c->session_fp, "killed by an operator");
	call_answer_json(c, wire_operator_encode_done());
}

/* ---- leaks, gc, evidence ---- */

static void leaks(struct call *c, const struct wire_operator_request *req)
{
	(void)req;
	struct wire_operator_leaks out = {0};
	out.n = bh_engine_leaks(c->srv->e, &out.leaks);
	c->srv->metrics.leaks_found += out.n;
	call_answer_json(c, wire_operator_encode_leaks(WIRE_LEAKS_FOUND, &out));
	free(out.leaks);
}

static void gc(struct call *c, const struct wire_operator_request *req)
{
	struct wire_operator_leaks out = {0};
	out.n = req->dry_run ? bh_engine_leaks(c->srv->e, &out.leaks)
			     : bh_engine_gc(c->srv->e, &out.leaks);
	if (!req->dry_run) {
		c->srv->metrics.leaks_reaped += out.n;
		for (size_t i = 0; i < out.n; i++)
			audit_event(c->srv, "reaped", out.leaks[i].fingerprint,
				    bh_leak_kind_name(out.leaks[i].kind));
	}
	call_answer_json(c, wire_operator_encode_leaks(
				    req->dry_run ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED, &out));
	free(out.leaks);
}

enum bh_tier daemon_served_tier(const struct server *s)
{
	enum bh_tier best = bh_engine_best_tier(s->e);
	enum bh_tier pinned = s->cfg->tier > BH_TIER_NONE ? s->cfg->tier : BH_TIER_UNKNOWN;
	return pinned != BH_TIER_UNKNOWN && best > pinned ? pinned : best;
}

static void evidence(struct call *c, const struct wire_operator_request *req)
{
	(void)req;
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(c->srv->e, &t);
	struct wire_operator_tier *tiers = calloc(n ? n : 1, sizeof *tiers);
	if (!tiers)
		abort();
	/* ---- truth: a daemon pinned to a tier (serve --tier) gives its
	 * sessions that tier even when its engine proved a stronger one: the
	 * stronger one is not offered, and `strongest` is the tier sessions get,
	 * whoever asks (B14; the console read it from Describe, which an
	 * operator-only token cannot call). ---- */
	enum bh_tier pinned = c->srv->cfg->tier > BH_TIER_NONE ? c->srv->cfg->tier : BH_TIER_UNKNOWN;
	char pinned_reason[128];
	snprintf(pinned_reason, sizeof pinned_reason,
		 "proven, but this daemon gives its sessions the %s tier (serve --tier)",
		 bh_tier_name(pinned));
	for (size_t i = 0; i < n; i++) {
		bool above = pinned != BH_TIER_UNKNOWN && t[i].tier > pinned && t[i].offered;
		tiers[i] = (struct wire_operator_tier){
			.tier = bh_tier_name(t[i].tier),
			.offered = t[i].offered && !above,
			.cached = t[i].cached,
			.runtime = t[i].runtime,
			.runtime_version = t[i].version,
			.reason = above ? pinned_reason : t[i].reason,
			.environment = bh_engine_environment(c->srv->e, t[i].tier),
			.evidence = t[i].lines,
			.n_evidence = t[i].n_lines,
		};
	}
	struct wire_operator_evidence out = {
		.strongest = bh_tier_name(daemon_served_tier(c->srv)),
		.proving = !bh_engine_proven(c->srv->e),
		.tiers = tiers,
		.n_tiers = n,
	};
	call_answer_json(c, wire_operator_encode_evidence(&out));
	free(tiers);
}

/* ---- history ---- */

/* `newest` (or a `beforeId`): the page is the newest rows before the
 * cursor, paging back from the end, instead of the oldest after afterId. */
static bool newest_of(const struct wire_operator_request *req)
{
	return req->newest || req->before_id > 0;
}

/* A page's cursors: its last id (for an empty page, the afterId it was
 * read after) and its first (0 for an empty page). */
static void cursors(int64_t after, int64_t first, int64_t last, size_t n, int64_t *next_after,
		    int64_t *next_before)
{
	*next_after = n ? last : after;
	*next_before = n ? first : 0;
}

/* A page read that failed (rc < 0: err says why) is answered with its
 * failure; true when it was. */
static bool refused_read(struct call *c, int rc, bh_error *err)
{
	if (rc >= 0)
		return false;
	call_refuse(c, WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "%s", err->msg);
	bh_error_free(err);
	return true;
}

static int add_record(void *arg, const struct bh_record_row *r)
{
	wire_operator_records_add(arg, r);
	return 0;
}

static void list_records(struct call *c, const struct wire_operator_request *req)
{
	if (req->has_session && (!req->session || strlen(req->session) != 64)) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "session: give a session's fingerprint (64 hex digits)");
		return;
	}
	const char *session = req->has_session ? req->session : NULL;
	if (req->has_sequence && (!session || req->sequence == 0)) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "sequence: give it with a session, a positive number (that session's record)");
		return;
	}
	struct wire_operator_records page = {0};
	bh_error *err = NULL;
	int rc = req->has_sequence
			 ? bh_engine_record_at(c->srv->e, session, req->sequence, add_record, &page, &err)
		 : newest_of(req) ? bh_engine_records_newest(c->srv->e, session, req->before_id,
							     req->limit, add_record, &page, &err)
				  : bh_engine_records(c->srv->e, session, req->after_id, req->limit,
						      add_record, &page, &err);
	if (!refused_read(c, rc, err)) {
		cursors(req->after_id, page.n ? page.rows[0].id : 0, page.n ? page.rows[page.n - 1].id : 0, page.n,
			&page.next_after_id, &page.next_before_id);
		call_answer_json(c, wire_operator_encode_records(&page));
	}
	wire_operator_records_free(&page);
}

static int add_event(void *arg, const struct bh_event *ev)
{
	wire_operator_events_add(arg, ev);
	return 0;
}

static void answer_event_page(struct call *c, int64_t after, struct wire_operator_events *page)
{
	cursors(after, page->n ? page->events[0].id : 0, page->n ? page->events[page->n - 1].id : 0,
		page->n, &page->next_after_id, &page->next_before_id);
	call_answer_json(c, wire_operator_encode_events(page));
}

/* The newest events before the cursor: answered at once, never waited on. */
static void answer_newest_events(struct call *c, int64_t before, size_t limit)
{
	struct wire_operator_events page = {0};
	bh_error *err = NULL;
	int rc = bh_engine_events_newest(c->srv->e, before, limit, add_event, &page, &err);
	if (!refused_read(c, rc, err))
		answer_event_page(c, 0, &page);
	wire_operator_events_free(&page);
}

/* Answers with the events after the cursor; false when there are none yet. */
static bool answer_events(struct call *c, int64_t after, size_t limit, bool even_if_none)
{
	struct wire_operator_events page = {0};
	bh_error *err = NULL;
	int rc = bh_engine_events(c->srv->e, after, limit, add_event, &page, &err);
	if (rc >= 0 && !page.n && !even_if_none) {
		wire_operator_events_free(&page);
		return false;
	}
	if (!refused_read(c, rc, err))
		answer_event_page(c, after, &page);
	wire_operator_events_free(&page);
	return true;
}

/* A long poll: ListEvents with waitMs parks until an event or the wait ends.
 * The server holds the parked calls (s->waiters). */
struct event_wait {
	struct call *c;
	int64_t after;
	size_t limit;
	uint64_t until_ms;
	struct event_wait *next;
	/* stream: a FollowCell parked the same way answers through this (NULL:
	 * a ListEvents); false when it has nothing to say yet */
	bool (*answer)(struct event_wait *w, bool even_if_none);
	char fp[65];
	uint64_t sequence, out_after, err_after;
	/* ---- light: a procedure parked through operator_park ---- */
	operator_park_fn park;
	void *park_arg;
	void (*park_free)(void *arg);
};

static void wait_free(void *p)
{
	struct event_wait *w = p;
	struct event_wait **pp = &w->c->srv->waiters;
	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	if (w->park_free) /* ---- light ---- */
		w->park_free(w->park_arg);
	free(w);
}

static void list_events(struct call *c, const struct wire_operator_request *req)
{
	if (newest_of(req)) {
		if (req->wait_ms > 0) {
			call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
				    "waitMs waits for events after afterId; it does not go with newest or "
				    "beforeId");
			return;
		}
		answer_newest_events(c, req->before_id, req->limit);
		return;
	}
	if (answer_events(c, req->after_id, req->limit, req->wait_ms == 0))
		return;
	struct event_wait *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	struct server *s = c->srv;
	*w = (struct event_wait){.c = c, .after = req->after_id, .limit = req->limit,
				 .until_ms = now_mono_ms() + req->wait_ms, .next = s->waiters};
	s->waiters = w;
	call_pending(c, w, wait_free);
}

bool operator_waiting(const struct server *s)
{
	return s->waiters != NULL;
}

void operator_poll_waiters(struct server *s, bool closing)
{
	uint64_t now = now_mono_ms();
	for (struct event_wait *w = s->waiters, *next; w; w = next) {
		next = w->next;
		struct call *c = w->c;
		bool final = c->gone || closing || now >= w->until_ms;
		bool done = w->answer ? c->gone || w->answer(w, final)
			    : final   ? (c->gone || answer_events(c, w->after, w->limit, true))
				      : answer_events(c, w->after, w->limit, false);
		if (done)
			call_wake(c); /* frees w through the call's ctx */
	}
}

/* ---- stream: FollowCell, ListCells ---- */

/* The session a parked FollowCell names, looked up again at each look: it
 * may have been forgotten meanwhile. */
static bh_session *session_by_fp(struct server *srv, const char *fp)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(srv->e, &list);
	bh_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), fp))
			found = list[i];
	free(list);
	return found;
}

/* News for a cursor (sequence, offsets): a newer cell than the cursor's,
 * bytes past it in its cell, or its cell's end. A cursor of a cell not
 * begun yet (the one after a cell seen done) waits for it. */
static bool follow_answer(struct event_wait *w, bool even_if_none)
{
	struct call *c = w->c;
	bh_session *s = session_by_fp(c->srv, w->fp);
	struct bh_cell_output o = {.record_sha256 = "", .code = ""};
	if (s)
		bh_session_output(s, w->sequence, w->out_after, w->err_after, &o);
	bool news = o.sequence &&
		    (o.sequence > w->sequence ||
		     (o.sequence == w->sequence && (o.out_len || o.err_len || !o.running)));
	if (!news && !even_if_none)
		return false;
	struct wire_operator_follow f =
		news ? wire_operator_follow_of(&o)
		     : (struct wire_operator_follow){
			       .sequence = w->sequence,
			       .running = o.sequence == w->sequence && o.running,
			       .stdout_offset = w->out_after,
			       .stderr_offset = w->err_after,
			       .language = "",
			       .record_sha256 = "",
		       };
	call_answer_json(c, wire_operator_encode_follow(&f));
	return true;
}

static void follow_cell(struct call *c, const struct wire_operator_request *req)
{
	if (!find_fp(c, req))
		return;
	struct event_wait *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	*w = (struct event_wait){.c = c, .answer = follow_answer, .sequence = req->sequence,
				 .out_after = req->stdout_after, .err_after = req->stderr_after,
				 .until_ms = now_mono_ms() + req->wait_ms};
	snprintf(w->fp, sizeof w->fp, "%s", req->session);
	if (follow_answer(w, req->wait_ms == 0)) {
		free(w);
		return;
	}
	/* Parked with the ListEvents waiters: looked at by the same poll,
	 * no thread and no timer of its own. */
	struct server *s = c->srv;
	w->next = s->waiters;
	s->waiters = w;
	call_pending(c, w, wait_free);
}

/* ---- light: another procedure's long poll, parked with these ---- */

static bool park_answer(struct event_wait *w, bool even_if_none)
{
	return w->park(w->c, w->park_arg, even_if_none);
}

void operator_park(struct call *c, uint32_t wait_ms, operator_park_fn answer, void *arg,
		   void (*arg_free)(void *arg))
{
	struct event_wait *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	*w = (struct event_wait){.c = c, .answer = park_answer, .park = answer, .park_arg = arg,
				 .park_free = arg_free, .until_ms = now_mono_ms() + wait_ms};
	if (answer(c, arg, wait_ms == 0)) {
		w->park_free = NULL;
		free(w);
		if (arg_free)
			arg_free(arg);
		return;
	}
	struct server *s = c->srv;
	w->next = s->waiters;
	s->waiters = w;
	call_pending(c, w, wait_free);
}

static int add_cell(void *arg, const struct bh_cell_row *row)
{
	wire_operator_cells_add(arg, row);
	return 0;
}

/* A page of cells carries their output (up to 512 KiB each): smaller
 * pages than the records'. */
#define CELLS_PAGE_MAX 50u

static void list_cells(struct call *c, const struct wire_operator_request *req)
{
	if (!req->session || strlen(req->session) != 64) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "session: give the session's fingerprint (64 hex digits)");
		return;
	}
	snprintf(c->session_fp, sizeof c->session_fp, "%s", req->session);
	size_t limit = req->limit < CELLS_PAGE_MAX ? req->limit : CELLS_PAGE_MAX;
	struct wire_operator_cells page = {0};
	bh_error *err = NULL;
	int rc = bh_engine_cells(c->srv->e, req->session, req->before_sequence, limit, add_cell,
				 &page, &err);
	if (!refused_read(c, rc, err)) {
		page.next_before_sequence =
			page.n == limit && page.n ? page.cells[page.n - 1].sequence : 0;
		call_answer_json(c, wire_operator_encode_cells(&page));
	}
	wire_operator_cells_free(&page);
}

/* ---- files ---- */

static void on_list(void *arg, const struct bh_file_entry *entries, size_t n, bool more,
		    const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_files out = {.entries = entries, .n = n, .more = more};
			call_answer_json(c, wire_operator_encode_files(&out));
		}
	}
	call_wake(c);
}

/* The session, and a path that is a string (absent: /work itself). */
static bh_session *file_of(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (s && !req->path) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "path: a string");
		return NULL;
	}
	return s;
}

static void list_files(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = file_of(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_list_files(s, req->path, on_list, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void on_read(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_file out = {.content = data, .len = len, .size = size,
							 .truncated = truncated};
			call_answer_json(c, wire_operator_encode_file(&out));
		}
	}
	call_wake(c);
}

static void read_file(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = file_of(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_read_file(s, req->path, req->max_bytes, on_read, c, &err) < 0) {
		call_not_started(c, err);
	}
}

/* ---- procs ---- */

static void on_processes(void *arg, const struct bh_process *procs, size_t n, bool more,
			 const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_processes out = {.procs = procs, .n = n, .more = more};
			call_answer_json(c, wire_operator_encode_processes(&out));
		}
	}
	call_wake(c);
}

/* Answered beside the call in flight: the engine asks the init directly. */
static void list_processes(struct call *c, const struct wire_operator_request *req)
{
	bh_session *s = find_fp(c, req);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_processes(s, on_processes, c, &err) < 0) {
		call_not_started(c, err);
	}
}

/* ---- usage ---- */

/* Every live session's usage and the host's figures, in one answer: the
 * console asks once per refresh, not once per row. */
static void usage(struct call *c, const struct wire_operator_request *req)
{
	(void)req;
	struct wire_operator_usage out = {.version = BULKHEAD_VERSION};
	out.n = bh_engine_usage(c->srv->e, &out.host, &out.sessions);
	call_answer_json(c, wire_operator_encode_usage(&out));
	free(out.sessions);
}

void operator_service(struct call *c, const char *method)
{
	static const struct {
		const char *name;
		void (*fn)(struct call *c, const struct wire_operator_request *req);
	} methods[] = {
		{"ListSessions", list_sessions},
		{"GetSession", get_session},
		{"Pause", pause_session},
		{"Resume", resume_session},
		{"Hibernate", hibernate_session},
		{"Branch", branch_session}, /* ---- density ---- */
		{"Close", close_session},
		{"Kill", kill_session},
		{"Leaks", leaks},
		{"Gc", gc},
		{"Evidence", evidence},
		{"ListRecords", list_records},
		{"ListEvents", list_events},
		{"ListFiles", list_files},
		{"ReadFile", read_file},
		{"ListProcesses", list_processes}, /* ---- procs ---- */
		/* ---- usage ---- */
		{"Usage", usage},
		/* ---- stream ---- */
		{"FollowCell", follow_cell},
		{"ListCells", list_cells},
	};
	/* ---- approvals ---- */
	if (operator_approvals(c, method))
		return; /* its request is read strictly, by its own decoder */
	/* ---- light ---- */
	if (operator_overview(c, method))
		return; /* likewise */
	/* ---- remote ---- */
	if (operator_forensics(c, method))
		return; /* likewise */
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		if (strcmp(method, methods[i].name))
			continue;
		struct wire_operator_request req;
		if (request_of(c, &req) == 0) {
			methods[i].fn(c, &req);
			wire_operator_request_free(&req);
		}
		return;
	}
	call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported",
			  WIRE_OPERATOR_SERVICE " has no such procedure");
}
