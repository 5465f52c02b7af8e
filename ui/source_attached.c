/* A daemon, through src/client: every request is an operator call (or, for
 * the console's own sandboxes, a plimsoll session call) answered inside the
 * console's loop from libcurl's multi socket interface. */
#include "source.h"
#include "client.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MINE 64

struct attached {
	struct ui_source base;
	bh_client *c;
	char target[512];
	char tiers[160];
	char served[12]; /* the tier the daemon's calls get (Describe); "" until known */
	int pending;
	struct {
		char fp[65];
		bh_client_session *s;
	} mine[MAX_MINE];
	size_t n_mine;
};

static struct attached *A(struct ui_source *s)
{
	return (struct attached *)s;
}

static void describe(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "attached to %s", A(s)->target);
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	snprintf(buf, n, "%s", *A(s)->tiers ? A(s)->tiers : "...");
}

static int poll_fds(struct ui_source *s, struct pollfd *fds, int max)
{
	size_t n = bh_client_pollfds(A(s)->c, fds, (size_t)max);
	return (int)(n < (size_t)max ? n : (size_t)max);
}

static int timeout_ms(struct ui_source *s)
{
	return bh_client_timeout_ms(A(s)->c);
}

static void process(struct ui_source *s)
{
	/* The loop polled without telling us which socket: let libcurl look
	 * at all of them (it is cheap) and at its timers. */
	struct pollfd fds[32];
	size_t n = bh_client_pollfds(A(s)->c, fds, 32);
	if (n > 32)
		n = 32;
	if (n)
		poll(fds, (nfds_t)n, 0);
	bh_client_process_pollfds(A(s)->c, fds, n);
	bh_client_process_timeout(A(s)->c);
}

static int pending(struct ui_source *s)
{
	return A(s)->pending;
}

/* ---- one operator call with its JSON answer ---- */

typedef void (*json_fn)(struct attached *m, cJSON *answer, const char *err, void *cb, void *arg);

struct op_call {
	struct attached *m;
	json_fn parse;
	void *cb, *arg;
};

static void on_operator(void *arg, const char *json, const struct bh_client_error *err)
{
	struct op_call *o = arg;
	o->m->pending--;
	cJSON *j = json && !err ? cJSON_Parse(json) : NULL;
	o->parse(o->m, j, err ? err->message : (j ? NULL : "the daemon's answer is not JSON"), o->cb,
		 o->arg);
	cJSON_Delete(j);
	free(o);
}

static void operator(struct attached *m, const char *method, const char *body, json_fn parse,
		     void *cb, void *arg)
{
	struct op_call *o = calloc(1, sizeof *o);
	if (!o)
		abort();
	*o = (struct op_call){.m = m, .parse = parse, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_operator_call_async(m->c, method, body, on_operator, o, &err) < 0) {
		m->pending--;
		parse(m, NULL, err ? err->message : "the call could not be made", cb, arg);
		bh_client_error_free(err);
		free(o);
	}
}

static const char *str(const cJSON *o, const char *name)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
	return v ? v : "";
}

