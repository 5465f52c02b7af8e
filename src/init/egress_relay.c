/* The loopback relay (issue 18): in a sandbox whose engine mounted the
 * broker's socket at /run/host-api.sock, the init listens on
 * 127.0.0.1:3128 - the sandbox's own loopback, its only interface - and
 * carries each connection's bytes to and from a connection of its own to
 * that socket, so ordinary HTTP clients (HTTP_PROXY) reach the broker.
 *
 * It is a byte pump and nothing more: it parses nothing, holds no
 * credential and adds no route; what the broker allows is the broker's.
 * It runs inside PID 1's own loop (no process of its own, so the sweep
 * after a call cannot kill it and user code cannot signal or trace it);
 * every descriptor is non-blocking and close-on-exec, a connection's
 * buffers are bounded, and connections past BH_PROTO_EGRESS_RELAY_MAX
 * wait in the listen backlog. */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "egress_relay.h"
#include "init_priv.h"

#define RELAY_BUF (16u * 1024u)

struct relay_half {
	uint8_t buf[RELAY_BUF];
	size_t len, off;
	bool eof;  /* the reading side said end-of-file */
	bool shut; /* the writing side was told (shutdown SHUT_WR) */
};

struct relay_conn {
	int in;  /* accepted, from a process of the sandbox */
	int out; /* ours, to the broker's socket */
	struct relay_half up;   /* in -> out */
	struct relay_half down; /* out -> in */
};

static int listen_fd = -1;
static struct relay_conn *conns[BH_PROTO_EGRESS_RELAY_MAX];

static void conn_close(int i)
{
	struct relay_conn *c = conns[i];

	if (!c)
		return;
	close(c->in);
	close(c->out);
	free(c);
	conns[i] = NULL;
}

int egress_relay_open(void)
{
	struct stat st;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(BH_PROTO_EGRESS_RELAY_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd;

	/* No egress mount: this sandbox may use no profile, and gets no
	 * listener either. The CA bundle says there is one (the engine
	 * writes it with the mount); the socket itself may come later (a
	 * pooled sandbox's, when a session takes it), and each connection
	 * looks for it afresh. */
	if (lstat(BH_PROTO_EGRESS_CA_FILE, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	listen_fd = fd;
	return 1;
}

static int free_slot(void)
{
	for (int i = 0; i < BH_PROTO_EGRESS_RELAY_MAX; i++)
		if (!conns[i])
			return i;
	return -1;
}

static void accept_all(void)
{
	for (;;) {
		struct sockaddr_un u = { .sun_family = AF_UNIX };
		struct relay_conn *c;
		int slot = free_slot(), in, out;

		if (slot < 0)
			return; /* the rest wait in the backlog */
		in = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (in < 0)
			return;
		/* Connected now: a unix socket connects at once or not at all
		 * (EAGAIN: the broker's backlog is full; ENOENT: the session's
		 * socket is closed). The client sees its connection end. */
		out = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		memcpy(u.sun_path, BH_PROTO_EGRESS_SOCKET, sizeof(BH_PROTO_EGRESS_SOCKET));
		if (out < 0 || connect(out, (struct sockaddr *)&u, sizeof(u)) < 0) {
			if (out >= 0)
				close(out);
			close(in);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(in);
			close(out);
			return;
		}
		c->in = in;
		c->out = out;
		conns[slot] = c;
	}
}

/* Moves what can move from `from` through h to `to`; -1 when the
 * connection broke. */
static int pump(int from, int to, struct relay_half *h)
{
	if (!h->eof && h->len < RELAY_BUF) {
		ssize_t n = recv(from, h->buf + h->len, RELAY_BUF - h->len, 0);

		if (n > 0)
			h->len += (size_t)n;
		else if (n == 0)
			h->eof = true;
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	while (h->off < h->len) {
		ssize_t n = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return -1;
		h->off += (size_t)n;
	}
	if (h->off == h->len)
		h->off = h->len = 0;
	if (h->eof && !h->len && !h->shut) {
		shutdown(to, SHUT_WR);
		h->shut = true;
	}
	return 0;
}

void egress_relay_pollfds(struct pollset *ps)
{
	if (listen_fd < 0)
		return;
	if (free_slot() >= 0)
		ps_add(ps, listen_fd, POLLIN, T_RELAY, NULL);
	for (int i = 0; i < BH_PROTO_EGRESS_RELAY_MAX; i++) {
		struct relay_conn *c = conns[i];
		short in_ev = 0, out_ev = 0;

		if (!c)
			continue;
		if (!c->up.eof && c->up.len < RELAY_BUF)
			in_ev |= POLLIN;
		if (c->down.len)
			in_ev |= POLLOUT;
		if (!c->down.eof && c->down.len < RELAY_BUF)
			out_ev |= POLLIN;
		if (c->up.len)
			out_ev |= POLLOUT;
		ps_add(ps, c->in, in_ev, T_RELAY, c);
		ps_add(ps, c->out, out_ev, T_RELAY, c);
	}
}

void egress_relay_ready(void *obj)
{
	if (!obj) {
		accept_all();
		return;
	}
	for (int i = 0; i < BH_PROTO_EGRESS_RELAY_MAX; i++) {
		struct relay_conn *c = conns[i];

		if (c != obj)
			continue;
		if (pump(c->in, c->out, &c->up) < 0 || pump(c->out, c->in, &c->down) < 0 ||
		    (c->up.shut && c->down.shut))
			conn_close(i);
		return;
	}
}
