/* bulkhead.v1.OperatorService: one generic call (method + JSON in, JSON
 * out) and typed helpers that are that call plus a parser of its answer.
 * The parsers are public so the console, which calls asynchronously, reads
 * answers the same way. Shapes are the daemon's operator_service.c: proto3
 * JSON, so zero values are absent and 64-bit integers are strings. */
#include "client_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define OPS "bulkhead.v1.OperatorService/"

/* ---- the generic call ---- */

struct op_call {
	bh_client_operator_cb cb;
	void *arg;
};

static void on_operator(void *arg, const struct bh_client_http *a)
{
	struct op_call *op = arg;
	struct bh_client_error *e = bh_client_error_of(a);
	if (e && e->unanswered) { /* an operator call runs no code: no record to check */
		wire_record_free(&e->record);
		e->unanswered = false;
	}
	op->cb(op->arg, e ? NULL : a->body, e);
	bh_client_error_free(e);
	free(op);
}

int bh_client_operator_call_async(bh_client *c, const char *method, const char *json_in,
				  bh_client_operator_cb cb, void *arg, struct bh_client_error **err)
{
	for (const char *p = method; p && *p; p++)
		if (!isalpha((unsigned char)*p))
			method = NULL;
	if (!method || !*method)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "an operator method is a name like ListSessions"));
	struct op_call *op = xzalloc(sizeof *op);
	*op = (struct op_call){cb, arg};
	cleanup_free char *path = xasprintf(OPS "%s", method);
	if (!xfer_start(c, path, json_in && *json_in ? json_in : "{}", on_operator, op, err)) {
		free(op);
		return -1;
	}
	return 0;
}

struct op_wait {
	bool done;
	char *out;
	struct bh_client_error *err;
};

static void on_operator_wait(void *arg, const char *json_out, const struct bh_client_error *err)
{
	struct op_wait *w = arg;
	w->done = true;
	if (err)
		w->err = bh_client_error_dup(err);
	else
		w->out = xstrdup(json_out);
}

int bh_client_operator_call(bh_client *c, const char *method, const char *json_in,
			    char **json_out, struct bh_client_error **err)
{
	struct op_wait w = {0};
	*json_out = NULL;
	if (bh_client_operator_call_async(c, method, json_in, on_operator_wait, &w, err) < 0)
		return -1;
	if (bh_client_wait(c, &w.done, -1) < 0 && !w.done)
		return client_fail(err, client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
						     "the client's loop stopped before the answer"));
	if (w.err)
		return client_fail(err, w.err);
	*json_out = w.out;
	return 0;
}

/* ---- reading answers ---- */

struct reader {
	const char *what;   /* "ListSessions" */
	char why[256];      /* the first shape problem */
};

static bool shape(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool shape(struct reader *r, const char *fmt, ...)
{
	if (!r->why[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->why, sizeof r->why, fmt, ap);
		va_end(ap);
	}
	return false;
}

static char *get_str(struct reader *r, const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (v && !cJSON_IsString(v))
		shape(r, "%s: %s is not a string", r->what, name);
	return xstrdup(cJSON_IsString(v) ? v->valuestring : "");
}

static void get_fixed(struct reader *r, const cJSON *o, const char *name, char *dst, size_t len)
{
	cleanup_free char *s = get_str(r, o, name);
	if (strlen(s) >= len)
		shape(r, "%s: %s is too long", r->what, name);
	snprintf(dst, len, "%s", s);
}

/* proto3 JSON writes 64-bit integers as strings; a number is accepted too. */
static int64_t get_i64(struct reader *r, const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!v)
		return 0;
	if (cJSON_IsNumber(v))
		return (int64_t)v->valuedouble;
	if (cJSON_IsString(v)) {
		char *end;
		long long n = strtoll(v->valuestring, &end, 10);
		if (end != v->valuestring && !*end)
			return n;
	}
	shape(r, "%s: %s is not an integer", r->what, name);
	return 0;
}

static const cJSON *get_array(struct reader *r, const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (v && !cJSON_IsArray(v))
		shape(r, "%s: %s is not a list", r->what, name);
	return cJSON_IsArray(v) ? v : NULL;
}

