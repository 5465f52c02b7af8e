/* The one rule for a path a request names inside the sandbox: relative to
 * /work and already clean, so it means the same to the engine that checks
 * it, the init that walks it and the wire that admits it. The init still
 * walks every path with no link followed (src/init/walk.c); this rule is
 * about the bytes only. */
#ifndef BH_PROTO_PATH_RULE_H
#define BH_PROTO_PATH_RULE_H

#include <stddef.h>

enum proto_path_problem {
	PROTO_PATH_OK = 0,
	PROTO_PATH_EMPTY,
	PROTO_PATH_TOO_LONG,   /* over BH_MAX_PATH_BYTES (channel.h) */
	PROTO_PATH_ABSOLUTE,
	PROTO_PATH_CONTROL,    /* a control character, NUL and DEL included */
	PROTO_PATH_BACKSLASH,  /* PROTO_PATH_STRICT only */
	PROTO_PATH_EMPTY_PART, /* a doubled, leading or trailing slash */
	PROTO_PATH_DOT_PART,   /* a "." or ".." component */
};

enum proto_path_flags {
	/* "" names /work itself (a LIST of it). */
	PROTO_PATH_ALLOW_EMPTY = 1u << 0,
	/* plimsoll's stricter form, for the wire: no backslash, and the C1
	 * controls (U+0080..U+009F, C2 80..C2 9F in UTF-8) count as control
	 * characters too. */
	PROTO_PATH_STRICT = 1u << 1,
};

/* What is wrong with the n bytes at p, the first problem in the order of
 * the enum (characters are scanned before components). */
enum proto_path_problem proto_path_check(const void *p, size_t n, unsigned flags);

/* The problem as the end of a sentence about the path ("is absolute"). */
const char *proto_path_problem_text(enum proto_path_problem why);

/* The problem as an errno: ENAMETOOLONG or EINVAL (0 for none). */
int proto_path_errno(enum proto_path_problem why);

#endif
