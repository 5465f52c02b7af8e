/* RunRecord in proto3 JSON, and the ownership of a record's strings once the
 * wire has made them (decoded, or copied into an error). The engine's
 * struct bh_record is used as is, so a client verifies what it decoded with
 * bh_record_verify(). */
#include "wire_internal.h"

#include <string.h>

/* RunRecord's fields in its wire order. The strings are owned once the wire
 * has made them; the digests and the session sit in the record's own slots. */
#define RECORD(member) WIRE_AT(struct bh_record, member)
static const struct wire_field record_fields[] = {
	{"version", WIRE_F_VERSION, RECORD(version)},
	{"requestSha256", WIRE_F_DIGEST, RECORD(request_sha256)},
	{"resultSha256", WIRE_F_DIGEST, RECORD(result_sha256)},
	{"provider", WIRE_F_STR, RECORD(provider)},
	{"isolation", WIRE_F_STR, RECORD(isolation)},
	{"environment", WIRE_F_STR, RECORD(environment)},
	{"policy", WIRE_F_STR, RECORD(policy)},
	{"startedUnixMs", WIRE_F_I64, RECORD(started_unix_ms)},
	{"endedUnixMs", WIRE_F_I64, RECORD(ended_unix_ms)},
	{"session", WIRE_F_DIGEST, RECORD(session)},
	{"sequence", WIRE_F_U64, RECORD(sequence)},
	{"previousSha256", WIRE_F_DIGEST, RECORD(previous_sha256)},
	{"recordSha256", WIRE_F_DIGEST, RECORD(record_sha256)},
	{"softwareIdentity", WIRE_F_STR, RECORD(software_identity)},
	{"softwareRuleId", WIRE_F_STR, RECORD(software_rule_id)},
	{"unanswered", WIRE_F_STR, RECORD(unanswered)},
};
#undef RECORD

cJSON *wire_record_json(const struct bh_record *rec)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(record_fields), rec);
	return o;
}

char *wire_encode_record(const struct bh_record *rec)
{
	return jw_print(wire_record_json(rec));
}

/* Every string an owned "", so a record half read (or copied into an error)
 * never holds a NULL one. */
void wire_record_init(struct bh_record *rec)
{
	memset(rec, 0, sizeof *rec);
	for (size_t i = 0; i < ARRAY_SIZE(record_fields); i++)
		if (record_fields[i].kind == WIRE_F_STR)
			*(char **)((char *)rec + record_fields[i].offset) = xstrdup("");
}

void wire_record_free(struct bh_record *rec)
{
	wire_fields_clear(WIRE_FIELDS(record_fields), rec, sizeof *rec);
}

void wire_record_copy(struct bh_record *dst, const struct bh_record *src)
{
	wire_fields_copy(WIRE_FIELDS(record_fields), dst, src);
}

int wire_record_read(const struct jr *r, const cJSON *obj, const char *path, struct bh_record *out)
{
	wire_record_init(out);
	if (wire_fields_read(r, obj, path, WIRE_FIELDS(record_fields), out) < 0) {
		wire_record_free(out);
		return -1;
	}
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
