/* The hops as boxes (hop_diagram.h): six boxes across the screen, as wide
 * and as tall as it allows, the request's arrows on the upper row between
 * them, the answer's on the lower. */
#include "hop_diagram.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

static const char *const label[SCENARIO_HOP_COUNT] = {"model",   "agent",  "executeCode",
						      "manager", "daemon", "sandbox"};
/* The two lines a box too narrow for its whole name shows. */
static const char *const label_cut[SCENARIO_HOP_COUNT][2] = {
	{"model", ""}, {"agent", ""}, {"execute", "Code"}, {"manager", ""}, {"daemon", ""}, {"sandbox", ""}};

const char *hop_label(enum scenario_hop h)
{
	return h >= 0 && h < SCENARIO_HOP_COUNT ? label[h] : "?";
}

/* The whole step at once: what a recording without a path says (its hops
 * lit, numbered in order, the answer's way back for a call). */
static void whole_step(const struct scenario_step *st, struct hop_view *hv)
{
	int last = -1;
	for (size_t i = 0; i < st->n_hops; i++) {
		enum scenario_hop h = st->hops[i];
		hv->lit[h] = true;
		snprintf(hv->mark[h], sizeof hv->mark[h], "(%zu)", i + 1);
		last = (int)h > last ? (int)h : last;
	}
	if (hv->stopped != SCENARIO_HOP_NONE)
		last = hv->stopped;
	for (int h = 0; h + 1 < SCENARIO_HOP_COUNT; h++) {
		hv->out[h] = hv->lit[h] && hv->lit[h + 1] && h + 1 <= last;
		/* A call comes back to the model whatever became of it: the
		 * answer, or the refusal from the hop that refused. */
		hv->back[h] = st->kind == SCENARIO_CALL && hv->out[h];
	}
}

size_t hop_positions(const struct scenario_step *st)
{
	return st->n_path ? st->n_path + 1 : 1; /* each visit, then the whole step */
}

const struct scenario_visit *hop_visit(const struct scenario_step *st, size_t upto)
{
	return upto && upto <= st->n_path ? &st->path[upto - 1] : NULL;
}

void hop_view_of_step(const struct scenario_step *st, size_t upto, struct hop_view *hv)
{
	memset(hv, 0, sizeof *hv);
	hv->stopped = SCENARIO_HOP_NONE;
	hv->warn = st->kind == SCENARIO_CALL && st->outcome == SCENARIO_MAY_HAVE_RUN;
	if (!st->n_path) {
		hv->stopped = st->stopped_at;
		whole_step(st, hv);
	} else {
		/* The path's first upto visits: down, a hop lit and the arrow
		 * into it; up, the answer's arrow from the hop below. */
		size_t n = upto < st->n_path ? upto : st->n_path;
		int prev = -1;
		for (size_t i = 0; i < n; i++) {
			const struct scenario_visit *vi = &st->path[i];
			enum scenario_hop h = vi->hop;
			if (vi->leg == SCENARIO_LEG_DOWN) {
				hv->lit[h] = true;
				if (prev >= 0 && (int)h == prev + 1)
					hv->out[prev] = true;
				prev = (int)h;
			} else if (h + 1 < SCENARIO_HOP_COUNT) {
				hv->back[h] = true;
			}
			/* a hop keeps its number from the way down; the way back
			 * shows only where the answer is now */
			if (vi->leg == SCENARIO_LEG_DOWN || i + 1 == upto)
				snprintf(hv->mark[h], sizeof hv->mark[h], i + 1 == upto ? "(%zu) now" : "(%zu)",
					 i + 1);
		}
		/* STOPPED HERE once the call reached the hop that refused it. */
		if (st->stopped_at != SCENARIO_HOP_NONE && hv->lit[st->stopped_at])
			hv->stopped = st->stopped_at;
	}
	if (hv->stopped != SCENARIO_HOP_NONE)
		snprintf(hv->mark[hv->stopped], sizeof hv->mark[0], "%s",
			 hv->warn ? "MAY HAVE RUN" : "STOPPED HERE");
}

int hop_diagram_rows(int avail)
{
	int r = avail / 3;
	r = r < 5 ? 5 : r > 17 ? 17 : r;
	return r > avail ? avail : r;
}

