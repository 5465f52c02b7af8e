/* Modal input at the bottom of the screen: a one-line text prompt (the
 * filter, applied as it is typed; :commands; the open dialog), a yes/no
 * confirm whose default is No, and the cell editor — multi-line (ctrl-o
 * breaks a line, a pasted newline is a newline), a cursor (left, right,
 * home, end), Tab indents, up/down move between its lines and, from the
 * first line (up) or the last (down), walk the console's earlier cells, the
 * language switch (ctrl-t) is remembered for the next cell; enter runs it,
 * esc or ctrl-c cancels. */
#include "app.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROMPT_MAX 8192
#define HISTORY_MAX 64
#define TAB_WIDTH 4

enum prompt_kind { P_TEXT, P_CONFIRM, P_CELL };

struct prompt {
	enum prompt_kind kind;
	char label[160];
	char text[PROMPT_MAX];
	size_t len, cur; /* cur: the cursor, a byte offset into text */
	prompt_fn fn;
	void *arg;
	/* text: called on every edit too (the filter applies as it is typed),
	 * and with the text it started with when cancelled. */
	bool live;
	char initial[PROMPT_MAX];
	/* cell */
	char fp[65];
	char language[16];
	size_t hist; /* which earlier cell up/down shows: n_history is the new one */
	char draft[PROMPT_MAX]; /* the new cell, kept while walking the history */
};

/* The console's earlier cells, oldest first: one list per process (one
 * console runs in it). */
static char *history[HISTORY_MAX];
static size_t n_history;

static struct prompt *prompt_new(struct app *a, enum prompt_kind k, const char *label)
{
	prompt_cancel(a);
	struct prompt *p = xzalloc(sizeof *p);
	p->kind = k;
	snprintf(p->label, sizeof p->label, "%s", label);
	a->prompt = p;
	return p;
}

void prompt_text(struct app *a, const char *label, const char *initial, prompt_fn fn, void *arg)
{
	struct prompt *p = prompt_new(a, P_TEXT, label);
	snprintf(p->text, sizeof p->text, "%s", initial ? initial : "");
	p->len = p->cur = strlen(p->text);
	p->fn = fn;
	p->arg = arg;
}

void prompt_text_live(struct app *a, const char *label, const char *initial, prompt_fn fn, void *arg)
{
	prompt_text(a, label, initial, fn, arg);
	a->prompt->live = true;
	snprintf(a->prompt->initial, sizeof a->prompt->initial, "%s", a->prompt->text);
}

void prompt_confirm(struct app *a, const char *question, prompt_fn yes, void *arg)
{
	struct prompt *p = prompt_new(a, P_CONFIRM, question);
	p->fn = yes;
	p->arg = arg;
}

void prompt_cell(struct app *a, const char *fp, const char *language)
{
	struct prompt *p = prompt_new(a, P_CELL, "");
	snprintf(p->fp, sizeof p->fp, "%s", fp);
	if (!language)
		language = *a->last_language ? a->last_language : "python";
	snprintf(p->language, sizeof p->language, "%s", language);
	p->hist = n_history;
}

bool prompt_cancel(struct app *a)
{
	struct prompt *p = a->prompt;
	if (!p)
		return false;
	a->prompt = NULL;
	if (p->live)
		p->fn(a, p->initial, p->arg);
	if (p->kind == P_CONFIRM)
		p->fn(a, NULL, p->arg); /* No: its arg is freed there */
	free(p);
	return true;
}

void prompt_history_free(void)
{
	for (size_t i = 0; i < n_history; i++)
		free(history[i]);
	n_history = 0;
}

static void remember(const char *code)
{
	if (!*code || (n_history && !strcmp(history[n_history - 1], code)))
		return;
	if (n_history == HISTORY_MAX) {
		free(history[0]);
		memmove(history, history + 1, (HISTORY_MAX - 1) * sizeof *history);
		n_history--;
	}
	history[n_history++] = xstrdup(code);
}

/* ---- running a cell ---- */

struct cell_run {
	struct app *a;
	char fp[65];
	char language[16];
};

static void on_answer(void *arg, const struct ui_cell_answer *r, const char *err)
{
	struct cell_run *c = arg;
	struct app *a = c->a;
	if (a->cells_running > 0)
		a->cells_running--;
	answers_add(a, c->fp, c->language, r, err);
	app_refresh(a);
	free(c);
}

static void submit_cell(struct app *a, struct prompt *p)
{
	struct cell_run *c = xzalloc(sizeof *c);
	c->a = a;
	snprintf(c->fp, sizeof c->fp, "%s", p->fp);
	snprintf(c->language, sizeof c->language, "%s", p->language);
	remember(p->text);
	a->cells_running++;
	a->src->ops->run(a->src, p->fp, p->language, p->text, on_answer, c);
}

/* ---- editing ---- */

static void insert(struct prompt *p, const char *s, size_t n)
{
	if (p->len + n + 1 > sizeof p->text)
		n = sizeof p->text - p->len - 1;
	memmove(p->text + p->cur + n, p->text + p->cur, p->len - p->cur + 1);
	memcpy(p->text + p->cur, s, n);
	p->len += n;
	p->cur += n;
}

