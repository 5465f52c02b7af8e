/* Forked helpers: the init's own code, run as the sandbox user so the
 * kernel applies that user's permissions to every file operation (files
 * of a CELL, LIST, READ). The init never waits for one: the answer comes
 * back through a pipe, read from the poll loop, bounded in size and time. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init_priv.h"
#include "base.h"

/* No answer is larger than one frame. */
#define HELPER_ANSWER_MAX ((size_t)BH_CHAN_MAX_FRAME)

int helper_start(struct helper *h, enum helper_kind kind, uint64_t call_id,
		 helper_body body, const void *arg)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(p[0]);
		close(p[1]);
		return -err;
	}
	if (pid == 0) {
		/* A fork that never execs: close-on-exec protects nothing, so
		 * the channel and every pipe of the init are closed by hand,
		 * first (gVisor lets user code open /proc/<pid>/fd of any
		 * process in the sandbox). Signals stay blocked (inherited):
		 * only SIGKILL and SIGSTOP reach it, and the timeout deals with
		 * a stopped helper. */
		close_fds_except(&p[1], 1);
		if (setsid() < 0 || drop_to_sandbox_user() < 0)
			_exit(126);
		body(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	set_nonblock(p[0]);
	*h = (struct helper){
		.kind = kind,
		.call_id = call_id,
		.pid = pid,
		.fd = p[0],
		.deadline = now_mono_ns() + HELPER_TIMEOUT_MS * 1000000ull,
	};
	return 0;
}

void helper_read(struct helper *h)
{
	for (int i = 0; i < READS_PER_WAKE && h->fd >= 0; i++) {
		ssize_t n;

		if (h->len == h->alloc) {
			size_t want = h->alloc ? h->alloc * 2 : IO_CHUNK;
			uint8_t *p;

			if (want > HELPER_ANSWER_MAX + 1)
				want = HELPER_ANSWER_MAX + 1;
			if (h->len >= want || !(p = realloc(h->buf, want))) {
				h->overflow = true;
				bh_close_now(&h->fd);
				return;
			}
			h->buf = p;
			h->alloc = want;
		}
		n = read(h->fd, h->buf + h->len, h->alloc - h->len);
		if (n > 0) {
			h->len += (size_t)n;
			if (h->len > HELPER_ANSWER_MAX) {
				h->overflow = true;
				bh_close_now(&h->fd);
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		bh_close_now(&h->fd); /* EOF: the answer is complete */
	}
}

bool helper_done(const struct helper *h)
{
	return h->kind != HK_NONE && h->fd < 0;
}

bool helper_expired(const struct helper *h, uint64_t now)
{
	return h->kind != HK_NONE && h->fd >= 0 && now >= h->deadline;
}

void helper_release(struct helper *h)
{
	/* Until it is reaped its pid cannot be reused, so the kill cannot
	 * hit anybody else. */
	if (h->kind != HK_NONE && !h->reaped)
		kill(h->pid, SIGKILL);
	bh_close_now(&h->fd);
	free(h->buf);
	*h = (struct helper){ .fd = -1 };
}

bool helper_reaped(struct helper *h, pid_t pid)
{
	if (h->kind == HK_NONE || h->reaped || h->pid != pid)
		return false;
	h->reaped = true;
	return true;
}

void helper_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(125);
		b += w;
		n -= (size_t)w;
	}
}
