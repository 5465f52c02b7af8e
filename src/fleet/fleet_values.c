/* The fleet bucket's values (fleet_values.h): one encoder and one strict
 * decoder per kind. A decoder refuses rather than repairs: a field missing,
 * of the wrong type, out of range or unknown, a duplicate key, a version
 * other than ours, trailing bytes, or a value naming another key than the
 * one it was found under. */
#include "fleet_values.h"

#include "base.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#define JSON_INT_MAX 9007199254740992.0 /* 2^53: every integer below is exact */

/* ---- names and texts ---- */

bool fleet_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > BH_FLEET_ID_MAX || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool fleet_fingerprint_ok(const char *fp)
{
	if (!fp || strlen(fp) != 64)
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!((fp[i] >= '0' && fp[i] <= '9') || (fp[i] >= 'a' && fp[i] <= 'f')))
			return false;
	return true;
}

bool fleet_text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		return false;
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (len == 0 || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
			return false;
		for (size_t k = 1; k < len; k++)
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
		if (len == 3 && ((c == 0xe0 && p[i + 1] < 0xa0) || (c == 0xed && p[i + 1] >= 0xa0)))
			return false; /* overlong, or a surrogate */
		if (len == 4 && ((c == 0xf0 && p[i + 1] < 0x90) || (c == 0xf4 && p[i + 1] >= 0x90)))
			return false;
		i += len;
	}
	return true;
}

static bool sandbox_name_ok(const char *s)
{
	/* a name bulkhead makes: one path component, never . or .. */
	return fleet_id_ok(s) && strlen(s) < sizeof ((struct bh_hibernated *)0)->sandbox;
}

static bool digest_ok(const char *s)
{
	return !*s || fleet_fingerprint_ok(s);
}

enum fleet_key_kind fleet_key_parse(const char *key, char name[BH_FLEET_ID_MAX + 1])
{
	static const struct {
		const char *prefix;
		enum fleet_key_kind kind;
	} kinds[] = {
		{"host.", FLEET_KEY_HOST}, {"session.", FLEET_KEY_SESSION}, {"drain.", FLEET_KEY_DRAIN}};
	name[0] = '\0';
	if (!key)
		return FLEET_KEY_BAD;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		size_t pl = strlen(kinds[i].prefix);
		if (strncmp(key, kinds[i].prefix, pl))
			continue;
		const char *rest = key + pl;
		bool ok = kinds[i].kind == FLEET_KEY_SESSION ? fleet_fingerprint_ok(rest) : fleet_id_ok(rest);
		if (!ok)
			return FLEET_KEY_BAD;
		snprintf(name, BH_FLEET_ID_MAX + 1, "%s", rest);
		return kinds[i].kind;
	}
	return FLEET_KEY_BAD;
}

/* ---- reading a document ---- */

static void cjson_deletep(cJSON **j)
{
	cJSON_Delete(*j);
}
#define cleanup_json __attribute__((cleanup(cjson_deletep)))

/* The document: an object, of our version, with exactly the fields named
 * (each once). */
static cJSON *doc_parse(const void *data, size_t len, const char *what, char **why)
{
	if (len == 0 || len > FLEET_VALUE_MAX) {
		why_set(why, "a %s value of %zu bytes (1 to %u)", what, len, FLEET_VALUE_MAX);
		return NULL;
	}
	if (memchr(data, '\0', len)) {
		why_set(why, "a %s value with a NUL byte", what);
		return NULL;
	}
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!j) {
		why_set(why, "a %s value that is not JSON", what);
		return NULL;
	}
	while (end && end < (const char *)data + len && strchr(" \t\r\n", *end))
		end++;
	if (end != (const char *)data + len || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		why_set(why, "a %s value that is not one JSON object", what);
		return NULL;
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "v");
	if (!cJSON_IsNumber(v) || v->valuedouble != FLEET_VALUE_VERSION) {
		cJSON_Delete(j);
		why_set(why, "a %s value of another version than %d", what, FLEET_VALUE_VERSION);
		return NULL;
	}
	return j;
}

