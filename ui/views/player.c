/* The replay player ("follow one call", after plimsoll's page of that name;
 * docs/scenarios.md has the format): one recorded
 * scenario, step by step. The six hops drawn as a pipeline with the step's
 * hops lit in order (and STOPPED HERE where a refusal stopped the call), the
 * call and the answer exactly as recorded, the daemon procedures counted so
 * far, a narrator line and the recording's source.
 *
 * It draws only what the file says: no engine, no daemon, no sandbox — a
 * replay executes nothing, so it runs on no source at all. Play advances a
 * step every 1.5 s from the loop's tick. Colour marks the lit hops; the
 * marker line under the pipeline says the same in text, so monochrome (and
 * the screen tests) see it too. */
#include "app.h"
#include "record_receipt.h"
#include "scenario.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAY_MS 1500

struct player {
	struct scenario *s;
	char err[700];
	size_t cur;
	bool playing;
	uint64_t next_ms;
	size_t hop; /* ---- hops ---- 0: the whole step lit; k: its path's first k hops, the k-th now */
	size_t wire_top; /* the wire pane's first line shown (j/k scroll it) */
};

/* The pipeline's words, short, and what each hop is, for the line under it. */
static const char *const hop_label[SCENARIO_HOP_COUNT] = {"model", "agent", "executeCode",
							  "manager", "daemon", "sandbox"};
static const char *const hop_about[SCENARIO_HOP_COUNT] = {
	"the model asks for executeCode: code, language, files",
	"the agent: hooks and streamText, one turn per user message",
	"the executeCode tool: takes the run id, hands the call on",
	"the conversation manager: one sandbox per run, keyed by run",
	"the daemon (bulkhead serve): the floor, the session, each call",
	"the run's sandbox: where the cell runs",
};
#define ARROW " --> "

static struct player *P(struct view *v)
{
	return v->priv;
}

static void set_sub(struct view *v)
{
	struct player *p = P(v);
	p->wire_top = 0; /* a new hop or step shows its wire from the top */
	if (!p->s) {
		snprintf(v->sub, sizeof v->sub, "(does not load)");
		return;
	}
	const struct scenario_step *st = &p->s->steps[p->cur];
	char hop[48] = "";
	if (p->hop) /* ---- hops ---- */
		snprintf(hop, sizeof hop, ", hop %zu/%zu", p->hop, st->n_path);
	snprintf(v->sub, sizeof v->sub, "(%.60s: step %zu/%zu%s%s)", p->s->name, p->cur + 1, p->s->n_steps, hop,
		 p->playing ? ", playing" : "");
}

static void load(struct app *a, struct view *v)
{
	(void)a;
	if (v->priv)
		return; /* a recording does not change under a replay: read once */
	struct player *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	v->priv = p;
	scenario_load(v->arg, &p->s, p->err, sizeof p->err);
	set_sub(v);
}

static void done(struct view *v)
{
	struct player *p = P(v);
	if (p)
		scenario_free(p->s);
	free(p);
}

static void go(struct app *a, struct view *v, size_t to)
{
	struct player *p = P(v);
	p->cur = to;
	p->hop = 0;
	p->next_ms = now_mono_ms() + PLAY_MS;
	set_sub(v);
	(void)a;
}

void player_go_to(struct view *v, size_t step, size_t hop) /* ---- presenter ---- */
{
	struct player *p = v && v->ops == &view_player ? P(v) : NULL;
	if (!p || !p->s || step >= p->s->n_steps || hop > p->s->steps[step].n_path)
		return;
	p->cur = step;
	p->hop = hop;
	p->playing = false;
	set_sub(v);
}

/* ---- hops: one hop at a time along the step's path ---- */
/* Past the step's last hop, l goes on to the next step's first (a step
 * with no path is passed whole); h before the first hop shows the whole
 * step, and from there the step before. */
static void hop_next(struct app *a, struct view *v)
{
	struct player *p = P(v);
	const struct scenario_step *st = &p->s->steps[p->cur];
	if (p->hop < st->n_path) {
		p->hop++;
		set_sub(v);
		return;
	}
	if (p->cur + 1 >= p->s->n_steps) {
		app_flash(a, C_INFO, "the last hop of the last step: g goes to the first, esc picks another scenario");
		return;
	}
	go(a, v, p->cur + 1);
	p->hop = p->s->steps[p->cur].n_path ? 1 : 0;
	set_sub(v);
}

