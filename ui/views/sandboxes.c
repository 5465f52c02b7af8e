/* Sandboxes: every session the source holds, coloured by state; opens new
 * ones, runs cells in the console's own, and steers any of them. */
#include "capture_view.h" /* ---- capture ---- */
#include "app.h"
#include "copy_time.h" /* ---- report ---- */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* SESSION..BY, then the usage figures (live: a store has none); past
 * them, the wide toggle's (ctrl-w): the run a sandbox served and its
 * runtime name, which `/` finds too. */
static const char *const headers[] = {"SESSION", "STATE", "TIER",  "FLOOR", "CALLS",  "IDLE",
				      "EXPIRES", "OWNER", "BY",    "CPU%",  "MEM",    "PIDS",
				      "DISK",    "CALL/M", "CPU 1M", "HOST", "RUN", "SANDBOX"};
static const int widths[] = {12, 11, 9, 9, 5, 5, 7, 8, 0, 4, 9, 4, 5, 6, 12, 8, 0, 0};
_Static_assert(sizeof headers / sizeof headers[0] == sizeof widths / sizeof widths[0], "a width per column");
/* ---- usage ---- */
enum { COL_CPU = 9, COL_MEM, COL_PIDS, COL_DISK, COL_CALLS_MINUTE, COL_SPARK, COL_HOST, N_COLS };
enum { COL_RUN = N_COLS, COL_SANDBOX, N_ALL };
_Static_assert(sizeof headers / sizeof headers[0] == N_ALL, "every column named");
static const enum col_type types[N_ALL] = {
	[4] = COL_NUMBER, [5] = COL_DURATION, [6] = COL_DURATION, [COL_CPU] = COL_NUMBER,
	[COL_MEM] = COL_NUMBER, [COL_PIDS] = COL_NUMBER, [COL_DISK] = COL_NUMBER,
	[COL_CALLS_MINUTE] = COL_NUMBER, [COL_SPARK] = COL_NUMBER,
};
/* Drawn in this order; on a narrow screen FLOOR, OWNER, EXPIRES, CALLS,
 * IDLE, CALL/M, DISK, BY, PIDS, the sparkline and TIER go, in that order
 * (drop ranks below): at 80 columns BY (cut to 6) and DISK stay, CALL/M
 * waits for a wider screen. */
/* ---- fleet: HOST (drawn over a fleet only) after the session, never
 * dropped: the columns above go first to make room for it. ---- */
static const size_t order[] = {0, COL_HOST, 1, 2, COL_CPU, COL_MEM, COL_PIDS, COL_DISK, COL_SPARK,
			       COL_CALLS_MINUTE, 3, 4, 5, 6, 7, 8};
static const int drop[N_ALL] = {
	[3] = 11, [7] = 10, [6] = 9, [4] = 8, [5] = 7, [COL_CALLS_MINUTE] = 6,
	[COL_DISK] = 5, [8] = 4, [COL_PIDS] = 3, [COL_SPARK] = 2, [2] = 1,
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Ended sessions stay with the engine ten minutes (a late close still
 * learns why): listed only on `a`, in a run's drill-down, and on a store
 * opened read-only, where the history is the point. */
struct sb_view {
	bool all;
};

/* ---- usage ---- */

static struct app *a_of(struct view *v)
{
	return v->app;
}

/* 201M, 1.5G, 12K: a byte count in four or five characters. */
static void fmt_bytes(char *buf, size_t n, uint64_t b)
{
	if (b >= (1ull << 50)) /* v1's "no limit" is 2^63 less a page */
		snprintf(buf, n, "-");
	else if (b >= 10ull << 30)
		snprintf(buf, n, "%lluG", (unsigned long long)(b >> 30));
	else if (b >= 1ull << 30)
		snprintf(buf, n, "%.1fG", (double)b / (1 << 30));
	else if (b >= 1ull << 20)
		snprintf(buf, n, "%lluM", (unsigned long long)(b >> 20));
	else
		snprintf(buf, n, "%lluK", (unsigned long long)((b + 1023) >> 10));
}

/* The minute's CPU as a sparkline, oldest left, scaled to its busiest
 * point (a tenth of a CPU at least, so an idle sandbox stays flat). */
static void sparkline(char *buf, size_t n, const struct bh_session_usage *u, bool utf8)
{
	static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
					     "\u2585", "\u2586", "\u2587", "\u2588"};
	static const char ascii[] = "_.-=#";
	uint32_t top = 100;
	for (size_t i = 0; i < u->n_history; i++)
		if (u->history[i].cpu_millicores > top)
			top = u->history[i].cpu_millicores;
	size_t o = 0;
	buf[0] = '\0';
	/* Padded on the left: the newest point is always the last column. */
	for (size_t i = u->n_history; i < BH_USAGE_HISTORY; i++)
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, " ");
	for (size_t i = 0; i < u->n_history; i++) {
		uint64_t v = u->history[i].cpu_millicores;
		if (utf8)
			o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s", blocks[v * 7 / top]);
		else
			o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%c", ascii[v * 4 / top]);
	}
}

