/* One file of a sandbox (enter on a file in the files view): its text, or
 * for a binary file a hex dump, read through the sandbox's init (the first
 * WIRE_OPERATOR_READ_DEFAULT bytes). j/k, g/G scroll. Every byte is the
 * sandbox's: lines are escaped (ui_text.h), tabs become spaces. */
#include "app.h"
#include "ui_text.h"
#include "wire_operator.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct file_view {
	bool have;
	uint8_t *data;
	size_t len;
	uint64_t size;
	bool truncated, text;
	size_t top;    /* first line shown */
	size_t nlines; /* of the text, or of the dump */
};

static const char *path_of(const struct view *v)
{
	return strlen(v->arg) > 65 ? v->arg + 65 : "";
}

static size_t count_lines(const struct file_view *f)
{
	if (!f->text)
		return (f->len + 15) / 16;
	size_t n = 0;
	for (size_t i = 0; i < f->len; i++)
		n += f->data[i] == '\n';
	return n + (f->len && f->data[f->len - 1] != '\n');
}

static void loaded(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		   const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct file_view *f = v->priv;
	free(f->data);
	f->data = xzalloc(len + 1);
	if (len)
		memcpy(f->data, data, len);
	f->len = len;
	f->size = size;
	f->truncated = truncated;
	f->text = ui_text_is_text(data, len);
	f->have = true;
	f->nlines = count_lines(f);
	char shown[200];
	ui_text_safe(shown, sizeof shown, path_of(v), strlen(path_of(v)), false);
	snprintf(v->sub, sizeof v->sub, "%.12s:/work/%.100s  %s, %llu bytes%s", v->arg, shown,
		 f->text ? "text" : "binary", (unsigned long long)size,
		 truncated ? " (the first part)" : "");
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv)
		v->priv = xzalloc(sizeof(struct file_view));
	struct file_view *f = v->priv;
	/* Read once: a refresh does not fetch a megabyte again. */
	if (f->have || v->loading)
		return;
	char fp[65];
	snprintf(fp, sizeof fp, "%.64s", v->arg);
	v->loading++;
	a->src->ops->read_file(a->src, fp, path_of(v), WIRE_OPERATOR_READ_DEFAULT, loaded, v);
}

/* Line i of the text, tabs as spaces, escaped, into out. */
static void text_line(const struct file_view *f, size_t i, char *out, size_t n)
{
	const uint8_t *p = f->data, *end = f->data + f->len;
	for (size_t k = 0; k < i && p < end; k++) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
	size_t len = (size_t)((nl ? nl : end) - p);
	char raw[1024];
	size_t o = 0;
	for (size_t k = 0; k < len && o + 8 < sizeof raw; k++) {
		if (p[k] == '\t') {
			do
				raw[o++] = ' ';
			while (o % 8);
		} else if (p[k] != '\r') {
			raw[o++] = (char)p[k];
		}
	}
	ui_text_safe(out, n, raw, o, false);
}

/* Dump line i: offset, 16 bytes in hex, and them as ASCII. */
static void dump_line(const struct file_view *f, size_t i, char *out, size_t n)
{
	size_t at = i * 16, o = (size_t)snprintf(out, n, "%08zx ", at);
	for (size_t k = 0; k < 16 && o + 4 < n; k++)
		o += at + k < f->len ? (size_t)snprintf(out + o, n - o, " %02x", f->data[at + k])
				     : (size_t)snprintf(out + o, n - o, "   ");
	o += (size_t)snprintf(out + o, n - o, "  |");
	for (size_t k = 0; k < 16 && at + k < f->len && o + 2 < n; k++) {
		uint8_t c = f->data[at + k];
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '.';
	}
	snprintf(out + o, n - o, "|");
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct file_view *f = v->priv;
	if (!f || !f->have) {
		attron(theme_attr(C_DIM));
		mvprintw(top + 1, 2, "%s", v->loading ? "loading..." : "(not loaded)");
		attroff(theme_attr(C_DIM));
		return;
	}
	int rows = bottom - top;
	if (f->nlines > (size_t)rows && f->top > f->nlines - (size_t)rows)
		f->top = f->nlines - (size_t)rows;
	if (f->nlines <= (size_t)rows)
		f->top = 0;
	for (int i = 0; i < rows && f->top + (size_t)i < f->nlines; i++) {
		char line[4096];
		if (f->text)
			text_line(f, f->top + (size_t)i, line, sizeof line);
		else
			dump_line(f, f->top + (size_t)i, line, sizeof line);
		mvaddnstr(top + i, 0, line, a->cols);
	}
	if (!f->nlines) {
		attron(theme_attr(C_DIM));
		mvprintw(top + 1, 2, "(empty)");
		attroff(theme_attr(C_DIM));
	}
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	(void)a;
	struct file_view *f = v->priv;
	if (!f)
		return r;
	switch (r) {
	case REQ_DOWN:
		if (f->top + 1 < f->nlines)
			f->top++;
		return REQ_NONE;
	case REQ_UP:
		if (f->top)
			f->top--;
		return REQ_NONE;
	case REQ_TOP:
		f->top = 0;
		return REQ_NONE;
	case REQ_BOTTOM:
		f->top = f->nlines ? f->nlines - 1 : 0;
		return REQ_NONE;
	default:
		return r;
	}
}

static void done(struct view *v)
{
	struct file_view *f = v->priv;
	if (f)
		free(f->data);
	free(f);
}

const struct view_ops view_file = {
	.name = "file",
	.title = "File",
	.load = load,
	.draw = draw,
	.request = request,
	.done = done,
};
