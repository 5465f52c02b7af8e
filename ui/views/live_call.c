/* :live — the replay's diagram driven by a real call: the console (attached
 * to a daemon, or on its embedded engine) waits for the next call any
 * client makes on any session and lights the hops as the call goes out to
 * the sandbox and its answer comes back, with what really happened: the
 * session, its tier and sandbox, who opened it, the code, the output as it
 * arrives and the answer's exit. A class sees the call it just typed.
 *
 * It uses the operator API's existing streams through the source: the
 * sessions list (a session whose call count grew, or with a call in flight,
 * has the next call) and then FollowCell's long poll on that session (the
 * source's follow), as the cells pane does. The caller's side — model,
 * agent, executeCode, manager — is not seen from the daemon: those boxes
 * are dashed and say so; the daemon and the sandbox light from what the
 * daemon answered. A call the daemon refused before it ran (the session's
 * refusedCalls grew) stops at the daemon with its refusal. `n` waits for
 * the next call once one was followed.
 * Like presenter mode it has the whole screen: no header, no hints. */
#include "app.h"
#include "hop_diagram.h"
#include "ui_text.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASK_SESSIONS_MS 300u /* how often the sessions are asked while waiting */
#define FOLLOW_WAIT_MS 1000u
#define FOLLOW_AGAIN_MS 100u
#define MAX_SEEN 512
#define KEEP_BYTES 4096 /* output kept for the screen (the cursor goes on past it) */

/* REFUSED: a call the daemon refused before it ran (the session's refused
 * count grew): nothing reached the sandbox, the refusal went back. */
enum phase { WAITING, SEEN, RUNNING, ANSWERED, REFUSED };

struct seen {
	char fp[65];
	uint64_t calls;
	int64_t call_started_ms;
	uint64_t refused; /* ---- replay: refused calls ---- */
};

/* A follow in flight outlives the view: its answer then only frees it. */
struct ticket {
	struct view *v;
};

struct live {
	enum phase phase;
	bool based;                /* the sessions before the call were read */
	struct seen before[MAX_SEEN];
	size_t n_before;
	struct ui_session s;       /* the session of the call followed */
	uint64_t seq_after;        /* the call's sequence is past this */
	uint64_t seq;              /* the call's, once known */
	char code[4096], language[16];
	struct buf out, err;
	uint64_t out_at, err_at; /* the streams' cursor: what was seen, kept or not */
	int exit_code;
	bool timed_out, answered;
	uint64_t duration_us;
	struct ticket *asking;
	bool listing;
	uint64_t next_ms;
	char why[256];             /* a source that cannot follow says so */
};

static struct live *L(struct view *v)
{
	return v->priv;
}

static const struct seen *seen_of(const struct live *p, const char *fp)
{
	for (size_t i = 0; i < p->n_before; i++)
		if (!strcmp(p->before[i].fp, fp))
			return &p->before[i];
	return NULL;
}

static void remember(struct live *p, const struct ui_session *rows, size_t n)
{
	p->n_before = 0;
	for (size_t i = 0; i < n && p->n_before < MAX_SEEN; i++) {
		struct seen *e = &p->before[p->n_before++];
		snprintf(e->fp, sizeof e->fp, "%s", rows[i].fp);
		e->calls = rows[i].calls;
		e->call_started_ms = rows[i].call_started_ms;
		e->refused = rows[i].refused;
	}
	p->based = true;
}

static void ask_follow(struct app *a, struct view *v);

/* The sessions now against the ones before: a session with more calls, or
 * a call in flight it did not have, holds the next call. */