static void set_text(struct prompt *p, const char *s)
{
	snprintf(p->text, sizeof p->text, "%s", s);
	p->len = p->cur = strlen(p->text);
}

/* One character left or right: over a UTF-8 sequence whole. */
static size_t char_before(const struct prompt *p, size_t at)
{
	while (at > 0 && ((unsigned char)p->text[--at] & 0xc0) == 0x80)
		;
	return at;
}

static size_t char_after(const struct prompt *p, size_t at)
{
	if (at < p->len)
		at++;
	while (at < p->len && ((unsigned char)p->text[at] & 0xc0) == 0x80)
		at++;
	return at;
}

static size_t line_start(const struct prompt *p)
{
	size_t at = p->cur;
	while (at > 0 && p->text[at - 1] != '\n')
		at--;
	return at;
}

static size_t line_end(const struct prompt *p)
{
	const char *nl = strchr(p->text + p->cur, '\n');
	return nl ? (size_t)(nl - p->text) : p->len;
}

/* ---- light: up/down move between a multi-line cell's lines; the history
 * only from its first line (up) or its last (down) ---- */

/* Characters (not bytes) from a line's start to at. */
static size_t column_of(const struct prompt *p, size_t start, size_t at)
{
	size_t n = 0;
	for (size_t i = start; i < at; i = char_after(p, i))
		n++;
	return n;
}

/* True when the cursor moved to the line above (or below), as near its
 * column as that line is long; false on the first (or last) line. */
static bool move_line(struct prompt *p, bool up)
{
	size_t start = line_start(p), end = line_end(p);
	if (up ? start == 0 : end >= p->len)
		return false;
	size_t col = column_of(p, start, p->cur);
	size_t to = up ? start - 1 : end + 1; /* a position on the other line */
	size_t cur = p->cur;
	p->cur = to;
	size_t other = line_start(p), other_end = line_end(p);
	p->cur = cur;
	size_t at = other;
	for (size_t i = 0; i < col && at < other_end; i++)
		at = char_after(p, at);
	p->cur = at;
	return true;
}

static void walk_history(struct prompt *p, bool older)
{
	if (older ? p->hist == 0 : p->hist >= n_history)
		return;
	if (p->hist == n_history)
		snprintf(p->draft, sizeof p->draft, "%s", p->text);
	p->hist += older ? (size_t)-1 : 1;
	set_text(p, p->hist == n_history ? p->draft : history[p->hist]);
}

/* The keys that edit, in every prompt that takes text: true when taken. */
static bool edit_key(struct prompt *p, int key)
{
	switch (key) {
	case KEY_LEFT:
		p->cur = char_before(p, p->cur);
		return true;
	case KEY_RIGHT:
		p->cur = char_after(p, p->cur);
		return true;
	case KEY_HOME:
	case 'A' & 0x1f:
		p->cur = line_start(p);
		return true;
	case KEY_END:
	case 'E' & 0x1f:
		p->cur = line_end(p);
		return true;
	case KEY_BACKSPACE:
	case 127:
	case 8:
		if (p->cur) {
			size_t from = char_before(p, p->cur);
			memmove(p->text + from, p->text + p->cur, p->len - p->cur + 1);
			p->len -= p->cur - from;
			p->cur = from;
		}
		return true;
	case KEY_DC:
		if (p->cur < p->len) {
			size_t to = char_after(p, p->cur);
			memmove(p->text + p->cur, p->text + to, p->len - to + 1);
			p->len -= to - p->cur;
		}
		return true;
	default:
		break;
	}
	if (key == '\t') {
		if (p->kind == P_CELL) {
			/* Indentation: to the next stop of TAB_WIDTH columns. */
			size_t col = p->cur - line_start(p);
			insert(p, "    ", TAB_WIDTH - col % TAB_WIDTH);
		} else {
			insert(p, " ", 1);
		}
		return true;
	}
	if (key >= 32 && key < 256 && key != 127) {
		char c = (char)key;
		insert(p, &c, 1);
		return true;
	}
	return false;
}

bool prompt_paste(struct app *a, int key)
{
	struct prompt *p = a->prompt;
	if (!p || p->kind == P_CONFIRM)
		return false;
	if (key == '\r' || key == '\n' || key == KEY_ENTER) {
		/* A newline is text in a cell; a one-line prompt has none. */
		if (p->kind == P_CELL)
			insert(p, "\n", 1);
		else
			insert(p, " ", 1);
	} else if (key == '\t' || (key >= 32 && key < 256 && key != 127)) {
		char c = (char)key;
		insert(p, &c, 1);
	} /* anything else a paste holds (escapes, keys ncurses decoded) is dropped */
	if (p->live)
		p->fn(a, p->text, p->arg);
	return true;
}

/* ---- keys ---- */

