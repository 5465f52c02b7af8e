/* bulkhead.v1.OperatorService: what the console and an operator's tools
 * see and do. Sessions are named by fingerprint — an operator never holds a
 * session id, so it can steer a sandbox but never run code in it.
 * Messages are Connect JSON like plimsoll's; docs/api.md lists them. */
#include "daemon_priv.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *body_of(struct call *c)
{
	cJSON *msg = NULL;
	char *why = NULL;
	if (wire_parse_body(c->body ? c->body : "{}", c->body ? c->body_len : 2, &msg, &why) < 0) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
		free(why);
		return NULL;
	}
	return msg;
}

static char *print(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		abort();
	return s;
}

static void add_i64(cJSON *o, const char *name, int64_t v)
{
	if (!v)
		return; /* proto3 JSON: zero values are omitted */
	char buf[24];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	cJSON_AddStringToObject(o, name, buf);
}

static void add_str(cJSON *o, const char *name, const char *v)
{
	if (v && *v)
		cJSON_AddStringToObject(o, name, v);
}

static cJSON *session_json(const bh_session *s)
{
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	cJSON *o = cJSON_CreateObject();
	add_str(o, "session", i.fingerprint);
	add_str(o, "sandbox", i.sandbox);
	add_str(o, "state", bh_session_state_name(i.state));
	add_str(o, "isolation", bh_tier_name(i.tier));
	if (i.floor > BH_TIER_NONE)
		add_str(o, "minimumIsolation", bh_tier_name(i.floor));
	add_str(o, "principal", i.principal);
	add_str(o, "owner", i.owner);
	add_str(o, "runKey", i.run_key);
	add_i64(o, "calls", (int64_t)i.calls);
	add_str(o, "lastRecordSha256", i.last_record_sha256);
	add_i64(o, "createdUnixMs", i.created_unix_ms);
	add_i64(o, "lastCallUnixMs", i.last_call_unix_ms);
	add_i64(o, "expiresUnixMs", i.expires_unix_ms);
	add_i64(o, "awakeMs", (int64_t)i.awake_ms);
	add_str(o, "endReason", bh_end_reason_name(i.end_reason));
	return o;
}

/* The session this fingerprint names, or an answer saying there is none. */
static bh_session *find_fp(struct call *c, cJSON *msg)
{
	const cJSON *fp = cJSON_GetObjectItemCaseSensitive(msg, "session");
	if (!cJSON_IsString(fp) || strlen(fp->valuestring) != 64) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "session: give the session's fingerprint (64 hex digits)");
		return NULL;
	}
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(c->srv->e, &list);
	bh_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), fp->valuestring))
			found = list[i];
	free(list);
	if (!found)
		call_refuse(c, WIRE_NOT_FOUND, WIRE_REFUSAL_REQUEST, "no session has that fingerprint");
	else
		snprintf(c->session_fp, sizeof c->session_fp, "%s", fp->valuestring);
	return found;
}

static void list_sessions(struct call *c, cJSON *msg)
{
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(msg, "state");
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(c->srv->e, &list);
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "sessions");
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (cJSON_IsString(state) &&
		    strcmp(state->valuestring, bh_session_state_name(info.state)))
			continue;
		cJSON_AddItemToArray(arr, session_json(list[i]));
	}
	free(list);
	call_answer_json(c, print(o));
}

static void get_session(struct call *c, cJSON *msg)
{
	bh_session *s = find_fp(c, msg);
	if (s)
		call_answer_json(c, print(session_json(s)));
}

/* ---- actions ---- */

static void on_action(void *arg, const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			call_answer_json(c, strdup("{}"));
		}
	}
	audit_event(c->srv, c->procedure + strlen("bulkhead.v1.OperatorService/"), c->session_fp,
		    err ? err->msg : "done");
	call_wake(c);
}

