/* A daemon, through src/client: every request is an operator call (or, for
 * the console's own sandboxes, a plimsoll session call) answered inside the
 * console's loop from libcurl's multi socket interface. */
#include "source.h"
#include "client.h"
#include "base.h" /* ---- approvals: xzalloc ---- */
#include "source_overview.h" /* ---- light ---- */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_MINE 64

struct attached {
	struct ui_source base;
	bh_client *c;
	char target[512];
	char tiers[160];
	char served[12]; /* the tier the daemon gives its sessions (Evidence); "" until known */
	int pending;
	struct {
		char fp[65];
		bh_client_session *s;
	} mine[MAX_MINE];
	size_t n_mine;
	/* ---- truth ---- */
	/* The link: down since the first call no answer came back to, up
	 * again with the next answer of any kind. */
	bool down;
	char down_since[16], down_why[256];
	/* ---- light: one Overview for the header and the view (B27) ---- */
	struct overview overview;
	/* ---- remote: the daemon's Leftovers, as the header's line ---- */
	char leftovers[512];
};

static void link_note(struct attached *m, const struct bh_client_error *err);

static struct attached *A(struct ui_source *s)
{
	return (struct attached *)s;
}

static void describe(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "attached to %s", A(s)->target);
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "%s", *A(s)->tiers ? A(s)->tiers : "...");
}

static int poll_fds(struct ui_source *s, struct pollfd *fds, int max)
{
	overview_flush(&A(s)->overview); /* ---- light ---- */
	size_t n = bh_client_pollfds(A(s)->c, fds, (size_t)max);
	return (int)(n < (size_t)max ? n : (size_t)max);
}

static int timeout_ms(struct ui_source *s)
{
	if (overview_due(&A(s)->overview)) /* ---- light ---- */
		return 0; /* an Overview to send */
	return bh_client_timeout_ms(A(s)->c);
}

static void process(struct ui_source *s)
{
	/* The loop polled without telling us which socket: let libcurl look
	 * at all of them (it is cheap) and at its timers. */
	struct pollfd fds[32];
	size_t n = bh_client_pollfds(A(s)->c, fds, 32);
	if (n > 32)
		n = 32;
	if (n)
		poll(fds, (nfds_t)n, 0);
	bh_client_process_pollfds(A(s)->c, fds, n);
	bh_client_process_timeout(A(s)->c);
	overview_read(&A(s)->overview); /* ---- light ---- */
}

static int pending(struct ui_source *s)
{
	return A(s)->pending;
}

/* ---- operator calls: typed answers, decoded by the client (wire_operator.h) ---- */

/* One request in flight: the view's callback and its argument. */
struct ask {
	struct attached *m;
	void *arg;
	union {
		ui_sessions_fn sessions;
		ui_records_fn records;
		ui_events_fn events;
		ui_leaks_fn leaks;
		ui_tiers_fn tiers;
		ui_done_fn done;
		ui_usage_fn usage; /* ---- usage ---- */
		ui_processes_fn processes; /* ---- procs ---- */
		ui_files_fn files;
		ui_file_fn file;
	} cb;
};

static struct ask *ask_new(struct attached *m, void *arg)
{
	struct ask *a = calloc(1, sizeof *a);
	if (!a)
		abort();
	a->m = m;
	a->arg = arg;
	m->pending++;
	return a;
}

/* The answer arrived (or the call never started): the request is no longer
 * pending when the view hears of it, so the view's callback gets this copy. */
static struct ask ask_end(struct ask *a)
{
	struct ask copy = *a;
	a->m->pending--;
	free(a);
	return copy;
}

/* Why a call could not be made, into why (the error is freed). */
static const char *not_started(struct bh_client_error *err, char *why, size_t n)
{
	snprintf(why, n, "%s", err ? err->message : "the call could not be made");
	bh_client_error_free(err);
	return why;
}

static bool is_mine(struct attached *m, const char *fp)
{
	for (size_t i = 0; i < m->n_mine; i++)
		if (!strcmp(m->mine[i].fp, fp))
			return true;
	return false;
}

static void on_records(void *arg, struct wire_operator_records *res,
		       const struct bh_client_error *err)
{
	struct ask *a = arg;
	link_note(a->m, err);
	if (err) {
		struct ask done = ask_end(a);
		done.cb.records(done.arg, NULL, 0, err->message);
		return;
	}
	struct ui_record *rows = calloc(res->n ? res->n : 1, sizeof *rows);
	if (!rows)
		abort();
	for (size_t i = 0; i < res->n; i++) {
		const struct wire_operator_record_row *o = &res->rows[i];
		ui_record_from(&rows[i], o->id, &o->record, o->language, o->flags, o->exit_code,
			       o->duration_us);
	}
	struct ask done = ask_end(a);
	done.cb.records(done.arg, rows, res->n, NULL);
	free(rows);
}

/* A history page's request (limit 0: the console's 1000). */
static struct wire_operator_request page_request(const char *session, const struct ui_page *page)
{
	struct wire_operator_request req = {.session = session,
					    .limit = page->limit ? (uint32_t)page->limit : 1000};
	if (page->newest) {
		req.newest = true;
		req.before_id = page->before;
	} else {
		req.after_id = page->after;
	}
	return req;
}

