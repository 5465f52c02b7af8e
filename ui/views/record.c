/* One record: every field, its digest recomputed from them, and its link
 * to the previous record of its session — green when both hold, red with
 * the field that does not match when not. */
#include "app.h"
#include "record.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct detail {
	bool have;
	struct ui_record rec;
	bool have_prev;   /* the session's previous record */
	char prev_digest[65];
	bool prev_checked;
	/* ---- approvals: who let this call through, from its approval events ---- */
	char approval[200]; /* "approved by ops"; "" when it was never held */
	char approval_reason[200];
	int64_t approval_at, held_at;
	bool approvals_asked; /* once per view: a record's approval does not change */
};

/* The predecessor, looked up by (session, sequence - 1): however long the
 * session, never a page of it that may not hold the one before. */
static void previous_loaded(void *arg, const struct ui_record *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct detail *d = v->priv;
	d->prev_checked = true;
	for (size_t i = 0; i < n; i++)
		if (rows[i].sequence + 1 == d->rec.sequence && !strcmp(rows[i].session, d->rec.session)) {
			d->have_prev = true;
			snprintf(d->prev_digest, sizeof d->prev_digest, "%s", rows[i].record);
		}
}

/* ---- approvals ---- */
/* The approval events naming this record's request digest (docs/api.md,
 * Approvals: "WHAT; request SHA; ...; reason: REASON"), among the newest
 * thousand: the last decision before the call started. */
static void approvals_loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct detail *d = v->priv;
	char key[80];
	snprintf(key, sizeof key, "; request %s;", d->rec.request);
	for (size_t i = 0; i < n; i++) {
		const struct ui_event *e = &rows[i];
		if (strcmp(e->kind, "approval") || strcmp(e->session, d->rec.session) ||
		    !strstr(e->detail, key) || e->at_ms > d->rec.started_ms)
			continue;
		size_t what = strcspn(e->detail, ";");
		if (!strncmp(e->detail, "held", 4)) {
			d->held_at = e->at_ms;
			continue;
		}
		snprintf(d->approval, sizeof d->approval, "%.*s", (int)what, e->detail);
		const char *r = strstr(e->detail, "; reason: ");
		snprintf(d->approval_reason, sizeof d->approval_reason, "%s", r ? r + 10 : "");
		d->approval_at = e->at_ms;
	}
}

static void ask_approvals(struct app *a, struct view *v)
{
	struct ui_page page = {.newest = true, .limit = 1000};
	v->loading++;
	a->src->ops->events(a->src, &page, approvals_loaded, v);
}

struct lookup {
	struct app *a;
	struct view *v;
};

static void loaded(void *arg, const struct ui_record *rows, size_t n, const char *err)
{
	struct lookup *l = arg;
	struct view *v = l->v;
	struct app *a = l->a;
	free(l);
	if (!view_answered(v, err))
		return;
	struct detail *d = v->priv;
	for (size_t i = 0; i < n; i++)
		if (rows[i].id == strtoll(v->arg, NULL, 10)) {
			d->have = true;
			d->rec = rows[i];
		}
	if (d->have && !d->approvals_asked) { /* ---- approvals ---- */
		d->approvals_asked = true;
		ask_approvals(a, v);
	}
	if (d->have && *d->rec.session && d->rec.sequence > 1) {
		v->loading++;
		a->src->ops->record_at(a->src, d->rec.session, d->rec.sequence - 1, previous_loaded, v);
	} else {
		d->prev_checked = true;
	}
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct detail));
		if (!v->priv)
			abort();
	}
	/* "ID" or "ID SESSION" (records and search say whose it is). */
	char *after_id = NULL;
	long long id = strtoll(v->arg, &after_id, 10);
	const char *session = after_id && *after_id == ' ' ? after_id + 1 : NULL;
	snprintf(v->sub, sizeof v->sub, "(record %lld)", id);
	struct lookup *l = calloc(1, sizeof *l);
	if (!l)
		abort();
	*l = (struct lookup){.a = a, .v = v};
	v->loading++;
	struct ui_page page = {.after = id > 0 ? id - 1 : 0, .limit = 1};
	a->src->ops->records(a->src, session && *session ? session : NULL, &page, loaded, l);
}

/* One line from column 2, clipped to the screen: a line that ran past the
 * edge would wrap and the next line would overwrite its tail. */
