/* A store opened read-only (`--db FILE`): forensics on a copy of a
 * production store. No engine, no runtime call: the registry's rows stand
 * for sessions, and every action is refused. */
#include "source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_ONLY "a store opened with --db is read-only: there is no engine to act"

struct store_src {
	struct ui_source base;
	bh_history *h;
	char path[512];
};

static struct store_src *S(struct ui_source *s)
{
	return (struct store_src *)s;
}

static void describe(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "store %s (read-only, no engine)", S(s)->path);
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	(void)s;
	snprintf(buf, n, "none (no engine)");
}

struct srows {
	struct ui_session *r;
	size_t n, cap;
};

static int add_session(void *arg, const struct bh_history_session *h)
{
	struct srows *x = arg;
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->r = realloc(x->r, x->cap * sizeof *x->r);
		if (!x->r)
			abort();
	}
	struct ui_session *r = &x->r[x->n++];
	memset(r, 0, sizeof *r);
	snprintf(r->fp, sizeof r->fp, "%s", h->fingerprint);
	snprintf(r->sandbox, sizeof r->sandbox, "%s", h->sandbox);
	snprintf(r->state, sizeof r->state, "%s", bh_session_state_name(h->state));
	snprintf(r->tier, sizeof r->tier, "%s", h->tier);
	snprintf(r->floor, sizeof r->floor, "%s", h->floor);
	snprintf(r->principal, sizeof r->principal, "%s", h->principal);
	snprintf(r->owner, sizeof r->owner, "%s", h->owner);
	snprintf(r->run_key, sizeof r->run_key, "%s", h->run_key);
	snprintf(r->last_record, sizeof r->last_record, "%s", h->last_record_sha256);
	snprintf(r->end_reason, sizeof r->end_reason, "%s", bh_end_reason_name(h->end_reason));
	r->calls = h->calls;
	r->awake_ms = (uint64_t)h->awake_ms;
	r->created_ms = h->created_ms;
	r->last_call_ms = h->last_call_ms;
	r->expires_ms = h->expires_ms;
	return 0;
}

/* The newest sessions of the registry, not all of it: a 30-day store is
 * never read whole into memory. */
#define STORE_SESSIONS_SHOWN 1000

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	struct srows x = {0};
	bh_error *err = NULL;
	if (bh_history_sessions(S(s)->h, STORE_SESSIONS_SHOWN, add_session, &x, &err) < 0)
		cb(arg, NULL, 0, err->msg);
	else
		cb(arg, x.r, x.n, NULL);
	bh_error_free(err);
	free(x.r);
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	struct ui_record_rows x = {0};
	bh_error *err = NULL;
	int rc = page->newest ? bh_history_records_newest(S(s)->h, session, page->before, page->limit,
							  ui_collect_record, &x, &err)
			      : bh_history_records(S(s)->h, session, page->after, page->limit,
						   ui_collect_record, &x, &err);
	ui_answer_records(cb, arg, rc, &x, err);
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	struct ui_record_rows x = {0};
	bh_error *err = NULL;
	int rc = bh_history_record_at(S(s)->h, session, sequence, ui_collect_record, &x, &err);
	ui_answer_records(cb, arg, rc, &x, err);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	struct ui_event_rows x = {0};
	bh_error *err = NULL;
	int rc = page->newest ? bh_history_events_newest(S(s)->h, page->before, page->limit,
							 ui_collect_event, &x, &err)
			      : bh_history_events(S(s)->h, page->after, page->limit, ui_collect_event,
						  &x, &err);
	ui_answer_events(cb, arg, rc, &x, err);
}

/* ---- light: from the store alone, the live rows whose engine is gone
 * (bh_history_leaks: its pid and last sign of life, UTC) ---- */
static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	struct bh_leak *v = NULL;
	size_t n = 0;
	bh_error *err = NULL;
	if (bh_history_leaks(S(s)->h, &v, &n, &err) < 0) {
		char why[512];
		snprintf(why, sizeof why, "%s", err ? err->msg : "cannot read the store");
		bh_error_free(err);
		cb(arg, NULL, 0, why);
		return;
	}
	cb(arg, v, n, NULL);
	free(v);
}