static void hop_back(struct app *a, struct view *v)
{
	struct player *p = P(v);
	if (p->hop > 0) {
		p->hop--;
		set_sub(v);
		return;
	}
	if (p->cur == 0) {
		app_flash(a, C_INFO, "the first step: l lights its hops one at a time, space goes on");
		return;
	}
	go(a, v, p->cur - 1);
	p->hop = p->s->steps[p->cur].n_path;
	set_sub(v);
}

/* The run record a recorded SessionRun answer carries, decoded by the
 * strict wire decoder (the file is untrusted), for the record view. */
static bool receipt_of(const struct scenario_step *st, const struct scenario_wire *w, struct ui_record *out)
{
	/* ---- project: a project's Run answer carries its record too ---- */
	bool one_shot = w && !strncmp(w->what, "Run answer", 10);
	if (!w || (strncmp(w->what, "SessionRun answer", 17) && !one_shot))
		return false;
	struct wire_session_run_response res;
	memset(&res, 0, sizeof res);
	struct wire_status status;
	if (one_shot) {
		if (wire_decode_run_response(w->text, strlen(w->text), &res.run, &status) < 0)
			return false;
		res.has_run = true;
	} else if (wire_decode_session_run_response(w->text, strlen(w->text), &res, &status) < 0) {
		return false;
	}
	bool ok = res.has_run && res.run.has_record;
	if (ok) {
		const struct bh_record *r = &res.run.record;
		*out = (struct ui_record){.version = r->version, .started_ms = r->started_unix_ms,
					  .ended_ms = r->ended_unix_ms, .sequence = r->sequence};
		snprintf(out->request, sizeof out->request, "%s", r->request_sha256);
		snprintf(out->result, sizeof out->result, "%s", r->result_sha256);
		snprintf(out->unanswered, sizeof out->unanswered, "%s", r->unanswered ? r->unanswered : "");
		snprintf(out->provider, sizeof out->provider, "%s", r->provider ? r->provider : "");
		snprintf(out->isolation, sizeof out->isolation, "%s", r->isolation ? r->isolation : "");
		snprintf(out->environment, sizeof out->environment, "%s", r->environment ? r->environment : "");
		snprintf(out->policy, sizeof out->policy, "%s", r->policy ? r->policy : "");
		snprintf(out->software_identity, sizeof out->software_identity, "%s",
			 r->software_identity ? r->software_identity : "");
		snprintf(out->software_rule_id, sizeof out->software_rule_id, "%s",
			 r->software_rule_id ? r->software_rule_id : "");
		snprintf(out->session, sizeof out->session, "%s", r->session);
		snprintf(out->previous, sizeof out->previous, "%s", r->previous_sha256);
		snprintf(out->record, sizeof out->record, "%s", r->record_sha256);
		snprintf(out->language, sizeof out->language, "%s", st->language ? st->language : "");
		const char *exit = scenario_answer_get(st, "exitCode");
		out->exit_code = exit ? atoi(exit) : 0;
		/* A project's result digest, recomputed from the answer's outcome,
		 * steps and artifacts in plimsoll's project encoding. */
		if (res.run.result.kind && !strcmp(res.run.result.kind, "project")) {
			char digest[65];
			bh_result_digest(&res.run.result, digest);
			snprintf(out->flags, sizeof out->flags, "project encoding: digest %s",
				 strcmp(digest, r->result_sha256) ? "MISMATCH" : "matches");
		}
	}
	if (one_shot)
		wire_run_response_free(&res.run);
	else
		wire_session_run_response_free(&res);
	return ok;
}

