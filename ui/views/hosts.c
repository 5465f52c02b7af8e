/* Hosts (:hosts, a fleet's console only): every host the fleet's bucket
 * holds, gone ones too, with what it heartbeats — its tiers, sessions,
 * hibernated ones, memory against its budget, load, pool and how old its
 * last heartbeat is — and where its operator API is. d drains a host, u
 * undrains it (each after [y/N]); enter shows its sandboxes. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const headers[] = {"HOST", "STATE",  "TIERS", "SESS", "HIB",
				      "MEMORY", "LOAD", "POOL", "BEAT", "API"};
static const int widths[] = {10, 8, 16, 4, 3, 10, 4, 4, 5, 0};
enum { COL_HOST, COL_STATE, COL_TIERS, COL_SESS, COL_HIB, COL_MEM, COL_LOAD, COL_POOL, COL_BEAT,
       COL_API, N_COLS };
_Static_assert(sizeof headers / sizeof headers[0] == N_COLS, "every column named");
_Static_assert(sizeof widths / sizeof widths[0] == N_COLS, "a width per column");
static const enum col_type types[N_COLS] = {
	[COL_SESS] = COL_NUMBER, [COL_HIB] = COL_NUMBER, [COL_MEM] = COL_NUMBER,
	[COL_LOAD] = COL_NUMBER, [COL_POOL] = COL_NUMBER, [COL_BEAT] = COL_DURATION,
};
/* On a narrow screen the API goes first, then the pool and the tiers. */
static const int drop[N_COLS] = {[COL_API] = 3, [COL_POOL] = 2, [COL_TIERS] = 1};

static uint64_t mono_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "512/4096M", or in G when the budget is 10 G or more. */
static void memory_text(char *buf, size_t n, uint32_t used_mb, uint32_t budget_mb)
{
	if (!budget_mb)
		snprintf(buf, n, "%uM/-", used_mb);
	else if (budget_mb >= 10240)
		snprintf(buf, n, "%.1f/%uG", used_mb / 1024.0, budget_mb / 1024);
	else
		snprintf(buf, n, "%u/%uM", used_mb, budget_mb);
}

static const char *state_of(const struct ui_host *h)
{
	if (h->left)
		return "left";
	if (h->h.gone)
		return "gone";
	if (h->h.draining)
		return "draining";
	if (!h->answering)
		return "silent"; /* it heartbeats, its API does not answer */
	return "live";
}

static enum ui_color color_of(const char *state)
{
	if (!strcmp(state, "live"))
		return C_GOOD;
	if (!strcmp(state, "draining") || !strcmp(state, "silent"))
		return C_WARN;
	return C_BAD;
}

static void loaded(void *arg, const struct ui_host *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	uint64_t now = mono_now_ms();
	size_t gone = 0, silent = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ui_host *h = &rows[i];
		const char *state = state_of(h);
		gone += h->h.gone;
		silent += !h->h.gone && !h->answering;
		struct trow *r = table_add(&v->t, h->h.id, color_of(state));
		char buf[64];
		table_cell(r, COL_HOST, "%s", h->h.id);
		table_cell(r, COL_STATE, "%s", state);
		bh_tier_set_text(h->h.tiers, buf, sizeof buf);
		table_cell(r, COL_TIERS, "%s", buf);
		table_cell(r, COL_SESS, "%u", h->h.sessions);
		table_cell(r, COL_HIB, "%u", h->h.hibernated);
		memory_text(buf, sizeof buf, h->h.memory_used_mb, h->h.memory_budget_mb);
		table_cell(r, COL_MEM, "%s", buf);
		table_num(r, COL_MEM, h->h.memory_used_mb);
		table_cell(r, COL_LOAD, "%.2f", h->h.load1);
		table_cell(r, COL_POOL, "%u", h->h.pool_ready);
		/* The age by this console's clock: when it last saw a
		 * heartbeat, not what the host's own clock said. */
		if (h->h.seen_mono_ms > 0 && (uint64_t)h->h.seen_mono_ms <= now) {
			fmt_age(buf, sizeof buf, h->h.seen_mono_ms, (int64_t)now);
			table_cell(r, COL_BEAT, "%s", buf);
		} else {
			table_cell(r, COL_BEAT, "-");
		}
		/* What answers, and when it does not, why (whole on ctrl-w). */
		if (*h->why && strcmp(state, "live") && strcmp(state, "draining"))
			table_cell(r, COL_API, "%s (%s)", *h->h.api ? h->h.api : "-", h->why);
		else
			table_cell(r, COL_API, "%s", *h->h.api ? h->h.api : "-");
		snprintf(r->copy, sizeof r->copy, "%.79s", h->h.api);
	}
	if (gone || silent)
		snprintf(v->sub, sizeof v->sub, "(%zu gone, %zu not answering)", gone, silent);
	else
		v->sub[0] = '\0';
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	if (!a->src->ops->hosts) {
		v->loading++;
		loaded(v, NULL, 0,
		       "hosts are a fleet's: open the console on one (bulkhead console --fleet nats://HOST:4222)");
		return;
	}
	v->loading++;
	a->src->ops->hosts(a->src, loaded, v);
}

/* ---- drain and undrain, each after [y/N] ---- */

struct drain_ask {
	struct app *a;
	char host[BH_FLEET_ID_MAX + 1];
	bool on;
};

static void drained(void *arg, const char *err)
{
	struct drain_ask *x = arg;
	app_busy(x->a, "");
	if (err)
		app_flash(x->a, C_BAD, "%s %s: %s", x->on ? "drain" : "undrain", x->host, err);
	else
		app_flash(x->a, C_GOOD, "%s %s: asked (the host %s)", x->on ? "drain" : "undrain",
			  x->host, x->on ? "places nothing new and hibernates what it can" : "places again");
	app_refresh(x->a);
	free(x);
}

static void drain_confirmed(struct app *a, const char *text, void *arg)
{
	struct drain_ask *x = arg;
	if (!text) {
		free(x);
		return;
	}
	app_busy(a, x->on ? "draining" : "undraining");
	a->src->ops->drain(a->src, x->host, x->on, drained, x);
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	if (r != REQ_DRAIN && r != REQ_UNDRAIN)
		return r;
	const struct trow *sel = table_selected(&v->t);
	if (!sel) {
		app_flash(a, C_WARN, "no host selected");
		return REQ_NONE;
	}
	if (!a->src->ops->drain) {
		app_flash(a, C_WARN, "drain is a fleet's (bulkhead console --fleet URLS)");
		return REQ_NONE;
	}
	struct drain_ask *x = xzalloc(sizeof *x);
	x->a = a;
	x->on = r == REQ_DRAIN;
	snprintf(x->host, sizeof x->host, "%.64s", sel->key);
	char q[200];
	if (x->on)
		snprintf(q, sizeof q, "drain host %s (it places nothing new, hibernates what it can)?",
			 x->host);
	else
		snprintf(q, sizeof q, "undrain host %s (it places sessions again)?", x->host);
	prompt_confirm(a, q, drain_confirmed, x);
	return REQ_NONE;
}

/* enter: the host's sandboxes (esc comes back here). */
static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	char arg[BH_FLEET_ID_MAX + 8];
	snprintf(arg, sizeof arg, "host:%.64s", row->key);
	app_push(a, &view_sandboxes, arg);
}

const struct view_ops view_hosts = {
	.name = "hosts",
	.alias = "ho",
	.title = "Hosts",
	.ncols = N_COLS,
	.headers = headers,
	.widths = widths,
	.types = types,
	.drop = drop,
	.load = load,
	.request = request,
	.enter = enter,
};
