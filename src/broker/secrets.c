/* What no answer the broker returns may carry: the credential and the
 * header values the profile adds, in the forms an upstream's echo takes
 * them, found and replaced with SCRUBBED (secrets.h). */
#include "secrets.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
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

/* How many bytes of d[0..n) spell v percent-encoded (each byte as it is or
 * as %xx, a space also as '+'); 0 when they do not. */
static size_t percent_match(const char *v, const uint8_t *d, size_t n)
{
	size_t at = 0;
	for (const uint8_t *b = (const uint8_t *)v; *b; b++) {
		if (at < n && d[at] == *b) {
			at++;
		} else if (at < n && *b == ' ' && d[at] == '+') {
			at++;
		} else if (at + 2 < n && d[at] == '%' && hex_value(d[at + 1]) >= 0 &&
			   hex_value(d[at + 2]) >= 0 &&
			   (hex_value(d[at + 1]) << 4 | hex_value(d[at + 2])) == *b) {
			at += 3;
		} else {
			return 0;
		}
	}
	return at;
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
