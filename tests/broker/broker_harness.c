#include "broker_harness.h"
#include "broker_priv.h"
#include "test_ca.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

char *run_cmd(const char *cmd, int *rc)
{
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 65536, n = 0;
	char *out = malloc(cap);
	size_t r;
	while ((r = fread(out + n, 1, cap - n - 1, p)) > 0) {
		n += r;
		if (n + 1 >= cap)
			out = realloc(out, cap *= 2);
	}
	out[n] = '\0';
	int st = pclose(p);
	if (rc)
		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* ---- the test CA (tests/support/test_ca.c: the openssl CLI, not the broker's code) ---- */

static void make_ca(struct fixture *f)
{
	test_ca_make(f->dir, "testca", "bulkhead broker test CA");
	snprintf(f->ca_pem, sizeof f->ca_pem, "%s/testca.pem", f->dir);
}

static void make_cert(struct fixture *f, const char *name, const char *addr)
{
	char san[300];
	snprintf(san, sizeof san, "DNS:%s,IP:%s", name, addr);
	char subject[300];
	snprintf(subject, sizeof subject, "/CN=%s", name);
	test_ca_cert(f->dir, &(struct test_cert){.ca = "testca", .name = name, .subject = subject,
						  .san = san, .usage = "serverAuth"});
}

/* ---- upstreams ---- */

struct upconn {
	struct upstream *u;
	SSL *ssl;
	int fd;
};

static bool ssl_write_all(SSL *ssl, const void *p, size_t n)
{
	while (n) {
		int w = SSL_write(ssl, p, (int)n);
		if (w <= 0)
			return false;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return true;
}

static void respond(SSL *ssl, const char *status, const char *extra, const char *body, size_t blen)
{
	char head[2048];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
			 blen, extra);
	ssl_write_all(ssl, head, (size_t)n);
	ssl_write_all(ssl, body, blen);
}

static void *upconn_main(void *arg)
{
	struct upconn *uc = arg;
	struct upstream *u = uc->u;
	if (SSL_accept(uc->ssl) != 1)
		goto out;
	char buf[65536];
	size_t n = 0;
	char *end = NULL;
	while (!end && n < sizeof buf - 1) {
		int r = SSL_read(uc->ssl, buf + n, (int)(sizeof buf - 1 - n));
		if (r <= 0)
			goto out;
		n += (size_t)r;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	if (!end)
		goto out;
	size_t head_len = (size_t)(end - buf) + 4;
	size_t clen = 0;
	const char *cl = strcasestr(buf, "\r\ncontent-length:");
	if (cl && cl < end)
		clen = strtoul(cl + 17, NULL, 10);
	size_t body = n - head_len;
	while (body < clen) {
		int r = SSL_read(uc->ssl, buf, sizeof buf);
		if (r <= 0)
			break;
		body += (size_t)r;
	}
	char line[1024];
	const char *eol = strstr(buf, "\r\n");
	snprintf(line, sizeof line, "%.*s", (int)(eol - buf), buf);
	pthread_mutex_lock(&u->mu);
	u->hits++;
	snprintf(u->last_line, sizeof u->last_line, "%s", line);
	snprintf(u->last_headers, sizeof u->last_headers, "%.*s", (int)(end - eol - 2), eol + 2);
	u->last_body_len = body;
	unsigned slow = u->slow_ms;
	pthread_mutex_unlock(&u->mu);

	char path[512] = "";
	sscanf(line, "%*s %511s", path);
	if (!strcmp(path, "/v1/echoenc")) { /* ---- egress: encoded echoes ---- */
		char auth[512] = "";
		const char *a = strcasestr(buf, "\r\nauthorization:");
		if (a && a < end)
			sscanf(a + 16, " %511[^\r]", auth);
		char forms[ECHO_FORMS][ECHO_FORM_MAX];
		echo_encodings(auth, forms);
		char extra[8192], b[8192];
		int el = 0, bl = snprintf(b, sizeof b, "{\"plain_hex\":\"deadbeef\"");
		for (int k = 0; k < ECHO_FORMS; k++) {
			el += snprintf(extra + el, sizeof extra - (size_t)el, "X-Echo-%d: %s\r\n",
				       k, forms[k]);
			bl += snprintf(b + bl, sizeof b - (size_t)bl, ",\"form%d\":\"%s\"", k,
				       forms[k]);
		}
		bl += snprintf(b + bl, sizeof b - (size_t)bl, "}");
		respond(uc->ssl, "200 OK", extra, b, (size_t)bl);
	} else if (!strncmp(path, "/v1/echo", 8)) {
		/* An upstream that hands the credential back, in a header and
		 * in the body. */
		char auth[512] = "";
		const char *a = strcasestr(buf, "\r\nauthorization:");
		if (a && a < end)
			sscanf(a + 16, " %511[^\r]", auth);
		char extra[1200], b[700];
		snprintf(extra, sizeof extra, "X-Echo-Auth: %s\r\nAuthorization: %s\r\n", auth, auth);
		int bl = snprintf(b, sizeof b, "{\"you_sent\":\"%s\"}", auth);
		if (!strcmp(path, "/v1/echo64")) {
			/* the same echo, base64 (as a JSON API might embed it) */
			unsigned char enc[800];
			EVP_EncodeBlock(enc, (const unsigned char *)auth, (int)strlen(auth));
			bl = snprintf(b, sizeof b, "{\"you_sent_b64\":\"%s\"}", enc);
			snprintf(extra, sizeof extra, "X-Echo-Auth: %s\r\n", enc);
		}
		respond(uc->ssl, "200 OK", extra, b, (size_t)bl);
	} else if (!strcmp(path, "/v1/redirect")) {
		respond(uc->ssl, "302 Found", "Location: https://evil.test/steal\r\n", "", 0);
	} else if (!strcmp(path, "/v1/slow")) {
		usleep(slow * 1000);
		respond(uc->ssl, "200 OK", "", "late", 4);
	} else if (!strcmp(path, "/v1/big")) {
		size_t big = 2u << 20;
		char *b = malloc(big);
		memset(b, 'x', big);
		respond(uc->ssl, "200 OK", "", b, big);
		free(b);
	} else if (!strcmp(path, "/v1/chunked")) {
		static const char c[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
					"Connection: close\r\n\r\n3\r\nabc\r\n3;x=y\r\ndef\r\n0\r\n\r\n";
		ssl_write_all(uc->ssl, c, sizeof c - 1);
	} else if (!strncmp(path, "/simple/", 8) || !strncmp(path, "/files/", 7)) {
		/* a PEP 503 index from the test's directory (the broker lets
		 * only canonical paths through) */
		char file[1200];
		snprintf(file, sizeof file, "%s%s%s", u->index_dir, path,
			 path[strlen(path) - 1] == '/' ? "index.html" : "");
		FILE *fp = fopen(file, "rb");
		char *data = malloc(1 << 20);
		size_t len = fp ? fread(data, 1, 1 << 20, fp) : 0;
		if (fp) {
			fclose(fp);
			respond(uc->ssl, "200 OK",
				path[1] == 's' ? "Content-Type: text/html\r\n"
					       : "Content-Type: application/octet-stream\r\n",
				data, len);
		} else {
			respond(uc->ssl, "404 Not Found", "", "", 0);
		}
		free(data);
	} else if (!strcmp(path, "/v1/busy")) {
		respond(uc->ssl, "429 Too Many Requests", "Retry-After: 2\r\n", "slow down", 9);
	} else if (!strcmp(path, "/v1/gzip")) {
		respond(uc->ssl, "200 OK", "Content-Encoding: gzip\r\n", "\x1f\x8b", 2);
	} else if (!strcmp(path, "/v1/upload")) {
		char b[64];
		int bl = snprintf(b, sizeof b, "got %zu bytes", body);
		respond(uc->ssl, "200 OK", "", b, (size_t)bl);
	} else {
		respond(uc->ssl, "200 OK",
			"X-Upstream: yes\r\nKeep-Alive: timeout=5\r\nSet-Cookie: sid=upstream-session\r\n",
			"hello from upstream", 19);
	}
	SSL_shutdown(uc->ssl);
out:
	SSL_free(uc->ssl);
	close(uc->fd);
	free(uc);
	return NULL;
}

static void *upstream_main(void *arg)
{
	struct upstream *u = arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = u->listen_fd, .events = POLLIN},
				      {.fd = u->stop_fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno == EINTR)
			continue;
		if (p[1].revents)
			return NULL;
		int fd = accept4(u->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct upconn *uc = calloc(1, sizeof *uc);
		uc->u = u;
		uc->fd = fd;
		uc->ssl = SSL_new(u->ctx);
		SSL_set_fd(uc->ssl, fd);
		pthread_t t;
		pthread_create(&t, NULL, upconn_main, uc);
		pthread_detach(t);
	}
}

static void upstream_start(struct fixture *f, struct upstream *u, const char *addr,
			   const char *cert_name)
{
	memset(u, 0, sizeof *u);
	pthread_mutex_init(&u->mu, NULL);
	snprintf(u->addr, sizeof u->addr, "%s", addr);
	make_cert(f, cert_name, addr);
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char path[400];
	snprintf(path, sizeof path, "%s/%s.pem", f->dir, cert_name);
	cr_assert_eq(SSL_CTX_use_certificate_file(ctx, path, SSL_FILETYPE_PEM), 1);
	snprintf(path, sizeof path, "%s/%s.key", f->dir, cert_name);
	cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, path, SSL_FILETYPE_PEM), 1);
	u->ctx = ctx;
	u->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	cr_assert_eq(bind(u->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", addr,
		     strerror(errno));
	listen(u->listen_fd, 64);
	socklen_t sl = sizeof sa;
	getsockname(u->listen_fd, (struct sockaddr *)&sa, &sl);
	u->port = ntohs(sa.sin_port);
	u->stop_fd = eventfd(0, EFD_CLOEXEC);
	pthread_create(&u->thread, NULL, upstream_main, u);
}

static void upstream_stop(struct upstream *u)
{
	uint64_t one = 1;
	if (write(u->stop_fd, &one, sizeof one) < 0)
		return;
	pthread_join(u->thread, NULL);
	close(u->listen_fd);
	close(u->stop_fd);
	SSL_CTX_free(u->ctx);
}

int upstream_hits(struct upstream *u)
{
	pthread_mutex_lock(&u->mu);
	int h = u->hits;
	pthread_mutex_unlock(&u->mu);
	return h;
}

void upstream_last(struct upstream *u, char *line, size_t ln, char *headers, size_t hn)
{
	pthread_mutex_lock(&u->mu);
	if (line)
		snprintf(line, ln, "%s", u->last_line);
	if (headers)
		snprintf(headers, hn, "%s", u->last_headers);
	pthread_mutex_unlock(&u->mu);
}

/* ---- the broker under test ---- */

static const struct bh_egress_profile *lookup(void *arg, const char *name, void **keep)
{
	struct fixture *f = arg;
	*keep = f;
	return !strcmp(name, f->profile.name) ? &f->profile : NULL;
}

static void note(void *arg, const struct bh_egress_note *n)
{
	struct fixture *f = arg;
	pthread_mutex_lock(&f->mu);
	size_t len = strlen(f->notes);
	snprintf(f->notes + len, sizeof f->notes - len, "%d %s %s %s %s %llu %llu\n", n->status,
		 n->refusal ? n->refusal : "-", n->method, n->origin[0] ? n->origin : "-",
		 n->route[0] ? n->route : "-", (unsigned long long)n->bytes_out,
		 (unsigned long long)n->bytes_in);
	f->n_notes++;
	pthread_mutex_unlock(&f->mu);
}

static void logged(void *arg, enum bh_log_level level, const char *msg)
{
	struct fixture *f = arg;
	pthread_mutex_lock(&f->mu);
	size_t len = strlen(f->logs);
	snprintf(f->logs + len, sizeof f->logs - len, "%s\n", msg);
	pthread_mutex_unlock(&f->mu);
}

/* The tests' names, as curl's --resolve maps them. */
static int resolve(void *arg, const char *host, uint16_t port, struct sockaddr_storage *out,
		   int max)
{
	const char *addr = !strcmp(host, "api.test") || !strcmp(host, "alias.test") ? "127.0.0.2"
			   : !strcmp(host, "rebind.test") || !strcmp(host, "other.test") ? "127.0.0.3"
											: NULL;
	if (!addr || max < 1)
		return -1;
	struct sockaddr_in *sa = (struct sockaddr_in *)&out[0];
	memset(&out[0], 0, sizeof out[0]);
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	inet_pton(AF_INET, addr, &sa->sin_addr);
	return 1;
}

static char *strv(const char *s)
{
	return strdup(s);
}

void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof *f);
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&f->mu, NULL);
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(f->dir, sizeof f->dir, "%s/broker.XXXXXX", root && *root ? root : "/tmp");
	cr_assert_not_null(mkdtemp(f->dir));
	make_ca(f);
	upstream_start(f, &f->api, "127.0.0.2", "api.test");
	snprintf(f->api.index_dir, sizeof f->api.index_dir, "%s/index", f->dir);
	upstream_start(f, &f->other, "127.0.0.3", "other.test");
	setenv(TEST_CRED_ENV, TEST_CREDENTIAL, 1);

	struct bh_egress_profile *p = &f->profile;
	p->name = strv("brokered");
	p->description = strv("the tests' upstream");
	p->n_origins = 2;
	p->origins = calloc(3, sizeof *p->origins);
	char o[128];
	snprintf(o, sizeof o, "https://api.test:%u", f->api.port);
	p->origins[0] = strv(o);
	snprintf(o, sizeof o, "https://rebind.test:%u", f->other.port);
	p->origins[1] = strv(o);
	static const char *const routes[][2] = {
		{"GET", "/v1/items"},   {"GET", "/v1/items/*"},  {"GET", "/v1/items/*/detail"},
		{"GET", "/v1/echo"},    {"GET", "/v1/redirect"}, {"GET", "/v1/slow"},
		{"GET", "/v1/big"},     {"GET", "/v1/chunked"},  {"GET", "/v1/gzip"},
		{"POST", "/v1/upload"}, {"HEAD", "/v1/items"},   {"GET", "/steal"},
		{"GET", "/v1/echo64"},  {"GET", "/v1/busy"},     {"GET", "/simple/*/"},
		{"GET", "/files/*"},    {"GET", "/v1/echoenc"}, /* ---- egress ---- */
	};
	p->n_routes = sizeof routes / sizeof routes[0];
	p->routes = calloc(p->n_routes, sizeof *p->routes);
	for (size_t i = 0; i < p->n_routes; i++) {
		p->routes[i].method = strv(routes[i][0]);
		p->routes[i].pattern = strv(routes[i][1]);
	}
	p->credential.source = BH_EGRESS_CREDENTIAL_ENV;
	p->credential.env = strv(TEST_CRED_ENV);
	p->n_headers = 1;
	p->headers = calloc(1, sizeof *p->headers);
	p->headers[0].name = strv("Authorization");
	p->headers[0].template = strv("Bearer {credential}");
	p->budgets = (struct bh_egress_budgets){
		.max_calls = 100,
		.max_request_bytes = 64 * 1024,
		.max_response_bytes = 1 << 20,
		.max_in_flight = 8,
		.upstream_timeout_ms = 5000,
	};
	p->allow_in_sessions = true;

	f->cfg = (struct bh_broker_config){
		.upstream_ca_file = f->ca_pem,
		.lookup = lookup,
		.lookup_arg = f,
		.note = note,
		.note_arg = f,
		.log = logged,
		.log_arg = f,
		.resolve = resolve,
		.workers = 4,
		.client_timeout_ms = 2000,
	};
	snprintf(f->sock, sizeof f->sock, "%s/host-api.sock", f->dir);
}

