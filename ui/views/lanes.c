/* Lanes: a scenario's overlapping calls on one time axis, a lane per call —
 * running, waiting its turn, refused — from the times the recorder wrote
 * (each call's sent_ms and answered_ms). The three calls of
 * concurrent_calls read at a glance: the first runs, the second waits for
 * it and then runs, the third is refused at once.
 *
 * Waiting is the daemon's rule drawn, not a guess: a session runs one call
 * at a time (docs/api.md), so a call of the same turn sent while an earlier
 * one was still out waited until that one's answer, and ran from then. A
 * refused call ran nothing: its lane is the time to its refusal.
 *
 * l and h move a time cursor from one moment (a call sent, started,
 * answered) to the next, and say what each call was doing then; space plays
 * it, + and - change the pace. Opened with "STEP.HOP:PATH": the lanes of the
 * calls overlapping that step (or the scenario's first overlapping ones). */
#include "app.h"
#include "hop_diagram.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANES 16
#define MAX_MOMENTS (3 * MAX_LANES)
static const unsigned pace_ms[] = {3000, 2000, 1200, 800, 400};
#define PACE_COUNT (sizeof pace_ms / sizeof pace_ms[0])

struct lane {
	size_t step;          /* its step in the scenario */
	long long sent, start, end; /* start: when it ran (sent + its wait) */
	int behind;           /* the lane it waited for, or -1 */
	enum scenario_outcome outcome;
};

struct lanes {
	struct scenario *s;
	char path[4096], err[700];
	struct lane l[MAX_LANES];
	size_t n;
	long long moment[MAX_MOMENTS];
	size_t n_moments, at;
	struct pace pace;
};

static bool timed(const struct scenario_step *st)
{
	return st->kind == SCENARIO_CALL && st->sent_ms >= 0;
}

static long long end_of(const struct scenario_step *st)
{
	return st->answered_ms >= 0 ? st->answered_ms : st->t_ms >= st->sent_ms ? st->t_ms : st->sent_ms;
}

/* The run of calls that overlap one another (each sent before the ones
 * before it were all answered): the one holding step `want` when it has
 * two calls or more, else the scenario's first such run, else the one
 * holding `want`, else the first call. */
static void pick_lanes(struct lanes *p, size_t want)
{
	const struct scenario *s = p->s;
	size_t best_from = SIZE_MAX, best_to = 0, rank = 0; /* 3: holds want and overlaps */
	for (size_t i = 0; i < s->n_steps;) {
		if (!timed(&s->steps[i])) {
			i++;
			continue;
		}
		size_t from = i;
		long long reach = end_of(&s->steps[i++]);
		while (i < s->n_steps && timed(&s->steps[i]) && s->steps[i].sent_ms < reach) {
			long long e = end_of(&s->steps[i++]);
			reach = e > reach ? e : reach;
		}
		bool holds = want >= from && want < i, several = i - from > 1;
		size_t r = holds && several ? 4 : several ? 3 : holds ? 2 : 1;
		if (r > rank) {
			rank = r;
			best_from = from;
			best_to = i;
		}
	}
	p->n = 0;
	for (size_t i = best_from; best_from != SIZE_MAX && i < best_to && p->n < MAX_LANES; i++) {
		const struct scenario_step *st = &s->steps[i];
		if (!timed(st))
			continue;
		struct lane *ln = &p->l[p->n];
		*ln = (struct lane){.step = i, .sent = st->sent_ms, .start = st->sent_ms, .end = end_of(st),
				    .behind = -1, .outcome = st->outcome};
		for (size_t k = 0; k < p->n && st->outcome != SCENARIO_REFUSED; k++) {
			const struct lane *e = &p->l[k];
			if (e->outcome != SCENARIO_REFUSED && s->steps[e->step].turn == st->turn &&
			    e->end > ln->start && e->sent <= ln->sent) {
				ln->start = e->end < ln->end ? e->end : ln->end;
				ln->behind = (int)k;
			}
		}
		p->n++;
	}
	/* The moments the cursor stops at, in order, each once. */
	p->n_moments = 0;
	for (size_t i = 0; i < p->n; i++) {
		long long t[3] = {p->l[i].sent, p->l[i].start, p->l[i].end};
		for (size_t k = 0; k < 3; k++) {
			size_t j = 0;
			while (j < p->n_moments && p->moment[j] < t[k])
				j++;
			if (j < p->n_moments && p->moment[j] == t[k])
				continue;
			memmove(&p->moment[j + 1], &p->moment[j], (p->n_moments - j) * sizeof p->moment[0]);
			p->moment[j] = t[k];
			p->n_moments++;
		}
	}
}

