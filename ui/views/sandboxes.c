/* Sandboxes: every session the source holds, coloured by state; opens new
 * ones, runs cells in the console's own, and steers any of them. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Past BY, the wide toggle's (ctrl-w): the run a sandbox served and its
 * runtime name, which `/` finds too. */
static const char *const headers[] = {"SESSION", "STATE", "TIER", "FLOOR", "CALLS", "IDLE",
				      "EXPIRES", "OWNER", "BY", "RUN", "SANDBOX"};
static const int widths[] = {12, 11, 9, 9, 5, 5, 7, 8, 0, 0, 0};
static const enum col_type types[] = {COL_TEXT, COL_TEXT, COL_TEXT, COL_TEXT, COL_NUMBER, COL_DURATION,
				      COL_DURATION, COL_TEXT, COL_TEXT, COL_TEXT, COL_TEXT};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Ended sessions stay with the engine ten minutes (a late close still
 * learns why): listed only on `a`, in a run's drill-down, and on a store
 * opened read-only, where the history is the point. */
struct sb_view {
	bool all;
};

static void loaded(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	int64_t now = wall_ms();
	for (size_t i = 0; i < n; i++) {
		const struct ui_session *s = &rows[i];
		if (*v->arg && strcmp(s->run_key, v->arg))
			continue; /* drilled from a run */
		if (!((struct sb_view *)v->priv)->all && !*v->arg && !strcmp(s->state, "ended"))
			continue;
		struct trow *r = table_add(&v->t, s->fp, theme_for_state(s->state));
		table_cell(r, 0, "%.12s", s->fp);
		table_cell(r, 1, "%s", !strcmp(s->state, "ended") && *s->end_reason ? s->end_reason : s->state);
		/* ---- truth: a session running a cell is not idle (B18) ---- */
		char ran[16];
		fmt_age(ran, sizeof ran, s->call_started_ms, now);
		/* "running 119s" is wider than the column: "busy 119s" then. */
		if (s->call_started_ms)
			table_cell(r, 1, "%s %s", strlen(ran) + 8 <= (size_t)widths[1] ? "running" : "busy",
				   ran);
		table_cell(r, 2, "%s", s->tier);
		table_cell(r, 3, "%s", *s->floor ? s->floor : "-");
		table_cell(r, 4, "%llu", (unsigned long long)s->calls);
		char idle[16], exp[16];
		fmt_age(idle, sizeof idle, s->last_call_ms ? s->last_call_ms : s->created_ms, now);
		if (s->expires_ms > now && strcmp(s->state, "ended"))
			fmt_age(exp, sizeof exp, now, s->expires_ms);
		else
			snprintf(exp, sizeof exp, "-");
		table_cell(r, 5, "%s", s->call_started_ms ? "-" : idle);
		table_cell(r, 6, "%s", exp);
		table_cell(r, 7, "%s", *s->owner ? s->owner : "-"); /* cut with "…", whole when wide */
		/* "mine": this console opened it and may run cells in it. */
		table_cell(r, 8, "%s", s->mine ? "mine" : *s->principal ? s->principal : "-");
		/* Drawn only wide, but `/` and `:sb ARG` find them: the run a
		 * sandbox served and its runtime name. */
		table_cell(r, 9, "%s", *s->run_key ? s->run_key : "-");
		table_cell(r, 10, "%s", s->sandbox);
	}
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		struct sb_view *p = calloc(1, sizeof *p);
		if (!p)
			abort();
		p->all = !a->src->ops->has_engine;
		v->priv = p;
	}
	v->loading++;
	if (*v->arg)
		snprintf(v->sub, sizeof v->sub, "(run %.100s)", v->arg);
	else
		snprintf(v->sub, sizeof v->sub, "%s", ((struct sb_view *)v->priv)->all ? "(ended too)" : "");
	a->src->ops->sessions(a->src, loaded, v);
}

/* ---- actions ---- */

struct act {
	struct app *a;
	char verb[16];
	char fp[65];
};

static void acted(void *arg, const char *err)
{
	struct act *x = arg;
	app_busy(x->a, "");
	if (err)
		app_flash(x->a, C_BAD, "%s %.12s: %s", x->verb, x->fp, err);
	else
		app_flash(x->a, C_GOOD, "%s %.12s: done", x->verb, x->fp);
	app_refresh(x->a);
	free(x);
}

static void act_now(struct app *a, const char *verb, const char *fp)
{
	struct act *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->a = a;
	snprintf(x->verb, sizeof x->verb, "%s", verb);
	snprintf(x->fp, sizeof x->fp, "%s", fp);
	char what[64];
	snprintf(what, sizeof what, "%s %.12s", verb, fp);
	app_busy(a, what);
	a->src->ops->action(a->src, verb, fp, acted, x);
}

static void confirmed(struct app *a, const char *text, void *arg)
{
	struct act *x = arg;
	if (text)
		act_now(a, x->verb, x->fp);
	free(x);
}

