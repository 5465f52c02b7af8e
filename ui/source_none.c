/* No source at all: what `bulkhead replay` runs the console on. A replay
 * executes nothing, so it opens no engine, attaches to no daemon and reads
 * no store (not even a state directory); every other view answers that
 * there is nothing behind it. */
#include "source.h"

#include <stdio.h>
#include <stdlib.h>

#define NO_SOURCE "no source: `bulkhead replay` opens no engine, daemon or store (run `bulkhead` for one)"

static void describe(struct ui_source *s, char *buf, size_t n)
{
	(void)s;
	snprintf(buf, n, "replay (no engine, no daemon, no store: nothing runs)");
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	(void)s;
	snprintf(buf, n, "none (no source)");
}

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	(void)s, (void)session, (void)page;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	(void)s, (void)session, (void)sequence;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	(void)s, (void)page;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	(void)s, (void)verb, (void)fp;
	cb(arg, NO_SOURCE);
}

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	(void)s, (void)tier, (void)floor, (void)owner;
	cb(arg, NULL, NO_SOURCE);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	(void)s, (void)fp, (void)language, (void)code;
	cb(arg, NULL, NO_SOURCE);
}

static void source_free(struct ui_source *s)
{
	free(s);
}

/* ---- truth ---- */

static void session_detail(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg)
{
	(void)s, (void)fp;
	cb(arg, NULL, NULL, NO_SOURCE);
}

/* ---- approvals ---- */
static void approvals(struct ui_source *s, ui_approvals_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void decide(struct ui_source *s, const char *id, bool approve, const char *reason,
		   ui_done_fn cb, void *arg)
{
	(void)s, (void)id, (void)approve, (void)reason;
	cb(arg, NO_SOURCE);
}

/* ---- usage ---- */
static void usage(struct ui_source *s, ui_usage_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, NO_SOURCE);
}

/* ---- stream ---- */
static void cells(struct ui_source *s, const char *fp, uint64_t before, size_t limit,
		  ui_cells_fn cb, void *arg)
{
	(void)s, (void)fp, (void)before, (void)limit;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void follow(struct ui_source *s, const char *fp, uint64_t seq, uint64_t out_after,
		   uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg)
{
	(void)s, (void)fp, (void)seq, (void)out_after, (void)err_after, (void)wait_ms;
	cb(arg, NULL, NO_SOURCE);
}

/* ---- inflight ---- */
static void reap_chosen(struct ui_source *s, const struct bh_leak *chosen, size_t n,
			ui_leaks_fn cb, void *arg)
{
	(void)s;
	(void)chosen;
	(void)n;
	cb(arg, NULL, 0, NO_SOURCE);
}

static void inflight(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg)
{
	(void)s;
	(void)fp;
	cb(arg, NULL, 0, NO_SOURCE);
}

static const struct ui_source_ops none_ops = {
	.kind = "none",
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
	.reap = leaks,
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
	.search = ui_source_no_search,
	/* ---- inflight ---- */
	.reap_chosen = reap_chosen,
	.inflight = inflight,
};

struct ui_source *ui_source_none(void)
{
	struct ui_source *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->ops = &none_ops;
	return s;
}
