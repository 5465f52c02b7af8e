/* The broker's reader of what a sandbox (or an upstream) sends: request and
 * response heads, chunked bodies, the targets and paths the heads name and
 * the route patterns they are matched against (src/broker/http_parse.c,
 * target.c). The first byte picks which reader gets the rest; a head that
 * parses has its target, Host and body framing read too, as the broker
 * would. ---- egress: a fourth reader, the scrub of an upstream's answer
 * (secrets.c): the credential is the input up to its first newline, the
 * answer the rest; what comes out holds neither the credential nor its hex
 * or percent-encoded forms. ---- */
#include "http.h"
#include "secrets.h"
#include "target.h"

#include <stdlib.h>
#include <string.h>

static void judge_target(const struct http_head *h)
{
	struct target t;
	const char *why = NULL;
	int r;
	if (!strcmp(h->method, "CONNECT"))
		r = target_authority(h->target, 0, &t, &why);
	else if (h->target[0] == '/') {
		const char *host = http_header_get(h, "host");
		r = host ? target_authority(host, 443, &t, &why) : -1;
		if (r == 0 && target_origin_form(h->target, &t, &why) < 0) {
			target_free(&t);
			r = -1;
		}
	} else
		r = target_absolute(h->target, &t, &why);
	if (r < 0)
		return;
	if (t.path && path_canonical(t.path, &why) == 0) {
		(void)route_matches("/v1/items/*", t.path);
		(void)route_matches(t.path, "/v1/items/42");
	}
	target_free(&t);
}

/* ---- egress ---- */
static void judge_scrub(const uint8_t *p, size_t n)
{
	const uint8_t *nl = memchr(p, '\n', n);
	size_t cl = nl ? (size_t)(nl - p) : 0;
	if (!nl || cl < 4 || cl > 64 || memchr(p, '\0', cl))
		return;
	char cred[65];
	memcpy(cred, p, cl);
	cred[cl] = '\0';
	struct bh_egress_header hdr = {.name = "Authorization", .template = "Bearer {credential}"};
	struct bh_egress_profile prof = {.headers = &hdr, .n_headers = 1};
	struct secrets sec = {0};
	secrets_fill(&sec, &prof, cred);
	struct buf out = {0};
	secrets_scrub(&sec, nl + 1, n - cl - 1, &out);
	/* A credential without brackets cannot be made of "[redacted]" and what
	 * is around it: none may be left. */
	if (!strpbrk(cred, "[]")) {
		static const char hex[] = "0123456789abcdef";
		char hexed[129], pct[193];
		for (size_t i = 0; i < cl; i++) {
			uint8_t c = (uint8_t)cred[i];
			hexed[2 * i] = hex[c >> 4];
			hexed[2 * i + 1] = hex[c & 15];
			pct[3 * i] = '%';
			pct[3 * i + 1] = hex[c >> 4];
			pct[3 * i + 2] = hex[c & 15];
		}
		hexed[2 * cl] = pct[3 * cl] = '\0';
		if (out.len && (memmem(out.data, out.len, cred, cl) ||
				memmem(out.data, out.len, hexed, 2 * cl) ||
				memmem(out.data, out.len, pct, 3 * cl)))
			abort();
	}
	buf_free(&out);
	secrets_free(&sec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t mode = data[0] % 4; /* ---- egress: 3, the scrub ---- */
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	struct http_head h;
	const char *why = NULL;
	if (mode == 3) { /* ---- egress ---- */
		judge_scrub(p, n);
		return 0;
	}
	if (mode == 2) {
		struct http_chunked c = {0};
		struct buf out = {0};
		bool done = false;
		/* fed in two pieces, as reads split it */
		size_t half = n / 2;
		ssize_t a = http_chunked_feed(&c, p, half, &out, 4096, &done, &why);
		if (a >= 0 && !done)
			(void)http_chunked_feed(&c, p + a, n - (size_t)a, &out, 4096, &done, &why);
		if (out.len > 4096)
			abort();
		buf_free(&out);
		return 0;
	}
	ssize_t r = mode == 0 ? http_parse_request(p, n, &h, &why) : http_parse_response(p, n, &h, &why);
	if (r > 0) {
		if ((size_t)r > n || (size_t)r > HTTP_HEAD_MAX || h.n > HTTP_HEADERS_MAX)
			abort();
		for (size_t i = 0; i < h.n; i++) {
			/* nothing that could end a line survives into a value */
			if (strpbrk(h.h[i].value, "\r\n") || strpbrk(h.h[i].name, "\r\n: "))
				abort();
			(void)http_header_hop_by_hop(&h, h.h[i].name);
		}
		if (mode == 0) {
			if (strpbrk(h.target, " \r\n\t"))
				abort();
			judge_target(&h);
		}
		http_head_free(&h);
	} else if (r == 0 && n >= HTTP_HEAD_MAX) {
		abort();
	}
	return 0;
}
