/* bulkhead.v1.OperatorService answers about sessions, leaks and the tier
 * evidence, and the reading every operator answer shares. The daemon encodes
 * them; the client and the console decode them. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* ---- reading an answer ---- */

struct jr op_reader(struct wire_status *st)
{
	return (struct jr){st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED};
}

int op_parse(const char *method, const char *body, size_t len, cJSON **root,
	     struct wire_status *st)
{
	cleanup_free char *why = NULL;
	if (wire_parse_body(body, len, root, &why) < 0)
		return wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
				 "%s: the answer is not a JSON object: %s", method, why);
	return 0;
}

int op_refused(const char *method, struct wire_status *st)
{
	/* Moved right (the end of a long message falls off), then prefixed. */
	size_t prefix = strlen(method) + 2, len = strlen(st->msg);
	if (prefix >= sizeof st->msg)
		return -1;
	if (len > sizeof st->msg - 1 - prefix)
		len = sizeof st->msg - 1 - prefix;
	memmove(st->msg + prefix, st->msg, len);
	st->msg[prefix + len] = '\0';
	memcpy(st->msg, method, prefix - 2);
	memcpy(st->msg + prefix - 2, ": ", 2);
	return -1;
}

int op_read_str(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		const char **dst)
{
	char *s = NULL;
	if (jr_string(r, obj, path, name, &s, NULL) < 0)
		return -1;
	*dst = s;
	return 0;
}

int op_read_fixed(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		  char *dst, size_t size)
{
	cleanup_free char *s = NULL;
	size_t n = 0;
	if (jr_string(r, obj, path, name, &s, &n) < 0)
		return -1;
	if (n >= size)
		return jr_fail(r, "%s%s%s is longer than %zu bytes", path, *path ? "." : "", name,
			       size - 1);
	memcpy(dst, s, n + 1);
	return 0;
}

int op_read_items(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		  size_t size, op_item_fn read, void **items, size_t *n)
{
	const cJSON *arr;
	*items = NULL;
	*n = 0;
	if (jr_array(r, obj, path, name, &arr) < 0)
		return -1;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	char *v = xzalloc(count * size);
	*items = v;
	for (const cJSON *el = arr ? arr->child : NULL; el; el = el->next) {
		char sub[160];
		snprintf(sub, sizeof sub, "%s%s%s[%zu]", path, *path ? "." : "", name, *n);
		if (!cJSON_IsObject(el))
			return jr_fail(r, "%s must be a JSON object", sub);
		if (read(r, el, sub, v + *n * size) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

int op_decode_list(const char *method, const char *body, size_t len, const char *name,
		   size_t size, op_item_fn read, void **items, size_t *n, op_rest_fn rest,
		   void *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	*items = NULL;
	*n = 0;
	if (op_parse(method, body, len, &root, st) < 0)
		return -1;
	if (op_read_items(&r, root, "", name, size, read, items, n) < 0 ||
	    (rest && rest(&r, root, out) < 0))
		return op_refused(method, st);
	return 0;
}

cJSON *op_list(cJSON *obj, const char *name)
{
	return wire_check_alloc(cJSON_AddArrayToObject(obj, name));
}

/* ---- sessions ---- */

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

struct wire_operator_session wire_operator_session_of(const struct bh_session_info *i)
{
	return (struct wire_operator_session){
		.fingerprint = or_empty(i->fingerprint),
		.sandbox = or_empty(i->sandbox),
		.state = bh_session_state_name(i->state),
		.isolation = bh_tier_name(i->tier),
		.floor = i->floor > BH_TIER_NONE ? bh_tier_name(i->floor) : "",
		.principal = or_empty(i->principal),
		.owner = or_empty(i->owner),
		.run_key = or_empty(i->run_key),
		.calls = i->calls,
		.last_record_sha256 = or_empty(i->last_record_sha256),
		.created_unix_ms = i->created_unix_ms,
		.last_call_unix_ms = i->last_call_unix_ms,
		.expires_unix_ms = i->expires_unix_ms,
		.awake_ms = i->awake_ms,
		.end_reason = bh_end_reason_name(i->end_reason),
	};
}

static cJSON *session_json(const struct wire_operator_session *s)
{
	cJSON *o = jw_object();
	jw_string(o, "session", s->fingerprint);
	jw_string(o, "sandbox", s->sandbox);
	jw_string(o, "state", s->state);
	jw_string(o, "isolation", s->isolation);
	jw_string(o, "minimumIsolation", s->floor);
	jw_string(o, "principal", s->principal);
	jw_string(o, "owner", s->owner);
	jw_string(o, "runKey", s->run_key);
	jw_u64(o, "calls", s->calls);
	jw_string(o, "lastRecordSha256", s->last_record_sha256);
	jw_i64(o, "createdUnixMs", s->created_unix_ms);
	jw_i64(o, "lastCallUnixMs", s->last_call_unix_ms);
	jw_i64(o, "expiresUnixMs", s->expires_unix_ms);
	jw_u64(o, "awakeMs", s->awake_ms);
	jw_string(o, "endReason", s->end_reason);
	return o;
}

char *wire_operator_encode_session(const struct wire_operator_session *s)
{
	return jw_print(session_json(s));
}

char *wire_operator_encode_sessions(const struct wire_operator_sessions *s)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "sessions");
	for (size_t i = 0; i < s->n; i++)
		cJSON_AddItemToArray(list, session_json(&s->sessions[i]));
	return jw_print(o);
}

void wire_operator_session_free(struct wire_operator_session *s)
{
	if (!s)
		return;
	free((char *)s->fingerprint);
	free((char *)s->sandbox);
	free((char *)s->state);
	free((char *)s->isolation);
	free((char *)s->floor);
	free((char *)s->principal);
	free((char *)s->owner);
	free((char *)s->run_key);
	free((char *)s->last_record_sha256);
	free((char *)s->end_reason);
	memset(s, 0, sizeof *s);
}

void wire_operator_sessions_free(struct wire_operator_sessions *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->sessions && i < s->n; i++)
		wire_operator_session_free(&s->sessions[i]);
	free(s->sessions);
	memset(s, 0, sizeof *s);
}

