/* One request through the broker, on a worker: read under the client's
 * deadline, judged against the held profile (origin, canonical path,
 * route, budgets), carried upstream with the credential added, and its
 * answer returned stripped and scrubbed. Every refusal says why in its body
 * and in X-Bulkhead-Refusal; every request ends in one note. */
#include "broker_priv.h"
#include "secrets.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_CALLS 256
#define DEFAULT_REQUEST_BYTES (1ull << 20)
#define DEFAULT_RESPONSE_BYTES (4ull << 20)
#define DEFAULT_IN_FLIGHT 16
#define DEFAULT_UPSTREAM_MS 60000

struct req {
	struct bh_broker *b;
	struct conn *c;
	struct http_head head;
	struct target t;
	struct hold *hold;
	bool admitted; /* counted in the hold's calls and in flight */
	const char *route;
	const char *refusal;
	int status;
	uint64_t bytes_out, bytes_in;
	uint64_t last_byte_ms;
};

static uint64_t or_default(uint64_t v, uint64_t d)
{
	return v ? v : d;
}

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Status";
	}
}

static void note(struct req *r)
{
	struct bh_broker *b = r->b;
	uint64_t now = now_mono_ms();
	struct bh_egress_note n = {
		.session_fp = r->c->s->fp,
		.profile = r->hold ? r->hold->profile->name : "",
		.method = r->head.method ? r->head.method : "",
		.origin = r->t.origin ? r->t.origin : "",
		.route = r->route ? r->route : "",
		.status = r->status,
		.refusal = r->refusal,
		.bytes_out = r->bytes_out,
		.bytes_in = r->bytes_in,
		.ms = (uint32_t)(r->last_byte_ms && now > r->last_byte_ms ? now - r->last_byte_ms : 0),
	};
	/* Metadata only: the method, the origin and the route's pattern, never
	 * the path's values, a query or a body. */
	if (r->refusal)
		broker_log(b, BH_LOG_INFO, "broker: session %s: %s %s refused (%d): %s", n.session_fp,
			   n.method, n.origin[0] ? n.origin : "-", n.status, n.refusal);
	else
		broker_log(b, BH_LOG_DEBUG, "broker: session %s: %s %s %s -> %d (%llu/%llu bytes)",
			   n.session_fp, n.method, n.origin, n.route, n.status,
			   (unsigned long long)n.bytes_out, (unsigned long long)n.bytes_in);
	if (b->cfg.note)
		b->cfg.note(b->cfg.note_arg, &n);
}

/* The broker's own answer: a refusal (or a failure upstream), which ends
 * the connection (a body it did not read may follow). */
static bool refuse(struct req *r, int status, const char *refusal, const char *detail)
{
	r->status = status;
	r->refusal = refusal;
	cleanup_free char *body = detail ? xasprintf("bulkhead broker: %s (%s)\n", refusal, detail)
					 : xasprintf("bulkhead broker: %s\n", refusal);
	cleanup_free char *msg = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
					   "Content-Length: %zu\r\nX-Bulkhead-Refusal: %s\r\n"
					   "Connection: close\r\n\r\n%s",
					   status, status_text(status), strlen(body), refusal, body);
	stream_write(&r->c->st, msg, strlen(msg), now_mono_ms() + r->b->cfg.client_timeout_ms);
	note(r);
	return false;
}

/* Reads more from the client into c->in: > 0, or STREAM_* (EOF, timeout). */
static ssize_t read_more(struct conn *c, uint64_t deadline)
{
	uint8_t chunk[16384];
	ssize_t n = stream_read(&c->st, chunk, sizeof chunk, deadline);
	if (n > 0)
		buf_append(&c->in, chunk, (size_t)n);
	return n;
}

/* ---- where the request goes ---- */

/* An origin-form request's authority: the tunnel's, or its Host header's.
 * A Host without a port takes the port of the one origin the profile names
 * for that host (else 443). */
