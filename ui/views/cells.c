/* Cells (`l` on a sandbox, k9s's logs key): a session's cells newest first
 * — #, language, exit, flags, duration, the code's first line — from the
 * store, with the running one on top (its output follows in the pane).
 * enter opens a cell's pane (views/cell.c). */
#include "app.h"
#include "cell_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"#", "LANGUAGE", "EXIT", "FLAGS", "DURATION", "CODE"};
static const int widths[] = {5, 10, 7, 24, 9, 0};

#define CELLS_SHOWN 50

struct stored {
	uint64_t sequence;
	char language[16], flags[200], unanswered[32], code[96];
	int exit_code;
	int64_t duration_us;
};

struct cells {
	struct stored rows[CELLS_SHOWN];
	size_t n;
	bool have_running;
	uint64_t running_seq;
	char running_language[16], running_code[96];
	int64_t running_started_ms;
};

static void rebuild(struct view *v)
{
	struct cells *c = v->priv;
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	char key[32], dur[32];
	if (c->have_running && (!c->n || c->rows[0].sequence < c->running_seq)) {
		snprintf(key, sizeof key, "%llu", (unsigned long long)c->running_seq);
		struct trow *t = table_add(&v->t, key, C_INFO);
		table_cell(t, 0, "%llu", (unsigned long long)c->running_seq);
		table_cell(t, 1, "%s", c->running_language);
		table_cell(t, 2, "running");
		table_cell(t, 3, "-");
		fmt_age(dur, sizeof dur, c->running_started_ms, (int64_t)now_real_ms());
		table_cell(t, 4, "%s", dur);
		table_cell(t, 5, "%s", c->running_code);
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct stored *s = &c->rows[i];
		snprintf(key, sizeof key, "%llu", (unsigned long long)s->sequence);
		struct trow *t = table_add(&v->t, key,
					   *s->unanswered ? C_BAD : s->exit_code ? C_WARN : C_NORMAL);
		table_cell(t, 0, "%llu", (unsigned long long)s->sequence);
		table_cell(t, 1, "%s", *s->language ? s->language : "-");
		if (*s->unanswered)
			table_cell(t, 2, "-");
		else
			table_cell(t, 2, "%d", s->exit_code);
		table_cell(t, 3, "%s", *s->flags ? s->flags : (*s->unanswered ? s->unanswered : "-"));
		cell_text_duration(dur, sizeof dur, s->duration_us);
		table_cell(t, 4, "%s", dur);
		table_cell(t, 5, "%s", s->code);
	}
	table_index(&v->t, v->filter, *keep ? keep : NULL);
}

static void stored_loaded(void *arg, const struct ui_cell *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct cells *c = v->priv;
	c->n = 0;
	for (size_t i = 0; i < n && c->n < CELLS_SHOWN; i++) {
		struct stored *s = &c->rows[c->n++];
		*s = (struct stored){.sequence = rows[i].sequence, .exit_code = rows[i].exit_code,
				     .duration_us = rows[i].duration_us};
		snprintf(s->language, sizeof s->language, "%s", rows[i].language);
		snprintf(s->flags, sizeof s->flags, "%s", rows[i].flags);
		snprintf(s->unanswered, sizeof s->unanswered, "%s", rows[i].unanswered);
		cell_text_first_line(s->code, sizeof s->code, rows[i].code, rows[i].code_len);
	}
	rebuild(v);
}

static void running_loaded(void *arg, const struct ui_follow *f, const char *err)
{
	struct view *v = arg;
	/* A store has no running cell: that is no failure of this view. */
	if (!view_done_loading(v))
		return;
	struct cells *c = v->priv;
	c->have_running = !err && f && f->running;
	if (c->have_running) {
		c->running_seq = f->sequence;
		c->running_started_ms = f->started_ms;
		snprintf(c->running_language, sizeof c->running_language, "%s", f->language);
		cell_text_first_line(c->running_code, sizeof c->running_code, f->code, f->code_len);
	}
	rebuild(v);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct cells));
		if (!v->priv)
			abort();
	}
	snprintf(v->sub, sizeof v->sub, "(session %.12s)", v->arg);
	v->loading++;
	a->src->ops->cells(a->src, v->arg, 0, CELLS_SHOWN, stored_loaded, v);
	if (a->src->ops->has_engine) {
		v->loading++;
		a->src->ops->follow(a->src, v->arg, 0, 0, 0, 0, running_loaded, v);
	}
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	char arg[128];
	snprintf(arg, sizeof arg, "%.64s:%.40s", v->arg, row->key);
	app_push(a, &view_cell, arg);
}

static void done(struct view *v)
{
	free(v->priv);
}

const struct view_ops view_cells = {
	.name = "cells",
	.title = "Cells",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.enter = enter,
	.done = done,
};
