/* Presenter mode: the replay as a class sees it on a projector. No header,
 * hints or title: the scenario's title, the step as a progress bar with its
 * recorded time offset, the hops as boxes as large as the screen allows
 * (hop_diagram.c), the narration in a large block and the call and its
 * answer under it. Play moves on by itself at a speed + and - change, and
 * pauses at a STOPPED HERE so the teacher can say why; a step's number then
 * g jumps to it; q or esc goes back to the player.
 *
 * Like the player it draws only what the scenario file says and runs on no
 * source at all. Opened with "STEP.HOP:PATH" (where the player was, and
 * its file). */
#include "hop_diagram.h"

#include <cjson/cJSON.h>

#include <curses.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The waits between steps that + and - choose from, slowest first. */
static const unsigned pace_ms[] = {8000, 5000, 3000, 2000, 1500, 1000, 500};
#define PACE_COUNT (sizeof pace_ms / sizeof pace_ms[0])
#define PACE_DEFAULT 3 /* 2 s: time to read a hop's narration aloud */

struct presenter {
	struct scenario *s;
	char path[4096];
	char err[700];
	size_t cur;
	size_t upto; /* the step's visits done, 1 .. hop_positions (the last: the whole step) */
	struct pace pace;
	char digits[8]; /* a step's number being typed, before its g */
};

static struct presenter *P(const struct view *v)
{
	return v->priv;
}

/* "STEP.HOP:PATH" (or "STEP:PATH") -> the step, its hop and the path. */
static size_t split_arg(const char *arg, size_t *hop, char *path, size_t n)
{
	char *end = NULL;
	unsigned long step = strtoul(arg, &end, 10);
	*hop = 0;
	if (end && *end == '.')
		*hop = strtoul(end + 1, &end, 10);
	if (end && *end == ':') {
		snprintf(path, n, "%s", end + 1);
		return step;
	}
	snprintf(path, n, "%s", arg);
	return 0;
}

static void load(struct app *a, struct view *v)
{
	(void)a;
	if (v->priv)
		return; /* a recording does not change under a replay */
	struct presenter *p = xzalloc(sizeof *p);
	v->priv = p;
	p->pace = (struct pace){.ms = pace_ms, .n = PACE_COUNT, .at = PACE_DEFAULT};
	size_t hop;
	p->cur = split_arg(v->arg, &hop, p->path, sizeof p->path);
	scenario_load(p->path, &p->s, p->err, sizeof p->err);
	if (p->s && p->cur >= p->s->n_steps)
		p->cur = 0;
	/* where the player was: at its hop, or the step whole */
	size_t n = p->s ? hop_positions(&p->s->steps[p->cur]) : 1;
	p->upto = hop && hop < n ? hop : n;
}

static void done(struct view *v)
{
	struct presenter *p = P(v);
	if (p)
		scenario_free(p->s);
	free(p);
}

/* To step `to`, at its visit `upto` (SIZE_MAX: the whole step). */
static void go(struct presenter *p, size_t to, size_t upto)
{
	size_t n = hop_positions(&p->s->steps[to]);
	p->cur = to;
	p->upto = upto < n ? upto : n;
	pace_rearm(&p->pace);
}

/* l: the next hop of the step's path, then the next step's first. */
static bool forward(struct presenter *p)
{
	if (p->upto < hop_positions(&p->s->steps[p->cur]))
		go(p, p->cur, p->upto + 1);
	else if (p->cur + 1 < p->s->n_steps)
		go(p, p->cur + 1, 1);
	else
		return false;
	return true;
}

static bool backward(struct presenter *p)
{
	if (p->upto > 1)
		go(p, p->cur, p->upto - 1);
	else if (p->cur > 0)
		go(p, p->cur - 1, SIZE_MAX);
	else
		return false;
	return true;
}

/* Where play pauses by itself: the call has just reached the hop that
 * refused it (or, with no path, a step that stopped). */