static int resolve_target(struct req *r, const char **why)
{
	const char *t = r->head.target;
	const char *host = http_header_get(&r->head, "host");
	size_t hosts = 0;
	for (size_t i = 0; i < r->head.n; i++)
		hosts += !strcasecmp(r->head.h[i].name, "host");
	if (hosts > 1) {
		*why = "more than one Host header";
		return -1;
	}
	if (t[0] != '/') {
		if (r->c->tunneled) {
			*why = "an absolute-form target inside a CONNECT tunnel";
			return -1;
		}
		if (target_absolute(t, &r->t, why) < 0)
			return -1;
		if (host) {
			struct target h;
			if (target_authority(host, r->t.port, &h, why) < 0)
				return -1;
			bool same = !strcmp(h.origin, r->t.origin);
			target_free(&h);
			if (!same) {
				*why = "the Host header differs from the request target";
				return -1;
			}
		}
		return 0;
	}
	if (!host) {
		*why = "an origin-form request without a Host header";
		return -1;
	}
	uint16_t port = 443;
	if (r->c->tunneled) {
		port = r->c->tunnel.port;
	} else if (!strchr(host, ':') || host[0] == '[') {
		const struct bh_egress_profile *p = r->hold->profile;
		cleanup_free char *prefix = xasprintf("https://%s:", host);
		size_t pl = strlen(prefix), found = 0;
		for (size_t i = 0; i < p->n_origins; i++)
			if (!strncasecmp(p->origins[i], prefix, pl)) {
				port = (uint16_t)atoi(p->origins[i] + pl);
				found++;
			}
		if (found != 1)
			port = 443;
	}
	if (target_authority(host, port, &r->t, why) < 0)
		return -1;
	if (r->c->tunneled && strcmp(r->t.origin, r->c->tunnel.origin)) {
		*why = "the Host header differs from the CONNECT target";
		return -2;
	}
	return target_origin_form(t, &r->t, why);
}

static const char *route_of(const struct bh_egress_profile *p, const char *method, const char *path)
{
	for (size_t i = 0; i < p->n_routes; i++) {
		const struct bh_egress_route *rt = &p->routes[i];
		if ((!strcmp(rt->method, "*") || !strcmp(rt->method, method)) &&
		    route_matches(rt->pattern, path))
			return rt->pattern;
	}
	return NULL;
}

/* ---- CONNECT ---- */

static bool serve_connect(struct req *r)
{
	struct conn *c = r->c;
	X509 *leaf = ca_leaf(&r->b->ca, r->t.host);
	if (!leaf)
		return refuse(r, 502, "no certificate for the host", NULL);
	static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	uint64_t deadline = now_mono_ms() + r->b->cfg.client_timeout_ms;
	if (c->in.len || stream_write(&c->st, ok, sizeof ok - 1, deadline) < 0) {
		X509_free(leaf);
		return false;
	}
	/* The tunnel's target is set before the handshake: the SNI check
	 * (broker.c) compares against it. */
	c->tunnel = r->t;
	memset(&r->t, 0, sizeof r->t);
	c->tunnel.path = NULL;
	SSL *ssl = SSL_new(r->b->server_ctx);
	if (!ssl || !SSL_use_certificate(ssl, leaf) || !SSL_use_PrivateKey(ssl, r->b->ca.leaf_key) ||
	    !SSL_set_fd(ssl, c->st.fd)) {
		X509_free(leaf);
		SSL_free(ssl);
		return false;
	}
	X509_free(leaf);
	SSL_set_app_data(ssl, c);
	c->st.ssl = ssl;
	if (stream_accept(&c->st, deadline) < 0) {
		broker_log(r->b, BH_LOG_INFO,
			   "broker: session %s: TLS after CONNECT %s failed (a wrong SNI, or a "
			   "client that does not trust the broker's CA)",
			   c->s->fp, c->tunnel.origin);
		return false;
	}
	c->tunneled = true;
	return true;
}

/* ---- the upstream request ---- */

static bool is_profile_header(const struct bh_egress_profile *p, const char *name)
{
	for (size_t i = 0; i < p->n_headers; i++)
		if (!strcasecmp(p->headers[i].name, name))
			return true;
	return false;
}

/* Headers the sandbox may not send upstream as they are: the framing and
 * the hop's own (rewritten by the broker), and any credential it might try
 * to supply or override. */