static int64_t i64(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (cJSON_IsString(v))
		return strtoll(v->valuestring, NULL, 10);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static bool is_mine(struct attached *m, const char *fp)
{
	for (size_t i = 0; i < m->n_mine; i++)
		if (!strcmp(m->mine[i].fp, fp))
			return true;
	return false;
}

static void parse_sessions(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	ui_sessions_fn fn = (ui_sessions_fn)cb;
	if (err) {
		fn(arg, NULL, 0, err);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "sessions");
	size_t n = (size_t)cJSON_GetArraySize(arr);
	struct ui_session *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		struct ui_session *r = &rows[k++];
		snprintf(r->fp, sizeof r->fp, "%s", str(o, "session"));
		snprintf(r->sandbox, sizeof r->sandbox, "%s", str(o, "sandbox"));
		snprintf(r->state, sizeof r->state, "%s", str(o, "state"));
		snprintf(r->tier, sizeof r->tier, "%s", str(o, "isolation"));
		snprintf(r->floor, sizeof r->floor, "%s", str(o, "minimumIsolation"));
		snprintf(r->principal, sizeof r->principal, "%s", str(o, "principal"));
		snprintf(r->owner, sizeof r->owner, "%s", str(o, "owner"));
		snprintf(r->run_key, sizeof r->run_key, "%s", str(o, "runKey"));
		snprintf(r->last_record, sizeof r->last_record, "%s", str(o, "lastRecordSha256"));
		snprintf(r->end_reason, sizeof r->end_reason, "%s", str(o, "endReason"));
		r->calls = (uint64_t)i64(o, "calls");
		r->awake_ms = (uint64_t)i64(o, "awakeMs");
		r->created_ms = i64(o, "createdUnixMs");
		r->last_call_ms = i64(o, "lastCallUnixMs");
		r->expires_ms = i64(o, "expiresUnixMs");
		r->mine = is_mine(m, r->fp);
	}
	fn(arg, rows, k, NULL);
	free(rows);
}

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	operator(A(s), "ListSessions", "{}", parse_sessions, (void *)cb, arg);
}

static void parse_records(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	(void)m;
	ui_records_fn fn = (ui_records_fn)cb;
	if (err) {
		fn(arg, NULL, 0, err);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "records");
	size_t n = (size_t)cJSON_GetArraySize(arr);
	struct ui_record *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(o, "record");
		char *text = cJSON_PrintUnformatted(rec);
		struct bh_record r;
		struct wire_status st;
		if (text && wire_decode_record(text, strlen(text), &r, &st) == 0) {
			ui_record_from(&rows[k++], i64(o, "id"), &r, str(o, "language"), str(o, "flags"),
				       (int)i64(o, "exitCode"), i64(o, "durationUs"));
			wire_record_free(&r);
		}
		free(text);
	}
	fn(arg, rows, k, NULL);
	free(rows);
}

/* A history page's request: ids travel as strings (int64 in JSON). */
static char *page_body(const char *session, const struct ui_page *page)
{
	cJSON *o = cJSON_CreateObject();
	char id[24];
	if (session)
		cJSON_AddStringToObject(o, "session", session);
	if (page->newest) {
		cJSON_AddBoolToObject(o, "newest", 1);
		if (page->before > 0) {
			snprintf(id, sizeof id, "%lld", (long long)page->before);
			cJSON_AddStringToObject(o, "beforeId", id);
		}
	} else {
		snprintf(id, sizeof id, "%lld", (long long)page->after);
		cJSON_AddStringToObject(o, "afterId", id);
	}
	cJSON_AddNumberToObject(o, "limit", (double)(page->limit ? page->limit : 1000));
	char *body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!body)
		abort();
	return body;
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	char *body = page_body(session, page);
	operator(A(s), "ListRecords", body, parse_records, (void *)cb, arg);
	free(body);
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	cJSON *o = cJSON_CreateObject();
	char seq[24];
	snprintf(seq, sizeof seq, "%llu", (unsigned long long)sequence);
	cJSON_AddStringToObject(o, "session", session);
	cJSON_AddStringToObject(o, "sequence", seq);
	char *body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!body)
		abort();
	operator(A(s), "ListRecords", body, parse_records, (void *)cb, arg);
	free(body);
}

static void parse_events(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	(void)m;
	ui_events_fn fn = (ui_events_fn)cb;
	if (err) {
		fn(arg, NULL, 0, err);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "events");
	size_t n = (size_t)cJSON_GetArraySize(arr);
	struct ui_event *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		struct ui_event *e = &rows[k++];
		e->id = i64(o, "id");
		e->at_ms = i64(o, "atUnixMs");
		snprintf(e->kind, sizeof e->kind, "%s", str(o, "kind"));
		snprintf(e->session, sizeof e->session, "%s", str(o, "session"));
		snprintf(e->sandbox, sizeof e->sandbox, "%s", str(o, "sandbox"));
		snprintf(e->detail, sizeof e->detail, "%s", str(o, "detail"));
	}
	fn(arg, rows, k, NULL);
	free(rows);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	char *body = page_body(NULL, page);
	operator(A(s), "ListEvents", body, parse_events, (void *)cb, arg);
	free(body);
}