static void action(struct call *c, cJSON *msg,
		   int (*fn)(bh_session *, bh_action_cb, void *, bh_error **))
{
	bh_session *s = find_fp(c, msg);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (fn(s, on_action, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void pause_session(struct call *c, cJSON *msg) { action(c, msg, bh_session_pause); }
static void resume_session(struct call *c, cJSON *msg) { action(c, msg, bh_session_resume); }
static void hibernate_session(struct call *c, cJSON *msg) { action(c, msg, bh_session_hibernate); }

static void on_closed(void *arg, const struct bh_close_result *res, const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			cJSON *o = cJSON_CreateObject();
			add_str(o, "session", res->fingerprint);
			add_i64(o, "calls", (int64_t)res->calls);
			add_str(o, "lastRecordSha256", res->last_record_sha256);
			add_str(o, "endReason", bh_end_reason_name(res->end_reason));
			call_answer_json(c, print(o));
		}
	}
	audit_event(c->srv, "Close", c->session_fp, err ? err->msg : "closed by an operator");
	call_wake(c);
}

static void close_session(struct call *c, cJSON *msg)
{
	bh_session *s = find_fp(c, msg);
	if (!s)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_close(s, on_closed, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void kill_session(struct call *c, cJSON *msg)
{
	bh_session *s = find_fp(c, msg);
	if (!s)
		return;
	bh_session_kill(s);
	audit_event(c->srv, "Kill", c->session_fp, "killed by an operator");
	call_answer_json(c, strdup("{}"));
}

/* ---- leaks, gc, evidence ---- */

static cJSON *leaks_json(const struct bh_leak *l, size_t n)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		add_str(o, "kind", bh_leak_kind_name(l[i].kind));
		add_str(o, "sandbox", l[i].sandbox);
		add_str(o, "session", l[i].fingerprint);
		add_str(o, "runtime", l[i].runtime);
		add_str(o, "reason", l[i].reason);
		add_str(o, "holder", l[i].holder);
		add_i64(o, "firstSeenUnixMs", l[i].first_seen_ms);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static void leaks(struct call *c, cJSON *msg)
{
	(void)msg;
	struct bh_leak *l = NULL;
	size_t n = bh_engine_leaks(c->srv->e, &l);
	c->srv->metrics.leaks_found += n;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "leaks", leaks_json(l, n));
	free(l);
	call_answer_json(c, print(o));
}

static void gc(struct call *c, cJSON *msg)
{
	const cJSON *dry = cJSON_GetObjectItemCaseSensitive(msg, "dryRun");
	struct bh_leak *l = NULL;
	size_t n = cJSON_IsTrue(dry) ? bh_engine_leaks(c->srv->e, &l) : bh_engine_gc(c->srv->e, &l);
	if (!cJSON_IsTrue(dry)) {
		c->srv->metrics.leaks_reaped += n;
		for (size_t i = 0; i < n; i++)
			audit_event(c->srv, "reaped", l[i].fingerprint, bh_leak_kind_name(l[i].kind));
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, cJSON_IsTrue(dry) ? "wouldReap" : "reaped", leaks_json(l, n));
	free(l);
	call_answer_json(c, print(o));
}

static void evidence(struct call *c, cJSON *msg)
{
	(void)msg;
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(c->srv->e, &t);
	cJSON *o = cJSON_CreateObject();
	add_str(o, "strongest", bh_tier_name(bh_engine_best_tier(c->srv->e)));
	if (!bh_engine_proven(c->srv->e))
		cJSON_AddBoolToObject(o, "proving", true);
	cJSON *arr = cJSON_AddArrayToObject(o, "tiers");
	for (size_t i = 0; i < n; i++) {
		cJSON *x = cJSON_CreateObject();
		add_str(x, "tier", bh_tier_name(t[i].tier));
		if (t[i].offered)
			cJSON_AddBoolToObject(x, "offered", true);
		if (t[i].cached)
			cJSON_AddBoolToObject(x, "cached", true);
		add_str(x, "runtime", t[i].runtime);
		add_str(x, "runtimeVersion", t[i].version);
		add_str(x, "reason", t[i].reason);
		add_str(x, "environment", bh_engine_environment(c->srv->e, t[i].tier));
		cJSON *lines = cJSON_AddArrayToObject(x, "evidence");
		for (size_t j = 0; j < t[i].n_lines; j++) {
			cJSON *l = cJSON_CreateObject();
			add_str(l, "check", t[i].lines[j].name);
			add_str(l, "value", t[i].lines[j].value);
			add_str(l, "expect", t[i].lines[j].expect);
			if (t[i].lines[j].ok)
				cJSON_AddBoolToObject(l, "ok", true);
			cJSON_AddItemToArray(lines, l);
		}
		cJSON_AddItemToArray(arr, x);
	}
	call_answer_json(c, print(o));
}

/* ---- history ---- */

static int64_t cursor_of(cJSON *msg, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, name);
	if (cJSON_IsString(v))
		return strtoll(v->valuestring, NULL, 10);
	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	return 0;
}

static size_t limit_of(cJSON *msg)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, "limit");
	if (!cJSON_IsNumber(v) || v->valuedouble <= 0)
		return 200;
	return v->valuedouble > 1000 ? 1000 : (size_t)v->valuedouble;
}

struct page {
	cJSON *arr;
	int64_t first, last; /* the page's ids: cursors for the pages before and after */
};

/* `newest` (or a `beforeId`): the page is the newest rows before the
 * cursor, paging back from the end, instead of the oldest after afterId. */
static bool newest_of(cJSON *msg)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "newest")) ||
	       cursor_of(msg, "beforeId") > 0;
}

static void add_cursors(cJSON *o, const struct page *p)
{
	add_i64(o, "nextAfterId", p->last);
	add_i64(o, "nextBeforeId", p->first);
}