static void listed(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_done_loading(v))
		return;
	struct live *p = L(v);
	p->listing = false;
	if (err) {
		snprintf(p->why, sizeof p->why, "%s", err);
		return;
	}
	p->why[0] = '\0';
	if (p->phase != WAITING)
		return;
	if (!p->based) {
		remember(p, rows, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct seen *b = seen_of(p, rows[i].fp);
		uint64_t calls = b ? b->calls : 0;
		bool more = rows[i].calls > calls;
		bool flying = rows[i].call_started_ms && (!b || b->call_started_ms != rows[i].call_started_ms);
		if (!more && !flying && rows[i].refused > (b ? b->refused : 0)) {
			/* refused before it ran: no cell to follow, its refusal is the answer */
			p->s = rows[i];
			p->phase = REFUSED;
			app_flash(v->app, C_WARN, "the daemon refused the call: n waits for the next one");
			return;
		}
		if (!more && !flying)
			continue;
		p->s = rows[i];
		p->seq_after = calls;
		p->phase = SEEN;
		ask_follow(v->app, v);
		return;
	}
	remember(p, rows, n); /* sessions opened or ended meanwhile: the new "before" */
}

static void keep(struct buf *b, uint64_t *at, uint64_t offset, const char *data, size_t n)
{
	if (offset != *at || !n)
		return;
	*at += n;
	if (b->len + n > KEEP_BYTES)
		n = b->len < KEEP_BYTES ? KEEP_BYTES - b->len : 0;
	if (n)
		buf_append(b, data, n);
}

static void followed(void *arg, const struct ui_follow *f, const char *err)
{
	struct ticket *t = arg;
	struct view *v = t->v;
	free(t);
	if (!v)
		return;
	struct live *p = L(v);
	p->asking = NULL;
	p->next_ms = now_mono_ms() + FOLLOW_AGAIN_MS;
	if (err) {
		/* said on screen; asked again a second later, not at once */
		snprintf(p->why, sizeof p->why, "%s", err);
		p->next_ms = now_mono_ms() + 1000;
		return;
	}
	p->why[0] = '\0';
	if (!f->sequence || f->sequence <= p->seq_after)
		return; /* the call is not the session's latest yet: ask again */
	if (!p->seq) {
		p->seq = f->sequence;
		ui_text_safe(p->code, sizeof p->code, f->code, f->code_len, true);
		snprintf(p->language, sizeof p->language, "%s", f->language);
	}
	if (f->sequence != p->seq) {
		/* a later call overtook it: the one followed is over, unseen */
		p->phase = ANSWERED;
		return;
	}
	keep(&p->out, &p->out_at, f->out_offset, f->out, f->out_len);
	keep(&p->err, &p->err_at, f->err_offset, f->err, f->err_len);
	p->phase = RUNNING;
	if (f->done) {
		p->phase = ANSWERED;
		p->answered = f->answered;
		p->exit_code = f->exit_code;
		p->timed_out = f->timed_out;
		p->duration_us = f->duration_us;
		app_flash(v->app, C_INFO, "the call came back: n waits for the next one");
	}
}

static void ask_follow(struct app *a, struct view *v)
{
	struct live *p = L(v);
	struct ticket *t = xzalloc(sizeof *t);
	t->v = v;
	p->asking = t;
	a->src->ops->follow(a->src, p->s.fp, p->seq ? p->seq : p->seq_after, p->out_at, p->err_at,
			    FOLLOW_WAIT_MS, followed, t);
}

static void ask_sessions(struct app *a, struct view *v)
{
	struct live *p = L(v);
	p->listing = true;
	p->next_ms = now_mono_ms() + ASK_SESSIONS_MS;
	v->loading++;
	a->src->ops->sessions(a->src, listed, v);
}

static void load(struct app *a, struct view *v)
{
	if (v->priv)
		return; /* it moves on its tick */
	v->priv = xzalloc(sizeof(struct live));
	v->app = a;
	snprintf(v->sub, sizeof v->sub, "(the next call on any session)");
	if (!a->src->ops->has_engine) {
		snprintf(L(v)->why, sizeof L(v)->why,
			 "following a live call needs a daemon (bulkhead console --attach SOCK) or the "
			 "embedded engine; this console has neither");
		return;
	}
	ask_sessions(a, v);
}