static cJSON *parse(struct reader *r, const char *json)
{
	cJSON *o = NULL;
	cleanup_free char *why = NULL;
	if (wire_parse_body(json ? json : "", json ? strlen(json) : 0, &o, &why) < 0) {
		shape(r, "%s: the answer is not a JSON object: %s", r->what, why);
		return NULL;
	}
	return o;
}

static int done(struct reader *r, struct bh_client_error **err)
{
	if (!r->why[0])
		return 0;
	return client_fail(err, client_data_loss("%s", r->why));
}

/* ---- sessions ---- */

static void session_info(struct reader *r, const cJSON *o, struct bh_client_session_info *s)
{
	memset(s, 0, sizeof *s);
	if (!cJSON_IsObject(o))
		shape(r, "%s: a session is not an object", r->what);
	get_fixed(r, o, "session", s->fingerprint, sizeof s->fingerprint);
	s->sandbox = get_str(r, o, "sandbox");
	s->state = get_str(r, o, "state");
	s->isolation = get_str(r, o, "isolation");
	s->floor = get_str(r, o, "minimumIsolation");
	s->principal = get_str(r, o, "principal");
	s->owner = get_str(r, o, "owner");
	s->run_key = get_str(r, o, "runKey");
	s->calls = (uint64_t)get_i64(r, o, "calls");
	get_fixed(r, o, "lastRecordSha256", s->last_record_sha256, sizeof s->last_record_sha256);
	s->created_unix_ms = get_i64(r, o, "createdUnixMs");
	s->last_call_unix_ms = get_i64(r, o, "lastCallUnixMs");
	s->expires_unix_ms = get_i64(r, o, "expiresUnixMs");
	s->awake_ms = (uint64_t)get_i64(r, o, "awakeMs");
	s->end_reason = get_str(r, o, "endReason");
}

void bh_client_session_info_free(struct bh_client_session_info *s)
{
	free(s->sandbox);
	free(s->state);
	free(s->isolation);
	free(s->floor);
	free(s->principal);
	free(s->owner);
	free(s->run_key);
	free(s->end_reason);
}

void bh_client_sessions_free(struct bh_client_session_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		bh_client_session_info_free(&v[i]);
	free(v);
}

int bh_client_parse_sessions(const char *json, struct bh_client_session_info **out, size_t *n,
			     struct bh_client_error **err)
{
	struct reader r = {.what = "ListSessions"};
	*out = NULL;
	*n = 0;
	cleanup_cjson cJSON *o = parse(&r, json);
	const cJSON *arr = o ? get_array(&r, o, "sessions") : NULL;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	struct bh_client_session_info *v = xzalloc((count ? count : 1) * sizeof *v);
	size_t i = 0;
	for (const cJSON *s = arr ? arr->child : NULL; s && i < count; s = s->next)
		session_info(&r, s, &v[i++]);
	if (done(&r, err) < 0) {
		bh_client_sessions_free(v, i);
		return -1;
	}
	*out = v;
	*n = i;
	return 0;
}

int bh_client_list_sessions(bh_client *c, const char *state, struct bh_client_session_info **out,
			    size_t *n, struct bh_client_error **err)
{
	cleanup_cjson cJSON *in = cJSON_CreateObject();
	if (state && *state)
		cJSON_AddStringToObject(in, "state", state);
	cleanup_free char *body = cJSON_PrintUnformatted(in);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "ListSessions", body, &json, err) < 0)
		return -1;
	return bh_client_parse_sessions(json, out, n, err);
}

/* {"session": FP} with the fingerprint checked before anything is sent. */
static char *by_fingerprint(const char *fp, struct bh_client_error **err)
{
	if (!fp || strlen(fp) != 64 || strspn(fp, "0123456789abcdef") != 64) {
		client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
					      "a session is named by its fingerprint (64 hex digits)"));
		return NULL;
	}
	return xasprintf("{\"session\":\"%s\"}", fp);
}

