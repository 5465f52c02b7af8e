/* Approvals: the calls a daemon holds for a person's decision (docs/api.md,
 * Approvals) — who sent it, its run, owner and tier, how long it has waited
 * and when it times out, its code's first line. enter shows the whole code
 * and its files; a approves and d denies, each asking a reason and then
 * [y/N]. Refreshed with the console (every 2 s): a call decided elsewhere or
 * timed out leaves the list. */
#include "app.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const headers[] = {"ID",   "PRINCIPAL", "RUN",      "OWNER",
				      "TIER", "WAITING",   "DEADLINE", "CODE"};
static const int widths[] = {12, 10, 8, 8, 9, 7, 8, 0};

/* A held call as this view keeps it between loads. */
struct held_copy {
	struct ui_approval row; /* code and files[] point into this copy */
	char *code;
	struct ui_approval_file *files;
	char **texts;
};

struct held_list {
	struct held_copy *v;
	size_t n;
	/* The decision being asked (reason, then [y/N]). */
	char id[16], principal[65];
	bool approve;
	char reason[600];
	int scroll; /* the detail view's first line */
};

static void clean(char *out, size_t cap, const char *p, size_t n);

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void list_clear(struct held_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct held_copy *h = &l->v[i];
		for (size_t k = 0; k < h->row.n_files; k++)
			free(h->texts[k]);
		free(h->texts);
		free(h->files);
		free(h->code);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void copy_rows(struct held_list *l, const struct ui_approval *rows, size_t n)
{
	list_clear(l);
	l->v = xzalloc((n ? n : 1) * sizeof *l->v);
	l->n = n;
	for (size_t i = 0; i < n; i++) {
		struct held_copy *h = &l->v[i];
		h->row = rows[i];
		h->code = xstrdup(rows[i].code);
		h->row.code = h->code;
		size_t nf = rows[i].n_files;
		h->files = xzalloc((nf ? nf : 1) * sizeof *h->files);
		h->texts = xzalloc((nf ? nf : 1) * sizeof *h->texts);
		for (size_t k = 0; k < nf; k++) {
			h->files[k] = rows[i].files[k];
			h->texts[k] = xstrdup(rows[i].files[k].text);
			h->files[k].text = h->texts[k];
		}
		h->row.files = h->files;
	}
}

static struct held_list *list_of(struct view *v)
{
	if (!v->priv)
		v->priv = xzalloc(sizeof(struct held_list));
	return v->priv;
}

static const struct held_copy *find(const struct held_list *l, const char *id)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].row.id, id))
			return &l->v[i];
	return NULL;
}

/* "in 48s", or "due" once past it (the daemon refuses it at its next sweep). */
static void deadline_text(char *buf, size_t n, int64_t deadline_ms, int64_t now)
{
	if (deadline_ms <= now) {
		snprintf(buf, n, "due");
		return;
	}
	char left[16];
	fmt_age(left, sizeof left, deadline_ms, now);
	snprintf(buf, n, "in %s", left);
}

static void fill(struct view *v)
{
	struct held_list *l = v->priv;
	table_clear(&v->t);
	int64_t now = wall_ms();
	for (size_t i = 0; i < l->n; i++) {
		const struct ui_approval *h = &l->v[i].row;
		/* Near its deadline it is drawn as a warning: decide now or it is refused. */
		bool late = h->deadline_ms - now < 10000;
		struct trow *r = table_add(&v->t, h->id, late ? C_BAD : C_WARN);
		char waiting[16], deadline[24];
		fmt_age(waiting, sizeof waiting, h->held_ms, now);
		deadline_text(deadline, sizeof deadline, h->deadline_ms, now);
		size_t first = strcspn(h->code, "\n");
		char head[256];
		clean(head, sizeof head, h->code, first);
		table_cell(r, 0, "%s", h->id);
		table_cell(r, 1, "%s", h->principal);
		table_cell(r, 2, "%s", *h->run_key ? h->run_key : "-");
		table_cell(r, 3, "%.12s", *h->owner ? h->owner : "-");
		table_cell(r, 4, "%s", h->tier);
		table_cell(r, 5, "%s", waiting);
		table_cell(r, 6, "%s", deadline);
		table_cell(r, 7, "%s%s", head, h->code[first] ? " …" : "");
	}
	table_index(&v->t, v->filter, NULL);
}

