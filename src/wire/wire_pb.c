/* The three error details in binary protobuf, by hand: three small messages
 * do not justify a protobuf runtime. Field numbers are plimsoll's
 * (proto/plimsoll/v1/sandbox.proto):
 *   NotDispatched  { NotDispatchedReason reason = 1; }
 *   SessionEnded   { SessionEnd reason = 1; string detail = 2; }
 *   UnansweredCall { RunRecord record = 1; }
 *   RunRecord      { uint32 version = 1; string request_sha256 = 2;
 *                    string result_sha256 = 3; string provider = 4;
 *                    string isolation = 5; string environment = 6;
 *                    string policy = 7; int64 started_unix_ms = 8;
 *                    int64 ended_unix_ms = 9; string session = 10;
 *                    uint64 sequence = 11; string previous_sha256 = 12;
 *                    string record_sha256 = 13; string software_identity = 14;
 *                    string software_rule_id = 15; string unanswered = 16; } */
#include "wire_internal.h"

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

struct pb {
	uint8_t *data;
	size_t len, cap;
};

static void pb_put(struct pb *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n)
			cap *= 2;
		b->data = wire_check_alloc(realloc(b->data, cap));
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_put(b, tmp, n);
}

static void pb_tag(struct pb *b, unsigned field, unsigned wire_type)
{
	pb_varint(b, (uint64_t)field << 3 | wire_type);
}

/* proto3: a zero scalar is not written. An enum or int32 that is negative
 * goes out sign-extended to ten bytes, as protobuf writes it. */
static void pb_int(struct pb *b, unsigned field, int64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, (uint64_t)v);
}

static void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	pb_put(b, p, n);
}

static void pb_string(struct pb *b, unsigned field, const char *s)
{
	if (s && *s)
		pb_bytes(b, field, s, strlen(s));
}

static void pb_done(struct pb *b, struct wire_bytes *out)
{
	out->data = b->data ? b->data : xzalloc(1);
	out->len = b->len;
}

void wire_pb_encode_not_dispatched(enum wire_refusal reason, struct wire_bytes *out)
{
	struct pb b = {0};
	pb_int(&b, 1, reason);
	pb_done(&b, out);
}

void wire_pb_encode_session_ended(enum wire_session_end end, const char *detail,
				  struct wire_bytes *out)
{
	struct pb b = {0};
	pb_int(&b, 1, end);
	pb_string(&b, 2, detail);
	pb_done(&b, out);
}

static void pb_record(struct pb *b, const struct bh_record *rec)
{
	pb_uint(b, 1, (uint32_t)rec->version);
	pb_string(b, 2, rec->request_sha256);
	pb_string(b, 3, rec->result_sha256);
	pb_string(b, 4, rec->provider);
	pb_string(b, 5, rec->isolation);
	pb_string(b, 6, rec->environment);
	pb_string(b, 7, rec->policy);
	pb_int(b, 8, rec->started_unix_ms);
	pb_int(b, 9, rec->ended_unix_ms);
	pb_string(b, 10, rec->session);
	pb_uint(b, 11, rec->sequence);
	pb_string(b, 12, rec->previous_sha256);
	pb_string(b, 13, rec->record_sha256);
	pb_string(b, 14, rec->software_identity);
	pb_string(b, 15, rec->software_rule_id);
	pb_string(b, 16, rec->unanswered);
}

void wire_pb_encode_unanswered_call(const struct bh_record *rec, struct wire_bytes *out)
{
	struct pb msg = {0}, inner = {0};
	if (rec) {
		pb_record(&inner, rec);
		/* A set message field is written even when empty. */
		pb_bytes(&msg, 1, inner.data ? inner.data : (const uint8_t *)"", inner.len);
		free(inner.data);
	}
	pb_done(&msg, out);
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p;
	size_t n, i;
};

static int rd_varint(struct rd *r, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (r->i >= r->n)
			return -1; /* truncated */
		uint8_t c = r->p[r->i++];
		if (shift == 63 && c > 1)
			return -1; /* past 64 bits */
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1; /* longer than ten bytes */
}

/* One field: its number, wire type, and value (varint in *v, or a span). */
struct field {
	unsigned number, type;
	uint64_t v;
	const uint8_t *span;
	size_t span_len;
};

static int rd_field(struct rd *r, struct field *f)
{
	uint64_t tag;
	if (rd_varint(r, &tag) < 0)
		return -1;
	f->number = (unsigned)(tag >> 3);
	f->type = (unsigned)(tag & 7);
	if (f->number == 0 || tag >> 3 > 0x1fffffff)
		return -1;
	switch (f->type) {
	case WT_VARINT:
		return rd_varint(r, &f->v);
	case WT_LEN: {
		uint64_t n;
		if (rd_varint(r, &n) < 0 || n > r->n - r->i)
			return -1;
		f->span = r->p + r->i;
		f->span_len = (size_t)n;
		r->i += (size_t)n;
		return 0;
	}
	case WT_I64:
	case WT_I32: {
		size_t n = f->type == WT_I64 ? 8 : 4;
		if (n > r->n - r->i)
			return -1;
		r->i += n;
		return 0;
	}
	default:
		return -1; /* groups have no place in proto3 */
	}
}

