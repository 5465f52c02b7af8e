/* The walkers over a message's field table (wire_internal.h): each field is
 * written, read and freed by its kind, through the jw_ and jr_ helpers, so a
 * message listed as a table keeps the bytes and the refusals its
 * hand-written encoder and decoder had. */
#include "wire_internal.h"

#include <stdio.h>
#include <string.h>

static void *slot(void *msg, const struct wire_field *f)
{
	return (char *)msg + f->offset;
}

static const void *cslot(const void *msg, const struct wire_field *f)
{
	return (const char *)msg + f->offset;
}

static void field_json(cJSON *obj, const struct wire_field *f, const void *p)
{
	switch (f->kind) {
	case WIRE_F_STR:
		jw_string(obj, f->name, *(const char *const *)p);
		return;
	case WIRE_F_FIXED:
	case WIRE_F_DIGEST:
		jw_string(obj, f->name, p);
		return;
	case WIRE_F_CHAR: {
		char one[2] = {*(const char *)p, '\0'};
		jw_string(obj, f->name, one);
		return;
	}
	case WIRE_F_BOOL:
		jw_bool(obj, f->name, *(const bool *)p);
		return;
	case WIRE_F_I32:
		jw_i32(obj, f->name, *(const int32_t *)p);
		return;
	case WIRE_F_U32:
		jw_u32(obj, f->name, *(const uint32_t *)p);
		return;
	case WIRE_F_I64:
		jw_i64(obj, f->name, *(const int64_t *)p);
		return;
	case WIRE_F_U64:
		jw_u64(obj, f->name, *(const uint64_t *)p);
		return;
	case WIRE_F_VERSION: {
		int v = *(const int *)p;
		jw_u32(obj, f->name, v > 0 ? (uint32_t)v : 0);
		return;
	}
	}
}

void wire_fields_json(cJSON *obj, const struct wire_field *f, size_t n, const void *msg)
{
	for (size_t i = 0; i < n; i++)
		field_json(obj, &f[i], cslot(msg, &f[i]));
}

/* A string into a fixed slot: one that does not fit is refused, never cut. */
static int read_fixed(const struct jr *r, const cJSON *obj, const char *path,
		      const struct wire_field *f, char *dst)
{
	cleanup_free char *s = NULL;
	size_t n = 0;
	if (jr_string(r, obj, path, f->name, &s, &n) < 0)
		return -1;
	if (n >= f->size && f->kind == WIRE_F_DIGEST)
		return jr_fail(r, "%s%s%s is longer than a SHA-256 hex digest", path,
			       *path ? "." : "", f->name);
	if (n >= f->size)
		return jr_fail(r, "%s%s%s is longer than %zu bytes", path, *path ? "." : "",
			       f->name, f->size - 1);
	memcpy(dst, s, n + 1);
	return 0;
}

/* Reads one field; *late is set when the field is refused only once every
 * other field has been read. */
static int field_read(const struct jr *r, const cJSON *obj, const char *path,
		      const struct wire_field *f, void *p, bool *late)
{
	switch (f->kind) {
	case WIRE_F_STR: {
		char *s = NULL;
		if (jr_string(r, obj, path, f->name, &s, NULL) < 0)
			return -1;
		free(*(char **)p);
		*(char **)p = s;
		return 0;
	}
	case WIRE_F_FIXED:
	case WIRE_F_DIGEST:
		return read_fixed(r, obj, path, f, p);
	case WIRE_F_CHAR: {
		cleanup_free char *s = NULL;
		size_t n = 0;
		if (jr_string(r, obj, path, f->name, &s, &n) < 0)
			return -1;
		*late = n > 1;
		*(char *)p = s[0];
		return 0;
	}
	case WIRE_F_BOOL:
		return jr_bool(r, obj, path, f->name, p);
	case WIRE_F_I32:
		return jr_i32(r, obj, path, f->name, p);
	case WIRE_F_U32:
		return jr_u32(r, obj, path, f->name, p);
	case WIRE_F_I64:
		return jr_i64(r, obj, path, f->name, p);
	case WIRE_F_U64:
		return jr_u64(r, obj, path, f->name, p);
	case WIRE_F_VERSION: {
		uint32_t v = 0;
		if (jr_u32(r, obj, path, f->name, &v) < 0)
			return -1;
		*late = v > INT32_MAX;
		*(int *)p = *late ? 0 : (int)v;
		return 0;
	}
	}
	return 0;
}

/* The refusal of a field judged last (field_read's *late). */
static int late_refusal(const struct jr *r, const char *path, const struct wire_field *f)
{
	const char *dot = *path ? "." : "";
	if (f->kind == WIRE_F_CHAR)
		return jr_fail(r, "%s%s%s must be one character (f d l p s c b)", path, dot,
			       f->name);
	return jr_fail(r, "%s%s%s is out of range", path, dot, f->name);
}

int wire_fields_read(const struct jr *r, const cJSON *obj, const char *path,
		     const struct wire_field *f, size_t n, void *msg)
{
	const struct wire_field *late = NULL;
	for (size_t i = 0; i < n; i++) {
		bool refuse = false;
		if (field_read(r, obj, path, &f[i], slot(msg, &f[i]), &refuse) < 0)
			return -1;
		if (refuse && !late)
			late = &f[i];
	}
	return late ? late_refusal(r, path, late) : 0;
}

void wire_fields_free(const struct wire_field *f, size_t n, void *msg)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].kind != WIRE_F_STR)
			continue;
		char **s = slot(msg, &f[i]);
		free(*s);
		*s = NULL;
	}
}

void wire_fields_clear(const struct wire_field *f, size_t n, void *msg, size_t size)
{
	if (!msg)
		return;
	wire_fields_free(f, n, msg);
	memset(msg, 0, size);
}

char *wire_fields_print(const struct wire_field *f, size_t n, const void *msg)
{
	cJSON *o = jw_object();
	wire_fields_json(o, f, n, msg);
	return jw_print(o);
}

void wire_fields_copy(const struct wire_field *f, size_t n, void *dst, const void *src)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].kind == WIRE_F_STR)
			*(char **)slot(dst, &f[i]) =
				xstrdup(*(const char *const *)cslot(src, &f[i]));
		else
			memcpy(slot(dst, &f[i]), cslot(src, &f[i]), f[i].size);
	}
}
