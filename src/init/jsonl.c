#include "jsonl.h"
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_BUF (64u * 1024u)
/* The longest escape of one input byte: \u00XX. */
#define ESC_MAX 6u

struct jsonl_out {
	const uint8_t *src;
	size_t len, off;
	bool suffix_done;
	size_t blen, boff;
	uint8_t buf[OUT_BUF];
};

bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t k;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			k = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static void put(struct jsonl_out *o, const char *s)
{
	size_t n = strlen(s);

	memcpy(o->buf + o->blen, s, n);
	o->blen += n;
}

static void fill(struct jsonl_out *o);

struct jsonl_out *jsonl_request(const char *nonce, const uint8_t *code, size_t len)
{
	struct jsonl_out *o = malloc(sizeof(*o));

	if (!o)
		return NULL;
	*o = (struct jsonl_out){ .src = code, .len = len };
	/* The nonce is hex: nothing in it needs escaping. */
	put(o, "{\"nonce\":\"");
	put(o, nonce);
	put(o, "\",\"code\":\"");
	/* A request that fits goes out in one write: a server woken by half
	 * a line reads again, and under gVisor every extra system call and
	 * wake-up costs tens of microseconds. */
	fill(o);
	return o;
}

/* Escapes as much of the code as fits after what the buffer holds; then
 * the closing of the line. */
static void fill(struct jsonl_out *o)
{
	static const char hex[] = "0123456789abcdef";

	while (o->off < o->len && OUT_BUF - o->blen >= ESC_MAX) {
		uint8_t c = o->src[o->off++];
		uint8_t *d = o->buf + o->blen;

		if (c == '"' || c == '\\') {
			d[0] = '\\';
			d[1] = c;
			o->blen += 2;
		} else if (c == '\n') {
			memcpy(d, "\\n", 2);
			o->blen += 2;
		} else if (c == '\t') {
			memcpy(d, "\\t", 2);
			o->blen += 2;
		} else if (c == '\r') {
			memcpy(d, "\\r", 2);
			o->blen += 2;
		} else if (c < 0x20) {
			memcpy(d, "\\u00", 4);
			d[4] = (uint8_t)hex[c >> 4];
			d[5] = (uint8_t)hex[c & 15];
			o->blen += 6;
		} else {
			d[0] = c; /* UTF-8 passes through; validated before */
			o->blen += 1;
		}
	}
	if (o->off == o->len && !o->suffix_done && OUT_BUF - o->blen >= 3) {
		put(o, "\"}\n");
		o->suffix_done = true;
	}
}

static void refill(struct jsonl_out *o)
{
	o->blen = o->boff = 0;
	fill(o);
}

int jsonl_write(struct jsonl_out *o, int fd)
{
	for (;;) {
		int ret;

		if (o->boff == o->blen) {
			if (o->suffix_done)
				return 0;
			refill(o);
		}
		ret = write_ready(fd, o->buf, o->blen, &o->boff);
		if (ret != 0)
			return ret;
	}
}

void jsonl_free(struct jsonl_out *o)
{
	free(o);
}

/* ---- the reply parser ---- */

struct scan {
	const char *p, *end;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

static bool expect(struct scan *s, char c)
{
	skip_ws(s);
	if (s->p >= s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

/* Neither key nor value of a reply ever needs an escape, so a backslash
 * or a control character is as malformed as a missing quote. */
static bool string(struct scan *s, const char **str, size_t *n)
{
	if (!expect(s, '"'))
		return false;
	*str = s->p;
	while (s->p < s->end && *s->p != '"') {
		unsigned char c = (unsigned char)*s->p;

		if (c == '\\' || c < 0x20)
			return false;
		s->p++;
	}
	if (s->p >= s->end)
		return false;
	*n = (size_t)(s->p - *str);
	s->p++;
	return true;
}

static bool is(const char *str, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(str, lit, n) == 0;
}

enum jsonl_reply jsonl_parse_reply(const char *line, size_t n, const char *nonce)
{
	struct scan s = { line, line + n };
	const char *got_nonce = NULL, *status = NULL;
	size_t nonce_len = 0, status_len = 0;

	if (!expect(&s, '{'))
		return JSONL_BAD;
	for (int i = 0; i < 2; i++) {
		const char *key, *val;
		size_t klen, vlen;

		if ((i == 1 && !expect(&s, ',')) || !string(&s, &key, &klen) ||
		    !expect(&s, ':') || !string(&s, &val, &vlen))
			return JSONL_BAD;
		if (is(key, klen, "nonce") && !got_nonce) {
			got_nonce = val;
			nonce_len = vlen;
		} else if (is(key, klen, "status") && !status) {
			status = val;
			status_len = vlen;
		} else {
			return JSONL_BAD;
		}
	}
	if (!expect(&s, '}'))
		return JSONL_BAD;
	skip_ws(&s);
	if (s.p != s.end)
		return JSONL_BAD;
	if (!is(status, status_len, "ok") && !is(status, status_len, "error"))
		return JSONL_BAD;
	if (!is(got_nonce, nonce_len, nonce))
		return JSONL_STRANGER;
	return is(status, status_len, "ok") ? JSONL_OK : JSONL_ERROR;
}
