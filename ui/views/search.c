/* The search view (search_view.h): its argument is the query as typed.
 * Each hit is a row — session, sequence, stream, the match with its
 * context — whose bytes are the cell's, shown escaped (every byte outside
 * printable ASCII as \xHH, a newline as \n), the match between >> and <<. */
#include "search_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"SESSION", "SEQ", "STREAM", "MATCH"};
static const int widths[] = {12, 5, 6, 0};
static const enum col_type types[] = {COL_TEXT, COL_NUMBER, COL_TEXT, COL_TEXT};

static size_t escape(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		uint8_t c = p[i];
		if (c == '\n')
			o += (size_t)snprintf(out + o, cap - o, "\\n");
		else if (c < 0x20 || c >= 0x7f || c == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
	return o;
}

static void loaded(void *arg, const struct ui_search_hit *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	if (err) {
		view_load_failed(v->app, v, err);
		return;
	}
	view_load_ok(v);
	table_clear(&v->t);
	for (size_t i = 0; i < n; i++) {
		const struct ui_search_hit *h = &rows[i];
		char key[24], before[4 * sizeof h->snippet], match[4 * sizeof h->snippet],
			after[4 * sizeof h->snippet];
		snprintf(key, sizeof key, "%lld", (long long)h->id);
		escape(before, sizeof before, h->snippet, h->match_at);
		escape(match, sizeof match, h->snippet + h->match_at, h->match_len);
		escape(after, sizeof after, h->snippet + h->match_at + h->match_len,
		       h->snippet_len - h->match_at - h->match_len);
		struct trow *r = table_add(&v->t, key, C_NORMAL);
		table_cell(r, 0, "%.12s", *h->session ? h->session : "-");
		table_cell(r, RECORD_SESSION_CELL, "%s", h->session); /* ---- fleet ---- */
		table_cell(r, 1, "%llu", (unsigned long long)h->sequence);
		table_cell(r, 2, "%s", h->stream);
		/* The match first in sight: at most a little of what comes before. */
		size_t bl = strlen(before);
		const char *shown = bl > 16 ? before + bl - 16 : before;
		table_cell(r, 3, "%s%s>>%s<<%s%s", h->cut_before || bl > 16 ? "…" : "", shown, match,
			   after, h->cut_after ? "…" : "");
	}
	table_index(&v->t, v->filter, NULL);
	snprintf(v->sub, sizeof v->sub, "(%.60s)%s", v->arg,
		 n >= BH_SEARCH_MAX ? " the newest hits only" : "");
}

static void load(struct app *a, struct view *v)
{
	v->loading++;
	a->src->ops->search(a->src, v->arg, loaded, v);
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	char arg[sizeof row->key + 80];
	const char *fp = row->cells[RECORD_SESSION_CELL];
	snprintf(arg, sizeof arg, "%s%s%.65s", row->key, fp && *fp ? " " : "", fp ? fp : "");
	app_push(a, &view_record, arg);
}

const struct view_ops view_search = {
	.name = "search",
	.title = "Search",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.types = types,
	.widths = widths,
	.load = load,
	.enter = enter,
};

/* ---- the prompt ---- */

static bool has_prefix(const char *text)
{
	const char *rest = NULL;
	return bh_search_parse(text, &rest) != BH_SEARCH_ANY || rest != text;
}

/* As typed: the plain filter (a search query filters nothing while it is
 * typed); on Enter (the prompt is gone), a search query opens the view. */
static void typed(struct app *a, const char *text, void *arg)
{
	(void)arg;
	struct view *v = a->view;
	bool search = has_prefix(text);
	const char *filter = search ? "" : text;
	if (strcmp(v->filter, filter)) {
		snprintf(v->filter, sizeof v->filter, "%s", filter);
		table_index(&v->t, v->filter, NULL);
		v->t.sel = v->t.top = 0;
	}
	if (a->prompt || !search)
		return;
	const char *rest = NULL;
	bh_search_parse(text, &rest);
	if (!*rest) {
		app_flash(a, C_INFO, "search: give the text after the prefix (code:/etc/passwd)");
		return;
	}
	app_push(a, &view_search, text);
}

void search_filter_ask(struct app *a, struct view *v)
{
	prompt_text_live(a, "/", v->filter, typed, NULL);
}