static bool at_stop(const struct presenter *p)
{
	const struct scenario_step *st = &p->s->steps[p->cur];
	if (st->stopped_at == SCENARIO_HOP_NONE)
		return false;
	if (!st->n_path)
		return true;
	const struct scenario_visit *vi = hop_visit(st, p->upto);
	return vi && vi->hop == st->stopped_at && vi->leg == SCENARIO_LEG_DOWN;
}

static bool at_end(const struct presenter *p)
{
	return p->cur + 1 >= p->s->n_steps && p->upto >= hop_positions(&p->s->steps[p->cur]);
}

/* q or esc: the player this presenter was opened from goes to the step
 * (and the hop) the class was shown last, not back to where it was. */
static void leave(struct view *v)
{
	struct presenter *p = P(v);
	struct view *below = v->below;
	if (!p || !p->s || !below || below->ops != &view_player ||
	    strcmp(presenter_scenario_of(below) ? presenter_scenario_of(below) : "", p->path))
		return;
	size_t n = hop_positions(&p->s->steps[p->cur]);
	player_go_to(below, p->cur, p->upto < n ? p->upto : 0);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	struct presenter *p = P(v);
	if (r == REQ_PRES_EXIT || r == REQ_BACK)
		leave(v);
	if (r == REQ_PRES_EXIT)
		return REQ_BACK;
	if (!p || !p->s)
		return r;
	size_t n = p->s->n_steps;
	if (r != REQ_PRES_GO)
		p->digits[0] = '\0'; /* a number is for g only */
	switch (r) {
	case REQ_PRES_NEXT:
		if (!forward(p))
			app_flash(a, C_INFO, "the end of the last step (%zu/%zu): g goes to the first", n, n);
		return REQ_NONE;
	case REQ_PRES_BACK:
		backward(p);
		return REQ_NONE;
	case REQ_PRES_LAST:
		go(p, n - 1, SIZE_MAX);
		return REQ_NONE;
	case REQ_PRES_GO: {
		unsigned long to = *p->digits ? strtoul(p->digits, NULL, 10) : 1;
		p->digits[0] = '\0';
		if (to < 1 || to > n) {
			app_flash(a, C_WARN, "no step %lu: this scenario has %zu", to, n);
			return REQ_NONE;
		}
		go(p, to - 1, SIZE_MAX);
		return REQ_NONE;
	}
	case REQ_PRES_PLAY:
		p->pace.playing = !p->pace.playing;
		if (p->pace.playing && at_end(p))
			go(p, 0, 1); /* play at the end plays it again */
		pace_rearm(&p->pace);
		return REQ_NONE;
	case REQ_PRES_FASTER:
	case REQ_PRES_SLOWER:
		pace_change(a, &p->pace, r == REQ_PRES_FASTER ? 1 : -1);
		return REQ_NONE;
	case REQ_PRES_HANDOUT:
		presenter_handout_prompt(a, p->path);
		return REQ_NONE;
	default:
		return r;
	}
}

/* Digits make the number g jumps to. */
static bool key(struct app *a, struct view *v, int k)
{
	(void)a;
	struct presenter *p = P(v);
	if (!p || k < '0' || k > '9')
		return false;
	size_t len = strlen(p->digits);
	if (len + 1 < sizeof p->digits) {
		p->digits[len] = (char)k;
		p->digits[len + 1] = '\0';
	}
	return true;
}

static void tick(struct app *a, struct view *v, uint64_t now)
{
	struct presenter *p = P(v);
	if (!p || !p->s || !pace_due(&p->pace, now))
		return;
	forward(p);
	if (at_stop(p)) {
		p->pace.playing = false;
		app_flash(a, C_WARN, "paused at STOPPED HERE (step %zu): space plays on", p->cur + 1);
	} else if (at_end(p)) {
		p->pace.playing = false;
		app_flash(a, C_INFO, "played to the end: space plays it again, q goes back");
	}
}

/* ---- the screen ---- */