void fixture_start(struct fixture *f)
{
	static char ca_dir[300];
	snprintf(ca_dir, sizeof ca_dir, "%s/broker-ca", f->dir);
	f->cfg.ca_dir = ca_dir;
	bh_error *err = NULL;
	cr_assert_eq(bh_broker_start(&f->cfg, &f->broker, &err), 0, "broker: %s",
		     err ? err->msg : "?");
	f->ops = bh_broker_ops();
	cr_assert_eq(f->ops->open_session(f->broker, "sess-1", f->sock, &err), 0, "open: %s",
		     err ? err->msg : "?");
}

void fixture_hold(struct fixture *f, uint64_t hold)
{
	bh_error *err = NULL;
	cr_assert_eq(f->ops->hold(f->broker, "sess-1", hold, f->profile.name, &err), 0, "hold: %s",
		     err ? err->msg : "?");
}

void fixture_release(struct fixture *f, uint64_t hold)
{
	f->ops->release(f->broker, "sess-1", hold);
}

void fixture_fini(struct fixture *f)
{
	if (f->broker) {
		f->ops->close_session(f->broker, "sess-1");
		bh_broker_stop(f->broker);
	}
	/* The profile was built of malloc'd parts, as the broker's copies are. */
	struct bh_egress_profile *p = malloc(sizeof *p);
	*p = f->profile;
	profile_free(p);
	upstream_stop(&f->api);
	upstream_stop(&f->other);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(run_cmd(cmd, NULL));
}

