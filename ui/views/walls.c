/* Walls: a teaching simulation. Pick a floor (none ... vm) with j/k and see
 * what a call asking for it would get against the tiers this engine proved
 * — run, or the refusal, word for word — with the evidence that proved
 * them. It sends nothing. */
#include "app.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct walls {
	struct ui_tier tiers[BH_TIER_COUNT];
	size_t n;
	char err[256];
};

static void loaded(void *arg, const struct ui_tier *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct walls *w = v->priv;
	/* A source without an engine proves no tier, and says why: the body
	 * says it in place of the floors. */
	if (err && !v->app->src->ops->has_engine) {
		snprintf(w->err, sizeof w->err, "%s", err);
		return;
	}
	if (err) {
		view_load_failed(v->app, v, err); /* the tiers proven before stay */
		return;
	}
	view_load_ok(v);
	w->err[0] = '\0';
	w->n = n < BH_TIER_COUNT ? n : BH_TIER_COUNT;
	if (rows)
		memcpy(w->tiers, rows, w->n * sizeof *rows);
	size_t sel = v->t.sel;
	table_clear(&v->t);
	for (int f = BH_TIER_NONE; f < BH_TIER_COUNT; f++) {
		struct trow *r = table_add(&v->t, bh_tier_name((enum bh_tier)f), C_NORMAL);
		table_cell(r, 0, "%s", bh_tier_name((enum bh_tier)f));
	}
	table_index(&v->t, NULL, NULL);
	v->t.sel = sel < v->t.nshown ? sel : 0;
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct walls));
		if (!v->priv)
			abort();
		v->t.sel = BH_TIER_KERNEL; /* the default floor of the TypeScript add-on */
	}
	v->loading++;
	a->src->ops->tiers(a->src, loaded, v);
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct walls *w = v->priv;
	int y = top + 1;
	if (!w || *w->err || !v->ever_loaded) {
		mvprintw(y, 2, "%s",
			 w && *w->err ? w->err
			 : *v->stale  ? "not loaded (the title says why)"
				      : "loading...");
		return;
	}
	enum bh_tier best = BH_TIER_UNKNOWN;
	const struct ui_tier *best_t = NULL;
	for (size_t i = 0; i < w->n; i++) {
		enum bh_tier t;
		if (w->tiers[i].offered && bh_tier_parse(w->tiers[i].tier, &t) == 0 && t > best) {
			best = t;
			best_t = &w->tiers[i];
		}
	}
	mvprintw(y++, 2, "floor (j/k)    what a call asking for it gets here");
	for (size_t f = 0; f < v->t.nshown && y < bottom; f++) {
		enum bh_tier floor = (enum bh_tier)f;
		bool ok = floor != BH_TIER_NONE && best != BH_TIER_UNKNOWN && bh_tier_meets(best, floor);
		int attr = theme_attr(ok ? C_GOOD : C_BAD) | (f == v->t.sel ? A_REVERSE : 0);
		attron(attr);
		if (floor == BH_TIER_NONE)
			mvprintw(y++, 2, "%-14s %-*.*s", "none", a->cols - 19, a->cols - 19,
				 "refused (request): a floor of none is not a floor; send no floor");
		else if (ok)
			mvprintw(y++, 2, "%-14s runs on the %s tier (%s)", bh_tier_name(floor), bh_tier_name(best),
				 best_t->runtime);
		else
			mvprintw(y++, 2, "%-14s %-.*s", bh_tier_name(floor), a->cols - 19,
				 best == BH_TIER_UNKNOWN ? "Nothing ran (environment): no tier is offered"
							 : "Nothing ran (isolation): the floor is above the tier");
		attroff(attr);
	}
	y++;
	for (size_t i = 0; i < w->n && y < bottom; i++) {
		const struct ui_tier *t = &w->tiers[i];
		if (!*t->runtime)
			continue;
		/* Clipped: a long refusal reason would wrap onto the next line. */
		char head[512];
		snprintf(head, sizeof head, "%s (%s): %s", t->tier, t->runtime,
			 t->offered ? "offered, proven by its smoke test" : t->reason);
		attron(A_BOLD);
		mvaddnstr(y++, 2, head, a->cols > 2 ? a->cols - 2 : 0);
		attroff(A_BOLD);
		for (size_t j = 0; j < t->n_lines && y < bottom; j++) {
			attron(theme_attr(t->lines[j].ok ? C_GOOD : C_BAD));
			mvprintw(y++, 4, "%-4s %-26s %.*s", t->lines[j].ok ? "ok" : "FAIL", t->lines[j].name,
				 a->cols - 40 > 0 ? a->cols - 40 : 0, t->lines[j].value);
			attroff(theme_attr(t->lines[j].ok ? C_GOOD : C_BAD));
		}
	}
}

static void done(struct view *v)
{
	free(v->priv);
}

const struct view_ops view_walls = {
	.name = "walls",
	.title = "Walls",
	.load = load,
	.draw = draw,
	.done = done,
};
