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

int op_decode_fields(const char *method, const char *body, size_t len, const struct wire_field *f,
		     size_t n, void *out, size_t size, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, size);
	if (op_parse(method, body, len, &root, st) < 0)
		return -1;
	if (wire_fields_read(&r, root, "", f, n, out) < 0) {
		wire_fields_clear(f, n, out, size);
		return op_refused(method, st);
	}
	return 0;
}

/* An item that is its table: read whole, or cleared. */
static int read_fields_item(const struct jr *r, const cJSON *obj, const char *path,
			    const struct op_items *l, void *out)
{
	memset(out, 0, l->size);
	if (wire_fields_read(r, obj, path, l->fields, l->n_fields, out) < 0) {
		wire_fields_clear(l->fields, l->n_fields, out, l->size);
		return -1;
	}
	return 0;
}

int op_read_items(const struct jr *r, const cJSON *obj, const char *path, const struct op_items *l,
		  void **items, size_t *n)
{
	const cJSON *arr;
	*items = NULL;
	*n = 0;
	if (jr_array(r, obj, path, l->name, &arr) < 0)
		return -1;
	size_t count = arr ? (size_t)cJSON_GetArraySize(arr) : 0;
	char *v = xzalloc(count * l->size);
	*items = v;
	for (const cJSON *el = arr ? arr->child : NULL; el; el = el->next) {
		char sub[160];
		void *item = v + *n * l->size;
		snprintf(sub, sizeof sub, "%s%s%s[%zu]", path, *path ? "." : "", l->name, *n);
		if (!cJSON_IsObject(el))
			return jr_fail(r, "%s must be a JSON object", sub);
		if (l->read ? l->read(r, el, sub, item) < 0
			    : read_fields_item(r, el, sub, l, item) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

int op_decode_list(const char *method, const char *body, size_t len, const struct op_items *l,
		   void **items, size_t *n, op_rest_fn rest, void *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	*items = NULL;
	*n = 0;
	if (op_parse(method, body, len, &root, st) < 0)
		return -1;
	if (op_read_items(&r, root, "", l, items, n) < 0 || (rest && rest(&r, root, out) < 0))
		return op_refused(method, st);
	return 0;
}

cJSON *op_list(cJSON *obj, const char *name)
{
	return wire_check_alloc(cJSON_AddArrayToObject(obj, name));
}

void op_items_json(cJSON *obj, const struct op_items *l, const void *items, size_t n)
{
	cJSON *list = op_list(obj, l->name);
	for (size_t i = 0; i < n; i++) {
		cJSON *x = jw_object();
		wire_fields_json(x, l->fields, l->n_fields, (const char *)items + i * l->size);
		cJSON_AddItemToArray(list, x);
	}
}

void op_items_free(const struct op_items *l, void *items, size_t n)
{
	for (size_t i = 0; items && i < n; i++)
		wire_fields_free(l->fields, l->n_fields, (char *)items + i * l->size);
	free(items);
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
		/* ---- truth ---- */
		.call_code = or_empty(i->call_code),
		.call_language = i->call_started_unix_ms ? bh_language_name(i->call_language) : "",
		.call_started_unix_ms = i->call_started_unix_ms,
		.pauses_unix_ms = i->pauses_unix_ms,
		.hibernates_unix_ms = i->hibernates_unix_ms,
		.evidence = or_empty(i->evidence),
		.end_detail = or_empty(i->end_detail),
		/* ---- egress ---- */
		.egress_profile = or_empty(i->egress_profile),
		.egress_requests = i->egress_requests,
		.egress_last = or_empty(i->egress_last),
		/* ---- replay: refused calls ---- */
		.refused = i->refused,
		.last_refusal = or_empty(i->last_refusal),
	};
}

/* A Session's fields in wire order. */
#define SESSION(member) WIRE_AT(struct wire_operator_session, member)
static const struct wire_field session_fields[] = {
	{"session", WIRE_F_STR, SESSION(fingerprint)},
	{"sandbox", WIRE_F_STR, SESSION(sandbox)},
	{"state", WIRE_F_STR, SESSION(state)},
	{"isolation", WIRE_F_STR, SESSION(isolation)},
	{"minimumIsolation", WIRE_F_STR, SESSION(floor)},
	{"principal", WIRE_F_STR, SESSION(principal)},
	{"owner", WIRE_F_STR, SESSION(owner)},
	{"runKey", WIRE_F_STR, SESSION(run_key)},
	{"calls", WIRE_F_U64, SESSION(calls)},
	{"lastRecordSha256", WIRE_F_STR, SESSION(last_record_sha256)},
	{"createdUnixMs", WIRE_F_I64, SESSION(created_unix_ms)},
	{"lastCallUnixMs", WIRE_F_I64, SESSION(last_call_unix_ms)},
	{"expiresUnixMs", WIRE_F_I64, SESSION(expires_unix_ms)},
	{"awakeMs", WIRE_F_U64, SESSION(awake_ms)},
	{"endReason", WIRE_F_STR, SESSION(end_reason)},
	/* ---- truth ---- */
	{"callCode", WIRE_F_STR, SESSION(call_code)},
	{"callLanguage", WIRE_F_STR, SESSION(call_language)},
	{"callStartedUnixMs", WIRE_F_I64, SESSION(call_started_unix_ms)},
	{"pausesUnixMs", WIRE_F_I64, SESSION(pauses_unix_ms)},
	{"hibernatesUnixMs", WIRE_F_I64, SESSION(hibernates_unix_ms)},
	{"evidence", WIRE_F_STR, SESSION(evidence)},
	{"endDetail", WIRE_F_STR, SESSION(end_detail)},
	/* ---- egress ---- */
	{"egressProfile", WIRE_F_STR, SESSION(egress_profile)},
	{"egressRequests", WIRE_F_U64, SESSION(egress_requests)},
	{"egressLast", WIRE_F_STR, SESSION(egress_last)},
	/* ---- replay: refused calls ---- */
	{"refusedCalls", WIRE_F_U64, SESSION(refused)},
	{"lastRefusal", WIRE_F_STR, SESSION(last_refusal)},
};
#undef SESSION

static const struct op_items session_list =
	OP_FIELD_ITEMS("sessions", struct wire_operator_session, session_fields);

char *wire_operator_encode_session(const struct wire_operator_session *s)
{
	return wire_fields_print(WIRE_FIELDS(session_fields), s);
}

char *wire_operator_encode_sessions(const struct wire_operator_sessions *s)
{
	cJSON *o = jw_object();
	op_items_json(o, &session_list, s->sessions, s->n);
	return jw_print(o);
}

void wire_operator_session_free(struct wire_operator_session *s)
{
	wire_fields_clear(WIRE_FIELDS(session_fields), s, sizeof *s);
}

void wire_operator_sessions_free(struct wire_operator_sessions *s)
{
	if (!s)
		return;
	op_items_free(&session_list, s->sessions, s->n);
	memset(s, 0, sizeof *s);
}

int wire_operator_decode_session(const char *body, size_t len, struct wire_operator_session *out,
				 struct wire_status *st)
{
	return op_decode_fields("GetSession", body, len, WIRE_FIELDS(session_fields), out,
				sizeof *out, st);
}

int wire_operator_decode_sessions(const char *body, size_t len, struct wire_operator_sessions *out,
				  struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListSessions", body, len, &session_list, &items, &out->n, NULL,
				NULL, st);
	out->sessions = items;
	if (rc < 0)
		wire_operator_sessions_free(out);
	return rc;
}

/* ---- Close and the other actions ---- */

/* Close's answer in wire order. */
#define CLOSED(member) WIRE_AT(struct wire_operator_closed, member)
static const struct wire_field closed_fields[] = {
	{"session", WIRE_F_STR, CLOSED(session)},
	{"calls", WIRE_F_U64, CLOSED(calls)},
	{"lastRecordSha256", WIRE_F_STR, CLOSED(last_record_sha256)},
	{"endReason", WIRE_F_STR, CLOSED(end_reason)},
};
#undef CLOSED

char *wire_operator_encode_closed(const struct wire_operator_closed *c)
{
	return wire_fields_print(WIRE_FIELDS(closed_fields), c);
}

void wire_operator_closed_free(struct wire_operator_closed *c)
{
	wire_fields_clear(WIRE_FIELDS(closed_fields), c, sizeof *c);
}

int wire_operator_decode_closed(const char *body, size_t len, struct wire_operator_closed *out,
				struct wire_status *st)
{
	return op_decode_fields("Close", body, len, WIRE_FIELDS(closed_fields), out, sizeof *out,
				st);
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

/* A leak's fields after its kind (which is read by its name, below), in wire
 * order, into the engine's fixed slots. */
#define LEAK(member) WIRE_AT(struct bh_leak, member)
static const struct wire_field leak_fields[] = {
	{"sandbox", WIRE_F_FIXED, LEAK(sandbox)},
	{"session", WIRE_F_FIXED, LEAK(fingerprint)},
	{"runtime", WIRE_F_FIXED, LEAK(runtime)},
	{"reason", WIRE_F_FIXED, LEAK(reason)},
	{"holder", WIRE_F_FIXED, LEAK(holder)},
	{"firstSeenUnixMs", WIRE_F_I64, LEAK(first_seen_ms)},
};
#undef LEAK

char *wire_operator_encode_leaks(enum wire_operator_leak_list l, const struct wire_operator_leaks *v)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, wire_operator_leak_list_name(l));
	for (size_t i = 0; i < v->n; i++) {
		cJSON *x = jw_object();
		jw_string(x, "kind", bh_leak_kind_name(v->leaks[i].kind));
		wire_fields_json(x, WIRE_FIELDS(leak_fields), &v->leaks[i]);
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
	for (int k = BH_LEAK_ORPHAN; k < BH_LEAK_KIND_COUNT; k++) { /* every kind: inflight's interrupted too */
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
	    wire_fields_read(r, o, path, WIRE_FIELDS(leak_fields), out) < 0)
		return -1;
	return 0;
}

int wire_operator_decode_leaks(const char *body, size_t len, enum wire_operator_leak_list l,
			       struct wire_operator_leaks *out, struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	struct op_items list = {.name = wire_operator_leak_list_name(l),
				.size = sizeof *out->leaks,
				.read = read_leak};
	int rc = op_decode_list(leak_method(l), body, len, &list, &items, &out->n, NULL, NULL, st);
	out->leaks = items;
	if (rc < 0)
		wire_operator_leaks_free(out);
	return rc;
}

/* ---- evidence ---- */

/* The evidence answer's fields beside its tiers, a tier's beside its lines,
 * and a line's, each in wire order. */
#define EVIDENCE(member) WIRE_AT(struct wire_operator_evidence, member)
static const struct wire_field evidence_fields[] = {
	{"strongest", WIRE_F_STR, EVIDENCE(strongest)},
	{"proving", WIRE_F_BOOL, EVIDENCE(proving)},
};
#undef EVIDENCE

#define TIER(member) WIRE_AT(struct wire_operator_tier, member)
static const struct wire_field tier_fields[] = {
	{"tier", WIRE_F_STR, TIER(tier)},
	{"offered", WIRE_F_BOOL, TIER(offered)},
	{"cached", WIRE_F_BOOL, TIER(cached)},
	{"runtime", WIRE_F_STR, TIER(runtime)},
	{"runtimeVersion", WIRE_F_STR, TIER(runtime_version)},
	{"reason", WIRE_F_STR, TIER(reason)},
	{"environment", WIRE_F_STR, TIER(environment)},
};
#undef TIER

#define LINE(member) WIRE_AT(struct bh_evidence_line, member)
static const struct wire_field line_fields[] = {
	{"check", WIRE_F_STR, LINE(name)},
	{"value", WIRE_F_STR, LINE(value)},
	{"expect", WIRE_F_STR, LINE(expect)},
	{"ok", WIRE_F_BOOL, LINE(ok)},
};
#undef LINE

static const struct op_items line_list =
	OP_FIELD_ITEMS("evidence", struct bh_evidence_line, line_fields);

char *wire_operator_encode_evidence(const struct wire_operator_evidence *e)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(evidence_fields), e);
	cJSON *tiers = op_list(o, "tiers");
	for (size_t i = 0; i < e->n_tiers; i++) {
		const struct wire_operator_tier *t = &e->tiers[i];
		cJSON *x = jw_object();
		wire_fields_json(x, WIRE_FIELDS(tier_fields), t);
		op_items_json(x, &line_list, t->evidence, t->n_evidence);
		cJSON_AddItemToArray(tiers, x);
	}
	return jw_print(o);
}

