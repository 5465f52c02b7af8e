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
 * timing; `:save-display FILE` writes the screen as text. `:wait views`
 * makes the keys after it wait only for the views' own loads, not for a
 * cell in flight (to see one running); `:wait all` goes back. */
#include "app.h"
#include "ui_files.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
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
	&view_answers, /* ---- tables ---- */
	&view_approvals, /* ---- approvals ---- */
	&view_live, /* ---- presenter: :live follows a daemon's next call ---- */
	&view_hosts, /* ---- fleet ---- */
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
	v->arg = xstrdup(arg ? arg : "");
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
	free(v->arg);
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
	/* ---- tables ---- */
	/* What quitting closes: the embedded engine shuts every sandbox down;
	 * attached, the console closes its own and keeps the agents'. */
	bool embedded = !strcmp(a->src->ops->kind, "embedded");
	bool attached = !strcmp(a->src->ops->kind, "attached") ||
			!strcmp(a->src->ops->kind, "fleet"); /* ---- fleet: each host's attached ---- */
	a->closes_on_quit = 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].state, "ended") && (embedded || (attached && rows[i].mine)))
			a->closes_on_quit++;
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

/* ---- usage ---- */

const struct bh_session_usage *app_usage_of(const struct app *a, const char *fp)
{
	for (size_t i = 0; i < a->n_usage; i++)
		if (!strcmp(a->usage[i].fingerprint, fp))
			return &a->usage[i];
	return NULL;
}

static int percent(uint64_t part, uint64_t whole)
{
	return whole ? (int)((part * 100 + whole / 2) / whole) : 0;
}

/* The header's host figures, in units that are left out whole when the
 * line has no room ("load 0.18", "mem 5%", "budget 6%", "img 0%"). */
static void header_usage_cb(void *arg, const struct ui_usage *u, const char *err)
{
	struct app *a = arg;
	free(a->usage);
	a->usage = NULL;
	a->n_usage = 0;
	a->host[0] = a->daemon[0] = '\0';
	if (!err && u) {
		const struct bh_host_usage *h = &u->host;
		a->usage = xzalloc((u->n ? u->n : 1) * sizeof *a->usage);
		memcpy(a->usage, u->sessions, u->n * sizeof *a->usage);
		a->n_usage = u->n;
		a->usage_at_ms = h->now_unix_ms;
		char images[16] = "-";
		if (h->images_budget_bytes)
			snprintf(images, sizeof images, "%d%%",
				 percent(h->images_bytes, h->images_budget_bytes));
		uint32_t load = h->load_milli[0] + 5; /* to hundredths */
		snprintf(a->host, sizeof a->host, "load %u.%02u|mem %d%%|budget %d%%|img %s",
			 load / 1000, load % 1000 / 10,
			 percent(h->mem_total_bytes - h->mem_available_bytes, h->mem_total_bytes),
			 percent(h->budget_held_bytes, h->budget_bytes), images);
		char up[16];
		fmt_age(up, sizeof up, h->started_unix_ms, h->now_unix_ms);
		if (strcmp(a->src->ops->kind, "embedded"))
			snprintf(a->daemon, sizeof a->daemon, "daemon %s up %s", u->version, up);
		else
			snprintf(a->daemon, sizeof a->daemon, "up %s", up);
	}
	for (struct view *v = a->view; v; v = v->below)
		if (v->ops->usage)
			v->ops->usage(a, v);
}

/* line, then as many of the |-separated units as fit in cols. */
static void append_units(char *line, size_t n, const char *units, int cols)
{
	char copy[160];
	snprintf(copy, sizeof copy, "%s", units);
	const char *gap = "   ";
	for (char *save = NULL, *u = strtok_r(copy, "|", &save); u; u = strtok_r(NULL, "|", &save)) {
		size_t len = strlen(line);
		if ((int)(len + strlen(gap) + strlen(u)) > cols)
			break;
		snprintf(line + len, n - len, "%s%s", gap, u);
		gap = " ";
	}
}

/* ---- truth: the link's state in the header, retries with backoff ---- */

#define RETRY_MAX_MS 8000

static bool link_down(struct app *a, char *since, size_t since_n, char *why, size_t why_n)
{
	return a->src->ops->link_down && a->src->ops->link_down(a->src, since, since_n, why, why_n);
}