static bool dropped_outbound(const struct http_head *h, const struct bh_egress_profile *p,
			     const char *name)
{
	static const char *const drop[] = {"host", "content-length", "authorization", "cookie",
					   "expect", "accept-encoding"};
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
		if (!strcasecmp(name, drop[i]))
			return true;
	return http_header_hop_by_hop(h, name) || is_profile_header(p, name);
}

static void build_request(struct req *r, const char *credential, const struct buf *body,
			  struct buf *out)
{
	const struct bh_egress_profile *p = r->hold->profile;
	cleanup_free char *line = xasprintf("%s %s%s%s HTTP/1.1\r\n", r->head.method, r->t.path,
					    r->t.query ? "?" : "", r->t.query ? r->t.query : "");
	buf_append(out, line, strlen(line));
	cleanup_free char *host = r->t.port == 443 ? xasprintf("Host: %s\r\n", r->t.host)
						   : xasprintf("Host: %s:%u\r\n", r->t.host, r->t.port);
	buf_append(out, host, strlen(host));
	for (size_t i = 0; i < r->head.n; i++) {
		const struct http_header *f = &r->head.h[i];
		if (dropped_outbound(&r->head, p, f->name))
			continue;
		cleanup_free char *l = xasprintf("%s: %s\r\n", f->name, f->value);
		buf_append(out, l, strlen(l));
	}
	for (size_t i = 0; i < p->n_headers; i++) {
		cleanup_free char *v = secrets_render(p->headers[i].template, credential);
		cleanup_free char *l = xasprintf("%s: %s\r\n", p->headers[i].name, v);
		buf_append(out, l, strlen(l));
		OPENSSL_cleanse(v, strlen(v));
		OPENSSL_cleanse(l, strlen(l));
	}
	cleanup_free char *framing =
		xasprintf("Accept-Encoding: identity\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			  body->len);
	buf_append(out, framing, strlen(framing));
	buf_append(out, body->data, body->len);
}

/* ---- the answer ---- */

/* Headers the upstream may not hand the sandbox: the hop's own, framing
 * (the broker frames again), and anything credential-shaped. */
static bool dropped_inbound(const struct http_head *h, const struct bh_egress_profile *p,
			    const char *name)
{
	static const char *const drop[] = {"content-length", "authorization", "set-cookie",
					   "set-cookie2", "content-encoding"};
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
		if (!strcasecmp(name, drop[i]))
			return true;
	return http_header_hop_by_hop(h, name) || is_profile_header(p, name);
}

static bool answer(struct req *r, struct upstream_answer *a, const struct secrets *sec,
		   bool head_only)
{
	const struct bh_egress_profile *p = r->hold->profile;
	struct buf out = {0};
	int status = a->head.status;
	cleanup_free char *line = xasprintf("HTTP/1.1 %d %s\r\n", status, status_text(status));
	buf_append(&out, line, strlen(line));
	for (size_t i = 0; i < a->head.n; i++) {
		const struct http_header *f = &a->head.h[i];
		if (dropped_inbound(&a->head, p, f->name))
			continue;
		bool named_by_secret = false;
		for (size_t k = 0; k < sec->n; k++)
			named_by_secret |= strstr(f->name, sec->v[k].v) != NULL;
		if (named_by_secret)
			continue; /* an echo in a header's name goes whole */
		struct buf v = {0};
		secrets_scrub(sec, (const uint8_t *)f->value, strlen(f->value), &v);
		buf_append(&out, f->name, strlen(f->name));
		buf_append(&out, ": ", 2);
		buf_append(&out, v.data, v.len);
		buf_append(&out, "\r\n", 2);
		buf_free(&v);
	}
	struct buf body = {0};
	secrets_scrub(sec, a->body.data, a->body.len, &body);
	bool no_body = status == 204 || status == 304;
	if (!no_body) {
		cleanup_free char *cl =
			xasprintf("Content-Length: %llu\r\n",
				  (unsigned long long)(head_only && a->head.has_length ? a->head.length
										      : body.len));
		buf_append(&out, cl, strlen(cl));
	}
	if (r->head.close)
		buf_append(&out, "Connection: close\r\n", 19);
	buf_append(&out, "\r\n", 2);
	if (!head_only && !no_body)
		buf_append(&out, body.data, body.len);
	r->bytes_in = body.len;
	int w = stream_write(&r->c->st, out.data, out.len,
			     now_mono_ms() + r->b->cfg.client_timeout_ms);
	buf_free(&out);
	buf_free(&body);
	r->status = status;
	return w == 0;
}

/* ---- the body the sandbox sends ---- */

static int read_body(struct req *r, uint64_t cap, struct buf *body, const char **refusal)
{
	struct conn *c = r->c;
	uint64_t deadline = now_mono_ms() + r->b->cfg.client_timeout_ms;
	if (r->head.has_length && r->head.length > cap) {
		*refusal = "request body over its cap";
		return 413;
	}
	const char *expect = http_header_get(&r->head, "expect");
	if (expect && !strcasecmp(expect, "100-continue") && (r->head.chunked || r->head.length)) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (stream_write(&c->st, cont, sizeof cont - 1, deadline) < 0)
			return -1;
	}
	struct http_chunked ch = {0};
	for (;;) {
		if (r->head.chunked) {
			bool done = false;
			const char *why = NULL;
			ssize_t used = http_chunked_feed(&ch, c->in.data, c->in.len, body, cap, &done, &why);
			if (used < 0) {
				*refusal = used == -2 ? "request body over its cap" : "malformed chunked body";
				return used == -2 ? 413 : 400;
			}
			buf_consume(&c->in, (size_t)used);
			if (done)
				return 0;
		} else {
			size_t want = (size_t)r->head.length - body->len;
			size_t take = c->in.len < want ? c->in.len : want;
			buf_append(body, c->in.data, take);
			buf_consume(&c->in, take);
			if (body->len == r->head.length)
				return 0;
		}
		ssize_t n = read_more(c, deadline);
		if (n == STREAM_TIMEOUT) {
			*refusal = "the request body was too slow";
			return 408;
		}
		if (n <= 0)
			return -1;
	}
}

