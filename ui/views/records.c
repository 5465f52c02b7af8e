/* Records: the history from the store, the newest 1000 oldest first, the
 * newest selected; `[` pages back before them and `]` forward again.
 * Drilled from a sandbox it shows that session's chain. enter opens one
 * record, whose digest and chain link are re-verified on screen. */
#include "search_view.h" /* ---- capture ---- */
#include "app.h"
#include "history_page.h"
#include "record.h" /* ---- light: bh_chain_step ---- */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- light: ✓/✗, each record's digest and chain link verified ---- */
static const char *const headers[] = {"ID", "SESSION", "SEQ", "V", "LANGUAGE", "TIER", "EXIT", "FLAGS", "✓", "RECORD"};
static const int widths[] = {5, 12, 4, 2, 10, 9, 4, 20, 1, 0};
/* At 80 columns V goes first, then TIER, so the digest (or a call's code)
 * keeps room beside the ✓. */
static const int drop[] = {[3] = 2, [5] = 1, [9] = 0};
static const enum col_type types[] = {COL_NUMBER, COL_TEXT, COL_NUMBER, COL_NUMBER, COL_TEXT,
				      COL_TEXT,	  COL_NUMBER, COL_TEXT, COL_TEXT, COL_TEXT};

/* ---- light ---- */
/* bh_chain_step, the one check of `bulkhead verify`, on a page's record:
 * its digest, and its link to its predecessor when the page holds that
 * one (the first of a session's records on the page is linked to what it
 * names: the record view, enter, looks the one before up). */
static bool record_holds(const struct ui_record *rows, size_t n, size_t i)
{
	const struct ui_record *r = &rows[i];
	struct bh_record b;
	ui_record_to_bh(r, &b);
	struct bh_chain_walk w = {0};
	if (*r->session && r->sequence > 1) {
		snprintf(w.session, sizeof w.session, "%s", r->session);
		w.sequence = r->sequence - 1;
		snprintf(w.previous, sizeof w.previous, "%s", r->previous);
		for (size_t j = 0; j < n; j++)
			if (rows[j].sequence + 1 == r->sequence && !strcmp(rows[j].session, r->session))
				snprintf(w.previous, sizeof w.previous, "%s", rows[j].record);
	}
	return bh_chain_step(&w, &b) == BH_CHAIN_OK;
}

/* ---- inflight ---- */
#define INTENT_KEY "intent:"

static void intents_loaded(void *arg, const struct bh_inflight *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v) || err)
		return; /* a source that cannot say: the records alone */
	for (size_t i = 0; i < n; i++) {
		const struct bh_inflight *r = &rows[i];
		char key[128];
		snprintf(key, sizeof key, INTENT_KEY "%.64s", r->session);
		/* Red, and the words say it without colour. */
		struct trow *t = table_add(&v->t, key, r->interrupted ? C_BAD : C_WARN);
		table_cell(t, 0, "-");
		table_cell(t, 1, "%.12s", r->session);
		table_cell(t, 2, "%llu", (unsigned long long)r->sequence);
		table_cell(t, 3, "-");
		table_cell(t, 4, "%s", r->language);
		table_cell(t, 5, "-");
		table_cell(t, 6, "-");
		table_cell(t, 7, "%s", r->interrupted ? "was running" : "running");
		size_t k = 0;
		while (k < r->code_len && r->code[k] != '\n' && k < 120)
			k++;
		table_cell(t, 8, "-"); /* no record to verify yet */
		table_cell(t, 9, "code: %.*s", (int)k, r->code);
	}
	const struct trow *sel = table_selected(&v->t);
	char keep[128] = "";
	if (sel)
		snprintf(keep, sizeof keep, "%s", sel->key);
	table_index(&v->t, v->filter, *keep ? keep : NULL);
}

static void loaded(void *arg, const struct ui_record *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	char keep[128];
	struct history_page *p = history_page_arrived(v, n ? rows[0].id : 0, n, keep, sizeof keep);
	table_clear(&v->t);
	for (size_t i = 0; i < n; i++) {
		const struct ui_record *r = &rows[i];
		char key[32];
		snprintf(key, sizeof key, "%lld", (long long)r->id);
		bool holds = record_holds(rows, n, i); /* ---- light ---- */
		struct trow *t = table_add(&v->t, key, !holds || r->version == 3 ? C_BAD : r->exit_code ? C_WARN : C_NORMAL);
		table_cell(t, 0, "%lld", (long long)r->id);
		table_cell(t, 1, "%.12s", *r->session ? r->session : "-");
		/* ---- fleet: the session whole, never drawn: the record view
		 * asks for the record within it (over a fleet, of its host) ---- */
		table_cell(t, RECORD_SESSION_CELL, "%s", r->session);
		table_cell(t, 2, "%llu", (unsigned long long)r->sequence);
		table_cell(t, 3, "%d", r->version);
		table_cell(t, 4, "%s", *r->language ? r->language : "-");
		table_cell(t, 5, "%s", r->isolation);
		table_cell(t, 6, "%d", r->exit_code);
		table_cell(t, 7, "%s", *r->flags ? r->flags : (*r->unanswered ? r->unanswered : "-"));
		table_cell(t, 8, "%s", holds ? "✓" : "✗"); /* ---- light ---- */
		table_cell(t, 9, "%s", r->record); /* cut with "…"; whole when wide */
		snprintf(t->copy, sizeof t->copy, "%s", r->record);
	}
	bool turned = p->jump != 0;
	table_index(&v->t, v->filter, turned ? NULL : keep);
	/* The newest selected when nothing was; a turned page its edge. */
	history_page_select(p, &v->t.sel, &v->t.top, v->t.nshown, !*keep);
	/* ---- inflight: after the newest records, the calls with no record
	 * yet: running now, or running when their engine died ---- */
	if (!p->depth && v->app->src->ops->inflight) {
		v->loading++;
		v->app->src->ops->inflight(v->app->src, v->arg, intents_loaded, v);
	}
}

static void load(struct app *a, struct view *v)
{
	struct ui_page page = history_page_load(v);
	if (*v->arg)
		snprintf(v->sub, sizeof v->sub, "(session %.12s)", v->arg);
	a->src->ops->records(a->src, *v->arg ? v->arg : NULL, &page, loaded, v);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	if (r == REQ_SEARCH_CELLS) { /* ---- capture ---- */
		search_filter_ask(a, v);
		return REQ_NONE;
	}
	if (r != REQ_RECORDS_OLDER && r != REQ_RECORDS_NEWER)
		return r;
	history_page_turn(a, v, r == REQ_RECORDS_OLDER, "records", load);
	return REQ_NONE;
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	/* inflight: a call with no record opens its session's timeline. */
	if (!strncmp(row->key, INTENT_KEY, strlen(INTENT_KEY))) {
		app_push(a, &view_timeline, row->key + strlen(INTENT_KEY));
		return;
	}
	char arg[sizeof row->key + 80];
	const char *fp = row->cells[RECORD_SESSION_CELL];
	snprintf(arg, sizeof arg, "%s%s%.65s", row->key, fp && *fp ? " " : "", fp ? fp : "");
	app_push(a, &view_record, arg);
}

const struct view_ops view_records = {
	.name = "records",
	.alias = "rec",
	.title = "Records",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.drop = drop,
	.flex_least = 16,
	.load = load,
	.request = request,
	.enter = enter,
	.done = history_page_done,
};