static int doc_fields(const cJSON *j, const char *const *names, size_t n, const char *what, char **why)
{
	size_t seen = 0;
	for (const cJSON *c = j->child; c; c = c->next) {
		size_t i;
		for (i = 0; i < n; i++)
			if (c->string && !strcmp(c->string, names[i]))
				break;
		if (i == n)
			return why_set(why, "a %s value with an unknown field", what);
		for (const cJSON *d = j->child; d != c; d = d->next)
			if (!strcmp(d->string, c->string))
				return why_set(why, "a %s value with the field %s twice", what, names[i]);
		seen++;
	}
	if (seen != n)
		return why_set(why, "a %s value missing a field", what);
	return 0;
}

static int get_text(const cJSON *j, const char *name, char *out, size_t outsz, char **why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
	if (!cJSON_IsString(v) || !v->valuestring)
		return why_set(why, "%s is not a string", name);
	if (!fleet_text_ok(v->valuestring, outsz - 1))
		return why_set(why, "%s is too long or not printable UTF-8", name);
	snprintf(out, outsz, "%s", v->valuestring);
	return 0;
}

static int get_uint(const cJSON *j, const char *name, double max, uint64_t *out, char **why)
{
	*out = 0; /* set on every path: the optimizer's reading of the callers' locals */
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > max || v->valuedouble != floor(v->valuedouble))
		return why_set(why, "%s is not a whole number from 0 to %.0f", name, max);
	*out = (uint64_t)v->valuedouble;
	return 0;
}

static int get_u32(const cJSON *j, const char *name, uint32_t *out, char **why)
{
	uint64_t u = 0;
	if (get_uint(j, name, UINT32_MAX, &u, why) < 0)
		return -1;
	*out = (uint32_t)u;
	return 0;
}

static int get_ms(const cJSON *j, const char *name, int64_t *out, char **why)
{
	uint64_t u = 0;
	if (get_uint(j, name, JSON_INT_MAX, &u, why) < 0)
		return -1;
	*out = (int64_t)u;
	return 0;
}

static int get_bool(const cJSON *j, const char *name, bool *out, char **why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
	if (!cJSON_IsBool(v))
		return why_set(why, "%s is not true or false", name);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* A tier by name; "" is BH_TIER_UNKNOWN when unknown_ok. */
static int get_tier(const cJSON *j, const char *name, bool unknown_ok, enum bh_tier *out, char **why)
{
	char t[32];
	if (get_text(j, name, t, sizeof t, why) < 0)
		return -1;
	if (!*t && unknown_ok) {
		*out = BH_TIER_UNKNOWN;
		return 0;
	}
	if (bh_tier_parse(t, out) < 0)
		return why_set(why, "%s is not a tier", name);
	return 0;
}

static const char *tier_text(enum bh_tier t)
{
	return t >= 0 && t < BH_TIER_COUNT ? bh_tier_name(t) : "";
}

/* ---- host.<id> ---- */

static const char *const host_fields[] = {
	"v", "id", "incarnation", "tiers", "best_tier", "sessions", "hibernated", "max_sessions",
	"memory_budget_mb", "memory_used_mb", "pool_ready", "load1", "draining", "api", "version",
	"started_unix_ms", "heartbeat_unix_ms", "heartbeat_ms", "beat"};

char *fleet_host_encode(const struct fleet_host_value *v)
{
	const struct bh_fleet_host *h = &v->h;
	cJSON *j = cJSON_CreateObject();
	char inc[17];
	snprintf(inc, sizeof inc, "%016llx", (unsigned long long)h->incarnation);
	cJSON_AddNumberToObject(j, "v", FLEET_VALUE_VERSION);
	cJSON_AddStringToObject(j, "id", h->id);
	cJSON_AddStringToObject(j, "incarnation", inc);
	cJSON *tiers = cJSON_AddArrayToObject(j, "tiers");
	for (int t = 0; t < BH_TIER_COUNT; t++)
		if (h->tiers & (1u << t))
			cJSON_AddItemToArray(tiers, cJSON_CreateString(bh_tier_name(t)));
	cJSON_AddStringToObject(j, "best_tier", tier_text(h->best_tier));
	cJSON_AddNumberToObject(j, "sessions", h->sessions);
	cJSON_AddNumberToObject(j, "hibernated", h->hibernated);
	cJSON_AddNumberToObject(j, "max_sessions", h->max_sessions);
	cJSON_AddNumberToObject(j, "memory_budget_mb", h->memory_budget_mb);
	cJSON_AddNumberToObject(j, "memory_used_mb", h->memory_used_mb);
	cJSON_AddNumberToObject(j, "pool_ready", h->pool_ready);
	cJSON_AddNumberToObject(j, "load1", isfinite(h->load1) && h->load1 >= 0 ? h->load1 : 0);
	cJSON_AddBoolToObject(j, "draining", h->draining);
	cJSON_AddStringToObject(j, "api", h->api);
	cJSON_AddStringToObject(j, "version", h->version);
	cJSON_AddNumberToObject(j, "started_unix_ms", (double)h->started_unix_ms);
	cJSON_AddNumberToObject(j, "heartbeat_unix_ms", (double)h->heartbeat_unix_ms);
	cJSON_AddNumberToObject(j, "heartbeat_ms", v->heartbeat_ms);
	cJSON_AddNumberToObject(j, "beat", (double)v->beat);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!s)
		abort();
	return s;
}