/* ---- clients ---- */

int client_connect(struct fixture *f)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(f->sock), sizeof sa.sun_path);
	memcpy(sa.sun_path, f->sock, strlen(f->sock) + 1);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "connect: %s",
		     strerror(errno));
	return fd;
}

/* Reads one answer from a reader: a head, then Content-Length bytes or
 * everything to the close. */
typedef ssize_t (*read_fn)(void *arg, void *buf, size_t n, int timeout_ms);

static char *read_answer(read_fn rd, void *arg, int *status, int timeout_ms, bool head_only)
{
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	out[0] = '\0';
	*status = 0;
	for (;;) {
		if (n + 4096 >= cap)
			out = realloc(out, cap *= 2);
		ssize_t r = rd(arg, out + n, cap - n - 1, timeout_ms);
		if (r <= 0)
			break;
		n += (size_t)r;
		out[n] = '\0';
		char *end = strstr(out, "\r\n\r\n");
		if (!end)
			continue;
		/* skip an interim 100 Continue */
		if (!strncmp(out, "HTTP/1.1 100", 12)) {
			size_t skip = (size_t)(end - out) + 4;
			memmove(out, out + skip, n - skip + 1);
			n -= skip;
			continue;
		}
		if (head_only && !strncmp(out, "HTTP/1.1 200", 12))
			break; /* a CONNECT's answer: the tunnel follows */
		const char *cl = strcasestr(out, "\r\ncontent-length:");
		if (cl && cl < end) {
			size_t want = (size_t)(end - out) + 4 + strtoul(cl + 17, NULL, 10);
			if (n >= want)
				break;
		}
	}
	if (n >= 12 && !strncmp(out, "HTTP/1.", 7))
		*status = atoi(out + 9);
	return out;
}

