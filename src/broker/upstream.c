/* The broker's own call to the upstream: the name resolved here (never by
 * the sandbox), TLS verified for the profile's host, the whole answer read
 * under the profile's time and size budgets. */
#include "broker_priv.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_ADDRS 8

void upstream_answer_free(struct upstream_answer *a)
{
	http_head_free(&a->head);
	buf_free(&a->body);
}

static int resolve(struct bh_broker *b, const char *host, uint16_t port,
		   struct sockaddr_storage *out)
{
	/* A named IP literal is its own address: no resolver is asked. */
	memset(out, 0, sizeof *out);
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	char inner[64];
	size_t hl = strlen(host);
	if (host[0] == '[' && hl - 2 < sizeof inner) {
		snprintf(inner, sizeof inner, "%.*s", (int)(hl - 2), host + 1);
		if (inet_pton(AF_INET6, inner, &v6->sin6_addr) == 1) {
			v6->sin6_family = AF_INET6;
			return 1;
		}
	} else if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		return 1;
	}
	if (b->cfg.resolve)
		return b->cfg.resolve(b->cfg.resolve_arg, host, port, out, MAX_ADDRS);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	char portstr[8];
	snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
	if (getaddrinfo(host, portstr, &hints, &res) != 0)
		return -1;
	int n = 0;
	for (struct addrinfo *ai = res; ai && n < MAX_ADDRS; ai = ai->ai_next) {
		memset(&out[n], 0, sizeof out[n]);
		memcpy(&out[n], ai->ai_addr, ai->ai_addrlen);
		n++;
	}
	freeaddrinfo(res);
	return n;
}

static socklen_t addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* A connected socket to one of the addresses, or -1 (STREAM_TIMEOUT when
 * the deadline passed). */
static int connect_any(struct bh_broker *b, struct conn *c, uint64_t hold_id,
		       const struct sockaddr_storage *addrs, int n, uint64_t deadline)
{
	for (int i = 0; i < n; i++) {
		int fd = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		conn_set_upstream(b, c, fd, hold_id);
		int r = connect(fd, (const struct sockaddr *)&addrs[i], addr_len(&addrs[i]));
		if (r < 0 && errno == EINPROGRESS) {
			for (;;) {
				uint64_t now = now_mono_ms();
				if (now >= deadline) {
					conn_set_upstream(b, c, -1, 0);
					close(fd);
					return STREAM_TIMEOUT;
				}
				struct pollfd p = {.fd = fd, .events = POLLOUT};
				int pr = poll(&p, 1, (int)(deadline - now));
				if (pr < 0 && errno == EINTR)
					continue;
				break;
			}
			int soerr = 0;
			socklen_t sl = sizeof soerr;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
				r = 0;
		}
		if (r == 0)
			return fd;
		conn_set_upstream(b, c, -1, 0);
		close(fd);
	}
	return -1;
}

static void fail(struct upstream_answer *out, int status, const char *why)
{
	out->status = status;
	out->failure = why;
}

/* Reads the answer's head (1xx interim answers skipped) and body. */
static void read_answer(struct stream *st, bool head_only, uint64_t cap, uint64_t deadline,
			struct upstream_answer *out)
{
	struct buf in = {0};
	uint8_t chunk[16384];
	for (;;) {
		const char *why = NULL;
		ssize_t hl = http_parse_response(in.data, in.len, &out->head, &why);
		if (hl < 0) {
			fail(out, 502, "upstream answered malformed HTTP");
			goto done;
		}
		if (hl > 0) {
			buf_consume(&in, (size_t)hl);
			if (out->head.status >= 200)
				break;
			if (out->head.status == 101) {
				fail(out, 502, "upstream switched protocols");
				goto done;
			}
			http_head_free(&out->head);
			continue;
		}
		ssize_t r = stream_read(st, chunk, sizeof chunk, deadline);
		if (r <= 0) {
			fail(out, r == STREAM_TIMEOUT ? 504 : 502,
			     r == STREAM_TIMEOUT ? "upstream timed out" : "upstream closed without answering");
			goto done;
		}
		buf_append(&in, chunk, (size_t)r);
	}
	const char *coding = http_header_get(&out->head, "content-encoding");
	if (coding && strcasecmp(coding, "identity")) {
		/* A compressed body would hide an echoed credential from the
		 * scrubber: the broker asked for identity and takes nothing else. */
		fail(out, 502, "upstream sent a coded body the broker cannot scrub");
		goto done;
	}
	int status = out->head.status;
	if (head_only || status == 204 || status == 304)
		goto done;
	if (out->head.has_length && out->head.length > cap) {
		fail(out, 502, "response body over its cap");
		goto done;
	}
	struct http_chunked ch = {0};
	bool finished = false;
	for (;;) {
		if (out->head.chunked) {
			const char *why = NULL;
			bool d = false;
			ssize_t used = http_chunked_feed(&ch, in.data, in.len, &out->body, cap, &d, &why);
			if (used < 0) {
				fail(out, 502, used == -2 ? "response body over its cap"
							  : "upstream sent malformed chunks");
				goto done;
			}
			buf_consume(&in, (size_t)used);
			finished = d;
		} else {
			buf_append(&out->body, in.data, in.len);
			buf_consume(&in, in.len);
			if (out->head.has_length && out->body.len >= out->head.length) {
				out->body.len = (size_t)out->head.length;
				finished = true;
			} else if (out->body.len > cap) {
				fail(out, 502, "response body over its cap");
				goto done;
			}
		}
		if (finished)
			break;
		ssize_t r = stream_read(st, chunk, sizeof chunk, deadline);
		if (r == STREAM_EOF && !out->head.chunked && !out->head.has_length)
			break; /* read until close */
		if (r <= 0) {
			fail(out, r == STREAM_TIMEOUT ? 504 : 502,
			     r == STREAM_TIMEOUT ? "upstream timed out" : "upstream cut its answer short");
			goto done;
		}
		buf_append(&in, chunk, (size_t)r);
	}
done:
	buf_free(&in);
}

