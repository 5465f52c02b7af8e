/* bulkhead-init, init mode: PID 1 of a sandbox.
 *
 * Everything here assumes the process is the init of its own pid namespace:
 * the sweep (sweep.c) then reaches every other process in the sandbox and
 * nothing outside it. That is why bh_init_main() refuses to run when
 * getpid() != 1.
 *
 * Requests (channel.h): EXEC (exec.c) and CELL (cell.c) are calls,
 * one at a time; WARM starts interpreters (interp.c); LIST and READ run in
 * forked helpers (fsread.c), as PS does (procs.c), and may overlap a call. The init itself never
 * blocks for long: every descriptor it reads or writes after start-up is
 * non-blocking and driven from the poll loop below.
 *
 * The interpreters are cell servers (data/interp/python/cell.py,
 * data/interp/javascript/cell.js) speaking JSON lines on their fds 3 and 4
 * (cell.c has the details):
 *   fd 3, init -> server:  {"nonce":"<32 hex>","code":"<source>"}\n
 *   fd 4, server -> init:  {"nonce":"<same>","status":"ok"|"error"}\n
 * one reply per request, sent after the server flushed stdout and stderr
 * (fds 1 and 2, pipes the init keeps reading); any other line on fd 4 ends
 * that interpreter. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_priv.h"
#include "base.h"

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

/* The channel lives far from 0-2, where programs and libraries look by
 * habit, and close-on-exec, so no program ever inherits it. */
#define FD_FLOOR 100
/* Without a signalfd, children are found by polling waitpid this often. */
#define NOSIGFD_TICK_MS 20
/* On the way out: how long to try delivering queued replies and reaping. */
#define EXIT_GRACE_MS 1000
/* One full DONE may legitimately be queued; more than that means the
 * engine keeps sending without reading, so stop reading requests. */
#define OUTQ_BACKPRESSURE ((size_t)BH_CHAN_MAX_FRAME + (1u << 20))

/* ---- hardening ------------------------------------------------------- */

static int close_fds_by_proc(void)
{
	bool closed_any;

	/* Collect-then-close, repeated until a pass finds nothing, so the
	 * result does not depend on how the directory behaves while its
	 * entries disappear (gVisor's procfs is not Linux's). */
	do {
		cleanup_dir DIR *d = opendir("/proc/self/fd");
		int fds[256];
		size_t n = 0;
		struct dirent *e;

		if (!d)
			return -errno;
		while (n < ARRAY_SIZE(fds) && (e = readdir(d))) {
			char *end;
			long fd = strtol(e->d_name, &end, 10);

			if (*end || end == e->d_name || fd <= 2 || fd == dirfd(d))
				continue;
			fds[n++] = (int)fd;
		}
		closed_any = n > 0;
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
	} while (closed_any);
	return 0;
}

static void close_fds_by_rlimit(void)
{
	struct rlimit rl;
	rlim_t max = 1u << 20;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < max)
		max = rl.rlim_cur;
	for (rlim_t fd = 3; fd < max; fd++)
		close((int)fd);
}

/* Older runtimes leak their own descriptors into the container; none of
 * them may survive into user code. close_range() is missing on older
 * kernels and in gVisor, hence the fallbacks. */
static void close_stray_fds(void)
{
	if (syscall(__NR_close_range, 3u, ~0u, 0u) == 0)
		return;
	/* Both fallbacks: /proc/self/fd may be masked (the bundle hides
	 * /proc/1/fd from user code), and then lists nothing. */
	close_fds_by_proc();
	close_fds_by_rlimit();
}

/* 0, 1 and 2 are where user code (and the runtime's habits) look; give
 * them /dev/null so nothing that inherits them can reach the channel. */
static int stdio_to_null(void)
{
	/* Not O_CLOEXEC: if 2 was closed this very descriptor becomes 2, and
	 * dup2() onto itself would not clear the flag. */
	cleanup_close int null = open("/dev/null", O_RDWR);

	if (null < 0)
		return -errno;
	for (int fd = 0; fd <= 2; fd++)
		if (dup2(null, fd) < 0)
			return -errno;
	if (null <= 2)
		null = -1; /* it is one of 0-2 now; keep it */
	return 0;
}