static void reap(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, READ_ONLY);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, "tiers are proven by an engine; this is a store opened read-only");
}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	(void)s, (void)verb, (void)fp;
	cb(arg, READ_ONLY);
}

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	(void)s, (void)tier, (void)floor, (void)owner;
	cb(arg, NULL, READ_ONLY);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	(void)s, (void)fp, (void)language, (void)code;
	cb(arg, NULL, READ_ONLY);
}

static void source_free(struct ui_source *s)
{
	bh_history_close(S(s)->h);
	free(s);
}

/* ---- truth ---- */

static void session_detail(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg)
{
	(void)s, (void)fp;
	cb(arg, NULL, NULL, "describe asks a live engine for the cell in flight; this is a store opened read-only");
}

/* ---- approvals ---- */
static void approvals(struct ui_source *s, ui_approvals_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, "held calls need a live daemon; this is a store opened read-only (its events keep past decisions)");
}

static void decide(struct ui_source *s, const char *id, bool approve, const char *reason,
		   ui_done_fn cb, void *arg)
{
	(void)s, (void)id, (void)approve, (void)reason;
	cb(arg, "held calls need a live daemon; this is a store opened read-only (its events keep past decisions)");
}

/* ---- usage ---- */
static void usage(struct ui_source *s, ui_usage_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, "usage needs a live engine; this is a store opened read-only");
}

/* ---- stream: the stored cells; nothing runs in a store ---- */
static void cells(struct ui_source *s, const char *fp, uint64_t before, size_t limit,
		  ui_cells_fn cb, void *arg)
{
	struct ui_cell_rows x = {0};
	bh_error *err = NULL;
	int rc = bh_history_cells(S(s)->h, fp, before, limit, ui_collect_cell, &x, &err);
	ui_answer_cells(cb, arg, rc, &x, err);
}

static void follow(struct ui_source *s, const char *fp, uint64_t seq, uint64_t out_after,
		   uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg)
{
	(void)s, (void)fp, (void)seq, (void)out_after, (void)err_after, (void)wait_ms;
	cb(arg, NULL, UI_NO_FOLLOW);
}

/* ---- capture ---- */
static void search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg)
{
	struct ui_search_rows x = {0};
	bh_error *err = NULL;
	const char *text = NULL;
	enum bh_search_stream stream = bh_search_parse(query, &text);
	int rc = bh_history_search(S(s)->h, stream, text, BH_SEARCH_MAX, ui_collect_search_hit, &x,
				   &err);
	cb(arg, x.r, x.n, rc < 0 ? err->msg : NULL);
	bh_error_free(err);
	free(x.r);
}

/* ---- inflight ---- */
static void reap_chosen(struct ui_source *s, const struct bh_leak *chosen, size_t n,
			ui_leaks_fn cb, void *arg)
{
	(void)s;
	(void)chosen;
	(void)n;
	cb(arg, NULL, 0, READ_ONLY);
}

static void inflight(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg)
{
	(void)s;
	(void)fp;
	cb(arg, NULL, 0, "the calls in flight are read by an engine; this is a store opened read-only");
}

static const struct ui_source_ops store_ops = {
	.kind = "store",
	.has_engine = false,
	.describe = describe,
	.tier_summary = tier_summary,
	.poll_fds = ui_source_no_fds,
	.timeout_ms = ui_source_no_timeout,
	.process = ui_source_no_process,
	.pending = ui_source_no_pending,
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
	.processes = ui_source_no_processes,
	.list_files = ui_source_no_list_files,
	.read_file = ui_source_no_read_file,
	.approvals = approvals, /* ---- approvals ---- */
	.decide = decide,
	.usage = usage, /* ---- usage ---- */
	.cells = cells,   /* stream */
	.follow = follow, /* stream */
	.capture = ui_source_no_capture, /* ---- capture ---- */
	.search = search,
	/* ---- inflight ---- */
	.reap_chosen = reap_chosen,
	.inflight = inflight,
};

struct ui_source *ui_source_store(const char *db_path, char **why)
{
	struct store_src *m = calloc(1, sizeof *m);
	if (!m)
		abort();
	m->base.ops = &store_ops;
	bh_error *err = NULL;
	if (bh_history_open(db_path, &m->h, &err) < 0) {
		if (why && asprintf(why, "%s", err->msg) < 0)
			*why = NULL;
		bh_error_free(err);
		free(m);
		return NULL;
	}
	snprintf(m->path, sizeof m->path, "%s", db_path);
	return &m->base;
}
