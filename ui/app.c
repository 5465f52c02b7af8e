/* The console's loop: one poll over the terminal (or the script) and the
 * source's descriptors, a refresh every two seconds and on ctrl-r, keys
 * turned into requests through the one binding table, and a screen drawn
 * from the view on top of the stack.
 *
 * Headless (tests): keys and :commands come from a script, one line each
 * (`<Enter>`, `<Esc>`, `<C-d>`, `<Down>` or plain text; a line starting
 * with ':' is a command and gets its enter; `:save-display FILE` runs
 * directly, so it can capture a prompt or a confirm; `:sleep MS` lets time pass,
 * for what moves by itself, like the replay's play). A key is fed only once the
 * source answered everything asked before it, so a screen never depends on
 * timing; `:save-display FILE` writes the screen as text. */
#include "app.h"
#include "ui_files.h"

#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REFRESH_MS 2000
#define FLASH_MS 6000

const struct binding ui_bindings[] = {
#define REQ(id, key, label, view, help, flags) {REQ_##id, key, label, view, help, flags},
#include "bindings.def"
#undef REQ
};
const size_t ui_n_bindings = sizeof ui_bindings / sizeof ui_bindings[0];

static const struct view_ops *const all_views[] = {
	&view_sandboxes, &view_runs, &view_records, &view_events, &view_walls,
	&view_leaks,	 &view_replay, &view_help,
};

void app_flash(struct app *a, enum ui_color c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->flash, sizeof a->flash, fmt, ap);
	va_end(ap);
	a->flash_color = c;
	a->flash_until = now_mono_ms() + FLASH_MS;
}

void app_busy(struct app *a, const char *what)
{
	snprintf(a->spinner_what, sizeof a->spinner_what, "%s", what);
}

bool app_can_act(struct app *a, bool quiet)
{
	if (a->opt.readonly) {
		if (!quiet)
			app_flash(a, C_WARN, "read-only console: actions are off (--readonly)");
		return false;
	}
	if (!a->src->ops->has_engine) {
		if (!quiet)
			app_flash(a, C_WARN, "%s",
				  strcmp(a->src->ops->kind, "none")
					  ? "a store opened with --db has no engine: nothing can act"
					  : "a replay has no engine: nothing can act (run `bulkhead` for one)");
		return false;
	}
	return true;
}

/* ---- the view stack ---- */

struct view *app_push(struct app *a, const struct view_ops *ops, const char *arg)
{
	struct view *v = xzalloc(sizeof *v);
	v->ops = ops;
	v->app = a;
	v->t.sort_col = -1;
	snprintf(v->arg, sizeof v->arg, "%s", arg ? arg : "");
	v->below = a->view;
	a->view = v;
	if (ops->load)
		ops->load(a, v);
	return v;
}

static void view_free(struct view *v)
{
	if (v->ops->done)
		v->ops->done(v);
	table_clear(&v->t);
	free(v->t.rows);
	free(v->t.shown);
	free(v);
}

bool view_done_loading(struct view *v)
{
	v->loading--;
	if (v->closing && v->loading <= 0) {
		view_free(v);
		return false;
	}
	return !v->closing;
}

void app_pop(struct app *a)
{
	struct view *v = a->view;
	if (!v || !v->below)
		return;
	a->view = v->below;
	if (v->loading > 0)
		v->closing = true; /* freed when its answers arrive */
	else
		view_free(v);
}

/* The header counts these states, and the rest together as "changing". */
static const enum bh_session_state counted[] = {BH_SESSION_READY, BH_SESSION_BUSY, BH_SESSION_PAUSED,
						BH_SESSION_HIBERNATED, BH_SESSION_ENDED};
#define N_COUNTED (sizeof counted / sizeof counted[0])

static size_t counted_as(const char *name)
{
	enum bh_session_state st;
	if (bh_session_state_parse(name, &st) == 0)
		for (size_t k = 0; k < N_COUNTED; k++)
			if (counted[k] == st)
				return k;
	return N_COUNTED; /* opening, waking and the like */
}