static int harden(struct init *st)
{
	int ret;

	close_stray_fds();
	/* Not dumpable: /proc/1/{fd,mem,environ} become unreadable and the
	 * init unptraceable for user code running under the same uid. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		ret = -errno;
		diag("prctl(PR_SET_DUMPABLE): %s", strerror(-ret));
		return ret;
	}
	st->req_fd = fcntl(0, F_DUPFD_CLOEXEC, FD_FLOOR);
	st->rep_fd = fcntl(1, F_DUPFD_CLOEXEC, FD_FLOOR);
	if (st->req_fd < 0 || st->rep_fd < 0) {
		diag("moving the channel: %s", strerror(errno));
		return -EBADF;
	}
	/* A missing fd 2 only costs us diagnostics. */
	diag_fd = fcntl(2, F_DUPFD_CLOEXEC, FD_FLOOR);
	ret = stdio_to_null();
	if (ret < 0) {
		diag("/dev/null: %s", strerror(-ret));
		return ret;
	}
	if ((ret = set_nonblock(st->req_fd)) < 0 ||
	    (ret = set_nonblock(st->rep_fd)) < 0) {
		diag("O_NONBLOCK: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/* Every signal a sender could aim at the init stays blocked. Linux already
 * drops signals that other members of the pid namespace send to an init
 * without handlers, but gVisor does not: there an unblocked SIGTERM (or a
 * kill()ed SIGSEGV) from user code would end the sandbox. Blocked signals
 * merely queue, and a genuine fault is forced through regardless of the
 * mask. SIGPIPE is ignored instead, so EPIPE does not leave it pending.
 * SIGKILL and SIGSTOP cannot be blocked at all. */
static void blocked_set(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, SIGPIPE);
}

/* Child exits arrive through a signalfd: no handler ever runs in the
 * init, so there is nothing for user code to trigger with kill(1, ...). */
static int setup_signals(struct init *st)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;

	/* A dead engine (or interpreter) must surface as EPIPE, not kill
	 * the init. */
	if (sigaction(SIGPIPE, &ign, NULL) < 0)
		return -errno;
	/* An inherited SIG_IGN for SIGCHLD would auto-reap the program and
	 * lose its exit status. */
	if (sigaction(SIGCHLD, &dfl, NULL) < 0)
		return -errno;
	blocked_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	st->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (st->sig_fd < 0)
		diag("signalfd: %s; polling for children instead",
		     strerror(errno));
	return 0;
}

static void drain_signalfd(int fd)
{
	struct signalfd_siginfo si[8];

	while (read(fd, si, sizeof(si)) > 0)
		;
}

/* ---- children ---------------------------------------------------------- */

/* PID 1 inherits every orphan in the namespace, so reaping is not limited
 * to the processes we started. __WALL also collects children that chose
 * an unusual exit signal. */
void reap(struct init *st)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);

		if (pid > 0) {
			if (exec_reaped(st, pid, status) || interp_reaped(st, pid, status) ||
			    helper_reaped(&st->cell.writer, pid))
				continue;
			for (int i = 0; i < MAX_FSOPS; i++)
				if (helper_reaped(&st->fsops[i], pid))
					break;
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		st->children = pid == 0;
		return;
	}
}

/* ---- shutdown ---------------------------------------------------------- */

/* Best effort within a time budget: the engine may be gone or stuck. */
static void flush_before_exit(struct init *st, uint64_t until)
{
	while (!st->rep_broken && bh_outq_pending(&st->out) > 0) {
		struct pollfd p = { .fd = st->rep_fd, .events = POLLOUT };
		uint64_t now = now_mono_ns();

		if (now >= until || poll(&p, 1, ms_until(now, until)) <= 0)
			return;
		if (bh_outq_flush(&st->out, st->rep_fd) < 0)
			return;
	}
}

static void reap_before_exit(struct init *st, uint64_t until)
{
	for (;;) {
		struct pollfd p = { .fd = st->sig_fd, .events = POLLIN };
		uint64_t now = now_mono_ns();

		sweep_everyone();
		reap(st);
		if (!st->children || now >= until)
			return;
		/* With sig_fd < 0 poll() ignores the entry: a plain sleep. */
		if (poll(&p, 1, min_timeout(ms_until(now, until), SWEEP_TICK_MS)) > 0)
			drain_signalfd(st->sig_fd);
	}
}