static void open_receipt(struct app *a, struct view *v)
{
	struct player *p = P(v);
	const struct scenario_step *st = &p->s->steps[p->cur];
	const struct scenario_visit *now = p->hop && p->hop <= st->n_path ? &st->path[p->hop - 1] : NULL;
	struct ui_record r;
	if (now && receipt_of(st, now->wire, &r)) {
		record_view_open_receipt(a, &r);
		return;
	}
	app_flash(a, C_INFO, "enter opens the receipt where a SessionRun or Run answer is on the wire (l to the daemon, coming back up)");
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	struct player *p = P(v);
	if (!p || !p->s)
		return r == REQ_PICK ? REQ_BACK : r;
	size_t last = p->s->n_steps - 1;
	switch (r) {
	case REQ_STEP_NEXT:
		if (p->cur < last)
			go(a, v, p->cur + 1);
		else
			app_flash(a, C_INFO, "the last step (%zu/%zu): g goes to the first, esc picks another scenario",
				  p->cur + 1, p->s->n_steps);
		return REQ_NONE;
	case REQ_STEP_BACK:
		if (p->cur > 0)
			go(a, v, p->cur - 1);
		else
			app_flash(a, C_INFO, "the first step: space goes on, l lights its hops one at a time");
		return REQ_NONE;
	case REQ_STEP_FIRST:
		go(a, v, 0);
		return REQ_NONE;
	case REQ_STEP_LAST:
		go(a, v, last);
		return REQ_NONE;
	case REQ_PLAY:
		p->playing = !p->playing;
		if (p->playing && p->cur == last)
			p->cur = 0; /* play at the end plays it again */
		go(a, v, p->cur);
		return REQ_NONE;
	case REQ_PICK:
		return REQ_BACK;
	case REQ_HOP_NEXT: /* ---- hops ---- */
		hop_next(a, v);
		return REQ_NONE;
	case REQ_HOP_BACK:
		hop_back(a, v);
		return REQ_NONE;
	case REQ_ENTER:
		open_receipt(a, v);
		return REQ_NONE;
	case REQ_DOWN: /* the wire pane, a line at a time (draw keeps it in range) */
		p->wire_top++;
		return REQ_NONE;
	case REQ_UP:
		if (p->wire_top)
			p->wire_top--;
		return REQ_NONE;
	default:
		return r;
	}
}

static void tick(struct app *a, struct view *v, uint64_t now)
{
	struct player *p = P(v);
	if (!p || !p->s || !p->playing || now < p->next_ms)
		return;
	if (p->cur + 1 < p->s->n_steps)
		go(a, v, p->cur + 1);
	if (p->cur + 1 >= p->s->n_steps) {
		p->playing = false;
		set_sub(v);
		app_flash(a, C_INFO, "played to the end: p plays it again, esc picks another scenario");
	}
}

/* ---- text on the screen ---- */

/* Columns a UTF-8 string takes (continuation bytes take none). */
static int cols_of(const char *s, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n && s[i]; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* Bytes of s that fit w columns, never cutting a character. */
static size_t fit(const char *s, int w)
{
	size_t i = 0;
	int c = 0;
	while (s[i]) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (c == w)
				break;
			c++;
		}
		i++;
	}
	return i;
}

/* At most w columns at (y, x); control characters show as '?'. */
static void put(int y, int x, int w, int attr, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void put(int y, int x, int w, int attr, const char *fmt, ...)
{
	if (w <= 0)
		return;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	attron(attr);
	mvaddnstr(y, x, buf, (int)fit(buf, w));
	attroff(attr);
}

/* Lines of text for a panel: hard-wrapped (code keeps its indentation) or
 * word-wrapped (prose), newlines kept, tabs as spaces. */
struct lines {
	char l[64][256];
	size_t n, more; /* more: lines that did not fit the array */
};

static void add_line(struct lines *L, const char *s, size_t n)
{
	if (L->n == sizeof L->l / sizeof L->l[0]) {
		L->more++;
		return;
	}
	if (n > sizeof L->l[0] - 1)
		n = sizeof L->l[0] - 1;
	memcpy(L->l[L->n], s, n);
	L->l[L->n][n] = '\0';
	for (char *c = L->l[L->n]; *c; c++)
		if (*c == '\t')
			*c = ' ';
	L->n++;
}

static void wrap(struct lines *L, const char *text, int w, bool words)
{
	if (w < 8)
		w = 8;
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char para[4096];
		snprintf(para, sizeof para, "%.*s", (int)(len < sizeof para ? len : sizeof para - 1), p);
		const char *q = para;
		do {
			size_t take = fit(q, w);
			if (words && q[take]) {
				size_t sp = take;
				while (sp > 0 && q[sp] != ' ')
					sp--;
				if (sp > 0)
					take = sp;
			}
			add_line(L, q, take);
			q += take;
			if (words)
				while (*q == ' ')
					q++;
		} while (*q);
		p = nl ? nl + 1 : NULL;
	}
}

/* Draws a panel's lines in rows y0..y1 (inclusive); what does not fit is
 * counted on the last row. */
static void draw_lines_hint(const struct lines *L, int y0, int y1, int x, int w, int attr, const char *hint);
static void draw_lines(const struct lines *L, int y0, int y1, int x, int w, int attr)
{
	draw_lines_hint(L, y0, y1, x, w, attr, "");
}