static void line_at(int y, int cols, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line_at(int y, int cols, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (cols > 2)
		draw_clipped(y, 2, cols - 2, buf); /* a digest cut ends in "…" */
}

static void field(int *y, int cols, const char *name, const char *value)
{
	line_at((*y)++, cols, "%-18s %s", name, value && *value ? value : "-");
}

static void draw(struct app *a, struct view *v, int top, int bottom)
{
	struct detail *d = v->priv;
	int y = top + 1;
	if (!d || !d->have) {
		mvprintw(y, 2, "%s",
			 v->loading > 0 ? "loading..."
			 : *v->stale    ? "not loaded (the title says why)"
					: "no such record");
		return;
	}
	const struct ui_record *r = &d->rec;
	char buf[160];
	snprintf(buf, sizeof buf, "%d", r->version);
	field(&y, a->cols, "version", buf);
	field(&y, a->cols, "session", r->session);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)r->sequence);
	field(&y, a->cols, "sequence", buf);
	field(&y, a->cols, "request_sha256", r->request);
	field(&y, a->cols, "result_sha256", r->result);
	if (r->version == 3)
		field(&y, a->cols, "unanswered", r->unanswered);
	field(&y, a->cols, "provider", r->provider);
	field(&y, a->cols, "isolation", r->isolation);
	field(&y, a->cols, "environment", r->environment);
	/* Absolute UTC, to the millisecond, and how long it took (B28). */
	fmt_utc_ms(buf, sizeof buf, r->started_ms);
	field(&y, a->cols, "started", buf);
	char ended[48];
	fmt_utc_ms(ended, sizeof ended, r->ended_ms);
	snprintf(buf, sizeof buf, "%s (%lld ms)", ended, (long long)(r->ended_ms - r->started_ms));
	field(&y, a->cols, "ended", buf);
	field(&y, a->cols, "previous_sha256", r->previous);
	field(&y, a->cols, "record_sha256", r->record);
	snprintf(buf, sizeof buf, "%s, exit %d, %s", *r->language ? r->language : "-", r->exit_code,
		 *r->flags ? r->flags : "no flags");
	field(&y, a->cols, "call", buf);
	if (*d->approval) { /* ---- approvals ---- */
		char at[32] = "-", line[320];
		time_t t = (time_t)(d->approval_at / 1000);
		struct tm tm;
		if (gmtime_r(&t, &tm))
			strftime(at, sizeof at, "%Y-%m-%d %H:%M:%S", &tm);
		if (d->held_at && d->approval_at >= d->held_at)
			snprintf(line, sizeof line, "%s at %s UTC, held %lld ms", d->approval, at,
				 (long long)(d->approval_at - d->held_at));
		else
			snprintf(line, sizeof line, "%s at %s UTC", d->approval, at);
		field(&y, a->cols, "approval", line);
		if (*d->approval_reason)
			field(&y, a->cols, "approval reason", d->approval_reason);
	}
	y++;
	/* Verification, on screen. */
	struct bh_record b;
	ui_record_to_bh(r, &b);
	char stored[65];
	snprintf(stored, sizeof stored, "%s", b.record_sha256);
	bh_record_seal(&b);
	bool digest_ok = !strcmp(stored, b.record_sha256);
	if (y < bottom) {
		attron(theme_attr(digest_ok ? C_GOOD : C_BAD) | A_BOLD);
		if (digest_ok)
			line_at(y++, a->cols, "record_sha256 verifies: recomputed from the fields above");
		else
			line_at(y++, a->cols, "record_sha256 DOES NOT MATCH: recomputed %.10s..., stored %.10s...",
				 b.record_sha256, stored);
		attroff(theme_attr(digest_ok ? C_GOOD : C_BAD) | A_BOLD);
	}
	if (y < bottom && *r->session && r->sequence > 1 && d->prev_checked) {
		bool link_ok = d->have_prev && !strcmp(d->prev_digest, r->previous);
		attron(theme_attr(link_ok ? C_GOOD : C_BAD) | A_BOLD);
		if (link_ok)
			line_at(y++, a->cols, "chain holds: previous_sha256 is record #%llu's digest",
				 (unsigned long long)(r->sequence - 1));
		else if (!d->have_prev)
			line_at(y++, a->cols, "chain BROKEN: no record #%llu in this session",
				 (unsigned long long)(r->sequence - 1));
		else
			line_at(y++, a->cols, "chain BROKEN: previous_sha256 %.12s... is not #%llu's %.12s...",
				 r->previous, (unsigned long long)(r->sequence - 1), d->prev_digest);
		attroff(theme_attr(link_ok ? C_GOOD : C_BAD) | A_BOLD);
	}
}

static void done(struct view *v)
{
	free(v->priv);
}

/* `c` copies the record's digest, whole. */
static enum request request(struct app *a, struct view *v, enum request r)
{
	struct detail *d = v->priv;
	if (r != REQ_COPY)
		return r;
	if (d && d->have)
		app_copy(a, "", d->rec.record);
	else
		app_flash(a, C_WARN, "no record loaded: nothing to copy");
	return REQ_NONE;
}

const struct view_ops view_record = {
	.name = "record",
	.title = "Record",
	.load = load,
	.draw = draw,
	.done = done,
	.request = request,
};

/* ---- hops: a record handed over, not looked up (the replay's receipt) ---- */
/* The run record a recorded SessionRun answer carried, drawn and verified
 * by this view's own draw: the replay shows the receipt of a call with the
 * verifier every record gets. A replay has no store, so nothing is looked
 * up: no predecessor (the chain line is left out, the title says so) and no
 * approval events. */
static void receipt_load(struct app *a, struct view *v)
{
	(void)a;
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct detail));
		if (!v->priv)
			abort();
	}
	snprintf(v->sub, sizeof v->sub, "(a recorded call's receipt: no store in a replay, so no chain)");
}

static const struct view_ops view_receipt = {
	.name = "receipt",
	.title = "Receipt",
	.load = receipt_load,
	.draw = draw,
	.done = done,
	.request = request,
	.sourceless = true,
};

void record_view_open_receipt(struct app *a, const struct ui_record *r)
{
	struct view *v = app_push(a, &view_receipt, r->record);
	struct detail *d = v->priv;
	d->have = true;
	d->rec = *r;
	d->approvals_asked = true;
}