static ssize_t fd_read(void *arg, void *buf, size_t n, int timeout_ms)
{
	int fd = *(int *)arg;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, timeout_ms) <= 0)
		return -1;
	return read(fd, buf, n);
}

char *client_exchange(int fd, const void *req, size_t len, int *status, int timeout_ms)
{
	const char *p = req;
	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		p += w;
		len -= (size_t)w;
	}
	return read_answer(fd_read, &fd, status, timeout_ms, false);
}

static char *client_exchange_connect(int fd, const char *req, int *status)
{
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		return strdup("");
	return read_answer(fd_read, &fd, status, 10000, true);
}

char *client_request(struct fixture *f, const char *req, int *status)
{
	int fd = client_connect(f);
	char *out = client_exchange(fd, req, strlen(req), status, 10000);
	close(fd);
	return out;
}

static ssize_t ssl_read_fn(void *arg, void *buf, size_t n, int timeout_ms)
{
	return SSL_read(arg, buf, (int)n);
}

char *client_connect_tls(struct fixture *f, const char *target, const char *sni,
			 const char *inner, int *status)
{
	int fd = client_connect(f);
	char req[512];
	snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	char *ans = client_exchange_connect(fd, req, status);
	if (*status != 200) {
		close(fd);
		return ans;
	}
	free(ans);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	char ca[400];
	snprintf(ca, sizeof ca, "%s/broker-ca/ca.pem", f->dir);
	cr_assert_eq(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (sni) {
		SSL_set_tlsext_host_name(ssl, sni);
		SSL_set1_host(ssl, sni);
	} else {
		/* an address: no SNI, checked as an IP name */
		char ip[64];
		snprintf(ip, sizeof ip, "%.*s", (int)strcspn(target, ":"), target);
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip);
	}
	char *out = NULL;
	if (SSL_connect(ssl) != 1) {
		*status = -1;
		ERR_clear_error();
	} else {
		ssl_write_all(ssl, inner, strlen(inner));
		out = read_answer(ssl_read_fn, ssl, status, 10000, false);
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return out;
}

bool fixture_wait_notes(struct fixture *f, int n)
{
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&f->mu);
		int have = f->n_notes;
		pthread_mutex_unlock(&f->mu);
		if (have >= n)
			return true;
		usleep(10000);
	}
	return false;
}