static void ask(struct app *a, const char *verb, const char *fp)
{
	struct act *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	snprintf(x->verb, sizeof x->verb, "%s", verb);
	snprintf(x->fp, sizeof x->fp, "%s", fp);
	char q[128];
	snprintf(q, sizeof q, "%s sandbox %.12s?", verb, fp);
	prompt_confirm(a, q, confirmed, x);
}

static void opened(void *arg, const char *fp, const char *err)
{
	struct app *a = arg;
	app_busy(a, "");
	if (err) {
		app_flash(a, C_BAD, "open: %s", err);
	} else {
		app_flash(a, C_GOOD, "opened %.12s (yours, selected: x runs a cell in it)", fp);
		/* The selection moves to it when the refresh brings it (B9). */
		for (struct view *v = a->view; v; v = v->below)
			if (v->ops == &view_sandboxes)
				snprintf(v->t.want, sizeof v->t.want, "%s", fp);
	}
	app_refresh(a);
}

/* "tier floor owner", each optional: "", "container", "kernel kernel o1". */
static void open_with(struct app *a, const char *text, void *arg)
{
	(void)arg;
	char tier[16] = "", floor[16] = "", owner[80] = "";
	sscanf(text, "%15s %15s %79s", tier, floor, owner);
	if (!strcmp(tier, "-"))
		tier[0] = '\0';
	if (!strcmp(floor, "-"))
		floor[0] = '\0';
	/* A tier this build does not know is named with the ones it does. */
	enum bh_tier t;
	const char *bad = *tier && bh_tier_parse(tier, &t) < 0 ? tier : *floor && bh_tier_parse(floor, &t) < 0 ? floor : NULL;
	if (bad) {
		app_flash(a, C_BAD, "open: unknown tier \"%.15s\" (tiers: container, kernel, vm; offered here: %s)",
			  bad, a->tiers);
		return;
	}
	app_busy(a, "opening a sandbox");
	a->src->ops->open(a->src, tier, floor, owner, opened, a);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	const struct trow *sel = table_selected(&v->t);
	/* ---- procs: inside the selected sandbox ---- */
	if (r == REQ_PROCS || r == REQ_FILES) {
		if (!sel)
			app_flash(a, C_WARN, "no sandbox selected");
		else
			app_push(a, r == REQ_PROCS ? &view_processes : &view_files, sel->key);
		return REQ_NONE;
	}
	switch (r) {
	case REQ_OPEN:
		prompt_text(a, "open sandbox [tier floor owner] (enter: defaults): ", "", open_with, NULL);
		return REQ_NONE;
	case REQ_ALL:
		((struct sb_view *)v->priv)->all = !((struct sb_view *)v->priv)->all;
		load(a, v);
		return REQ_NONE;
	/* ---- truth ---- */
	case REQ_DESCRIBE:
		if (sel)
			app_push(a, &view_describe, sel->key);
		else
			app_flash(a, C_WARN, "no sandbox selected");
		return REQ_NONE;
	case REQ_RUN:
	case REQ_PAUSE:
	case REQ_RESUME:
	case REQ_HIBERNATE:
	case REQ_CLOSE:
	case REQ_KILL:
		break;
	default:
		return r;
	}
	if (!sel) {
		app_flash(a, C_WARN, "no sandbox selected");
		return REQ_NONE;
	}
	switch (r) {
	case REQ_RUN:
		if (!sel->cells[8] || strcmp(sel->cells[8], "mine")) {
			app_flash(a, C_WARN, "cells run only in sandboxes this console opened (n opens one)");
			break;
		}
		prompt_cell(a, sel->key, NULL); /* the language of the last cell */
		break;
	case REQ_PAUSE:
		act_now(a, "pause", sel->key);
		break;
	case REQ_RESUME:
		act_now(a, "resume", sel->key);
		break;
	case REQ_HIBERNATE:
		/* Only gVisor checkpoints here (sandbox_can_hibernate): said
		 * before anything is asked of the engine. */
		if (sel->cells[2] && !strcmp(sel->cells[2], "container")) {
			app_flash(a, C_WARN,
				  "hibernate %.12s: the container tier cannot hibernate (kernel tier only)",
				  sel->key);
			break;
		}
		act_now(a, "hibernate", sel->key);
		break;
	case REQ_CLOSE:
		ask(a, "close", sel->key);
		break;
	case REQ_KILL:
		ask(a, "kill", sel->key);
		break;
	default:
		break;
	}
	return REQ_NONE;
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	app_push(a, &view_records, row->key);
}

static void done(struct view *v)
{
	free(v->priv);
}

const struct view_ops view_sandboxes = {
	.done = done,
	.name = "sandboxes",
	.alias = "sb",
	.title = "Sandboxes",
	.ncols = 9,
	.nwide = sizeof headers / sizeof headers[0] - 9,
	.types = types,
	.headers = headers,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
};