int bh_client_get_session(bh_client *c, const char *fingerprint,
			  struct bh_client_session_info *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *body = by_fingerprint(fingerprint, err);
	cleanup_free char *json = NULL;
	if (!body || bh_client_operator_call(c, "GetSession", body, &json, err) < 0)
		return -1;
	struct reader r = {.what = "GetSession"};
	cleanup_cjson cJSON *o = parse(&r, json);
	session_info(&r, o, out);
	if (done(&r, err) < 0) {
		bh_client_session_info_free(out);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}

/* ---- actions ---- */

static int action(bh_client *c, const char *method, const char *fp, char **json,
		  struct bh_client_error **err)
{
	cleanup_free char *body = by_fingerprint(fp, err);
	cleanup_free char *out = NULL;
	if (!body || bh_client_operator_call(c, method, body, &out, err) < 0)
		return -1;
	if (json)
		*json = steal_ptr(out);
	return 0;
}

int bh_client_pause(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return action(c, "Pause", fp, NULL, err);
}

int bh_client_resume(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return action(c, "Resume", fp, NULL, err);
}

int bh_client_hibernate(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return action(c, "Hibernate", fp, NULL, err);
}

int bh_client_kill(bh_client *c, const char *fp, struct bh_client_error **err)
{
	return action(c, "Kill", fp, NULL, err);
}

int bh_client_close(bh_client *c, const char *fp, struct bh_client_closed *out,
		    struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *json = NULL;
	if (action(c, "Close", fp, &json, err) < 0)
		return -1;
	struct reader r = {.what = "Close"};
	cleanup_cjson cJSON *o = parse(&r, json);
	out->calls = (uint64_t)get_i64(&r, o, "calls");
	get_fixed(&r, o, "lastRecordSha256", out->last_record_sha256, sizeof out->last_record_sha256);
	get_fixed(&r, o, "endReason", out->end_reason, sizeof out->end_reason);
	return done(&r, err);
}

/* ---- leaks and gc ---- */

static enum bh_leak_kind leak_kind(struct reader *r, const char *name)
{
	for (int k = BH_LEAK_ORPHAN; k <= BH_LEAK_STRAY_CGROUP; k++)
		if (!strcmp(name, bh_leak_kind_name((enum bh_leak_kind)k)))
			return (enum bh_leak_kind)k;
	shape(r, "%s: \"%s\" is not a kind of leak this client knows", r->what, name);
	return BH_LEAK_ORPHAN;
}

int bh_client_parse_leaks(const char *json, const char *field, struct bh_leak **out, size_t *n,
			  struct bh_client_error **err)
{
	struct reader r = {.what = field};
	*out = NULL;
	*n = 0;
	cleanup_cjson cJSON *o = parse(&r, json);
	const cJSON *arr = o ? get_array(&r, o, field) : NULL;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	struct bh_leak *v = xzalloc((count ? count : 1) * sizeof *v);
	size_t i = 0;
	for (const cJSON *l = arr ? arr->child : NULL; l && i < count; l = l->next, i++) {
		cleanup_free char *kind = get_str(&r, l, "kind");
		v[i].kind = leak_kind(&r, kind);
		get_fixed(&r, l, "sandbox", v[i].sandbox, sizeof v[i].sandbox);
		get_fixed(&r, l, "session", v[i].fingerprint, sizeof v[i].fingerprint);
		get_fixed(&r, l, "runtime", v[i].runtime, sizeof v[i].runtime);
		get_fixed(&r, l, "reason", v[i].reason, sizeof v[i].reason);
		get_fixed(&r, l, "holder", v[i].holder, sizeof v[i].holder);
		v[i].first_seen_ms = get_i64(&r, l, "firstSeenUnixMs");
	}
	if (done(&r, err) < 0) {
		free(v);
		return -1;
	}
	*out = v;
	*n = i;
	return 0;
}

int bh_client_leaks(bh_client *c, struct bh_leak **out, size_t *n, struct bh_client_error **err)
{
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "Leaks", "{}", &json, err) < 0)
		return -1;
	return bh_client_parse_leaks(json, "leaks", out, n, err);
}

