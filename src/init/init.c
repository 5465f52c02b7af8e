/* bulkhead-init, init mode: PID 1 of a sandbox.
 *
 * Everything here assumes the process is the init of its own pid namespace:
 * kill(-1, SIGKILL) ("the sweep") then reaches every other process in the
 * sandbox and nothing outside it. That is why bh_init_main() refuses to run
 * when getpid() != 1. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel_proto.h"
#include "frame.h"
#include "util.h"

extern char **environ;

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

/* The channel lives far from 0-2, where programs and libraries look by
 * habit, and close-on-exec, so no program ever inherits it. */
#define FD_FLOOR 100
/* The uid (and gid) user code runs as; /work belongs to it. */
#define SANDBOX_UID 1000
#define IO_CHUNK (64u * 1024u)
/* Per wake-up, per stream: enough to keep up with a flood, small enough that
 * the deadline check between rounds is never far away. */
#define READS_PER_WAKE 16
/* How often the sweep is repeated while its victims die, and how long the
 * init waits for pipes and zombies before answering DONE regardless
 * (a process stuck in uninterruptible sleep must not stall the engine). */
#define SWEEP_TICK_MS 10
#define SWEEP_GRACE_MS 1000
/* Without a signalfd, children are found by polling waitpid this often. */
#define NOSIGFD_TICK_MS 20
/* On the way out: how long to try delivering queued replies and reaping. */
#define EXIT_GRACE_MS 1000
#define FAIL_MSG_MAX 4096u

/* u64 call_id | i32 exit | u32 sig | u32 flags | u64 dur | u64 out_total
 * | u64 err_total | u32 out_len | u32 err_len */
#define DONE_FIXED (8u + 4u + 4u + 4u + 8u + 8u + 8u + 4u + 4u)
/* Both streams at their cap must still fit one DONE frame. */
#define MAX_OUTPUT_CAP ((BH_CHAN_MAX_FRAME - 1u - DONE_FIXED) / 2u)
/* One full DONE may legitimately be queued; more than that means the
 * engine keeps sending without reading, so stop reading requests. */
#define OUTQ_BACKPRESSURE ((size_t)BH_CHAN_MAX_FRAME + (1u << 20))

enum child_stage {
	STAGE_CREDS = 1,
	STAGE_SETSID,
	STAGE_CHDIR,
	STAGE_STDIO,
	STAGE_EXEC,
};

/* What the child sends through the error pipe when it cannot exec. */
struct child_report {
	int32_t stage;
	int32_t err;
};

struct capture {
	int fd;
	uint8_t *buf;
	size_t len;   /* bytes kept */
	size_t alloc; /* bytes allocated; grows up to limit */
	size_t limit; /* output_cap */
	uint64_t total;
	bool lost; /* bytes under the cap dropped for want of memory */
};

struct job {
	bool active;
	bool exited; /* main program reaped */
	bool timed_out;
	bool sweeping;
	uint64_t call_id;
	pid_t pid;
	int status;
	uint64_t t_start, t_end, deadline, sweep_start; /* ns; deadline 0: none */
	struct capture out, err;
	int in_fd;
	uint8_t *in_owner; /* request payload holding the stdin bytes */
	const uint8_t *in_data;
	size_t in_len, in_off;
};

struct init {
	int req_fd;
	int rep_fd;
	int sig_fd;
	bool rep_broken;
	bool children; /* the last waitpid() saw live children */
	struct bh_reader rd;
	struct bh_outq out;
	struct job job;
};

struct exec_req {
	uint64_t call_id;
	uint32_t timeout_ms;
	uint32_t output_cap;
	uint32_t argc;
	struct bh_cursor argv; /* the argc strings, still encoded */
	const uint8_t *stdin_data;
	uint32_t stdin_len;
};

static int diag_fd = 2;

/* Diagnostics must never block the init: the engine may not be draining
 * that pipe, and the descriptor may be shared with the runtime, so it is
 * left blocking and only written when poll says a small write fits. */
