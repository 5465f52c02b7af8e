/* Children of the engine: control commands it spawns (crun, runsc) and the
 * container inits the kernel reparents to it (the engine is a subreaper).
 *
 * One reaping mechanism: every child's pidfd wakes the loop, and then one
 * waitpid(-1, WNOHANG) sweep reaps whatever has ended and dispatches by pid.
 * Processes nobody registered (runsc's gofer and sandbox, reparented when
 * `runsc create` exits) are reaped by the same sweep and logged as strays,
 * so no zombie outlives the next wake-up or the periodic tick. */
#include "engine_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define CHILD_OUTPUT_CAP (64 * 1024)

struct child {
	pid_t pid;
	int pidfd;
	struct bh_watch *pid_watch;
	int out_fd; /* capture pipe, -1 when none or at EOF */
	struct bh_watch *out_watch;
	struct buf out;
	bool reaped, timed_out;
	bool spawned; /* ours (a runtime call), not an adopted container init */
	int status;
	struct bh_timer *deadline;
	bh_child_fn fn;
	void *arg;
	struct child *next;
};

struct bh_children {
	struct child *list;
};

struct bh_children *children_new(void)
{
	return xzalloc(sizeof(struct bh_children));
}

static void child_release(bh_engine *e, struct child *c)
{
	loop_unwatch(e->loop, c->pid_watch);
	loop_unwatch(e->loop, c->out_watch);
	loop_timer_cancel(e->loop, c->deadline);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	buf_free(&c->out);
	free(c);
}

void children_release(bh_engine *e)
{
	struct bh_children *c = e->children;
	if (!c)
		return;
	while (c->list) {
		struct child *ch = c->list;
		c->list = ch->next;
		/* A runtime call still running when its engine goes would finish
		 * its work for nobody. */
		if (!ch->reaped && ch->spawned)
			syscall(SYS_pidfd_send_signal, ch->pidfd, SIGKILL, NULL, 0);
		child_release(e, ch);
	}
	free(c);
	e->children = NULL;
}

static struct child *find(bh_engine *e, pid_t pid)
{
	for (struct child *c = e->children->list; c; c = c->next)
		if (c->pid == pid)
			return c;
	return NULL;
}

static void unlink_child(bh_engine *e, struct child *c)
{
	for (struct child **pp = &e->children->list; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			return;
		}
	}
}

/* Completion needs both the exit status and the end of its output. */
static void maybe_complete(bh_engine *e, struct child *c)
{
	if (!c->reaped || c->out_fd >= 0)
		return;
	unlink_child(e, c);
	buf_append(&c->out, "", 1);
	struct bh_child_result r = {
		.pid = c->pid,
		.status = c->status,
		.timed_out = c->timed_out,
		.output = (const char *)c->out.data,
		.output_len = c->out.len - 1,
	};
	if (c->fn)
		c->fn(e, c->arg, &r);
	child_release(e, c);
}

void children_reap(bh_engine *e)
{
	for (;;) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);
		if (pid <= 0)
			break;
		struct child *c = find(e, pid);
		if (!c) {
			bh_log(e, BH_LOG_DEBUG, "reaped stray child %d (status %d)", (int)pid, status);
			continue;
		}
		c->reaped = true;
		c->status = status;
		loop_unwatch(e->loop, c->pid_watch);
		c->pid_watch = NULL;
		loop_timer_cancel(e->loop, c->deadline);
		c->deadline = NULL;
		maybe_complete(e, c);
	}
}

static void on_pidfd(bh_engine *e, void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
	children_reap(e);
}

static void on_output(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	struct child *c = arg;
	char chunk[8192];
	for (;;) {
		ssize_t r = read(c->out_fd, chunk, sizeof chunk);
		if (r > 0) {
			size_t room = c->out.len < CHILD_OUTPUT_CAP ? CHILD_OUTPUT_CAP - c->out.len : 0;
			buf_append(&c->out, chunk, (size_t)r < room ? (size_t)r : room);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		break; /* EOF or a real error: either way the output is over */
	}
	loop_unwatch(e->loop, c->out_watch);
	c->out_watch = NULL;
	close(c->out_fd);
	c->out_fd = -1;
	maybe_complete(e, c);
}

static void on_deadline(bh_engine *e, void *arg)
{
	struct child *c = arg;
	c->deadline = NULL;
	c->timed_out = true;
	bh_log(e, BH_LOG_WARN, "child %d (%s) passed its deadline; killing it", (int)c->pid,
	       "control command");
	syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

static int open_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static struct child *track(bh_engine *e, pid_t pid, bh_child_fn fn, void *arg, bh_error **err)
{
	int pidfd = open_pidfd(pid);
	if (pidfd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "pidfd_open(%d)", (int)pid), NULL;
	fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	struct child *c = xzalloc(sizeof *c);
	c->pid = pid;
	c->pidfd = pidfd;
	c->out_fd = -1;
	c->fn = fn;
	c->arg = arg;
	c->pid_watch = loop_watch(e->loop, pidfd, EPOLLIN, on_pidfd, c);
	c->next = e->children->list;
	e->children->list = c;
	return c;
}

static void exec_child(const struct bh_child_spec *spec, int in, int out, int err, pid_t parent)
{
	/* In the child: only async-signal-safe calls until execve. A runtime
	 * call must not outlive its engine: a `crun create` left running after
	 * a crash would finish creating a container nobody will reap. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	int fds[3] = {in, out, err};
	/* Move the sources above 2 first so dup2 order cannot clobber one. */
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0 && fds[i] < 3) {
			int moved = fcntl(fds[i], F_DUPFD, 3);
			if (moved < 0)
				_exit(126);
			fds[i] = moved;
		}
	}
	int devnull = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3; i++) {
		int src = fds[i] >= 0 ? fds[i] : devnull;
		if (dup2(src, i) < 0)
			_exit(126);
	}
	/* Every child is a runtime command, and what it starts is a sandbox:
	 * never with the daemon's low OOM score. crun and runsc set their
	 * sandbox processes to the bundle's value, but runsc's ptrace stubs
	 * (user code runs in them) are forked before it does. Raising needs no
	 * capability. */
	int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (adj >= 0) {
		if (write(adj, BH_SANDBOX_OOM_SCORE_ADJ_TEXT, sizeof BH_SANDBOX_OOM_SCORE_ADJ_TEXT - 1) < 0) {
			/* best effort: the runtimes still set the sandbox's own */
		}
		close(adj);
	}
	/* The Debian crun predates its own fd-leak fix: hand it nothing but 0-2. */
	syscall(SYS_close_range, 3, ~0U, 0);
	static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				    "LANG=C.UTF-8", NULL};
	execve(spec->argv[0], (char *const *)spec->argv, env);
	_exit(127);
}