/* What the step did, in one headline: "CALL python: REFUSED, nothing ran". */
static void headline(const struct scenario_step *st, char *buf, size_t n)
{
	switch (st->kind) {
	case SCENARIO_CALL: {
		const char *exit = scenario_answer_get(st, "exitCode");
		snprintf(buf, n, "CALL %s: %s%s%s", st->language,
			 st->outcome == SCENARIO_REFUSED	? "REFUSED, nothing ran"
			 : st->outcome == SCENARIO_MAY_HAVE_RUN ? "MAY HAVE RUN, no checked answer"
								: "answered, exit ",
			 st->outcome == SCENARIO_ANSWERED ? (exit ? exit : "?") : "",
			 st->retried ? " (retried once in a new sandbox)" : "");
		break;
	}
	case SCENARIO_HOOK:
		snprintf(buf, n, "HOOK %s", st->hook);
		break;
	case SCENARIO_WAIT:
		snprintf(buf, n, "WAIT %lld ms: time passes, no call", st->ms);
		break;
	case SCENARIO_OPERATOR:
		snprintf(buf, n, "OPERATOR %s", st->action);
		break;
	}
}

/* The right pane's text: the answer's output, the refusal, what the
 * operator saw. */
static void outcome_text(const struct scenario_step *st, char *buf, size_t n)
{
	buf[0] = '\0';
	if (st->kind == SCENARIO_OPERATOR) {
		snprintf(buf, n, "%s", st->output ? st->output : "");
		return;
	}
	if (st->kind != SCENARIO_CALL)
		return;
	if (st->outcome != SCENARIO_ANSWERED) {
		snprintf(buf, n, "%s", st->error ? st->error : "");
		return;
	}
	/* Every field as recorded, the digest cut to 12, the output last. */
	size_t used = 0;
	for (size_t i = 0; i < st->n_answer && used < n; i++) {
		const struct scenario_value *v = &st->answer[i];
		if (!strcmp(v->key, "stdout") || !strcmp(v->key, "stderr"))
			continue;
		bool digest = !strcmp(v->key, "recordSha256") && v->text;
		used += (size_t)snprintf(buf + used, n - used, "%s%s %.*s", used ? "  " : "", v->key,
					 digest ? 12 : (int)strlen(v->json), digest ? v->text : v->json);
	}
	for (size_t i = 0; i < st->n_answer && used < n; i++) {
		const struct scenario_value *v = &st->answer[i];
		if ((!strcmp(v->key, "stdout") || !strcmp(v->key, "stderr")) && v->text && *v->text)
			used += (size_t)snprintf(buf + used, n - used, "\n%s:\n%s", v->key, v->text);
	}
}

/* What crossed a hop, one JSON member a line (indented by two), so it wraps
 * where a reader looks; text that is not JSON as it is. */