static void header_counts_cb(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct app *a = arg;
	if (err) {
		/* With no source at all there are none, and that is no error.
		 * The header prints the label: "sessions: ?". */
		snprintf(a->counts, sizeof a->counts, "%s",
			 strcmp(a->src->ops->kind, "none") ? "?" : "none");
		return;
	}
	size_t c[N_COUNTED + 1] = {0};
	for (size_t i = 0; i < n; i++)
		c[counted_as(rows[i].state)]++;
	/* Only the states that have sessions: it must fit 80 columns. */
	size_t used = 0;
	a->counts[0] = '\0';
	for (size_t k = 0; k <= N_COUNTED; k++)
		if (c[k] && used < sizeof a->counts)
			used += (size_t)snprintf(a->counts + used, sizeof a->counts - used, "%s%zu %s",
						 used ? ", " : "", c[k],
						 k < N_COUNTED ? bh_session_state_name(counted[k]) : "changing");
	if (!used)
		snprintf(a->counts, sizeof a->counts, "none");
}

void app_refresh(struct app *a)
{
	a->src->ops->sessions(a->src, header_counts_cb, a);
	if (a->view->ops->load)
		a->view->ops->load(a, a->view);
	a->next_refresh = now_mono_ms() + REFRESH_MS;
}

/* ---- drawing ---- */

static void draw_table(struct app *a, struct view *v, int top, int bottom)
{
	const struct view_ops *o = v->ops;
	int widths[TABLE_MAX_COLS], fixed = 0, flex = 0;
	for (size_t c = 0; c < o->ncols; c++) {
		widths[c] = o->widths[c];
		fixed += widths[c] ? widths[c] + 1 : 0;
		flex += !widths[c];
	}
	int left = a->cols - fixed;
	for (size_t c = 0; c < o->ncols; c++)
		if (!widths[c])
			widths[c] = flex ? (left > 8 * flex ? left / flex - 1 : 8) : 8;
	attron(A_BOLD);
	int x = 0;
	for (size_t c = 0; c < o->ncols && x < a->cols; c++) {
		mvprintw(top, x, "%-*.*s", widths[c], widths[c], o->headers[c]);
		if (v->t.sort_col == (int)c)
			mvaddch(top, x + (int)strlen(o->headers[c]) < a->cols ? x + (int)strlen(o->headers[c]) : x, '^');
		x += widths[c] + 1;
	}
	attroff(A_BOLD);
	int rows = bottom - top;
	struct table *t = &v->t;
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows > 0 && t->sel >= t->top + (size_t)rows)
		t->top = t->sel - (size_t)rows + 1;
	for (int i = 0; i < rows && t->top + (size_t)i < t->nshown; i++) {
		size_t idx = t->top + (size_t)i;
		const struct trow *r = &t->rows[t->shown[idx]];
		/* Stale rows (the last load failed) are dim: they are old. */
		int attr = idx == t->sel ? theme_attr(C_SELECT)
					 : theme_attr(*v->stale ? C_DIM : r->color);
		attron(attr);
		mvhline(top + 1 + i, 0, ' ', idx == t->sel ? a->cols : 0);
		x = 0;
		for (size_t c = 0; c < o->ncols && x < a->cols; c++) {
			int w = widths[c] < a->cols - x ? widths[c] : a->cols - x;
			mvprintw(top + 1 + i, x, "%-*.*s", w, w, r->cells[c] ? r->cells[c] : "");
			x += widths[c] + 1;
		}
		attroff(attr);
	}
	if (!t->nshown) {
		attron(theme_attr(C_DIM));
		bool no_source = !strcmp(a->src->ops->kind, "none") && !o->sourceless;
		mvprintw(top + 2, 2, "%s",
			 v->loading > 0 ? "loading..."
			 : no_source	? "(no source: a replay opens no engine, daemon or store; run `bulkhead` for one)"
			 : *v->filter	? "(nothing matches the filter)"
					: "(none)");
		attroff(theme_attr(C_DIM));
	}
}

/* One line of hints, `key:word`, from the binding table: the key's label
 * (ctrl-x as ^x) and the first word of its help. Help and views first, so
 * they survive a narrow terminal; the view's actions after. */
static void draw_hints(struct app *a)
{
	char hints[512];
	size_t used = (size_t)snprintf(hints, sizeof hints, "?:help ::views");
	for (size_t i = 0; i < ui_n_bindings && used < sizeof hints; i++) {
		const struct binding *b = &ui_bindings[i];
		if (!*b->view || strcmp(b->view, a->view->ops->name))
			continue;
		if ((b->flags & ACTS) && !app_can_act(a, true))
			continue;
		char word[24];
		snprintf(word, sizeof word, "%s", b->help);
		word[strcspn(word, " ")] = '\0';
		bool ctrl = !strncmp(b->label, "ctrl-", 5);
		used += (size_t)snprintf(hints + used, sizeof hints - used, " %s%s:%s", ctrl ? "^" : "",
					 ctrl ? b->label + 5 : b->label, word);
	}
	attron(theme_attr(C_DIM));
	mvprintw(2, 0, "%.*s", a->cols, hints);
	attroff(theme_attr(C_DIM));
}

