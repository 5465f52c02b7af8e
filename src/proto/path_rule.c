#include "path_rule.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"

static bool control_at(const uint8_t *p, size_t n, size_t i, unsigned flags)
{
	if (p[i] < 0x20 || p[i] == 0x7f)
		return true;
	return (flags & PROTO_PATH_STRICT) && p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 &&
	       p[i + 1] <= 0x9f;
}

enum proto_path_problem proto_path_check(const void *path, size_t n, unsigned flags)
{
	const uint8_t *p = path;
	if (n == 0)
		return flags & PROTO_PATH_ALLOW_EMPTY ? PROTO_PATH_OK : PROTO_PATH_EMPTY;
	if (n > BH_MAX_PATH_BYTES)
		return PROTO_PATH_TOO_LONG;
	if (p[0] == '/')
		return PROTO_PATH_ABSOLUTE;
	for (size_t i = 0; i < n; i++) {
		if ((flags & PROTO_PATH_STRICT) && p[i] == '\\')
			return PROTO_PATH_BACKSLASH;
		if (control_at(p, n, i, flags))
			return PROTO_PATH_CONTROL;
	}
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		size_t len = i - start;
		if (len == 0)
			return PROTO_PATH_EMPTY_PART;
		if ((len == 1 && p[start] == '.') ||
		    (len == 2 && p[start] == '.' && p[start + 1] == '.'))
			return PROTO_PATH_DOT_PART;
		start = i + 1;
	}
	return PROTO_PATH_OK;
}

_Static_assert(BH_MAX_PATH_BYTES == 4096, "the words below name the limit");

const char *proto_path_problem_text(enum proto_path_problem why)
{
	switch (why) {
	case PROTO_PATH_OK:
		return "is fine";
	case PROTO_PATH_EMPTY:
		return "is empty";
	case PROTO_PATH_TOO_LONG:
		return "is longer than 4096 bytes";
	case PROTO_PATH_ABSOLUTE:
		return "is absolute";
	case PROTO_PATH_CONTROL:
		return "has a control character";
	case PROTO_PATH_BACKSLASH:
		return "has a backslash";
	case PROTO_PATH_EMPTY_PART:
		return "has an empty part";
	case PROTO_PATH_DOT_PART:
		return "has a . or .. part";
	}
	return "is not a path";
}

int proto_path_errno(enum proto_path_problem why)
{
	if (why == PROTO_PATH_OK)
		return 0;
	return why == PROTO_PATH_TOO_LONG ? ENAMETOOLONG : EINVAL;
}
