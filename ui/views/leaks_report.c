/* `e` in :leaks — the incident report (report_view.h). One report at a
 * time: its state lives here. The suspects' rows are asked one after the
 * other through the source (records, cells, the calls in flight, per
 * suspect; then the newest events once), so it reads the same from an
 * embedded engine, a daemon or a store, into the report every writer
 * shares (report.h: what it says and how is defined there, once). */
#include "capture_view.h"
#include "record.h"
#include "report.h"
#include "report_view.h"
#include "ui_files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAPTURES_KEPT 32

/* ---- the captures made in this console ---- */

static struct {
	char target[65], dir[PATH_MAX];
} captures[CAPTURES_KEPT];
static size_t n_captures;

void capture_remember(const char *target, const char *dir)
{
	size_t i = n_captures < CAPTURES_KEPT ? n_captures++ : CAPTURES_KEPT - 1;
	snprintf(captures[i].target, sizeof captures[i].target, "%s", target);
	snprintf(captures[i].dir, sizeof captures[i].dir, "%s", dir);
}

const char *capture_recalled(const char *sandbox, const char *fingerprint)
{
	for (size_t i = n_captures; i-- > 0;)
		if ((*sandbox && !strcmp(captures[i].target, sandbox)) ||
		    (*fingerprint && !strcmp(captures[i].target, fingerprint)))
			return captures[i].dir;
	return NULL;
}

/* ---- collecting ---- */

static struct {
	bool busy;
	struct app *a;
	char stem[PATH_MAX];
	bh_report *r;
	size_t at;
} rep;

static void reset(void)
{
	bh_report_free(rep.r);
	memset(&rep, 0, sizeof rep);
}

static void next_suspect(void);
static void write_report(void);

static void events_loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	(void)arg;
	if (err)
		bh_report_events_error(rep.r, err);
	for (size_t i = 0; i < n; i++) {
		const struct ui_event *u = &rows[i];
		struct bh_event ev = {.id = u->id, .at_unix_ms = u->at_ms, .kind = u->kind,
				      .session = u->session, .sandbox = u->sandbox,
				      .detail = u->detail, .actor = u->actor,
				      .request_id = u->request_id};
		bh_report_add_event(rep.r, &ev);
	}
	write_report();
}

static void intents_loaded(void *arg, const struct bh_inflight *rows, size_t n, const char *err)
{
	(void)arg;
	if (err) {
		char why[256];
		snprintf(why, sizeof why, "calls in flight: %s", err);
		bh_report_suspect_error(rep.r, rep.at, why);
	}
	for (size_t i = 0; i < n; i++)
		bh_report_add_intent(rep.r, rep.at, &rows[i]);
	rep.at++;
	next_suspect();
}

static void cells_loaded(void *arg, const struct ui_cell *rows, size_t n, const char *err)
{
	(void)arg;
	if (err) {
		char why[256];
		snprintf(why, sizeof why, "cells: %s", err);
		bh_report_suspect_error(rep.r, rep.at, why);
	}
	for (size_t i = 0; i < n; i++)
		bh_report_add_cell(rep.r, rep.at, rows[i].sequence, rows[i].code, rows[i].code_len,
				   rows[i].out, rows[i].out_len, rows[i].err, rows[i].err_len);
	/* A store copy has no engine to say which calls were running. */
	struct ui_source *src = rep.a->src;
	if (!src->ops->has_engine || !src->ops->inflight) {
		rep.at++;
		next_suspect();
		return;
	}
	src->ops->inflight(src, bh_report_suspect_session(rep.r, rep.at), intents_loaded, NULL);
}

static void records_loaded(void *arg, const struct ui_record *rows, size_t n, const char *err)
{
	(void)arg;
	if (err) {
		char why[256];
		snprintf(why, sizeof why, "records: %s", err);
		bh_report_suspect_error(rep.r, rep.at, why);
	}
	for (size_t i = 0; i < n; i++) {
		struct bh_record b;
		ui_record_to_bh(&rows[i], &b);
		bh_report_add_record(rep.r, rep.at, &b, rows[i].language, rows[i].flags,
				     rows[i].exit_code);
	}
	rep.a->src->ops->cells(rep.a->src, bh_report_suspect_session(rep.r, rep.at), 0,
			       BH_REPORT_CELLS, cells_loaded, NULL);
}