/* Paths under $HOME start with "~" on the header: a long state directory
 * would push the rest of the line (the read-only mark) off an 80-column
 * screen. */
static void tilde(char *s)
{
	const char *home = getenv("HOME");
	size_t hl = home ? strlen(home) : 0;
	while (hl > 1 && home[hl - 1] == '/')
		hl--;
	if (hl < 2)
		return;
	for (char *p = s; (p = strstr(p, home)) != NULL;) {
		if ((p == s || p[-1] == ' ') && p[hl] == '/') {
			memmove(p + 1, p + hl, strlen(p + hl) + 1);
			*p = '~';
		}
		p++;
	}
}

static void draw(struct app *a)
{
	erase();
	struct view *v = a->view;
	char where[256];
	a->src->ops->describe(a->src, where, sizeof where);
	tilde(where);
	/* Asked at every draw (it is cheap): a refresh-old "proving tiers..."
	 * would stay up for two seconds after the proofs finished. */
	a->src->ops->tier_summary(a->src, a->tiers, sizeof a->tiers);
	/* Clipped to the width: a long path would wrap into the next line. */
	char line[1024];
	snprintf(line, sizeof line, "bulkhead %s  %s%s", BULKHEAD_VERSION, where,
		 a->opt.readonly ? "  [read-only]" : "");
	attron(theme_attr(C_HEADER) | A_BOLD);
	mvaddnstr(0, 0, line, a->cols);
	attroff(theme_attr(C_HEADER) | A_BOLD);
	snprintf(line, sizeof line, "tiers: %s   sessions: %s", a->tiers, a->counts);
	mvaddnstr(1, 0, line, a->cols);
	draw_hints(a);
	/* Title: Kind[count] </filter> (extra) (stale since HH:MM:SS: why) —
	 * the time first, so a narrow screen cuts the why, not when. */
	attron(theme_attr(C_TITLE));
	mvhline(3, 0, ' ', a->cols);
	char title[512], count[32] = "", stale[320] = "";
	if (!v->ops->draw)
		snprintf(count, sizeof count, "[%zu]", v->t.nshown);
	if (*v->stale)
		snprintf(stale, sizeof stale, "(%s since %s: %s) ",
			 v->ever_loaded ? "stale" : "not loaded", v->stale_since, v->stale);
	snprintf(title, sizeof title, " %s%s%s%s%s%s%s ", v->ops->title, count,
		 *v->filter ? " </" : "", v->filter, *v->filter ? ">" : "", *v->sub ? " " : "", v->sub);
	int width = (int)strlen(title) + (int)strlen(stale);
	int x = (a->cols - width) / 2 > 0 ? (a->cols - width) / 2 : 0;
	mvprintw(3, x, "%.*s", a->cols, title);
	attroff(theme_attr(C_TITLE));
	if (*stale && x + (int)strlen(title) < a->cols) {
		attron(theme_attr(C_BAD) | A_BOLD);
		mvprintw(3, x + (int)strlen(title), "%.*s", a->cols - x - (int)strlen(title),
			 stale);
		attroff(theme_attr(C_BAD) | A_BOLD);
	}
	int bottom = a->lines - 2;
	if (v->ops->draw)
		v->ops->draw(a, v, 4, bottom);
	else
		draw_table(a, v, 4, bottom);
	/* Status line: a spinner while something long runs, else the flash. */
	move(a->lines - 1, 0);
	clrtoeol();
	if (*a->spinner_what) {
		static const char spin[] = "|/-\\";
		attron(theme_attr(C_WARN));
		mvprintw(a->lines - 1, 0, "%c %s...", spin[(now_mono_ms() / 200) % 4], a->spinner_what);
		attroff(theme_attr(C_WARN));
	} else if (*a->flash && now_mono_ms() < a->flash_until) {
		attron(theme_attr(a->flash_color));
		mvprintw(a->lines - 1, 0, "%.*s", a->cols, a->flash);
		attroff(theme_attr(a->flash_color));
	}
	prompt_draw(a);
}

/* tig's method: each line as text, trailing blanks trimmed. The file is
 * created new, never through a link (ui_files.h): an existing name is not
 * overwritten. */
