/* proto3 JSON, field by field. Reading is liberal where protobuf's own parser
 * is (lowerCamelCase or the proto name, integers as numbers or strings, enums
 * by name or number, null as unset, unknown fields ignored as connect-go
 * discards them) and strict where a digest could otherwise disagree with
 * what was meant: a wrong type, a field given twice, a 64-bit number too large
 * for a double to hold exactly, a string that is not UTF-8. Writing omits
 * every zero value, as protobuf's writer does. */
#include "wire_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "stdoutTruncated" -> "stdout_truncated": the proto name protobuf's JSON
 * parser also accepts. */
static void snake_of(const char *camel, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = camel; *p && o + 2 < n; p++) {
		if (*p >= 'A' && *p <= 'Z') {
			out[o++] = '_';
			out[o++] = (char)(*p - 'A' + 'a');
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

static const char *full_name(char *buf, size_t n, const char *path, const char *name)
{
	if (path && *path)
		snprintf(buf, n, "%s.%s", path, name);
	else
		snprintf(buf, n, "%s", name);
	return buf;
}

int jr_field(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     const cJSON **out)
{
	char snake[64];
	snake_of(name, snake, sizeof snake);
	const cJSON *found = NULL;
	int hits = 0;
	for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
		if (c->string && (!strcmp(c->string, name) || !strcmp(c->string, snake))) {
			found = c;
			hits++;
		}
	}
	if (hits > 1) {
		char f[160];
		return jr_fail(r, "%s is given more than once", full_name(f, sizeof f, path, name));
	}
	*out = found && !cJSON_IsNull(found) ? found : NULL;
	return 0;
}

int jr_string(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      char **out, size_t *len)
{
	const cJSON *v;
	char f[160];
	*out = NULL;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (v && !cJSON_IsString(v))
		return jr_fail(r, "%s must be a string", full_name(f, sizeof f, path, name));
	const char *s = v ? v->valuestring : "";
	size_t n = strlen(s);
	if (!wire_utf8_valid(s, n))
		return jr_fail(r, "%s is not valid UTF-8", full_name(f, sizeof f, path, name));
	*out = xstrndup(s, n);
	if (len)
		*len = n;
	return 0;
}

int jr_bool(const struct jr *r, const cJSON *obj, const char *path, const char *name, bool *out)
{
	const cJSON *v;
	char f[160];
	*out = false;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return jr_fail(r, "%s must be true or false", full_name(f, sizeof f, path, name));
	*out = cJSON_IsTrue(v);
	return 0;
}

/* An integer as sign and magnitude, from a JSON number (integral, and surely
 * exact: below 2^53, as a double above that may be a rounded neighbour) or a
 * decimal string. */
static int read_integer(const struct jr *r, const cJSON *v, const char *f, bool *neg,
			uint64_t *mag)
{
	*neg = false;
	*mag = 0;
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (!isfinite(d) || d != trunc(d))
			return jr_fail(r, "%s must be a whole number", f);
		if (fabs(d) >= 9007199254740992.0)
			return jr_fail(r, "%s is a number too large to be exact; send it as a "
					  "decimal string", f);
		*neg = d < 0;
		*mag = (uint64_t)fabs(d);
		return 0;
	}
	if (!cJSON_IsString(v))
		return jr_fail(r, "%s must be an integer (a number or a decimal string)", f);
	const char *s = v->valuestring;
	if (*s == '-') {
		*neg = true;
		s++;
	}
	if (!*s)
		return jr_fail(r, "%s must be an integer (a number or a decimal string)", f);
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return jr_fail(r, "%s must be an integer (a number or a decimal string)", f);
		unsigned digit = (unsigned)(*s - '0');
		if (*mag > (UINT64_MAX - digit) / 10)
			return jr_fail(r, "%s is out of range", f);
		*mag = *mag * 10 + digit;
	}
	if (*mag == 0)
		*neg = false;
	return 0;
}