/* ---- the circuit breaker ---- */

#define BACKOFF_MAX_S 30
#define BACKOFF_DEFAULT_S 1

/* Seconds the answer asks the caller to wait: Retry-After's delta-seconds
 * (an HTTP date counts as the default), capped. */
static uint64_t backoff_seconds(const struct http_head *h)
{
	const char *ra = http_header_get(h, "retry-after");
	if (!ra || !*ra || strlen(ra) > 9 || strspn(ra, "0123456789") != strlen(ra))
		return BACKOFF_DEFAULT_S;
	uint64_t s = strtoull(ra, NULL, 10);
	return s > BACKOFF_MAX_S ? BACKOFF_MAX_S : s;
}

/* Under b->mu. The seconds left of the origin's backoff, 0 when none. */
static uint64_t backoff_left(struct hold *h, const char *origin, uint64_t now)
{
	for (size_t i = 0; i < ARRAY_SIZE(h->backoff); i++)
		if (h->backoff[i].origin && !strcmp(h->backoff[i].origin, origin) &&
		    h->backoff[i].until_ms > now)
			return (h->backoff[i].until_ms - now + 999) / 1000;
	return 0;
}

static void backoff_open(struct bh_broker *b, struct hold *h, const char *origin, uint64_t secs)
{
	uint64_t now = now_mono_ms();
	pthread_mutex_lock(&b->mu);
	size_t slot = 0;
	for (size_t i = 0; i < ARRAY_SIZE(h->backoff); i++) {
		if (h->backoff[i].origin && !strcmp(h->backoff[i].origin, origin)) {
			slot = i;
			break;
		}
		if (h->backoff[i].until_ms < h->backoff[slot].until_ms)
			slot = i;
	}
	if (!h->backoff[slot].origin || strcmp(h->backoff[slot].origin, origin)) {
		free(h->backoff[slot].origin);
		h->backoff[slot].origin = xstrdup(origin);
	}
	h->backoff[slot].until_ms = now + secs * 1000;
	pthread_mutex_unlock(&b->mu);
}

/* ---- the request ---- */