/* Columns of a UTF-8 string. */
static int cols_of(const char *s)
{
	int c = 0;
	for (; *s; s++)
		c += ((unsigned char)*s & 0xc0) != 0x80;
	return c;
}

/* Bytes of s that fit w columns. */
static size_t fit(const char *s, int w)
{
	size_t i = 0;
	for (int c = 0; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == w)
			break;
	return i;
}

static void repeat(int y, int x, int n, const char *glyph)
{
	for (int i = 0; i < n; i++)
		mvaddstr(y, x + i, glyph);
}

struct glyphs {
	const char *tl, *tr, *bl, *br, *h, *v;
};

static struct glyphs box_glyphs(bool utf8, bool lit, bool unseen)
{
	if (utf8) {
		if (lit)
			return (struct glyphs){"┏", "┓", "┗", "┛", "━", "┃"};
		if (unseen)
			return (struct glyphs){"┌", "┐", "└", "┘", "┄", "┆"};
		return (struct glyphs){"┌", "┐", "└", "┘", "─", "│"};
	}
	if (lit)
		return (struct glyphs){"#", "#", "#", "#", "=", "#"};
	if (unseen)
		return (struct glyphs){".", ".", ".", ".", ".", ":"};
	return (struct glyphs){"+", "+", "+", "+", "-", "|"};
}

/* Text centred in a box's inside (w columns from x). */
static void centred(int y, int x, int w, int attr, const char *s)
{
	int n = cols_of(s);
	if (n > w)
		n = w;
	attron(attr);
	mvaddnstr(y, x + (w - n) / 2, s, (int)fit(s, w));
	attroff(attr);
}

static void draw_arrow(const struct app *a, int y, int x, int g, bool right, bool on)
{
	const char *line = a->utf8 ? (on ? "━" : "─") : (on ? "=" : "-");
	const char *head = right ? (a->utf8 ? (on ? "▶" : "▷") : ">") : (a->utf8 ? (on ? "◀" : "◁") : "<");
	int attr = on ? theme_attr(C_GOOD) | (int)A_BOLD : theme_attr(C_DIM);
	attron(attr);
	if (right) {
		repeat(y, x, g - 1, line);
		mvaddstr(y, x + g - 1, head);
	} else {
		mvaddstr(y, x, head);
		repeat(y, x + 1, g - 1, line);
	}
	attroff(attr);
}

void hop_diagram_draw(const struct app *a, const struct hop_view *hv, int y, int rows)
{
	int C = a->cols;
	int g = C >= 120 ? 5 : C >= 90 ? 4 : 3;
	int m = C >= 120 ? 2 : 0;
	int w = (C - 2 * m - 5 * g) / 6;
	if (w > 28)
		w = 28;
	if (w < 5 || rows < 5)
		return; /* no room: the views say it in words as well */
	int total = 6 * w + 5 * g, x0 = (C - total) / 2;
	int out_y = y + rows / 3, back_y = y + rows - 1 - rows / 3;
	int label_y = y + rows / 2 - (rows > 5 ? 1 : 0) - (rows == 5 ? 1 : 0);
	int mark_y = y + rows - 2;
	if (label_y <= y)
		label_y = y + 1;
	for (int h = 0; h < SCENARIO_HOP_COUNT; h++) {
		int x = x0 + h * (w + g);
		bool stop = hv->stopped == h;
		bool on = hv->lit[h];
		struct glyphs gl = box_glyphs(a->utf8, on, hv->unseen[h]);
		int attr = !on ? theme_attr(C_DIM)
			   : stop ? theme_attr(hv->warn ? C_WARN : C_BAD) | (int)A_BOLD
				  : theme_attr(C_GOOD) | (int)A_BOLD;
		attron(attr);
		mvaddstr(y, x, gl.tl);
		repeat(y, x + 1, w - 2, gl.h);
		mvaddstr(y, x + w - 1, gl.tr);
		for (int r = y + 1; r < y + rows - 1; r++) {
			mvaddstr(r, x, gl.v);
			mvaddstr(r, x + w - 1, gl.v);
		}
		mvaddstr(y + rows - 1, x, gl.bl);
		repeat(y + rows - 1, x + 1, w - 2, gl.h);
		mvaddstr(y + rows - 1, x + w - 1, gl.br);
		attroff(attr);
		int in = w - 2, lattr = on ? attr | (int)A_REVERSE : theme_attr(C_DIM);
		bool whole = cols_of(label[h]) <= in;
		centred(label_y, x + 1, in, lattr, whole ? label[h] : label_cut[h][0]);
		bool second = !whole && *label_cut[h][1];
		if (second)
			centred(label_y + 1, x + 1, in, lattr, label_cut[h][1]);
		/* A mark too long for the box goes on two lines when the row
		 * above it is free ("STOPPED" over "HERE"). */
		const char *mk = hv->mark[h];
		const char *sp = strchr(mk, ' ');
		int free_above = mark_y - 1 > label_y + (second ? 1 : 0);
		if (cols_of(mk) > in && sp && free_above) {
			char first[40];
			snprintf(first, sizeof first, "%.*s", (int)(sp - mk), mk);
			centred(mark_y - 1, x + 1, in, attr, first);
			centred(mark_y, x + 1, in, attr, sp + 1);
		} else if (*mk) {
			centred(mark_y, x + 1, in, attr, mk);
		}
		if (h + 1 < SCENARIO_HOP_COUNT) {
			draw_arrow(a, out_y, x + w, g, true, hv->out[h]);
			draw_arrow(a, back_y, x + w, g, false, hv->back[h]);
		}
	}
}

