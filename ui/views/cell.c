/* One cell's pane (enter in the cells view): its code, stdout and stderr in
 * full, scrolling (j/k, ctrl-f/ctrl-b or PgDn/PgUp, g/G), `w` wraps long
 * lines, and truncation is said where it happened (the cell's cap, or the
 * store's). While the cell runs the pane follows its output as it arrives,
 * like `k9s logs -f`: autoscroll to the end, `s` toggles it (k9s's key).
 * Following is the source's `follow`: the embedded engine answers at once
 * (asked again every 100 ms), a daemon through FollowCell's long poll; a
 * store has no running cell and shows the stored one. Bytes a terminal
 * would act on are shown in caret notation (cell_text.c). */
#include "app.h"
#include "cell_text.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A daemon's long poll: at most this long per ask. */
#define FOLLOW_WAIT_MS 1000u
/* The embedded engine answers at once: ask again after this. */
#define FOLLOW_AGAIN_MS 100u

/* A follow in flight outlives a closed pane: the answer then only frees it. */
struct ticket {
	struct view *v; /* NULL once the pane is gone */
	bool counted;   /* the pane's first ask: a load the view waits for */
};

struct pane {
	char fp[65];
	uint64_t seq;
	bool have;       /* something to show: the stored row or a follow's answer */
	bool following;  /* the cell runs (or may): keep asking */
	bool done, answered;
	struct buf code, out, err;
	char language[16], flags[200], unanswered[32], record[65];
	int exit_code;
	bool timed_out, out_cut, err_cut;
	int64_t started_ms, duration_us;
	struct ticket *asking;
	uint64_t next_ask_ms;
	bool autoscroll, wrap;
	size_t top;   /* first line shown */
	size_t lines; /* at the last draw */
	int height;   /* of the text area at the last draw */
	bool stored_asked;
};

static void set_buf(struct buf *b, const char *p, size_t n)
{
	b->len = 0;
	if (n)
		buf_append(b, p, n);
}

static void stored_loaded(void *arg, const struct ui_cell *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct pane *p = v->priv;
	for (size_t i = 0; i < n; i++) {
		const struct ui_cell *c = &rows[i];
		if (c->sequence != p->seq)
			continue;
		/* Stored: the cell ended; its record's columns are the truth. */
		p->have = p->done = true;
		p->following = false;
		p->answered = !*c->unanswered;
		set_buf(&p->code, c->code, c->code_len);
		set_buf(&p->out, c->out, c->out_len);
		set_buf(&p->err, c->err, c->err_len);
		snprintf(p->language, sizeof p->language, "%s", c->language);
		snprintf(p->flags, sizeof p->flags, "%s", c->flags);
		snprintf(p->unanswered, sizeof p->unanswered, "%s", c->unanswered);
		snprintf(p->record, sizeof p->record, "%s", c->record);
		p->exit_code = c->exit_code;
		p->duration_us = c->duration_us;
		p->started_ms = c->started_ms;
		p->out_cut = strstr(c->flags, "stdout_truncated") != NULL;
		p->err_cut = strstr(c->flags, "stderr_truncated") != NULL;
	}
}

static void ask_stored(struct app *a, struct view *v)
{
	struct pane *p = v->priv;
	p->stored_asked = true;
	v->loading++;
	a->src->ops->cells(a->src, p->fp, p->seq + 1, 1, stored_loaded, v);
}

/* Appends a stream's chunk where it belongs: at the end of what is held. */
static void take(struct buf *b, uint64_t offset, const char *data, size_t n)
{
	if (offset == b->len && n)
		buf_append(b, data, n);
}