static void ask_records(struct attached *m, const struct wire_operator_request *req,
			ui_records_fn cb, void *arg)
{
	struct ask *a = ask_new(m, arg);
	a->cb.records = cb;
	struct bh_client_error *err = NULL;
	if (bh_client_list_records_async(m->c, req, on_records, a, &err) < 0) {
		char why[512];
		ask_end(a);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	struct wire_operator_request req = page_request(session, page);
	ask_records(A(s), &req, cb, arg);
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	struct wire_operator_request req = {.session = session, .has_sequence = true,
					    .sequence = sequence};
	ask_records(A(s), &req, cb, arg);
}

static void on_events(void *arg, struct wire_operator_events *res,
		      const struct bh_client_error *err)
{
	struct ask *a = arg;
	link_note(a->m, err);
	if (err) {
		struct ask done = ask_end(a);
		done.cb.events(done.arg, NULL, 0, err->message);
		return;
	}
	struct ui_event *rows = calloc(res->n ? res->n : 1, sizeof *rows);
	if (!rows)
		abort();
	for (size_t i = 0; i < res->n; i++) {
		const struct bh_event *o = &res->events[i];
		struct ui_event *e = &rows[i];
		e->id = o->id;
		e->at_ms = o->at_unix_ms;
		snprintf(e->kind, sizeof e->kind, "%s", o->kind);
		snprintf(e->session, sizeof e->session, "%s", o->session);
		snprintf(e->sandbox, sizeof e->sandbox, "%s", o->sandbox);
		snprintf(e->detail, sizeof e->detail, "%s", o->detail);
		/* ---- ci: attribution ---- */
		snprintf(e->actor, sizeof e->actor, "%s", o->actor);
		snprintf(e->request_id, sizeof e->request_id, "%s", o->request_id);
	}
	struct ask done = ask_end(a);
	done.cb.events(done.arg, rows, res->n, NULL);
	free(rows);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	struct ask *a = ask_new(A(s), arg);
	a->cb.events = cb;
	struct wire_operator_request req = page_request(NULL, page);
	struct bh_client_error *err = NULL;
	if (bh_client_list_events_async(A(s)->c, &req, on_events, a, &err) < 0) {
		char why[512];
		ask_end(a);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void on_leaks(void *arg, struct wire_operator_leaks *res, const struct bh_client_error *err)
{
	link_note(((struct ask *)arg)->m, err);
	struct ask done = ask_end(arg);
	if (err)
		done.cb.leaks(done.arg, NULL, 0, err->message);
	else
		done.cb.leaks(done.arg, res->leaks, res->n, NULL);
}

static void ask_leaks(struct ui_source *s, bool reap, ui_leaks_fn cb, void *arg)
{
	struct ask *a = ask_new(A(s), arg);
	a->cb.leaks = cb;
	struct bh_client_error *err = NULL;
	overview_stale(&A(s)->overview); /* ---- light ---- */
	int rc = reap ? bh_client_gc_async(A(s)->c, false, on_leaks, a, &err)
		      : bh_client_leaks_async(A(s)->c, on_leaks, a, &err);
	if (rc < 0) {
		char why[512];
		ask_end(a);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	ask_leaks(s, false, cb, arg);
}

static void reap(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	ask_leaks(s, true, cb, arg);
}

static void on_tiers(void *arg, struct wire_operator_evidence *res,
		     const struct bh_client_error *err)
{
	struct ask *a = arg;
	struct attached *m = a->m;
	link_note(m, err);
	if (err) {
		struct ask done = ask_end(a);
		done.cb.tiers(done.arg, NULL, 0, err->message);
		return;
	}
	/* The daemon says which tier its sessions get (serve --tier, else the
	 * strongest) and marks stronger ones not offered: the same answer
	 * whatever the token's scopes (B14). */
	snprintf(m->served, sizeof m->served, "%s", res->strongest ? res->strongest : "");
	struct ui_tier *rows = calloc(res->n_tiers ? res->n_tiers : 1, sizeof *rows);
	if (!rows)
		abort();
	size_t used = 0;
	m->tiers[0] = '\0';
	for (size_t i = 0; i < res->n_tiers; i++) {
		const struct wire_operator_tier *o = &res->tiers[i];
		struct ui_tier *t = &rows[i];
		snprintf(t->tier, sizeof t->tier, "%s", o->tier);
		snprintf(t->runtime, sizeof t->runtime, "%s", o->runtime);
		snprintf(t->version, sizeof t->version, "%s", o->runtime_version);
		snprintf(t->reason, sizeof t->reason, "%s", o->reason);
		snprintf(t->environment, sizeof t->environment, "%s", o->environment);
		t->offered = o->offered;
		t->cached = o->cached;
		if (t->offered && used < sizeof m->tiers)
			used += (size_t)snprintf(m->tiers + used, sizeof m->tiers - used, "%s%s",
						 used ? " " : "", t->tier);
		for (size_t j = 0; j < o->n_evidence && t->n_lines < UI_TIER_LINES; j++) {
			const struct bh_evidence_line *l = &o->evidence[j];
			snprintf(t->lines[t->n_lines].name, sizeof t->lines[0].name, "%s", l->name);
			snprintf(t->lines[t->n_lines].value, sizeof t->lines[0].value, "%s", l->value);
			snprintf(t->lines[t->n_lines].expect, sizeof t->lines[0].expect, "%s", l->expect);
			t->lines[t->n_lines].ok = l->ok;
			t->n_lines++;
		}
	}
	struct ask done = ask_end(a);
	done.cb.tiers(done.arg, rows, res->n_tiers, NULL);
	free(rows);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	struct ask *a = ask_new(A(s), arg);
	a->cb.tiers = cb;
	struct bh_client_error *err = NULL;
	if (bh_client_evidence_async(A(s)->c, on_tiers, a, &err) < 0) {
		char why[512];
		ask_end(a);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void tiers_quiet(void *arg, const struct ui_tier *rows, size_t n, const char *err)
{
	(void)arg, (void)rows, (void)n, (void)err; /* on_tiers kept the summary */
}

static void on_done(void *arg, const struct bh_client_error *err)
{
	link_note(((struct ask *)arg)->m, err);
	overview_stale(&((struct ask *)arg)->m->overview); /* ---- light ---- */
	struct ask done = ask_end(arg);
	done.cb.done(done.arg, err ? err->message : NULL);
}

static void on_closed(void *arg, struct wire_operator_closed *res, const struct bh_client_error *err)
{
	(void)res; /* the view shows the session's end from the list */
	on_done(arg, err);
}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	static const struct {
		const char *verb;
		enum bh_client_action action;
	} map[] = {{"pause", BH_CLIENT_PAUSE},
		   {"resume", BH_CLIENT_RESUME},
		   {"hibernate", BH_CLIENT_HIBERNATE},
		   {"kill", BH_CLIENT_KILL}};
	struct ask *a = ask_new(A(s), arg);
	a->cb.done = cb;
	struct bh_client_error *err = NULL;
	int rc = 1;
	overview_stale(&A(s)->overview); /* ---- light: what it shows will change ---- */
	if (!strcmp(verb, "close"))
		rc = bh_client_close_async(A(s)->c, fp, on_closed, a, &err);
	for (size_t i = 0; rc > 0 && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(verb, map[i].verb))
			rc = bh_client_act_async(A(s)->c, map[i].action, fp, on_done, a, &err);
	if (rc != 0) {
		char why[512];
		ask_end(a);
		cb(arg, rc > 0 ? "unknown action" : not_started(err, why, sizeof why));
	}
}

/* ---- the console's own sandboxes: plimsoll sessions it holds the ids of ---- */

struct open_call {
	struct attached *m;
	ui_opened_fn cb;
	void *arg;
};

static void on_open(void *arg, bh_client_session *cs, const struct bh_client_error *err)
{
	struct open_call *o = arg;
	struct attached *m = o->m;
	link_note(m, err);
	overview_stale(&m->overview); /* ---- light ---- */
	m->pending--;
	if (err) {
		o->cb(o->arg, NULL, err->message);
	} else {
		struct bh_client_session_view v;
		bh_client_session_get(cs, &v);
		if (m->n_mine < MAX_MINE) {
			snprintf(m->mine[m->n_mine].fp, sizeof m->mine[0].fp, "%s", v.fingerprint);
			m->mine[m->n_mine++].s = cs;
		} else {
			bh_client_session_free(cs);
		}
		o->cb(o->arg, v.fingerprint, NULL);
	}
	free(o);
}

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	struct attached *m = A(s);
	/* The daemon decides the tier (B14): one asked for that it does not
	 * give is refused here, naming what it offers, not silently changed. */
	if (tier && *tier && strcmp(tier, m->served)) {
		char why[512];
		if (!*m->served)
			snprintf(why, sizeof why, "the daemon's tiers are not known yet (its Evidence has "
						  "not answered); ask again, or leave the tier out");
		else
			snprintf(why, sizeof why,
				 "this daemon gives its sandboxes the %s tier, not %.16s (offered: %s); "
				 "the daemon decides the tier (serve --tier), a floor asks for at least one",
				 m->served, tier, *m->tiers ? m->tiers : "none");
		cb(arg, NULL, why);
		return;
	}
	struct bh_client_open_opts o = {.floor = BH_TIER_UNKNOWN, .languages = 1u << BH_LANG_PYTHON,
					.owner = owner && *owner ? owner : NULL};
	if (floor && *floor && bh_tier_parse(floor, &o.floor) < 0) {
		cb(arg, NULL, "unknown floor");
		return;
	}
	struct open_call *oc = calloc(1, sizeof *oc);
	if (!oc)
		abort();
	*oc = (struct open_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	overview_stale(&m->overview); /* ---- light ---- */
	if (bh_client_open_async(m->c, &o, on_open, oc, &err) < 0) {
		m->pending--;
		cb(arg, NULL, err ? err->message : "the call could not be made");
		bh_client_error_free(err);
		free(oc);
	}
}

struct run_call {
	struct attached *m;
	ui_answer_fn cb;
	void *arg;
};

static void on_cell(void *arg, struct wire_session_run_response *res, const struct bh_client_error *err)
{
	struct run_call *r = arg;
	link_note(r->m, err);
	overview_stale(&r->m->overview); /* ---- light ---- */
	r->m->pending--;
	if (err) {
		r->cb(r->arg, NULL, err->message);
	} else {
		const struct bh_result_fields *f = &res->run.result;
		char *out = strndup((const char *)f->out, f->out_len);
		char *errout = strndup((const char *)f->err, f->err_len);
		struct ui_cell_answer a = {
			.exit_code = f->exit_code, .timed_out = f->timed_out,
			.interpreter_started = f->interpreter_started,
			.interpreter_ended = f->interpreter_ended,
			.stdout_truncated = f->stdout_truncated, .stderr_truncated = f->stderr_truncated,
			.out = out, .err = errout,
			.wall_us = (uint64_t)res->run.duration_ms * 1000u,
			.duration_us = (uint64_t)res->run.duration_ms * 1000u,
			.sequence = res->run.record.sequence,
		};
		snprintf(a.record, sizeof a.record, "%s", res->run.record.record_sha256);
		if (res->ended != WIRE_END_OPEN)
			snprintf(a.ended, sizeof a.ended, "%s", wire_session_end_name(res->ended));
		r->cb(r->arg, &a, NULL);
		free(out);
		free(errout);
	}
	free(r);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	struct attached *m = A(s);
	bh_client_session *cs = NULL;
	for (size_t i = 0; i < m->n_mine; i++)
		if (!strcmp(m->mine[i].fp, fp))
			cs = m->mine[i].s;
	if (!cs) {
		cb(arg, NULL, "cells run only in sandboxes this console opened (another client's "
			      "session is that client's)");
		return;
	}
	struct bh_client_cell cell = {.code = code};
	if (bh_language_parse(language, &cell.language) < 0) {
		cb(arg, NULL, "unknown language");
		return;
	}
	struct run_call *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	*r = (struct run_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	overview_stale(&m->overview); /* ---- light ---- */
	if (bh_client_session_run_async(cs, &cell, on_cell, r, &err) < 0) {
		m->pending--;
		cb(arg, NULL, err ? err->message : "the call could not be made");
		bh_client_error_free(err);
		free(r);
	}
}

/* ---- procs ---- */

static void on_processes(void *arg, struct wire_operator_processes *res,
			 const struct bh_client_error *err)
{
	struct ask l = ask_end(arg);
	if (err)
		l.cb.processes(l.arg, NULL, 0, false, err->message);
	else
		l.cb.processes(l.arg, res->procs, res->n, res->more, NULL);
}

static void processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg)
{
	struct ask *l = ask_new(A(s), arg);
	l->cb.processes = cb;
	struct bh_client_error *err = NULL;
	if (bh_client_list_processes_async(A(s)->c, fp, on_processes, l, &err) < 0) {
		char why[512];
		ask_end(l);
		cb(arg, NULL, 0, false, not_started(err, why, sizeof why));
	}
}

static void on_files(void *arg, struct wire_operator_files *res, const struct bh_client_error *err)
{
	struct ask l = ask_end(arg);
	if (err)
		l.cb.files(l.arg, NULL, 0, false, err->message);
	else
		l.cb.files(l.arg, res->entries, res->n, res->more, NULL);
}

static void list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
		       void *arg)
{
	struct ask *l = ask_new(A(s), arg);
	l->cb.files = cb;
	struct bh_client_error *err = NULL;
	overview_stale(&A(s)->overview); /* ---- light: the session turns busy for it ---- */
	if (bh_client_list_files_async(A(s)->c, fp, path, on_files, l, &err) < 0) {
		char why[512];
		ask_end(l);
		cb(arg, NULL, 0, false, not_started(err, why, sizeof why));
	}
}

static void on_file(void *arg, struct wire_operator_file *res, const struct bh_client_error *err)
{
	struct ask l = ask_end(arg);
	if (err)
		l.cb.file(l.arg, NULL, 0, 0, false, err->message);
	else
		l.cb.file(l.arg, res->content, res->len, res->size, res->truncated, NULL);
}

static void read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
		      ui_file_fn cb, void *arg)
{
	struct ask *l = ask_new(A(s), arg);
	l->cb.file = cb;
	struct bh_client_error *err = NULL;
	overview_stale(&A(s)->overview); /* ---- light: the session turns busy for it ---- */
	if (bh_client_read_file_async(A(s)->c, fp, path, max, on_file, l, &err) < 0) {
		char why[512];
		ask_end(l);
		cb(arg, NULL, 0, 0, false, not_started(err, why, sizeof why));
	}
}

/* ---- stream: ListCells and FollowCell ---- */

struct cells_call {
	struct attached *m;
	ui_cells_fn cb;
	void *arg;
};

static void on_cells(void *arg, const char *json, const struct bh_client_error *err)
{
	struct cells_call *c = arg;
	c->m->pending--;
	struct wire_operator_cells page = {0};
	struct wire_status st;
	if (err) {
		c->cb(c->arg, NULL, 0, err->message);
	} else if (wire_operator_decode_cells(json, strlen(json), &page, &st) < 0) {
		c->cb(c->arg, NULL, 0, st.msg);
	} else {
		struct ui_cell *rows = calloc(page.n ? page.n : 1, sizeof *rows);
		if (!rows)
			abort();
		for (size_t i = 0; i < page.n; i++) {
			const struct wire_operator_cell *o = &page.cells[i];
			struct ui_cell *r = &rows[i];
			*r = (struct ui_cell){.sequence = o->sequence, .exit_code = o->exit_code,
					      .duration_us = o->duration_us,
					      .started_ms = o->started_unix_ms,
					      .ended_ms = o->ended_unix_ms,
					      .code = (const char *)o->code, .code_len = o->code_len,
					      .out = (const char *)o->out, .out_len = o->out_len,
					      .err = (const char *)o->err, .err_len = o->err_len};
			snprintf(r->language, sizeof r->language, "%s", o->language);
			snprintf(r->flags, sizeof r->flags, "%s", o->flags);
			snprintf(r->unanswered, sizeof r->unanswered, "%s", o->unanswered);
			snprintf(r->record, sizeof r->record, "%s", o->record_sha256);
		}
		c->cb(c->arg, rows, page.n, NULL);
		free(rows);
		wire_operator_cells_free(&page);
	}
	free(c);
}

static void cells(struct ui_source *s, const char *fp, uint64_t before, size_t limit,
		  ui_cells_fn cb, void *arg)
{
	struct attached *m = A(s);
	struct wire_operator_request req = {.session = fp, .before_sequence = before,
					    .limit = (uint32_t)limit};
	char *body = wire_operator_encode_request(&req);
	struct cells_call *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	*c = (struct cells_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_operator_call_async(m->c, "ListCells", body, on_cells, c, &err) < 0) {
		m->pending--;
		char why[256];
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
		free(c);
	}
	free(body);
}

struct follow_call {
	ui_follow_fn cb;
	void *arg;
};

static void on_follow(void *arg, struct wire_operator_follow *res,
		      const struct bh_client_error *err)
{
	struct follow_call *c = arg;
	if (err) {
		c->cb(c->arg, NULL, err->message);
	} else {
		struct ui_follow f = {
			.sequence = res->sequence, .running = res->running, .done = res->done,
			.answered = res->answered, .started_ms = res->started_unix_ms,
			.out_offset = res->stdout_offset, .err_offset = res->stderr_offset,
			.code = (const char *)res->code, .code_len = res->code_len,
			.out = (const char *)res->out, .out_len = res->out_len,
			.err = (const char *)res->err, .err_len = res->err_len,
			.exit_code = res->exit_code, .timed_out = res->timed_out,
			.stdout_truncated = res->stdout_truncated,
			.stderr_truncated = res->stderr_truncated, .duration_us = res->duration_us,
		};
		snprintf(f.language, sizeof f.language, "%s", res->language);
		snprintf(f.record, sizeof f.record, "%s", res->record_sha256);
		c->cb(c->arg, &f, NULL);
	}
	free(c);
}

/* Not pending: a follower's long poll may wait as long as it likes. */
static void follow(struct ui_source *s, const char *fp, uint64_t seq, uint64_t out_after,
		   uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg)
{
	struct follow_call *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	*c = (struct follow_call){.cb = cb, .arg = arg};
	struct bh_client_follow_cursor cur = {.sequence = seq, .stdout_after = out_after,
					      .stderr_after = err_after};
	struct bh_client_error *err = NULL;
	if (bh_client_follow_cell_async(A(s)->c, fp, &cur, wait_ms, on_follow, c, &err) < 0) {
		char why[256];
		cb(arg, NULL, not_started(err, why, sizeof why));
		free(c);
	}
}

static void source_free(struct ui_source *s)
{
	struct attached *m = A(s);
	/* The console's sandboxes die with it, as in the embedded mode. */
	for (size_t i = 0; i < m->n_mine; i++) {
		struct wire_close_session_response out;
		struct bh_client_error *err = NULL;
		if (bh_client_session_close(m->mine[i].s, &out, &err) == 0)
			wire_close_session_response_free(&out);
		bh_client_error_free(err);
		bh_client_session_free(m->mine[i].s);
	}
	overview_close(&m->overview); /* ---- light: the poll out abandoned ---- */
	bh_client_free(m->c);
	overview_free(&m->overview);
	free(m);
}

/* ---- truth: the link, describe's one session, the check at start ---- */

/* No HTTP answer at all: nothing answered (refused, reset, timed out). An
 * answer the client refused (data_loss) came from something that answers. */
static bool unanswered(const struct bh_client_error *err)
{
	return err && err->http_status == 0 &&
	       (err->code == WIRE_UNAVAILABLE || err->code == WIRE_DEADLINE_EXCEEDED);
}

static void link_note(struct attached *m, const struct bh_client_error *err)
{
	if (unanswered(err)) {
		if (!m->down) {
			time_t now = time(NULL);
			struct tm tm;
			gmtime_r(&now, &tm);
			strftime(m->down_since, sizeof m->down_since, "%H:%M:%S", &tm);
		}
		m->down = true;
		snprintf(m->down_why, sizeof m->down_why, "%s", err->message ? err->message : "");
		return;
	}
	m->down = false;
}

static bool link_down(struct ui_source *s, char *since, size_t since_n, char *why, size_t why_n)
{
	struct attached *m = A(s);
	if (m->down) {
		snprintf(since, since_n, "%s", m->down_since);
		snprintf(why, why_n, "%s", m->down_why);
	}
	return m->down;
}

struct detail_call {
	struct attached *m;
	ui_detail_fn cb;
	void *arg;
};

static void on_detail(void *arg, struct wire_operator_session *res, const struct bh_client_error *err)
{
	struct detail_call *d = arg;
	link_note(d->m, err);
	d->m->pending--;
	if (err) {
		d->cb(d->arg, NULL, NULL, err->message);
	} else {
		struct ui_session row;
		ui_session_from(&row, res);
		row.mine = is_mine(d->m, row.fp);
		d->cb(d->arg, &row, res->call_code ? res->call_code : "", NULL);
	}
	free(d);
}

static void session_detail(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg)
{
	struct attached *m = A(s);
	struct detail_call *d = calloc(1, sizeof *d);
	if (!d)
		abort();
	*d = (struct detail_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_get_session_async(m->c, fp, on_detail, d, &err) < 0) {
		char why[512];
		m->pending--;
		cb(arg, NULL, NULL, not_started(err, why, sizeof why));
		free(d);
	}
}

/* Before the screen opens: a daemon must answer on the target and take the
 * token as an operator's (B2, B4). An answer it gave that does not decode
 * is no reason not to start: the views say what was wrong with it. */
static char *check_at_start(struct attached *m, const char *target, const char *token)
{
	char *out = NULL;
	struct bh_client_error *err = NULL;
	if (bh_client_operator_call(m->c, "ListSessions", "{}", &out, &err) == 0) {
		free(out); /* read, not judged: the views decode what they ask */
		return NULL;
	}
	char *why = NULL;
	int rc = 0;
	if (unanswered(err))
		rc = asprintf(&why, "nothing answered on %s (%s); is `bulkhead serve` running there?",
			      target, err->message);
	else if (err->code == WIRE_UNAUTHENTICATED && !(token && *token))
		rc = asprintf(&why, "the daemon on %s wants a token and none was given: put a token "
				    "with the operator scope in $%s",
			      target, BH_CLIENT_TOKEN_ENV);
	else if (err->code == WIRE_UNAUTHENTICATED)
		rc = asprintf(&why, "the daemon on %s refused the token in $%s: %s", target,
			      BH_CLIENT_TOKEN_ENV, err->message);
	else if (err->code == WIRE_PERMISSION_DENIED)
		rc = asprintf(&why, "the token in $%s lacks the operator scope the console needs "
				    "(the daemon on %s said: %s)",
			      BH_CLIENT_TOKEN_ENV, target, err->message);
	bh_client_error_free(err);
	if (rc < 0)
		abort();
	return why;
}

/* ---- approvals ---- */

struct approvals_ask {
	struct attached *m;
	ui_approvals_fn cb;
	void *arg;
};

static void on_approvals(void *arg, const struct wire_operator_approvals *res,
			 const struct bh_client_error *err)
{
	struct approvals_ask done = *(struct approvals_ask *)arg;
	done.m->pending--;
	free(arg);
	if (err) {
		done.cb(done.arg, NULL, 0, err->message);
		return;
	}
	struct ui_approval *rows = xzalloc((res->n ? res->n : 1) * sizeof *rows);
	struct ui_approval_file *files = xzalloc((res->n_files ? res->n_files : 1) * sizeof *files);
	size_t f = 0;
	for (size_t i = 0; i < res->n; i++) {
		const struct wire_operator_approval *h = &res->approvals[i];
		struct ui_approval *r = &rows[i];
		snprintf(r->id, sizeof r->id, "%s", h->id);
		snprintf(r->procedure, sizeof r->procedure, "%s", h->procedure);
		snprintf(r->principal, sizeof r->principal, "%s", h->principal);
		snprintf(r->run_key, sizeof r->run_key, "%s", h->run_key);
		snprintf(r->owner, sizeof r->owner, "%s", h->owner);
		snprintf(r->session, sizeof r->session, "%s", h->session);
		snprintf(r->tier, sizeof r->tier, "%s", h->isolation);
		snprintf(r->kind, sizeof r->kind, "%s", h->kind);
		snprintf(r->language, sizeof r->language, "%s", h->language);
		snprintf(r->request, sizeof r->request, "%s", h->request_sha256);
		r->code = h->code;
		r->code_bytes = h->code_bytes;
		r->code_omitted = h->code_omitted;
		r->held_ms = h->held_unix_ms;
		r->deadline_ms = h->deadline_unix_ms;
		r->files = files + f;
		/* The codec checked that every file names a held call. */
		for (size_t k = 0; k < res->n_files; k++) {
			if (strcmp(res->files[k].approval, h->id))
				continue;
			struct ui_approval_file *o = &files[f++];
			snprintf(o->name, sizeof o->name, "%s", res->files[k].name);
			o->size = res->files[k].size;
			o->binary = res->files[k].binary;
			o->truncated = res->files[k].truncated;
			o->text = res->files[k].text;
			r->n_files++;
		}
	}
	done.cb(done.arg, rows, res->n, NULL);
	free(files);
	free(rows);
}

static void approvals(struct ui_source *s, ui_approvals_fn cb, void *arg)
{
	struct approvals_ask *a = xzalloc(sizeof *a);
	*a = (struct approvals_ask){A(s), cb, arg};
	A(s)->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_list_approvals_async(A(s)->c, on_approvals, a, &err) < 0) {
		char why[512];
		A(s)->pending--;
		free(a);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void decide(struct ui_source *s, const char *id, bool approve, const char *reason,
		   ui_done_fn cb, void *arg)
{
	struct ask *a = ask_new(A(s), arg);
	a->cb.done = cb;
	struct bh_client_error *err = NULL;
	overview_stale(&A(s)->overview); /* ---- light ---- */
	if (bh_client_decide_approval_async(A(s)->c, id, approve, reason, on_done, a, &err) < 0) {
		char why[512];
		ask_end(a);
		cb(arg, not_started(err, why, sizeof why));
	}
}

/* ---- usage ---- */
/* ---- light: the sessions, the usage and the held calls' count come from
 * one Overview (source_overview.c) ---- */
static void usage(struct ui_source *s, ui_usage_fn cb, void *arg)
{
	overview_usage(&A(s)->overview, cb, arg);
}

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	overview_sessions(&A(s)->overview, cb, arg);
}

static void forget_kept(struct ui_source *s)
{
	overview_stale(&A(s)->overview);
}

static void approvals_waiting(struct ui_source *s, ui_count_fn cb, void *arg)
{
	overview_waiting(&A(s)->overview, cb, arg);
}

static void overview_note(void *owner, const struct bh_client_error *err)
{
	link_note(owner, err);
}

static bool overview_mine(void *owner, const char *fp)
{
	return is_mine(owner, fp);
}

/* ---- inflight, capture: remote — the forensics procedures, answered by
 * the daemon's engine (docs/api.md, Forensics) ---- */

/* One forensics request in flight: the view's callback and its argument. */
struct forensic_ask {
	struct attached *m;
	void *arg;
	union {
		ui_inflight_fn inflight;
		ui_captured_fn captured;
		ui_search_fn search;
		ui_leaks_fn leaks;
	} cb;
	char dir[1100]; /* capture: the folder asked for, for a refusal's answer */
};

static struct forensic_ask *forensic_new(struct attached *m, void *arg)
{
	struct forensic_ask *a = xzalloc(sizeof *a);
	a->m = m;
	a->arg = arg;
	m->pending++;
	return a;
}

static struct forensic_ask forensic_end(struct forensic_ask *a, const struct bh_client_error *err)
{
	struct forensic_ask copy = *a;
	link_note(a->m, err);
	a->m->pending--;
	free(a);
	return copy;
}

static void on_intents(void *arg, const struct wire_operator_intents *res,
		       const struct bh_client_error *err)
{
	struct forensic_ask done = forensic_end(arg, err);
	if (err) {
		done.cb.inflight(done.arg, NULL, 0, err->message);
		return;
	}
	struct bh_inflight *rows = xzalloc((res->n ? res->n : 1) * sizeof *rows);
	for (size_t i = 0; i < res->n; i++)
		wire_operator_intent_as_inflight(&res->intents[i], &rows[i]);
	done.cb.inflight(done.arg, rows, res->n, NULL);
	free(rows);
}

static void inflight(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg)
{
	struct forensic_ask *a = forensic_new(A(s), arg);
	a->cb.inflight = cb;
	struct bh_client_error *err = NULL;
	if (bh_client_intents_async(A(s)->c, fp, on_intents, a, &err) < 0) {
		char why[512];
		forensic_end(a, NULL);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static void on_captured(void *arg, const struct wire_operator_captured *res,
			const struct bh_client_error *err)
{
	struct forensic_ask done = forensic_end(arg, err);
	if (err)
		done.cb.captured(done.arg, done.dir, NULL, err->message);
	else
		done.cb.captured(done.arg, res->dir, res->manifest_sha256, NULL);
}

/* The daemon writes the folder on its own host, below its --capture-root. */
static void capture(struct ui_source *s, const char *target, const char *dir,
		    ui_captured_fn cb, void *arg)
{
	struct forensic_ask *a = forensic_new(A(s), arg);
	a->cb.captured = cb;
	snprintf(a->dir, sizeof a->dir, "%s", dir);
	struct wire_operator_capture_request req = {.target = target, .dir = dir};
	overview_stale(&A(s)->overview); /* ---- light ---- */
	struct bh_client_error *err = NULL;
	if (bh_client_capture_async(A(s)->c, &req, on_captured, a, &err) < 0) {
		char why[512];
		forensic_end(a, NULL);
		cb(arg, dir, NULL, not_started(err, why, sizeof why));
	}
}

static void on_hits(void *arg, const struct wire_operator_hits *res,
		    const struct bh_client_error *err)
{
	struct forensic_ask done = forensic_end(arg, err);
	if (err) {
		done.cb.search(done.arg, NULL, 0, err->message);
		return;
	}
	struct ui_search_rows x = {0};
	for (size_t i = 0; i < res->n; i++)
		ui_collect_search_hit(&x, &res->hits[i]);
	done.cb.search(done.arg, x.r, x.n, NULL);
	free(x.r);
}

static void search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg)
{
	struct forensic_ask *a = forensic_new(A(s), arg);
	a->cb.search = cb;
	struct bh_client_error *err = NULL;
	if (bh_client_search_async(A(s)->c, query, BH_SEARCH_MAX, on_hits, a, &err) < 0) {
		char why[512];
		forensic_end(a, NULL);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

/* What the daemon's engine found a dead engine left, for the header: asked
 * at attach and again after each reap. */
static void on_leftovers(void *arg, const struct wire_operator_leftovers *res,
			 const struct bh_client_error *err)
{
	struct attached *m = arg;
	m->pending--;
	link_note(m, err);
	if (res)
		bh_leftovers_text(&res->l, m->leftovers, sizeof m->leftovers);
}

static void ask_leftovers(struct attached *m)
{
	struct bh_client_error *err = NULL;
	m->pending++;
	if (bh_client_leftovers_async(m->c, on_leftovers, m, &err) < 0) {
		m->pending--;
		bh_client_error_free(err); /* the header keeps what it said */
	}
}

static void leftovers(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "%s", A(s)->leftovers);
}

static void on_reaped(void *arg, struct wire_operator_leaks *res, const struct bh_client_error *err)
{
	struct forensic_ask done = forensic_end(arg, err);
	if (err)
		done.cb.leaks(done.arg, NULL, 0, err->message);
	else
		done.cb.leaks(done.arg, res->leaks, res->n, NULL);
	ask_leftovers(done.m);
}

/* The daemon's one reap of the chosen findings, in this console's
 * principal's name (the token's). */
static void reap_chosen(struct ui_source *s, const struct bh_leak *chosen, size_t n,
			ui_leaks_fn cb, void *arg)
{
	struct forensic_ask *a = forensic_new(A(s), arg);
	a->cb.leaks = cb;
	overview_stale(&A(s)->overview); /* ---- light ---- */
	struct bh_client_error *err = NULL;
	if (bh_client_reap_async(A(s)->c, chosen, n, false, on_reaped, a, &err) < 0) {
		char why[512];
		forensic_end(a, NULL);
		cb(arg, NULL, 0, not_started(err, why, sizeof why));
	}
}

static const struct ui_source_ops attached_ops = {
	.kind = "attached",
	.has_engine = true,
	.describe = describe,
	.tier_summary = tier_summary,
	.poll_fds = poll_fds,
	.timeout_ms = timeout_ms,
	.process = process,
	.pending = pending,
	.sessions = sessions,
	.records = records,
	.record_at = record_at,
	.events = events,
	.leaks = leaks,
	.reap = reap,
	.tiers = tiers,
	.action = action,
	.open = open_session,
	.run = run,
	.free = source_free,
	/* ---- truth ---- */
	.session_detail = session_detail,
	.link_down = link_down,
	/* ---- procs ---- */
	.processes = processes,
	.list_files = list_files,
	.read_file = read_file,
	.approvals = approvals, /* ---- approvals ---- */
	.decide = decide,
	.usage = usage, /* ---- usage ---- */
	.cells = cells,   /* stream */
	.follow = follow, /* stream */
	.capture = capture, /* ---- capture: remote ---- */
	.search = search,
	.approvals_waiting = approvals_waiting, /* ---- light ---- */
	.forget_kept = forget_kept,
	/* ---- inflight: remote, the daemon's Leftovers, Reap and ListIntents ---- */
	.leftovers = leftovers,
	.reap_chosen = reap_chosen,
	.inflight = inflight,
};

struct ui_source *ui_source_attached(const char *target, const char *token, char **why)
{
	struct bh_client_options o = {.target = target, .token = token};
	return ui_source_attached_with(&o, why);
}

/* ---- tls ---- */
struct ui_source *ui_source_attached_with(const struct bh_client_options *opts, char **why)
{
	const char *target = opts->target, *token = opts->token;
	struct attached *m = calloc(1, sizeof *m);
	if (!m)
		abort();
	m->base.ops = &attached_ops;
	struct bh_client_options o = *opts;
	struct bh_client_error *err = NULL;
	if (bh_client_new(&o, &m->c, &err) < 0) {
		if (why && asprintf(why, "%s", err ? err->message : "cannot make a client") < 0)
			*why = NULL;
		bh_client_error_free(err);
		free(m);
		return NULL;
	}
	snprintf(m->target, sizeof m->target, "%s", target);
	/* ---- light ---- */
	m->overview = (struct overview){.c = m->c, .owner = m, .note = overview_note,
					.mine = overview_mine, .pending = &m->pending};
	char *refused = check_at_start(m, target, token);
	if (refused) {
		if (why)
			*why = refused;
		else
			free(refused);
		bh_client_free(m->c);
		free(m);
		return NULL;
	}
	/* The header's tier summary, and the tier the daemon gives its
	 * sessions, come from the daemon's evidence. */
	tiers(&m->base, tiers_quiet, NULL);
	ask_leftovers(m); /* ---- remote ---- */
	return &m->base;
}