static int read_session(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct wire_operator_session *out = item;
	memset(out, 0, sizeof *out);
	if (op_read_str(r, o, path, "session", &out->fingerprint) < 0 ||
	    op_read_str(r, o, path, "sandbox", &out->sandbox) < 0 ||
	    op_read_str(r, o, path, "state", &out->state) < 0 ||
	    op_read_str(r, o, path, "isolation", &out->isolation) < 0 ||
	    op_read_str(r, o, path, "minimumIsolation", &out->floor) < 0 ||
	    op_read_str(r, o, path, "principal", &out->principal) < 0 ||
	    op_read_str(r, o, path, "owner", &out->owner) < 0 ||
	    op_read_str(r, o, path, "runKey", &out->run_key) < 0 ||
	    jr_u64(r, o, path, "calls", &out->calls) < 0 ||
	    op_read_str(r, o, path, "lastRecordSha256", &out->last_record_sha256) < 0 ||
	    jr_i64(r, o, path, "createdUnixMs", &out->created_unix_ms) < 0 ||
	    jr_i64(r, o, path, "lastCallUnixMs", &out->last_call_unix_ms) < 0 ||
	    jr_i64(r, o, path, "expiresUnixMs", &out->expires_unix_ms) < 0 ||
	    jr_u64(r, o, path, "awakeMs", &out->awake_ms) < 0 ||
	    op_read_str(r, o, path, "endReason", &out->end_reason) < 0) {
		wire_operator_session_free(out);
		return -1;
	}
	return 0;
}

int wire_operator_decode_session(const char *body, size_t len, struct wire_operator_session *out,
				 struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("GetSession", body, len, &root, st) < 0)
		return -1;
	if (read_session(&r, root, "", out) < 0)
		return op_refused("GetSession", st);
	return 0;
}

int wire_operator_decode_sessions(const char *body, size_t len, struct wire_operator_sessions *out,
				  struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListSessions", body, len, "sessions", sizeof *out->sessions,
				read_session, &items, &out->n, NULL, NULL, st);
	out->sessions = items;
	if (rc < 0)
		wire_operator_sessions_free(out);
	return rc;
}

/* ---- Close and the other actions ---- */

char *wire_operator_encode_closed(const struct wire_operator_closed *c)
{
	cJSON *o = jw_object();
	jw_string(o, "session", c->session);
	jw_u64(o, "calls", c->calls);
	jw_string(o, "lastRecordSha256", c->last_record_sha256);
	jw_string(o, "endReason", c->end_reason);
	return jw_print(o);
}

void wire_operator_closed_free(struct wire_operator_closed *c)
{
	if (!c)
		return;
	free((char *)c->session);
	free((char *)c->last_record_sha256);
	free((char *)c->end_reason);
	memset(c, 0, sizeof *c);
}