static void wire_lines(const char *text, char *out, size_t n)
{
	cJSON *j = cJSON_Parse(text);
	char *pretty = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	const char *from = pretty ? pretty : text;
	size_t o = 0;
	for (const char *c = from; *c && o + 3 < n; c++) {
		if (*c == '\t') {
			out[o++] = ' ';
			out[o++] = ' ';
		} else {
			out[o++] = *c;
		}
	}
	out[o] = '\0';
	free(pretty);
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct presenter *p = P(v);
	int C = a->cols, R = bottom - top + 1;
	if (!p || !p->s) {
		attron(theme_attr(C_BAD) | A_BOLD);
		mvaddstr(top + 1, 2, "cannot present this scenario:");
		attroff(theme_attr(C_BAD) | A_BOLD);
		hop_text(top + 2, 2, C - 4, R - 3, 1, theme_attr(C_BAD), p ? p->err : "loading...");
		return;
	}
	const struct scenario *s = p->s;
	const struct scenario_step *st = &s->steps[p->cur];
	int m = C >= 120 ? 4 : 1; /* the margin */
	attron(A_BOLD);
	draw_clipped(top, m, C - 2 * m, s->title);
	attroff(A_BOLD);
	/* the progress bar, then when it was and the play state */
	char when[160], state[96];
	const struct scenario_visit *vi = hop_visit(st, p->upto);
	int wn = st->t_ms >= 0 ? snprintf(when, sizeof when, "+%lld ms", st->t_ms)
			       : snprintf(when, sizeof when, "no time recorded");
	if (vi)
		snprintf(when + wn, sizeof when - (size_t)wn, "  hop %zu/%zu", p->upto, st->n_path);
	else if (st->n_path)
		snprintf(when + wn, sizeof when - (size_t)wn, "  all hops");
	if (*p->digits)
		snprintf(state, sizeof state, "go to step %s: g", p->digits);
	else if (p->pace.playing)
		snprintf(state, sizeof state, "playing, every %.1f s", pace_ms[p->pace.at] / 1000.0);
	else
		snprintf(state, sizeof state, "paused (space plays)");
	char right[300];
	snprintf(right, sizeof right, "  %s  %s", when, state);
	int rw = (int)strlen(right);
	hop_progress(a, top + 1, m, C - 2 * m - rw, p->cur, s->n_steps);
	attron(theme_attr(C_INFO));
	draw_clipped(top + 1, C - m - rw, rw, right);
	attroff(theme_attr(C_INFO));
	int y = top + 2;
	const char *msg = NULL;
	for (size_t i = p->cur + 1; i-- > 0 && s->steps[i].turn == st->turn;)
		if (s->steps[i].user_message) {
			msg = s->steps[i].user_message;
			break;
		}
	char turn[600];
	if (st->turn)
		snprintf(turn, sizeof turn, "turn %d%s%s%s", st->turn, msg ? "   the user: \"" : "",
			 msg ? msg : "", msg ? "\"" : "");
	else
		snprintf(turn, sizeof turn, "outside any turn");
	attron(theme_attr(C_DIM));
	draw_clipped(y, m, C - 2 * m, turn);
	attroff(theme_attr(C_DIM));
	y += 2;
	/* The diagram takes a quarter of what is left, the text the rest. */
	int dh = hop_diagram_rows(bottom - y + 1 - 8);
	struct hop_view hv;
	hop_view_of_step(st, p->upto, &hv);
	hop_diagram_draw(a, &hv, y, dh);
	y += dh + 1;
	char head[600];
	headline(st, head, sizeof head);
	int hattr = A_BOLD;
	if (st->kind == SCENARIO_CALL && st->outcome != SCENARIO_ANSWERED)
		hattr |= theme_attr(st->outcome == SCENARIO_REFUSED ? C_BAD : C_WARN);
	attron(hattr);
	draw_clipped(y, m, C - 2 * m, head);
	attroff(hattr);
	y++;
	/* Hop by hop, the big block is the hop's own narration; the step's is
	 * the line under its headline. */
	char said[4096];
	if (vi) {
		attron(theme_attr(C_DIM));
		draw_clipped(y, m, C - 2 * m, st->narration);
		attroff(theme_attr(C_DIM));
		snprintf(said, sizeof said, "%s, %s: %s", hop_label(vi->hop),
			 vi->leg == SCENARIO_LEG_DOWN ? "on the way down" : "on the way back", vi->narration);
	} else {
		snprintf(said, sizeof said, "%s", st->narration);
	}
	y++;
	/* The narration: large, the most the teacher reads aloud. On a large
	 * screen it is a framed block a third of what is left, its lines set
	 * apart as on a slide, in the middle of the frame. */
	int left = bottom - y + 1;
	int nw = C - 2 * m - (C >= 120 ? 8 : 2);
	int nx = (C - nw) / 2;
	if (left >= 30) {
		int box = left / 3;
		attron(theme_attr(C_DIM));
		for (int r = 0; r < box; r++) {
			const char *side = a->utf8 ? "│" : "|";
			mvaddstr(y + r, nx - 2, r == 0 ? (a->utf8 ? "┌" : "+") : r == box - 1 ? (a->utf8 ? "└" : "+") : side);
			mvaddstr(y + r, nx + nw + 1,
				 r == 0 ? (a->utf8 ? "┐" : "+") : r == box - 1 ? (a->utf8 ? "┘" : "+") : side);
			if (r == 0 || r == box - 1)
				for (int x = nx - 1; x <= nx + nw; x++)
					mvaddstr(y + r, x, a->utf8 ? "─" : "-");
		}
		attroff(theme_attr(C_DIM));
		/* a dry run for its height, then drawn centred */
		int need = hop_text(bottom + 1, nx, nw, box - 2, 2, A_NORMAL, said);
		move(bottom + 1, 0);
		clrtoeol();
		int at = y + 1 + (box - 2 - need) / 2;
		hop_text(at, nx, nw, box - 2, 2, theme_attr(C_INFO) | A_BOLD, said);
		y += box + 1;
	} else {
		y += hop_text(y, nx, nw, left / 3 > 2 ? left / 3 : 2, 1, theme_attr(C_INFO) | A_BOLD,
			      said) + 1;
	}
	if (y > bottom)
		return;
	/* A large screen has room for where the step stands among the rest:
	 * one line a step under the call and its answer. */
	int outline = 0;
	if (bottom - y + 1 >= 16)
		outline = (int)s->n_steps + 1 < (bottom - y + 1) / 2 ? (int)s->n_steps + 1 : (bottom - y + 1) / 2;
	if (outline) {
		int oy = bottom - outline + 1;
		attron(A_BOLD);
		mvaddstr(oy, m, "the steps");
		attroff(A_BOLD);
		size_t first = p->cur + 2 > (size_t)outline ? p->cur + 2 - (size_t)outline : 0;
		for (int r = 1; r < outline && first + (size_t)(r - 1) < s->n_steps; r++) {
			size_t i = first + (size_t)(r - 1);
			char h[600], row[1200];
			headline(&s->steps[i], h, sizeof h);
			snprintf(row, sizeof row, "%s %2zu  %-50s  %s", i == p->cur ? ">" : " ", i + 1, h,
				 s->steps[i].narration);
			int attr = i == p->cur ? (int)(A_BOLD | A_REVERSE) : theme_attr(C_DIM);
			attron(attr);
			draw_clipped(oy + r, m, C - 2 * m, row);
			attroff(attr);
		}
		bottom = oy - 2;
	}
	/* The call and what came of it, side by side. */
	int lw = (C - 2 * m) * 2 / 5, rx = m + lw + 3, rwid = C - m - rx;
	char out[8192];
	outcome_text(st, out, sizeof out);
	const char *out_title = st->kind == SCENARIO_OPERATOR	   ? "the operator saw"
				: st->outcome == SCENARIO_ANSWERED ? "the answer"
								   : "why";
	char wire_title[300];
	if (vi && vi->wire) { /* what crossed this hop, as it was on the wire */
		snprintf(wire_title, sizeof wire_title, "on the wire: %s", vi->wire->what);
		wire_lines(vi->wire->text, out, sizeof out);
		out_title = wire_title;
	}
	if (st->kind == SCENARIO_CALL) {
		attron(A_BOLD);
		mvaddstr(y, m, "the call");
		attroff(A_BOLD);
		hop_text(y + 1, m, lw, bottom - y, 1, A_NORMAL, st->code);
	}
	if (*out) {
		attron(A_BOLD);
		draw_clipped(y, rx, rwid, out_title);
		attroff(A_BOLD);
		hop_text(y + 1, rx, rwid, bottom - y, 1, A_NORMAL, out);
	}
}