static int host_decode(const cJSON *j, const char *key_name, struct fleet_host_value *out, char **why)
{
	struct bh_fleet_host *h = &out->h;
	char inc[32];
	if (doc_fields(j, host_fields, ARRAY_SIZE(host_fields), "host", why) < 0 ||
	    get_text(j, "id", h->id, sizeof h->id, why) < 0 ||
	    get_text(j, "incarnation", inc, sizeof inc, why) < 0)
		return -1;
	if (!fleet_id_ok(h->id) || (key_name && strcmp(h->id, key_name)))
		return why_set(why, "a host value whose id is not its key's");
	char *end = NULL;
	if (strlen(inc) != 16 || strspn(inc, "0123456789abcdef") != 16)
		return why_set(why, "incarnation is not 16 hex digits");
	h->incarnation = strtoull(inc, &end, 16);
	const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(j, "tiers");
	if (!cJSON_IsArray(tiers))
		return why_set(why, "tiers is not a list");
	for (const cJSON *t = tiers->child; t; t = t->next) {
		enum bh_tier tier;
		if (!cJSON_IsString(t) || bh_tier_parse(t->valuestring, &tier) < 0)
			return why_set(why, "tiers names what is not a tier");
		if (h->tiers & (1u << tier))
			return why_set(why, "tiers names a tier twice");
		h->tiers |= 1u << tier;
	}
	uint64_t beat = 0;
	const cJSON *load = cJSON_GetObjectItemCaseSensitive(j, "load1");
	if (get_tier(j, "best_tier", true, &h->best_tier, why) < 0 ||
	    get_u32(j, "sessions", &h->sessions, why) < 0 ||
	    get_u32(j, "hibernated", &h->hibernated, why) < 0 ||
	    get_u32(j, "max_sessions", &h->max_sessions, why) < 0 ||
	    get_u32(j, "memory_budget_mb", &h->memory_budget_mb, why) < 0 ||
	    get_u32(j, "memory_used_mb", &h->memory_used_mb, why) < 0 ||
	    get_u32(j, "pool_ready", &h->pool_ready, why) < 0 ||
	    get_bool(j, "draining", &h->draining, why) < 0 ||
	    get_text(j, "api", h->api, sizeof h->api, why) < 0 ||
	    get_text(j, "version", h->version, sizeof h->version, why) < 0 ||
	    get_ms(j, "started_unix_ms", &h->started_unix_ms, why) < 0 ||
	    get_ms(j, "heartbeat_unix_ms", &h->heartbeat_unix_ms, why) < 0 ||
	    get_u32(j, "heartbeat_ms", &out->heartbeat_ms, why) < 0 ||
	    get_uint(j, "beat", JSON_INT_MAX, &beat, why) < 0)
		return -1;
	out->beat = beat;
	if (!cJSON_IsNumber(load) || !isfinite(load->valuedouble) || load->valuedouble < 0 ||
	    load->valuedouble > 1e6)
		return why_set(why, "load1 is not a load average");
	h->load1 = load->valuedouble;
	if (h->best_tier != BH_TIER_UNKNOWN && !(h->tiers & (1u << h->best_tier)))
		return why_set(why, "best_tier is not among its tiers");
	if (out->heartbeat_ms == 0 || out->heartbeat_ms > 3600000u)
		return why_set(why, "heartbeat_ms is not from 1 ms to an hour");
	return 0;
}

