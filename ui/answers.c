/* Cell answers: each cell this console ran keeps its answer — its lines
 * (control bytes shown escaped when drawn), its exit, flags, truncation,
 * duration and #seq — newest first, so two cells in flight never
 * overwrite each other (the console review's B16). The newest show in a
 * pane under the sandboxes table; `:answers` lists every one kept. */
#include "app.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWERS_MAX 32
#define ANSWER_LINES_MAX 500

struct answer {
	char fp[65];
	char head[320];
	enum ui_color color;
	char **lines;
	size_t n_lines;
};

struct answers {
	struct answer *a[ANSWERS_MAX]; /* newest first */
	size_t n;
};

static void add_line(struct answer *x, const char *s, size_t n)
{
	if (x->n_lines == ANSWER_LINES_MAX)
		return;
	x->lines = realloc(x->lines, (x->n_lines + 1) * sizeof *x->lines);
	if (!x->lines)
		abort();
	x->lines[x->n_lines++] = strndup(s, n);
	if (!x->lines[x->n_lines - 1])
		abort();
}

static void add_str(struct answer *x, const char *s)
{
	add_line(x, s, strlen(s));
}

/* Every line of text, prefixed; past the cap, how many more there were. */
static void add_text(struct answer *x, const char *prefix, const char *text)
{
	size_t total = 0, kept_before = x->n_lines;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char line[1024];
		snprintf(line, sizeof line, "%s%.*s", prefix, (int)(n < 900 ? n : 900), p);
		if (x->n_lines + 1 < ANSWER_LINES_MAX)
			add_line(x, line, strlen(line));
		total++;
		p = e ? e + 1 : p + n;
	}
	size_t kept = x->n_lines - kept_before;
	if (total > kept) {
		char more[96];
		snprintf(more, sizeof more, "%s(... %zu more lines, not kept here: :rec has the record)", prefix,
			 total - kept);
		add_line(x, more, strlen(more));
	}
}

static void answer_free(struct answer *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n_lines; i++)
		free(x->lines[i]);
	free(x->lines);
	free(x);
}

void answers_add(struct app *a, const char *fp, const char *language, const struct ui_cell_answer *r,
		 const char *err)
{
	if (!a->answers)
		a->answers = xzalloc(sizeof *a->answers);
	struct answers *l = a->answers;
	struct answer *x = xzalloc(sizeof *x);
	snprintf(x->fp, sizeof x->fp, "%s", fp);
	if (err) {
		snprintf(x->head, sizeof x->head, "cell in %.12s (%s): %s", fp, language, err);
		x->color = C_BAD;
		app_flash(a, C_BAD, "cell in %.12s: %s", fp, err);
	} else {
		char flags[160] = "";
		size_t u = 0;
		const struct {
			bool on;
			const char *name;
		} f[] = {{r->timed_out, "timed_out"},
			 {r->interpreter_started, "interpreter_started"},
			 {r->interpreter_ended, "interpreter_ended"},
			 {r->stdout_truncated, "stdout_truncated"},
			 {r->stderr_truncated, "stderr_truncated"}};
		for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
			if (f[i].on)
				u += (size_t)snprintf(flags + u, sizeof flags - u, " %s", f[i].name);
		if (*r->ended)
			snprintf(flags + u, sizeof flags - u, " ended:%s", r->ended);
		snprintf(x->head, sizeof x->head, "#%llu %.12s %s  exit %d  %.1f ms%s",
			 (unsigned long long)r->sequence, fp, language, r->exit_code,
			 (double)r->wall_us / 1000.0, flags);
		x->color = r->exit_code || r->timed_out || *r->ended ? C_WARN : C_GOOD;
		add_text(x, "  ", r->out);
		if (r->stdout_truncated)
			add_str(x, "  (stdout truncated: the sandbox's output cap)");
		if (r->err && *r->err) {
			add_text(x, "  stderr| ", r->err);
			if (r->stderr_truncated)
				add_str(x, "  stderr| (truncated: the sandbox's output cap)");
		}
		if (!x->n_lines)
			add_str(x, "  (no output)");
		app_flash(a, x->color, "cell #%llu in %.12s: exit %d, %.1f ms (the answers pane; :answers)",
			  (unsigned long long)r->sequence, fp, r->exit_code, (double)r->wall_us / 1000.0);
	}
	if (l->n == ANSWERS_MAX)
		answer_free(l->a[--l->n]);
	memmove(l->a + 1, l->a, l->n * sizeof *l->a);
	l->a[0] = x;
	l->n++;
}

void answers_free(struct app *a)
{
	if (a->answers)
		for (size_t i = 0; i < a->answers->n; i++)
			answer_free(a->answers->a[i]);
	free(a->answers);
	a->answers = NULL;
	prompt_history_free();
}

int answers_pane_rows(struct app *a, int top, int bottom)
{
	if (!a->answers || !a->answers->n)
		return 0;
	size_t want = 1;
	for (size_t i = 0; i < a->answers->n && want < 64; i++)
		want += 1 + a->answers->a[i]->n_lines;
	int half = (bottom - top) / 2;
	return (int)want < half ? (int)want : half;
}

/* Rows top..bottom: a title, then the answers newest first. */
void answers_draw_pane(struct app *a, int top, int bottom)
{
	attron(theme_attr(C_TITLE));
	mvhline(top, 0, ' ', a->cols);
	draw_clipped(top, 0, a->cols, " Answers (newest first; :answers keeps them)");
	attroff(theme_attr(C_TITLE));
	int y = top + 1;
	for (size_t i = 0; i < a->answers->n && y <= bottom; i++) {
		const struct answer *x = a->answers->a[i];
		attron(theme_attr(x->color) | A_BOLD);
		draw_clipped(y++, 0, a->cols, x->head);
		attroff(theme_attr(x->color) | A_BOLD);
		for (size_t k = 0; k < x->n_lines && y <= bottom; k++)
			draw_clipped(y++, 0, a->cols, x->lines[k]);
	}
}

/* ---- the :answers view: every kept answer, a row a line ---- */

static const char *const headers[] = {"ANSWER"};
static const int widths[] = {0};

static void load(struct app *a, struct view *v)
{
	table_clear(&v->t);
	size_t n = a->answers ? a->answers->n : 0;
	snprintf(v->sub, sizeof v->sub, "(%zu cell%s, newest first)", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct answer *x = a->answers->a[i];
		struct trow *r = table_add(&v->t, x->fp, x->color);
		table_cell(r, 0, "%s", x->head);
		for (size_t k = 0; k < x->n_lines; k++) {
			r = table_add(&v->t, x->fp, C_NORMAL);
			table_cell(r, 0, "%s", x->lines[k]);
		}
	}
	table_index(&v->t, v->filter, NULL);
}

const struct view_ops view_answers = {
	.name = "answers",
	.title = "Answers",
	.ncols = 1,
	.headers = headers,
	.widths = widths,
	.load = load,
	.sourceless = true,
};
