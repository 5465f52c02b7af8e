/* What no answer the broker returns may carry: the credential and the
 * header values the profile adds, in the forms an upstream's echo takes
 * them, found and replaced with SCRUBBED (secrets.h). */
#include "secrets.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

char *secrets_render(const char *template, const char *credential)
{
	struct buf out = {0};
	const char *p = template;
	for (;;) {
		const char *at = strstr(p, "{credential}");
		if (!at) {
			buf_append(&out, p, strlen(p) + 1);
			break;
		}
		buf_append(&out, p, (size_t)(at - p));
		buf_append(&out, credential, strlen(credential));
		p = at + strlen("{credential}");
	}
	return (char *)out.data;
}

void secrets_free(struct secrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		OPENSSL_cleanse(s->v[i].v, strlen(s->v[i].v));
		free(s->v[i].v);
	}
	s->n = 0;
}

static void secret_add(struct secrets *s, char *v, bool bytes)
{
	if (s->n < ARRAY_SIZE(s->v)) {
		s->v[s->n++] = (struct secret){v, bytes};
	} else {
		OPENSSL_cleanse(v, strlen(v));
		free(v);
	}
}

/* The credential as base64 would carry it wherever it starts in an
 * encoded echo: cred[k..] for k = 0, 1, 2, without the last group's
 * characters (they depend on what follows); each in the standard and the
 * URL-safe alphabet (no padding either way: the last group is left out). */
static void secrets_base64(struct secrets *s, const char *cred)
{
	size_t n = strlen(cred);
	for (size_t k = 0; k < 3 && n - k >= 12; k++) {
		size_t whole = (n - k) / 3 * 3;
		char *enc = xzalloc(whole / 3 * 4 + 1);
		EVP_EncodeBlock((unsigned char *)enc, (const unsigned char *)cred + k, (int)whole);
		char *url = xstrdup(enc);
		bool differs = false;
		for (char *c = url; *c; c++) {
			differs |= *c == '+' || *c == '/';
			*c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
		}
		secret_add(s, enc, false);
		if (differs)
			secret_add(s, url, false);
		else
			free(url);
	}
}

void secrets_fill(struct secrets *s, const struct bh_egress_profile *p, const char *cred)
{
	if (strlen(cred) >= 4)
		secret_add(s, xstrdup(cred), true);
	secrets_base64(s, cred);
	for (size_t i = 0; i < p->n_headers; i++) {
		char *v = secrets_render(p->headers[i].template, cred);
		if (strlen(v) >= 8) {
			secret_add(s, v, true);
		} else {
			free(v);
		}
	}
}

static int hex_value(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20; /* either case */
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Adds at to the set pos[0..*n) unless it is there. */
static void position_add(size_t *pos, size_t *n, size_t at)
{
	for (size_t i = 0; i < *n; i++)
		if (pos[i] == at)
			return;
	pos[(*n)++] = at;
}

/* How many bytes of d[0..n) spell v percent-encoded (each byte as it is or
 * as %xx, a space also as '+'); 0 when they do not. A byte may be read
 * more than one way ("%" as itself or as "%25"), and a greedy reading
 * misses an echo whose first '%' is an escape: every reading is followed,
 * as the set of places in d where a prefix of v can end (after k bytes of
 * v they lie in [k, 3k], so the set holds 2k+1 at most). The longest
 * reading counts. */
static size_t percent_match(const char *v, const uint8_t *d, size_t n)
{
	size_t vl = strlen(v), cap = 2 * vl + 1;
	size_t small[2][2 * 128 + 1];
	size_t *now = small[0], *next = small[1];
	size_t *heap = NULL;
	if (cap > ARRAY_SIZE(small[0])) {
		heap = xzalloc(2 * cap * sizeof *heap);
		now = heap;
		next = heap + cap;
	}
	size_t nn = 1, longest = 0;
	now[0] = 0;
	for (const uint8_t *b = (const uint8_t *)v; *b && nn; b++) {
		size_t nx = 0;
		for (size_t i = 0; i < nn; i++) {
			size_t at = now[i];
			if (at < n && (d[at] == *b || (*b == ' ' && d[at] == '+')))
				position_add(next, &nx, at + 1);
			if (at + 2 < n && d[at] == '%' && hex_value(d[at + 1]) >= 0 &&
			    hex_value(d[at + 2]) >= 0 &&
			    (hex_value(d[at + 1]) << 4 | hex_value(d[at + 2])) == *b)
				position_add(next, &nx, at + 3);
		}
		size_t *t = now;
		now = next;
		next = t;
		nn = nx;
	}
	for (size_t i = 0; i < nn; i++)
		if (now[i] > longest)
			longest = now[i];
	free(heap);
	return longest;
}

/* How many bytes of d[0..n) spell v in hex (two digits a byte, either
 * case); 0 when they do not. */
static size_t hex_match(const char *v, const uint8_t *d, size_t n)
{
	size_t at = 0;
	for (const uint8_t *b = (const uint8_t *)v; *b; b++, at += 2)
		if (at + 1 >= n || hex_value(d[at]) < 0 || hex_value(d[at + 1]) < 0 ||
		    (hex_value(d[at]) << 4 | hex_value(d[at + 1])) != *b)
			return 0;
	return at;
}

static size_t secret_match(const struct secret *s, const uint8_t *d, size_t n)
{
	if (!s->bytes) {
		size_t sl = strlen(s->v);
		return sl <= n && !memcmp(d, s->v, sl) ? sl : 0;
	}
	size_t p = percent_match(s->v, d, n), h = hex_match(s->v, d, n);
	return p > h ? p : h;
}

/* Whether c may open one of the secret's forms. */
static bool secret_may_start(const struct secret *s, uint8_t c)
{
	uint8_t first = (uint8_t)s->v[0];
	if (c == first)
		return true;
	if (!s->bytes)
		return false;
	static const char digits[] = "0123456789abcdef";
	return c == '%' || (first == ' ' && c == '+') || (c | 0x20) == (uint8_t)digits[first >> 4];
}

/* Replaces every occurrence of a secret, in any of its forms, in
 * data[0..len) with SCRUBBED: a new buffer. The longest match wins, so
 * "Bearer X" goes whole. */
void secrets_scrub(const struct secrets *s, const uint8_t *data, size_t len, struct buf *out)
{
	size_t i = 0;
	while (i < len) {
		size_t best = 0;
		for (size_t k = 0; k < s->n; k++) {
			size_t m = secret_match(&s->v[k], data + i, len - i);
			if (m > best)
				best = m;
		}
		if (best) {
			buf_append(out, SCRUBBED, strlen(SCRUBBED));
			i += best;
			continue;
		}
		/* Copy up to the next byte that could start a secret. */
		size_t j = i + 1;
		while (j < len) {
			bool may = false;
			for (size_t k = 0; k < s->n && !may; k++)
				may = secret_may_start(&s->v[k], data[j]);
			if (may)
				break;
			j++;
		}
		buf_append(out, data + i, j - i);
		i = j;
	}
}