static int save_display(struct app *a, const char *path)
{
	FILE *f = ui_create_new(path);
	if (!f)
		return -1;
	char line[1024];
	for (int y = 0; y < a->lines; y++) {
		int n = mvinnstr(y, 0, line, a->cols < (int)sizeof line - 1 ? a->cols : (int)sizeof line - 1);
		if (n < 0)
			n = 0;
		line[n] = '\0';
		while (n > 0 && line[n - 1] == ' ')
			line[--n] = '\0';
		fprintf(f, "%s\n", line);
	}
	return fclose(f);
}

/* ---- commands ---- */

static void run_command(struct app *a, const char *text, void *arg)
{
	(void)arg;
	while (*text == ' ' || *text == ':')
		text++;
	char cmd[64] = "";
	const char *rest = "";
	sscanf(text, "%63s", cmd);
	rest = text + strlen(cmd);
	while (*rest == ' ')
		rest++;
	if (!*cmd)
		return;
	if (!strcmp(cmd, "q") || !strcmp(cmd, "quit") || !strcmp(cmd, "q!")) {
		a->quit = true;
		return;
	}
	if (!strcmp(cmd, "save-display")) {
		draw(a);
		/* The reason first: a long path is what the screen's width cuts. */
		if (save_display(a, rest) < 0)
			app_flash(a, C_BAD, "save-display: %s: %s",
				  errno == EEXIST ? "not overwritten, it exists (a file or a link)"
						  : strerror(errno),
				  rest);
		return;
	}
	for (size_t i = 0; i < sizeof all_views / sizeof all_views[0]; i++) {
		const struct view_ops *o = all_views[i];
		if (!strcmp(cmd, o->name) || (o->alias && !strcmp(cmd, o->alias))) {
			/* A top-level view replaces the stack; its argument filters it. */
			while (a->view->below)
				app_pop(a);
			if (a->view->ops != o) {
				struct view *old = a->view;
				a->view = NULL;
				app_push(a, o, NULL);
				a->view->below = NULL;
				if (old->loading > 0)
					old->closing = true;
				else
					view_free(old);
			}
			snprintf(a->view->filter, sizeof a->view->filter, "%s", rest);
			app_refresh(a);
			return;
		}
	}
	app_flash(a, C_BAD, "no command :%s (views: :sb :runs :rec :events :walls :leaks :replay; :q)", cmd);
}

static void set_filter(struct app *a, const char *text, void *arg)
{
	(void)arg;
	snprintf(a->view->filter, sizeof a->view->filter, "%s", text);
	const struct trow *r = table_selected(&a->view->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", r ? r->key : "");
	table_index(&a->view->t, a->view->filter, keep);
}

/* ---- keys ---- */

/* A binding's label names its other keys after a '/': "j/down",
 * "l/right/space". These are the names understood there. */
static bool label_names_key(const char *label, int key)
{
	static const struct {
		const char *name;
		int key;
	} names[] = {{"down", KEY_DOWN}, {"up", KEY_UP}, {"right", KEY_RIGHT}, {"left", KEY_LEFT}, {"space", ' '},
		     {"pgdn", KEY_NPAGE}, {"pgup", KEY_PPAGE}}; /* pgdn, pgup: stream */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].key != key)
			continue;
		size_t n = strlen(names[i].name);
		for (const char *p = strchr(label, '/'); p; p = strchr(p + 1, '/'))
			if (!strncmp(p + 1, names[i].name, n) && (p[1 + n] == '/' || !p[1 + n]))
				return true;
	}
	return false;
}