/* A page read (rc < 0: err says why) answered: its rows and cursors, or
 * the read's failure. */
static void answer_page(struct call *c, cJSON *o, const struct page *p, int rc, bh_error *err)
{
	if (rc < 0) {
		cJSON_Delete(o);
		call_refuse(c, WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "%s", err->msg);
		bh_error_free(err);
		return;
	}
	add_cursors(o, p);
	call_answer_json(c, print(o));
}

static int add_record(void *arg, const struct bh_record_row *r)
{
	struct page *p = arg;
	cJSON *o = cJSON_CreateObject();
	add_i64(o, "id", r->id);
	char *rec = wire_encode_record(r->record);
	cJSON_AddItemToObject(o, "record", cJSON_Parse(rec));
	free(rec);
	add_str(o, "language", r->language);
	if (r->exit_code)
		cJSON_AddNumberToObject(o, "exitCode", r->exit_code);
	add_str(o, "flags", r->flags);
	add_i64(o, "durationUs", r->duration_us);
	cJSON_AddItemToArray(p->arr, o);
	if (!p->first)
		p->first = r->id;
	p->last = r->id;
	return 0;
}

static void list_records(struct call *c, cJSON *msg)
{
	const cJSON *fp = cJSON_GetObjectItemCaseSensitive(msg, "session");
	if (fp && (!cJSON_IsString(fp) || strlen(fp->valuestring) != 64)) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "session: give a session's fingerprint (64 hex digits)");
		return;
	}
	const char *session = fp ? fp->valuestring : NULL;
	bool one = cJSON_GetObjectItemCaseSensitive(msg, "sequence") != NULL;
	int64_t sequence = cursor_of(msg, "sequence");
	if (one && (!session || sequence <= 0)) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
			    "sequence: give it with a session, a positive number (that session's record)");
		return;
	}
	cJSON *o = cJSON_CreateObject();
	struct page p = {.arr = cJSON_AddArrayToObject(o, "records"), .last = cursor_of(msg, "afterId")};
	bh_error *err = NULL;
	int rc = one ? bh_engine_record_at(c->srv->e, session, (uint64_t)sequence, add_record, &p, &err)
		 : newest_of(msg)
			 ? bh_engine_records_newest(c->srv->e, session, cursor_of(msg, "beforeId"),
						    limit_of(msg), add_record, &p, &err)
			 : bh_engine_records(c->srv->e, session, p.last, limit_of(msg), add_record, &p,
					     &err);
	answer_page(c, o, &p, rc, err);
}

static int add_event(void *arg, const struct bh_event *ev)
{
	struct page *p = arg;
	cJSON *o = cJSON_CreateObject();
	add_i64(o, "id", ev->id);
	add_i64(o, "atUnixMs", ev->at_unix_ms);
	add_str(o, "kind", ev->kind);
	add_str(o, "session", ev->session);
	add_str(o, "sandbox", ev->sandbox);
	add_str(o, "detail", ev->detail);
	cJSON_AddItemToArray(p->arr, o);
	if (!p->first)
		p->first = ev->id;
	p->last = ev->id;
	return 0;
}

/* The newest events before the cursor: answered at once, never waited on. */
static void answer_newest_events(struct call *c, int64_t before, size_t limit)
{
	cJSON *o = cJSON_CreateObject();
	struct page p = {.arr = cJSON_AddArrayToObject(o, "events")};
	bh_error *err = NULL;
	int rc = bh_engine_events_newest(c->srv->e, before, limit, add_event, &p, &err);
	answer_page(c, o, &p, rc, err);
}

/* Answers with the events after the cursor; false when there are none yet. */
static bool answer_events(struct call *c, int64_t after, size_t limit, bool even_if_none)
{
	cJSON *o = cJSON_CreateObject();
	struct page p = {.arr = cJSON_AddArrayToObject(o, "events"), .last = after};
	bh_error *err = NULL;
	int rc = bh_engine_events(c->srv->e, after, limit, add_event, &p, &err);
	if (rc >= 0 && !cJSON_GetArraySize(p.arr) && !even_if_none) {
		cJSON_Delete(o);
		return false;
	}
	answer_page(c, o, &p, rc, err);
	return true;
}

/* A long poll: ListEvents with waitMs parks until an event or the wait ends. */
struct event_wait {
	struct call *c;
	int64_t after;
	size_t limit;
	uint64_t until_ms;
	struct event_wait *next;
};
static struct event_wait *waiters;

static void wait_free(void *p)
{
	struct event_wait **pp = &waiters;
	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = ((struct event_wait *)p)->next;
	free(p);
}

