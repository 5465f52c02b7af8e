/* HTTP/1.1 messages as the broker reads them: strict and bounded. A request
 * or response head is refused, not repaired, when it is anything but plain
 * HTTP/1.1 (bare LF, folded lines, control bytes, duplicate or conflicting
 * framing, a head over HTTP_HEAD_MAX). Pure functions over bytes, so the
 * fuzz target (tests/fuzz/fuzz_broker_http.c) links this file alone. */
#ifndef BH_BROKER_HTTP_H
#define BH_BROKER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base.h"

#define HTTP_HEAD_MAX (32u * 1024u)
#define HTTP_HEADERS_MAX 100

struct http_header {
	char *name;
	char *value;
};

struct http_head {
	/* a request's line */
	char *method;
	char *target;
	bool http10;      /* "HTTP/1.0": taken for CONNECT only (Python's http.client) */
	/* a response's line */
	int status;
	/* both */
	struct http_header *h;
	size_t n;
	bool chunked;     /* Transfer-Encoding: chunked */
	bool has_length;  /* Content-Length given */
	uint64_t length;
	bool close;       /* Connection: close */
};

/* The head at the start of p[0..n): > 0 its length (through the blank
 * line) with *out filled; 0 when more bytes are needed (and n is still
 * under HTTP_HEAD_MAX); < 0 refused, *why saying why. */
ssize_t http_parse_request(const uint8_t *p, size_t n, struct http_head *out, const char **why);
ssize_t http_parse_response(const uint8_t *p, size_t n, struct http_head *out, const char **why);
void http_head_free(struct http_head *h);
/* The first value of a header (names compare without case), or NULL. */
const char *http_header_get(const struct http_head *h, const char *name);
/* Is this one of the hop-by-hop headers (RFC 9110 7.6.1, and the proxy's
 * own), or one the head's Connection header names? */
bool http_header_hop_by_hop(const struct http_head *h, const char *name);

/* A chunked body, decoded as its bytes arrive. */
struct http_chunked {
	int state;
	uint64_t left;  /* of the current chunk */
	unsigned line;  /* bytes of the current size or trailer line */
};
/* Consumes what it can of in[0..n), appending the data to out: the bytes
 * consumed (>= 0), *done once the last chunk and trailers are read; < 0
 * when the framing is wrong or the body would pass cap (*why). */
ssize_t http_chunked_feed(struct http_chunked *c, const uint8_t *in, size_t n, struct buf *out,
			  uint64_t cap, bool *done, const char **why);

#endif
