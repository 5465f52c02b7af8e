/* The character-level rules plimsoll's request validation holds requests to. */
#include "wire_internal.h"

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
 * "." or ".." segment, which also rules out a leading or trailing slash. */
const char *wire_path_problem(const char *p, size_t n)
{
	if (n == 0)
		return "is empty";
	if (n > WIRE_MAX_PATH_BYTES)
		return "is longer than 1024 bytes";
	if (!wire_utf8_valid(p, n))
		return "is not valid UTF-8";
	if (p[0] == '/')
		return "is absolute";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '\\')
			return "contains a backslash";
		if (c < 0x20 || c == 0x7f)
			return "contains a control character";
		/* C1 controls, U+0080..U+009F, are C2 80..C2 9F in UTF-8. */
		if (c == 0xc2 && i + 1 < n && (unsigned char)p[i + 1] >= 0x80 &&
		    (unsigned char)p[i + 1] <= 0x9f)
			return "contains a control character";
	}
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		size_t seg = i - start;
		if (seg == 0)
			return "has an empty segment (a doubled or trailing slash)";
		if ((seg == 1 && p[start] == '.') || (seg == 2 && p[start] == '.' && p[start + 1] == '.'))
			return "has a '.' or '..' segment";
		start = i + 1;
	}
	return NULL;
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