/* The rows asked the way bh_report_collect reads them, one suspect after
 * the other (the source may answer later), then the newest events. */
static void next_suspect(void)
{
	size_t n = bh_report_suspects(rep.r);
	while (rep.at < n && !*bh_report_suspect_session(rep.r, rep.at))
		rep.at++; /* an orphan, an image, a cgroup: no rows to ask for */
	if (rep.at == n) {
		struct ui_page page = {.newest = true, .limit = BH_REPORT_EVENTS};
		rep.a->src->ops->events(rep.a->src, &page, events_loaded, NULL);
		return;
	}
	struct ui_page page = {.after = 0, .limit = BH_REPORT_RECORDS};
	rep.a->src->ops->records(rep.a->src, bh_report_suspect_session(rep.r, rep.at), &page,
				 records_loaded, NULL);
}

/* ---- writing: STEM.md and STEM.json, created together ---- */

static void write_report(void)
{
	struct app *a = rep.a;
	static const char *const exts[] = {"md", "json"};
	FILE *out[2];
	char names[2][256];
	rep.busy = false;
	app_busy(a, "");
	if (ui_create_set(rep.stem, exts, 2, out, names) < 0) {
		app_flash(a, C_BAD, "no report: cannot create %s.md (or a free name after it): %s",
			  rep.stem, strerror(errno));
		reset();
		return;
	}
	bh_error *err = NULL;
	int rc = bh_report_write(rep.r, BH_REPORT_MARKDOWN, out[0], &err);
	if (rc == 0)
		rc = bh_report_write(rep.r, BH_REPORT_JSON, out[1], &err);
	fclose(out[0]);
	fclose(out[1]);
	if (rc < 0) {
		app_flash(a, C_BAD, "no report: %s", err->msg);
		bh_error_free(err);
		unlink(names[0]);
		unlink(names[1]);
	} else
		app_flash(a, C_GOOD, "wrote %s and %s", names[0], names[1]);
	reset();
}

static void on_stem(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (!text || !capture_folder(text, rep.stem, sizeof rep.stem)) {
		app_flash(a, C_INFO, "no report: %s", text ? rep.stem : "cancelled");
		reset();
		return;
	}
	/* The stem names the report; .md and .json are added to it. */
	size_t n = strlen(rep.stem);
	if (n > 3 && !strcmp(rep.stem + n - 3, ".md"))
		rep.stem[n - 3] = '\0';
	rep.busy = true;
	app_busy(a, "reading the suspects' records");
	next_suspect();
}

void report_ask(struct app *a, const struct bh_leak *findings, size_t n)
{
	if (rep.busy) {
		app_flash(a, C_WARN, "a report is being written already");
		return;
	}
	reset();
	rep.a = a;
	char where[256];
	a->src->ops->describe(a->src, where, sizeof where);
	/* The console is the engine when it embeds it; a daemon's or a dead
	 * engine's pid is what each finding's holder names. */
	bool embedded = !strcmp(a->src->ops->kind, "embedded");
	rep.r = bh_report_new(where, a->src->ops->kind, embedded ? (int64_t)getpid() : 0);
	for (size_t i = 0; i < n; i++) {
		size_t at = bh_report_add_suspect(rep.r, &findings[i]);
		const char *dir = capture_recalled(findings[i].sandbox, findings[i].fingerprint);
		if (dir)
			bh_report_set_capture(rep.r, at, dir);
	}
	char stamp[32], initial[64];
	capture_stamp(stamp);
	snprintf(initial, sizeof initial, "./bulkhead-leaks-%s", stamp);
	prompt_text(a, "report to (.md and .json): ", initial, on_stem, NULL);
}