static void tier_free(struct wire_operator_tier *t)
{
	wire_fields_free(WIRE_FIELDS(tier_fields), t);
	op_items_free(&line_list, (struct bh_evidence_line *)t->evidence, t->n_evidence);
	memset(t, 0, sizeof *t);
}

void wire_operator_evidence_free(struct wire_operator_evidence *e)
{
	if (!e)
		return;
	wire_fields_free(WIRE_FIELDS(evidence_fields), e);
	for (size_t i = 0; e->tiers && i < e->n_tiers; i++)
		tier_free((struct wire_operator_tier *)&e->tiers[i]);
	free((struct wire_operator_tier *)e->tiers);
	memset(e, 0, sizeof *e);
}

static int read_tier(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct wire_operator_tier *out = item;
	void *lines = NULL;
	memset(out, 0, sizeof *out);
	if (wire_fields_read(r, o, path, WIRE_FIELDS(tier_fields), out) < 0) {
		tier_free(out);
		return -1;
	}
	int rc = op_read_items(r, o, path, &line_list, &lines, &out->n_evidence);
	out->evidence = lines;
	if (rc < 0)
		tier_free(out);
	return rc;
}

static int read_evidence_rest(const struct jr *r, const cJSON *root, void *item)
{
	return wire_fields_read(r, root, "", WIRE_FIELDS(evidence_fields), item);
}

int wire_operator_decode_evidence(const char *body, size_t len, struct wire_operator_evidence *out,
				  struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	static const struct op_items tiers = {.name = "tiers",
					      .size = sizeof *out->tiers,
					      .read = read_tier};
	int rc = op_decode_list("Evidence", body, len, &tiers, &items, &out->n_tiers,
				read_evidence_rest, out, st);
	out->tiers = items;
	if (rc < 0)
		wire_operator_evidence_free(out);
	return rc;
}