static void followed(void *arg, const struct ui_follow *f, const char *err)
{
	struct ticket *t = arg;
	struct view *v = t->v;
	bool counted = t->counted;
	free(t);
	if (!v)
		return; /* the pane closed meanwhile */
	if (counted && !view_done_loading(v))
		return;
	struct pane *p = v->priv;
	p->asking = NULL;
	struct app *a = v->app;
	if (err) {
		/* A store, or a daemon that failed: what is stored is shown. */
		p->following = false;
		if (!p->stored_asked)
			ask_stored(a, v);
		return;
	}
	if (f->sequence != p->seq) {
		/* Another cell is the latest: this one is over, or never was
		 * the running one; the store has it. */
		if (f->sequence > p->seq || !f->sequence) {
			p->following = false;
			if (!p->stored_asked || p->have)
				ask_stored(a, v);
		}
		return;
	}
	if (!p->have) {
		set_buf(&p->code, f->code, f->code_len);
		snprintf(p->language, sizeof p->language, "%s", f->language);
		p->started_ms = f->started_ms;
		p->have = true;
	}
	take(&p->out, f->out_offset, f->out, f->out_len);
	take(&p->err, f->err_offset, f->err, f->err_len);
	if (f->done) {
		p->following = false;
		p->done = true;
		p->answered = f->answered;
		p->exit_code = f->exit_code;
		p->timed_out = f->timed_out;
		p->out_cut = f->stdout_truncated;
		p->err_cut = f->stderr_truncated;
		p->duration_us = (int64_t)f->duration_us;
		snprintf(p->record, sizeof p->record, "%s", f->record);
		/* The store's copy says what it kept (its own cut too). */
		ask_stored(a, v);
	}
}

static void ask_follow(struct app *a, struct view *v, bool first)
{
	struct pane *p = v->priv;
	struct ticket *t = calloc(1, sizeof *t);
	if (!t)
		abort();
	t->v = v;
	t->counted = first;
	if (first)
		v->loading++;
	p->asking = t;
	p->next_ask_ms = now_mono_ms() + FOLLOW_AGAIN_MS;
	a->src->ops->follow(a->src, p->fp, p->seq, p->out.len, p->err.len, FOLLOW_WAIT_MS, followed,
			    t);
}

static void load(struct app *a, struct view *v)
{
	if (v->priv)
		return; /* it moves on its tick, not on the refresh */
	struct pane *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	v->priv = p;
	v->app = a;
	p->autoscroll = true;
	const char *colon = strchr(v->arg, ':');
	snprintf(p->fp, sizeof p->fp, "%.*s", colon ? (int)(colon - v->arg) : 0, v->arg);
	p->seq = colon ? strtoull(colon + 1, NULL, 10) : 0;
	snprintf(v->sub, sizeof v->sub, "(cell #%llu of %.12s)", (unsigned long long)p->seq, p->fp);
	if (a->src->ops->has_engine) {
		p->following = true;
		ask_follow(a, v, true);
	} else {
		ask_stored(a, v);
	}
}

static void tick(struct app *a, struct view *v, uint64_t now_ms)
{
	struct pane *p = v->priv;
	if (p && p->following && !p->asking && now_ms >= p->next_ask_ms)
		ask_follow(a, v, false);
}

static size_t page(const struct pane *p)
{
	return p->height > 2 ? (size_t)p->height - 1 : 1;
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	(void)a;
	struct pane *p = v->priv;
	if (!p)
		return r;
	size_t last = p->lines > (size_t)p->height ? p->lines - (size_t)p->height : 0;
	switch (r) {
	case REQ_DOWN:
		p->top = p->top < last ? p->top + 1 : last;
		break;
	case REQ_UP:
		p->autoscroll = false;
		p->top = p->top ? p->top - 1 : 0;
		break;
	case REQ_CELL_PAGE_DOWN:
		p->top = p->top + page(p) < last ? p->top + page(p) : last;
		break;
	case REQ_CELL_PAGE_UP:
		p->autoscroll = false;
		p->top = p->top > page(p) ? p->top - page(p) : 0;
		break;
	case REQ_TOP:
		p->autoscroll = false;
		p->top = 0;
		break;
	case REQ_BOTTOM:
		p->top = last;
		break;
	case REQ_CELL_WRAP:
		p->wrap = !p->wrap;
		break;
	case REQ_CELL_AUTOSCROLL:
		p->autoscroll = !p->autoscroll;
		break;
	default:
		return r;
	}
	return REQ_NONE;
}

/* The pane's text as lines, drawn from line `skip` at rows top..bottom. */
struct painter {
	size_t n, skip;
	int y, bottom, cols;
	int attr;
};

static void paint(void *arg, const char *line)
{
	struct painter *pt = arg;
	if (pt->n++ < pt->skip || pt->y >= pt->bottom)
		return;
	attron(pt->attr);
	mvaddnstr(pt->y, 1, line, -1);
	attroff(pt->attr);
	pt->y++;
}

