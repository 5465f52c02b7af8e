/* Leaks: what the reconcile finds alive that nothing should hold — orphans,
 * ghosts, abandoned and overdue sandboxes, stale images, stray cgroups,
 * calls a dead engine was running — with why and what holds each. enter
 * shows a suspect's timeline; space marks a finding; ctrl-d reaps the
 * marked ones (or the selected one) after a dry-run preview and [y/N]
 * (leaks_reap.c); e writes a report. */
#include "app.h"
#include "capture_view.h" /* ---- capture ---- */
#include "copy_time.h"    /* ---- report ---- */
#include "leaks_reap.h"
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
	/* ---- inflight: the marks, by row key (they outlive a refresh while
	 * the finding is still found) ---- */
	char (*marks)[128];
	size_t n_marks;
};

/* A finding's row key: unique (a session may be both an abandoned sandbox
 * and an interrupted call), its session first so a filter finds it. */
static void finding_key(const struct bh_leak *l, char *key, size_t n)
{
	snprintf(key, n, "%.65s %.20s %.40s", *l->fingerprint ? l->fingerprint : "-",
		 bh_leak_kind_name(l->kind), l->sandbox);
}

static bool marked(const struct findings *f, const char *key)
{
	for (size_t i = 0; i < f->n_marks; i++)
		if (!strcmp(f->marks[i], key))
			return true;
	return false;
}

static void toggle_mark(struct findings *f, const char *key)
{
	for (size_t i = 0; i < f->n_marks; i++) {
		if (!strcmp(f->marks[i], key)) {
			memmove(&f->marks[i], &f->marks[i + 1], (f->n_marks - i - 1) * sizeof *f->marks);
			f->n_marks--;
			return;
		}
	}
	f->marks = realloc(f->marks, (f->n_marks + 1) * sizeof *f->marks);
	if (!f->marks)
		abort();
	snprintf(f->marks[f->n_marks++], sizeof *f->marks, "%s", key);
}

static const struct bh_leak *finding_of(const struct findings *f, const char *key)
{
	for (size_t i = 0; i < f->n; i++) {
		char k[128];
		finding_key(&f->l[i], k, sizeof k);
		if (!strcmp(k, key))
			return &f->l[i];
	}
	return NULL;
}