bool prompt_key(struct app *a, int key)
{
	struct prompt *p = a->prompt;
	if (!p)
		return false;
	if (p->kind == P_CONFIRM) {
		/* [y/N]: only a y is yes; enter, like every other key, is No. */
		a->prompt = NULL;
		if (key == 'y' || key == 'Y') {
			p->fn(a, "yes", p->arg);
		} else {
			p->fn(a, NULL, p->arg);
			app_flash(a, C_INFO, "cancelled: nothing was done");
		}
		free(p);
		return true;
	}
	if (key == 27 || key == 3 /* ctrl-c */) {
		prompt_cancel(a);
		if (key == 3)
			app_flash(a, C_INFO, "cancelled");
		return true;
	}
	if (p->kind == P_CELL && key == ('T' & 0x1f)) {
		snprintf(p->language, sizeof p->language, "%s",
			 strcmp(p->language, "python") ? "python" : "javascript");
		snprintf(a->last_language, sizeof a->last_language, "%s", p->language);
		return true;
	}
	if (p->kind == P_CELL && (key == KEY_UP || key == KEY_DOWN)) {
		if (!move_line(p, key == KEY_UP)) /* ---- light ---- */
			walk_history(p, key == KEY_UP);
		return true;
	}
	if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		a->prompt = NULL;
		if (p->kind == P_CELL) {
			snprintf(a->last_language, sizeof a->last_language, "%s", p->language);
			submit_cell(a, p);
		} else {
			p->fn(a, p->text, p->arg);
		}
		free(p);
		return true;
	}
	if (p->kind == P_CELL && key == ('O' & 0x1f)) {
		insert(p, "\n", 1);
		return true;
	}
	if (edit_key(p, key) && p->live)
		p->fn(a, p->text, p->arg);
	return true; /* a modal prompt swallows everything else */
}

/* ---- drawing ---- */

/* One line of the editor from byte `from` to `to`, in w columns from x;
 * the cursor (at byte cur, if within) reversed. A line longer than the
 * width scrolls to keep the cursor in sight, with "…" where it is cut;
 * it never wraps onto the next row. */
static void draw_edit_line(int y, int x, int w, const char *text, size_t from, size_t to, size_t cur,
			   bool has_cursor)
{
	if (w < 4)
		return;
	size_t start = from;
	if (has_cursor && cur - from > (size_t)w - 2)
		start = cur - ((size_t)w - 2);
	while (start > from && ((unsigned char)text[start] & 0xc0) == 0x80)
		start++;
	char buf[PROMPT_MAX + 8];
	int col = x;
	if (start > from) {
		mvaddstr(y, col, ui_ellipsis());
		col++;
	}
	snprintf(buf, sizeof buf, "%.*s", (int)(to - start), text + start);
	draw_clipped(y, col, w - (col - x), buf);
	if (has_cursor) {
		int cx = col;
		for (size_t i = start; i < cur; i++)
			if (((unsigned char)text[i] & 0xc0) != 0x80)
				cx += ((unsigned char)text[i] < 32) ? 2 : 1;
		if (cx < x + w) {
			chtype under = mvinch(y, cx) & A_CHARTEXT;
			mvaddch(y, cx, (under ? under : ' ') | A_REVERSE);
		}
	}
}

void prompt_draw(struct app *a)
{
	struct prompt *p = a->prompt;
	if (!p)
		return;
	int y = a->lines - 2;
	if (p->kind == P_CELL) {
		/* The cell's lines above the status line; the cursor's line in
		 * sight. */
		int nl = 1, cur_line = 0;
		for (size_t i = 0; i < p->len; i++) {
			nl += p->text[i] == '\n';
			if (i < p->cur && p->text[i] == '\n')
				cur_line++;
		}
		int rows = nl + 1 > 8 ? 8 : nl + 1;
		int top = y - rows + 1;
		int skip = nl - (rows - 1);
		if (cur_line < skip)
			skip = cur_line;
		attron(theme_attr(C_TITLE));
		mvhline(top, 0, ' ', a->cols);
		char head[256];
		snprintf(head, sizeof head,
			 " cell in %.12s [%s]  enter run · ^o newline · ^t language · up history · esc",
			 p->fp, p->language);
		draw_clipped(top, 0, a->cols, head);
		attroff(theme_attr(C_TITLE));
		size_t from = 0;
		for (int i = 0; i < nl; i++) {
			const char *end = strchr(p->text + from, '\n');
			size_t to = end ? (size_t)(end - p->text) : p->len;
			if (i >= skip && i < skip + rows - 1) {
				int row = top + 1 + (i - skip);
				move(row, 0);
				clrtoeol();
				mvaddstr(row, 0, i ? "... " : ">>> ");
				draw_edit_line(row, 4, a->cols - 4, p->text, from, to, p->cur,
					       p->cur >= from && p->cur <= to);
			}
			from = to + 1;
		}
		return;
	}
	move(y, 0);
	clrtoeol();
	attron(A_BOLD);
	if (p->kind == P_CONFIRM) {
		char q[256];
		snprintf(q, sizeof q, "%s [y/N] ", p->label);
		draw_clipped(y, 0, a->cols, q);
	} else {
		draw_clipped(y, 0, a->cols, p->label);
		int lx = (int)strlen(p->label);
		if (lx < a->cols)
			draw_edit_line(y, lx, a->cols - lx, p->text, 0, p->len, p->cur, true);
	}
	attroff(A_BOLD);
}