static enum bh_leak_kind leak_kind(const char *name)
{
	for (int k = BH_LEAK_ORPHAN; k <= BH_LEAK_STRAY_CGROUP; k++)
		if (!strcmp(bh_leak_kind_name((enum bh_leak_kind)k), name))
			return (enum bh_leak_kind)k;
	return BH_LEAK_ORPHAN;
}

static void parse_leaks(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	(void)m;
	ui_leaks_fn fn = (ui_leaks_fn)cb;
	if (err) {
		fn(arg, NULL, 0, err);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "leaks");
	if (!arr)
		arr = cJSON_GetObjectItemCaseSensitive(j, "reaped");
	size_t n = (size_t)cJSON_GetArraySize(arr);
	struct bh_leak *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		struct bh_leak *l = &rows[k++];
		l->kind = leak_kind(str(o, "kind"));
		snprintf(l->sandbox, sizeof l->sandbox, "%s", str(o, "sandbox"));
		snprintf(l->fingerprint, sizeof l->fingerprint, "%s", str(o, "session"));
		snprintf(l->runtime, sizeof l->runtime, "%s", str(o, "runtime"));
		snprintf(l->reason, sizeof l->reason, "%s", str(o, "reason"));
		snprintf(l->holder, sizeof l->holder, "%s", str(o, "holder"));
		l->first_seen_ms = i64(o, "firstSeenUnixMs");
	}
	fn(arg, rows, k, NULL);
	free(rows);
}

static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	operator(A(s), "Leaks", "{}", parse_leaks, (void *)cb, arg);
}

static void reap(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	operator(A(s), "Gc", "{}", parse_leaks, (void *)cb, arg);
}

static void parse_tiers(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	ui_tiers_fn fn = (ui_tiers_fn)cb;
	if (err) {
		fn(arg, NULL, 0, err);
		return;
	}
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "tiers");
	size_t n = (size_t)cJSON_GetArraySize(arr);
	struct ui_tier *rows = calloc(n ? n : 1, sizeof *rows);
	size_t k = 0, used = 0;
	m->tiers[0] = '\0';
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		struct ui_tier *t = &rows[k++];
		snprintf(t->tier, sizeof t->tier, "%s", str(o, "tier"));
		snprintf(t->runtime, sizeof t->runtime, "%s", str(o, "runtime"));
		snprintf(t->version, sizeof t->version, "%s", str(o, "runtimeVersion"));
		snprintf(t->reason, sizeof t->reason, "%s", str(o, "reason"));
		snprintf(t->environment, sizeof t->environment, "%s", str(o, "environment"));
		t->offered = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "offered"));
		t->cached = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "cached"));
		/* A daemon pinned to a tier (serve --tier) gives calls that tier
		 * even when its engine proved a stronger one: the stronger one is
		 * not offered to them. */
		enum bh_tier served, this;
		if (t->offered && *m->served && bh_tier_parse(m->served, &served) == 0 &&
		    bh_tier_parse(t->tier, &this) == 0 && this > served) {
			t->offered = false;
			snprintf(t->reason, sizeof t->reason,
				 "proven, but this daemon gives calls the %s tier (serve --tier)", m->served);
		}
		if (t->offered && used < sizeof m->tiers)
			used += (size_t)snprintf(m->tiers + used, sizeof m->tiers - used, "%s%s",
						 used ? " " : "", t->tier);
		const cJSON *l;
		cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(o, "evidence"))
		{
			if (t->n_lines >= UI_TIER_LINES)
				break;
			snprintf(t->lines[t->n_lines].name, sizeof t->lines[0].name, "%s", str(l, "check"));
			snprintf(t->lines[t->n_lines].value, sizeof t->lines[0].value, "%s", str(l, "value"));
			snprintf(t->lines[t->n_lines].expect, sizeof t->lines[0].expect, "%s", str(l, "expect"));
			t->lines[t->n_lines].ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "ok"));
			t->n_lines++;
		}
	}
	fn(arg, rows, k, NULL);
	free(rows);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	operator(A(s), "Evidence", "{}", parse_tiers, (void *)cb, arg);
}