/* Reads a signed integer in [-(max+1), max] or an unsigned one in [0, max]. */
static int read_ranged(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		       bool is_signed, uint64_t max, bool *neg, uint64_t *mag, bool *present)
{
	const cJSON *v;
	char f[160];
	*present = false;
	*neg = false;
	*mag = 0;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (!v)
		return 0;
	full_name(f, sizeof f, path, name);
	if (read_integer(r, v, f, neg, mag) < 0)
		return -1;
	if (*neg && !is_signed)
		return jr_fail(r, "%s must not be negative", f);
	if ((*neg && *mag > max + 1) || (!*neg && *mag > max))
		return jr_fail(r, "%s is out of range", f);
	*present = true;
	return 0;
}

static int64_t signed_of(bool neg, uint64_t mag)
{
	if (!neg)
		return (int64_t)mag;
	if (mag == (uint64_t)INT64_MAX + 1)
		return INT64_MIN;
	return -(int64_t)mag;
}

int jr_i32(const struct jr *r, const cJSON *obj, const char *path, const char *name, int32_t *out)
{
	bool neg, present;
	uint64_t mag;
	*out = 0;
	if (read_ranged(r, obj, path, name, true, INT32_MAX, &neg, &mag, &present) < 0)
		return -1;
	*out = (int32_t)signed_of(neg, mag);
	return 0;
}

int jr_u32(const struct jr *r, const cJSON *obj, const char *path, const char *name, uint32_t *out)
{
	bool neg, present;
	uint64_t mag;
	*out = 0;
	if (read_ranged(r, obj, path, name, false, UINT32_MAX, &neg, &mag, &present) < 0)
		return -1;
	*out = (uint32_t)mag;
	return 0;
}

int jr_i64(const struct jr *r, const cJSON *obj, const char *path, const char *name, int64_t *out)
{
	bool neg, present;
	uint64_t mag;
	*out = 0;
	if (read_ranged(r, obj, path, name, true, INT64_MAX, &neg, &mag, &present) < 0)
		return -1;
	*out = signed_of(neg, mag);
	return 0;
}

int jr_u64(const struct jr *r, const cJSON *obj, const char *path, const char *name, uint64_t *out)
{
	bool neg, present;
	uint64_t mag;
	*out = 0;
	if (read_ranged(r, obj, path, name, false, UINT64_MAX, &neg, &mag, &present) < 0)
		return -1;
	*out = mag;
	return 0;
}

int jr_double(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      double *out)
{
	const cJSON *v;
	char f[160];
	*out = 0;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (!v)
		return 0;
	full_name(f, sizeof f, path, name);
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(v))
		return jr_fail(r, "%s must be a number", f);
	const char *s = v->valuestring;
	if (!strcmp(s, "NaN")) {
		*out = NAN;
		return 0;
	}
	if (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
		*out = *s == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (!*s || strspn(s, "-+0123456789.eE") != strlen(s))
		return jr_fail(r, "%s must be a number", f);
	char *end = NULL;
	*out = strtod(s, &end);
	if (!end || *end)
		return jr_fail(r, "%s must be a number", f);
	return 0;
}

int jr_bytes(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     uint8_t **out, size_t *len)
{
	const cJSON *v;
	char f[160];
	*out = NULL;
	*len = 0;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (!v) {
		*out = xzalloc(1);
		return 0;
	}
	if (!cJSON_IsString(v) ||
	    wire_base64_decode(v->valuestring, strlen(v->valuestring), out, len) < 0)
		return jr_fail(r, "%s must be base64 (standard or URL-safe, padded or not)",
			       full_name(f, sizeof f, path, name));
	return 0;
}

int jr_object(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      const cJSON **out)
{
	char f[160];
	if (jr_field(r, obj, path, name, out) < 0)
		return -1;
	if (*out && !cJSON_IsObject(*out))
		return jr_fail(r, "%s must be a JSON object", full_name(f, sizeof f, path, name));
	return 0;
}

int jr_array(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     const cJSON **out)
{
	char f[160];
	if (jr_field(r, obj, path, name, out) < 0)
		return -1;
	if (*out && !cJSON_IsArray(*out))
		return jr_fail(r, "%s must be a JSON array", full_name(f, sizeof f, path, name));
	return 0;
}