/* The same, the count of what does not fit followed by hint (": j scrolls"). */
static void draw_lines_hint(const struct lines *L, int y0, int y1, int x, int w, int attr, const char *hint)
{
	int rows = y1 - y0 + 1;
	size_t total = L->n + L->more;
	for (int i = 0; i < rows && (size_t)i < L->n; i++) {
		if (i == rows - 1 && total > (size_t)rows) {
			put(y0 + i, x, w, theme_attr(C_DIM), "(%zu more lines%s)", total - (size_t)i, hint);
			return;
		}
		put(y0 + i, x, w, attr, "%s", L->l[i]);
	}
}

/* ---- the parts of the screen ---- */

static bool lit(const struct scenario_step *st, enum scenario_hop h, size_t *order)
{
	for (size_t i = 0; i < st->n_hops; i++)
		if (st->hops[i] == h) {
			*order = i + 1;
			return true;
		}
	return false;
}

/* ---- hops ---- in hop mode, what is lit is the path so far: the hop now
 * and those the call already passed, down or back up. */
static bool lit_so_far(const struct scenario_step *st, size_t hop, enum scenario_hop h)
{
	for (size_t i = 0; i < hop && i < st->n_path; i++)
		if (st->path[i].hop == h)
			return true;
	return false;
}

static void put_mark(struct app *a, int y, int x, int w, int attr, const char *mark)
{
	int mx = x + w / 2 - (int)strlen(mark) / 2;
	if (mx + (int)strlen(mark) > a->cols)
		mx = a->cols - (int)strlen(mark);
	if (mx < 0)
		mx = 0;
	put(y, mx, a->cols - mx, attr, "%s", mark);
}

/* model --> agent --> executeCode --> manager --> daemon --> sandbox, the
 * lit ones bold and reversed, the one that refused in red; under each lit
 * hop its order, or STOPPED HERE / MAY HAVE RUN at the hop that stopped.
 * Hop by hop (hop > 0): the hops passed so far lit, the one now marked
 * "> down" or "< back" (a refusal travelling back says so), and under the
 * pipeline which hop of the path this is. */
static void draw_pipeline(struct app *a, const struct scenario_step *st, size_t hop, int y)
{
	int total = 0, x[SCENARIO_HOP_COUNT];
	for (int h = 0; h < SCENARIO_HOP_COUNT; h++)
		total += (int)strlen(hop_label[h]) + (h ? (int)strlen(ARROW) : 0);
	int at = a->cols > total ? (a->cols - total) / 2 : 0;
	const struct scenario_visit *now = hop ? &st->path[hop - 1] : NULL;
	for (int h = 0; h < SCENARIO_HOP_COUNT; h++) {
		if (h) {
			put(y, at, a->cols - at, theme_attr(C_DIM), ARROW);
			at += (int)strlen(ARROW);
		}
		x[h] = at;
		size_t order;
		bool on = now ? lit_so_far(st, hop, (enum scenario_hop)h) : lit(st, (enum scenario_hop)h, &order);
		int attr = theme_attr(C_DIM);
		if (on)
			attr = (st->stopped_at == h ? theme_attr(C_BAD) : theme_attr(C_GOOD)) | A_BOLD |
			       (!now || now->hop == h ? A_REVERSE : 0);
		put(y, at, a->cols - at, attr, "%s", hop_label[h]);
		at += (int)strlen(hop_label[h]);
	}
	bool may = st->kind == SCENARIO_CALL && st->outcome == SCENARIO_MAY_HAVE_RUN;
	for (int h = 0; h < SCENARIO_HOP_COUNT; h++) {
		size_t order;
		int w = (int)strlen(hop_label[h]);
		if (now) {
			if (st->stopped_at == h && lit_so_far(st, hop, (enum scenario_hop)h))
				put_mark(a, y + 1, x[h], w, theme_attr(may ? C_WARN : C_BAD) | A_BOLD,
					 may ? "MAY HAVE RUN" : "STOPPED HERE");
			else if (now->hop == h)
				put_mark(a, y + 1, x[h], w, theme_attr(C_GOOD) | A_BOLD,
					 now->leg == SCENARIO_LEG_DOWN		     ? "> down"
					 : st->stopped_at != SCENARIO_HOP_NONE ? "< refusal"
									       : "< back");
			continue;
		}
		if (!lit(st, (enum scenario_hop)h, &order))
			continue;
		char mark[32];
		int attr = theme_attr(C_GOOD) | A_BOLD;
		if (st->stopped_at == h) {
			snprintf(mark, sizeof mark, "%s", may ? "MAY HAVE RUN" : "STOPPED HERE");
			attr = theme_attr(may ? C_WARN : C_BAD) | A_BOLD;
		} else {
			snprintf(mark, sizeof mark, "^%zu", order);
		}
		put_mark(a, y + 1, x[h], w, attr, mark);
	}
	if (now) {
		put(y + 2, 0, a->cols, theme_attr(C_DIM), "hop %zu/%zu, %s: %s%s%s", hop, st->n_path,
		    now->leg == SCENARIO_LEG_DOWN ? "going down" : "coming back up", hop_label[now->hop],
		    now->wire ? "; on the wire: " : "", now->wire ? now->wire->what : "");
		return;
	}
	enum scenario_hop where = st->stopped_at != SCENARIO_HOP_NONE ? st->stopped_at
				  : st->n_hops			    ? st->hops[st->n_hops - 1]
								    : SCENARIO_HOP_NONE;
	/* What the deepest hop did in this step, when the recording says. */
	const char *did = NULL;
	for (size_t i = 0; i < st->n_path; i++)
		if (st->path[i].leg == SCENARIO_LEG_DOWN && st->path[i].hop == where)
			did = st->path[i].narration;
	if (where == SCENARIO_HOP_NONE)
		put(y + 2, 0, a->cols, theme_attr(C_DIM), "no hop lit: %s",
		    st->kind == SCENARIO_WAIT ? "no call and no hook, time passes" : "nothing answered this step");
	else if (did)
		put(y + 2, 0, a->cols, theme_attr(C_DIM), "%s %s: %s", st->stopped_at != SCENARIO_HOP_NONE ? "stopped at" : "reached",
		    hop_label[where], did);
	else
		put(y + 2, 0, a->cols, theme_attr(C_DIM), "%s %s", st->stopped_at != SCENARIO_HOP_NONE ? "stopped at" : "reached",
		    hop_about[where]);
}