/* ---- approvals ---- */
static void header_approvals_cb(void *arg, const struct ui_approval *rows, size_t n,
				const char *err)
{
	(void)rows;
	struct app *a = arg;
	a->approvals_waiting = err ? 0 : n;
}

/* ---- light ---- */
static void header_waiting_cb(void *arg, size_t n, const char *err)
{
	((struct app *)arg)->approvals_waiting = err ? 0 : n;
}

void app_refresh(struct app *a)
{
	/* ---- usage: asked first, so the view's rows find this answer ---- */
	if (a->src->ops->usage)
		a->src->ops->usage(a->src, header_usage_cb, a);
	/* The sources answer the header and the view from one request when
	 * both ask in one turn (the attached source sends one ListSessions). */
	a->src->ops->sessions(a->src, header_counts_cb, a);
	/* Only a daemon holds calls: the header counts them there. */
	if (a->src->ops->approvals_waiting) /* ---- light: from the overview ---- */
		a->src->ops->approvals_waiting(a->src, header_waiting_cb, a);
	else if (!strcmp(a->src->ops->kind, "attached"))
		a->src->ops->approvals(a->src, header_approvals_cb, a);
	if (a->view->ops->load)
		a->view->ops->load(a, a->view);
	else if (a->refresh_asked) {
		app_flash(a, C_INFO, "refreshed"); /* nothing to ask: nothing failed */
		a->refresh_asked = false;
	}
	/* A daemon that does not answer is asked again less and less often
	 * (2, 4, 8, 8 ... s); ctrl-r asks at once. */
	char since[16], why[8];
	if (link_down(a, since, sizeof since, why, sizeof why))
		a->retry_ms = a->retry_ms ? (a->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : a->retry_ms * 2)
					  : REFRESH_MS;
	else
		a->retry_ms = 0;
	a->next_refresh = now_mono_ms() + (a->retry_ms ? a->retry_ms : REFRESH_MS);
}

void fmt_utc(char *buf, size_t n, int64_t unix_ms)
{
	if (unix_ms <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char text[32];
	strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, n, "%s UTC", text);
}

/* Header line 1: the tiers and counts, or, while the daemon does not
 * answer, that it is disconnected and since when (red; bold in monochrome,
 * and the words say it without colour). */
static void draw_status_line(struct app *a)
{
	char since[16], why[256], line[1024];
	if (link_down(a, since, sizeof since, why, sizeof why)) {
		uint64_t now = now_mono_ms();
		unsigned left = a->next_refresh > now ? (unsigned)((a->next_refresh - now + 999) / 1000) : 0;
		snprintf(line, sizeof line, "DISCONNECTED since %s UTC, retrying in %us (ctrl-r: now): %s",
			 since, left, why);
		attron(theme_attr(C_BAD) | A_BOLD);
		mvaddnstr(1, 0, line, a->cols);
		attroff(theme_attr(C_BAD) | A_BOLD);
		return;
	}
	/* ---- inflight: what a dead engine left, until it is reaped (red;
	 * bold in monochrome, and the words say it) ---- */
	char left[512] = "";
	a->banner_lines = 0;
	if (a->src->ops->leftovers)
		a->src->ops->leftovers(a->src, left, sizeof left);
	if (*left) {
		snprintf(line, sizeof line, "%s; kept, see :leaks", left);
		attron(theme_attr(C_BAD) | A_BOLD);
		mvaddnstr(1, 0, line, a->cols);
		/* Too long for one line: the rest takes the hints' line. */
		a->banner_lines = 1;
		if ((int)strlen(line) > a->cols && a->cols > 0) {
			/* Cut at the last blank that fits: words stay whole. */
			int cut = a->cols;
			while (cut > a->cols / 2 && line[cut] != ' ')
				cut--;
			if (line[cut] != ' ')
				cut = a->cols;
			move(1, 0);
			clrtoeol();
			mvaddnstr(1, 0, line, cut);
			mvaddnstr(2, 0, line + cut + (line[cut] == ' '), a->cols);
			a->banner_lines = 2;
		}
		attroff(theme_attr(C_BAD) | A_BOLD);
		return;
	}
	snprintf(line, sizeof line, "tiers: %s   sessions: %s", a->tiers, a->counts);
	if (a->approvals_waiting) /* ---- approvals ---- */
		snprintf(line + strlen(line), sizeof line - strlen(line), "   approvals: %zu waiting",
			 a->approvals_waiting);
	append_units(line, sizeof line, a->host, a->cols); /* ---- usage ---- */
	mvaddnstr(1, 0, line, a->cols);
}