/* Interpreters and helpers included: nothing outlives the channel. */
__attribute__((noreturn)) static void shutdown_exit(struct init *st, int code)
{
	uint64_t until = now_mono_ns() + EXIT_GRACE_MS * 1000000ull;

	sweep_everyone();
	flush_before_exit(st, until);
	reap_before_exit(st, until);
	exit(code);
}

__attribute__((noreturn)) static void protocol_error(struct init *st,
						    const char *why)
{
	diag("protocol error: %s", why);
	queue_fail(st, 0, EPROTO, "malformed frame: %s", why);
	shutdown_exit(st, 2);
}

/* ---- requests ---------------------------------------------------------- */

static void handle_frame(struct init *st, uint8_t type, uint8_t **payload,
			 size_t len)
{
	int ret;

	switch (type) {
	case BH_CHAN_EXEC:
		ret = handle_exec(st, payload, len);
		break;
	case BH_CHAN_CELL:
		ret = handle_cell(st, payload, len);
		break;
	case BH_CHAN_WARM:
		ret = handle_warm(st, *payload, len);
		break;
	case BH_CHAN_LIST:
		ret = handle_list(st, *payload, len);
		break;
	case BH_CHAN_READ:
		ret = handle_read(st, *payload, len);
		break;
	case BH_CHAN_PS: /* ---- procs ---- */
		ret = handle_ps(st, *payload, len);
		break;
	default:
		protocol_error(st, "unknown request type");
	}
	if (ret == -EPROTO)
		protocol_error(st, "truncated or overlong request");
	if (ret < 0) {
		diag("cannot queue a reply: %s", strerror(-ret));
		shutdown_exit(st, 1);
	}
}

/* One frame per wake-up: when more are waiting, poll() reports the channel
 * readable again at once, and the usual case (one request, then a wait for
 * its answer) is spared a read that could only say EAGAIN - a system call
 * is tens of microseconds under gVisor. */
static void handle_requests(struct init *st)
{
	if (bh_outq_pending(&st->out) < OUTQ_BACKPRESSURE) {
		cleanup_free uint8_t *payload = NULL;
		uint8_t type;
		size_t len;
		int ret = bh_reader_step(&st->rd, st->req_fd);

		if (ret == BH_READ_AGAIN)
			return;
		if (ret == BH_READ_EOF)
			shutdown_exit(st, 0);
		if (ret == -EPROTO)
			protocol_error(st, "bad length or truncated frame");
		if (ret < 0) {
			diag("reading requests: %s", strerror(-ret));
			shutdown_exit(st, 1);
		}
		payload = bh_reader_take(&st->rd, &type, &len);
		handle_frame(st, type, &payload, len);
	}
}

static void flush_replies(struct init *st)
{
	int ret;

	if (bh_outq_pending(&st->out) == 0)
		return;
	ret = bh_outq_flush(&st->out, st->rep_fd);
	if (ret < 0) {
		/* Nobody is listening any more: wind the sandbox down. */
		st->rep_broken = true;
		diag("writing replies: %s", strerror(-ret));
		shutdown_exit(st, 1);
	}
}

/* ---- event loop -------------------------------------------------------- */

void ps_add(struct pollset *ps, int fd, short events, int tag, void *obj)
{
	/* A negative fd would be skipped by poll() anyway; leaving it out
	 * keeps the set small. */
	if (fd < 0 || ps->n >= MAX_PFD)
		return;
	ps->p[ps->n] = (struct pollfd){ .fd = fd, .events = events };
	ps->tag[ps->n] = tag;
	ps->obj[ps->n] = obj;
	ps->n++;
}

static void build_pollset(struct init *st, struct pollset *ps)
{
	if (bh_outq_pending(&st->out) < OUTQ_BACKPRESSURE)
		ps_add(ps, st->req_fd, POLLIN, T_REQ, NULL);
	if (bh_outq_pending(&st->out) > 0)
		ps_add(ps, st->rep_fd, POLLOUT, T_REP, NULL);
	ps_add(ps, st->sig_fd, POLLIN, T_SIG, NULL);
	exec_pollfds(st, ps);
	cell_pollfds(st, ps);
	for (int i = 0; i < MAX_FSOPS; i++)
		if (st->fsops[i].kind != HK_NONE)
			ps_add(ps, st->fsops[i].fd, POLLIN, T_HELPER, &st->fsops[i]);
	egress_relay_pollfds(ps); /* ---- egress ---- */
}