static int want(const struct field *f, unsigned type)
{
	return f->type == type ? 0 : -1;
}

/* An enum is an int32: the low 32 bits, sign included. */
static int32_t as_int32(uint64_t v)
{
	return (int32_t)(uint32_t)(v & 0xffffffffu);
}

static int span_string(const struct field *f, char **out)
{
	if (!wire_utf8_valid(f->span, f->span_len))
		return -1;
	free(*out);
	*out = xstrndup((const char *)f->span, f->span_len);
	return 0;
}

/* A proto3 enum field: a varint, its low 32 bits an int32 (as_int32). */
static int enum_field(const struct field *f, int32_t *v)
{
	if (want(f, WT_VARINT) < 0)
		return -1;
	*v = as_int32(f->v);
	return 0;
}

int wire_pb_decode_not_dispatched(const uint8_t *p, size_t n, enum wire_refusal *reason)
{
	struct rd r = {p, n, 0};
	struct field f;
	int32_t v = 0;
	while (r.i < r.n) {
		if (rd_field(&r, &f) < 0)
			return -1;
		if (f.number == 1 && enum_field(&f, &v) < 0)
			return -1;
	}
	*reason = (enum wire_refusal)v;
	return 0;
}

static enum wire_session_end end_of_number(int32_t v)
{
	return v >= WIRE_END_OPEN && v <= WIRE_END_UNCLAIMED ? (enum wire_session_end)v
							     : WIRE_END_UNKNOWN;
}

int wire_pb_decode_session_ended(const uint8_t *p, size_t n, enum wire_session_end *end,
				 char **detail)
{
	struct rd r = {p, n, 0};
	struct field f;
	int32_t v = 0;
	cleanup_free char *text = NULL;
	while (r.i < r.n) {
		if (rd_field(&r, &f) < 0)
			return -1;
		if (f.number == 1) {
			if (enum_field(&f, &v) < 0)
				return -1;
		} else if (f.number == 2) {
			if (want(&f, WT_LEN) < 0 || span_string(&f, &text) < 0)
				return -1;
		}
	}
	*end = end_of_number(v);
	*detail = text ? steal_ptr(text) : xstrdup("");
	return 0;
}

static int copy_digest(const struct field *f, char dst[65])
{
	if (f->span_len > 64 || !wire_utf8_valid(f->span, f->span_len))
		return -1;
	memcpy(dst, f->span, f->span_len);
	dst[f->span_len] = '\0';
	return 0;
}

static int decode_record(const uint8_t *p, size_t n, struct bh_record *rec)
{
	struct rd r = {p, n, 0};
	struct field f;
	while (r.i < r.n) {
		if (rd_field(&r, &f) < 0)
			return -1;
		char **str = NULL;
		char *digest = NULL;
		switch (f.number) {
		case 1:
			if (want(&f, WT_VARINT) < 0)
				return -1;
			rec->version = (int)(uint32_t)f.v;
			continue;
		case 8:
		case 9:
			if (want(&f, WT_VARINT) < 0)
				return -1;
			*(f.number == 8 ? &rec->started_unix_ms : &rec->ended_unix_ms) = (int64_t)f.v;
			continue;
		case 11:
			if (want(&f, WT_VARINT) < 0)
				return -1;
			rec->sequence = f.v;
			continue;
		case 2: digest = rec->request_sha256; break;
		case 3: digest = rec->result_sha256; break;
		case 10: digest = rec->session; break;
		case 12: digest = rec->previous_sha256; break;
		case 13: digest = rec->record_sha256; break;
		case 4: str = (char **)&rec->provider; break;
		case 5: str = (char **)&rec->isolation; break;
		case 6: str = (char **)&rec->environment; break;
		case 7: str = (char **)&rec->policy; break;
		case 14: str = (char **)&rec->software_identity; break;
		case 15: str = (char **)&rec->software_rule_id; break;
		case 16: str = (char **)&rec->unanswered; break;
		default:
			continue; /* a field a newer daemon added */
		}
		if (want(&f, WT_LEN) < 0)
			return -1;
		if (digest ? copy_digest(&f, digest) < 0 : span_string(&f, str) < 0)
			return -1;
	}
	return 0;
}

int wire_pb_decode_unanswered_call(const uint8_t *p, size_t n, struct bh_record *rec,
				   bool *has_record)
{
	struct rd r = {p, n, 0};
	struct field f;
	wire_record_init(rec);
	*has_record = false;
	while (r.i < r.n) {
		if (rd_field(&r, &f) < 0)
			goto fail;
		if (f.number != 1)
			continue;
		if (want(&f, WT_LEN) < 0 || decode_record(f.span, f.span_len, rec) < 0)
			goto fail;
		*has_record = true;
	}
	return 0;
fail:
	wire_record_free(rec);
	*has_record = false;
	return -1;
}