/* The user message of the step's turn (said on the turn's first step). */
static const char *turn_message(const struct scenario *s, size_t cur)
{
	int turn = s->steps[cur].turn;
	for (size_t i = cur + 1; i-- > 0;) {
		if (s->steps[i].turn != turn)
			break;
		if (s->steps[i].user_message)
			return s->steps[i].user_message;
	}
	return NULL;
}

static void hook_words(const struct scenario *s, const struct scenario_step *st, char *buf, size_t n)
{
	if (!strcmp(st->hook, "turn_start"))
		snprintf(buf, n, "onTurnStart: the manager starts warming this run's sandbox and does not wait for it.");
	else if (!strcmp(st->hook, "suspend"))
		snprintf(buf, n, "The run stayed idle past its idle window (%lld ms): onChatSuspend disposes the run's sandbox.",
			 s->idle_window_ms);
	else
		snprintf(buf, n, "onComplete: the run is over, and its sandbox is disposed.");
}

static const char *operator_words(const char *action)
{
	static const struct {
		const char *action, *words;
	} w[] = {
		{"pause", "The operator pauses the sandbox: frozen, its memory kept."},
		{"resume", "The operator resumes the sandbox."},
		{"hibernate", "The operator hibernates the sandbox: checkpointed to disk, its memory freed."},
		{"leaks", "The operator asks for leaks: what runs that nothing holds."},
		{"gc", "The operator reaps what the leak check found."},
		{"kill_worker", "The worker holding the run dies: nothing is left to close its sandbox."},
		{"inspect", "The operator looks at the sandbox: its state, its calls, its tier."},
		{"kill_daemon", "The daemon is killed (kill -9): nothing closes the sandboxes it held."},
		{"restart_daemon", "The daemon starts again and reconciles what the dead one left."},
	};
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		if (!strcmp(w[i].action, action))
			return w[i].words;
	return "";
}

/* The answer's fields as recorded, packed a few to a line, the record
 * digest cut to 12 characters; stdout and stderr last, as the lines they
 * hold when there are any (so the flags are never the part cut off). */
static bool is_output(const struct scenario_value *v)
{
	return (!strcmp(v->key, "stdout") || !strcmp(v->key, "stderr")) && v->text && *v->text;
}