/* ---- drawing ---- */

/* ---- tables ---- */

/* "↑"/"↓" after a sorted column's name, where the terminal speaks UTF-8. */
static const char *sort_marker(bool desc)
{
	bool u = strcmp(ui_ellipsis(), ">") != 0;
	return desc ? (u ? "\xe2\x86\x93" : "v") : (u ? "\xe2\x86\x91" : "^");
}

/* A flex column needs 6 to stay ("mine", a short principal); it is drawn 8
 * wide at least, cut by the screen's edge. */
#define FLEX_LEAST 6

/* The columns drawn (cols, in order) and their widths: the view's order
 * (live figures only where the source has an engine), less the highest
 * drop ranks while they do not fit the screen (k9s's way); wide, every
 * column instead, the wide ones too, each as long as its longest cell. The
 * sorted column is widened to hold its marker, never over the gap. */
static size_t table_layout(const struct app *a, const struct view *v, size_t cols[TABLE_MAX_COLS],
			   int widths[TABLE_MAX_COLS])
{
	const struct view_ops *o = v->ops;
	const struct table *t = &v->t;
	size_t n = 0;
	for (size_t k = 0; k < (o->order ? o->n_order : o->ncols) && n < TABLE_MAX_COLS; k++) {
		size_t c = o->order ? o->order[k] : k;
		if (!a->src->ops->has_engine && (o->live_cols & (1u << c)))
			continue;
		if ((o->fleet_cols & (1u << c)) && strcmp(a->src->ops->kind, "fleet"))
			continue; /* ---- fleet: HOST only over a fleet ---- */
		cols[n++] = c;
	}
	for (size_t c = o->ncols; v->wide && c < o->ncols + o->nwide && n < TABLE_MAX_COLS; c++)
		cols[n++] = c;
	for (; !v->wide && o->drop;) {
		int need = -1;
		for (size_t k = 0; k < n; k++)
			need += (o->widths[cols[k]] ? o->widths[cols[k]]
				  : o->flex_least ? o->flex_least /* ---- ci ---- */
						  : FLEX_LEAST) + 1;
		size_t worst = n;
		for (size_t k = 0; need > a->cols && k < n; k++)
			if (o->drop[cols[k]] > 0 && (worst == n || o->drop[cols[k]] > o->drop[cols[worst]]))
				worst = k;
		if (worst == n)
			break;
		memmove(&cols[worst], &cols[worst + 1], (n - worst - 1) * sizeof *cols);
		n--;
	}
	int fixed = 0, flex = 0;
	for (size_t k = 0; k < n; k++) {
		size_t c = cols[k];
		int hl = (int)strlen(o->headers[c]);
		widths[k] = o->widths[c];
		if (v->wide) {
			int longest = hl + 1;
			for (size_t i = 0; i < t->nshown; i++) {
				const char *cell = t->rows[t->shown[i]].cells[c];
				int len = cell ? (int)strlen(cell) : 0;
				longest = len > longest ? len : longest;
			}
			longest = longest < 160 ? longest : 160;
			widths[k] = longest > widths[k] ? longest : widths[k];
		}
		if (t->sort_col == (int)c && widths[k] && widths[k] < hl + 1)
			widths[k] = hl + 1;
		fixed += widths[k] ? widths[k] + 1 : 0;
		flex += !widths[k];
	}
	int left = a->cols - fixed;
	for (size_t k = 0; k < n; k++)
		if (!widths[k])
			widths[k] = flex ? (left > 8 * flex ? left / flex - 1 : 8) : 8;
	return n;
}

/* Keeps the selection within rows rows of the top. */
static void table_scroll(struct table *t, int rows)
{
	t->page = rows > 1 ? (size_t)rows : 1;
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows > 0 && t->sel >= t->top + (size_t)rows)
		t->top = t->sel - (size_t)rows + 1;
	if (t->top && t->top + (size_t)rows > t->nshown)
		t->top = t->nshown > (size_t)rows ? t->nshown - (size_t)rows : 0;
}