static enum request request_of(struct app *a, int key)
{
	if (key == KEY_DOWN)
		return REQ_DOWN;
	if (key == KEY_UP)
		return REQ_UP;
	if (key == KEY_ENTER || key == '\r')
		return REQ_ENTER;
	/* The view's own bindings first, then the global ones. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ui_n_bindings; i++) {
			const struct binding *b = &ui_bindings[i];
			bool mine = pass == 0 ? !strcmp(b->view, a->view->ops->name) : !*b->view;
			if (mine && (b->key == key || label_names_key(b->label, key)))
				return b->req;
		}
	return REQ_NONE;
}

static void handle_key(struct app *a, int key)
{
	if (prompt_key(a, key))
		return;
	enum request r = request_of(a, key);
	if (r == REQ_NONE)
		return;
	for (size_t i = 0; i < ui_n_bindings; i++)
		if (ui_bindings[i].req == r && (ui_bindings[i].flags & ACTS) && !app_can_act(a, false))
			return;
	struct view *v = a->view;
	if (v->ops->request)
		r = v->ops->request(a, v, r);
	struct table *t = &v->t;
	switch (r) {
	case REQ_QUIT:
		a->quit = true;
		break;
	case REQ_HELP:
		app_push(a, &view_help, v->ops->name);
		break;
	case REQ_COMMAND:
		prompt_text(a, ":", "", run_command, NULL);
		break;
	case REQ_FILTER:
		prompt_text(a, "/", v->filter, set_filter, NULL);
		break;
	case REQ_BACK:
		if (*v->filter)
			set_filter(a, "", NULL);
		else
			app_pop(a);
		break;
	case REQ_DOWN:
		if (t->sel + 1 < t->nshown)
			t->sel++;
		break;
	case REQ_UP:
		if (t->sel)
			t->sel--;
		break;
	case REQ_TOP:
		t->sel = 0;
		break;
	case REQ_BOTTOM:
		t->sel = t->nshown ? t->nshown - 1 : 0;
		break;
	case REQ_SORT:
		if (v->ops->ncols) {
			t->sort_col = t->sort_col + 1 >= (int)v->ops->ncols ? -1 : t->sort_col + 1;
			const struct trow *sel = table_selected(t);
			char keep[128];
			snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
			table_index(t, v->filter, keep);
		}
		break;
	case REQ_ENTER: {
		const struct trow *sel = table_selected(t);
		if (sel && v->ops->enter)
			v->ops->enter(a, v, sel);
		break;
	}
	case REQ_CELLS: { /* stream: `l` on a sandbox */
		const struct trow *sel = table_selected(t);
		if (sel)
			app_push(a, &view_cells, sel->key);
		break;
	}
	case REQ_REFRESH:
		/* Before the loads: a failure they answer flashes over it, even
		 * one flashed before (the operator asked again). */
		app_flash(a, C_INFO, "refreshed");
		v->stale_told = false;
		app_refresh(a);
		break;
	default:
		break;
	}
}

/* ---- script ---- */

struct script {
	FILE *f;
	int keys[8192];
	size_t n, next;
	/* `:save-display FILE` observes rather than types: it runs as it comes,
	 * even over an open prompt or confirm, whose screen it then shows. */
	char save[8192];
	bool has_save;
	uint64_t wait_until; /* `:sleep MS`: no key before then */
	/* stream: `:nowait` feeds the lines after it without waiting for the
	 * requests and the cell in flight (to look at a cell while it runs),
	 * until `:wait` */
	bool nowait;
};

static bool script_next_line(struct script *s)
{
	char line[8192];
	while (fgets(line, sizeof line, s->f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line || line[0] == '#')
			continue;
		s->n = s->next = 0;
		if (!strcmp(line, ":nowait") || !strcmp(line, ":wait")) { /* stream */
			s->nowait = line[1] == 'n';
			continue;
		}
		if (!strncmp(line, ":sleep ", 7)) {
			s->wait_until = now_mono_ms() + strtoull(line + 7, NULL, 10);
			return true;
		}
		if (!strncmp(line, ":save-display ", 14)) {
			snprintf(s->save, sizeof s->save, "%s", line + 1);
			s->has_save = true;
			return true;
		}
		if (line[0] == ':') {
			for (char *p = line; *p && s->n < 8190; p++)
				s->keys[s->n++] = (unsigned char)*p;
			s->keys[s->n++] = '\n';
			return true;
		}
		for (char *p = line; *p && s->n < 8190;) {
			static const struct {
				const char *name;
				int key;
			} names[] = {{"<Enter>", '\n'}, {"<Esc>", 27},	{"<Down>", KEY_DOWN}, {"<Up>", KEY_UP},
				     {"<Space>", ' '}, {"<Tab>", '\t'}, {"<Backspace>", 127}, {"<Lt>", '<'},
				     {"<Right>", KEY_RIGHT}, {"<Left>", KEY_LEFT}};
			bool named = false;
			for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
				if (!strncmp(p, names[i].name, strlen(names[i].name))) {
					s->keys[s->n++] = names[i].key;
					p += strlen(names[i].name);
					named = true;
					break;
				}
			if (!named && !strncmp(p, "<C-", 3) && p[3] && p[4] == '>') {
				s->keys[s->n++] = (p[3] & 0x1f);
				p += 5;
				named = true;
			}
			if (!named)
				s->keys[s->n++] = (unsigned char)*p++;
		}
		return true;
	}
	return false;
}