static void load(struct app *a, struct view *v)
{
	(void)a;
	if (v->priv)
		return;
	struct lanes *p = xzalloc(sizeof *p);
	v->priv = p;
	p->pace = (struct pace){.ms = pace_ms, .n = PACE_COUNT, .at = 2};
	/* "STEP.HOP:PATH": the lanes of STEP's calls */
	size_t want = strtoul(v->arg, NULL, 10);
	const char *colon = strchr(v->arg, ':');
	snprintf(p->path, sizeof p->path, "%s", colon ? colon + 1 : v->arg);
	if (scenario_load(p->path, &p->s, p->err, sizeof p->err) < 0)
		return;
	pick_lanes(p, want);
	if (p->n)
		snprintf(v->sub, sizeof v->sub, "(%.60s: steps %zu-%zu)", p->s->name, p->l[0].step + 1,
			 p->l[p->n - 1].step + 1);
	else
		snprintf(v->sub, sizeof v->sub, "(%.60s)", p->s->name);
}

static void done(struct view *v)
{
	struct lanes *p = v->priv;
	if (p)
		scenario_free(p->s);
	free(p);
}

static void move_to(struct lanes *p, size_t at)
{
	p->at = at;
	pace_rearm(&p->pace);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	struct lanes *p = v->priv;
	if (!p || !p->n_moments)
		return r;
	switch (r) {
	case REQ_LANES_NEXT:
		if (p->at + 1 < p->n_moments)
			move_to(p, p->at + 1);
		else
			app_flash(a, C_INFO, "the last moment: every call is answered");
		return REQ_NONE;
	case REQ_LANES_BACK:
		if (p->at > 0)
			move_to(p, p->at - 1);
		return REQ_NONE;
	case REQ_LANES_PLAY:
		p->pace.playing = !p->pace.playing;
		move_to(p, p->pace.playing && p->at + 1 >= p->n_moments ? 0 : p->at);
		return REQ_NONE;
	case REQ_LANES_FASTER:
	case REQ_LANES_SLOWER:
		pace_change(a, &p->pace, r == REQ_LANES_FASTER ? 1 : -1);
		return REQ_NONE;
	default:
		return r;
	}
}

static void tick(struct app *a, struct view *v, uint64_t now)
{
	struct lanes *p = v->priv;
	if (!p || !pace_due(&p->pace, now))
		return;
	if (p->at + 1 < p->n_moments)
		move_to(p, p->at + 1);
	if (p->at + 1 >= p->n_moments) {
		p->pace.playing = false;
		app_flash(a, C_INFO, "played to the last answer: space plays it again");
	}
}

/* ---- the screen ---- */

enum seg { SEG_NONE, SEG_WAIT, SEG_RUN, SEG_REFUSED };

static enum seg seg_at(const struct lane *ln, long long t)
{
	if (t < ln->sent || t > ln->end)
		return SEG_NONE;
	if (ln->outcome == SCENARIO_REFUSED)
		return SEG_REFUSED;
	return t < ln->start ? SEG_WAIT : SEG_RUN;
}

static const char *doing(const struct lane *ln, long long t)
{
	if (t < ln->sent)
		return "not sent yet";
	if (t >= ln->end)
		return ln->outcome == SCENARIO_REFUSED ? "refused" : "answered";
	switch (seg_at(ln, t)) {
	case SEG_WAIT:
		return "waiting";
	case SEG_REFUSED:
		return "being refused";
	default:
		return "running";
	}
}