static void draw_table(struct app *a, struct view *v, int top, int bottom)
{
	const struct view_ops *o = v->ops;
	int widths[TABLE_MAX_COLS];
	size_t cols[TABLE_MAX_COLS];
	size_t ncols = table_layout(a, v, cols, widths);
	struct table *t = &v->t;
	attron(A_BOLD);
	int x = 0;
	for (size_t k = 0; k < ncols && x < a->cols; k++) {
		size_t c = cols[k];
		int w = widths[k] < a->cols - x ? widths[k] : a->cols - x;
		draw_clipped(top, x, w, o->headers[c]);
		/* The Shift+letter that sorts it, underlined. */
		int letter = table_sort_letter(o, c);
		const char *h = o->headers[c];
		for (int i = 0; letter && h[i] && i < w; i++)
			if ((h[i] & ~0x20) == letter) {
				mvaddch(top, x + i, (chtype)(unsigned char)h[i] | A_UNDERLINE | A_BOLD);
				break;
			}
		int hl = (int)strlen(h);
		if (t->sort_col == (int)c && hl < w)
			mvaddstr(top, x + hl, sort_marker(t->sort_desc));
		x += widths[k] + 1;
	}
	attroff(A_BOLD);
	int rows = bottom - top;
	table_scroll(t, rows);
	for (int i = 0; i < rows && t->top + (size_t)i < t->nshown; i++) {
		size_t idx = t->top + (size_t)i;
		const struct trow *r = &t->rows[t->shown[idx]];
		/* Stale rows (the last load failed) are dim: they are old. */
		int attr = idx == t->sel ? theme_attr(C_SELECT)
					 : theme_attr(*v->stale ? C_DIM : r->color);
		attron(attr);
		mvhline(top + 1 + i, 0, ' ', idx == t->sel ? a->cols : 0);
		x = 0;
		for (size_t k = 0; k < ncols && x < a->cols; k++) {
			int w = widths[k] < a->cols - x ? widths[k] : a->cols - x;
			draw_clipped(top + 1 + i, x, w, r->cells[cols[k]] ? r->cells[cols[k]] : "");
			x += widths[k] + 1;
		}
		/* ---- truth: old rows carry a mark that shows without colour ---- */
		if (*v->stale && ncols > 1 && widths[0] < a->cols)
			mvaddch(top + 1 + i, widths[0], '~');
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

/* k9s's crumbs: the views the drill-down came through, the current last
 * (reversed). */
static void draw_crumbs(struct app *a, int y)
{
	const struct view *stack[32];
	size_t n = 0;
	for (const struct view *v = a->view; v && n < 32; v = v->below)
		stack[n++] = v;
	int x = 0;
	for (size_t i = n; i-- > 0 && x < a->cols;) {
		char crumb[64];
		snprintf(crumb, sizeof crumb, "<%s>", stack[i]->ops->name);
		int attr = i == 0 ? (int)(A_REVERSE | A_BOLD) : theme_attr(C_DIM);
		attron(attr);
		draw_clipped(y, x, a->cols - x, crumb);
		attroff(attr);
		x += (int)strlen(crumb) + 1;
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
	/* ---- presenter: projected to a class, the whole screen is the view's
	 * but its last row, where the flash and a prompt still show ---- */
	if (v->ops->fullscreen) {
		v->ops->draw(a, v, 0, a->lines - 2);
		if (*a->flash && now_mono_ms() < a->flash_until) {
			attron(theme_attr(a->flash_color));
			draw_clipped(a->lines - 1, 0, a->cols, a->flash);
			attroff(theme_attr(a->flash_color));
		}
		prompt_draw(a);
		return;
	}
	char where[256];
	a->src->ops->describe(a->src, where, sizeof where);
	tilde(where);
	/* Asked at every draw (it is cheap): a refresh-old "proving tiers..."
	 * would stay up for two seconds after the proofs finished. */
	a->src->ops->tier_summary(a->src, a->tiers, sizeof a->tiers);
	/* Clipped to the width: a long path would wrap into the next line. */
	char line[1024];
	snprintf(line, sizeof line, "bulkhead %s  %s%s%s%s", BULKHEAD_VERSION, where,
		 a->opt.readonly ? "  [read-only]" : "", *a->daemon ? "  " : "", a->daemon);
	attron(theme_attr(C_HEADER) | A_BOLD);
	mvaddnstr(0, 0, line, a->cols);
	attroff(theme_attr(C_HEADER) | A_BOLD);
	draw_status_line(a);
	if (a->banner_lines < 2) /* inflight: a dead engine's leftovers can take it */
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
	/* ---- tables ---- */
	int bottom = a->lines - 2;
	/* The player is projected to a class: every row counts, and its title
	 * already says which scenario and step it shows. */
	bool crumbs = v->below && v->ops != &view_player;
	if (crumbs)
		bottom--; /* the crumbs' row */
	int pane = v->ops == &view_sandboxes ? answers_pane_rows(a, 4, bottom) : 0;
	if (!pane && v->ops->pane_rows) /* ---- replay: a pane under the table ---- */
		pane = v->ops->pane_rows(a, v, 4, bottom);
	bottom -= pane;
	if (!v->ops->draw) {
		table_scroll(&v->t, bottom - 4);
		size_t rows = bottom - 4 > 0 ? (size_t)(bottom - 4) : 0;
		if (v->t.nshown > rows) {
			size_t last = v->t.top + rows < v->t.nshown ? v->t.top + rows : v->t.nshown;
			size_t used = strlen(title) - 1; /* before the closing blank */
			snprintf(title + used, sizeof title - used, " %zu%s%zu of %zu ", v->t.top + 1,
				 strcmp(ui_ellipsis(), ">") ? "\xe2\x80\x93" : "-", last, v->t.nshown);
		}
	}
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
	if (v->ops->draw)
		v->ops->draw(a, v, 4, bottom);
	else
		draw_table(a, v, 4, bottom);
	if (pane && v->ops->pane_draw) /* ---- replay: a pane under the table ---- */
		v->ops->pane_draw(a, v, bottom + 1, bottom + pane);
	else if (pane)
		answers_draw_pane(a, bottom + 1, bottom + pane);
	if (crumbs)
		draw_crumbs(a, bottom + pane + 1);
	/* Status line: a spinner while something long runs, else the flash. */
	move(a->lines - 1, 0);
	clrtoeol();
	if (*a->spinner_what || a->cells_running) {
		static const char spin[] = "|/-\\";
		char what[160];
		if (a->cells_running && *a->spinner_what)
			snprintf(what, sizeof what, "%s, %d cell%s running", a->spinner_what, a->cells_running,
				 a->cells_running == 1 ? "" : "s");
		else if (a->cells_running)
			snprintf(what, sizeof what, "running %d cell%s", a->cells_running,
				 a->cells_running == 1 ? "" : "s");
		else
			snprintf(what, sizeof what, "%s", a->spinner_what);
		attron(theme_attr(C_WARN));
		mvprintw(a->lines - 1, 0, "%c %s...", spin[(now_mono_ms() / 200) % 4], what);
		attroff(theme_attr(C_WARN));
	} else if (*a->flash && now_mono_ms() < a->flash_until) {
		attron(theme_attr(a->flash_color));
		draw_clipped(a->lines - 1, 0, a->cols, a->flash);
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
		/* Bytes, not columns: "…" and "↑" take three for one. */
		int n = mvinnstr(y, 0, line, (int)sizeof line - 1);
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

/* ---- tables ---- */
static void quit_confirmed(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (text)
		a->quit = true;
}

/* q, :q and ctrl-c: asked first when quitting closes sandboxes (every
 * one of the embedded engine's; attached, the console's own). */
static void ask_quit(struct app *a)
{
	if (!a->closes_on_quit) {
		a->quit = true;
		return;
	}
	char q[96];
	snprintf(q, sizeof q, "quit and close %zu sandbox%s?", a->closes_on_quit,
		 a->closes_on_quit == 1 ? "" : "es");
	prompt_confirm(a, q, quit_confirmed, NULL);
}

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
	if (!strcmp(cmd, "q!")) {
		a->quit = true;
		return;
	}
	if (!strcmp(cmd, "q") || !strcmp(cmd, "quit")) {
		ask_quit(a);
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
	if (presenter_command(a, cmd, rest)) /* ---- presenter: :present, :lanes ---- */
		return;
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
	app_flash(a, C_BAD, "no command :%s (views: :sb :runs :rec :events :walls :leaks :ap :replay%s; :q)",
		  cmd, strcmp(a->src->ops->kind, "fleet") ? "" : " :hosts");
}

/* Applied as it is typed; a changed filter selects its first match. */
static void set_filter(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (!strcmp(a->view->filter, text))
		return;
	snprintf(a->view->filter, sizeof a->view->filter, "%s", text);
	table_index(&a->view->t, a->view->filter, NULL);
	a->view->t.sel = a->view->t.top = 0;
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
		     {"pgdn", KEY_NPAGE}, {"pgup", KEY_PPAGE}};
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
	if (key == KEY_BACKSPACE || key == 8) /* ---- procs ---- one backspace, whatever sends it */
		key = 127;
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

/* ---- tables ---- */
/* A bracketed paste is text for the open editor, never keys: outside one
 * it is dropped (and said once), so a pasted "pass" sorts nothing. */
static bool paste_key(struct app *a, int key)
{
	if (key == KEY_PASTE_START) {
		a->pasting = true;
		a->paste_told = false;
		return true;
	}
	if (key == KEY_PASTE_END) {
		a->pasting = false;
		return true;
	}
	if (!a->pasting)
		return false;
	if (!prompt_paste(a, key) && !a->paste_told) {
		app_flash(a, C_WARN, "paste ignored: it goes into a cell (x) or a prompt, never taken as keys");
		a->paste_told = true;
	}
	return true;
}

/* Shift+letter: the column whose letter it is (table_sort_letter). */
static bool sort_key(struct app *a, int key)
{
	struct view *v = a->view;
	if (key < 'A' || key > 'Z' || v->ops->draw || !v->ops->ncols)
		return false;
	size_t n = v->ops->ncols + (v->wide ? v->ops->nwide : 0);
	for (size_t c = 0; c < n && c < TABLE_MAX_COLS; c++)
		if (table_sort_letter(v->ops, c) == key) {
			table_sort_by(&v->t, (int)c, v->ops->types ? v->ops->types[c] : COL_TEXT, v->filter);
			return true;
		}
	return false;
}

static void handle_key(struct app *a, int key)
{
	if (paste_key(a, key))
		return;
	if (key == 3 && !a->prompt) { /* ctrl-c: quit, asked as q is; in a prompt it cancels */
		ask_quit(a);
		return;
	}
	if (prompt_key(a, key))
		return;
	if (a->view->ops->key && a->view->ops->key(a, a->view, key)) /* ---- presenter ---- */
		return;
	enum request r = request_of(a, key);
	if (r == REQ_NONE && sort_key(a, key))
		return;
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
		ask_quit(a);
		break;
	case REQ_HELP:
		app_push(a, &view_help, v->ops->name);
		break;
	case REQ_COMMAND:
		prompt_text(a, ":", "", run_command, NULL);
		break;
	case REQ_FILTER:
		prompt_text_live(a, "/", v->filter, set_filter, NULL);
		break;
	case REQ_BACK:
		if (*v->filter && !v->filter_is_arg)
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
	/* ---- tables ---- */
	case REQ_PAGE_DOWN:
		if (t->nshown) {
			t->sel = t->sel + t->page < t->nshown ? t->sel + t->page : t->nshown - 1;
			t->top += t->page;
		}
		break;
	case REQ_PAGE_UP:
		t->sel = t->sel > t->page ? t->sel - t->page : 0;
		t->top = t->top > t->page ? t->top - t->page : 0;
		break;
	case REQ_WIDE:
		v->wide = !v->wide;
		break;
	case REQ_COPY: {
		const struct trow *sel = table_selected(t);
		if (sel)
			app_copy(a, "", *sel->copy ? sel->copy : sel->key);
		else
			app_flash(a, C_WARN, "no row selected: nothing to copy");
		break;
	}
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
	/* ---- presenter: from a scenario's views ---- */
	case REQ_PRESENT:
	case REQ_LANES:
	case REQ_HANDOUT: {
		const char *path = presenter_scenario_of(v);
		if (!path)
			app_flash(a, C_WARN, "open a scenario first (:replay, then enter)");
		else if (r == REQ_HANDOUT)
			presenter_handout_prompt(a, path);
		else {
			char arg[4200];
			presenter_arg_of(v, path, arg, sizeof arg);
			app_push(a, r == REQ_PRESENT ? &view_presenter : &view_lanes, arg);
		}
		break;
	}
	case REQ_REFRESH:
		/* "refreshed" only once the view's load answered (view_load.c):
		 * a failure flashes instead, even one flashed before (the
		 * operator asked again). It asks at once, whatever the backoff. */
		a->refresh_asked = true;
		v->stale_told = false;
		a->retry_ms = 0;
		if (a->src->ops->forget_kept)
			a->src->ops->forget_kept(a->src);
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
	/* `:wait all` (the default): a key waits for every request and the
	 * cell in flight; `:wait views`: only for the views' own loads, so a
	 * test can look into a sandbox whose cell still runs; `:wait nothing`:
	 * the lines go in at once (a pane watched while its cell runs). */
	enum { WAIT_ALL, WAIT_VIEWS, WAIT_NOTHING } wait;
};

static bool script_next_line(struct script *s)
{
	char line[8192];
	while (fgets(line, sizeof line, s->f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line || line[0] == '#')
			continue;
		s->n = s->next = 0;
		if (!strncmp(line, ":sleep ", 7)) {
			s->wait_until = now_mono_ms() + strtoull(line + 7, NULL, 10);
			return true;
		}
		if (!strcmp(line, ":wait all") || !strcmp(line, ":wait views") ||
		    !strcmp(line, ":wait nothing")) {
			s->wait = line[6] == 'a' ? WAIT_ALL : line[6] == 'v' ? WAIT_VIEWS : WAIT_NOTHING;
			continue;
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
				     {"<Right>", KEY_RIGHT}, {"<Left>", KEY_LEFT},
				     /* ---- tables ---- */
				     {"<PgDn>", KEY_NPAGE}, {"<PgUp>", KEY_PPAGE}, {"<Home>", KEY_HOME},
				     {"<End>", KEY_END}, {"<Paste>", KEY_PASTE_START},
				     {"</Paste>", KEY_PASTE_END}};
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

static bool settled(struct app *a, bool views_only)
{
	if (!views_only && (a->src->ops->pending(a->src) > 0 || *a->spinner_what || a->cells_running))
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
	app.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8"); /* ---- usage ---- */
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
	/* ---- tables ---- */
	/* Bracketed paste: the terminal marks a paste, so its newlines never
	 * run anything (turned off again at exit). */
	define_key("\033[200~", KEY_PASTE_START);
	define_key("\033[201~", KEY_PASTE_END);
	if (!o->no_display) {
		fputs("\033[?2004h", stdout);
		fflush(stdout);
	}
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
		if (o->script && !script_done && (script.wait == WAIT_NOTHING || settled(a, script.wait == WAIT_VIEWS)))
			timeout = script.wait_until > now_mono_ms() ? 10 : 0;
		poll(fds, (nfds_t)n, timeout);
		src->ops->process(src);
		if (now_mono_ms() >= a->next_refresh)
			app_refresh(a);
		if (a->view->ops->tick)
			a->view->ops->tick(a, a->view, now_mono_ms());
		if (o->script) {
			if (!script_done && (script.wait == WAIT_NOTHING || settled(a, script.wait == WAIT_VIEWS))) {
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
			handle_key(a, key);
			if (a->quit)
				break;
		}
	}
	endwin();
	if (!o->no_display) {
		fputs("\033[?2004l", stdout);
		fflush(stdout);
	}
	prompt_cancel(a); /* an unanswered confirm frees what it held */
	answers_free(a);
	while (a->view) {
		struct view *v = a->view;
		a->view = v->below;
		view_free(v);
	}
	free(a->usage); /* ---- usage ---- */
	src->ops->free(src);
	if (script.f)
		fclose(script.f);
	if (null_out)
		fclose(null_out);
	if (null_in)
		fclose(null_in);
	return 0;
}