/* A usage cell: its text and its numeric sort key. */
static void cell_num(struct trow *r, int col, int64_t key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void cell_num(struct trow *r, int col, int64_t key, const char *fmt, ...)
{
	char text[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	table_cell(r, (size_t)col, "%s", text);
	table_num(r, (size_t)col, key);
}

/* The usage columns of a row, from the console's last usage answer. */
static void usage_cells(struct app *a, struct trow *r)
{
	const struct bh_session_usage *u = app_usage_of(a, r->key);
	for (int c = COL_CPU; c <= COL_SPARK; c++)
		cell_num(r, c, -1, "-");
	if (!u)
		return;
	cell_num(r, COL_CALLS_MINUTE, u->calls_last_minute, "%u", u->calls_last_minute);
	char b[16], l[16], spark[64];
	if (u->disk_unix_ms) {
		fmt_bytes(b, sizeof b, u->disk_bytes);
		cell_num(r, COL_DISK, (int64_t)u->disk_bytes, "%s", b);
	}
	sparkline(spark, sizeof spark, u, a->utf8);
	cell_num(r, COL_SPARK,
		 u->n_history ? (int64_t)u->history[u->n_history - 1].cpu_millicores : -1, "%s",
		 spark);
	if (!u->measured)
		return;
	cell_num(r, COL_CPU, u->cpu_millicores, "%u", (u->cpu_millicores + 5) / 10);
	fmt_bytes(b, sizeof b, u->memory_bytes);
	fmt_bytes(l, sizeof l, u->memory_limit_bytes);
	cell_num(r, COL_MEM, (int64_t)u->memory_bytes, "%s/%s", b, l);
	cell_num(r, COL_PIDS, u->pids, "%u", u->pids);
}

/* A new usage answer: the rows keep their places, their figures change. */
static void usage_changed(struct app *a, struct view *v)
{
	for (size_t i = 0; i < v->t.n; i++)
		usage_cells(a, &v->t.rows[i]);
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_index(&v->t, v->filter, keep);
}

/* ---- light: a store opened with --db (a copy, maybe days old) has no
 * "now" of its own: IDLE is when the last call (else the opening) was and
 * EXPIRES when the lifetime ends, as UTC times (B24; copy_time.h: the day
 * when not today), not ages against this console's clock. */

static void loaded(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	int64_t now = wall_ms();
	/* ---- fleet: the hosts whose rows are old, named in the title ---- */
	char silent[120] = "";
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].host_stale)
			continue;
		char name[72];
		snprintf(name, sizeof name, " %s ", rows[i].host);
		char have[124];
		snprintf(have, sizeof have, " %s ", silent);
		if (!strstr(have, name) && strlen(silent) + strlen(rows[i].host) + 2 < sizeof silent)
			snprintf(silent + strlen(silent), sizeof silent - strlen(silent), "%s%s",
				 *silent ? " " : "", rows[i].host);
	}
	if (*silent && strncmp(v->arg, "host:", 5))
		snprintf(v->sub, sizeof v->sub, "(not answering: %.100s, rows ~ old)", silent);
	for (size_t i = 0; i < n; i++) {
		const struct ui_session *s = &rows[i];
		if (*v->arg && strncmp(v->arg, "host:", 5) && strcmp(s->run_key, v->arg))
			continue; /* drilled from a run */
		if (!strncmp(v->arg, "host:", 5) && strcmp(s->host, v->arg + 5))
			continue; /* ---- fleet: drilled from a host ---- */
		if (!((struct sb_view *)v->priv)->all && !*v->arg && !strcmp(s->state, "ended"))
			continue;
		/* ---- fleet: a host that did not answer: its rows are its last
		 * word, dim, the host marked with ~ (no colour needed) ---- */
		struct trow *r = table_add(&v->t, s->fp, s->host_stale ? C_DIM : theme_for_state(s->state));
		table_cell(r, COL_HOST, "%s%s", s->host, s->host_stale ? "~" : "");
		table_cell(r, 0, "%.12s", s->fp);
		table_cell(r, 1, "%s", !strcmp(s->state, "ended") && *s->end_reason ? s->end_reason : s->state);
		/* ---- truth: a session running a cell is not idle (B18) ---- */
		char ran[16];
		fmt_age(ran, sizeof ran, s->call_started_ms, now);
		/* "running 119s" is wider than the column: "busy 119s" then. */
		if (s->call_started_ms)
			table_cell(r, 1, "%s %s", strlen(ran) + 8 <= (size_t)widths[1] ? "running" : "busy",
				   ran);
		table_cell(r, 2, "%s", s->tier);
		table_cell(r, 3, "%s", *s->floor ? s->floor : "-");
		table_cell(r, 4, "%llu", (unsigned long long)s->calls);
		char idle[16], exp[16];
		fmt_age(idle, sizeof idle, s->last_call_ms ? s->last_call_ms : s->created_ms, now);
		if (s->expires_ms > now && strcmp(s->state, "ended"))
			fmt_age(exp, sizeof exp, now, s->expires_ms);
		else
			snprintf(exp, sizeof exp, "-");
		if (!a_of(v)->src->ops->has_engine) { /* ---- light ---- */
			int64_t idle_ms = s->last_call_ms ? s->last_call_ms : s->created_ms;
			copy_time(idle, sizeof idle, idle_ms, now);
			if (strcmp(s->state, "ended"))
				copy_time(exp, sizeof exp, s->expires_ms, now);
			else
				snprintf(exp, sizeof exp, "-");
			/* ---- report: sorted by the time, not by its text ---- */
			table_num(r, 5, idle_ms);
			table_num(r, 6, strcmp(s->state, "ended") ? s->expires_ms : 0);
		}
		table_cell(r, 5, "%s", s->call_started_ms ? "-" : idle);
		table_cell(r, 6, "%s", exp);
		table_cell(r, 7, "%s", *s->owner ? s->owner : "-"); /* cut with "…", whole when wide */
		/* "mine": this console opened it and may run cells in it. */
		table_cell(r, 8, "%s", s->mine ? "mine" : *s->principal ? s->principal : "-");
		/* Drawn only wide, but `/` and `:sb ARG` find them: the run a
		 * sandbox served and its runtime name. */
		table_cell(r, COL_RUN, "%s", *s->run_key ? s->run_key : "-");
		table_cell(r, COL_SANDBOX, "%s", s->sandbox);
		usage_cells(a_of(v), r);
	}
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		struct sb_view *p = calloc(1, sizeof *p);
		if (!p)
			abort();
		p->all = !a->src->ops->has_engine;
		v->priv = p;
	}
	v->loading++;
	if (!strncmp(v->arg, "host:", 5)) /* ---- fleet ---- */
		snprintf(v->sub, sizeof v->sub, "(host %.100s)", v->arg + 5);
	else if (*v->arg)
		snprintf(v->sub, sizeof v->sub, "(run %.100s)", v->arg);
	else
		snprintf(v->sub, sizeof v->sub, "%s", ((struct sb_view *)v->priv)->all ? "(ended too)" : "");
	a->src->ops->sessions(a->src, loaded, v);
}