static void heading(struct painter *pt, const char *text)
{
	int attr = pt->attr;
	pt->attr = theme_attr(C_TITLE) | A_BOLD;
	paint(pt, text);
	pt->attr = attr;
}

static size_t section(struct painter *pt, const char *name, const struct buf *b, bool cut,
		      const char *stored_flag, const char *flags, bool wrap)
{
	size_t before = pt->n;
	char head[160];
	snprintf(head, sizeof head, "-- %s (%zu bytes) --", name, b->len);
	heading(pt, head);
	pt->attr = 0;
	if (b->len)
		cell_text_lines((const char *)b->data, b->len, pt->cols - 2, wrap, paint, pt);
	else
		paint(pt, "(none)");
	pt->attr = theme_attr(C_WARN) | A_BOLD;
	if (cut)
		paint(pt, "[truncated: the cell wrote more than its output cap]");
	if (stored_flag && strstr(flags, stored_flag))
		paint(pt, "[stored truncated: the store keeps 256 KiB of each stream]");
	pt->attr = 0;
	return pt->n - before;
}

static void status_line(const struct pane *p, char *out, size_t n)
{
	char dur[32] = "";
	if (p->following || !p->done) {
		fmt_age(dur, sizeof dur, p->started_ms, (int64_t)now_real_ms());
		snprintf(out, n, "#%llu %s  running %s  %s  wrap %s", (unsigned long long)p->seq,
			 p->language, dur, p->autoscroll ? "autoscroll on" : "autoscroll off",
			 p->wrap ? "on" : "off");
		return;
	}
	cell_text_duration(dur, sizeof dur, p->duration_us);
	if (!p->answered)
		snprintf(out, n, "#%llu %s  no answer (%s)  wrap %s", (unsigned long long)p->seq,
			 p->language, *p->unanswered ? p->unanswered : "the sandbox ended",
			 p->wrap ? "on" : "off");
	else
		snprintf(out, n, "#%llu %s  exit %d%s  %s  %s  wrap %s", (unsigned long long)p->seq,
			 p->language, p->exit_code, p->timed_out ? " (timed out)" : "", dur,
			 *p->flags ? p->flags : "", p->wrap ? "on" : "off");
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct pane *p = v->priv;
	if (!p || !p->have) {
		mvprintw(top + 1, 2, "%s",
			 p && (p->following || v->loading > 0) ? "loading..."
			 : *v->stale			     ? "not loaded (the title says why)"
							     : "no such cell");
		return;
	}
	char status[sizeof p->flags + 128]; /* the flags whole, and the line's other fields */
	status_line(p, status, sizeof status);
	attron(theme_attr(p->following ? C_INFO : p->exit_code ? C_WARN : C_GOOD) | A_BOLD);
	mvaddnstr(top, 1, status, a->cols - 2);
	attroff(theme_attr(p->following ? C_INFO : p->exit_code ? C_WARN : C_GOOD) | A_BOLD);
	p->height = bottom - top - 1;
	/* Count first (nothing drawn), then draw from the line in view. */
	for (int pass = 0; pass < 2; pass++) {
		struct painter pt = {.skip = pass ? p->top : SIZE_MAX, .y = top + 1,
				     .bottom = pass ? bottom : top + 1, .cols = a->cols};
		section(&pt, "code", &p->code, false, NULL, "", p->wrap);
		section(&pt, "stdout", &p->out, p->out_cut && !strstr(p->flags, "stored_stdout"),
			"stored_stdout_truncated", p->flags, p->wrap);
		section(&pt, "stderr", &p->err, p->err_cut && !strstr(p->flags, "stored_stderr"),
			"stored_stderr_truncated", p->flags, p->wrap);
		p->lines = pt.n;
		if (pass == 0 && p->autoscroll)
			p->top = p->lines > (size_t)p->height ? p->lines - (size_t)p->height : 0;
	}
}

static void done(struct view *v)
{
	struct pane *p = v->priv;
	if (!p)
		return;
	if (p->asking)
		p->asking->v = NULL; /* its answer finds the pane gone */
	buf_free(&p->code);
	buf_free(&p->out);
	buf_free(&p->err);
	free(p);
}

const struct view_ops view_cell = {
	.name = "cell",
	.title = "Cell",
	.load = load,
	.request = request,
	.draw = draw,
	.tick = tick,
	.done = done,
};
