#include "worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_TIMEOUT_MS (300 * 1000)
#define CALL_TIMEOUT_MS (600 * 1000)
#define QUIT_TIMEOUT_MS (120 * 1000)

void reply_send(int fd, const struct worker_reply *r)
{
	ssize_t n;
	do
		n = send(fd, r, sizeof *r, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
}

void reply_fail(int fd, const char *fmt, ...)
{
	struct worker_reply r = {0};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.msg, sizeof r.msg, fmt, ap);
	va_end(ap);
	reply_send(fd, &r);
}

static int recv_reply(struct worker *w, struct worker_reply *r, int timeout_ms)
{
	struct pollfd p = {.fd = w->fd, .events = POLLIN};
	int n;
	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		snprintf(r->msg, sizeof r->msg, "%s: no answer within %d s", w->cfg.name,
			 timeout_ms / 1000);
		return -1;
	}
	ssize_t got;
	do
		got = recv(w->fd, r, sizeof *r, 0);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)sizeof *r) {
		snprintf(r->msg, sizeof r->msg, "%s: the worker went away", w->cfg.name);
		w->up = false;
		return -1;
	}
	return r->ok ? 0 : -1;
}

int worker_start(struct worker *w, const struct worker_cfg *cfg, char *why, size_t whylen)
{
	memset(w, 0, sizeof *w);
	w->cfg = *cfg;
	w->fd = -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, whylen, "socketpair: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* Only our own end of the channel: a sibling's end held here
		 * would keep that sibling from seeing the parent go. */
		close(sv[0]);
		for (int fd = 3; fd < 1024; fd++)
			if (fd != sv[1])
				close(fd);
		int rc = cfg->kind == WK_ENGINE ? engine_worker_main(&w->cfg, sv[1])
						: daemon_worker_main(&w->cfg, sv[1]);
		_exit(rc);
	}
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	w->up = true;
	struct worker_reply r = {0};
	if (recv_reply(w, &r, START_TIMEOUT_MS) < 0) {
		snprintf(why, whylen, "%s", r.msg);
		worker_stop(w);
		return -1;
	}
	return 0;
}

int worker_call(struct worker *w, const struct worker_cmd *c, struct worker_reply *r)
{
	memset(r, 0, sizeof *r);
	if (!w->up) {
		snprintf(r->msg, sizeof r->msg, "%s: not running", w->cfg.name);
		return -1;
	}
	if (send(w->fd, c, sizeof *c, MSG_NOSIGNAL) != (ssize_t)sizeof *c) {
		snprintf(r->msg, sizeof r->msg, "%s: send: %s", w->cfg.name, strerror(errno));
		w->up = false;
		return -1;
	}
	return recv_reply(w, r, CALL_TIMEOUT_MS);
}

void worker_stop(struct worker *w)
{
	if (w->pid <= 0)
		return;
	if (w->up) {
		struct worker_cmd c = {.op = OP_QUIT};
		struct worker_reply r;
		if (send(w->fd, &c, sizeof c, MSG_NOSIGNAL) == (ssize_t)sizeof c)
			recv_reply(w, &r, QUIT_TIMEOUT_MS);
	}
	if (w->fd >= 0)
		close(w->fd); /* EOF: a worker still reading takes it as QUIT */
	w->fd = -1;
	w->up = false;
	int st;
	for (int i = 0; i < QUIT_TIMEOUT_MS / 50; i++) {
		if (waitpid(w->pid, &st, WNOHANG) == w->pid) {
			w->pid = 0;
			return;
		}
		usleep(50 * 1000);
	}
	fprintf(stderr, "bulkhead-bench: %s did not exit; killing it (run `bulkhead gc` on %s)\n",
		w->cfg.name, w->cfg.state_dir);
	kill(w->pid, SIGKILL);
	waitpid(w->pid, &st, 0);
	w->pid = 0;
}
