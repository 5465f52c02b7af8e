/* The console's own engine: it proves the tiers, opens sandboxes and owns
 * them; the console's loop polls the engine's descriptor. */
#include "source.h"
#include "record.h"
#include "wire_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONSOLE_PRINCIPAL "console"
#define MAX_MINE 64

struct embedded {
	struct ui_source base;
	bh_engine *e;
	char state_dir[512];
	bool read_only; /* inflight */
	int pending;
	struct {
		char fp[65];
		bh_session *s;
	} mine[MAX_MINE];
	size_t n_mine;
};

static struct embedded *E(struct ui_source *s)
{
	return (struct embedded *)s;
}

static void describe(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "embedded engine on %s", E(s)->state_dir);
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	bh_engine *e = E(s)->e;
	if (!bh_engine_proven(e)) {
		snprintf(buf, n, "proving tiers...");
		return;
	}
	const struct bh_tier_report *t = NULL;
	size_t k = bh_engine_tiers(e, &t);
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < k; i++)
		if (t[i].offered && used < n)
			used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? " " : "",
						 bh_tier_name(t[i].tier));
	if (!used) /* inflight: --readonly starts no sandbox, so proves nothing */
		snprintf(buf, n, "%s", E(s)->read_only ? "none (read-only: nothing runs)" : "no tier offered");
}

static int poll_fds(struct ui_source *s, struct pollfd *fds, int max)
{
	if (max < 1)
		return 0;
	fds[0] = (struct pollfd){.fd = bh_engine_fd(E(s)->e), .events = POLLIN};
	return 1;
}

static int timeout_ms(struct ui_source *s)
{
	return bh_engine_timeout_ms(E(s)->e);
}

static void process(struct ui_source *s)
{
	bh_engine_process(E(s)->e);
}

static int pending(struct ui_source *s)
{
	return E(s)->pending + (bh_engine_proven(E(s)->e) ? 0 : 1);
}

static bh_session *mine(struct embedded *m, const char *fp)
{
	for (size_t i = 0; i < m->n_mine; i++)
		if (!strcmp(m->mine[i].fp, fp))
			return m->mine[i].s;
	return NULL;
}

static bh_session *by_fp(struct embedded *m, const char *fp)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(m->e, &list);
	bh_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), fp))
			found = list[i];
	free(list);
	return found;
}

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	struct embedded *m = E(s);
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(m->e, &list);
	struct ui_session *rows = calloc(n ? n : 1, sizeof *rows);
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info in;
		bh_session_get_info(list[i], &in);
		struct ui_session *r = &rows[i];
		struct wire_operator_session o = wire_operator_session_of(&in);
		ui_session_from(r, &o);
		r->mine = mine(m, in.fingerprint) != NULL;
	}
	free(list);
	cb(arg, rows, n, NULL);
	free(rows);
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	struct ui_record_rows x = {0};
	bh_error *err = NULL;
	int rc = page->newest ? bh_engine_records_newest(E(s)->e, session, page->before, page->limit,
							 ui_collect_record, &x, &err)
			      : bh_engine_records(E(s)->e, session, page->after, page->limit,
						  ui_collect_record, &x, &err);
	ui_answer_records(cb, arg, rc, &x, err);
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	struct ui_record_rows x = {0};
	bh_error *err = NULL;
	int rc = bh_engine_record_at(E(s)->e, session, sequence, ui_collect_record, &x, &err);
	ui_answer_records(cb, arg, rc, &x, err);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	struct ui_event_rows x = {0};
	bh_error *err = NULL;
	int rc = page->newest ? bh_engine_events_newest(E(s)->e, page->before, page->limit,
							ui_collect_event, &x, &err)
			      : bh_engine_events(E(s)->e, page->after, page->limit, ui_collect_event, &x,
						 &err);
	ui_answer_events(cb, arg, rc, &x, err);
}

static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	struct bh_leak *l = NULL;
	size_t n = bh_engine_leaks(E(s)->e, &l);
	cb(arg, l, n, NULL);
	free(l);
}

