/* Runs: the conversations sandboxes served (a session's run key), with how
 * many sandboxes each had and how many calls they took — a run that needed
 * several sandboxes had fresh-sandbox moments. enter shows its sandboxes. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"RUN", "SANDBOXES", "LIVE", "CALLS", "OWNER"};
static const int widths[] = {24, 9, 5, 6, 0};
static const enum col_type types[] = {COL_TEXT, COL_NUMBER, COL_NUMBER, COL_NUMBER, COL_TEXT};

struct agg {
	char run[65], owner[65];
	size_t sandboxes, live;
	uint64_t calls;
};

static void loaded(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct agg *g = calloc(n ? n : 1, sizeof *g);
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		const char *run = *rows[i].run_key ? rows[i].run_key : "(no run key)";
		size_t k = 0;
		while (k < ng && strcmp(g[k].run, run))
			k++;
		if (k == ng) {
			snprintf(g[ng].run, sizeof g[ng].run, "%s", run);
			snprintf(g[ng].owner, sizeof g[ng].owner, "%s", rows[i].owner);
			ng++;
		}
		g[k].sandboxes++;
		g[k].live += strcmp(rows[i].state, "ended") != 0;
		g[k].calls += rows[i].calls;
	}
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	for (size_t k = 0; k < ng; k++) {
		struct trow *r = table_add(&v->t, g[k].run, g[k].live ? C_GOOD : C_DIM);
		table_cell(r, 0, "%s", g[k].run);
		table_cell(r, 1, "%zu", g[k].sandboxes);
		table_cell(r, 2, "%zu", g[k].live);
		table_cell(r, 3, "%llu", (unsigned long long)g[k].calls);
		table_cell(r, 4, "%.12s", *g[k].owner ? g[k].owner : "-");
	}
	free(g);
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	v->loading++;
	a->src->ops->sessions(a->src, loaded, v);
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	app_push(a, &view_sandboxes, strcmp(row->key, "(no run key)") ? row->key : "");
}

const struct view_ops view_runs = {
	.name = "runs",
	.title = "Runs",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.load = load,
	.enter = enter,
};
