/* The test's broker: test_broker.h says what it is. */
#include "test_broker.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void tb_log(struct test_broker *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_log(struct test_broker *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&b->mu);
	if (b->n_log < TB_LOG)
		vsnprintf(b->log[b->n_log++], sizeof b->log[0], fmt, ap);
	pthread_mutex_unlock(&b->mu);
	va_end(ap);
}

static struct tb_session *tb_find(struct test_broker *b, const char *fp)
{
	for (int i = 0; i < TB_SESSIONS; i++)
		if (b->s[i].live && !strcmp(b->s[i].fp, fp))
			return &b->s[i];
	return NULL;
}

/* The profile a request is served under ("" none), under the lock. */
static void tb_held(struct tb_session *s, char *out, size_t n)
{
	out[0] = '\0';
	for (int i = 0; i < 8; i++)
		if (s->holds[i]) {
			snprintf(out, n, "%s", s->profile[i]);
			return;
		}
}

static void tb_serve(struct tb_session *s, int c)
{
	char req[8192];
	size_t have = 0;
	struct pollfd p = {.fd = c, .events = POLLIN};
	while (have < sizeof req - 1 && !memmem(req, have, "\r\n\r\n", 4)) {
		if (poll(&p, 1, 10000) <= 0)
			return;
		ssize_t r = read(c, req + have, sizeof req - 1 - have);
		if (r <= 0)
			return;
		have += (size_t)r;
	}
	req[have] = '\0';
	char *eol = strstr(req, "\r\n");
	if (eol)
		*eol = '\0';
	char held[72];
	pthread_mutex_lock(&s->b->mu);
	tb_held(s, held, sizeof held);
	pthread_mutex_unlock(&s->b->mu);
	tb_log(s->b, "request %.12s [%s] %s", s->fp, held, req);
	char body[700], resp[1024];
	int status = *held ? 200 : 503;
	snprintf(body, sizeof body, "%s for %.600s", *held ? "upstream saw" : "no hold", req);
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 status, status == 200 ? "OK" : "Service Unavailable", strlen(body), body);
	if (write(c, resp, (size_t)n) < 0)
		return;
}

static void *tb_thread(void *arg)
{
	struct tb_session *s = arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (p[1].revents)
			return NULL;
		if (!p[0].revents)
			continue;
		int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		tb_serve(s, c);
		close(c);
	}
}

static int tb_open(void *arg, const char *fp, const char *path, bh_error **err)
{
	(void)err;
	struct test_broker *b = arg;
	struct tb_session *s = NULL;
	for (int i = 0; i < TB_SESSIONS && !s; i++)
		if (!b->s[i].live)
			s = &b->s[i];
	cr_assert_not_null(s, "the test broker has room for %d sessions", TB_SESSIONS);
	memset(s, 0, sizeof *s);
	s->b = b;
	snprintf(s->fp, sizeof s->fp, "%s", fp);
	snprintf(s->path, sizeof s->path, "%s", path);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(path), sizeof u.sun_path, "socket path %s fits", path);
	strcpy(u.sun_path, path);
	cr_assert_eq(bind(s->fd, (struct sockaddr *)&u, sizeof u), 0, "bind %s: %s", path, strerror(errno));
	cr_assert_eq(listen(s->fd, 16), 0);
	cr_assert_eq(pipe2(s->stop, O_CLOEXEC), 0);
	s->live = true;
	pthread_create(&s->th, NULL, tb_thread, s);
	tb_log(b, "open %.12s", fp);
	return 0;
}

static int tb_hold(void *arg, const char *fp, uint64_t hold, const char *profile, bh_error **err)
{
	(void)err;
	struct test_broker *b = arg;
	pthread_mutex_lock(&b->mu);
	struct tb_session *s = tb_find(b, fp);
	for (int i = 0; s && i < 8; i++)
		if (!s->holds[i]) {
			s->holds[i] = hold;
			snprintf(s->profile[i], sizeof s->profile[i], "%s", profile);
			break;
		}
	pthread_mutex_unlock(&b->mu);
	cr_assert_not_null(s, "a hold comes after the session's socket is open");
	tb_log(b, "hold %.12s %llu %s", fp, (unsigned long long)hold, profile);
	return 0;
}

static void tb_release(void *arg, const char *fp, uint64_t hold)
{
	struct test_broker *b = arg;
	pthread_mutex_lock(&b->mu);
	struct tb_session *s = tb_find(b, fp);
	for (int i = 0; s && i < 8; i++)
		if (s->holds[i] == hold)
			s->holds[i] = 0;
	pthread_mutex_unlock(&b->mu);
	tb_log(b, "release %.12s %llu", fp, (unsigned long long)hold);
}

static void tb_close(void *arg, const char *fp)
{
	struct test_broker *b = arg;
	struct tb_session *s = tb_find(b, fp);
	if (!s)
		return;
	if (write(s->stop[1], "x", 1) < 0)
		return;
	pthread_join(s->th, NULL);
	close(s->fd);
	close(s->stop[0]);
	close(s->stop[1]);
	unlink(s->path);
	pthread_mutex_lock(&b->mu);
	s->live = false;
	pthread_mutex_unlock(&b->mu);
	tb_log(b, "close %.12s", fp);
}

static const char *tb_ca(void *arg)
{
	return ((struct test_broker *)arg)->ca_path;
}

const struct bh_egress_ops tb_ops = {
	.open_session = tb_open,
	.hold = tb_hold,
	.release = tb_release,
	.close_session = tb_close,
	.ca_cert_path = tb_ca,
};

/* How many log lines start with prefix (and hold needle, when given). */
size_t tb_count(struct test_broker *b, const char *prefix, const char *needle)
{
	size_t n = 0;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n_log; i++)
		n += !strncmp(b->log[i], prefix, strlen(prefix)) && (!needle || strstr(b->log[i], needle));
	pthread_mutex_unlock(&b->mu);
	return n;
}

char *tb_dump(struct test_broker *b)
{
	static char all[TB_LOG * 80];
	size_t off = 0;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n_log && off + 2 < sizeof all; i++)
		off += (size_t)snprintf(all + off, sizeof all - off, "%.150s\n", b->log[i]);
	pthread_mutex_unlock(&b->mu);
	return all;
}


void tb_init(struct test_broker *b, const char *dir)
{
	memset(b, 0, sizeof *b);
	pthread_mutex_init(&b->mu, NULL);
	char d[4096];
	snprintf(d, sizeof d, "%s/egress-ca-XXXXXX", dir);
	cr_assert_not_null(mkdtemp(d));
	snprintf(b->ca_path, sizeof b->ca_path, "%s/ca.pem", d);
	char out[512];
	int rc = harness_sh_into(out, sizeof out,
				 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
				 "-keyout %s/ca.key -out %s -days 1 -subj /CN=bulkhead-test-egress-ca 2>&1",
				 d, b->ca_path);
	cr_assert_eq(rc, 0, "openssl: %s", out);
}

void tb_fini(struct test_broker *b)
{
	for (int i = 0; i < TB_SESSIONS; i++)
		if (b->s[i].live)
			tb_ops.close_session(b, b->s[i].fp);
	harness_sh("rm -rf -- \"$(dirname '%s')\"", b->ca_path);
}

const char *tb_socket_of(struct test_broker *b, const char *fp)
{
	struct tb_session *s = tb_find(b, fp);
	return s ? s->path : "";
}