static void reap(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	struct bh_leak *l = NULL;
	struct bh_actor console = {.name = BH_ACTOR_CONSOLE}; /* ---- remote ---- */
	size_t n = bh_engine_reap_as(E(s)->e, &console, NULL, 0, false, &l);
	cb(arg, l, n, NULL);
	free(l);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	bh_engine *e = E(s)->e;
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(e, &t);
	struct ui_tier *rows = calloc(n ? n : 1, sizeof *rows);
	for (size_t i = 0; i < n; i++) {
		struct ui_tier *r = &rows[i];
		snprintf(r->tier, sizeof r->tier, "%s", bh_tier_name(t[i].tier));
		snprintf(r->runtime, sizeof r->runtime, "%s", t[i].runtime ? t[i].runtime : "");
		snprintf(r->version, sizeof r->version, "%s", t[i].version ? t[i].version : "");
		snprintf(r->reason, sizeof r->reason, "%s", t[i].reason ? t[i].reason : "");
		snprintf(r->environment, sizeof r->environment, "%s", bh_engine_environment(e, t[i].tier));
		r->offered = t[i].offered;
		r->cached = t[i].cached;
		for (size_t j = 0; j < t[i].n_lines && j < UI_TIER_LINES; j++) {
			snprintf(r->lines[j].name, sizeof r->lines[j].name, "%s", t[i].lines[j].name);
			snprintf(r->lines[j].value, sizeof r->lines[j].value, "%s", t[i].lines[j].value);
			snprintf(r->lines[j].expect, sizeof r->lines[j].expect, "%s", t[i].lines[j].expect);
			r->lines[j].ok = t[i].lines[j].ok;
			r->n_lines = j + 1;
		}
	}
	cb(arg, rows, n, NULL);
	free(rows);
}

/* ---- actions: they finish later, through the engine's loop ---- */

struct pending_done {
	struct embedded *m;
	ui_done_fn cb;
	void *arg;
};

static void on_action(void *arg, const bh_error *err)
{
	struct pending_done *p = arg;
	p->m->pending--;
	p->cb(p->arg, err ? err->msg : NULL);
	free(p);
}

static void on_closed(void *arg, const struct bh_close_result *res, const bh_error *err)
{
	(void)res;
	on_action(arg, err);
}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	struct embedded *m = E(s);
	bh_session *ss = by_fp(m, fp);
	if (!ss) {
		cb(arg, "no session has that fingerprint any more");
		return;
	}
	/* ---- ci: attribution: the embedded console acts as itself ---- */
	const struct bh_actor me = {.name = BH_ACTOR_CONSOLE};
	if (!strcmp(verb, "kill")) {
		bh_session_kill_as(ss, &me);
		cb(arg, NULL);
		return;
	}
	struct pending_done *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	*p = (struct pending_done){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	bh_error *err = NULL;
	int r = !strcmp(verb, "pause")	   ? bh_session_pause_as(ss, &me, on_action, p, &err)
		: !strcmp(verb, "resume")    ? bh_session_resume_as(ss, &me, on_action, p, &err)
		: !strcmp(verb, "hibernate") ? bh_session_hibernate_as(ss, &me, on_action, p, &err)
		: !strcmp(verb, "close")     ? bh_session_close_as(ss, &me, on_closed, p, &err)
					     : -2;
	if (r < 0) {
		m->pending--;
		free(p);
		cb(arg, r == -2 ? "unknown action" : err ? err->msg : "failed");
		bh_error_free(err);
	}
}

struct pending_open {
	struct embedded *m;
	ui_opened_fn cb;
	void *arg;
};

static void on_open(void *arg, bh_session *ss, const bh_error *err)
{
	struct pending_open *p = arg;
	p->m->pending--;
	if (err) {
		p->cb(p->arg, NULL, err->msg);
	} else {
		struct embedded *m = p->m;
		if (m->n_mine < MAX_MINE) {
			snprintf(m->mine[m->n_mine].fp, sizeof m->mine[m->n_mine].fp, "%s",
				 bh_session_fingerprint(ss));
			m->mine[m->n_mine++].s = ss;
		}
		p->cb(p->arg, bh_session_fingerprint(ss), NULL);
	}
	free(p);
}

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	struct embedded *m = E(s);
	struct bh_session_opts o = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN,
				    .principal = CONSOLE_PRINCIPAL, .owner = owner && *owner ? owner : NULL,
				    .languages = 1u << BH_LANG_PYTHON};
	if (tier && *tier && bh_tier_parse(tier, &o.tier) < 0) {
		cb(arg, NULL, "unknown tier");
		return;
	}
	if (floor && *floor && bh_tier_parse(floor, &o.floor) < 0) {
		cb(arg, NULL, "unknown floor");
		return;
	}
	struct pending_open *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	*p = (struct pending_open){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	bh_session *ss = NULL;
	bh_error *err = NULL;
	if (bh_session_open(m->e, &o, on_open, p, &ss, &err) < 0) {
		m->pending--;
		free(p);
		char msg[600];
		snprintf(msg, sizeof msg, "Nothing ran (%s): %s", bh_refusal_name(err->refusal), err->msg);
		cb(arg, NULL, msg);
		bh_error_free(err);
	}
}