void wire_strings_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

int jr_strings(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	       char ***out, size_t *n)
{
	const cJSON *arr;
	char f[160];
	*out = NULL;
	*n = 0;
	if (jr_array(r, obj, path, name, &arr) < 0)
		return -1;
	int count = arr ? cJSON_GetArraySize(arr) : 0;
	char **v = xzalloc(((size_t)count + 1) * sizeof *v);
	size_t i = 0;
	for (const cJSON *c = arr ? arr->child : NULL; c; c = c->next, i++) {
		if (!cJSON_IsString(c) || !wire_utf8_valid(c->valuestring, strlen(c->valuestring))) {
			wire_strings_free(v, i);
			return jr_fail(r, "%s[%zu] must be a UTF-8 string",
				       full_name(f, sizeof f, path, name), i);
		}
		v[i] = xstrdup(c->valuestring);
	}
	*out = v;
	*n = i;
	return 0;
}

/* ---- writing ---- */

cJSON *jw_object(void)
{
	return wire_check_alloc(cJSON_CreateObject());
}

void jw_add(cJSON *obj, const char *name, cJSON *child)
{
	if (child)
		cJSON_AddItemToObject(obj, name, child);
}

void jw_string(cJSON *obj, const char *name, const char *s)
{
	if (s && *s)
		wire_check_alloc(cJSON_AddStringToObject(obj, name, s));
}

void jw_string_n(cJSON *obj, const char *name, const char *s, size_t n)
{
	if (!s || n == 0)
		return;
	cleanup_free char *copy = xstrndup(s, n);
	wire_check_alloc(cJSON_AddStringToObject(obj, name, copy));
}

void jw_bool(cJSON *obj, const char *name, bool v)
{
	if (v)
		wire_check_alloc(cJSON_AddTrueToObject(obj, name));
}

void jw_i32(cJSON *obj, const char *name, int32_t v)
{
	if (v)
		wire_check_alloc(cJSON_AddNumberToObject(obj, name, v));
}

void jw_u32(cJSON *obj, const char *name, uint32_t v)
{
	if (v)
		wire_check_alloc(cJSON_AddNumberToObject(obj, name, v));
}

void jw_i64(cJSON *obj, const char *name, int64_t v)
{
	char buf[24];
	if (!v)
		return;
	snprintf(buf, sizeof buf, "%" PRId64, v);
	wire_check_alloc(cJSON_AddStringToObject(obj, name, buf));
}

void jw_u64(cJSON *obj, const char *name, uint64_t v)
{
	char buf[24];
	if (!v)
		return;
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	wire_check_alloc(cJSON_AddStringToObject(obj, name, buf));
}

void jw_double(cJSON *obj, const char *name, double v)
{
	if (v == 0 && !signbit(v))
		return;
	/* JSON has no NaN or infinity; proto3 JSON spells them as strings. */
	if (isnan(v))
		wire_check_alloc(cJSON_AddStringToObject(obj, name, "NaN"));
	else if (isinf(v))
		wire_check_alloc(cJSON_AddStringToObject(obj, name, v < 0 ? "-Infinity" : "Infinity"));
	else
		wire_check_alloc(cJSON_AddNumberToObject(obj, name, v));
}

void jw_bytes(cJSON *obj, const char *name, const void *p, size_t n)
{
	if (!p || n == 0)
		return;
	cleanup_free char *b64 = wire_base64_encode(p, n, true);
	wire_check_alloc(cJSON_AddStringToObject(obj, name, b64));
}

void jw_strings(cJSON *obj, const char *name, const char *const *v, size_t n)
{
	if (!v || n == 0)
		return;
	cJSON *arr = wire_check_alloc(cJSON_CreateArray());
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, wire_check_alloc(cJSON_CreateString(v[i] ? v[i] : "")));
	cJSON_AddItemToObject(obj, name, arr);
}

char *jw_print(cJSON *obj)
{
	char *out = wire_check_alloc(cJSON_PrintUnformatted(obj));
	cJSON_Delete(obj);
	return out;
}