/* The call's code on one line: its first line. */
static void first_line(const char *code, char *buf, size_t n)
{
	snprintf(buf, n, "%.*s", (int)strcspn(code, "\n"), code);
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct lanes *p = v->priv;
	int C = a->cols;
	if (!p || !p->s) {
		attron(theme_attr(C_BAD) | A_BOLD);
		mvaddstr(top + 1, 0, "cannot draw this scenario's lanes:");
		attroff(theme_attr(C_BAD) | A_BOLD);
		hop_text(top + 2, 2, C - 4, bottom - top - 2, 1, theme_attr(C_BAD), p ? p->err : "loading...");
		return;
	}
	if (!p->n) {
		hop_text(top + 1, 2, C - 4, bottom - top - 1, 1, theme_attr(C_DIM),
			 "No call of this scenario carries its times (sent_ms, answered_ms): a recording "
			 "older than the lanes. Record it again (bulkhead record "
			 "data/scenarios/scripts/NAME.json) to draw them.");
		return;
	}
	const struct scenario *s = p->s;
	long long t0 = p->moment[0], t1 = p->moment[p->n_moments - 1];
	long long span = t1 > t0 ? t1 - t0 : 1;
	int lw = C >= 120 ? 34 : 22; /* the lane's name */
	int ax = lw + 1, aw = C - ax - 1;
	if (aw < 10)
		aw = 10;
	long long now = p->moment[p->at];
	/* the column whose span holds now, as the lanes' columns are cut */
	int cursor = ax + (int)((now - t0) * aw / span);
	if (cursor > ax + aw - 1)
		cursor = ax + aw - 1;
	int y = top;
	hop_text(y, 0, C, 1, 1, A_BOLD, s->title);
	y += 2;
	/* the axis: its start, middle and end, since the first call was sent */
	attron(theme_attr(C_DIM));
	for (int x = 0; x < aw; x++)
		mvaddstr(y, ax + x, a->utf8 ? "─" : "-");
	char lab[32];
	for (int k = 0; k <= 2; k++) {
		long long t = span * k / 2;
		snprintf(lab, sizeof lab, "%s%lld ms", k ? "+" : "", t);
		int x = ax + (aw - 1) * k / 2 - (k == 2 ? (int)strlen(lab) - 1 : k == 1 ? (int)strlen(lab) / 2 : 0);
		mvaddstr(y - 1, x, lab);
	}
	attroff(theme_attr(C_DIM));
	y++;
	for (size_t i = 0; i < p->n && y <= bottom - 6; i++, y += 2) {
		const struct lane *ln = &p->l[i];
		const struct scenario_step *st = &s->steps[ln->step];
		char name[256], code[200];
		first_line(st->code, code, sizeof code);
		snprintf(name, sizeof name, "call %zu: %s", i + 1, code);
		draw_clipped(y, 0, lw, name);
		for (int x = 0; x < aw; x++) {
			long long from = t0 + span * x / aw, to = t0 + span * (x + 1) / aw;
			/* a column shows what the lane did in it; a short refusal
			 * still takes one */
			enum seg sg = seg_at(ln, from);
			if (sg == SEG_NONE && ln->sent >= from && ln->sent < to)
				sg = seg_at(ln, ln->sent);
			if (sg == SEG_NONE && x == aw - 1 && ln->end == t1)
				sg = seg_at(ln, t1);
			const char *g = NULL;
			int attr = A_NORMAL;
			if (sg == SEG_RUN) {
				g = a->utf8 ? "█" : "#";
				attr = theme_attr(ln->outcome == SCENARIO_MAY_HAVE_RUN ? C_WARN : C_GOOD);
			} else if (sg == SEG_WAIT) {
				g = a->utf8 ? "░" : "~";
				attr = theme_attr(C_WARN);
			} else if (sg == SEG_REFUSED) {
				g = a->utf8 ? "✗" : "x";
				attr = theme_attr(C_BAD) | A_BOLD;
			}
			if (g) {
				attron(attr);
				mvaddstr(y, ax + x, g);
				attroff(attr);
			}
		}
		/* what it was doing at the cursor, and the cursor itself */
		char what[300];
		snprintf(what, sizeof what, "  %s", doing(ln, now));
		attron(theme_attr(C_DIM));
		draw_clipped(y + 1, 0, lw, what);
		attroff(theme_attr(C_DIM));
	}
	attron(A_BOLD);
	for (int r = top + 3; r < y; r++)
		if (r % 2 == (top + 4) % 2)
			mvaddstr(r, cursor, a->utf8 ? "┊" : ":");
	attroff(A_BOLD);
	/* the legend and the moment in words */
	attron(theme_attr(C_DIM));
	char legend[200];
	snprintf(legend, sizeof legend, "%s running   %s waiting its turn   %s refused   %s now (l/h, space plays)",
		 a->utf8 ? "█" : "#", a->utf8 ? "░" : "~", a->utf8 ? "✗" : "x", a->utf8 ? "┊" : ":");
	draw_clipped(y, 0, C, legend);
	attroff(theme_attr(C_DIM));
	y += 2;
	char line[1024];
	snprintf(line, sizeof line, "at +%lld ms (moment %zu/%zu):", now - t0, p->at + 1, p->n_moments);
	attron(A_BOLD);
	draw_clipped(y++, 0, C, line);
	attroff(A_BOLD);
	for (size_t i = 0; i < p->n && y <= bottom; i++) {
		const struct lane *ln = &p->l[i];
		const struct scenario_step *st = &s->steps[ln->step];
		char tail[600];
		if (ln->outcome == SCENARIO_REFUSED)
			snprintf(tail, sizeof tail, "refused %lld ms after it was sent: %s", ln->end - ln->sent,
				 st->error ? st->error : "");
		else if (ln->behind >= 0)
			snprintf(tail, sizeof tail, "waited %lld ms for call %d, ran %lld ms%s",
				 ln->start - ln->sent, ln->behind + 1, ln->end - ln->start,
				 st->outcome == SCENARIO_ANSWERED ? "" : ", may have run");
		else
			snprintf(tail, sizeof tail, "ran %lld ms%s", ln->end - ln->start,
				 st->outcome == SCENARIO_ANSWERED ? "" : ", may have run");
		const char *exit = scenario_answer_get(st, "exitCode");
		snprintf(line, sizeof line, "call %zu (step %zu): sent at +%lld ms, %s%s%s", i + 1, ln->step + 1,
			 ln->sent - t0, tail, exit ? ", exit " : "", exit ? exit : "");
		y += hop_text(y, 2, C - 2, bottom - y + 1 < 2 ? bottom - y + 1 : 2, 1, A_NORMAL, line);
	}
}

const struct view_ops view_lanes = {
	.name = "lanes",
	.title = "Lanes",
	.load = load,
	.request = request,
	.draw = draw,
	.done = done,
	.tick = tick,
	.sourceless = true,
};