/* Counts the request against the hold: 0, or the status of the refusal. */
static int admit(struct req *r, const char **refusal)
{
	struct bh_broker *b = r->b;
	struct hold *h = r->hold;
	const struct bh_egress_budgets *bu = &h->profile->budgets;
	int status = 0;
	pthread_mutex_lock(&b->mu);
	if (h->released) {
		*refusal = "no profile is held now";
		status = 503;
	} else if (h->calls >= or_default(bu->max_calls, DEFAULT_MAX_CALLS)) {
		*refusal = "call budget spent";
		status = 429;
	} else if (h->in_flight >= or_default(bu->max_in_flight, DEFAULT_IN_FLIGHT)) {
		*refusal = "too many calls in flight";
		status = 429;
	} else {
		h->calls++;
		h->in_flight++;
		r->c->hold_id = h->id;
	}
	pthread_mutex_unlock(&b->mu);
	r->admitted = status == 0;
	return status;
}

static void release_in_flight(struct req *r)
{
	if (!r->admitted)
		return;
	pthread_mutex_lock(&r->b->mu);
	r->hold->in_flight--;
	pthread_mutex_unlock(&r->b->mu);
	r->admitted = false;
}

/* The credential for this request: minted at the hold's first request
 * (the engine's hold answers at once; a command may take a while), and
 * again once a command's lifetime is over. */
static char *credential_for(struct req *r, const char **why)
{
	struct hold *h = r->hold;
	const struct bh_egress_credential *cr = &h->profile->credential;
	pthread_mutex_lock(&h->mint_mu);
	uint64_t now = now_mono_ms();
	if (h->credential && cr->source == BH_EGRESS_CREDENTIAL_COMMAND && cr->lifetime_s &&
	    now - h->minted_ms >= (uint64_t)cr->lifetime_s * 1000) {
		OPENSSL_cleanse(h->credential, strlen(h->credential));
		free(h->credential);
		h->credential = NULL;
	}
	if (!h->credential && credential_mint(cr, &h->credential, why) == 0)
		h->minted_ms = now;
	char *out = h->credential ? xstrdup(h->credential) : NULL;
	pthread_mutex_unlock(&h->mint_mu);
	return out;
}