static int poll_timeout(const struct init *st)
{
	uint64_t now = now_mono_ns();
	int t = st->sig_fd < 0 ? NOSIGFD_TICK_MS : -1;

	t = min_timeout(t, exec_timeout(st));
	t = min_timeout(t, cell_timeout(st));
	for (int i = 0; i < MAX_FSOPS; i++)
		if (st->fsops[i].kind != HK_NONE)
			t = min_timeout(t, ms_until(now, st->fsops[i].deadline));
	return t;
}

static bool ready(const struct pollfd *p)
{
	return p->revents & (POLLIN | POLLOUT | POLLHUP | POLLERR);
}

static void loop_once(struct init *st)
{
	struct pollfd p[MAX_PFD];
	int tag[MAX_PFD];
	void *obj[MAX_PFD];
	struct pollset ps = { p, tag, obj, 0 };
	bool sig = false, req = false;
	int n;

	build_pollset(st, &ps);
	n = poll(p, (nfds_t)ps.n, poll_timeout(st));
	if (n < 0 && errno != EINTR) {
		diag("poll: %s", strerror(errno));
		shutdown_exit(st, 1);
	}
	if (n < 0)
		return;
	for (int i = 0; i < ps.n; i++) {
		if (!ready(&p[i]))
			continue;
		if (tag[i] == T_SIG)
			sig = true;
		else if (tag[i] == T_REQ)
			req = true;
		else if (tag[i] == T_HELPER)
			helper_read(obj[i]);
		else if (tag[i] == T_RELAY) /* ---- egress ---- */
			egress_relay_ready(obj[i]);
		else if (tag[i] >= T_EXEC_OUT && tag[i] <= T_EXEC_IN)
			exec_ready(st, tag[i]);
		else if (tag[i] >= T_CELL_OUT && tag[i] <= T_CELL_REQ)
			cell_ready(st, tag[i]);
	}
	if (sig)
		drain_signalfd(st->sig_fd);
	if (sig || st->sig_fd < 0)
		reap(st);
	/* Requests after the pipes: a call that ends now is answered
	 * before the next one is looked at. */
	if (exec_progress(st) < 0 || cell_progress(st) < 0 || fsops_progress(st) < 0) {
		diag("cannot queue a reply");
		shutdown_exit(st, 1);
	}
	if (req)
		handle_requests(st);
	/* A request may have started or finished something at once. */
	if (cell_progress(st) < 0 || fsops_progress(st) < 0) {
		diag("cannot queue a reply");
		shutdown_exit(st, 1);
	}
	/* Opportunistic: most replies fit the pipe at once, no need to wait
	 * for another poll round. */
	flush_replies(st);
}

int bh_init_main(void)
{
	struct init st = {
		.req_fd = -1,
		.rep_fd = -1,
		.sig_fd = -1,
		.job = { .in_fd = -1, .out.fd = -1, .err.fd = -1 },
		.cell = { .out.fd = -1, .err.fd = -1, .writer.fd = -1 },
	};

	for (int i = 0; i < NLANG; i++)
		st.interp[i] = (struct interp){ .out_fd = -1, .err_fd = -1,
						.req_fd = -1, .rep_fd = -1 };
	for (int i = 0; i < MAX_FSOPS; i++)
		st.fsops[i] = (struct helper){ .fd = -1 };
	/* The sweep is kill(-1, SIGKILL). Outside a pid namespace of its own
	 * that would hit every process the uid can signal - as root, the
	 * whole machine. */
	if (getpid() != 1) {
		diag("refusing to start: init mode must be PID 1 of its own "
		     "pid namespace (pid is %d)",
		     (int)getpid());
		return 2;
	}
	/* Fixing the threshold turns off glibc's adaptive one, which after a
	 * big request would serve later big buffers from the heap and keep
	 * them resident; mmap()ed buffers go back to the kernel on free(). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (harden(&st) < 0 || setup_signals(&st) < 0) {
		diag("hardening failed; refusing to serve");
		return 2;
	}
	/* ---- egress: before READY, so the posture check sees it ---- */
	{
		int r = egress_relay_open();

		if (r < 0)
			diag("cannot listen on the egress relay's loopback port: %s",
			     strerror(-r));
	}
	if (queue_ready(&st) < 0)
		return 2;
	flush_replies(&st);
	for (;;)
		loop_once(&st);
}