/* ---- actions ---- */

struct act {
	struct app *a;
	char verb[16];
	char fp[sizeof ((struct trow *)0)->key]; /* the row's key, whole */
};

static void acted(void *arg, const char *err)
{
	struct act *x = arg;
	app_busy(x->a, "");
	if (err)
		app_flash(x->a, C_BAD, "%s %.12s: %s", x->verb, x->fp, err);
	else
		app_flash(x->a, C_GOOD, "%s %.12s: done", x->verb, x->fp);
	app_refresh(x->a);
	free(x);
}

static void act_now(struct app *a, const char *verb, const char *fp)
{
	struct act *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->a = a;
	snprintf(x->verb, sizeof x->verb, "%s", verb);
	snprintf(x->fp, sizeof x->fp, "%s", fp);
	char what[64];
	snprintf(what, sizeof what, "%s %.12s", verb, fp);
	app_busy(a, what);
	a->src->ops->action(a->src, verb, fp, acted, x);
}

static void confirmed(struct app *a, const char *text, void *arg)
{
	struct act *x = arg;
	if (text)
		act_now(a, x->verb, x->fp);
	free(x);
}

static void ask(struct app *a, const char *verb, const char *fp)
{
	struct act *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	snprintf(x->verb, sizeof x->verb, "%s", verb);
	snprintf(x->fp, sizeof x->fp, "%s", fp);
	char q[128];
	snprintf(q, sizeof q, "%s sandbox %.12s?", verb, fp);
	prompt_confirm(a, q, confirmed, x);
}

static void opened(void *arg, const char *fp, const char *err)
{
	struct app *a = arg;
	app_busy(a, "");
	if (err) {
		app_flash(a, C_BAD, "open: %s", err);
	} else {
		app_flash(a, C_GOOD, "opened %.12s (yours, selected: x runs a cell in it)", fp);
		/* The selection moves to it when the refresh brings it (B9). */
		for (struct view *v = a->view; v; v = v->below)
			if (v->ops == &view_sandboxes)
				snprintf(v->t.want, sizeof v->t.want, "%s", fp);
	}
	app_refresh(a);
}