static bool serve(struct req *r)
{
	struct bh_broker *b = r->b;
	struct conn *c = r->c;
	uint64_t deadline = now_mono_ms() + b->cfg.client_timeout_ms;
	for (;;) {
		const char *why = NULL;
		ssize_t hl = http_parse_request(c->in.data, c->in.len, &r->head, &why);
		if (hl < 0)
			return refuse(r, 400, "malformed request", why);
		if (hl > 0) {
			buf_consume(&c->in, (size_t)hl);
			break;
		}
		ssize_t n = read_more(c, deadline);
		if (n == STREAM_TIMEOUT)
			return c->in.len ? refuse(r, 408, "the request head was too slow", NULL) : false;
		if (n <= 0)
			return false;
	}
	bool is_connect = !strcmp(r->head.method, "CONNECT");
	if (r->head.http10 && !is_connect)
		return refuse(r, 400, "malformed request", "HTTP/1.0 is taken for CONNECT only");
	r->hold = session_hold_get(b, c->s);
	if (!r->hold)
		return refuse(r, 503, "no profile is held now",
			      "the broker serves a session only during a call that holds a profile");
	const struct bh_egress_profile *p = r->hold->profile;
	const char *why = NULL;
	if (is_connect) {
		if (c->tunneled)
			return refuse(r, 400, "malformed request", "CONNECT inside a CONNECT tunnel");
		if (target_authority(r->head.target, 0, &r->t, &why) < 0)
			return refuse(r, 400, "malformed request", why);
	} else {
		int tr = resolve_target(r, &why);
		if (tr == -2)
			return refuse(r, 403, "Host differs from the CONNECT target", NULL);
		if (tr < 0)
			return refuse(r, 400, "malformed request", why);
	}
	if (!profile_has_origin(p, r->t.origin))
		return refuse(r, 403,
			      r->t.ip_literal ? "IP literal not named by the profile"
					      : "origin not allowed",
			      NULL);
	if (is_connect)
		return serve_connect(r);
	if (path_canonical(r->t.path, &why) < 0)
		return refuse(r, 403, "path not canonical", why);
	r->route = route_of(p, r->head.method, r->t.path);
	if (!r->route)
		return refuse(r, 403, "no route allows this request", NULL);
	const char *refusal = NULL;
	pthread_mutex_lock(&b->mu);
	uint64_t wait_s = backoff_left(r->hold, r->t.origin, now_mono_ms());
	pthread_mutex_unlock(&b->mu);
	if (wait_s) {
		char detail[64];
		snprintf(detail, sizeof detail, "retry in %llu s", (unsigned long long)wait_s);
		return refuse(r, 503, "upstream asked to back off", detail);
	}
	int st = admit(r, &refusal);
	if (st)
		return refuse(r, st, refusal, NULL);
	const struct bh_egress_budgets *bu = &p->budgets;
	struct buf body = {0};
	int br = read_body(r, or_default(bu->max_request_bytes, DEFAULT_REQUEST_BYTES), &body,
			   &refusal);
	if (br != 0) {
		buf_free(&body);
		return br < 0 ? false : refuse(r, br, refusal, NULL);
	}
	r->last_byte_ms = now_mono_ms();
	pthread_mutex_lock(&b->mu);
	bool out_ok = !bu->max_bytes_out || r->hold->bytes_out + body.len <= bu->max_bytes_out;
	if (out_ok)
		r->hold->bytes_out += body.len;
	pthread_mutex_unlock(&b->mu);
	if (!out_ok) {
		buf_free(&body);
		return refuse(r, 429, "bytes-out budget spent", NULL);
	}
	char *cred = credential_for(r, &why);
	if (!cred) {
		buf_free(&body);
		broker_log(b, BH_LOG_WARN, "broker: profile %s: %s", p->name, why);
		return refuse(r, 502, "the credential could not be minted", NULL);
	}
	struct secrets sec = {0};
	secrets_fill(&sec, p, cred);
	struct buf up = {0};
	build_request(r, cred, &body, &up);
	OPENSSL_cleanse(cred, strlen(cred));
	free(cred);
	r->bytes_out = body.len;
	buf_free(&body);
	bool head_only = !strcmp(r->head.method, "HEAD");
	struct upstream_answer a;
	upstream_call(b, c, r->hold->id, r->t.host, r->t.port, &up,
		      head_only, or_default(bu->max_response_bytes, DEFAULT_RESPONSE_BYTES),
		      (uint32_t)or_default(bu->upstream_timeout_ms, DEFAULT_UPSTREAM_MS), &a);
	OPENSSL_cleanse(up.data, up.len);
	buf_free(&up);
	/* The upstream call is over: no longer in flight, before the sandbox
	 * hears of it (so its next call is never refused for this one). */
	release_in_flight(r);
	bool keep;
	if (a.failure) {
		secrets_free(&sec);
		upstream_answer_free(&a);
		pthread_mutex_lock(&b->mu);
		bool cut = c->cut;
		pthread_mutex_unlock(&b->mu);
		return refuse(r, cut ? 503 : a.status, cut ? "no profile is held now" : a.failure, NULL);
	}
	pthread_mutex_lock(&b->mu);
	bool in_ok = !bu->max_bytes_in || r->hold->bytes_in + a.body.len <= bu->max_bytes_in;
	if (in_ok)
		r->hold->bytes_in += a.body.len;
	pthread_mutex_unlock(&b->mu);
	if (!in_ok) {
		secrets_free(&sec);
		upstream_answer_free(&a);
		return refuse(r, 429, "bytes-in budget spent", NULL);
	}
	if (a.head.status == 429 || a.head.status == 503)
		backoff_open(b, r->hold, r->t.origin, backoff_seconds(&a.head));
	keep = answer(r, &a, &sec, head_only) && !r->head.close;
	secrets_free(&sec);
	upstream_answer_free(&a);
	note(r);
	return keep;
}

bool request_serve(struct bh_broker *b, struct conn *c)
{
	struct req r = {.b = b, .c = c};
	bool keep = serve(&r);
	release_in_flight(&r);
	if (r.hold)
		hold_put(b, r.hold);
	http_head_free(&r.head);
	target_free(&r.t);
	return keep;
}