void upstream_call(struct bh_broker *b, struct conn *c, uint64_t hold_id, const char *host,
		   uint16_t port, const struct buf *req, bool head_only, uint64_t body_cap,
		   uint32_t timeout_ms, struct upstream_answer *out)
{
	memset(out, 0, sizeof *out);
	uint64_t deadline = now_mono_ms() + timeout_ms;
	struct sockaddr_storage addrs[MAX_ADDRS];
	int n = resolve(b, host, port, addrs);
	if (n <= 0) {
		fail(out, 502, "upstream name did not resolve");
		return;
	}
	for (int i = 0; i < n; i++) {
		if (addrs[i].ss_family == AF_INET)
			((struct sockaddr_in *)&addrs[i])->sin_port = htons(port);
		else if (addrs[i].ss_family == AF_INET6)
			((struct sockaddr_in6 *)&addrs[i])->sin6_port = htons(port);
	}
	int fd = connect_any(b, c, hold_id, addrs, n, deadline);
	if (fd < 0) {
		fail(out, fd == STREAM_TIMEOUT ? 504 : 502,
		     fd == STREAM_TIMEOUT ? "upstream timed out" : "upstream unreachable");
		return;
	}
	struct stream st = {.fd = fd, .ssl = SSL_new(b->upstream_ctx)};
	/* A named IP literal is verified as an address and sent no SNI (RFC
	 * 6066 has none for addresses); a name, as a DNS name. */
	char ip[64] = "";
	size_t hl = strlen(host);
	if (host[0] == '[' && hl - 2 < sizeof ip)
		snprintf(ip, sizeof ip, "%.*s", (int)(hl - 2), host + 1);
	else if (strspn(host, "0123456789.") == hl && hl < sizeof ip)
		snprintf(ip, sizeof ip, "%s", host);
	bool named_ok = st.ssl && (ip[0] ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(st.ssl), ip) == 1
					 : SSL_set_tlsext_host_name(st.ssl, host) &&
						   SSL_set1_host(st.ssl, host));
	if (!named_ok || !SSL_set_fd(st.ssl, fd)) {
		fail(out, 502, "no TLS for the upstream");
		goto done;
	}
	int hs = stream_connect(&st, deadline);
	if (hs < 0) {
		long v = SSL_get_verify_result(st.ssl);
		fail(out, hs == STREAM_TIMEOUT ? 504 : 502,
		     hs == STREAM_TIMEOUT ? "upstream timed out"
		     : v != X509_V_OK     ? "upstream certificate not valid for the host"
					  : "upstream TLS handshake failed");
		goto done;
	}
	int w = stream_write(&st, req->data, req->len, deadline);
	if (w < 0) {
		fail(out, w == STREAM_TIMEOUT ? 504 : 502,
		     w == STREAM_TIMEOUT ? "upstream timed out" : "upstream closed before the request was sent");
		goto done;
	}
	read_answer(&st, head_only, body_cap, deadline, out);
done:
	ERR_clear_error();
	if (st.ssl) {
		if (!out->failure)
			SSL_shutdown(st.ssl);
		SSL_free(st.ssl);
	}
	conn_set_upstream(b, c, -1, 0);
	close(fd);
}