int wire_operator_decode_closed(const char *body, size_t len, struct wire_operator_closed *out,
				struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("Close", body, len, &root, st) < 0)
		return -1;
	if (op_read_str(&r, root, "", "session", &out->session) < 0 ||
	    jr_u64(&r, root, "", "calls", &out->calls) < 0 ||
	    op_read_str(&r, root, "", "lastRecordSha256", &out->last_record_sha256) < 0 ||
	    op_read_str(&r, root, "", "endReason", &out->end_reason) < 0) {
		wire_operator_closed_free(out);
		return op_refused("Close", st);
	}
	return 0;
}

char *wire_operator_encode_done(void)
{
	return xstrdup("{}");
}

int wire_operator_decode_done(const char *method, const char *body, size_t len,
			      struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	return op_parse(method, body, len, &root, st);
}

/* ---- leaks and gc ---- */

const char *wire_operator_leak_list_name(enum wire_operator_leak_list l)
{
	switch (l) {
	case WIRE_LEAKS_FOUND:
		return "leaks";
	case WIRE_LEAKS_REAPED:
		return "reaped";
	case WIRE_LEAKS_WOULD_REAP:
		return "wouldReap";
	}
	return "leaks";
}

/* Leaks answers Leaks; Gc answers what it reaped or would reap. */
static const char *leak_method(enum wire_operator_leak_list l)
{
	return l == WIRE_LEAKS_FOUND ? "Leaks" : "Gc";
}

char *wire_operator_encode_leaks(enum wire_operator_leak_list l, const struct wire_operator_leaks *v)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, wire_operator_leak_list_name(l));
	for (size_t i = 0; i < v->n; i++) {
		const struct bh_leak *k = &v->leaks[i];
		cJSON *x = jw_object();
		jw_string(x, "kind", bh_leak_kind_name(k->kind));
		jw_string(x, "sandbox", k->sandbox);
		jw_string(x, "session", k->fingerprint);
		jw_string(x, "runtime", k->runtime);
		jw_string(x, "reason", k->reason);
		jw_string(x, "holder", k->holder);
		jw_i64(x, "firstSeenUnixMs", k->first_seen_ms);
		cJSON_AddItemToArray(list, x);
	}
	return jw_print(o);
}

void wire_operator_leaks_free(struct wire_operator_leaks *v)
{
	if (!v)
		return;
	free(v->leaks);
	memset(v, 0, sizeof *v);
}

static int read_leak_kind(const struct jr *r, const cJSON *o, const char *path,
			  enum bh_leak_kind *out)
{
	cleanup_free char *name = NULL;
	if (jr_string(r, o, path, "kind", &name, NULL) < 0)
		return -1;
	for (int k = BH_LEAK_ORPHAN; k <= BH_LEAK_STRAY_CGROUP; k++) {
		if (!strcmp(name, bh_leak_kind_name((enum bh_leak_kind)k))) {
			*out = (enum bh_leak_kind)k;
			return 0;
		}
	}
	char q[64];
	return jr_fail(r, "%s.kind %s is not a kind of leak this build knows", path,
		       wire_quote(q, name, strlen(name)));
}

static int read_leak(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_leak *out = item;
	memset(out, 0, sizeof *out);
	if (read_leak_kind(r, o, path, &out->kind) < 0 ||
	    op_read_fixed(r, o, path, "sandbox", out->sandbox, sizeof out->sandbox) < 0 ||
	    op_read_fixed(r, o, path, "session", out->fingerprint, sizeof out->fingerprint) < 0 ||
	    op_read_fixed(r, o, path, "runtime", out->runtime, sizeof out->runtime) < 0 ||
	    op_read_fixed(r, o, path, "reason", out->reason, sizeof out->reason) < 0 ||
	    op_read_fixed(r, o, path, "holder", out->holder, sizeof out->holder) < 0 ||
	    jr_i64(r, o, path, "firstSeenUnixMs", &out->first_seen_ms) < 0)
		return -1;
	return 0;
}

int wire_operator_decode_leaks(const char *body, size_t len, enum wire_operator_leak_list l,
			       struct wire_operator_leaks *out, struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list(leak_method(l), body, len, wire_operator_leak_list_name(l),
				sizeof *out->leaks, read_leak, &items, &out->n, NULL, NULL, st);
	out->leaks = items;
	if (rc < 0)
		wire_operator_leaks_free(out);
	return rc;
}