int fleet_host_decode(const void *data, size_t len, const char *key_name, struct fleet_host_value *out,
		      char **why)
{
	memset(out, 0, sizeof *out);
	cleanup_json cJSON *j = doc_parse(data, len, "host", why);
	if (!j)
		return -1;
	if (host_decode(j, key_name, out, why) < 0) {
		memset(out, 0, sizeof *out);
		why_prefix(why, "host value");
		return -1;
	}
	return 0;
}

/* ---- session.<fp> ---- */

static const char *const entry_fields[] = {"v",	     "fingerprint", "host",	  "state",
					   "end_reason", "end_detail", "updated_unix_ms", "hib"};
static const char *const hib_fields[] = {
	"sandbox", "tier", "floor", "principal", "owner", "run_key", "egress_profile", "languages", "calls",
	"last_record_sha256", "created_unix_ms", "last_call_unix_ms", "hibernated_unix_ms", "lifetime_ms",
	"awake_ms"};

static const char *const state_names[] = {
	[BH_FLEET_LIVE] = "live", [BH_FLEET_HIBERNATED] = "hibernated", [BH_FLEET_ENDED] = "ended"};

const char *bh_fleet_entry_state_name(enum bh_fleet_entry_state s)
{
	return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

char *fleet_entry_encode(const struct bh_fleet_entry *e)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "v", FLEET_VALUE_VERSION);
	cJSON_AddStringToObject(j, "fingerprint", e->fingerprint);
	cJSON_AddStringToObject(j, "host", e->host);
	cJSON_AddStringToObject(j, "state", bh_fleet_entry_state_name(e->state));
	cJSON_AddStringToObject(j, "end_reason", e->state == BH_FLEET_ENDED ? bh_end_reason_name(e->end_reason) : "");
	cJSON_AddStringToObject(j, "end_detail", e->state == BH_FLEET_ENDED ? e->end_detail : "");
	cJSON_AddNumberToObject(j, "updated_unix_ms", (double)e->updated_unix_ms);
	if (e->state == BH_FLEET_HIBERNATED) {
		const struct bh_hibernated *h = &e->hib;
		cJSON *o = cJSON_AddObjectToObject(j, "hib");
		cJSON_AddStringToObject(o, "sandbox", h->sandbox);
		cJSON_AddStringToObject(o, "tier", tier_text(h->tier));
		cJSON_AddStringToObject(o, "floor", tier_text(h->floor));
		cJSON_AddStringToObject(o, "principal", h->principal);
		cJSON_AddStringToObject(o, "owner", h->owner);
		cJSON_AddStringToObject(o, "run_key", h->run_key);
		cJSON_AddStringToObject(o, "egress_profile", h->egress_profile);
		cJSON_AddNumberToObject(o, "languages", h->languages);
		cJSON_AddNumberToObject(o, "calls", (double)h->calls);
		cJSON_AddStringToObject(o, "last_record_sha256", h->last_record_sha256);
		cJSON_AddNumberToObject(o, "created_unix_ms", (double)h->created_unix_ms);
		cJSON_AddNumberToObject(o, "last_call_unix_ms", (double)h->last_call_unix_ms);
		cJSON_AddNumberToObject(o, "hibernated_unix_ms", (double)h->hibernated_unix_ms);
		cJSON_AddNumberToObject(o, "lifetime_ms", h->lifetime_ms);
		cJSON_AddNumberToObject(o, "awake_ms", (double)h->awake_ms);
	} else {
		cJSON_AddNullToObject(j, "hib");
	}
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!s)
		abort();
	return s;
}