__attribute__((format(printf, 1, 2))) static void diag(const char *fmt, ...)
{
	char buf[512];
	struct pollfd p = { .fd = diag_fd, .events = POLLOUT };
	va_list ap;
	ssize_t w;
	int n;

	if (diag_fd < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return;
	memcpy(buf, "bulkhead-init: ", 15);
	va_start(ap, fmt);
	n = vsnprintf(buf + 15, sizeof(buf) - 16, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 15 + (n < (int)sizeof(buf) - 16 ? n : (int)sizeof(buf) - 17);
	buf[n++] = '\n';
	/* Best effort by design: there is nowhere else to report a failure. */
	w = write(diag_fd, buf, (size_t)n);
	(void)w;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int ms_until(uint64_t now, uint64_t when)
{
	uint64_t ms;

	if (when <= now)
		return 0;
	/* Round up: waking a hair early would just spin once more. */
	ms = (when - now + 999999u) / 1000000u;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* Kill every process in the pid namespace except ourselves. ESRCH just
 * means there was nobody left. The sweep repeats every few milliseconds
 * while leftovers die, so a persistent failure is reported once. */
static void sweep(void)
{
	static bool reported;

	if (kill(-1, SIGKILL) < 0 && errno != ESRCH && !reported) {
		reported = true;
		diag("sweep: kill(-1): %s", strerror(errno));
	}
}

/* ---- hardening ------------------------------------------------------- */

static int close_fds_by_proc(void)
{
	bool closed_any;

	/* Collect-then-close, repeated until a pass finds nothing, so the
	 * result does not depend on how the directory behaves while its
	 * entries disappear (gVisor's procfs is not Linux's). */
	do {
		bh_autoclosedir DIR *d = opendir("/proc/self/fd");
		int fds[256];
		size_t n = 0;
		struct dirent *e;

		if (!d)
			return -errno;
		while (n < BH_ARRAY_SIZE(fds) && (e = readdir(d))) {
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

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* 0, 1 and 2 are where user code (and the runtime's habits) look; give
 * them /dev/null so nothing that inherits them can reach the channel. */
static int stdio_to_null(void)
{
	/* Not O_CLOEXEC: if 2 was closed this very descriptor becomes 2, and
	 * dup2() onto itself would not clear the flag. */
	bh_autoclose int null = open("/dev/null", O_RDWR);

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

	/* A dead engine must surface as EPIPE, not kill the init. */
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

/* ---- replies ---------------------------------------------------------- */

static int queue_ready(struct init *st)
{
	int ret = bh_frame_begin(&st->out, BH_CHAN_READY, 8);

	if (ret < 0)
		return ret;
	bh_put_u32(&st->out, BH_CHAN_VERSION);
	bh_put_u32(&st->out, 0);
	return 0;
}

__attribute__((format(printf, 4, 5))) static int
queue_fail(struct init *st, uint64_t call_id, int err, const char *fmt, ...)
{
	char msg[FAIL_MSG_MAX];
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1; /* truncated: a huge argv[0] */
	ret = bh_frame_begin(&st->out, BH_CHAN_FAIL, 8u + 4u + 4u + (size_t)n);
	if (ret < 0)
		return ret;
	bh_put_u64(&st->out, call_id);
	bh_put_u32(&st->out, (uint32_t)(int32_t)err);
	bh_put_str(&st->out, msg, (uint32_t)n);
	return 0;
}

static void exit_code_of(const struct job *j, int32_t *code, uint32_t *sig)
{
	*code = 0;
	*sig = 0;
	if (j->exited && WIFSIGNALED(j->status)) {
		*sig = (uint32_t)WTERMSIG(j->status);
		*code = 128 + WTERMSIG(j->status);
	} else if (j->exited && WIFEXITED(j->status)) {
		*code = WEXITSTATUS(j->status);
	}
	/* The deadline's SIGKILL stays visible in term_signal. */
	if (j->timed_out)
		*code = 124;
}

static int queue_done(struct init *st)
{
	const struct job *j = &st->job;
	uint32_t flags = 0, sig;
	int32_t code;
	int ret;

	exit_code_of(j, &code, &sig);
	if (j->timed_out)
		flags |= BH_CHAN_TIMED_OUT;
	if (j->out.total > j->out.limit || j->out.lost)
		flags |= BH_CHAN_STDOUT_TRUNCATED;
	if (j->err.total > j->err.limit || j->err.lost)
		flags |= BH_CHAN_STDERR_TRUNCATED;
	ret = bh_frame_begin(&st->out, BH_CHAN_DONE,
			     DONE_FIXED + j->out.len + j->err.len);
	if (ret < 0)
		return ret;
	bh_put_u64(&st->out, j->call_id);
	bh_put_u32(&st->out, (uint32_t)code);
	bh_put_u32(&st->out, sig);
	bh_put_u32(&st->out, flags);
	bh_put_u64(&st->out, (j->t_end - j->t_start) / 1000u);
	bh_put_u64(&st->out, j->out.total);
	bh_put_u64(&st->out, j->err.total);
	bh_put_str(&st->out, j->out.buf, (uint32_t)j->out.len);
	bh_put_str(&st->out, j->err.buf, (uint32_t)j->err.len);
	return 0;
}

/* ---- children ---------------------------------------------------------- */

/* PID 1 inherits every orphan in the namespace, so reaping is not limited
 * to the program we started. __WALL also collects children that chose an
 * unusual exit signal. */
static void reap(struct init *st)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);

		if (pid > 0) {
			struct job *j = &st->job;

			if (j->active && pid == j->pid && !j->exited) {
				j->exited = true;
				j->status = status;
				if (!j->timed_out)
					j->t_end = now_ns();
			}
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		st->children = pid == 0;
		return;
	}
}

static void capture_close(struct capture *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Makes sure there is room to keep the next bytes, growing the buffer
 * geometrically up to the cap so small outputs stay small. */
static bool capture_room(struct capture *c)
{
	size_t want;
	uint8_t *p;

	if (c->len >= c->limit)
		return false;
	if (c->len < c->alloc)
		return true;
	want = c->alloc ? c->alloc * 2 : IO_CHUNK;
	if (want > c->limit)
		want = c->limit;
	p = realloc(c->buf, want);
	if (!p) {
		/* Counting on beats stalling the program; the engine learns
		 * through the truncation flag. */
		c->lost = true;
		return false;
	}
	c->buf = p;
	c->alloc = want;
	return true;
}

/* Under the cap, bytes land in the kept buffer; beyond it they go to a
 * scratch buffer and are only counted, so the program is always drained
 * but the init's memory stays bounded by the cap. */
static void capture_read(struct capture *c)
{
	static uint8_t scratch[IO_CHUNK];

	for (int i = 0; i < READS_PER_WAKE && c->fd >= 0; i++) {
		bool keep = capture_room(c);
		size_t room = keep ? c->alloc - c->len : sizeof(scratch);
		ssize_t n = read(c->fd, keep ? c->buf + c->len : scratch,
				 room < IO_CHUNK ? room : IO_CHUNK);

		if (n > 0) {
			if (keep)
				c->len += (size_t)n;
			c->total += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		capture_close(c); /* EOF, or an error that will not improve */
	}
}

static void stdin_close(struct job *j)
{
	if (j->in_fd >= 0)
		close(j->in_fd);
	j->in_fd = -1;
	free(j->in_owner);
	j->in_owner = NULL;
	j->in_data = NULL;
}

static void stdin_feed(struct job *j)
{
	while (j->in_fd >= 0 && j->in_off < j->in_len) {
		size_t want = j->in_len - j->in_off;
		ssize_t n = write(j->in_fd, j->in_data + j->in_off,
				  want > IO_CHUNK ? IO_CHUNK : want);

		if (n > 0) {
			j->in_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break; /* EPIPE: the program does not want the rest */
	}
	/* Closing delivers EOF to the program. */
	stdin_close(j);
}

struct spawn_fds {
	int in_r, in_w;
	int out_r, out_w;
	int err_r, err_w;
	int rep_r, rep_w; /* exec error report */
};

static void spawn_fds_close(struct spawn_fds *f)
{
	bh_close_now(&f->in_r);
	bh_close_now(&f->in_w);
	bh_close_now(&f->out_r);
	bh_close_now(&f->out_w);
	bh_close_now(&f->err_r);
	bh_close_now(&f->err_w);
	bh_close_now(&f->rep_r);
	bh_close_now(&f->rep_w);
}

/* Every end is close-on-exec: the child dup2()s what it needs onto 0-2 and
 * the rest vanish at execve(); the report pipe closing is how the parent
 * learns that execve() succeeded. */
static int spawn_fds_open(struct spawn_fds *f, bool with_stdin)
{
	int p[2];

	if (with_stdin) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		f->in_r = p[0];
		f->in_w = p[1];
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->out_r = p[0];
	f->out_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->err_r = p[0];
	f->err_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->rep_r = p[0];
	f->rep_w = p[1];
	return 0;
}

__attribute__((noreturn)) static void child_fail(int fd, enum child_stage stage)
{
	struct child_report r = { .stage = stage, .err = errno };
	/* Nothing to do if even this fails: the parent then sees a plain
	 * EOF and a child that exited 127. */
	ssize_t n = write(fd, &r, sizeof(r));

	(void)n;
	_exit(127);
}

/* The init runs as the sandbox's root with the four capabilities it needs
 * (setuid, setgid, setpcap, kill) and user code runs as SANDBOX_UID with
 * none: a different uid, so user code can neither open /proc/1/fd (gVisor
 * 20221219 ignores the init's non-dumpable flag there) nor signal the init.
 * Clearing the bounding set first means nothing the program execs can gain
 * a capability back. Started as non-root (tests), there is nothing to drop. */
static int drop_to_sandbox_user(void)
{
	if (getuid() != 0)
		return 0;
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	if (setgroups(0, NULL) < 0 || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
	    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
		return -1;
	/* From root to non-root, the kernel clears permitted and effective. */
	return getuid() == SANDBOX_UID && geteuid() == SANDBOX_UID ? 0 : (errno = EPERM, -1);
}

/* Runs between fork() and execve(): only async-signal-safe calls. */
__attribute__((noreturn)) static void child_exec(const struct spawn_fds *f,
						char *const argv[])
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Ignored dispositions (SIGPIPE) survive execve(); reset them all.
	 * SIGKILL/SIGSTOP and libc-reserved signals just fail. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	/* Its own session and process group: nothing it does with job
	 * control or process-group signals can aim at the init. */
	if (setsid() < 0)
		child_fail(f->rep_w, STAGE_SETSID);
	if (drop_to_sandbox_user() < 0)
		child_fail(f->rep_w, STAGE_CREDS);
	if (chdir("/work") < 0 && (errno != ENOENT || chdir("/") < 0))
		child_fail(f->rep_w, STAGE_CHDIR);
	/* Without stdin bytes, fd 0 stays the init's /dev/null. */
	if ((f->in_r >= 0 && dup2(f->in_r, 0) < 0) || dup2(f->out_w, 1) < 0 ||
	    dup2(f->err_w, 2) < 0)
		child_fail(f->rep_w, STAGE_STDIO);
	execve(argv[0], argv, environ);
	child_fail(f->rep_w, STAGE_EXEC);
}

/* Blocks until execve() succeeded (EOF) or the child reported why not. */
static int read_child_report(int fd, struct child_report *r)
{
	size_t have = 0;

	while (have < sizeof(*r)) {
		ssize_t n = read(fd, (char *)r + have, sizeof(*r) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	return have == sizeof(*r) ? 1 : 0;
}

static void free_argv(char ***argv)
{
	if (!*argv)
		return;
	for (char **a = *argv; *a; a++)
		free(*a);
	free(*argv);
}

/* Decodes argv into C strings; a NUL inside an argument has no C form. */
static int build_argv(const struct exec_req *rq, char ***out, uint32_t *bad)
{
	__attribute__((cleanup(free_argv))) char **argv = NULL;
	struct bh_cursor c = rq->argv;

	argv = calloc((size_t)rq->argc + 1u, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	for (uint32_t i = 0; i < rq->argc; i++) {
		const uint8_t *s;
		uint32_t n;

		if (bh_get_str(&c, &s, &n) < 0)
			return -EPROTO; /* parse_exec already walked these */
		if (memchr(s, 0, n)) {
			*bad = i;
			return -EINVAL;
		}
		argv[i] = strndup((const char *)s, n);
		if (!argv[i])
			return -ENOMEM;
	}
	*out = BH_STEAL_PTR(argv);
	return 0;
}

static const char *stage_name(int32_t stage)
{
	switch (stage) {
	case STAGE_CREDS:
		return "drop to the sandbox user";
	case STAGE_SETSID:
		return "setsid";
	case STAGE_CHDIR:
		return "chdir /work";
	case STAGE_STDIO:
		return "dup2 stdio";
	default:
		return "exec";
	}
}

static void capture_init(struct capture *c, int fd, uint32_t cap)
{
	*c = (struct capture){ .fd = fd, .limit = cap };
	if (c->limit > MAX_OUTPUT_CAP)
		c->limit = MAX_OUTPUT_CAP;
}

static void job_arm(struct init *st, const struct exec_req *rq, pid_t pid,
		    uint64_t t_start, struct spawn_fds *f, uint8_t **payload)
{
	struct job *j = &st->job;

	*j = (struct job){
		.active = true,
		.call_id = rq->call_id,
		.pid = pid,
		.t_start = t_start,
		.in_fd = -1,
	};
	if (rq->timeout_ms)
		j->deadline = t_start + (uint64_t)rq->timeout_ms * 1000000u;
	capture_init(&j->out, bh_steal_fd(&f->out_r), rq->output_cap);
	capture_init(&j->err, bh_steal_fd(&f->err_r), rq->output_cap);
	set_nonblock(j->out.fd);
	set_nonblock(j->err.fd);
	if (f->in_w >= 0) {
		j->in_fd = bh_steal_fd(&f->in_w);
		set_nonblock(j->in_fd);
		/* The stdin bytes live in the request payload: keep it rather
		 * than copy up to 16 MiB. */
		j->in_owner = BH_STEAL_PTR(*payload);
		j->in_data = rq->stdin_data;
		j->in_len = rq->stdin_len;
	}
	st->children = true;
}

/* Forks and execs the program. A failure the engine should hear about is
 * answered with FAIL here; only an unqueueable reply is returned (<0). */
static int job_start(struct init *st, const struct exec_req *rq,
		     uint8_t **payload)
{
	__attribute__((cleanup(spawn_fds_close))) struct spawn_fds f = {
		-1, -1, -1, -1, -1, -1, -1, -1
	};
	__attribute__((cleanup(free_argv))) char **argv = NULL;
	struct child_report report;
	uint32_t bad = 0;
	uint64_t t_start;
	pid_t pid;
	int ret;

	ret = build_argv(rq, &argv, &bad);
	if (ret == -EINVAL)
		return queue_fail(st, rq->call_id, EINVAL,
				  "argv[%u] contains a NUL byte", bad);
	if (ret < 0)
		return queue_fail(st, rq->call_id, -ret, "argv: %s",
				  strerror(-ret));
	ret = spawn_fds_open(&f, rq->stdin_len > 0);
	if (ret < 0)
		return queue_fail(st, rq->call_id, -ret, "pipe: %s",
				  strerror(-ret));
	t_start = now_ns();
	pid = fork();
	if (pid < 0)
		return queue_fail(st, rq->call_id, errno, "fork: %s",
				  strerror(errno));
	if (pid == 0)
		child_exec(&f, argv);
	/* Only the child may hold these, or EOF would never come. */
	bh_close_now(&f.in_r);
	bh_close_now(&f.out_w);
	bh_close_now(&f.err_w);
	bh_close_now(&f.rep_w);
	if (read_child_report(f.rep_r, &report)) {
		/* It _exit()ed right after reporting; collect it now so the
		 * general reaper does not have to know about it. */
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		if (report.stage == STAGE_EXEC)
			return queue_fail(st, rq->call_id, report.err,
					  "exec %s: %s", argv[0],
					  strerror(report.err));
		return queue_fail(st, rq->call_id, report.err, "%s: %s",
				  stage_name(report.stage),
				  strerror(report.err));
	}
	job_arm(st, rq, pid, t_start, &f, payload);
	return 0;
}

static void job_release(struct job *j)
{
	capture_close(&j->out);
	capture_close(&j->err);
	stdin_close(j);
	free(j->out.buf);
	free(j->err.buf);
	*j = (struct job){ .in_fd = -1, .out.fd = -1, .err.fd = -1 };
}

static void job_begin_sweep(struct init *st, uint64_t now)
{
	struct job *j = &st->job;

	j->sweeping = true;
	j->sweep_start = now;
	/* Feeding stdin is pointless once the program is gone. */
	stdin_close(j);
	sweep();
}

/* Done when the program is reaped, every holder of its output pipes is
 * dead (EOF) and no child is left to reap. */
static bool job_settled(const struct init *st)
{
	const struct job *j = &st->job;

	return j->exited && j->out.fd < 0 && j->err.fd < 0 && !st->children;
}

static int job_progress(struct init *st)
{
	struct job *j = &st->job;
	uint64_t now = now_ns();
	int ret;

	if (!j->active)
		return 0;
	if (!j->sweeping) {
		if (j->deadline && !j->exited && now >= j->deadline) {
			j->timed_out = true;
			j->t_end = now;
		} else if (!j->exited) {
			return 0;
		}
		job_begin_sweep(st, now);
	} else {
		/* Again, in case something forked while the last sweep ran. */
		sweep();
	}
	if (!job_settled(st) && now - j->sweep_start < SWEEP_GRACE_MS * 1000000ull)
		return 0;
	if (!job_settled(st))
		diag("call %llu: leftovers did not die within %d ms",
		     (unsigned long long)j->call_id, SWEEP_GRACE_MS);
	ret = queue_done(st);
	if (ret < 0)
		ret = queue_fail(st, j->call_id, -ret, "DONE: %s",
				 strerror(-ret));
	job_release(j);
	return ret;
}

/* ---- requests ---------------------------------------------------------- */

static int parse_exec(const uint8_t *p, size_t n, struct exec_req *rq)
{
	struct bh_cursor c = bh_cursor_make(p, n);
	const uint8_t *s;
	uint32_t len;

	if (bh_get_u64(&c, &rq->call_id) < 0 ||
	    bh_get_u32(&c, &rq->timeout_ms) < 0 ||
	    bh_get_u32(&c, &rq->output_cap) < 0 ||
	    bh_get_u32(&c, &rq->argc) < 0)
		return -EPROTO;
	/* Each string costs at least its length word. */
	if (rq->argc > c.left / 4u)
		return -EPROTO;
	rq->argv = c;
	for (uint32_t i = 0; i < rq->argc; i++)
		if (bh_get_str(&c, &s, &len) < 0)
			return -EPROTO;
	rq->argv.left -= c.left;
	if (bh_get_str(&c, &rq->stdin_data, &rq->stdin_len) < 0)
		return -EPROTO;
	/* Trailing bytes mean the two sides disagree about the layout. */
	return c.left == 0 ? 0 : -EPROTO;
}

static int handle_exec(struct init *st, uint8_t **payload, size_t len)
{
	struct exec_req rq;

	if (parse_exec(*payload, len, &rq) < 0)
		return -EPROTO;
	if (st->job.active)
		return queue_fail(st, rq.call_id, EBUSY,
				  "an EXEC is already running (call %llu)",
				  (unsigned long long)st->job.call_id);
	if (rq.argc == 0)
		return queue_fail(st, rq.call_id, EINVAL, "empty argv");
	return job_start(st, &rq, payload);
}

/* ---- shutdown ---------------------------------------------------------- */

/* Best effort within a time budget: the engine may be gone or stuck. */
static void flush_before_exit(struct init *st, uint64_t until)
{
	while (!st->rep_broken && bh_outq_pending(&st->out) > 0) {
		struct pollfd p = { .fd = st->rep_fd, .events = POLLOUT };
		uint64_t now = now_ns();

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
		uint64_t now = now_ns();

		sweep();
		reap(st);
		if (!st->children || now >= until)
			return;
		/* With sig_fd < 0 poll() ignores the entry: a plain sleep. */
		if (poll(&p, 1, min_timeout(ms_until(now, until), SWEEP_TICK_MS)) > 0)
			drain_signalfd(st->sig_fd);
	}
}

__attribute__((noreturn)) static void shutdown_exit(struct init *st, int code)
{
	uint64_t until = now_ns() + EXIT_GRACE_MS * 1000000ull;

	sweep();
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

static void handle_frame(struct init *st, uint8_t type, uint8_t **payload,
			 size_t len)
{
	int ret;

	if (type != BH_CHAN_EXEC)
		protocol_error(st, "unknown request type");
	ret = handle_exec(st, payload, len);
	if (ret == -EPROTO)
		protocol_error(st, "truncated or overlong EXEC");
	if (ret < 0) {
		diag("cannot queue a reply: %s", strerror(-ret));
		shutdown_exit(st, 1);
	}
}

static void handle_requests(struct init *st)
{
	while (bh_outq_pending(&st->out) < OUTQ_BACKPRESSURE) {
		bh_autofree uint8_t *payload = NULL;
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

enum { P_REQ, P_REP, P_SIG, P_OUT, P_ERR, P_IN, P_COUNT };

static void build_pollset(const struct init *st, struct pollfd *p)
{
	const struct job *j = &st->job;

	/* A negative fd makes poll() skip the entry. */
	p[P_REQ] = (struct pollfd){ .fd = -1, .events = POLLIN };
	if (bh_outq_pending(&st->out) < OUTQ_BACKPRESSURE)
		p[P_REQ].fd = st->req_fd;
	p[P_REP] = (struct pollfd){ .fd = -1, .events = POLLOUT };
	if (bh_outq_pending(&st->out) > 0)
		p[P_REP].fd = st->rep_fd;
	p[P_SIG] = (struct pollfd){ .fd = st->sig_fd, .events = POLLIN };
	p[P_OUT] = (struct pollfd){ .fd = j->active ? j->out.fd : -1,
				    .events = POLLIN };
	p[P_ERR] = (struct pollfd){ .fd = j->active ? j->err.fd : -1,
				    .events = POLLIN };
	p[P_IN] = (struct pollfd){ .fd = j->active ? j->in_fd : -1,
				   .events = POLLOUT };
}

static int poll_timeout(const struct init *st)
{
	const struct job *j = &st->job;
	uint64_t now = now_ns();
	int t = -1;

	if (st->sig_fd < 0)
		t = NOSIGFD_TICK_MS;
	if (!j->active)
		return t;
	if (j->sweeping)
		return min_timeout(t, SWEEP_TICK_MS);
	if (j->deadline)
		t = min_timeout(t, ms_until(now, j->deadline));
	return t;
}

static bool ready(const struct pollfd *p)
{
	return p->fd >= 0 && (p->revents & (POLLIN | POLLOUT | POLLHUP | POLLERR));
}

static void loop_once(struct init *st)
{
	struct pollfd p[P_COUNT];
	int n;

	build_pollset(st, p);
	n = poll(p, P_COUNT, poll_timeout(st));
	if (n < 0 && errno != EINTR) {
		diag("poll: %s", strerror(errno));
		shutdown_exit(st, 1);
	}
	if (n < 0)
		return;
	if (ready(&p[P_SIG]))
		drain_signalfd(st->sig_fd);
	if (ready(&p[P_SIG]) || st->sig_fd < 0)
		reap(st);
	if (ready(&p[P_OUT]))
		capture_read(&st->job.out);
	if (ready(&p[P_ERR]))
		capture_read(&st->job.err);
	if (ready(&p[P_IN]))
		stdin_feed(&st->job);
	if (ready(&p[P_REQ]))
		handle_requests(st);
	if (job_progress(st) < 0) {
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
	};

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
	if (queue_ready(&st) < 0)
		return 2;
	flush_replies(&st);
	for (;;)
		loop_once(&st);
}