/* ---- evidence ---- */

char *wire_operator_encode_evidence(const struct wire_operator_evidence *e)
{
	cJSON *o = jw_object();
	jw_string(o, "strongest", e->strongest);
	jw_bool(o, "proving", e->proving);
	cJSON *tiers = op_list(o, "tiers");
	for (size_t i = 0; i < e->n_tiers; i++) {
		const struct wire_operator_tier *t = &e->tiers[i];
		cJSON *x = jw_object();
		jw_string(x, "tier", t->tier);
		jw_bool(x, "offered", t->offered);
		jw_bool(x, "cached", t->cached);
		jw_string(x, "runtime", t->runtime);
		jw_string(x, "runtimeVersion", t->runtime_version);
		jw_string(x, "reason", t->reason);
		jw_string(x, "environment", t->environment);
		cJSON *lines = op_list(x, "evidence");
		for (size_t j = 0; j < t->n_evidence; j++) {
			cJSON *l = jw_object();
			jw_string(l, "check", t->evidence[j].name);
			jw_string(l, "value", t->evidence[j].value);
			jw_string(l, "expect", t->evidence[j].expect);
			jw_bool(l, "ok", t->evidence[j].ok);
			cJSON_AddItemToArray(lines, l);
		}
		cJSON_AddItemToArray(tiers, x);
	}
	return jw_print(o);
}

static void lines_free(const struct bh_evidence_line *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free((char *)v[i].name);
		free((char *)v[i].value);
		free((char *)v[i].expect);
	}
	free((struct bh_evidence_line *)v);
}

static void tier_free(struct wire_operator_tier *t)
{
	free((char *)t->tier);
	free((char *)t->runtime);
	free((char *)t->runtime_version);
	free((char *)t->reason);
	free((char *)t->environment);
	lines_free(t->evidence, t->n_evidence);
	memset(t, 0, sizeof *t);
}

void wire_operator_evidence_free(struct wire_operator_evidence *e)
{
	if (!e)
		return;
	free((char *)e->strongest);
	for (size_t i = 0; e->tiers && i < e->n_tiers; i++)
		tier_free((struct wire_operator_tier *)&e->tiers[i]);
	free((struct wire_operator_tier *)e->tiers);
	memset(e, 0, sizeof *e);
}

static int read_line(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_evidence_line *out = item;
	if (op_read_str(r, o, path, "check", &out->name) < 0 ||
	    op_read_str(r, o, path, "value", &out->value) < 0 ||
	    op_read_str(r, o, path, "expect", &out->expect) < 0 ||
	    jr_bool(r, o, path, "ok", &out->ok) < 0) {
		free((char *)out->name);
		free((char *)out->value);
		free((char *)out->expect);
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}

static int read_tier(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct wire_operator_tier *out = item;
	void *lines = NULL;
	memset(out, 0, sizeof *out);
	if (op_read_str(r, o, path, "tier", &out->tier) < 0 ||
	    jr_bool(r, o, path, "offered", &out->offered) < 0 ||
	    jr_bool(r, o, path, "cached", &out->cached) < 0 ||
	    op_read_str(r, o, path, "runtime", &out->runtime) < 0 ||
	    op_read_str(r, o, path, "runtimeVersion", &out->runtime_version) < 0 ||
	    op_read_str(r, o, path, "reason", &out->reason) < 0 ||
	    op_read_str(r, o, path, "environment", &out->environment) < 0) {
		tier_free(out);
		return -1;
	}
	int rc = op_read_items(r, o, path, "evidence", sizeof *out->evidence, read_line, &lines,
			       &out->n_evidence);
	out->evidence = lines;
	if (rc < 0)
		tier_free(out);
	return rc;
}

static int read_evidence_rest(const struct jr *r, const cJSON *root, void *item)
{
	struct wire_operator_evidence *out = item;
	if (op_read_str(r, root, "", "strongest", &out->strongest) < 0 ||
	    jr_bool(r, root, "", "proving", &out->proving) < 0)
		return -1;
	return 0;
}

int wire_operator_decode_evidence(const char *body, size_t len, struct wire_operator_evidence *out,
				  struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("Evidence", body, len, "tiers", sizeof *out->tiers, read_tier, &items,
				&out->n_tiers, read_evidence_rest, out, st);
	out->tiers = items;
	if (rc < 0)
		wire_operator_evidence_free(out);
	return rc;
}