static void answer_lines(struct lines *L, const struct scenario_step *st, int w, int rows)
{
	char line[1024] = "";
	for (size_t i = 0; i < st->n_answer; i++) {
		const struct scenario_value *v = &st->answer[i];
		if (is_output(v))
			continue;
		char item[4096];
		if (!strcmp(v->key, "recordSha256") && v->text)
			snprintf(item, sizeof item, "%s %.12s", v->key, v->text);
		else
			snprintf(item, sizeof item, "%s %s", v->key, v->json);
		int used = cols_of(line, strlen(line));
		int need = cols_of(item, strlen(item));
		if (*line && used + 2 + need <= w) {
			strncat(line, "  ", sizeof line - strlen(line) - 1);
			strncat(line, item, sizeof line - strlen(line) - 1);
			continue;
		}
		if (*line)
			wrap(L, line, w, false);
		/* An item wider than a line is cut here; wrap() folds the rest. */
		snprintf(line, sizeof line, "%.*s", (int)sizeof line - 1, item);
	}
	if (*line)
		wrap(L, line, w, false);
	size_t outputs = 0;
	for (size_t i = 0; i < st->n_answer; i++)
		outputs += is_output(&st->answer[i]);
	int budget = rows - (int)L->n;
	for (size_t i = 0; i < st->n_answer; i++) {
		const struct scenario_value *v = &st->answer[i];
		if (!is_output(v))
			continue;
		/* The lines as printed (one final newline ends the last). When they
		 * do not fit, the last ones: a traceback ends with its error. */
		struct lines *out = calloc(1, sizeof *out);
		size_t n = strlen(v->text);
		char *copy = strndup(v->text, v->text[n - 1] == '\n' ? n - 1 : n);
		if (!out || !copy)
			abort();
		wrap(out, copy, w, false);
		free(copy);
		int share = budget / (int)outputs;
		if (share < 2)
			share = 2;
		size_t from = 0;
		if ((int)out->n + 1 > share && !out->more) {
			from = out->n - (size_t)(share - 1);
			snprintf(line, sizeof line, "%s, its last %d of %zu lines:", v->key, share - 1, out->n);
		} else {
			snprintf(line, sizeof line, "%s:", v->key);
		}
		add_line(L, line, strlen(line));
		for (size_t k = from; k < out->n; k++)
			add_line(L, out->l[k], strlen(out->l[k]));
		budget -= (int)(out->n - from) + 1;
		outputs--;
		free(out);
	}
}

/* ---- hops ---- what crossed the hop, as recorded: JSON indented to read. */
static void wire_lines(struct lines *L, const struct scenario_wire *w, int width)
{
	cJSON *j = cJSON_Parse(w->text);
	char *pretty = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	if (pretty) /* cJSON indents with tabs: two spaces read as well in less room */
		for (char *c = pretty; *c; c++)
			if (*c == '\t')
				*c = ' ';
	wrap(L, pretty ? pretty : *w->text ? w->text : "(empty)", width, false);
	free(pretty);
}

