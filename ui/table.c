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

/* k9s's filter: a substring of any cell (or the key), any case; "!text"
 * keeps the rows that do not hold it. */
static bool matches(const struct trow *r, const char *filter)
{
	if (!filter || !*filter)
		return true;
	bool invert = filter[0] == '!';
	if (invert && !*++filter)
		return true;
	bool hit = strcasestr(r->key, filter) != NULL;
	for (size_t c = 0; c < TABLE_MAX_COLS && !hit; c++)
		hit = r->cells[c] && strcasestr(r->cells[c], filter);
	return hit != invert;
}

double table_cell_number(const char *cell, enum col_type ty)
{
	while (cell && (*cell == ' ' || *cell == '~' || *cell == '<' || *cell == '>'))
		cell++;
	if (!cell || !(*cell == '-' || *cell == '.' || (*cell >= '0' && *cell <= '9')))
		return -1e300; /* "-", "(none)": before every number */
	char *end;
	double v = strtod(cell, &end);
	if (end == cell)
		return -1e300;
	if (ty != COL_DURATION)
		return v;
	while (*end == ' ')
		end++;
	static const struct {
		const char *unit;
		double s;
	} units[] = {{"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60},
		     {"h", 3600}, {"d", 86400}, {"w", 604800}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strncmp(end, units[i].unit, strlen(units[i].unit)))
			return v * units[i].s;
	return v;
}

static const struct table *sorting;

static int by_col(const void *x, const void *y)
{
	const struct trow *a = &sorting->rows[*(const size_t *)x];
	const struct trow *b = &sorting->rows[*(const size_t *)y];
	int col = sorting->sort_col;
	const char *p = a->cells[col] ? a->cells[col] : "";
	const char *q = b->cells[col] ? b->cells[col] : "";
	int c;
	/* ---- usage: a cell's own numeric key (bytes, millicores) when both have one ---- */
	if (a->has_num & b->has_num & (1u << col)) {
		c = a->num[col] < b->num[col] ? -1 : a->num[col] > b->num[col];
	} else if (sorting->sort_type == COL_NUMBER || sorting->sort_type == COL_DURATION) {
		double u = table_cell_number(p, sorting->sort_type), w = table_cell_number(q, sorting->sort_type);
		c = u < w ? -1 : u > w;
	} else {
		c = strcmp(p, q);
	}
	if (sorting->sort_desc)
		c = -c;
	/* Equal rows keep the order they came in, either way. */
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	return c ? c : (i > j) - (i < j);
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
	/* A row asked for (a sandbox just opened) wins once it is there. */
	if (*t->want)
		for (size_t i = 0; i < t->nshown; i++)
			if (!strcmp(t->rows[t->shown[i]].key, t->want)) {
				t->sel = i;
				t->want[0] = '\0';
				return;
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

/* ---- tables ---- */

int table_sort_letter(const struct view_ops *o, size_t col)
{
	bool taken[26] = {false};
	/* Capitals a binding already uses (G: the last row) are not sort keys. */
	for (size_t i = 0; i < ui_n_bindings; i++)
		if (ui_bindings[i].key >= 'A' && ui_bindings[i].key <= 'Z')
			taken[ui_bindings[i].key - 'A'] = true;
	size_t n = o->ncols + o->nwide;
	for (size_t c = 0; c < n && c <= col; c++) {
		int letter = 0;
		for (const char *h = o->headers[c]; *h && !letter; h++) {
			int u = (*h >= 'a' && *h <= 'z') ? *h - 32 : *h;
			if (u >= 'A' && u <= 'Z' && !taken[u - 'A'])
				letter = u;
		}
		if (letter)
			taken[letter - 'A'] = true;
		if (c == col)
			return letter;
	}
	return 0;
}

void table_sort_by(struct table *t, int col, enum col_type ty, const char *filter)
{
	if (t->sort_col == col) {
		t->sort_desc = !t->sort_desc;
	} else {
		t->sort_col = col;
		t->sort_desc = false;
	}
	t->sort_type = ty;
	const struct trow *sel = table_selected(t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_index(t, filter, keep);
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