static void loaded(void *arg, const struct ui_approval *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	/* Only a daemon holds calls: another source says so, and that is what
	 * the view shows, not a failure. */
	if (err && strcmp(v->app->src->ops->kind, "attached")) {
		snprintf(v->sub, sizeof v->sub, "(%s)", err);
		return;
	}
	if (err) {
		view_load_failed(v->app, v, err);
		return;
	}
	view_load_ok(v);
	copy_rows(list_of(v), rows, n);
	if (v->ops->draw) { /* the detail view: is its call still held? */
		snprintf(v->sub, sizeof v->sub, "(call %.12s%s)", v->arg,
			 find(v->priv, v->arg) ? "" : ": no longer held");
		return;
	}
	fill(v);
}

static void load(struct app *a, struct view *v)
{
	list_of(v);
	v->loading++;
	a->src->ops->approvals(a->src, loaded, v);
}

/* ---- deciding ---- */

struct deciding {
	struct app *a;
	char id[16];
	bool approve;
};

static void decided(void *arg, const char *err)
{
	struct deciding *d = arg;
	app_busy(d->a, "");
	if (err)
		app_flash(d->a, C_BAD, "%s %s: %s", d->approve ? "approve" : "deny", d->id, err);
	else
		app_flash(d->a, d->approve ? C_GOOD : C_WARN, "%s %s",
			  d->approve ? "approved" : "denied", d->id);
	app_refresh(d->a);
	free(d);
}

static void confirmed(struct app *a, const char *text, void *arg)
{
	(void)text;
	struct held_list *l = list_of(arg);
	struct deciding *d = xzalloc(sizeof *d);
	d->a = a;
	snprintf(d->id, sizeof d->id, "%s", l->id);
	d->approve = l->approve;
	app_busy(a, l->approve ? "approving" : "denying");
	a->src->ops->decide(a->src, l->id, l->approve, l->reason, decided, d);
}

static void got_reason(struct app *a, const char *text, void *arg)
{
	struct held_list *l = list_of(arg);
	snprintf(l->reason, sizeof l->reason, "%s", text);
	if (!l->approve && !*l->reason) {
		app_flash(a, C_WARN,
			  "a denial needs a reason (the agent is told it); nothing decided");
		return;
	}
	char q[160];
	snprintf(q, sizeof q, "%s call %s of %.40s?", l->approve ? "approve" : "deny", l->id,
		 l->principal);
	prompt_confirm(a, q, confirmed, arg);
}

static void ask(struct app *a, struct view *v, const struct held_copy *h, bool approve)
{
	struct held_list *l = list_of(v);
	snprintf(l->id, sizeof l->id, "%s", h->row.id);
	snprintf(l->principal, sizeof l->principal, "%s", h->row.principal);
	l->approve = approve;
	char label[96];
	snprintf(label, sizeof label, "%s %s, reason%s: ", approve ? "approve" : "deny", h->row.id,
		 approve ? " (optional)" : "");
	prompt_text(a, label, "", got_reason, v);
}

/* The call a or d is about: the detail view's, or the selected row's. */
static const struct held_copy *target(struct app *a, struct view *v)
{
	struct held_list *l = list_of(v);
	const char *id = v->ops->draw ? v->arg : NULL;
	if (!id) {
		const struct trow *row = table_selected(&v->t);
		id = row ? row->key : NULL;
	}
	const struct held_copy *h = id ? find(l, id) : NULL;
	if (!h)
		app_flash(a, C_INFO, "no held call %s",
			  v->ops->draw ? "here any more" : "selected");
	return h;
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	if (r == REQ_APPROVE || r == REQ_DENY || r == REQ_APPROVE_SHOWN || r == REQ_DENY_SHOWN) {
		if (strcmp(a->src->ops->kind, "attached")) {
			app_flash(a, C_WARN, "%s", UI_APPROVALS_DAEMONS);
			return REQ_NONE;
		}
		const struct held_copy *h = target(a, v);
		if (h)
			ask(a, v, h, r == REQ_APPROVE || r == REQ_APPROVE_SHOWN);
		return REQ_NONE;
	}
	if (v->ops->draw && (r == REQ_DOWN || r == REQ_UP)) {
		struct held_list *l = list_of(v);
		l->scroll += r == REQ_DOWN ? 1 : (l->scroll > 0 ? -1 : 0);
		return REQ_NONE;
	}
	return r;
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	app_push(a, &view_approval, row->key);
}

