/* The table every list view draws: rows of text cells, a filter, a sort
 * column and a selection that stays on its row across refreshes. */
#include "app.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void table_clear(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		for (size_t c = 0; c < TABLE_MAX_COLS; c++)
			free(t->rows[i].cells[c]);
	t->n = 0;
	t->nshown = 0;
}

struct trow *table_add(struct table *t, const char *key, enum ui_color color)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 32;
		t->rows = realloc(t->rows, t->cap * sizeof *t->rows);
		t->shown = realloc(t->shown, t->cap * sizeof *t->shown);
		if (!t->rows || !t->shown)
			abort();
	}
	struct trow *r = &t->rows[t->n++];
	memset(r, 0, sizeof *r);
	snprintf(r->key, sizeof r->key, "%s", key ? key : "");
	r->color = color;
	return r;
}

void table_cell(struct trow *r, size_t col, const char *fmt, ...)
{
	if (col >= TABLE_MAX_COLS)
		return;
	va_list ap;
	va_start(ap, fmt);
	free(r->cells[col]);
	if (vasprintf(&r->cells[col], fmt, ap) < 0)
		abort();
	va_end(ap);
}

static bool matches(const struct trow *r, const char *filter)
{
	if (!filter || !*filter)
		return true;
	for (size_t c = 0; c < TABLE_MAX_COLS; c++)
		if (r->cells[c] && strcasestr(r->cells[c], filter))
			return true;
	return strcasestr(r->key, filter) != NULL;
}

static const struct table *sorting;

static int by_col(const void *x, const void *y)
{
	const struct trow *a = &sorting->rows[*(const size_t *)x];
	const struct trow *b = &sorting->rows[*(const size_t *)y];
	/* ---- usage: numeric keys sort biggest first (the busiest on top) ---- */
	int col = sorting->sort_col;
	if ((a->has_num & b->has_num & (1u << col)) && a->num[col] != b->num[col])
		return a->num[col] < b->num[col] ? 1 : -1;
	const char *p = a->cells[sorting->sort_col] ? a->cells[sorting->sort_col] : "";
	const char *q = b->cells[sorting->sort_col] ? b->cells[sorting->sort_col] : "";
	int c = strcmp(p, q);
	return c ? c : (int)(*(const size_t *)x - *(const size_t *)y);
}

void table_index(struct table *t, const char *filter, const char *keep_key)
{
	t->nshown = 0;
	for (size_t i = 0; i < t->n; i++)
		if (matches(&t->rows[i], filter))
			t->shown[t->nshown++] = i;
	if (t->sort_col >= 0 && t->nshown > 1) {
		sorting = t;
		qsort(t->shown, t->nshown, sizeof *t->shown, by_col);
	}
	if (keep_key && *keep_key)
		for (size_t i = 0; i < t->nshown; i++)
			if (!strcmp(t->rows[t->shown[i]].key, keep_key)) {
				t->sel = i;
				return;
			}
	if (t->sel >= t->nshown)
		t->sel = t->nshown ? t->nshown - 1 : 0;
}

const struct trow *table_selected(const struct table *t)
{
	return t->nshown ? &t->rows[t->shown[t->sel]] : NULL;
}

void fmt_age(char *buf, size_t n, int64_t since_ms, int64_t now_ms)
{
	if (since_ms <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	int64_t s = (now_ms - since_ms) / 1000;
	if (s < 0)
		s = -s;
	if (s < 120)
		snprintf(buf, n, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(buf, n, "%lldm", (long long)(s / 60));
	else if (s < 172800)
		snprintf(buf, n, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, n, "%lldd", (long long)(s / 86400));
}

void fmt_short(char *buf, size_t n, const char *hex)
{
	snprintf(buf, n, "%.12s", hex && *hex ? hex : "-");
}

/* ---- usage ---- */
void table_num(struct trow *r, size_t col, int64_t key)
{
	if (col >= TABLE_MAX_COLS)
		return;
	r->num[col] = key;
	r->has_num |= 1u << col;
}