static int hib_decode(const cJSON *o, struct bh_hibernated *h, char **why)
{
	if (!cJSON_IsObject(o))
		return why_set(why, "hib is not an object");
	if (doc_fields(o, hib_fields, ARRAY_SIZE(hib_fields), "hib", why) < 0)
		return -1;
	uint64_t calls = 0, awake = 0;
	if (get_text(o, "sandbox", h->sandbox, sizeof h->sandbox, why) < 0 ||
	    get_tier(o, "tier", false, &h->tier, why) < 0 || get_tier(o, "floor", true, &h->floor, why) < 0 ||
	    get_text(o, "principal", h->principal, sizeof h->principal, why) < 0 ||
	    get_text(o, "owner", h->owner, sizeof h->owner, why) < 0 ||
	    get_text(o, "run_key", h->run_key, sizeof h->run_key, why) < 0 ||
	    get_text(o, "egress_profile", h->egress_profile, sizeof h->egress_profile, why) < 0 ||
	    get_u32(o, "languages", &h->languages, why) < 0 ||
	    get_uint(o, "calls", JSON_INT_MAX, &calls, why) < 0 ||
	    get_text(o, "last_record_sha256", h->last_record_sha256, sizeof h->last_record_sha256, why) < 0 ||
	    get_ms(o, "created_unix_ms", &h->created_unix_ms, why) < 0 ||
	    get_ms(o, "last_call_unix_ms", &h->last_call_unix_ms, why) < 0 ||
	    get_ms(o, "hibernated_unix_ms", &h->hibernated_unix_ms, why) < 0 ||
	    get_u32(o, "lifetime_ms", &h->lifetime_ms, why) < 0 ||
	    get_uint(o, "awake_ms", JSON_INT_MAX, &awake, why) < 0)
		return -1;
	h->calls = calls;
	h->awake_ms = awake;
	if (!sandbox_name_ok(h->sandbox))
		return why_set(why, "hib.sandbox is not a sandbox name");
	if (!digest_ok(h->last_record_sha256))
		return why_set(why, "hib.last_record_sha256 is not a SHA-256 digest");
	if (h->languages >= (1u << BH_LANG_COUNT))
		return why_set(why, "hib.languages names an unknown language");
	return 0;
}

static int entry_decode(const cJSON *j, const char *key_name, struct bh_fleet_entry *e, char **why)
{
	char state[16], reason[32];
	if (doc_fields(j, entry_fields, ARRAY_SIZE(entry_fields), "session", why) < 0 ||
	    get_text(j, "fingerprint", e->fingerprint, sizeof e->fingerprint, why) < 0 ||
	    get_text(j, "host", e->host, sizeof e->host, why) < 0 ||
	    get_text(j, "state", state, sizeof state, why) < 0 ||
	    get_text(j, "end_reason", reason, sizeof reason, why) < 0 ||
	    get_text(j, "end_detail", e->end_detail, sizeof e->end_detail, why) < 0 ||
	    get_ms(j, "updated_unix_ms", &e->updated_unix_ms, why) < 0)
		return -1;
	if (!fleet_fingerprint_ok(e->fingerprint) || (key_name && strcmp(e->fingerprint, key_name)))
		return why_set(why, "a session value whose fingerprint is not its key's");
	if (!fleet_id_ok(e->host))
		return why_set(why, "host is not a host id");
	size_t s;
	for (s = 0; s < ARRAY_SIZE(state_names); s++)
		if (!strcmp(state, state_names[s]))
			break;
	if (s == ARRAY_SIZE(state_names))
		return why_set(why, "state is not live, hibernated or ended");
	e->state = (enum bh_fleet_entry_state)s;
	if (e->state == BH_FLEET_ENDED) {
		if (bh_end_reason_parse(reason, &e->end_reason) < 0 || e->end_reason == BH_END_NONE)
			return why_set(why, "an ended entry's end_reason is not an end reason");
	} else if (*reason || *e->end_detail) {
		return why_set(why, "an entry that has not ended has an end_reason");
	}
	const cJSON *hib = cJSON_GetObjectItemCaseSensitive(j, "hib");
	if (e->state == BH_FLEET_HIBERNATED) {
		if (hib_decode(hib, &e->hib, why) < 0)
			return -1;
		snprintf(e->hib.fingerprint, sizeof e->hib.fingerprint, "%s", e->fingerprint);
	} else if (!cJSON_IsNull(hib)) {
		return why_set(why, "hib is set on an entry that is not hibernated");
	}
	return 0;
}

