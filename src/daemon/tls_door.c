/* The TLS listener's accept (tls_door.h). */
#include "tls_door.h"
#include "base.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TLS_HANDSHAKE 0x16 /* a TLS record's content type: handshake */

struct waiting {
	int fd;
	uint64_t since_ms;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

struct tls_door {
	int listen_fd;
	struct MHD_Daemon *mhd;
	struct waiting w[TLS_DOOR_MAX];
	size_t n;
};

struct tls_door *tls_door_new(int listen_fd, struct MHD_Daemon *mhd)
{
	struct tls_door *t = calloc(1, sizeof *t);
	if (!t)
		abort();
	t->listen_fd = listen_fd;
	t->mhd = mhd;
	return t;
}

void tls_door_free(struct tls_door *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		close(t->w[i].fd);
	free(t);
}

size_t tls_door_pollfds(const struct tls_door *t, struct pollfd *p, size_t max)
{
	size_t n = 0;
	if (n < max)
		p[n++] = (struct pollfd){.fd = t->listen_fd, .events = POLLIN};
	for (size_t i = 0; i < t->n && n < max; i++)
		p[n++] = (struct pollfd){.fd = t->w[i].fd, .events = POLLIN};
	return n;
}

static void hand_over(struct tls_door *t, struct waiting *w)
{
	/* libmicrohttpd closes the socket itself when it refuses it. */
	MHD_add_connection(t->mhd, w->fd, (const struct sockaddr *)&w->addr, w->addr_len);
}

/* The request id of the request already here, to echo it (a client that
 * gets its own id back believes the refusal's mark: nothing ran). "" when
 * none came in what was read so far. */
static void peeked_request_id(int fd, char out[65])
{
	out[0] = '\0';
	char head[8192];
	ssize_t n = recv(fd, head, sizeof head - 1, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return;
	head[n] = '\0';
	static const char name[] = "\r\nplimsoll-request-id:";
	char *at = strcasestr(head, name);
	if (!at)
		return;
	at += strlen(name);
	while (*at == ' ' || *at == '\t')
		at++;
	size_t len = strspn(at, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-");
	if (len == 0 || len > 64 || (at[len] != '\r' && at[len] != ' ' && at[len] != '\t'))
		return;
	memcpy(out, at, len);
	out[len] = '\0';
}

/* One write, best effort: the socket is new, its buffer empty. */
static void answer_cleartext(int fd)
{
	char rid[65], echo[96] = "";
	peeked_request_id(fd, rid);
	if (rid[0])
		snprintf(echo, sizeof echo, "Plimsoll-Request-Id: %s\r\n", rid);
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	char host[INET6_ADDRSTRLEN + 2] = "HOST";
	int port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			char a6[INET6_ADDRSTRLEN];
			inet_ntop(AF_INET6, &a->sin6_addr, a6, sizeof a6);
			snprintf(host, sizeof host, "[%s]", a6);
			port = ntohs(a->sin6_port);
		}
	}
	char body[256], msg[512];
	int bn = snprintf(body, sizeof body,
			  "{\"code\":\"invalid_argument\",\"message\":\"this port speaks TLS: call "
			  "https://%s:%d/ (a plain HTTP request is refused unread)\"}\n",
			  host, port);
	int mn = snprintf(msg, sizeof msg,
			  "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
			  "Plimsoll-Not-Dispatched: request\r\n%sConnection: close\r\n"
			  "Content-Length: %d\r\n\r\n%s",
			  echo, bn, body);
	if (send(fd, msg, (size_t)mn, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* gone already: nothing to tell */
	}
	/* Read what it sent, so the close is a FIN and not a reset that could
	 * discard the answer before the client reads it. */
	char sink[4096];
	while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
		;
	shutdown(fd, SHUT_WR);
}

void tls_door_process(struct tls_door *t)
{
	uint64_t now = now_mono_ms();
	for (size_t i = 0; i < t->n;) {
		struct waiting *w = &t->w[i];
		unsigned char first;
		ssize_t r = recv(w->fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
		bool wait = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) &&
			    now - w->since_ms < TLS_DOOR_WAIT_MS;
		if (wait) {
			i++;
			continue;
		}
		if (r == 1 && first == TLS_HANDSHAKE) {
			hand_over(t, w);
		} else {
			if (r == 1)
				answer_cleartext(w->fd);
			close(w->fd);
		}
		t->w[i] = t->w[--t->n];
	}
	for (;;) {
		struct waiting w = {.addr_len = sizeof w.addr};
		w.fd = accept4(t->listen_fd, (struct sockaddr *)&w.addr, &w.addr_len,
			       SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (w.fd < 0)
			break;
		w.since_ms = now;
		/* Full: libmicrohttpd takes it as it comes (its limits apply). */
		if (t->n == TLS_DOOR_MAX)
			hand_over(t, &w);
		else
			t->w[t->n++] = w;
	}
}
