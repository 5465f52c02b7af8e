/* Starting processes as the sandbox user: programs (EXEC), interpreters
 * (CELL) and the init's own forked helpers share one privilege drop. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_priv.h"

extern char **environ;

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

/* Where the child parks descriptors before dup2()ing them into place, so
 * a source that happens to be 3 is not overwritten while 3 is being
 * filled from another. */
#define FD_PARK 16

/* The init runs as the sandbox's root with the four capabilities it needs
 * (setuid, setgid, setpcap, kill) and user code runs as SANDBOX_UID with
 * none: a different uid, so user code can neither open /proc/1/fd (gVisor
 * 20221219 ignores the init's non-dumpable flag there) nor signal the init.
 * Clearing the bounding set first means nothing the program execs can gain
 * a capability back. Started as non-root (tests), there is nothing to drop. */
int drop_to_sandbox_user(void)
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

__attribute__((noreturn)) static void child_fail(int fd, enum child_stage stage)
{
	struct child_report r = { .stage = stage, .err = errno };
	/* Nothing to do if even this fails: the parent then sees a plain
	 * EOF and a child that exited 127. */
	ssize_t n = write(fd, &r, sizeof(r));

	(void)n;
	_exit(127);
}

void spawn_child(int report_fd, int *fdmap, int nmap, char *const argv[],
		 spawn_prepare prepare, void *arg, int keep_fd)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int parked[SPAWN_MAP_MAX];
	sigset_t none;

	if (nmap > SPAWN_MAP_MAX) {
		errno = EINVAL;
		child_fail(report_fd, STAGE_STDIO);
	}

	/* First of all: the child holds a copy of every descriptor of the
	 * init (the channel, the signalfd, the other interpreter's pipes),
	 * and gVisor lets user code list and open /proc/<pid>/fd of any
	 * process in the sandbox, whatever its uid (file permissions still
	 * apply). Only what the program needs stays, before anything else
	 * happens and long before the child becomes the sandbox user. */
	{
		int keep[SPAWN_KEEP_MAX];
		size_t k = 0;

		keep[k++] = report_fd;
		if (keep_fd >= 0)
			keep[k++] = keep_fd;
		for (int i = 0; i < nmap && k < SPAWN_KEEP_MAX; i++)
			keep[k++] = fdmap[i];
		close_fds_except(keep, k);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Ignored dispositions (SIGPIPE) survive execve(); reset them all.
	 * SIGKILL/SIGSTOP and libc-reserved signals just fail. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	/* Its own session and process group: nothing it does with job
	 * control or process-group signals can aim at the init. */
	if (setsid() < 0)
		child_fail(report_fd, STAGE_SETSID);
	if (drop_to_sandbox_user() < 0)
		child_fail(report_fd, STAGE_CREDS);
	if (chdir(WORK_DIR) < 0 && (errno != ENOENT || chdir("/") < 0))
		child_fail(report_fd, STAGE_CHDIR);
	if (prepare && prepare(fdmap, arg) < 0)
		child_fail(report_fd, STAGE_PREPARE);
	/* The parked copies are close-on-exec and vanish at execve(); dup2()
	 * clears the flag on the descriptors the program is meant to have. */
	for (int i = 0; i < nmap; i++) {
		parked[i] = -1;
		if (fdmap[i] >= 0 &&
		    (parked[i] = fcntl(fdmap[i], F_DUPFD_CLOEXEC, FD_PARK)) < 0)
			child_fail(report_fd, STAGE_STDIO);
	}
	for (int i = 0; i < nmap; i++)
		if (parked[i] >= 0 && dup2(parked[i], i) < 0)
			child_fail(report_fd, STAGE_STDIO);
	execve(argv[0], argv, environ);
	child_fail(report_fd, STAGE_EXEC);
}

int spawn_wait_readable(int fd, uint64_t until)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_mono_ns();
		int n;

		if (now >= until)
			return -ETIMEDOUT;
		n = poll(&p, 1, ms_until(now, until));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int spawn_wait_report(int fd, struct child_report *r, uint64_t until)
{
	size_t have = 0;

	while (have < sizeof(*r)) {
		ssize_t n;

		if (spawn_wait_readable(fd, until) < 0) {
			*r = (struct child_report){ .stage = STAGE_STARTUP, .err = ETIMEDOUT };
			return 1;
		}
		n = read(fd, (char *)r + have, sizeof(*r) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	return have == sizeof(*r) ? 1 : 0;
}

const char *stage_name(int32_t stage)
{
	switch (stage) {
	case STAGE_CREDS:
		return "drop to the sandbox user";
	case STAGE_SETSID:
		return "setsid";
	case STAGE_CHDIR:
		return "chdir /work";
	case STAGE_STDIO:
		return "set up descriptors";
	case STAGE_PREPARE:
		return "make the interpreter's pipes";
	case STAGE_STARTUP:
		return "start in time";
	default:
		return "exec";
	}
}

/* Every descriptor above 2 but those in keep (any order; negative and
 * repeated entries are fine, at most SPAWN_KEEP_MAX) is closed: the gaps
 * between them with close_range(), or one by one up to the descriptor
 * limit where the kernel has no close_range(). Async-signal-safe: it runs
 * between fork() and execve(). */
void close_fds_except(const int *keep, size_t n)
{
	int sorted[SPAWN_KEEP_MAX];
	size_t k = 0;
	unsigned from = 3;
	struct rlimit rl;
	rlim_t max = 1u << 20;
	bool ok = true;

	for (size_t i = 0; i < n && k < SPAWN_KEEP_MAX; i++) {
		size_t j;

		if (keep[i] < 3)
			continue;
		/* Insertion sort, dropping repeats. */
		for (j = k; j > 0 && sorted[j - 1] > keep[i]; j--)
			sorted[j] = sorted[j - 1];
		if (j > 0 && sorted[j - 1] == keep[i]) {
			for (; j < k; j++)
				sorted[j] = sorted[j + 1];
			continue;
		}
		sorted[j] = keep[i];
		k++;
	}
	for (size_t i = 0; i <= k && ok; i++) {
		unsigned to = i < k ? (unsigned)sorted[i] : 0u;

		if (i < k && to == from) {
			from = to + 1u;
			continue;
		}
		ok = syscall(__NR_close_range, from, i < k ? to - 1u : ~0u, 0u) == 0;
		if (i < k)
			from = to + 1u;
	}
	if (ok)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < max)
		max = rl.rlim_cur;
	for (rlim_t fd = 3; fd < max; fd++) {
		bool kept = false;

		for (size_t i = 0; i < k && !kept; i++)
			kept = sorted[i] == (int)fd;
		if (!kept)
			close((int)fd);
	}
}
