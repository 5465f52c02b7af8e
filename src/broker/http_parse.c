/* The strict HTTP/1.1 reader (http.h). Every byte of a head is judged: a
 * proxy that forgives what an upstream reads differently is how requests
 * get smuggled past it. */
#include "http.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool is_tchar(uint8_t c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A field value's bytes: visible ASCII, space and tab. Bytes >= 0x80 are
 * refused too (no upstream API needs them in a header, and they are where
 * parsers disagree). */
static bool is_value_byte(uint8_t c)
{
	return c == '\t' || (c >= 0x20 && c < 0x7f);
}

/* A request target's bytes: visible ASCII only. */
static bool is_target_byte(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

void http_head_free(struct http_head *h)
{
	free(h->method);
	free(h->target);
	for (size_t i = 0; i < h->n; i++) {
		free(h->h[i].name);
		free(h->h[i].value);
	}
	free(h->h);
	memset(h, 0, sizeof *h);
}

const char *http_header_get(const struct http_head *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcasecmp(h->h[i].name, name))
			return h->h[i].value;
	return NULL;
}

/* Does a comma-separated list hold this token (without case)? */
static bool list_has(const char *list, const char *token)
{
	size_t tl = strlen(token);
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *s = p;
		while (*p && *p != ',')
			p++;
		const char *e = p;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - s) == tl && !strncasecmp(s, token, tl))
			return true;
	}
	return false;
}

bool http_header_hop_by_hop(const struct http_head *h, const char *name)
{
	static const char *const hop[] = {
		"connection", "keep-alive",       "proxy-connection", "proxy-authenticate",
		"proxy-authorization", "te",      "trailer",          "transfer-encoding",
		"upgrade",
	};
	for (size_t i = 0; i < ARRAY_SIZE(hop); i++)
		if (!strcasecmp(name, hop[i]))
			return true;
	for (size_t i = 0; i < h->n; i++)
		if (!strcasecmp(h->h[i].name, "connection") && list_has(h->h[i].value, name))
			return true;
	return false;
}

/* The end of the head: the offset after "\r\n\r\n", 0 when not yet seen,
 * < 0 for a bare LF or CR anywhere in it. */
static ssize_t head_end(const uint8_t *p, size_t n, const char **why)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			*why = "a line ends in a bare LF";
			return -1;
		}
		if (p[i] != '\r')
			continue;
		if (i + 1 >= n)
			return 0;
		if (p[i + 1] != '\n') {
			*why = "a bare CR in the head";
			return -1;
		}
		if (i + 3 < n && p[i + 2] == '\r' && p[i + 3] == '\n')
			return (ssize_t)(i + 4);
		if (i + 2 < n && p[i + 2] == '\r' && i + 3 >= n)
			return 0;
		i++;
	}
	return 0;
}

static int parse_length(const char *v, uint64_t *out)
{
	if (!*v || strlen(v) > 15)
		return -1;
	uint64_t n = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*out = n;
	return 0;
}

/* The header lines from p (just after the first line) up to the blank
 * line at end. */
static int parse_fields(const uint8_t *p, const uint8_t *end, struct http_head *out,
			const char **why)
{
	while (p < end) {
		const uint8_t *eol = p;
		while (eol < end && *eol != '\r')
			eol++;
		if (eol == p)
			break; /* the blank line */
		if (*p == ' ' || *p == '\t') {
			*why = "a folded header line";
			return -1;
		}
		const uint8_t *colon = p;
		while (colon < eol && is_tchar(*colon))
			colon++;
		if (colon == p || colon == eol || *colon != ':') {
			*why = "a header name that is not a token";
			return -1;
		}
		const uint8_t *v = colon + 1, *ve = eol;
		for (const uint8_t *q = v; q < ve; q++)
			if (!is_value_byte(*q)) {
				*why = "a control byte in a header value";
				return -1;
			}
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (out->n >= HTTP_HEADERS_MAX) {
			*why = "too many header lines";
			return -1;
		}
		if (!out->h)
			out->h = xzalloc(HTTP_HEADERS_MAX * sizeof *out->h);
		struct http_header *f = &out->h[out->n++];
		f->name = xstrndup((const char *)p, (size_t)(colon - p));
		f->value = xstrndup((const char *)v, (size_t)(ve - v));
		p = eol + 2;
	}
	/* Framing: one Content-Length, or chunked alone; never both, never a
	 * coding a proxy and an upstream might read differently. */
	for (size_t i = 0; i < out->n; i++) {
		const struct http_header *f = &out->h[i];
		if (!strcasecmp(f->name, "content-length")) {
			uint64_t len;
			if (parse_length(f->value, &len) < 0) {
				*why = "a Content-Length that is not a plain number";
				return -1;
			}
			if (out->has_length && len != out->length) {
				*why = "two Content-Length headers that differ";
				return -1;
			}
			out->has_length = true;
			out->length = len;
		} else if (!strcasecmp(f->name, "transfer-encoding")) {
			if (out->chunked || strcasecmp(f->value, "chunked")) {
				*why = "a Transfer-Encoding other than one chunked";
				return -1;
			}
			out->chunked = true;
		} else if (!strcasecmp(f->name, "connection")) {
			if (list_has(f->value, "close"))
				out->close = true;
		}
	}
	if (out->chunked && out->has_length) {
		*why = "both Content-Length and Transfer-Encoding";
		return -1;
	}
	return 0;
}

