/* Leaks: what the reconcile finds alive that nothing should hold — orphans,
 * ghosts, abandoned and overdue sandboxes, stale images, stray cgroups —
 * with why and what holds each. enter shows a suspect's timeline (its
 * events); ctrl-d reaps them all after a confirm; e writes a report. */
#include "app.h"
#include "capture_view.h" /* ---- capture ---- */
#include "report_view.h"  /* ---- capture ---- */
#include "ui_files.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const headers[] = {"KIND", "SANDBOX", "SESSION", "SEEN", "REASON", "HOLDER"};
static const int widths[] = {12, 20, 12, 5, 0, 14};
static const enum col_type types[] = {COL_TEXT, COL_TEXT, COL_TEXT, COL_DURATION, COL_TEXT, COL_TEXT};

struct findings {
	struct bh_leak *l;
	size_t n;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(struct view *v, const struct bh_leak *l, size_t n)
{
	struct findings *f = v->priv;
	free(f->l);
	f->l = calloc(n ? n : 1, sizeof *l);
	if (!f->l)
		abort();
	if (n)
		memcpy(f->l, l, n * sizeof *l);
	f->n = n;
	table_clear(&v->t);
	int64_t now = wall_ms();
	for (size_t i = 0; i < n; i++) {
		struct trow *r = table_add(&v->t, *l[i].fingerprint ? l[i].fingerprint : l[i].sandbox, C_BAD);
		char seen[16];
		fmt_age(seen, sizeof seen, l[i].first_seen_ms, now);
		table_cell(r, 0, "%s", bh_leak_kind_name(l[i].kind));
		table_cell(r, 1, "%s", l[i].sandbox);
		table_cell(r, 2, "%.12s", *l[i].fingerprint ? l[i].fingerprint : "-");
		table_cell(r, 3, "%s", seen);
		table_cell(r, 4, "%s", l[i].reason);
		table_cell(r, 5, "%s", l[i].holder);
	}
	table_index(&v->t, v->filter, NULL);
}

static void loaded(void *arg, const struct bh_leak *l, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	/* A source without an engine finds no leaks, and says why: that is
	 * what the view has to show, not a failure. */
	if (err && !v->app->src->ops->has_engine) {
		snprintf(v->sub, sizeof v->sub, "(%s)", err);
		return;
	}
	if (err) {
		view_load_failed(v->app, v, err);
		return;
	}
	view_load_ok(v);
	fill(v, l, n);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct findings));
		if (!v->priv)
			abort();
	}
	v->loading++;
	a->src->ops->leaks(a->src, loaded, v);
}

struct reaping {
	struct app *a;
	struct view *v;
};

static void reaped(void *arg, const struct bh_leak *l, size_t n, const char *err)
{
	struct reaping *r = arg;
	app_busy(r->a, "");
	if (err)
		app_flash(r->a, C_BAD, "reap: %s", err);
	else
		app_flash(r->a, C_GOOD, "reaped %zu finding%s%s%s", n, n == 1 ? "" : "s", n ? ": " : "",
			  n ? l[0].sandbox : "");
	app_refresh(r->a);
	free(r);
}

/* ---- capture: a reap from the console captures first ---- */
static void reap_after_capture(struct app *a, bool ok, const char *dir, void *arg)
{
	(void)dir;
	if (!ok)
		return; /* the flash said which finding was not captured; nothing is reaped */
	struct reaping *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	*r = (struct reaping){.a = a, .v = arg};
	app_busy(a, "reaping");
	a->src->ops->reap(a->src, reaped, r);
}

static void reap_confirmed(struct app *a, const char *text, void *arg)
{
	if (!text)
		return; /* No */
	struct view *v = arg;
	struct findings *f = v->priv;
	capture_all_then(a, f->l, f->n, reap_after_capture, v);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	if (r == REQ_REAP) {
		struct findings *f = v->priv;
		if (!f || !f->n) {
			app_flash(a, C_INFO, "nothing to reap");
			return REQ_NONE;
		}
		char q[96];
		snprintf(q, sizeof q, "reap %zu finding%s?", f->n, f->n == 1 ? "" : "s");
		prompt_confirm(a, q, reap_confirmed, v);
		return REQ_NONE;
	}
	if (r == REQ_EXPORT) { /* ---- capture: the report, where the operator says ---- */
		struct findings *f = v->priv;
		report_ask(a, f ? f->l : NULL, f ? f->n : 0);
		return REQ_NONE;
	}
	/* ---- capture ---- */
	if (r == REQ_CAPTURE) {
		const struct trow *row = table_selected(&v->t);
		struct findings *f = v->priv;
		const struct bh_leak *l = NULL;
		for (size_t i = 0; row && f && i < f->n && !l; i++)
			if (!strcmp(row->key, *f->l[i].fingerprint ? f->l[i].fingerprint : f->l[i].sandbox))
				l = &f->l[i];
		if (!l)
			app_flash(a, C_INFO, "no finding to capture");
		else
			capture_ask(a, *l->sandbox ? l->sandbox : l->fingerprint, l->sandbox);
		return REQ_NONE;
	}
	return r;
}

/* A suspect's timeline: its events. */
static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	struct view *ev = app_push(a, &view_events, NULL);
	snprintf(ev->filter, sizeof ev->filter, "%.12s", row->key);
	snprintf(ev->sub, sizeof ev->sub, "(timeline of %.12s)", row->key);
	ev->filter_is_arg = true; /* esc goes back to the leaks, not to every event (B12) */
	/* The embedded source answered inside app_push, before the filter. */
	table_index(&ev->t, ev->filter, NULL);
	ev->t.sel = ev->t.nshown ? ev->t.nshown - 1 : 0;
}

static void done(struct view *v)
{
	struct findings *f = v->priv;
	if (f)
		free(f->l);
	free(f);
}

const struct view_ops view_leaks = {
	.name = "leaks",
	.title = "Leaks",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
	.done = done,
};