int bh_client_gc(bh_client *c, bool dry_run, struct bh_leak **out, size_t *n,
		 struct bh_client_error **err)
{
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "Gc", dry_run ? "{\"dryRun\":true}" : "{}", &json, err) < 0)
		return -1;
	return bh_client_parse_leaks(json, dry_run ? "wouldReap" : "reaped", out, n, err);
}

int bh_client_evidence(bh_client *c, cJSON **out, struct bh_client_error **err)
{
	cleanup_free char *json = NULL;
	*out = NULL;
	if (bh_client_operator_call(c, "Evidence", "{}", &json, err) < 0)
		return -1;
	struct reader r = {.what = "Evidence"};
	cJSON *o = parse(&r, json);
	if (done(&r, err) < 0)
		return -1;
	*out = o;
	return 0;
}

/* ---- records ---- */

void bh_client_records_free(struct bh_client_records *rs)
{
	for (size_t i = 0; rs->rows && i < rs->n; i++) {
		wire_record_free(&rs->rows[i].record);
		free(rs->rows[i].language);
		free(rs->rows[i].flags);
	}
	free(rs->rows);
	memset(rs, 0, sizeof *rs);
}

static void record_of(struct reader *r, const cJSON *o, struct bh_record *out)
{
	memset(out, 0, sizeof *out);
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(o, "record");
	if (!cJSON_IsObject(rec)) {
		shape(r, "%s: a row carries no record", r->what);
		return;
	}
	cleanup_free char *text = cJSON_PrintUnformatted(rec);
	struct wire_status st;
	if (!text)
		abort();
	if (wire_decode_record(text, strlen(text), out, &st) < 0)
		shape(r, "%s: %s", r->what, st.msg);
}

int bh_client_parse_records(const char *json, struct bh_client_records *out,
			    struct bh_client_error **err)
{
	struct reader r = {.what = "ListRecords"};
	memset(out, 0, sizeof *out);
	cleanup_cjson cJSON *o = parse(&r, json);
	const cJSON *arr = o ? get_array(&r, o, "records") : NULL;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	out->rows = xzalloc((count ? count : 1) * sizeof *out->rows);
	for (const cJSON *x = arr ? arr->child : NULL; x && out->n < count && !r.why[0]; x = x->next) {
		struct bh_client_record_row *row = &out->rows[out->n];
		record_of(&r, x, &row->record);
		if (r.why[0])
			break;
		out->n++;
		row->id = get_i64(&r, x, "id");
		row->language = get_str(&r, x, "language");
		row->flags = get_str(&r, x, "flags");
		row->exit_code = (int)get_i64(&r, x, "exitCode");
		row->duration_us = get_i64(&r, x, "durationUs");
	}
	if (o) {
		out->next_after_id = get_i64(&r, o, "nextAfterId");
		out->next_before_id = get_i64(&r, o, "nextBeforeId");
	}
	if (done(&r, err) < 0) {
		bh_client_records_free(out);
		return -1;
	}
	return 0;
}

int bh_client_list_records(bh_client *c, const char *session, int64_t after_id, uint32_t limit,
			   struct bh_client_records *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_cjson cJSON *in = cJSON_CreateObject();
	if (session && *session)
		cJSON_AddStringToObject(in, "session", session);
	if (after_id > 0) {
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)after_id);
		cJSON_AddStringToObject(in, "afterId", id);
	}
	if (limit)
		cJSON_AddNumberToObject(in, "limit", limit);
	cleanup_free char *body = cJSON_PrintUnformatted(in);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "ListRecords", body, &json, err) < 0)
		return -1;
	return bh_client_parse_records(json, out, err);
}

/* An id (int64) travels as a string. */
static void add_id(cJSON *in, const char *name, long long id)
{
	char text[24];
	snprintf(text, sizeof text, "%lld", id);
	cJSON_AddStringToObject(in, name, text);
}

static int newest_call(bh_client *c, const char *method, const char *session, int64_t before_id,
		       uint32_t limit, char **json, struct bh_client_error **err)
{
	cleanup_cjson cJSON *in = cJSON_CreateObject();
	if (session && *session)
		cJSON_AddStringToObject(in, "session", session);
	cJSON_AddBoolToObject(in, "newest", 1);
	if (before_id > 0)
		add_id(in, "beforeId", before_id);
	if (limit)
		cJSON_AddNumberToObject(in, "limit", limit);
	cleanup_free char *body = cJSON_PrintUnformatted(in);
	return bh_client_operator_call(c, method, body, json, err);
}

