/* What the profiles file's pieces share (src/egress). The public half is
 * include/bulkhead/egress.h; this header is private to the folder (and to
 * the parser's tests and fuzz target). */
#ifndef BH_EGRESS_PRIV_H
#define BH_EGRESS_PRIV_H

#include "base.h"
#include "egress.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- limits (docs/api.md, "The profiles file") ---- */
#define EGRESS_FILE_MAX (1u << 20)    /* bytes of the file, as the clients file */
#define EGRESS_MAX_PROFILES 256
#define EGRESS_MAX_ORIGINS 64         /* per profile */
#define EGRESS_MAX_ROUTES 256
#define EGRESS_MAX_HEADERS 16
#define EGRESS_MAX_PRINCIPALS 256
#define EGRESS_MAX_ARGS 32            /* a credential command's argv, argv[0] included */
#define EGRESS_NAME_MAX 64            /* a profile's name */
#define EGRESS_DESCRIPTION_MAX 200
#define EGRESS_PATTERN_MAX 1024
#define EGRESS_TEMPLATE_MAX 4096
#define EGRESS_PATH_MAX 4096

/* Budgets: plimsoll's defaults (sandbox/broker.go), and the most a profile
 * may raise them to. max_calls' ceiling is plimsoll's; the byte and time
 * ceilings are bulkhead's (an index serving wheels needs more than 4 MiB). */
#define EGRESS_DEFAULT_MAX_CALLS 256u
#define EGRESS_CEILING_MAX_CALLS 100000u
#define EGRESS_DEFAULT_REQUEST_BYTES (1ull << 20)
#define EGRESS_CEILING_REQUEST_BYTES (64ull << 20)
#define EGRESS_DEFAULT_RESPONSE_BYTES (4ull << 20)
#define EGRESS_CEILING_RESPONSE_BYTES (1ull << 30)
#define EGRESS_CEILING_HOLD_BYTES (64ull << 30) /* max-bytes-out / max-bytes-in */
#define EGRESS_DEFAULT_IN_FLIGHT 16u
#define EGRESS_CEILING_IN_FLIGHT 64u
#define EGRESS_DEFAULT_TIMEOUT_MS 60000u
#define EGRESS_FLOOR_TIMEOUT_MS 100u
#define EGRESS_CEILING_TIMEOUT_MS (5u * 60u * 1000u) /* the RPC edge's ceiling */
#define EGRESS_CEILING_LIFETIME_S (24u * 3600u)

struct bh_egress_profiles {
	atomic_uint refs;
	char *path; /* NULL for a set parsed from text */
	struct bh_egress_profile *v;
	size_t n;
	unsigned *credential_line; /* per profile: where its credential was set (0: none) */
};

/* ---- errors: a malloc'd sentence in *why (may be NULL); always -1: the
 * base's why_set, why_errno and why_prefix (base.h) ---- */
/* The sentence as the public API's error (BH_E_INVALID), *why consumed. */
int egress_fail(bh_error **err, char **why);

/* ---- values (profiles_values.c): each checks one field's text ---- */
/* [a-z0-9][a-z0-9._-]{0,63} */
bool egress_profile_name_ok(const char *s, size_t n);
/* A principal: a clients-file name (1-64 of [A-Za-z0-9._@-], starting
 * alphanumeric) or "*". */
bool egress_principal_ok(const char *s, size_t n);
/* "https://host[:port]" -> malloc'd "https://host:port"; the host lowercase
 * DNS name, dotted IPv4 or [IPv6], all written canonically. */
int egress_origin_canonical(const char *s, size_t n, char **out, char **why);
/* "*" or GET HEAD POST PUT PATCH DELETE OPTIONS. */
int egress_method_check(const char *s, size_t n, char **why);
/* "/" or "/seg/ * /seg" (no blanks): whole-segment wildcards, canonical. */
int egress_pattern_check(const char *s, size_t n, char **why);
/* A header the broker may add: a token, not hop-by-hop, not framing. */
int egress_header_name_check(const char *s, size_t n, char **why);
/* Visible ASCII, spaces and tabs; "{credential}" at most once, no other
 * braces. *uses says whether the placeholder is there. */
int egress_template_check(const char *s, size_t n, bool *uses, char **why);
/* An absolute path with no empty, "." or ".." segment. */
int egress_abs_path_check(const char *what, const char *s, size_t n, char **why);
/* [A-Za-z_][A-Za-z0-9_]{0,127} */
int egress_env_name_check(const char *s, size_t n, char **why);
/* Digits, then nothing (bytes), KiB, MiB or GiB; 0 allowed. */
int egress_size_parse(const char *s, size_t n, uint64_t *out, char **why);
/* Digits, then ms, s, m or h. */
int egress_duration_ms_parse(const char *s, size_t n, uint64_t *out, char **why);

/* ---- the text (profiles_parse.c) ---- */
/* Parses and checks a whole file's text: *out is a set of one reference
 * with no path. Errors start with "line N: ". Touches no file. */
int egress_profiles_parse(const char *text, size_t len, bh_egress_profiles **out, char **why);
void egress_profile_clear(struct bh_egress_profile *p);

/* ---- what the profiles point at (profiles_sources.c) ---- */
/* Reads the profiles file: a regular file owned by root or us, not group-
 * or world-writable, at most EGRESS_FILE_MAX bytes. */
int egress_read_file(const char *path, char **text, size_t *len, char **why);
/* Each profile's credential as the broker will find it at hold time: a
 * file that is regular, root's (or ours) and neither group- nor world-
 * readable or -writable; an environment variable that is set; a command
 * that is a regular executable owned by root (or us), not group- or
 * world-writable. Names the profile's line. */
int egress_check_sources(const bh_egress_profiles *set, char **why);

#endif
