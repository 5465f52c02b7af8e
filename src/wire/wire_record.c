/* RunRecord in proto3 JSON, and the ownership of a record's strings once the
 * wire has made them (decoded, or copied into an error). The engine's
 * struct bh_record is used as is, so a client verifies what it decoded with
 * bh_record_verify(). */
#include "wire_internal.h"

#include <string.h>

cJSON *wire_record_json(const struct bh_record *rec)
{
	cJSON *o = jw_object();
	jw_u32(o, "version", rec->version > 0 ? (uint32_t)rec->version : 0);
	jw_string(o, "requestSha256", rec->request_sha256);
	jw_string(o, "resultSha256", rec->result_sha256);
	jw_string(o, "provider", rec->provider);
	jw_string(o, "isolation", rec->isolation);
	jw_string(o, "environment", rec->environment);
	jw_string(o, "policy", rec->policy);
	jw_i64(o, "startedUnixMs", rec->started_unix_ms);
	jw_i64(o, "endedUnixMs", rec->ended_unix_ms);
	jw_string(o, "session", rec->session);
	jw_u64(o, "sequence", rec->sequence);
	jw_string(o, "previousSha256", rec->previous_sha256);
	jw_string(o, "recordSha256", rec->record_sha256);
	jw_string(o, "softwareIdentity", rec->software_identity);
	jw_string(o, "softwareRuleId", rec->software_rule_id);
	jw_string(o, "unanswered", rec->unanswered);
	return o;
}

char *wire_encode_record(const struct bh_record *rec)
{
	return jw_print(wire_record_json(rec));
}

void wire_record_init(struct bh_record *rec)
{
	memset(rec, 0, sizeof *rec);
	rec->unanswered = xstrdup("");
	rec->provider = xstrdup("");
	rec->isolation = xstrdup("");
	rec->environment = xstrdup("");
	rec->policy = xstrdup("");
	rec->software_identity = xstrdup("");
	rec->software_rule_id = xstrdup("");
}

void wire_record_free(struct bh_record *rec)
{
	if (!rec)
		return;
	free((char *)rec->unanswered);
	free((char *)rec->provider);
	free((char *)rec->isolation);
	free((char *)rec->environment);
	free((char *)rec->policy);
	free((char *)rec->software_identity);
	free((char *)rec->software_rule_id);
	memset(rec, 0, sizeof *rec);
}

void wire_record_copy(struct bh_record *dst, const struct bh_record *src)
{
	*dst = *src;
	dst->unanswered = xstrdup(src->unanswered);
	dst->provider = xstrdup(src->provider);
	dst->isolation = xstrdup(src->isolation);
	dst->environment = xstrdup(src->environment);
	dst->policy = xstrdup(src->policy);
	dst->software_identity = xstrdup(src->software_identity);
	dst->software_rule_id = xstrdup(src->software_rule_id);
}

/* A digest field must fit the record's 64-hex slot. */
static int read_digest(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		       char dst[65])
{
	cleanup_free char *s = NULL;
	size_t n = 0;
	if (jr_string(r, obj, path, name, &s, &n) < 0)
		return -1;
	if (n > 64)
		return jr_fail(r, "%s%s%s is longer than a SHA-256 hex digest", path, *path ? "." : "",
			       name);
	memcpy(dst, s, n + 1);
	return 0;
}

static int read_owned(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		      const char **dst)
{
	char *s = NULL;
	if (jr_string(r, obj, path, name, &s, NULL) < 0)
		return -1;
	free((char *)*dst);
	*dst = s;
	return 0;
}

int wire_record_read(const struct jr *r, const cJSON *obj, const char *path, struct bh_record *out)
{
	uint32_t version = 0;
	wire_record_init(out);
	if (jr_u32(r, obj, path, "version", &version) < 0 ||
	    read_digest(r, obj, path, "requestSha256", out->request_sha256) < 0 ||
	    read_digest(r, obj, path, "resultSha256", out->result_sha256) < 0 ||
	    read_owned(r, obj, path, "provider", &out->provider) < 0 ||
	    read_owned(r, obj, path, "isolation", &out->isolation) < 0 ||
	    read_owned(r, obj, path, "environment", &out->environment) < 0 ||
	    read_owned(r, obj, path, "policy", &out->policy) < 0 ||
	    jr_i64(r, obj, path, "startedUnixMs", &out->started_unix_ms) < 0 ||
	    jr_i64(r, obj, path, "endedUnixMs", &out->ended_unix_ms) < 0 ||
	    read_digest(r, obj, path, "session", out->session) < 0 ||
	    jr_u64(r, obj, path, "sequence", &out->sequence) < 0 ||
	    read_digest(r, obj, path, "previousSha256", out->previous_sha256) < 0 ||
	    read_digest(r, obj, path, "recordSha256", out->record_sha256) < 0 ||
	    read_owned(r, obj, path, "softwareIdentity", &out->software_identity) < 0 ||
	    read_owned(r, obj, path, "softwareRuleId", &out->software_rule_id) < 0 ||
	    read_owned(r, obj, path, "unanswered", &out->unanswered) < 0) {
		wire_record_free(out);
		return -1;
	}
	if (version > INT32_MAX) {
		wire_record_free(out);
		return jr_fail(r, "%s%sversion is out of range", path, *path ? "." : "");
	}
	out->version = (int)version;
	return 0;
}

int wire_decode_record(const char *body, size_t len, struct bh_record *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	cleanup_free char *why = NULL;
	memset(out, 0, sizeof *out);
	if (wire_parse_body(body, len, &root, &why) < 0)
		return wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "the record: %s", why);
	struct jr r = {st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED};
	return wire_record_read(&r, root, "", out);
}