struct pending_run {
	struct embedded *m;
	ui_answer_fn cb;
	void *arg;
};

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct pending_run *p = arg;
	p->m->pending--;
	if (!r || err) {
		p->cb(p->arg, NULL, err ? err->msg : "no answer");
	} else {
		char *out = strndup((const char *)r->out, r->out_len);
		char *errout = strndup((const char *)r->errout, r->errout_len);
		struct ui_cell_answer a = {
			.exit_code = r->exit_code, .timed_out = r->timed_out,
			.interpreter_started = r->interpreter_started,
			.interpreter_ended = r->interpreter_ended,
			.stdout_truncated = r->stdout_truncated, .stderr_truncated = r->stderr_truncated,
			.out = out, .err = errout, .wall_us = r->wall_us, .duration_us = r->duration_us,
			.sequence = r->record ? r->record->sequence : 0,
		};
		if (r->record)
			snprintf(a.record, sizeof a.record, "%s", r->record->record_sha256);
		snprintf(a.ended, sizeof a.ended, "%s", bh_end_reason_name(r->ended));
		p->cb(p->arg, &a, NULL);
		free(out);
		free(errout);
	}
	free(p);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	struct embedded *m = E(s);
	bh_session *ss = mine(m, fp);
	if (!ss) {
		cb(arg, NULL, "cells run only in sandboxes this console opened (another client's "
			      "session is that client's)");
		return;
	}
	struct bh_cell c = {.code = code, .code_len = strlen(code)};
	if (bh_language_parse(language, &c.language) < 0) {
		cb(arg, NULL, "unknown language");
		return;
	}
	struct pending_run *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	*p = (struct pending_run){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	bh_error *err = NULL;
	if (bh_session_run(ss, &c, on_cell, p, &err) < 0) {
		m->pending--;
		free(p);
		cb(arg, NULL, err->msg);
		bh_error_free(err);
	}
}

/* ---- procs ---- */

struct pending_look {
	struct embedded *m;
	union {
		ui_processes_fn processes;
		ui_files_fn files;
		ui_file_fn file;
	} cb;
	void *arg;
};

static struct pending_look *look_new(struct embedded *m, void *arg)
{
	struct pending_look *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	p->m = m;
	p->arg = arg;
	m->pending++;
	return p;
}

static void on_processes(void *arg, const struct bh_process *rows, size_t n, bool more,
			 const bh_error *err)
{
	struct pending_look *p = arg;
	p->m->pending--;
	p->cb.processes(p->arg, rows, n, more, err ? err->msg : NULL);
	free(p);
}

static void processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg)
{
	bh_session *ss = by_fp(E(s), fp);
	if (!ss) {
		cb(arg, NULL, 0, false, "no session has that fingerprint any more");
		return;
	}
	struct pending_look *p = look_new(E(s), arg);
	p->cb.processes = cb;
	bh_error *err = NULL;
	if (bh_session_processes(ss, on_processes, p, &err) < 0) {
		E(s)->pending--;
		free(p);
		cb(arg, NULL, 0, false, err ? err->msg : "failed");
		bh_error_free(err);
	}
}

static void on_files(void *arg, const struct bh_file_entry *rows, size_t n, bool more,
		     const bh_error *err)
{
	struct pending_look *p = arg;
	p->m->pending--;
	p->cb.files(p->arg, rows, n, more, err ? err->msg : NULL);
	free(p);
}

static void list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
		       void *arg)
{
	bh_session *ss = by_fp(E(s), fp);
	if (!ss) {
		cb(arg, NULL, 0, false, "no session has that fingerprint any more");
		return;
	}
	struct pending_look *p = look_new(E(s), arg);
	p->cb.files = cb;
	bh_error *err = NULL;
	if (bh_session_list_files(ss, path, on_files, p, &err) < 0) {
		E(s)->pending--;
		free(p);
		cb(arg, NULL, 0, false, err ? err->msg : "failed");
		bh_error_free(err);
	}
}

