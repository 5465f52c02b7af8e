/* A suspect's timeline: one session's events, its stored cells (each with
 * its code, an output prefix, exit and flags) and the call it was running
 * when its engine died ("was running", red), merged in time order on one
 * screen, with the principal and owner that opened it. Opened with enter
 * from a leak or a sandbox; esc goes back (its title is its own: B12). */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELLS_LIMIT 200
#define EVENTS_LIMIT 1000
#define LINE_PREFIX 60

static const char *const headers[] = {"AT (UTC)", "WHAT", "SEQ", "EXIT", "FLAGS", "CODE => OUTPUT"};
static const int widths[] = {8, 11, 3, 4, 10, 0};
static const enum col_type types[] = {COL_TIME, COL_TEXT, COL_NUMBER, COL_TEXT, COL_TEXT, COL_TEXT};

struct item {
	int64_t at_ms;
	int order; /* within one millisecond: the event, the cell, the intent */
	enum ui_color color;
	char what[24], seq[12], exit[8], flags[200], text[400];
};

struct timeline {
	struct item *v;
	size_t n;
	int waiting;       /* answers still to come of this load */
	char errors[256];  /* what could not be read, said in the title */
	char principal[65], owner[65];
	bool opener_known; /* read from a row: an empty owner is none */
};

static struct item *add(struct timeline *t, int64_t at_ms, int order, enum ui_color c)
{
	t->v = realloc(t->v, (t->n + 1) * sizeof *t->v);
	if (!t->v)
		abort();
	struct item *it = &t->v[t->n++];
	memset(it, 0, sizeof *it);
	it->at_ms = at_ms;
	it->order = order;
	it->color = c;
	return it;
}

/* The first line of some bytes, cut, with a mark when there was more. */
static void first_line(char *out, size_t n, const char *p, size_t len)
{
	size_t k = 0;
	while (k < len && p[k] != '\n' && k < LINE_PREFIX)
		k++;
	bool more = k < len;
	snprintf(out, n, "%.*s%s", (int)k, p, more ? "..." : "");
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

static void note_error(struct timeline *t, const char *what, const char *err)
{
	size_t used = strlen(t->errors);
	snprintf(t->errors + used, sizeof t->errors - used, "%s%s: %s", used ? "; " : "", what, err);
}

static int by_time(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->at_ms != y->at_ms)
		return x->at_ms < y->at_ms ? -1 : 1;
	return x->order - y->order;
}

static void show(struct view *v)
{
	struct timeline *t = v->priv;
	qsort(t->v, t->n, sizeof *t->v, by_time);
	table_clear(&v->t);
	for (size_t i = 0; i < t->n; i++) {
		const struct item *it = &t->v[i];
		char key[32], at[16];
		snprintf(key, sizeof key, "%zu", i);
		time_t s = (time_t)(it->at_ms / 1000);
		struct tm tm;
		gmtime_r(&s, &tm);
		strftime(at, sizeof at, "%H:%M:%S", &tm);
		struct trow *r = table_add(&v->t, key, it->color);
		table_cell(r, 0, "%s", at);
		table_cell(r, 1, "%s", it->what);
		table_cell(r, 2, "%s", it->seq);
		table_cell(r, 3, "%s", it->exit);
		table_cell(r, 4, "%s", it->flags);
		table_cell(r, 5, "%s", it->text);
	}
	table_index(&v->t, v->filter, NULL);
	const char *none = t->opener_known ? "none" : "?";
	snprintf(v->sub, sizeof v->sub, "(%.12s, principal %.40s, owner %.12s%s%.60s)", v->arg,
		 *t->principal ? t->principal : none, *t->owner ? t->owner : none,
		 *t->errors ? "; " : "", t->errors);
}

static void one_done(struct view *v)
{
	struct timeline *t = v->priv;
	if (--t->waiting > 0)
		return;
	view_load_ok(v);
	show(v);
}

static void events_loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct timeline *t = v->priv;
	if (err)
		note_error(t, "events", err);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].session, v->arg))
			continue;
		bool bad = strstr(rows[i].kind, "reap") || strstr(rows[i].detail, "ended");
		struct item *it = add(t, rows[i].at_ms, 0, bad ? C_WARN : C_NORMAL);
		snprintf(it->what, sizeof it->what, "%s", rows[i].kind);
		snprintf(it->text, sizeof it->text, "%s", rows[i].detail);
	}
	one_done(v);
}