static void list_events(struct call *c, cJSON *msg)
{
	int64_t after = cursor_of(msg, "afterId");
	size_t limit = limit_of(msg);
	const cJSON *wait = cJSON_GetObjectItemCaseSensitive(msg, "waitMs");
	double ms = cJSON_IsNumber(wait) ? wait->valuedouble : 0;
	if (newest_of(msg)) {
		if (ms > 0) {
			call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
				    "waitMs waits for events after afterId; it does not go with newest or "
				    "beforeId");
			return;
		}
		answer_newest_events(c, cursor_of(msg, "beforeId"), limit);
		return;
	}
	if (answer_events(c, after, limit, ms <= 0))
		return;
	struct event_wait *w = calloc(1, sizeof *w);
	if (!w)
		abort();
	*w = (struct event_wait){.c = c, .after = after, .limit = limit,
				 .until_ms = now_mono_ms() + (uint64_t)(ms > 30000 ? 30000 : ms),
				 .next = waiters};
	waiters = w;
	call_pending(c, w, wait_free);
}

bool operator_waiting(void)
{
	return waiters != NULL;
}

void operator_poll_waiters(struct server *s, bool closing)
{
	uint64_t now = now_mono_ms();
	for (struct event_wait *w = waiters, *next; w; w = next) {
		next = w->next;
		struct call *c = w->c;
		if (c->srv != s)
			continue;
		bool done = c->gone || closing || now >= w->until_ms
				    ? (c->gone || answer_events(c, w->after, w->limit, true))
				    : answer_events(c, w->after, w->limit, false);
		if (done)
			call_wake(c); /* frees w through the call's ctx */
	}
}

/* ---- files ---- */

static const char *path_of(struct call *c, cJSON *msg)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(msg, "path");
	if (!p)
		return ""; /* /work itself */
	if (!cJSON_IsString(p)) {
		call_refuse(c, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "path: a string");
		return NULL;
	}
	return p->valuestring;
}

static void on_list(void *arg, const struct bh_file_entry *entries, size_t n, bool more,
		    const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			cJSON *o = cJSON_CreateObject();
			cJSON *arr = cJSON_AddArrayToObject(o, "entries");
			for (size_t i = 0; i < n; i++) {
				cJSON *x = cJSON_CreateObject();
				add_str(x, "name", entries[i].name);
				char type[2] = {entries[i].type, 0};
				add_str(x, "type", type);
				add_i64(x, "size", (int64_t)entries[i].size);
				add_i64(x, "mtimeUnixMs", (int64_t)entries[i].mtime_ms);
				add_str(x, "target", entries[i].target);
				cJSON_AddItemToArray(arr, x);
			}
			if (more)
				cJSON_AddBoolToObject(o, "more", true);
			call_answer_json(c, print(o));
		}
	}
	call_wake(c);
}

static void list_files(struct call *c, cJSON *msg)
{
	bh_session *s = find_fp(c, msg);
	const char *path = s ? path_of(c, msg) : NULL;
	if (!path)
		return;
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_list_files(s, path, on_list, c, &err) < 0) {
		call_not_started(c, err);
	}
}

static void on_read(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			cJSON *o = cJSON_CreateObject();
			char *b64 = wire_base64_encode(data, len, true);
			add_str(o, "content", b64);
			free(b64);
			add_i64(o, "size", (int64_t)size);
			if (truncated)
				cJSON_AddBoolToObject(o, "truncated", true);
			call_answer_json(c, print(o));
		}
	}
	call_wake(c);
}

static void read_file(struct call *c, cJSON *msg)
{
	bh_session *s = find_fp(c, msg);
	const char *path = s ? path_of(c, msg) : NULL;
	if (!path)
		return;
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(msg, "maxBytes");
	uint32_t cap = cJSON_IsNumber(max) && max->valuedouble > 0 && max->valuedouble < (4 << 20)
			       ? (uint32_t)max->valuedouble
			       : (1u << 20);
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_session_read_file(s, path, cap, on_read, c, &err) < 0) {
		call_not_started(c, err);
	}
}

void operator_service(struct call *c, const char *method)
{
	static const struct {
		const char *name;
		void (*fn)(struct call *c, cJSON *msg);
	} methods[] = {
		{"ListSessions", list_sessions},
		{"GetSession", get_session},
		{"Pause", pause_session},
		{"Resume", resume_session},
		{"Hibernate", hibernate_session},
		{"Close", close_session},
		{"Kill", kill_session},
		{"Leaks", leaks},
		{"Gc", gc},
		{"Evidence", evidence},
		{"ListRecords", list_records},
		{"ListEvents", list_events},
		{"ListFiles", list_files},
		{"ReadFile", read_file},
	};
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		if (strcmp(method, methods[i].name))
			continue;
		cJSON *msg = body_of(c);
		if (msg) {
			methods[i].fn(c, msg);
			cJSON_Delete(msg);
		}
		return;
	}
	call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported",
			  "bulkhead.v1.OperatorService has no such procedure");
}