static void draw_panels(struct app *a, const struct scenario *s, const struct scenario_step *st,
			const struct scenario_visit *now, size_t *wire_top, int y0, int y1)
{
	int lw = a->cols * 2 / 5; /* the answer says more than the call */
	int rx = lw + 2, rw = a->cols - rx;
	int head = A_BOLD;
	struct lines *left = calloc(1, sizeof *left), *right = calloc(1, sizeof *right);
	if (!left || !right)
		abort();
	char words[512];
	int right_attr = A_NORMAL;
	const char *scroll_hint = ""; /* ---- hops ---- */
	switch (st->kind) {
	case SCENARIO_CALL: {
		char files[256] = "";
		for (size_t i = 0; i < st->n_files; i++) {
			strncat(files, i ? ", " : "  files: ", sizeof files - strlen(files) - 1);
			strncat(files, st->files[i].path, sizeof files - strlen(files) - 1);
		}
		put(y0, 0, lw, head, "CALL %s%s", st->language, files);
		wrap(left, st->code, lw, false);
		/* ---- hops ---- the files sent with the call, as sent */
		for (size_t i = 0; i < st->n_files; i++) {
			char head_line[300];
			snprintf(head_line, sizeof head_line, "-- %s --", st->files[i].path);
			add_line(left, head_line, strlen(head_line));
			wrap(left, st->files[i].content, lw, false);
		}
		if (st->approval) { /* ---- approvals: held for a person first ---- */
			add_line(left, "", 0);
			wrap(left, st->approval, lw, true);
		}
		if (st->outcome == SCENARIO_ANSWERED) {
			put(y0, rx, rw, head, "ANSWER%s", st->retried ? " (retried once in a new sandbox)" : "");
			answer_lines(right, st, rw, y1 - y0);
		} else {
			bool may = st->outcome == SCENARIO_MAY_HAVE_RUN;
			put(y0, rx, rw, theme_attr(may ? C_WARN : C_BAD) | A_BOLD, "%s%s",
			    may ? "MAY HAVE RUN: no checked answer" : "REFUSED: nothing ran",
			    st->retried ? " (retried)" : "");
			wrap(right, st->error, rw, true);
			right_attr = theme_attr(may ? C_WARN : C_BAD);
		}
		break;
	}
	case SCENARIO_HOOK:
		put(y0, 0, lw, head, "HOOK %s", st->hook);
		hook_words(s, st, words, sizeof words);
		wrap(left, words, lw, true);
		put(y0, rx, rw, theme_attr(C_DIM), "no call, no answer");
		break;
	case SCENARIO_WAIT:
		put(y0, 0, lw, head, "WAIT %lld ms", st->ms);
		if (s->idle_window_ms > 0)
			snprintf(words, sizeof words, "Time passes with no call (the idle window is %lld ms).",
				 s->idle_window_ms);
		else
			snprintf(words, sizeof words, "Time passes with no call.");
		wrap(left, words, lw, true);
		put(y0, rx, rw, theme_attr(C_DIM), "no call, no answer");
		break;
	case SCENARIO_OPERATOR:
		put(y0, 0, lw, head, "OPERATOR %s", st->action);
		wrap(left, operator_words(st->action), lw, true);
		put(y0, rx, rw, head, "THE OPERATOR SAW");
		/* Wrapped, not cut (B22): a leak's reason is at its line's end. */
		wrap(right, st->output, rw, true);
		break;
	}
	if (now && now->wire) { /* ---- hops ---- the wire at this hop, in place of the answer */
		right->n = right->more = 0;
		right_attr = A_NORMAL;
		mvhline(y0, rx, ' ', rw);
		wire_lines(right, now->wire, rw);
		/* j/k scroll a wire longer than the pane; never past its end. */
		size_t rows = (size_t)(y1 - y0), total = right->n;
		if (*wire_top + rows > total)
			*wire_top = total > rows ? total - rows : 0;
		if (*wire_top) {
			memmove(right->l, right->l + *wire_top, (right->n - *wire_top) * sizeof right->l[0]);
			right->n -= *wire_top;
		}
		put(y0, rx, rw, head, "ON THE WIRE: %s", now->wire->what);
		scroll_hint = *wire_top ? ": j/k scroll" : ": j scrolls";
	}
	for (int y = y0; y <= y1; y++)
		put(y, lw, 1, theme_attr(C_DIM), "|");
	draw_lines(left, y0 + 1, y1, 0, lw, A_NORMAL);
	draw_lines_hint(right, y0 + 1, y1, rx, rw, right_attr, scroll_hint);
	free(left);
	free(right);
}

/* The part of s before its first occurrence of stop (all of s when none),
 * trailing blanks dropped. */
static int before(const char *s, const char *stop)
{
	const char *at = s && stop ? strstr(s, stop) : NULL;
	int n = s ? (int)(at ? (size_t)(at - s) : strlen(s)) : 0;
	while (n > 0 && s[n - 1] == ' ')
		n--;
	return n;
}

/* "recorded by R at T against D" when it fits the row; else shortened,
 * step by step, never cut mid-word: the day for the second and the recorder
 * without its parenthesis, then the daemon without its parenthesis, then
 * only up to its first comma, then the recorder alone. The whole line is in
 * the file and the handout. */
static void recorded_by(char *line, size_t n, const struct scenario_source *src, int cols)
{
	const char *rec = src->recorder ? src->recorder : "", *at = src->recorded_at ? src->recorded_at : "",
		   *d = src->daemon;
	snprintf(line, n, "recorded by %s at %s%s%s", rec, at, d ? " against " : "", d ? d : "");
	if ((int)strlen(line) <= cols)
		return;
	int r = before(rec, " ("), whole = before(d, NULL), bare = before(d, " ("),
	    clause = before(d, ",");
	const int cuts[] = {whole, bare, clause < bare ? clause : bare, 0};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		int k = d ? cuts[i] : 0;
		snprintf(line, n, "recorded %.10s by %.*s%s%.*s", at, r, rec, k ? " against " : "", k,
			 d ? d : "");
		if ((int)strlen(line) <= cols)
			return;
	}
}