int bh_client_list_records_newest(bh_client *c, const char *session, int64_t before_id,
				  uint32_t limit, struct bh_client_records *out,
				  struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *json = NULL;
	if (newest_call(c, "ListRecords", session, before_id, limit, &json, err) < 0)
		return -1;
	return bh_client_parse_records(json, out, err);
}

int bh_client_record_at(bh_client *c, const char *session, uint64_t sequence,
			struct bh_client_records *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_cjson cJSON *in = cJSON_CreateObject();
	cJSON_AddStringToObject(in, "session", session ? session : "");
	add_id(in, "sequence", (long long)sequence);
	cleanup_free char *body = cJSON_PrintUnformatted(in);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "ListRecords", body, &json, err) < 0)
		return -1;
	if (bh_client_parse_records(json, out, err) < 0)
		return -1;
	if (out->n > 1 || (out->n == 1 && (out->rows[0].record.sequence != sequence ||
					   strcmp(out->rows[0].record.session, session ? session : "")))) {
		bh_client_records_free(out);
		return client_fail(err, client_error(WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED,
						     "ListRecords: the daemon answered another record "
						     "than the one asked for"));
	}
	return 0;
}

/* ---- events ---- */

void bh_client_events_free(struct bh_client_events *ev)
{
	for (size_t i = 0; ev->events && i < ev->n; i++) {
		free(ev->events[i].kind);
		free(ev->events[i].session);
		free(ev->events[i].sandbox);
		free(ev->events[i].detail);
	}
	free(ev->events);
	memset(ev, 0, sizeof *ev);
}

int bh_client_parse_events(const char *json, struct bh_client_events *out,
			   struct bh_client_error **err)
{
	struct reader r = {.what = "ListEvents"};
	memset(out, 0, sizeof *out);
	cleanup_cjson cJSON *o = parse(&r, json);
	const cJSON *arr = o ? get_array(&r, o, "events") : NULL;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	out->events = xzalloc((count ? count : 1) * sizeof *out->events);
	for (const cJSON *x = arr ? arr->child : NULL; x && out->n < count; x = x->next) {
		struct bh_client_event *e = &out->events[out->n++];
		e->id = get_i64(&r, x, "id");
		e->at_unix_ms = get_i64(&r, x, "atUnixMs");
		e->kind = get_str(&r, x, "kind");
		e->session = get_str(&r, x, "session");
		e->sandbox = get_str(&r, x, "sandbox");
		e->detail = get_str(&r, x, "detail");
	}
	if (o) {
		out->next_after_id = get_i64(&r, o, "nextAfterId");
		out->next_before_id = get_i64(&r, o, "nextBeforeId");
	}
	if (done(&r, err) < 0) {
		bh_client_events_free(out);
		return -1;
	}
	return 0;
}

int bh_client_list_events(bh_client *c, int64_t after_id, uint32_t limit, uint32_t wait_ms,
			  struct bh_client_events *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_cjson cJSON *in = cJSON_CreateObject();
	if (after_id > 0) {
		char id[24];
		snprintf(id, sizeof id, "%lld", (long long)after_id);
		cJSON_AddStringToObject(in, "afterId", id);
	}
	if (limit)
		cJSON_AddNumberToObject(in, "limit", limit);
	if (wait_ms)
		cJSON_AddNumberToObject(in, "waitMs", wait_ms);
	cleanup_free char *body = cJSON_PrintUnformatted(in);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "ListEvents", body, &json, err) < 0)
		return -1;
	return bh_client_parse_events(json, out, err);
}

int bh_client_list_events_newest(bh_client *c, int64_t before_id, uint32_t limit,
				 struct bh_client_events *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *json = NULL;
	if (newest_call(c, "ListEvents", NULL, before_id, limit, &json, err) < 0)
		return -1;
	return bh_client_parse_events(json, out, err);
}
