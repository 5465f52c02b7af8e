/* Describe (`d` on a sandbox, k9s's key): every field of one session, one
 * to a row — absolute UTC times, the digests whole, the policy clocks, the
 * cell in flight with its code and how long it has run, and how it ended.
 *
 * A refresh costs what the sandboxes view's costs: the one sessions list the
 * header shares (source.h). The code of a cell in flight is not in the list
 * (it is up to 256 KiB); it is asked for once per cell (session_detail),
 * when a new cell is seen running. The code is the agent's, so hostile:
 * control bytes are shown as '?', never sent to the terminal. */
#include "app.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"FIELD", "VALUE"};
static const int widths[] = {12, 0};

struct describe {
	struct ui_session row;
	bool have_row;
	int64_t code_for; /* the call_started_ms whose code is kept */
	char *code;
};

static struct describe *D(struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct describe));
		if (!v->priv)
			abort();
	}
	return v->priv;
}

static void field(struct view *v, const char *name, enum ui_color c, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void field(struct view *v, const char *name, enum ui_color c, const char *fmt, ...)
{
	char key[32];
	snprintf(key, sizeof key, "%zu", v->t.n);
	struct trow *r = table_add(&v->t, key, c);
	table_cell(r, 0, "%s", name);
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		abort();
	va_end(ap);
	/* Every value may be hostile (the code, a daemon's words): a byte a
	 * terminal would act on is shown as '?'. */
	for (char *p = text; *p; p++)
		if (*p == '\t')
			*p = ' ';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	table_cell(r, 1, "%s", text);
	free(text);
}

/* "UTC time (in 4m)" or "(3s ago)": at most WHEN_MAX bytes (utc, age and
 * the words around them). */
#define WHEN_MAX (48 + 16 + 16)
static void when(char *buf, size_t n, int64_t at_ms, int64_t now)
{
	char utc[48], age[16];
	fmt_utc(utc, sizeof utc, at_ms);
	if (at_ms <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	fmt_age(age, sizeof age, at_ms, now);
	snprintf(buf, n, "%s (%s%s%s)", utc, at_ms > now ? "in " : "", age, at_ms > now ? "" : " ago");
}

/* A policy clock: "in 4m58s, at hh:mm:ss UTC" — or why it is not running. */
static void clock_field(struct view *v, const char *name, int64_t at_ms, int64_t now,
			const char *stopped)
{
	if (at_ms <= 0) {
		field(v, name, C_DIM, "%s", stopped);
		return;
	}
	char at[WHEN_MAX];
	when(at, sizeof at, at_ms, now);
	field(v, name, C_NORMAL, "%s", at);
}

/* The code, a row a line (field shows what a terminal would act on as '?'). */
static void code_rows(struct view *v, const char *code)
{
	const char *p = code;
	int line = 0;
	do {
		size_t len = strcspn(p, "\n");
		field(v, line++ ? "" : "code", C_WARN, "%.*s", (int)len, p);
		p += len + (p[len] == '\n');
	} while (*p);
}

static void fill(struct view *v)
{
	struct describe *d = D(v);
	const struct ui_session *s = &d->row;
	int64_t now = (int64_t)now_real_ms();
	table_clear(&v->t);
	char text[160];
	field(v, "session", C_NORMAL, "%s", s->fp);
	bool ended = !strcmp(s->state, "ended");
	bool running = s->call_started_ms > 0;
	if (running) {
		fmt_age(text, sizeof text, s->call_started_ms, now);
		field(v, "state", C_WARN, "%s: a %s cell in flight, running %s", s->state,
		      s->call_language, text);
		char at[64];
		fmt_utc(at, sizeof at, s->call_started_ms);
		field(v, "call since", C_WARN, "%s", at);
		if (d->code && d->code_for == s->call_started_ms)
			code_rows(v, d->code);
		else
			field(v, "code", C_DIM, "(asking the source for it)");
	} else {
		field(v, "state", theme_for_state(s->state), "%s", s->state);
	}
	field(v, "sandbox", C_NORMAL, "%s", *s->sandbox ? s->sandbox : "-");
	if (*s->floor)
		field(v, "tier", C_NORMAL, "%s against the floor %s", s->tier, s->floor);
	else
		field(v, "tier", C_NORMAL, "%s (no floor asked)", s->tier);
	/* The environment's digest is 88 characters: the digest on a row of its
	 * own, whole, at 80 columns. */
	const char *colon = strrchr(s->evidence, ':');
	if (colon && colon > s->evidence) {
		field(v, "evidence", C_NORMAL, "%.*s", (int)(colon - s->evidence + 1), s->evidence);
		field(v, "", C_NORMAL, "%s", colon + 1);
	} else {
		field(v, "evidence", C_DIM, "%s", *s->evidence ? s->evidence : "(its tier is not proven)");
	}
	field(v, "principal", C_NORMAL, "%s", *s->principal ? s->principal : "-");
	field(v, "owner", C_NORMAL, "%s", *s->owner ? s->owner : "(none named)");
	field(v, "run", C_NORMAL, "%s", *s->run_key ? s->run_key : "(no run key)");
	/* ---- egress: only for a session that holds a profile or used the
	 * broker (a granted call): the rest have nothing to say here ---- */
	if (*s->egress_profile)
		field(v, "egress", C_NORMAL, "profile %s, held from open to close", s->egress_profile);
	if (*s->egress_profile || s->egress_requests) {
		field(v, "brokered", C_NORMAL, "%llu request%s", (unsigned long long)s->egress_requests,
		      s->egress_requests == 1 ? "" : "s");
		if (*s->egress_last)
			field(v, "", strstr(s->egress_last, ", refused: ") ? C_WARN : C_DIM, "%s",
			      s->egress_last);
	}
	field(v, "calls", C_NORMAL, "%llu", (unsigned long long)s->calls);
	field(v, "last record", C_NORMAL, "%s", *s->last_record ? s->last_record : "(none yet)");
	when(text, sizeof text, s->created_ms, now);
	field(v, "created", C_NORMAL, "%s", text);
	when(text, sizeof text, s->last_call_ms, now);
	field(v, "last call", C_NORMAL, "%s", s->last_call_ms ? text : "(no call yet)");
	field(v, "awake", C_NORMAL, "%llus of its lifetime used",
	      (unsigned long long)(s->awake_ms / 1000));
	const char *stopped = ended ? "(ended)" : running ? "(a call is running: the clock restarts after it)"
							  : "(not running in this state)";
	clock_field(v, "pauses", s->pauses_ms, now, stopped);
	/* Paused that long, a kernel-tier session hibernates; the container
	 * tier cannot checkpoint, so it closes (idle_closed) instead. */
	clock_field(v, strcmp(s->tier, "container") ? "hibernates" : "closes idle", s->hibernates_ms,
		    now, ended ? "(ended)" : stopped);
	clock_field(v, "expires", ended ? 0 : s->expires_ms, now, ended ? "(ended)" : "-");
	if (ended)
		field(v, "end", C_BAD, "%s%s%s", *s->end_reason ? s->end_reason : "ended",
		      *s->end_detail ? ": " : "", s->end_detail);
	else
		field(v, "end", C_DIM, "(live)");
	table_index(&v->t, v->filter, NULL);
}

static void detailed(void *arg, const struct ui_session *row, const char *code, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct describe *d = D(v);
	if (row) {
		d->row = *row;
		d->have_row = true;
		free(d->code);
		d->code = strdup(code ? code : "");
		if (!d->code)
			abort();
		d->code_for = row->call_started_ms;
	}
	fill(v);
}

static void loaded(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct describe *d = D(v);
	const struct ui_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(rows[i].fp, v->arg))
			found = &rows[i];
	if (!found) {
		/* Gone from the list (ended more than ten minutes ago): what was
		 * known stays, marked. */
		view_load_failed(v->app, v, "the source no longer lists this session");
		return;
	}
	d->row = *found;
	d->have_row = true;
	/* A cell not seen before: its code, once. */
	if (found->call_started_ms && found->call_started_ms != d->code_for) {
		v->loading++;
		v->app->src->ops->session_detail(v->app->src, v->arg, detailed, v);
	}
	fill(v);
}

static void load(struct app *a, struct view *v)
{
	snprintf(v->sub, sizeof v->sub, "(session %.12s)", v->arg);
	v->loading++;
	a->src->ops->sessions(a->src, loaded, v);
}

static void done(struct view *v)
{
	struct describe *d = v->priv;
	if (d)
		free(d->code);
	free(d);
}

const struct view_ops view_describe = {
	.name = "describe",
	.title = "Describe",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.done = done,
};