int child_spawn(bh_engine *e, const struct bh_child_spec *spec, bh_child_fn fn, void *arg,
		pid_t *pid_out, bh_error **err)
{
	int cap[2] = {-1, -1};
	bool capture = spec->fd_out == BH_CHILD_CAPTURE || spec->fd_err == BH_CHILD_CAPTURE;
	if (capture && pipe2(cap, O_CLOEXEC | O_NONBLOCK) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "pipe for %s", spec->argv[0]);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		if (capture) {
			close(cap[0]);
			close(cap[1]);
		}
		return bh_fail(err, BH_E_SYSTEM, saved, "fork for %s", spec->argv[0]);
	}
	if (pid == 0) {
		if (capture)
			fcntl(cap[1], F_SETFL, 0);
		int out = spec->fd_out == BH_CHILD_CAPTURE ? cap[1] : spec->fd_out;
		int er = spec->fd_err == BH_CHILD_CAPTURE ? cap[1] : spec->fd_err;
		exec_child(spec, spec->fd_in, out, er, parent);
	}
	if (capture)
		close(cap[1]);
	struct child *c = track(e, pid, fn, arg, err);
	if (!c) {
		kill(pid, SIGKILL);
		if (capture)
			close(cap[0]);
		return -1;
	}
	c->spawned = true;
	if (capture) {
		c->out_fd = cap[0];
		c->out_watch = loop_watch(e->loop, c->out_fd, EPOLLIN, on_output, c);
	}
	if (spec->timeout_ms)
		c->deadline = loop_timer(e->loop, spec->timeout_ms, on_deadline, c);
	if (pid_out)
		*pid_out = pid;
	return 0;
}

int child_adopt(bh_engine *e, pid_t pid, bh_child_fn fn, void *arg, bh_error **err)
{
	return track(e, pid, fn, arg, err) ? 0 : -1;
}

void child_forget(bh_engine *e, pid_t pid)
{
	struct child *c = find(e, pid);
	if (c)
		c->fn = NULL;
}

size_t children_pending(bh_engine *e)
{
	size_t n = 0;
	for (struct child *c = e->children->list; c; c = c->next)
		n++;
	return n;
}

int child_run_sync(const char *const *argv, uint32_t timeout_ms, int *status, char **output)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		struct bh_child_spec spec = {.argv = argv};
		exec_child(&spec, -1, p[1], p[1], parent);
	}
	close(p[1]);
	struct buf out = {0};
	uint64_t deadline = now_mono_us() + (uint64_t)timeout_ms * 1000u;
	int pidfd = open_pidfd(pid);
	for (;;) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		uint64_t now = now_mono_us();
		int wait_ms = now >= deadline ? 0 : (int)((deadline - now) / 1000u);
		int r = poll(&pfd, 1, wait_ms);
		if (r == 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (r < 0 && errno == EINTR)
			continue;
		char chunk[4096];
		ssize_t n = read(p[0], chunk, sizeof chunk);
		if (n <= 0)
			break;
		if (out.len < CHILD_OUTPUT_CAP)
			buf_append(&out, chunk, (size_t)n);
	}
	close(p[0]);
	int st = 0;
	/* waitid on the pidfd reaps exactly this child, even in an engine whose
	 * loop reaps with waitpid(-1): this runs before the loop exists. */
	siginfo_t si;
	if (pidfd >= 0) {
		while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		close(pidfd);
		st = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
	} else {
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	buf_append(&out, "", 1);
	if (status)
		*status = st;
	if (output)
		*output = (char *)out.data;
	else
		buf_free(&out);
	return 0;
}
