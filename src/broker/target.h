/* What a request asks for: its origin, its path, whether the path is
 * canonical and which route it matches. Pure functions (the fuzz target
 * links them with the parser). */
#ifndef BH_BROKER_TARGET_H
#define BH_BROKER_TARGET_H

#include <stdbool.h>
#include <stdint.h>

struct target {
	char *host;   /* lowercase; an IPv6 literal keeps its brackets */
	uint16_t port;
	char *origin; /* "https://host:port", as profiles name origins */
	char *path;   /* from the first '/', before any '?' */
	char *query;  /* after the '?', or NULL; never logged */
	bool ip_literal;
};

void target_free(struct target *t);
/* "host[:port]" (CONNECT's target, a Host header): 0, or -1 and *why.
 * default_port is used when none is given (0: a port is required). */
int target_authority(const char *authority, uint16_t default_port, struct target *out,
		     const char **why);
/* An absolute-form target, http:// or https:// (both go upstream over
 * TLS: the broker makes the connection; a port defaults to 443). */
int target_absolute(const char *t, struct target *out, const char **why);
/* An origin-form target ("/path?query") into out's path and query. */
int target_origin_form(const char *t, struct target *out, const char **why);
/* Refuses a path that is not canonical: "." or ".." segments, an empty
 * segment but a last one ("//", a trailing "/" is fine), a percent-encoded
 * unreserved byte ("%2e"), an encoded "/" or "\", lower-case hex, bytes
 * outside RFC 3986's pchar. 0, or -1 and *why. */
int path_canonical(const char *path, const char **why);
/* Does the path match the pattern? Segments compare exactly (with case);
 * "*" matches one whole non-empty segment. */
bool route_matches(const char *pattern, const char *path);

#endif
