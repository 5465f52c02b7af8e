/* The suspects' rows read synchronously (report.h's bh_report_collect): the
 * same rows, in the same pages, the console asks its source for — from a
 * state directory's read-only engine or a store copy, for `bulkhead
 * report`. The console collects through its source instead (a daemon
 * answers asynchronously), into the same bh_report. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

struct at {
	bh_report *r;
	size_t suspect;
};

static int on_record(void *arg, const struct bh_record_row *row)
{
	struct at *a = arg;
	bh_report_add_record(a->r, a->suspect, row->record, row->language, row->flags,
			     row->exit_code);
	return 0;
}

static int on_cell(void *arg, const struct bh_cell_row *row)
{
	struct at *a = arg;
	bh_report_add_cell(a->r, a->suspect, row->sequence, row->code, row->code_len, row->out,
			   row->out_len, row->err, row->err_len);
	return 0;
}

static int on_intent(void *arg, const struct bh_inflight *row)
{
	struct at *a = arg;
	bh_report_add_intent(a->r, a->suspect, row);
	return 0;
}

static int on_event(void *arg, const struct bh_event *ev)
{
	bh_report_add_event(arg, ev);
	return 0;
}

static void failed(bh_report *r, size_t suspect, const char *what, bh_error *err)
{
	char why[256];
	snprintf(why, sizeof why, "%s: %s", what, err ? err->msg : "?");
	bh_report_suspect_error(r, suspect, why);
	bh_error_free(err);
}

int bh_report_collect(bh_report *r, bh_engine *e, bh_history *h, bh_error **err)
{
	(void)err; /* a read that fails is said in the report, under its suspect */
	for (size_t i = 0; i < bh_report_suspects(r); i++) {
		const char *fp = bh_report_suspect_session(r, i);
		if (!*fp)
			continue; /* an orphan, an image, a cgroup: no rows to ask for */
		struct at a = {r, i};
		bh_error *why = NULL;
		int rc = e ? bh_engine_records(e, fp, 0, BH_REPORT_RECORDS, on_record, &a, &why)
			   : bh_history_records(h, fp, 0, BH_REPORT_RECORDS, on_record, &a, &why);
		if (rc < 0) {
			failed(r, i, "records", why);
			why = NULL;
		}
		rc = e ? bh_engine_cells(e, fp, 0, BH_REPORT_CELLS, on_cell, &a, &why)
		       : bh_history_cells(h, fp, 0, BH_REPORT_CELLS, on_cell, &a, &why);
		if (rc < 0) {
			failed(r, i, "cells", why);
			why = NULL;
		}
		/* A store copy has no engine to say which calls were running. */
		if (e && bh_engine_inflight(e, fp, on_intent, &a, &why) < 0)
			failed(r, i, "calls in flight", why);
	}
	bh_error *why = NULL;
	int rc = e ? bh_engine_events_newest(e, 0, BH_REPORT_EVENTS, on_event, r, &why)
		   : bh_history_events_newest(h, 0, BH_REPORT_EVENTS, on_event, r, &why);
	if (rc < 0)
		bh_report_events_error(r, why ? why->msg : "?");
	bh_error_free(why);
	return 0;
}