static void tiers_quiet(void *arg, const struct ui_tier *rows, size_t n, const char *err)
{
	(void)arg, (void)rows, (void)n, (void)err; /* parse_tiers kept the summary */
}

static void on_describe(void *arg, struct wire_describe_response *res, const struct bh_client_error *err)
{
	struct attached *m = arg;
	m->pending--;
	if (err || !res || !res->isolation)
		return;
	snprintf(m->served, sizeof m->served, "%s", res->isolation);
	tiers(&m->base, tiers_quiet, NULL); /* the header's summary, with that known */
}

static void parse_done(struct attached *m, cJSON *j, const char *err, void *cb, void *arg)
{
	(void)m, (void)j;
	((ui_done_fn)cb)(arg, err);
}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	static const struct {
		const char *verb, *method;
	} map[] = {{"pause", "Pause"}, {"resume", "Resume"}, {"hibernate", "Hibernate"},
		   {"close", "Close"}, {"kill", "Kill"}};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(verb, map[i].verb)) {
			char body[128];
			snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
			operator(A(s), map[i].method, body, parse_done, (void *)cb, arg);
			return;
		}
	cb(arg, "unknown action");
}

/* ---- the console's own sandboxes: plimsoll sessions it holds the ids of ---- */

struct open_call {
	struct attached *m;
	ui_opened_fn cb;
	void *arg;
};

static void on_open(void *arg, bh_client_session *cs, const struct bh_client_error *err)
{
	struct open_call *o = arg;
	struct attached *m = o->m;
	m->pending--;
	if (err) {
		o->cb(o->arg, NULL, err->message);
	} else {
		struct bh_client_session_view v;
		bh_client_session_get(cs, &v);
		if (m->n_mine < MAX_MINE) {
			snprintf(m->mine[m->n_mine].fp, sizeof m->mine[0].fp, "%s", v.fingerprint);
			m->mine[m->n_mine++].s = cs;
		} else {
			bh_client_session_free(cs);
		}
		o->cb(o->arg, v.fingerprint, NULL);
	}
	free(o);
}

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	struct attached *m = A(s);
	(void)tier; /* the daemon decides the tier; a floor refuses what it cannot meet */
	struct bh_client_open_opts o = {.floor = BH_TIER_UNKNOWN, .languages = 1u << BH_LANG_PYTHON,
					.owner = owner && *owner ? owner : NULL};
	if (floor && *floor && bh_tier_parse(floor, &o.floor) < 0) {
		cb(arg, NULL, "unknown floor");
		return;
	}
	struct open_call *oc = calloc(1, sizeof *oc);
	if (!oc)
		abort();
	*oc = (struct open_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_open_async(m->c, &o, on_open, oc, &err) < 0) {
		m->pending--;
		cb(arg, NULL, err ? err->message : "the call could not be made");
		bh_client_error_free(err);
		free(oc);
	}
}

struct run_call {
	struct attached *m;
	ui_answer_fn cb;
	void *arg;
};