static void tick(struct app *a, struct view *v, uint64_t now)
{
	struct live *p = L(v);
	if (!p || !a->src->ops->has_engine || now < p->next_ms)
		return;
	if (p->phase == WAITING && !p->listing)
		ask_sessions(a, v);
	else if ((p->phase == SEEN || p->phase == RUNNING) && !p->asking)
		ask_follow(a, v);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	struct live *p = L(v);
	if (r != REQ_LIVE_AGAIN || !p)
		return r;
	if (p->phase != ANSWERED && p->phase != REFUSED) {
		app_flash(a, C_INFO, p->phase == WAITING ? "already waiting for the next call"
							 : "a call is being followed: n after its answer");
		return REQ_NONE;
	}
	if (p->asking)
		p->asking->v = NULL; /* its answer is for the call before: dropped */
	buf_free(&p->out);
	buf_free(&p->err);
	memset(p, 0, sizeof *p);
	if (a->src->ops->has_engine)
		ask_sessions(a, v);
	return REQ_NONE;
}

static void done(struct view *v)
{
	struct live *p = L(v);
	if (!p)
		return;
	if (p->asking)
		p->asking->v = NULL;
	buf_free(&p->out);
	buf_free(&p->err);
	free(p);
}

/* ---- the screen ---- */

static void lit_of(const struct live *p, struct hop_view *hv)
{
	memset(hv, 0, sizeof *hv);
	hv->stopped = SCENARIO_HOP_NONE;
	for (int h = SCENARIO_HOP_MODEL; h <= SCENARIO_HOP_MANAGER; h++) {
		hv->unseen[h] = true;
		snprintf(hv->mark[h], sizeof hv->mark[h], "not seen");
	}
	if (p->phase == WAITING) {
		snprintf(hv->mark[SCENARIO_HOP_DAEMON], sizeof hv->mark[0], "waiting");
		return;
	}
	bool done = p->phase == ANSWERED;
	hv->lit[SCENARIO_HOP_DAEMON] = true;
	if (p->phase == REFUSED) { /* stopped at the daemon, the refusal back to its caller */
		hv->out[SCENARIO_HOP_MANAGER] = hv->back[SCENARIO_HOP_MANAGER] = true;
		hv->stopped = SCENARIO_HOP_DAEMON;
		snprintf(hv->mark[SCENARIO_HOP_DAEMON], sizeof hv->mark[0], "STOPPED HERE");
		return;
	}
	hv->out[SCENARIO_HOP_MANAGER] = true; /* the call came in from its client */
	snprintf(hv->mark[SCENARIO_HOP_DAEMON], sizeof hv->mark[0], "call %llu",
		 (unsigned long long)(p->seq ? p->seq : p->seq_after + 1));
	if (p->phase >= RUNNING) {
		hv->lit[SCENARIO_HOP_SANDBOX] = true;
		hv->out[SCENARIO_HOP_DAEMON] = true;
		snprintf(hv->mark[SCENARIO_HOP_SANDBOX], sizeof hv->mark[0], "running");
	}
	if (done) {
		hv->back[SCENARIO_HOP_DAEMON] = hv->back[SCENARIO_HOP_MANAGER] = true;
		if (p->answered)
			snprintf(hv->mark[SCENARIO_HOP_SANDBOX], sizeof hv->mark[0], "exit %d", p->exit_code);
		else
			snprintf(hv->mark[SCENARIO_HOP_SANDBOX], sizeof hv->mark[0], "unanswered");
	}
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct live *p = L(v);
	int C = a->cols;
	if (!p)
		return;
	static const char *const said[] = {
		"waiting for the next call on any session, from any client",
		"a call arrived at the daemon: finding it in its session",
		"the call runs in the sandbox: its output as it arrives",
		"the answer went back to the caller",
		"the daemon refused the call before it ran: the refusal went back to the caller",
	};
	attron(A_BOLD);
	draw_clipped(top, 0, C, said[p->phase]);
	attroff(A_BOLD);
	/* Projected like presenter mode: no header or hints, so its keys here. */
	attron(theme_attr(C_DIM));
	draw_clipped(bottom, 0, C,
		     p->phase == ANSWERED || p->phase == REFUSED ? "n: wait for the next call   esc: back"
								 : "esc: back");
	attroff(theme_attr(C_DIM));
	bottom--;
	int dh = hop_diagram_rows(bottom - top - 8);
	struct hop_view hv;
	lit_of(p, &hv);
	hop_diagram_draw(a, &hv, top + 2, dh);
	int y = top + 2 + dh;
	attron(theme_attr(C_DIM));
	draw_clipped(y++, 0, C, "dashed: the caller's side, which the daemon does not see");
	attroff(theme_attr(C_DIM));
	y++;
	if (*p->why) {
		attron(theme_attr(C_BAD));
		hop_text(y, 0, C, 2, 1, theme_attr(C_BAD), p->why);
		attroff(theme_attr(C_BAD));
		y += 2;
	}
	if (p->phase == WAITING || y > bottom)
		return;
	char line[1024];
	snprintf(line, sizeof line, "session %.12s  tier %s  opened by %s%s%s  sandbox %s", p->s.fp,
		 p->s.tier, p->s.principal, *p->s.owner ? "  owner " : "", p->s.owner, p->s.sandbox);
	draw_clipped(y++, 0, C, line);
	if (p->phase == REFUSED) { /* nothing ran: the refusal is all there is */
		attron(A_BOLD | theme_attr(C_BAD));
		draw_clipped(y++, 0, C, "refused: nothing ran, no record was written");
		attroff(A_BOLD | theme_attr(C_BAD));
		/* the refusal can quote the request (a file's path): shown safe */
		char why[sizeof p->s.last_refusal * 4 + 1];
		ui_text_safe(why, sizeof why, p->s.last_refusal, strlen(p->s.last_refusal), true);
		hop_text(y, 0, C, bottom - y + 1, 1, theme_attr(C_BAD), why);
		return;
	}
	if (p->answered || p->phase == ANSWERED) {
		char dur[32] = "";
		if (p->duration_us)
			snprintf(dur, sizeof dur, " in %.1f ms", (double)p->duration_us / 1000.0);
		snprintf(line, sizeof line, "answer: none checked (the call ended unanswered)");
		if (p->answered)
			snprintf(line, sizeof line, "answer: exit %d%s%s", p->exit_code,
				 p->timed_out ? ", timed out" : "", dur);
		attron(A_BOLD | theme_attr(p->answered && !p->exit_code ? C_GOOD : C_WARN));
		draw_clipped(y++, 0, C, line);
		attroff(A_BOLD | theme_attr(p->answered && !p->exit_code ? C_GOOD : C_WARN));
	}
	y++;
	if (y > bottom)
		return;
	int lw = C * 2 / 5, rx = lw + 2;
	attron(A_BOLD);
	snprintf(line, sizeof line, "the code (%s)", *p->language ? p->language : "?");
	draw_clipped(y, 0, lw, line);
	draw_clipped(y, rx, C - rx, "stdout / stderr");
	attroff(A_BOLD);
	hop_text(y + 1, 0, lw, bottom - y, 1, A_NORMAL, p->code);
	char out[KEEP_BYTES * 4 + 1], err[KEEP_BYTES * 4 + 1];
	char text[sizeof out + sizeof err + 16];
	ui_text_safe(out, sizeof out, p->out.data, p->out.len, true);
	ui_text_safe(err, sizeof err, p->err.data, p->err.len, true);
	snprintf(text, sizeof text, "%s%s%s", out, *err ? "\nstderr:\n" : "", err);
	hop_text(y + 1, rx, C - rx, bottom - y, 1, A_NORMAL, text);
}

const struct view_ops view_live = {
	.name = "live",
	.title = "Live call",
	.load = load,
	.request = request,
	.draw = draw,
	.done = done,
	.tick = tick,
	.fullscreen = true, /* ---- replay: projected, no header ---- */
};