static void on_file(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct pending_look *p = arg;
	p->m->pending--;
	p->cb.file(p->arg, data, len, size, truncated, err ? err->msg : NULL);
	free(p);
}

static void read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
		      ui_file_fn cb, void *arg)
{
	bh_session *ss = by_fp(E(s), fp);
	if (!ss) {
		cb(arg, NULL, 0, 0, false, "no session has that fingerprint any more");
		return;
	}
	struct pending_look *p = look_new(E(s), arg);
	p->cb.file = cb;
	bh_error *err = NULL;
	if (bh_session_read_file(ss, path, max, on_file, p, &err) < 0) {
		E(s)->pending--;
		free(p);
		cb(arg, NULL, 0, 0, false, err ? err->msg : "failed");
		bh_error_free(err);
	}
}

static void source_free(struct ui_source *s)
{
	struct embedded *m = E(s);
	bh_engine_close(m->e);
	free(m);
}

/* ---- truth ---- */

static void session_detail(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg)
{
	struct embedded *m = E(s);
	bh_session *found = by_fp(m, fp);
	if (!found) {
		cb(arg, NULL, NULL, "no session has that fingerprint");
		return;
	}
	struct bh_session_info in;
	bh_session_get_info(found, &in);
	struct wire_operator_session o = wire_operator_session_of(&in);
	struct ui_session row;
	ui_session_from(&row, &o);
	row.mine = mine(m, in.fingerprint) != NULL;
	char *code = strndup(in.call_code ? in.call_code : "", in.call_code_len);
	if (!code)
		abort();
	cb(arg, &row, code, NULL);
	free(code);
}

/* ---- approvals ---- */
static void approvals(struct ui_source *s, ui_approvals_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, UI_APPROVALS_DAEMONS);
}

static void decide(struct ui_source *s, const char *id, bool approve, const char *reason,
		   ui_done_fn cb, void *arg)
{
	(void)s, (void)id, (void)approve, (void)reason;
	cb(arg, UI_APPROVALS_DAEMONS);
}

/* ---- usage ---- */
static void usage(struct ui_source *s, ui_usage_fn cb, void *arg)
{
	struct ui_usage u = {.version = BULKHEAD_VERSION};
	struct bh_session_usage *list = NULL;
	u.n = bh_engine_usage(E(s)->e, &u.host, &list);
	u.sessions = list;
	cb(arg, &u, NULL);
	free(list);
}

/* ---- stream ---- */
static void cells(struct ui_source *s, const char *fp, uint64_t before, size_t limit,
		  ui_cells_fn cb, void *arg)
{
	struct ui_cell_rows x = {0};
	bh_error *err = NULL;
	int rc = bh_engine_cells(E(s)->e, fp, before, limit, ui_collect_cell, &x, &err);
	ui_answer_cells(cb, arg, rc, &x, err);
}

/* The engine's own copy, borrowed: nothing to wait for, so wait_ms is the
 * view's (it asks again on its tick). */
static void follow(struct ui_source *s, const char *fp, uint64_t seq, uint64_t out_after,
		   uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg)
{
	(void)wait_ms;
	bh_session *ses = by_fp(E(s), fp);
	if (!ses) {
		cb(arg, NULL, "no session has that fingerprint");
		return;
	}
	struct bh_cell_output o;
	bh_session_output(ses, seq, out_after, err_after, &o);
	struct ui_follow f;
	ui_follow_from(&f, &o);
	cb(arg, &f, NULL);
}

/* ---- capture ---- */
/* The engine's whole capture (bh_engine_capture, capture_run.c): the host's
 * view at once, then what the init of a session this engine holds answers. */
struct pending_capture {
	struct embedded *m;
	ui_captured_fn cb;
	void *arg;
};

static void captured(void *arg, const struct bh_capture_target *t, const char *dir,
		     const char *sha, const bh_error *err)
{
	(void)t;
	struct pending_capture *p = arg;
	p->m->pending--;
	p->cb(p->arg, dir, sha, err ? err->msg : NULL);
	free(p);
}

