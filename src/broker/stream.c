/* Reads and writes under a deadline, plain or TLS, over non-blocking fds:
 * a slow peer costs the worker at most the time left, never more. */
#include "broker_priv.h"

#include <openssl/err.h>
#include <poll.h>
#include <unistd.h>

static int wait_fd(int fd, short events, uint64_t deadline_ms)
{
	for (;;) {
		uint64_t now = now_mono_ms();
		if (now >= deadline_ms)
			return STREAM_TIMEOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, (int)(deadline_ms - now > 1000000 ? 1000000 : deadline_ms - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return STREAM_ERROR;
		if (r > 0)
			return 0;
	}
}

/* What an SSL call's failure asks for: wait for POLLIN/POLLOUT, or give up. */
static int ssl_wait(struct stream *s, int ret, uint64_t deadline_ms)
{
	int e = SSL_get_error(s->ssl, ret);
	if (e == SSL_ERROR_WANT_READ)
		return wait_fd(s->fd, POLLIN, deadline_ms);
	if (e == SSL_ERROR_WANT_WRITE)
		return wait_fd(s->fd, POLLOUT, deadline_ms);
	ERR_clear_error();
	return e == SSL_ERROR_ZERO_RETURN ? 1 : STREAM_ERROR;
}

ssize_t stream_read(struct stream *s, void *buf, size_t n, uint64_t deadline_ms)
{
	for (;;) {
		if (s->ssl) {
			size_t got = 0;
			int r = SSL_read_ex(s->ssl, buf, n, &got);
			if (r > 0)
				return (ssize_t)got;
			int w = ssl_wait(s, r, deadline_ms);
			if (w == 1)
				return STREAM_EOF;
			if (w < 0) {
				/* A peer that closes without close_notify ends the stream. */
				return w == STREAM_TIMEOUT ? STREAM_TIMEOUT : STREAM_EOF;
			}
			continue;
		}
		ssize_t r = read(s->fd, buf, n);
		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno == ECONNRESET ? STREAM_EOF : STREAM_ERROR;
		int w = wait_fd(s->fd, POLLIN, deadline_ms);
		if (w < 0)
			return w;
	}
}

int stream_write(struct stream *s, const void *buf, size_t n, uint64_t deadline_ms)
{
	const uint8_t *p = buf;
	while (n) {
		if (s->ssl) {
			size_t put = 0;
			int r = SSL_write_ex(s->ssl, p, n, &put);
			if (r > 0) {
				p += put;
				n -= put;
				continue;
			}
			int w = ssl_wait(s, r, deadline_ms);
			if (w != 0)
				return w == STREAM_TIMEOUT ? STREAM_TIMEOUT : STREAM_ERROR;
			continue;
		}
		ssize_t r = send(s->fd, p, n, MSG_NOSIGNAL);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN)
			return STREAM_ERROR;
		int w = wait_fd(s->fd, POLLOUT, deadline_ms);
		if (w < 0)
			return w;
	}
	return 0;
}

static int handshake(struct stream *s, bool server, uint64_t deadline_ms)
{
	for (;;) {
		int r = server ? SSL_accept(s->ssl) : SSL_connect(s->ssl);
		if (r == 1)
			return 0;
		int w = ssl_wait(s, r, deadline_ms);
		if (w != 0)
			return w == STREAM_TIMEOUT ? STREAM_TIMEOUT : STREAM_ERROR;
	}
}

int stream_accept(struct stream *s, uint64_t deadline_ms)
{
	return handshake(s, true, deadline_ms);
}

int stream_connect(struct stream *s, uint64_t deadline_ms)
{
	return handshake(s, false, deadline_ms);
}

bool stream_pending(const struct stream *s)
{
	return s->ssl && SSL_pending(s->ssl) > 0;
}