const struct view_ops view_presenter = {
	.name = "presenter",
	.title = "Presenter",
	.load = load,
	.request = request,
	.draw = draw,
	.done = done,
	.tick = tick,
	.sourceless = true,
	.fullscreen = true,
	.key = key,
};

/* ---- what the other views of a scenario ask ---- */

const char *presenter_scenario_of(const struct view *v)
{
	if (v->ops == &view_player)
		return v->arg;
	if (v->ops == &view_presenter && v->priv)
		return P(v)->path;
	if (v->ops == &view_lanes)
		return strchr(v->arg, ':') ? strchr(v->arg, ':') + 1 : v->arg;
	return NULL;
}

void presenter_arg_of(const struct view *v, const char *path, char *buf, size_t n)
{
	size_t step = 0, hop = 0;
	if (v->ops == &view_presenter && v->priv) {
		step = P(v)->cur;
		hop = P(v)->upto;
	} else if (v->ops == &view_player) {
		/* The player's title says where it is: "(NAME: step 3/8, hop 2/11)". */
		const char *at = strstr(v->sub, ": step ");
		if (at && sscanf(at, ": step %zu/", &step) == 1 && step > 0)
			step--;
		const char *h = strstr(v->sub, ", hop ");
		if (!h || sscanf(h, ", hop %zu/", &hop) != 1)
			hop = 0;
	}
	snprintf(buf, n, "%zu.%zu:%s", step, hop, path);
}

