/* Events: the engine's stream (state changes, reaps, re-adoptions),
 * oldest first, the newest selected. */
#include "app.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const headers[] = {"ID", "AT (UTC)", "KIND", "SESSION", "DETAIL"};
static const int widths[] = {5, 19, 13, 12, 0};

static void loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v) || err)
		return;
	const struct trow *sel = table_selected(&v->t);
	bool at_end = !sel || v->t.sel + 1 >= v->t.nshown;
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	for (size_t i = 0; i < n; i++) {
		const struct ui_event *e = &rows[i];
		char key[32], at[32];
		snprintf(key, sizeof key, "%lld", (long long)e->id);
		time_t t = (time_t)(e->at_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(at, sizeof at, "%Y-%m-%d %H:%M:%S", &tm);
		enum ui_color c = strstr(e->kind, "reap") || strstr(e->detail, "ended") ? C_WARN : C_NORMAL;
		struct trow *r = table_add(&v->t, e->session, c);
		table_cell(r, 0, "%s", key);
		table_cell(r, 1, "%s", at);
		table_cell(r, 2, "%s", e->kind);
		table_cell(r, 3, "%.12s", *e->session ? e->session : "-");
		table_cell(r, 4, "%s", e->detail);
		/* Not drawn (past the headers), but a filter finds it: a leak's
		 * timeline is asked for by its sandbox's name. */
		table_cell(r, 5, "%s", e->sandbox);
	}
	table_index(&v->t, v->filter, at_end ? NULL : keep);
	if (at_end && v->t.nshown)
		v->t.sel = v->t.nshown - 1; /* follow the stream */
}

static void load(struct app *a, struct view *v)
{
	v->loading++;
	a->src->ops->events(a->src, 0, 1000, loaded, v);
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
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.enter = enter,
};
