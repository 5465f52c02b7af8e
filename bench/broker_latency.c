/* bulkhead-bench-broker: the broker's added latency per request. A TLS
 * upstream on 127.0.0.2 (its certificate from a test CA the openssl CLI
 * makes), the broker in this process with one profile for it, and for each
 * of N rounds, back to back: a direct request (TCP, TLS verified, GET, the
 * whole answer), the same GET through the broker's unix socket in absolute
 * form (the broker makes the TLS connection), and the same through CONNECT
 * (TLS to the broker's leaf, then the broker's own TLS upstream). Every
 * request is a new connection on each hop. Figures are the medians of the
 * pair-by-pair differences (brokered - direct), so drift cancels.
 *   bulkhead-bench-broker [--rounds N] [--dir DIR]        (N: 200) */
#include "broker.h"
#include "stats.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char ANSWER[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

static void die(const char *what)
{
	fprintf(stderr, "bulkhead-bench-broker: %s\n", what);
	exit(1);
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0)
		die(cmd);
}

/* ---- the upstream: answers every request with "ok" ---- */

struct up {
	SSL_CTX *ctx;
	int fd;
};

static void *serve_one(void *arg)
{
	SSL *ssl = arg;
	char buf[8192];
	size_t n = 0;
	if (SSL_accept(ssl) == 1) {
		while (n < sizeof buf - 1) {
			int r = SSL_read(ssl, buf + n, (int)(sizeof buf - 1 - n));
			if (r <= 0)
				break;
			n += (size_t)r;
			buf[n] = '\0';
			if (strstr(buf, "\r\n\r\n")) {
				SSL_write(ssl, ANSWER, sizeof ANSWER - 1);
				SSL_shutdown(ssl);
				break;
			}
		}
	}
	close(SSL_get_fd(ssl));
	SSL_free(ssl);
	return NULL;
}

static void *upstream_main(void *arg)
{
	struct up *u = arg;
	for (;;) {
		int fd = accept4(u->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		SSL *ssl = SSL_new(u->ctx);
		SSL_set_fd(ssl, fd);
		pthread_t t;
		pthread_create(&t, NULL, serve_one, ssl);
		pthread_detach(t);
	}
	return NULL;
}

/* ---- the broker's side ---- */

static struct bh_egress_profile profile;

static const struct bh_egress_profile *lookup(void *arg, const char *name, void **keep)
{
	return !strcmp(name, profile.name) ? &profile : NULL;
}

static int resolve(void *arg, const char *host, uint16_t port, struct sockaddr_storage *out, int max)
{
	if (strcmp(host, "api.test"))
		return -1;
	struct sockaddr_in *sa = (struct sockaddr_in *)out;
	memset(out, 0, sizeof *out);
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	inet_pton(AF_INET, "127.0.0.2", &sa->sin_addr);
	return 1;
}

/* ---- the clients ---- */

static bool read_answer_ssl(SSL *ssl)
{
	char buf[4096];
	size_t n = 0;
	while (n < sizeof buf - 1) {
		int r = SSL_read(ssl, buf + n, (int)(sizeof buf - 1 - n));
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (end && strstr(buf, "\r\n\r\nok"))
			return !strncmp(buf, "HTTP/1.1 200", 12);
	}
	return false;
}

/* TLS for api.test over fd, the request, its whole answer; closes fd. */
static void tls_request(SSL_CTX *ctx, int fd, const char *req, const char *what)
{
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, "api.test");
	SSL_set1_host(ssl, "api.test");
	if (SSL_connect(ssl) != 1)
		die("a TLS handshake failed");
	SSL_write(ssl, req, (int)strlen(req));
	if (!read_answer_ssl(ssl))
		die(what);
	SSL_free(ssl);
	close(fd);
}

static double direct(SSL_CTX *ctx, uint16_t port, const char *req)
{
	double t0 = now_us();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect to the upstream");
	tls_request(ctx, fd, req, "the direct request failed");
	return now_us() - t0;
}

static int unix_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	/* Cut to fit, the path would name another socket. */
	size_t len = strlen(path);
	if (len >= sizeof sa.sun_path)
		die("the broker's socket path is longer than a unix socket's");
	memcpy(sa.sun_path, path, len + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect to the broker");
	return fd;
}

static double brokered(const char *sock, uint16_t port)
{
	char req[256];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/ping HTTP/1.1\r\nConnection: close\r\n\r\n",
		 port);
	double t0 = now_us();
	int fd = unix_connect(sock);
	if (write(fd, req, strlen(req)) < 0)
		die("write to the broker");
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) {
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\nok"))
			break;
	}
	buf[n] = '\0';
	if (strncmp(buf, "HTTP/1.1 200", 12))
		die("the brokered request failed");
	close(fd);
	return now_us() - t0;
}

static double tunneled(SSL_CTX *broker_ctx, const char *sock, uint16_t port, const char *req)
{
	char con[256];
	snprintf(con, sizeof con, "CONNECT api.test:%u HTTP/1.1\r\nHost: api.test:%u\r\n\r\n", port, port);
	double t0 = now_us();
	int fd = unix_connect(sock);
	if (write(fd, con, strlen(con)) < 0)
		die("write to the broker");
	char buf[256];
	size_t n = 0;
	ssize_t r;
	/* byte by byte up to the blank line: the TLS that follows is not ours to read */
	while (n < sizeof buf - 1 && (r = read(fd, buf + n, 1)) > 0) {
		n++;
		buf[n] = '\0';
		if (n >= 4 && !memcmp(buf + n - 4, "\r\n\r\n", 4))
			break;
	}
	if (strncmp(buf, "HTTP/1.1 200", 12))
		die("CONNECT was refused");
	tls_request(broker_ctx, fd, req, "the tunneled request failed");
	return now_us() - t0;
}