static void capture(struct ui_source *s, const char *target, const char *dir, ui_captured_fn cb,
		    void *arg)
{
	struct embedded *m = E(s);
	struct pending_capture *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	*p = (struct pending_capture){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	bh_error *err = NULL;
	if (bh_engine_capture(m->e, target, dir, NULL, 0, captured, p, &err) < 0) {
		m->pending--;
		free(p);
		cb(arg, dir, NULL, err->msg);
		bh_error_free(err);
	}
}

static void search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg)
{
	struct ui_search_rows x = {0};
	bh_error *err = NULL;
	const char *text = NULL;
	enum bh_search_stream stream = bh_search_parse(query, &text);
	int rc = bh_engine_search(E(s)->e, stream, text, BH_SEARCH_MAX, ui_collect_search_hit, &x, &err);
	cb(arg, x.r, x.n, rc < 0 ? err->msg : NULL);
	bh_error_free(err);
	free(x.r);
}

/* ---- inflight ---- */
static void leftovers(struct ui_source *s, char *buf, size_t n)
{
	struct bh_leftovers l;
	bh_engine_leftovers(E(s)->e, &l);
	bh_leftovers_text(&l, buf, n);
}

static void reap_chosen(struct ui_source *s, const struct bh_leak *chosen, size_t n,
			ui_leaks_fn cb, void *arg)
{
	struct bh_leak *l = NULL;
	/* ---- remote: the console's reap says so in its events ---- */
	struct bh_actor console = {.name = BH_ACTOR_CONSOLE};
	size_t got = bh_engine_reap_as(E(s)->e, &console, chosen, n, false, &l);
	cb(arg, l, got, NULL);
	free(l);
}

struct intents {
	struct bh_inflight *v;
	size_t n;
};

/* Copied whole: the rows are the store's only during the call. */
static int collect_intent(void *arg, const struct bh_inflight *r)
{
	struct intents *x = arg;
	x->v = realloc(x->v, (x->n + 1) * sizeof *x->v);
	if (!x->v)
		abort();
	struct bh_inflight *c = &x->v[x->n++];
	*c = *r;
	c->session = strdup(r->session);
	c->code_sha256 = strdup(r->code_sha256);
	c->language = strdup(r->language);
	c->principal = strdup(r->principal);
	c->owner = strdup(r->owner);
	char *code = malloc(r->code_len + 1);
	if (!code || !c->session || !c->code_sha256 || !c->language || !c->principal || !c->owner)
		abort();
	memcpy(code, r->code, r->code_len);
	code[r->code_len] = '\0';
	c->code = code;
	return 0;
}

static void inflight(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg)
{
	struct intents x = {0};
	bh_error *err = NULL;
	int rc = bh_engine_inflight(E(s)->e, fp && *fp ? fp : NULL, collect_intent, &x, &err);
	cb(arg, x.v, x.n, rc < 0 ? err->msg : NULL);
	bh_error_free(err);
	for (size_t i = 0; i < x.n; i++) {
		free((char *)x.v[i].session);
		free((char *)x.v[i].code_sha256);
		free((char *)x.v[i].language);
		free((char *)x.v[i].principal);
		free((char *)x.v[i].owner);
		free((char *)x.v[i].code);
	}
	free(x.v);
}

static const struct ui_source_ops embedded_ops = {
	.kind = "embedded",
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
	/* ---- procs ---- */
	.processes = processes,
	.list_files = list_files,
	.read_file = read_file,
	.approvals = approvals, /* ---- approvals ---- */
	.decide = decide,
	.usage = usage, /* ---- usage ---- */
	.cells = cells,   /* stream */
	.follow = follow, /* stream */
	.capture = capture, /* ---- capture ---- */
	.search = search,
	/* ---- inflight ---- */
	.leftovers = leftovers,
	.reap_chosen = reap_chosen,
	.inflight = inflight,
};

struct ui_source *ui_source_embedded(const struct bh_config *cfg, char **why)
{
	struct embedded *m = calloc(1, sizeof *m);
	if (!m)
		abort();
	m->base.ops = &embedded_ops;
	bh_error *err = NULL;
	if (bh_engine_open(cfg, &m->e, &err) < 0) {
		if (why && asprintf(why, "%s", err->msg) < 0)
			*why = NULL;
		bh_error_free(err);
		free(m);
		return NULL;
	}
	snprintf(m->state_dir, sizeof m->state_dir, "%s", bh_engine_state_dir(m->e));
	m->read_only = cfg->read_only;
	return &m->base;
}
