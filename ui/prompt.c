/* Modal input at the bottom of the screen: a one-line text prompt (the
 * filter, :commands, the open dialog), a yes/no confirm, and the cell
 * prompt — multi-line (ctrl-o breaks a line), with a language switch
 * (ctrl-t), enter runs it, esc cancels. */
#include "app.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROMPT_MAX 8192

enum prompt_kind { P_TEXT, P_CONFIRM, P_CELL };

struct prompt {
	enum prompt_kind kind;
	char label[160];
	char text[PROMPT_MAX];
	size_t len;
	prompt_fn fn;
	void *arg;
	/* cell */
	char fp[65];
	char language[16];
};

static struct prompt *prompt_new(struct app *a, enum prompt_kind k, const char *label)
{
	free(a->prompt);
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
	p->len = strlen(p->text);
	p->fn = fn;
	p->arg = arg;
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
	snprintf(p->language, sizeof p->language, "%s", language);
}

/* ---- running a cell ---- */

struct cell_run {
	struct app *a;
	char fp[65];
	char code_head[40];
};

static void on_answer(void *arg, const struct ui_cell_answer *r, const char *err)
{
	struct cell_run *c = arg;
	struct app *a = c->a;
	app_busy(a, "");
	if (err) {
		app_flash(a, C_BAD, "cell: %s", err);
	} else {
		/* The answer's first line, its flags and its timing on the flash line. */
		char out[200];
		snprintf(out, sizeof out, "%s", r->out && *r->out ? r->out : (r->err ? r->err : ""));
		for (char *q = out; *q; q++)
			if (*q == '\n')
				*q = (q[1] ? ' ' : '\0');
		app_flash(a, r->exit_code ? C_WARN : C_GOOD, "%s  [exit %d%s%s%s%s] %.1f ms  #%llu", out,
			  r->exit_code, r->interpreter_started ? " interpreter_started" : "",
			  r->interpreter_ended ? " interpreter_ended" : "", r->timed_out ? " timed_out" : "",
			  *r->ended ? " ended" : "", (double)r->wall_us / 1000.0,
			  (unsigned long long)r->sequence);
	}
	app_refresh(a);
	free(c);
}

static void submit_cell(struct app *a, struct prompt *p)
{
	struct cell_run *c = xzalloc(sizeof *c);
	c->a = a;
	snprintf(c->fp, sizeof c->fp, "%s", p->fp);
	app_busy(a, "running a cell");
	a->src->ops->run(a->src, p->fp, p->language, p->text, on_answer, c);
}

/* ---- keys ---- */

bool prompt_key(struct app *a, int key)
{
	struct prompt *p = a->prompt;
	if (!p)
		return false;
	if (p->kind == P_CONFIRM) {
		a->prompt = NULL;
		if (key == 'y' || key == 'Y' || key == '\n' || key == KEY_ENTER)
			p->fn(a, "yes", p->arg);
		else
			app_flash(a, C_INFO, "cancelled");
		free(p);
		return true;
	}
	if (key == 27) {
		a->prompt = NULL;
		free(p);
		return true;
	}
	if (p->kind == P_CELL && key == ('T' & 0x1f)) {
		snprintf(p->language, sizeof p->language, "%s",
			 strcmp(p->language, "python") ? "python" : "javascript");
		return true;
	}
	if (key == '\n' || key == KEY_ENTER) {
		a->prompt = NULL;
		if (p->kind == P_CELL)
			submit_cell(a, p);
		else
			p->fn(a, p->text, p->arg);
		free(p);
		return true;
	}
	if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (p->len)
			p->text[--p->len] = '\0';
		return true;
	}
	if (p->kind == P_CELL && key == ('O' & 0x1f))
		key = '\n';
	if ((key >= 32 && key < 256) || key == '\n') {
		if (p->len + 1 < sizeof p->text) {
			p->text[p->len++] = (char)key;
			p->text[p->len] = '\0';
		}
		return true;
	}
	return true; /* a modal prompt swallows everything else */
}

void prompt_draw(struct app *a)
{
	struct prompt *p = a->prompt;
	if (!p)
		return;
	int y = a->lines - 2;
	if (p->kind == P_CELL) {
		/* The cell's lines above the status line, newest at the bottom. */
		int nl = 1;
		for (size_t i = 0; i < p->len; i++)
			nl += p->text[i] == '\n';
		int rows = nl + 1 > 8 ? 8 : nl + 1;
		int top = y - rows + 1;
		attron(theme_attr(C_TITLE));
		mvhline(top, 0, ' ', a->cols);
		mvprintw(top, 0, " cell in %.12s  [%s]  enter run · ctrl-o new line · ctrl-t language · esc cancel",
			 p->fp, p->language);
		attroff(theme_attr(C_TITLE));
		const char *line = p->text;
		int skip = nl - (rows - 1);
		for (int i = 0; i < nl; i++) {
			const char *end = strchr(line, '\n');
			int len = end ? (int)(end - line) : (int)strlen(line);
			if (i >= skip) {
				int row = top + 1 + (i - skip);
				move(row, 0);
				clrtoeol();
				mvprintw(row, 0, "%s %.*s", i ? "..." : ">>>", len, line);
			}
			line = end ? end + 1 : line + len;
		}
		return;
	}
	move(y, 0);
	clrtoeol();
	attron(A_BOLD);
	if (p->kind == P_CONFIRM)
		mvprintw(y, 0, "%s [y/N] ", p->label);
	else
		mvprintw(y, 0, "%s%s", p->label, p->text);
	attroff(A_BOLD);
}
