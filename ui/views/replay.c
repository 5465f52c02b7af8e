/* Replay: the recorded scenarios (data/scenarios, or $BULKHEAD_SCENARIOS)
 * with what each teaches, its tier and its steps; enter opens one in the
 * player (player.c). A file that does not load is listed in red with the
 * loader's words for what is wrong. Nothing here executes anything. */
#include "app.h"
#include "hop_diagram.h"
#include "scenario.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"SCENARIO", "TIER", "STEPS", "TITLE", "TEACHES"};
static const int widths[] = {17, 9, 5, 22, 0};
static const enum col_type types[] = {COL_TEXT, COL_TEXT, COL_NUMBER, COL_TEXT, COL_TEXT};

static void load(struct app *a, struct view *v)
{
	char dir[4096], err[512] = "";
	scenario_dir(dir, sizeof dir);
	snprintf(v->sub, sizeof v->sub, "(%.150s)", dir);
	struct scenario_entry *list = NULL;
	size_t n = 0;
	if (scenario_list(dir, &list, &n, err, sizeof err) < 0) {
		view_load_failed(a, v, err); /* the list read before stays, marked stale */
		return;
	}
	view_load_ok(v);
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	for (size_t i = 0; i < n; i++) {
		const struct scenario_entry *e = &list[i];
		struct trow *r = table_add(&v->t, e->name, e->s ? C_NORMAL : C_BAD);
		table_cell(r, 0, "%s", e->name);
		if (e->s) {
			table_cell(r, 1, "%s", e->s->tier);
			table_cell(r, 2, "%zu", e->s->n_steps);
			table_cell(r, 3, "%s", e->s->title);
			table_cell(r, 4, "%s", e->s->teaches);
		} else {
			table_cell(r, 1, "-");
			table_cell(r, 2, "-");
			table_cell(r, 3, "(does not load)");
			table_cell(r, 4, "%s", e->err);
		}
	}
	scenario_list_free(list, n);
	table_index(&v->t, v->filter, keep);
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	if (row->color == C_BAD) {
		app_flash(a, C_BAD, "%s: %s", row->cells[0], row->cells[4] ? row->cells[4] : "does not load");
		return;
	}
	char dir[4096], path[4400];
	scenario_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/%s.json", dir, row->key);
	app_push(a, &view_player, path);
}

/* ---- replay: a pane under the table ---- */
/* The columns cut a scenario's title and lesson; the pane under the list
 * shows the selected one's whole, wrapped: a teacher picks by the lesson. */
/* The rows text takes word-wrapped at w columns (as hop_text wraps it). */
static int wrapped_rows(const char *text, int w)
{
	int rows = 0;
	for (const char *p = text; p && *p; rows++) {
		size_t len = strlen(p), take = len;
		if ((int)len > w) {
			take = (size_t)w;
			while (take > 0 && p[take] != ' ')
				take--;
			if (!take)
				take = (size_t)w;
		}
		p += take;
		while (*p == ' ')
			p++;
	}
	return rows;
}

static int preview_rows(struct app *a, struct view *v, int top, int bottom)
{
	const struct trow *r = table_selected(&v->t);
	if (!r)
		return 0;
	int room = (bottom - top) / 3, /* the list keeps two thirds */
		want = 1 + wrapped_rows(r->cells[4] ? r->cells[4] : "", a->cols - 2);
	return room < 2 ? 0 : want < room ? want : room;
}

static void preview_draw(struct app *a, struct view *v, int top, int bottom)
{
	const struct trow *r = table_selected(&v->t);
	if (!r)
		return;
	char bar[300];
	snprintf(bar, sizeof bar, " %s: %s", r->cells[0] ? r->cells[0] : "",
		 r->color == C_BAD ? "does not load" : r->cells[3] ? r->cells[3] : "");
	attron(theme_attr(C_TITLE));
	mvhline(top, 0, ' ', a->cols);
	draw_clipped(top, 0, a->cols, bar);
	attroff(theme_attr(C_TITLE));
	hop_text(top + 1, 1, a->cols - 2, bottom - top, 1,
		 r->color == C_BAD ? theme_attr(C_BAD) : (int)A_NORMAL, r->cells[4] ? r->cells[4] : "");
}

const struct view_ops view_replay = {
	.name = "replay",
	.title = "Replay",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.load = load,
	.enter = enter,
	.sourceless = true,
	.key = presenter_list_key, /* ---- presenter: a scenario by its number ---- */
	.pane_rows = preview_rows, /* ---- replay: a pane under the table ---- */
	.pane_draw = preview_draw,
};