/* OpenSession 1, SessionRun 2 (+1), CloseSession 0: what changed at this
 * step says by how much. */
static void draw_daemon(struct app *a, const struct scenario *s, size_t cur, int y)
{
	const struct scenario_step *st = &s->steps[cur], *prev = cur ? &s->steps[cur - 1] : NULL;
	char line[1024];
	size_t used = (size_t)snprintf(line, sizeof line, "daemon procedures so far:");
	if (!st->n_daemon_calls)
		used += (size_t)snprintf(line + used, sizeof line - used, " none");
	for (size_t i = 0; i < st->n_daemon_calls && used < sizeof line; i++) {
		long long before = 0;
		for (size_t k = 0; prev && k < prev->n_daemon_calls; k++)
			if (!strcmp(prev->daemon_calls[k].name, st->daemon_calls[i].name))
				before = prev->daemon_calls[k].n;
		used += (size_t)snprintf(line + used, sizeof line - used, "%s %s %lld", i ? "," : "",
					 st->daemon_calls[i].name, st->daemon_calls[i].n);
		if (st->daemon_calls[i].n > before && used < sizeof line)
			used += (size_t)snprintf(line + used, sizeof line - used, " (+%lld)", st->daemon_calls[i].n - before);
	}
	put(y, 0, a->cols, A_NORMAL, "%s", line);
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct player *p = P(v);
	if (!p || !p->s) {
		struct lines L = {0};
		wrap(&L, p ? p->err : "loading...", a->cols - 2, true);
		put(top + 1, 0, a->cols, theme_attr(C_BAD) | A_BOLD, "cannot replay this scenario:");
		draw_lines(&L, top + 2, bottom, 2, a->cols - 2, theme_attr(C_BAD));
		return;
	}
	const struct scenario *s = p->s;
	const struct scenario_step *st = &s->steps[p->cur];
	/* The title and its lesson wrap rather than run off the screen's edge:
	 * over three rows on a screen of 30 lines or more; on a smaller one the
	 * panels need the rows, so one, ending in an ellipsis when it goes on
	 * (the scenario list's preview shows it whole). */
	char lesson[2048];
	snprintf(lesson, sizeof lesson, "%s: %s", s->title, s->teaches);
	struct lines T = {0};
	size_t most = a->lines >= 30 ? 3 : 1;
	wrap(&T, lesson, a->cols - 2, true);
	size_t rows = T.n < most ? T.n : most;
	for (size_t i = 0; i < rows; i++)
		put(top + (int)i, 0, a->cols, theme_attr(C_INFO), "%s%s", T.l[i],
		    i + 1 == rows && T.n > rows ? ui_ellipsis() : "");
	if (rows > 1)
		top += (int)rows - 1;
	size_t hop = p->hop <= st->n_path ? p->hop : 0; /* ---- hops ---- */
	const struct scenario_visit *now = hop ? &st->path[hop - 1] : NULL;
	draw_pipeline(a, st, hop, top + 1);
	const char *msg = turn_message(s, p->cur);
	char turn[64];
	if (st->turn)
		snprintf(turn, sizeof turn, "turn %d", st->turn);
	else
		snprintf(turn, sizeof turn, "outside any turn");
	put(top + 4, 0, a->cols, A_BOLD, "step %zu/%zu  %s%s%s%s", p->cur + 1, s->n_steps, turn,
	    msg ? "  the user: \"" : "", msg ? msg : "", msg ? "\"" : "");
	/* Hop by hop, the hop's own narration takes a third line. */
	int said = now ? 3 : 2;
	draw_panels(a, s, st, now, &p->wire_top, top + 5, bottom - 2 - said);
	draw_daemon(a, s, p->cur, bottom - 1 - said);
	struct lines L = {0};
	wrap(&L, now ? now->narration : st->narration, a->cols - 2, true);
	for (int i = 0; i < said && (size_t)i < L.n; i++)
		put(bottom - said + i, 0, a->cols, theme_attr(C_INFO) | A_BOLD, "%s %s", i ? " " : ">", L.l[i]);
	char by[2048];
	recorded_by(by, sizeof by, &s->source, a->cols);
	put(bottom, 0, a->cols, theme_attr(C_DIM), "%s", by);
}

const struct view_ops view_player = {
	.name = "player",
	.title = "Replay",
	.load = load,
	.request = request,
	.draw = draw,
	.done = done,
	.tick = tick,
	.sourceless = true,
};