/* "tier floor owner", each optional: "", "container", "kernel kernel o1". */
static void open_with(struct app *a, const char *text, void *arg)
{
	(void)arg;
	char tier[16] = "", floor[16] = "", owner[80] = "";
	sscanf(text, "%15s %15s %79s", tier, floor, owner);
	if (!strcmp(tier, "-"))
		tier[0] = '\0';
	if (!strcmp(floor, "-"))
		floor[0] = '\0';
	/* A tier this build does not know is named with the ones it does. */
	enum bh_tier t;
	const char *bad = *tier && bh_tier_parse(tier, &t) < 0 ? tier : *floor && bh_tier_parse(floor, &t) < 0 ? floor : NULL;
	if (bad) {
		app_flash(a, C_BAD, "open: unknown tier \"%.15s\" (tiers: container, kernel, vm; offered here: %s)",
			  bad, a->tiers);
		return;
	}
	app_busy(a, "opening a sandbox");
	a->src->ops->open(a->src, tier, floor, owner, opened, a);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	const struct trow *sel = table_selected(&v->t);
	/* ---- procs: inside the selected sandbox ---- */
	if (r == REQ_PROCS || r == REQ_FILES) {
		if (!sel)
			app_flash(a, C_WARN, "no sandbox selected");
		else
			app_push(a, r == REQ_PROCS ? &view_processes : &view_files, sel->key);
		return REQ_NONE;
	}
	if (r == REQ_CAPTURE_SESSION) { /* ---- capture: a live session, through its init ---- */
		char name[13];
		if (!sel) {
			app_flash(a, C_WARN, "no sandbox selected");
			return REQ_NONE;
		}
		snprintf(name, sizeof name, "%.12s", sel->key);
		capture_ask(a, sel->key, name);
		return REQ_NONE;
	}
	switch (r) {
	case REQ_OPEN:
		prompt_text(a, "open sandbox [tier floor owner] (enter: defaults): ", "", open_with, NULL);
		return REQ_NONE;
	case REQ_ALL:
		((struct sb_view *)v->priv)->all = !((struct sb_view *)v->priv)->all;
		load(a, v);
		return REQ_NONE;
	/* ---- truth ---- */
	case REQ_DESCRIBE:
		if (sel)
			app_push(a, &view_describe, sel->key);
		else
			app_flash(a, C_WARN, "no sandbox selected");
		return REQ_NONE;
	case REQ_RUN:
	case REQ_PAUSE:
	case REQ_RESUME:
	case REQ_HIBERNATE:
	case REQ_CLOSE:
	case REQ_KILL:
		break;
	default:
		return r;
	}
	if (!sel) {
		app_flash(a, C_WARN, "no sandbox selected");
		return REQ_NONE;
	}
	switch (r) {
	case REQ_RUN:
		if (!sel->cells[8] || strcmp(sel->cells[8], "mine")) {
			app_flash(a, C_WARN, "cells run only in sandboxes this console opened (n opens one)");
			break;
		}
		prompt_cell(a, sel->key, NULL); /* the language of the last cell */
		break;
	case REQ_PAUSE:
		act_now(a, "pause", sel->key);
		break;
	case REQ_RESUME:
		act_now(a, "resume", sel->key);
		break;
	case REQ_HIBERNATE:
		/* Only gVisor checkpoints here (sandbox_can_hibernate): said
		 * before anything is asked of the engine. */
		if (sel->cells[2] && !strcmp(sel->cells[2], "container")) {
			app_flash(a, C_WARN,
				  "hibernate %.12s: the container tier cannot hibernate (kernel tier only)",
				  sel->key);
			break;
		}
		act_now(a, "hibernate", sel->key);
		break;
	case REQ_CLOSE:
		ask(a, "close", sel->key);
		break;
	case REQ_KILL:
		ask(a, "kill", sel->key);
		break;
	default:
		break;
	}
	return REQ_NONE;
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	app_push(a, &view_records, row->key);
}

static void done(struct view *v)
{
	free(v->priv);
}

const struct view_ops view_sandboxes = {
	.done = done,
	.name = "sandboxes",
	.alias = "sb",
	.title = "Sandboxes",
	.ncols = N_COLS,
	.nwide = N_ALL - N_COLS,
	.types = types,
	.headers = headers,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
	/* ---- usage ---- */
	.order = order,
	.n_order = sizeof order / sizeof order[0],
	.drop = drop,
	.fleet_cols = 1u << COL_HOST,
	.live_cols = 1u << COL_CPU | 1u << COL_MEM | 1u << COL_PIDS | 1u << COL_DISK |
		     1u << COL_CALLS_MINUTE | 1u << COL_SPARK,
	.usage = usage_changed,
};
