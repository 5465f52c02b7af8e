/* Events: the engine's stream (state changes, reaps, re-adoptions), the
 * newest 1000 oldest first, the newest selected and followed as they come;
 * `[` pages back before them and `]` forward again. */
#include "search_view.h" /* ---- capture ---- */
#include "app.h"
#include "history_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* BY (attribution): who acted — a principal, "console", a policy clock,
 * "engine"; "-" for an event stored before attribution. It is the first to
 * go when the screen cannot also give the detail 25 columns (at 80 it
 * shows with the wide toggle). REQUEST, wide: the audit log's request id
 * of the call that asked. */
static const char *const headers[] = {"ID",	 "AT (UTC)", "KIND",    "BY",
				      "SESSION", "DETAIL",   "SANDBOX", "REQUEST"};
static const int widths[] = {5, 19, 13, 11, 12, 0, 0, 0};
static const int drop[] = {[3] = 1, [7] = 0};
static const enum col_type types[] = {COL_NUMBER, COL_TIME, COL_TEXT, COL_TEXT,
				      COL_TEXT,	  COL_TEXT, COL_TEXT, COL_TEXT};

static void loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	char keep[128];
	struct history_page *p = history_page_arrived(v, n ? rows[0].id : 0, n, keep, sizeof keep);
	bool at_end = !table_selected(&v->t) || v->t.sel + 1 >= v->t.nshown;
	table_clear(&v->t);
	for (size_t i = 0; i < n; i++) {
		const struct ui_event *e = &rows[i];
		char key[32], at[32];
		snprintf(key, sizeof key, "%lld", (long long)e->id);
		time_t t = (time_t)(e->at_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(at, sizeof at, "%Y-%m-%d %H:%M:%S", &tm);
		/* ---- egress: a request the broker refused stands out ---- */
		enum ui_color c = strstr(e->kind, "reap") || strstr(e->detail, "ended") ||
					  (!strcmp(e->kind, "egress") && strstr(e->detail, ", refused: "))
				  ? C_WARN
				  : C_NORMAL;
		struct trow *r = table_add(&v->t, e->session, c);
		table_cell(r, 0, "%s", key);
		table_cell(r, 1, "%s", at);
		table_cell(r, 2, "%s", e->kind);
		table_cell(r, 3, "%s", *e->actor ? e->actor : "-");
		/* An event of no session (a leftover deleted) names its sandbox. */
		if (*e->session)
			table_cell(r, 4, "%.12s", e->session);
		else
			table_cell(r, 4, "%s", *e->sandbox ? e->sandbox : "-");
		table_cell(r, 5, "%s", e->detail);
		/* Drawn only wide, but a filter finds them: a leak's timeline is
		 * asked for by its sandbox's name, an audit line's events by its
		 * request id. */
		table_cell(r, 6, "%s", *e->sandbox ? e->sandbox : "-");
		table_cell(r, 7, "%s", *e->request_id ? e->request_id : "-");
	}
	bool turned = p->jump != 0;
	table_index(&v->t, v->filter, turned || (at_end && !p->depth) ? NULL : keep);
	history_page_select(p, &v->t.sel, &v->t.top, v->t.nshown, at_end); /* the newest follows the stream */
}

static void load(struct app *a, struct view *v)
{
	struct ui_page page = history_page_load(v);
	a->src->ops->events(a->src, &page, loaded, v);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	if (r == REQ_SEARCH_CELLS_EV) { /* ---- capture ---- */
		search_filter_ask(a, v);
		return REQ_NONE;
	}
	if (r != REQ_EVENTS_OLDER && r != REQ_EVENTS_NEWER)
		return r;
	history_page_turn(a, v, r == REQ_EVENTS_OLDER, "events", load);
	return REQ_NONE;
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	if (*row->key)
		app_push(a, &view_records, row->key);
}

const struct view_ops view_events = {
	.name = "events",
	.alias = "ev",
	.title = "Events",
	.ncols = 6,
	.nwide = 2,
	.drop = drop,      /* ---- ci: attribution ---- */
	.flex_least = 25,
	.types = types,
	.headers = headers,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
	.done = history_page_done,
};