int fleet_entry_decode(const void *data, size_t len, const char *key_name, struct bh_fleet_entry *out,
		       char **why)
{
	memset(out, 0, sizeof *out);
	cleanup_json cJSON *j = doc_parse(data, len, "session", why);
	if (!j)
		return -1;
	if (entry_decode(j, key_name, out, why) < 0) {
		memset(out, 0, sizeof *out);
		why_prefix(why, "session value");
		return -1;
	}
	return 0;
}

/* ---- drain.<id> ---- */

static const char *const drain_fields[] = {"v", "drain", "by", "at_unix_ms"};

char *fleet_drain_encode(bool drain, const char *by, int64_t at_unix_ms)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "v", FLEET_VALUE_VERSION);
	cJSON_AddBoolToObject(j, "drain", drain);
	cJSON_AddStringToObject(j, "by", by ? by : "");
	cJSON_AddNumberToObject(j, "at_unix_ms", (double)at_unix_ms);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!s)
		abort();
	return s;
}

int fleet_drain_decode(const void *data, size_t len, bool *drain, char **why)
{
	*drain = false;
	cleanup_json cJSON *j = doc_parse(data, len, "drain", why);
	if (!j)
		return -1;
	char by[BH_FLEET_ID_MAX + 1];
	int64_t at = 0;
	bool d = false;
	if (doc_fields(j, drain_fields, ARRAY_SIZE(drain_fields), "drain", why) < 0 ||
	    get_bool(j, "drain", &d, why) < 0 || get_text(j, "by", by, sizeof by, why) < 0 ||
	    get_ms(j, "at_unix_ms", &at, why) < 0) {
		why_prefix(why, "drain value");
		return -1;
	}
	if (*by && !fleet_id_ok(by))
		return why_set(why, "drain value: by is not a host id");
	*drain = d;
	return 0;
}

/* ---- forwarded messages ---- */

bool fleet_path_ok(const char *path)
{
	size_t n = path ? strlen(path) : 0;
	if (n == 0 || n > FLEET_PATH_MAX || path[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if (path[i] <= 0x20 || path[i] >= 0x7f)
			return false;
	return true;
}

bool fleet_header_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > FLEET_HEADER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", c)))
			return false;
	}
	return true;
}

bool fleet_header_value_ok(const char *value)
{
	size_t n = value ? strlen(value) : 0;
	if (!value || n > FLEET_HEADER_VALUE_MAX)
		return false;
	if (n && (value[0] == ' ' || value[0] == '\t' || value[n - 1] == ' ' || value[n - 1] == '\t'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)value[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

int fleet_header_split(char *line, const char **name, const char **value)
{
	char *colon = line ? strchr(line, ':') : NULL;
	if (!colon || (colon[1] != ' ' && colon[1] != '\0'))
		return -1;
	*colon = '\0';
	*name = line;
	*value = colon[1] ? colon + 2 : colon + 1; /* "name:" is an empty value (trailing space trimmed) */
	if (!fleet_header_name_ok(*name) || !fleet_header_value_ok(*value)) {
		*colon = ':';
		return -1;
	}
	return 0;
}

int fleet_status_parse(const char *text, unsigned *status)
{
	if (!text || strlen(text) != 3 || strspn(text, "0123456789") != 3)
		return -1;
	unsigned s = (unsigned)atoi(text);
	if (s < 100 || s > 599)
		return -1;
	*status = s;
	return 0;
}