static void title_marks(struct view *v)
{
	struct findings *f = v->priv;
	if (f->n_marks)
		snprintf(v->sub, sizeof v->sub, "(%zu marked: ctrl-d reaps them)", f->n_marks);
	else
		v->sub[0] = '\0';
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(struct view *v, const struct bh_leak *l, size_t n)
{
	struct findings *f = v->priv;
	/* Copied before the old rows go: a redraw passes the view's own. */
	struct bh_leak *copy = calloc(n ? n : 1, sizeof *l);
	if (!copy)
		abort();
	if (n)
		memcpy(copy, l, n * sizeof *l);
	free(f->l);
	f->l = copy;
	f->n = n;
	l = copy; /* l may have been the rows just freed */
	const struct trow *sel = table_selected(&v->t);
	char keep[128] = "";
	if (sel)
		snprintf(keep, sizeof keep, "%s", sel->key);
	table_clear(&v->t);
	int64_t now = wall_ms();
	/* Marks of findings no longer found go: a reap acts on what is there. */
	size_t kept = 0;
	for (size_t m = 0; m < f->n_marks; m++)
		if (finding_of(f, f->marks[m]))
			memmove(f->marks[kept++], f->marks[m], sizeof *f->marks);
	f->n_marks = kept;
	for (size_t i = 0; i < n; i++) {
		char key[128];
		finding_key(&l[i], key, sizeof key);
		bool on = marked(f, key);
		struct trow *r = table_add(&v->t, key, on ? C_WARN : C_BAD);
		snprintf(r->copy, sizeof r->copy, "%s", *l[i].fingerprint ? l[i].fingerprint : l[i].sandbox);
		char seen[16];
		fmt_age(seen, sizeof seen, l[i].first_seen_ms, now);
		/* ---- report: a store copy's SEEN is when, in UTC, not an age
		 * against this console's clock (a copy's now is not ours) ---- */
		if (!v->app->src->ops->has_engine) {
			copy_time(seen, sizeof seen, l[i].first_seen_ms, now);
			table_num(r, 3, l[i].first_seen_ms);
		}
		/* The mark in the words too, for monochrome. */
		table_cell(r, 0, "%s%s", on ? "*" : "", bh_leak_kind_name(l[i].kind));
		table_cell(r, 1, "%s", l[i].sandbox);
		table_cell(r, 2, "%.12s", *l[i].fingerprint ? l[i].fingerprint : "-");
		table_cell(r, 3, "%s", seen);
		table_cell(r, 4, "%s", l[i].reason);
		table_cell(r, 5, "%s", l[i].holder);
	}
	table_index(&v->t, v->filter, *keep ? keep : NULL);
	title_marks(v);
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

static enum request request(struct app *a, struct view *v, enum request r)
{
	/* ---- inflight: marks, and the reap of the marked (or the selected) ---- */
	struct findings *f = v->priv;
	const struct trow *sel = table_selected(&v->t);
	if (r == REQ_MARK) {
		if (!f || !sel || !finding_of(f, sel->key))
			return REQ_NONE;
		if (!a->src->ops->reap_chosen) {
			app_flash(a, C_INFO, "a daemon reaps every finding at once (ctrl-d): nothing to mark");
			return REQ_NONE;
		}
		char key[128];
		snprintf(key, sizeof key, "%s", sel->key);
		toggle_mark(f, key);
		fill(v, f->l, f->n); /* the rows show the mark; f->l is copied first */
		return REQ_NONE;
	}
	if (r == REQ_REAP) {
		if (!f || !f->n) {
			app_flash(a, C_INFO, "nothing to reap");
			return REQ_NONE;
		}
		struct bh_leak *chosen = calloc(f->n, sizeof *chosen);
		if (!chosen)
			abort();
		size_t n = 0;
		for (size_t i = 0; i < f->n_marks; i++) {
			const struct bh_leak *l = finding_of(f, f->marks[i]);
			if (l)
				chosen[n++] = *l;
		}
		const struct bh_leak *one = sel ? finding_of(f, sel->key) : NULL;
		if (!n && one)
			chosen[n++] = *one;
		/* A source that reaps only everything: the preview lists it all. */
		if (!a->src->ops->reap_chosen) {
			memcpy(chosen, f->l, f->n * sizeof *chosen);
			n = f->n;
		}
		leaks_reap(a, chosen, n);
		free(chosen);
		return REQ_NONE;
	}
	if (r == REQ_EXPORT) { /* ---- capture: the report, where the operator says ---- */
		report_ask(a, f ? f->l : NULL, f ? f->n : 0);
		return REQ_NONE;
	}
	if (r == REQ_CAPTURE) { /* ---- capture ---- */
		const struct bh_leak *l = f && sel ? finding_of(f, sel->key) : NULL;
		if (!l)
			app_flash(a, C_INFO, "no finding to capture");
		else
			capture_ask(a, *l->sandbox ? l->sandbox : l->fingerprint, l->sandbox);
		return REQ_NONE;
	}
	return r;
}

/* A suspect's timeline (views/timeline.c): its events, cells and the call
 * it was running; a finding of no session shows the events naming it. */
static void enter(struct app *a, struct view *v, const struct trow *row)
{
	const struct bh_leak *l = finding_of(v->priv, row->key);
	if (l && *l->fingerprint) {
		app_push(a, &view_timeline, l->fingerprint);
		return;
	}
	struct view *ev = app_push(a, &view_events, NULL);
	const char *name = l ? l->sandbox : row->key;
	snprintf(ev->filter, sizeof ev->filter, "%.40s", name);
	snprintf(ev->sub, sizeof ev->sub, "(events of %.40s)", name);
	ev->filter_is_arg = true; /* esc goes back to the leaks, not to every event (B12) */
	/* The embedded source answered inside app_push, before the filter. */
	table_index(&ev->t, ev->filter, NULL);
	ev->t.sel = ev->t.nshown ? ev->t.nshown - 1 : 0;
}

static void done(struct view *v)
{
	struct findings *f = v->priv;
	if (f) {
		free(f->l);
		free(f->marks);
	}
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