/* Feeds the next key (or runs a :save-display); false at the end. */
static bool script_step(struct app *a, struct script *s)
{
	if (now_mono_ms() < s->wait_until)
		return true;
	while (s->next >= s->n && !s->has_save) {
		if (!script_next_line(s))
			return false;
		if (now_mono_ms() < s->wait_until)
			return true; /* a :sleep: the next line waits */
	}
	if (s->has_save) {
		s->has_save = false;
		run_command(a, s->save, NULL);
		return true;
	}
	handle_key(a, s->keys[s->next++]);
	return true;
}

/* ---- the loop ---- */

static bool settled(struct app *a)
{
	if (a->src->ops->pending(a->src) > 0 || *a->spinner_what)
		return false;
	for (struct view *v = a->view; v; v = v->below)
		if (v->loading > 0)
			return false;
	return true;
}

int ui_console_run(struct ui_source *src, const struct ui_options *o)
{
	struct app app = {.src = src, .opt = *o};
	struct app *a = &app;
	struct script script = {0};
	setlocale(LC_ALL, "");
	FILE *null_out = NULL, *null_in = NULL;
	if (o->script) {
		script.f = fopen(o->script, "r");
		if (!script.f) {
			fprintf(stderr, "bulkhead: console script %s: %s\n", o->script, strerror(errno));
			src->ops->free(src);
			return 2;
		}
	}
	if (o->no_display) {
		/* ncurses keeps its screen in memory; nothing reaches a terminal. */
		null_out = fopen("/dev/null", "w");
		null_in = fopen("/dev/null", "r");
		if (!newterm(getenv("TERM") ? getenv("TERM") : "xterm", null_out, null_in)) {
			fprintf(stderr, "bulkhead: cannot start a headless screen for TERM=%s\n", getenv("TERM"));
			return 2;
		}
	} else {
		initscr();
	}
	raw();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	theme_init();
	getmaxyx(stdscr, a->lines, a->cols);
	snprintf(a->counts, sizeof a->counts, "...");
	const struct view_ops *first = &view_sandboxes;
	for (size_t i = 0; o->start_view && i < sizeof all_views / sizeof all_views[0]; i++)
		if (!strcmp(o->start_view, all_views[i]->name))
			first = all_views[i];
	app_push(a, first, NULL);
	/* `bulkhead replay NAME`: the player over the list, so esc picks another. */
	if (first == &view_replay && o->start_scenario)
		app_push(a, &view_player, o->start_scenario);
	app_refresh(a);
	bool script_done = false;
	while (!a->quit) {
		getmaxyx(stdscr, a->lines, a->cols);
		draw(a);
		refresh();
		struct pollfd fds[16];
		int n = 0;
		if (!o->script)
			fds[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		n += src->ops->poll_fds(src, fds + n, 16 - n);
		int timeout = (int)(a->next_refresh > now_mono_ms() ? a->next_refresh - now_mono_ms() : 0);
		int st = src->ops->timeout_ms(src);
		if (st >= 0 && st < timeout)
			timeout = st;
		if (timeout > 200)
			timeout = 200; /* the spinner and the flash's expiry */
		if (o->script && !script_done && (settled(a) || script.nowait))
			timeout = script.wait_until > now_mono_ms() ? 10 : 0;
		poll(fds, (nfds_t)n, timeout);
		src->ops->process(src);
		if (now_mono_ms() >= a->next_refresh)
			app_refresh(a);
		if (a->view->ops->tick)
			a->view->ops->tick(a, a->view, now_mono_ms());
		if (o->script) {
			if (!script_done && (settled(a) || script.nowait)) {
				if (!script_step(a, &script))
					script_done = true;
			}
			if (script_done)
				a->quit = true;
			continue;
		}
		int key;
		while ((key = getch()) != ERR) {
			if (key == KEY_RESIZE)
				continue;
			if (key == 3) { /* ctrl-c */
				a->quit = true;
				break;
			}
			handle_key(a, key);
		}
	}
	endwin();
	while (a->view) {
		struct view *v = a->view;
		a->view = v->below;
		view_free(v);
	}
	free(a->prompt);
	src->ops->free(src);
	if (script.f)
		fclose(script.f);
	if (null_out)
		fclose(null_out);
	if (null_in)
		fclose(null_in);
	return 0;
}