static ssize_t parse_head(const uint8_t *p, size_t n, bool request, struct http_head *out,
			  const char **why)
{
	memset(out, 0, sizeof *out);
	size_t scan = n < HTTP_HEAD_MAX ? n : HTTP_HEAD_MAX;
	ssize_t end = head_end(p, scan, why);
	if (end < 0)
		return -1;
	if (end == 0) {
		if (n >= HTTP_HEAD_MAX) {
			*why = "the head is over 32 KiB";
			return -1;
		}
		return 0;
	}
	const uint8_t *eol = memchr(p, '\r', (size_t)end);
	const uint8_t *line_end = eol;
	if (request) {
		/* METHOD SP target SP HTTP/1.1 */
		const uint8_t *m = p;
		while (m < line_end && *m >= 'A' && *m <= 'Z')
			m++;
		if (m == p || m - p > 16 || m >= line_end || *m != ' ') {
			*why = "a request line without an upper-case method";
			return -1;
		}
		const uint8_t *t = m + 1, *te = t;
		while (te < line_end && is_target_byte(*te))
			te++;
		if (te == t || te >= line_end || *te != ' ') {
			*why = "a request target with a space or a control byte";
			return -1;
		}
		if ((size_t)(line_end - te - 1) != 8 ||
		    (memcmp(te + 1, "HTTP/1.1", 8) && memcmp(te + 1, "HTTP/1.0", 8))) {
			*why = "a request line that is not HTTP/1.1";
			return -1;
		}
		out->http10 = te[8] == '0';
		out->method = xstrndup((const char *)p, (size_t)(m - p));
		out->target = xstrndup((const char *)t, (size_t)(te - t));
	} else {
		/* HTTP/1.x SP 3DIGIT SP reason */
		if (line_end - p < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') ||
		    p[8] != ' ' || !isdigit(p[9]) || !isdigit(p[10]) || !isdigit(p[11]) ||
		    (line_end - p > 12 && p[12] != ' ')) {
			*why = "a status line that is not HTTP/1.x";
			return -1;
		}
		for (const uint8_t *q = p + 12; q < line_end; q++)
			if (!is_value_byte(*q)) {
				*why = "a control byte in the status line";
				return -1;
			}
		out->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
		if (out->status < 100) {
			*why = "a status under 100";
			return -1;
		}
	}
	if (parse_fields(line_end + 2, p + end, out, why) < 0) {
		http_head_free(out);
		return -1;
	}
	return end;
}

ssize_t http_parse_request(const uint8_t *p, size_t n, struct http_head *out, const char **why)
{
	return parse_head(p, n, true, out, why);
}

ssize_t http_parse_response(const uint8_t *p, size_t n, struct http_head *out, const char **why)
{
	return parse_head(p, n, false, out, why);
}

/* ---- chunked bodies ---- */

enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER,
       CH_TRAILER_LF, CH_DONE };

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t http_chunked_feed(struct http_chunked *c, const uint8_t *in, size_t n, struct buf *out,
			  uint64_t cap, bool *done, const char **why)
{
	size_t i = 0;
	*done = c->state == CH_DONE;
	while (i < n && c->state != CH_DONE) {
		uint8_t b = in[i];
		switch (c->state) {
		case CH_SIZE:
			if (hexval(b) >= 0) {
				if (++c->line > 12) {
					*why = "a chunk size of more than 12 digits";
					return -1;
				}
				c->left = c->left * 16 + (uint64_t)hexval(b);
				i++;
			} else if (c->line && (b == ';' || b == '\r')) {
				c->state = b == ';' ? CH_EXT : CH_SIZE_LF;
				i++;
			} else {
				*why = "a chunk size that is not hex";
				return -1;
			}
			break;
		case CH_EXT:
			/* Extensions are skipped, bounded, and must be plain bytes. */
			if (b == '\r') {
				c->state = CH_SIZE_LF;
			} else if (!is_value_byte(b) || ++c->line > 256) {
				*why = "a chunk extension that is too long or has control bytes";
				return -1;
			}
			i++;
			break;
		case CH_SIZE_LF:
			if (b != '\n') {
				*why = "a chunk size line without CRLF";
				return -1;
			}
			i++;
			c->line = 0;
			if (c->left == 0) {
				c->state = CH_TRAILER;
			} else if (out->len + c->left > cap) {
				*why = "the body is over its cap";
				return -2;
			} else {
				c->state = CH_DATA;
			}
			break;
		case CH_DATA: {
			size_t take = n - i;
			if (take > c->left)
				take = (size_t)c->left;
			buf_append(out, in + i, take);
			i += take;
			c->left -= take;
			if (!c->left)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_DATA_LF:
			if (b != (c->state == CH_DATA_CR ? '\r' : '\n')) {
				*why = "a chunk without CRLF after its data";
				return -1;
			}
			i++;
			c->state = c->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
			break;
		case CH_TRAILER:
			/* Trailer fields are read and dropped (none is forwarded). */
			if (b == '\r') {
				c->state = CH_TRAILER_LF;
			} else if (!is_value_byte(b) || ++c->line > 4096) {
				*why = "a trailer that is too long or has control bytes";
				return -1;
			}
			i++;
			break;
		case CH_TRAILER_LF:
			if (b != '\n') {
				*why = "a trailer line without CRLF";
				return -1;
			}
			i++;
			c->state = c->line ? CH_TRAILER : CH_DONE;
			c->line = 0;
			break;
		}
	}
	*done = c->state == CH_DONE;
	return (ssize_t)i;
}