static void on_cell(void *arg, struct wire_session_run_response *res, const struct bh_client_error *err)
{
	struct run_call *r = arg;
	r->m->pending--;
	if (err) {
		r->cb(r->arg, NULL, err->message);
	} else {
		const struct bh_result_fields *f = &res->run.result;
		char *out = strndup((const char *)f->out, f->out_len);
		char *errout = strndup((const char *)f->err, f->err_len);
		struct ui_cell_answer a = {
			.exit_code = f->exit_code, .timed_out = f->timed_out,
			.interpreter_started = f->interpreter_started,
			.interpreter_ended = f->interpreter_ended,
			.stdout_truncated = f->stdout_truncated, .stderr_truncated = f->stderr_truncated,
			.out = out, .err = errout,
			.wall_us = (uint64_t)res->run.duration_ms * 1000u,
			.duration_us = (uint64_t)res->run.duration_ms * 1000u,
			.sequence = res->run.record.sequence,
		};
		snprintf(a.record, sizeof a.record, "%s", res->run.record.record_sha256);
		if (res->ended != WIRE_END_OPEN)
			snprintf(a.ended, sizeof a.ended, "%s", wire_session_end_name(res->ended));
		r->cb(r->arg, &a, NULL);
		free(out);
		free(errout);
	}
	free(r);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	struct attached *m = A(s);
	bh_client_session *cs = NULL;
	for (size_t i = 0; i < m->n_mine; i++)
		if (!strcmp(m->mine[i].fp, fp))
			cs = m->mine[i].s;
	if (!cs) {
		cb(arg, NULL, "cells run only in sandboxes this console opened (another client's "
			      "session is that client's)");
		return;
	}
	struct bh_client_cell cell = {.code = code};
	if (bh_language_parse(language, &cell.language) < 0) {
		cb(arg, NULL, "unknown language");
		return;
	}
	struct run_call *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	*r = (struct run_call){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	struct bh_client_error *err = NULL;
	if (bh_client_session_run_async(cs, &cell, on_cell, r, &err) < 0) {
		m->pending--;
		cb(arg, NULL, err ? err->message : "the call could not be made");
		bh_client_error_free(err);
		free(r);
	}
}

static void source_free(struct ui_source *s)
{
	struct attached *m = A(s);
	/* The console's sandboxes die with it, as in the embedded mode. */
	for (size_t i = 0; i < m->n_mine; i++) {
		struct wire_close_session_response out;
		struct bh_client_error *err = NULL;
		if (bh_client_session_close(m->mine[i].s, &out, &err) == 0)
			wire_close_session_response_free(&out);
		bh_client_error_free(err);
		bh_client_session_free(m->mine[i].s);
	}
	bh_client_free(m->c);
	free(m);
}

static const struct ui_source_ops attached_ops = {
	.kind = "attached",
	.has_engine = true,
	.describe = describe,
	.tier_summary = tier_summary,
	.poll_fds = poll_fds,
	.timeout_ms = timeout_ms,
	.process = process,
	.pending = pending,
	.sessions = sessions,
	.records = records,
	.record_at = record_at,
	.events = events,
	.leaks = leaks,
	.reap = reap,
	.tiers = tiers,
	.action = action,
	.open = open_session,
	.run = run,
	.free = source_free,
};

struct ui_source *ui_source_attached(const char *target, const char *token, char **why)
{
	struct attached *m = calloc(1, sizeof *m);
	if (!m)
		abort();
	m->base.ops = &attached_ops;
	struct bh_client_options o = {.target = target, .token = token};
	struct bh_client_error *err = NULL;
	if (bh_client_new(&o, &m->c, &err) < 0) {
		if (why && asprintf(why, "%s", err ? err->message : "cannot make a client") < 0)
			*why = NULL;
		bh_client_error_free(err);
		free(m);
		return NULL;
	}
	snprintf(m->target, sizeof m->target, "%s", target);
	/* The header's tier summary comes from the daemon's evidence, and the
	 * tier its calls get from Describe. */
	m->pending++;
	if (bh_client_describe_async(m->c, on_describe, m, &err) < 0) {
		m->pending--;
		bh_client_error_free(err);
		err = NULL;
	}
	tiers(&m->base, tiers_quiet, NULL);
	return &m->base;
}