static void cells_loaded(void *arg, const struct ui_cell *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct timeline *t = v->priv;
	if (err)
		note_error(t, "cells", err);
	for (size_t i = 0; i < n; i++) {
		const struct ui_cell *c = &rows[i];
		bool unanswered = *c->unanswered;
		struct item *it = add(t, c->started_ms, 1, unanswered ? C_BAD : C_NORMAL);
		snprintf(it->what, sizeof it->what, "%s %s", unanswered ? "unanswered" : "cell",
			 c->language);
		snprintf(it->seq, sizeof it->seq, "%llu", (unsigned long long)c->sequence);
		if (unanswered)
			snprintf(it->exit, sizeof it->exit, "-");
		else
			snprintf(it->exit, sizeof it->exit, "%d", c->exit_code);
		snprintf(it->flags, sizeof it->flags, "%s", unanswered ? c->unanswered : c->flags);
		char code[96], out[96];
		first_line(code, sizeof code, c->code, c->code_len);
		first_line(out, sizeof out, c->out_len ? c->out : c->err, c->out_len ? c->out_len : c->err_len);
		snprintf(it->text, sizeof it->text, "%s => %s", code, out);
	}
	one_done(v);
}

static void inflight_loaded(void *arg, const struct bh_inflight *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct timeline *t = v->priv;
	if (err)
		note_error(t, "calls in flight", err);
	for (size_t i = 0; i < n; i++) {
		const struct bh_inflight *r = &rows[i];
		/* Red, and the words say it without colour. */
		struct item *it = add(t, r->started_ms, 2, r->interrupted ? C_BAD : C_WARN);
		snprintf(it->what, sizeof it->what, "%s", r->interrupted ? "was running" : "running");
		snprintf(it->seq, sizeof it->seq, "%llu", (unsigned long long)r->sequence);
		snprintf(it->exit, sizeof it->exit, "-");
		snprintf(it->flags, sizeof it->flags, "%s", r->language);
		char code[96];
		if (r->code_kept)
			first_line(code, sizeof code, r->code, r->code_len);
		else
			snprintf(code, sizeof code, "code %.12s (the store keeps digests only)",
				 r->code_sha256);
		if (r->interrupted)
			snprintf(it->text, sizeof it->text, "%s => (no answer: engine %lld died)", code,
				 (long long)r->engine_pid);
		else
			snprintf(it->text, sizeof it->text, "%s => (running)", code);
		snprintf(t->principal, sizeof t->principal, "%s", r->principal);
		snprintf(t->owner, sizeof t->owner, "%s", r->owner);
		t->opener_known = true;
	}
	one_done(v);
}

static void detail_loaded(void *arg, const struct ui_session *row, const char *code, const char *err)
{
	(void)code;
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct timeline *t = v->priv;
	/* A session no engine holds has no detail: its intent names who opened it. */
	if (!err && row) {
		snprintf(t->principal, sizeof t->principal, "%s", row->principal);
		snprintf(t->owner, sizeof t->owner, "%s", row->owner);
		t->opener_known = true;
	}
	one_done(v);
}

static void load(struct app *a, struct view *v)
{
	struct timeline *t = v->priv;
	if (!t) {
		t = v->priv = calloc(1, sizeof *t);
		if (!t)
			abort();
	}
	if (t->waiting)
		return; /* the last load is still answering */
	free(t->v);
	t->v = NULL;
	t->n = 0;
	t->errors[0] = '\0';
	const struct ui_source_ops *o = a->src->ops;
	t->waiting = 4;
	v->loading += 4;
	struct ui_page page = {.newest = true, .limit = EVENTS_LIMIT};
	o->events(a->src, &page, events_loaded, v);
	o->cells(a->src, v->arg, 0, CELLS_LIMIT, cells_loaded, v);
	o->inflight(a->src, v->arg, inflight_loaded, v);
	o->session_detail(a->src, v->arg, detail_loaded, v);
}

static void done(struct view *v)
{
	struct timeline *t = v->priv;
	if (t)
		free(t->v);
	free(t);
}

const struct view_ops view_timeline = {
	.name = "timeline",
	.title = "Timeline",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.load = load,
	.done = done,
};