static void print(const char *what, const struct samples *s)
{
	struct summary m = summarize(s);
	printf("  %-34s median %7.0f us  p95 %7.0f us  (n=%zu)\n", what, m.median, m.p95, m.n);
}

int main(int argc, char **argv)
{
	int rounds = 200;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else
			die("usage: bulkhead-bench-broker [--rounds N] [--dir DIR]");
	}
	signal(SIGPIPE, SIG_IGN);
	char tmp[] = "/tmp/bulkhead-bench-broker.XXXXXX";
	if (!dir && !(dir = mkdtemp(tmp)))
		die("mkdtemp");
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "(cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		 "-keyout ca.key -out ca.pem -days 1 -subj '/CN=bench CA' "
		 "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key "
		 "-out up.csr -subj '/CN=api.test' && printf 'subjectAltName=DNS:api.test\\n' > up.ext && "
		 "openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
		 "-extfile up.ext -out up.pem) >/dev/null 2>&1",
		 dir);
	sh(cmd);

	char path[600];
	struct up u = {.ctx = SSL_CTX_new(TLS_server_method())};
	snprintf(path, sizeof path, "%s/up.pem", dir);
	SSL_CTX_use_certificate_file(u.ctx, path, SSL_FILETYPE_PEM);
	snprintf(path, sizeof path, "%s/up.key", dir);
	if (SSL_CTX_use_PrivateKey_file(u.ctx, path, SSL_FILETYPE_PEM) != 1)
		die("the upstream's key");
	u.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
	socklen_t sl = sizeof sa;
	if (bind(u.fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(u.fd, 128) < 0 ||
	    getsockname(u.fd, (struct sockaddr *)&sa, &sl) < 0)
		die("the upstream's socket");
	uint16_t port = ntohs(sa.sin_port);
	pthread_t ut;
	pthread_create(&ut, NULL, upstream_main, &u);

	char origin[64];
	snprintf(origin, sizeof origin, "https://api.test:%u", port);
	char *origins[] = {origin, NULL};
	struct bh_egress_route route = {.method = "GET", .pattern = "/v1/ping"};
	struct bh_egress_header header = {.name = "Authorization", .template = "Bearer {credential}"};
	setenv("BH_BENCH_CREDENTIAL", "bench-credential-0123456789", 1);
	profile = (struct bh_egress_profile){
		.name = "bench",
		.description = "",
		.origins = origins,
		.n_origins = 1,
		.routes = &route,
		.n_routes = 1,
		.credential = {.source = BH_EGRESS_CREDENTIAL_ENV, .env = "BH_BENCH_CREDENTIAL"},
		.headers = &header,
		.n_headers = 1,
		.budgets = {.max_calls = 100000},
		.allow_in_sessions = true,
	};
	char ca_dir[600], ca_pem[600], sock[600];
	snprintf(ca_dir, sizeof ca_dir, "%s/broker-ca", dir);
	snprintf(ca_pem, sizeof ca_pem, "%s/ca.pem", dir);
	snprintf(sock, sizeof sock, "%s/host-api.sock", dir);
	struct bh_broker_config cfg = {
		.ca_dir = ca_dir, .upstream_ca_file = ca_pem, .lookup = lookup, .resolve = resolve,
	};
	bh_broker *b = NULL;
	bh_error *err = NULL;
	const struct bh_egress_ops *ops = bh_broker_ops();
	if (bh_broker_start(&cfg, &b, &err) < 0 || ops->open_session(b, "bench", sock, &err) < 0 ||
	    ops->hold(b, "bench", 1, "bench", &err) < 0)
		die(err ? err->msg : "the broker did not start");

	SSL_CTX *up_ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_load_verify_locations(up_ctx, ca_pem, NULL);
	SSL_CTX_set_verify(up_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX *br_ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_load_verify_locations(br_ctx, ops->ca_cert_path(b), NULL);
	SSL_CTX_set_verify(br_ctx, SSL_VERIFY_PEER, NULL);
	char req[256];
	snprintf(req, sizeof req, "GET /v1/ping HTTP/1.1\r\nHost: api.test:%u\r\nConnection: close\r\n\r\n",
		 port);

	struct samples d = {0}, ab = {0}, tn = {0}, add_ab = {0}, add_tn = {0};
	for (int i = 0; i < rounds + 10; i++) {
		double x = direct(up_ctx, port, req);
		double y = brokered(sock, port);
		double z = tunneled(br_ctx, sock, port, req);
		if (i < 10)
			continue; /* warm-up: the leaf certificate, the caches */
		samples_add(&d, x);
		samples_add(&ab, y);
		samples_add(&tn, z);
		samples_add(&add_ab, y - x);
		samples_add(&add_tn, z - x);
	}
	printf("broker latency, %d rounds (each request a new connection on every hop)\n", rounds);
	print("direct (TCP + TLS + GET)", &d);
	print("brokered, absolute-form", &ab);
	print("brokered, CONNECT + TLS", &tn);
	print("added, absolute-form (pairwise)", &add_ab);
	print("added, CONNECT (pairwise)", &add_tn);
	ops->close_session(b, "bench");
	bh_broker_stop(b);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (dir == tmp)
		sh(cmd);
	return 0;
}