/* ---- handouts ---- */

static char handout_of[4096]; /* the scenario the open prompt is for */

static void handout_to(struct app *a, const char *text, void *arg)
{
	(void)arg;
	while (*text == ' ')
		text++;
	if (!*text) {
		app_flash(a, C_INFO, "no path: no handout written");
		return;
	}
	struct scenario *s = NULL;
	char err[1024];
	if (scenario_load(handout_of, &s, err, sizeof err) < 0) {
		app_flash(a, C_BAD, "handout: %s", err);
		return;
	}
	int rc = scenario_handout_save(s, text, err, sizeof err);
	scenario_free(s);
	if (rc < 0) {
		app_flash(a, C_BAD, "handout: %s", err);
		return;
	}
	char abs[PATH_MAX];
	app_flash(a, C_GOOD, "handout written: %s", realpath(text, abs) ? abs : text);
}

void presenter_handout_prompt(struct app *a, const char *scenario_path)
{
	snprintf(handout_of, sizeof handout_of, "%s", scenario_path);
	const char *base = strrchr(scenario_path, '/');
	char initial[300];
	snprintf(initial, sizeof initial, "%.*s-handout.md",
		 (int)strcspn(base ? base + 1 : scenario_path, "."), base ? base + 1 : scenario_path);
	prompt_text(a, "handout (Markdown) to: ", initial, handout_to, NULL);
}

/* :present [NAME] and :lanes [NAME]: the scenario named, or the one shown. */
bool presenter_command(struct app *a, const char *cmd, const char *rest)
{
	bool present = !strcmp(cmd, "present"), lanes = !strcmp(cmd, "lanes");
	if (!present && !lanes)
		return false;
	char path[4400], arg[4500], err[1024];
	if (*rest) {
		char dir[4096];
		scenario_dir(dir, sizeof dir);
		if (scenario_resolve(dir, rest, path, sizeof path, err, sizeof err) < 0) {
			app_flash(a, C_BAD, ":%s: %s", cmd, err);
			return true;
		}
	} else if (presenter_scenario_of(a->view)) {
		snprintf(path, sizeof path, "%s", presenter_scenario_of(a->view));
		presenter_arg_of(a->view, path, arg, sizeof arg);
		app_push(a, present ? &view_presenter : &view_lanes, arg);
		return true;
	} else {
		app_flash(a, C_WARN, ":%s NAME, or open a scenario first (:replay, then enter)", cmd);
		return true;
	}
	snprintf(arg, sizeof arg, "0:%s", path);
	app_push(a, present ? &view_presenter : &view_lanes, arg);
	return true;
}

/* ---- the scenario list: jump to one by its number ---- */

bool presenter_list_key(struct app *a, struct view *v, int k)
{
	static char digits[8]; /* one list is typed into at a time */
	static const struct view *typed_in;
	if (k < '0' || k > '9' || typed_in != v) {
		digits[0] = '\0';
		typed_in = v;
	}
	if (k < '0' || k > '9')
		return false;
	size_t len = strlen(digits);
	if (len + 1 < sizeof digits) {
		digits[len] = (char)k;
		digits[len + 1] = '\0';
	}
	unsigned long n = strtoul(digits, NULL, 10);
	if (n < 1 || n > v->t.nshown) {
		app_flash(a, C_WARN, "no scenario %lu: the list has %zu", n, v->t.nshown);
		digits[0] = '\0';
		return true;
	}
	v->t.sel = n - 1;
	app_flash(a, C_INFO, "scenario %lu: %s (enter opens it)", n, table_selected(&v->t)->key);
	return true;
}