static void done(struct view *v)
{
	struct held_list *l = v->priv;
	if (l)
		list_clear(l);
	free(l);
}

/* ---- one held call: its code and files ---- */

/* A line of the agent's code or file as it may be drawn: control
 * characters (C0, DEL and UTF-8's C1) show as '?', a tab as a space, so no
 * byte of it reaches the terminal as a command. */
static void clean(char *out, size_t cap, const char *p, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (ch == 0xc2 && i + 1 < n && (unsigned char)p[i + 1] >= 0x80 &&
		    (unsigned char)p[i + 1] <= 0x9f) {
			out[o++] = '?';
			i++;
		} else {
			out[o++] = ch == '\t' ? ' ' : (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
		}
	}
	out[o] = '\0';
}

/* Adds text's lines to the body, from the view's scroll on. */
static void put_lines(int *y, int bottom, int *skip, int cols, const char *text)
{
	for (const char *p = text; *p || p == text;) {
		size_t n = strcspn(p, "\n");
		if (*skip > 0) {
			(*skip)--;
		} else if (*y < bottom) {
			char shown[1024];
			clean(shown, sizeof shown, p, n < (size_t)cols ? n : (size_t)cols);
			mvaddnstr((*y)++, 0, shown, cols);
		}
		p += n;
		if (!*p)
			break;
		p++;
	}
}

static void utc(char *buf, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

static void draw_one(struct app *a, struct view *v, int top, int bottom)
{
	struct held_list *l = list_of(v);
	const struct held_copy *h = find(l, v->arg);
	if (!h) {
		attron(theme_attr(C_DIM));
		mvprintw(top + 1, 2, "%s",
			 v->loading > 0 ? "loading..." : "(this call is no longer held)");
		attroff(theme_attr(C_DIM));
		return;
	}
	const struct ui_approval *r = &h->row;
	int64_t now = wall_ms();
	char held[32], deadline[32], waiting[16], left[24], line[512];
	utc(held, sizeof held, r->held_ms);
	utc(deadline, sizeof deadline, r->deadline_ms);
	fmt_age(waiting, sizeof waiting, r->held_ms, now);
	deadline_text(left, sizeof left, r->deadline_ms, now);
	int y = top, skip = l->scroll;
	/* ---- egress: a project's steps are in no one language: its kind says it ---- */
	snprintf(line, sizeof line, "%s of %s on %s (%s)", r->procedure, r->principal, r->tier,
		 *r->language ? r->language : r->kind);
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "session  %s", *r->session ? r->session : "- (a one-shot Run)");
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "run      %s   owner %s", *r->run_key ? r->run_key : "-",
		 *r->owner ? r->owner : "-");
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "held     %s UTC (waiting %s)", held, waiting);
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "deadline %s UTC (%s; refused then, nothing run)", deadline,
		 left);
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "request  %s", r->request);
	put_lines(&y, bottom, &skip, a->cols, line);
	snprintf(line, sizeof line, "--- code (%llu bytes) ---", (unsigned long long)r->code_bytes);
	attron(A_BOLD);
	put_lines(&y, bottom, &skip, a->cols, line);
	attroff(A_BOLD);
	put_lines(&y, bottom, &skip, a->cols,
		  r->code_omitted ? "(not in this listing: more is held than one answer carries; "
				    "decide the older calls first, or deny)"
				  : r->code);
	for (size_t k = 0; k < r->n_files; k++) {
		const struct ui_approval_file *f = &r->files[k];
		snprintf(line, sizeof line, "--- file %s (%llu bytes%s) ---", f->name,
			 (unsigned long long)f->size,
			 f->binary      ? ", binary: not shown"
			 : f->truncated ? ", cut: not all shown"
					: "");
		attron(A_BOLD);
		put_lines(&y, bottom, &skip, a->cols, line);
		attroff(A_BOLD);
		if (!f->binary)
			put_lines(&y, bottom, &skip, a->cols, f->text);
	}
}

const struct view_ops view_approvals = {
	.name = "approvals",
	.alias = "ap",
	.title = "Approvals",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
	.done = done,
};

const struct view_ops view_approval = {
	.name = "approval",
	.title = "Held call",
	.load = load,
	.request = request,
	.draw = draw_one,
	.done = done,
};