/* ---- egress: the forms an upstream's echo of a header value takes ---- */
void echo_encodings(const char *v, char forms[ECHO_FORMS][ECHO_FORM_MAX])
{
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	size_t n = strlen(v);
	for (int k = 0; k < ECHO_FORMS; k++)
		forms[k][0] = '\0';
	size_t at[ECHO_FORMS] = {0};
	for (size_t i = 0; i < n && 3 * (i + 1) < ECHO_FORM_MAX; i++) {
		unsigned char c = (unsigned char)v[i];
		/* 0, 1: every byte %xx, lower and upper case */
		at[0] += (size_t)sprintf(forms[0] + at[0], "%%%c%c", lo[c >> 4], lo[c & 15]);
		at[1] += (size_t)sprintf(forms[1] + at[1], "%%%c%c", up[c >> 4], up[c & 15]);
		/* 2: some bytes encoded, mixed case, a space as '+' (a form encoder) */
		if (c == ' ')
			at[2] += (size_t)sprintf(forms[2] + at[2], "+");
		else if (i % 2)
			at[2] +=
				(size_t)sprintf(forms[2] + at[2], "%%%c%c", up[c >> 4], lo[c & 15]);
		else
			at[2] += (size_t)sprintf(forms[2] + at[2], "%c", c);
		/* 3, 4: hex, lower and upper case */
		at[3] += (size_t)sprintf(forms[3] + at[3], "%c%c", lo[c >> 4], lo[c & 15]);
		at[4] += (size_t)sprintf(forms[4] + at[4], "%c%c", up[c >> 4], up[c & 15]);
	}
	/* 5: base64 of the credential alone, past "Bearer " */
	const char *cred = strchr(v, ' ');
	cred = cred ? cred + 1 : v;
	EVP_EncodeBlock((unsigned char *)forms[5], (const unsigned char *)cred, (int)strlen(cred));
	/* 6: the same in base64url, unpadded (JWTs, URLs) */
	size_t k = 0;
	for (const char *c = forms[5]; *c && *c != '='; c++)
		forms[6][k++] = *c == '+' ? '-' : *c == '/' ? '_' : *c;
	forms[6][k] = '\0';
}
