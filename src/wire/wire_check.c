/* The character-level rules plimsoll's request validation holds requests to. */
#include "wire_internal.h"

#include "path_rule.h"

#include <string.h>

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF, as
 * protobuf requires of a string field. */
bool wire_utf8_valid(const void *s, size_t len)
{
	const uint8_t *p = s;
	size_t i = 0;
	while (i < len) {
		uint8_t c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need;
		uint32_t cp, min;
		if ((c & 0xe0) == 0xc0) {
			need = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			need = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (len - i - 1 < need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

static bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '-';
}

bool wire_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > WIRE_MAX_NAME_BYTES)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

/* Relative and already clean (Go's path.Clean would leave it alone): no empty,
 * "." or ".." segment, which also rules out a leading or trailing slash. The
 * rule is the engine's and the init's (path_rule.h), in its strict form, on
 * plimsoll's length and in its words. */
const char *wire_path_problem(const char *p, size_t n)
{
	static const char *const words[] = {
		[PROTO_PATH_EMPTY] = "is empty",
		[PROTO_PATH_TOO_LONG] = "is longer than 1024 bytes",
		[PROTO_PATH_ABSOLUTE] = "is absolute",
		[PROTO_PATH_CONTROL] = "contains a control character",
		[PROTO_PATH_BACKSLASH] = "contains a backslash",
		[PROTO_PATH_EMPTY_PART] = "has an empty segment (a doubled or trailing slash)",
		[PROTO_PATH_DOT_PART] = "has a '.' or '..' segment",
	};
	_Static_assert(WIRE_MAX_PATH_BYTES <= BH_MAX_PATH_BYTES, "the wire is the stricter");
	if (n > WIRE_MAX_PATH_BYTES)
		return words[PROTO_PATH_TOO_LONG];
	if (!wire_utf8_valid(p, n))
		return "is not valid UTF-8";
	enum proto_path_problem why = proto_path_check(p, n, PROTO_PATH_STRICT);
	return why == PROTO_PATH_OK ? NULL : words[why];
}

const char *wire_identity_problem(const char *s)
{
	size_t n = strlen(s);
	if (n == 0)
		return "is empty";
	if (n > WIRE_MAX_IDENTITY_BYTES)
		return "is longer than 256 bytes";
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  strchr("._:/@+-", c) != NULL;
		if (!ok)
			return "has a character outside A-Z a-z 0-9 . _ : / @ + -";
	}
	return NULL;
}