int hop_text(int y, int x, int w, int rows, int spacing, int attr, const char *text)
{
	if (w < 4 || rows <= 0)
		return 0;
	if (spacing > 1) /* the lines that fit, a blank row between each two */
		rows = (rows + spacing - 1) / spacing;
	int used = 0;
	attron(attr);
	for (const char *p = text ? text : ""; *p && used < rows;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char para[2048];
		snprintf(para, sizeof para, "%.*s", (int)(len < sizeof para ? len : sizeof para - 1), p);
		const char *q = para;
		do {
			size_t take = fit(q, w);
			if (q[take]) { /* break at the last blank that fits */
				size_t sp = take;
				while (sp > 0 && q[sp] != ' ')
					sp--;
				if (sp > 0)
					take = sp;
			}
			char line[2048];
			snprintf(line, sizeof line, "%.*s", (int)take, q);
			bool last_row = used == rows - 1;
			bool more = q[take] || (nl && nl[1]);
			if (last_row && more) {
				size_t keep = fit(line, w - 2);
				snprintf(line + keep, sizeof line - keep, " %s", ui_ellipsis());
			}
			draw_clipped(y + used * (spacing > 1 ? spacing : 1), x, w, line);
			used++;
			q += take;
			while (*q == ' ')
				q++;
		} while (*q && used < rows);
		p = nl ? nl + 1 : NULL;
		if (!p)
			break;
	}
	attroff(attr);
	return spacing > 1 && used ? (used - 1) * spacing + 1 : used;
}

void hop_progress(const struct app *a, int y, int x, int w, size_t at, size_t n)
{
	char head[48];
	snprintf(head, sizeof head, "step %zu/%zu ", at + 1, n);
	int hw = (int)strlen(head);
	attron(A_BOLD);
	mvaddstr(y, x, head);
	attroff(A_BOLD);
	int bar = w - hw - 2;
	if (bar < 4 || !n)
		return;
	int done = (int)((at + 1) * (size_t)bar / n);
	mvaddstr(y, x + hw, "[");
	attron(theme_attr(C_GOOD) | A_BOLD);
	repeat(y, x + hw + 1, done, a->utf8 ? "█" : "#");
	attroff(theme_attr(C_GOOD) | A_BOLD);
	attron(theme_attr(C_DIM));
	repeat(y, x + hw + 1 + done, bar - done, a->utf8 ? "░" : ".");
	attroff(theme_attr(C_DIM));
	mvaddstr(y, x + hw + 1 + bar, "]");
}

void pace_rearm(struct pace *p)
{
	p->next_ms = now_mono_ms() + p->ms[p->at];
}

bool pace_due(const struct pace *p, uint64_t now)
{
	return p->playing && now >= p->next_ms;
}

void pace_change(struct app *a, struct pace *p, int dir)
{
	if (dir > 0 && p->at + 1 < p->n)
		p->at++;
	else if (dir < 0 && p->at > 0)
		p->at--;
	pace_rearm(p);
	app_flash(a, C_INFO, "play: a move every %.1f s", p->ms[p->at] / 1000.0);
}
