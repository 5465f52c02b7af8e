/* The sweep: after every call, every process in the sandbox but the init
 * (and, while they live, the interpreters and the LIST/READ helpers) is
 * killed.
 *
 * Everything here assumes the process is the init of its own pid
 * namespace: kill(-1) then reaches every other process in the sandbox and
 * nothing outside it, and /proc lists exactly the sandbox's processes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init_priv.h"
#include "util.h"

/* Victims collected per /proc pass before they are signalled; a pass that
 * fills the batch just means another pass follows. */
#define SWEEP_BATCH 1024
#define MAX_SPARED (NLANG + MAX_FSOPS)

/* ESRCH just means there was nobody left. The sweep repeats every few
 * milliseconds while leftovers die, so a persistent failure is reported
 * once. */
void sweep_everyone(void)
{
	static bool reported;

	if (kill(-1, SIGKILL) < 0 && errno != ESRCH && !reported) {
		reported = true;
		diag("sweep: kill(-1): %s", strerror(errno));
	}
}

/* A zombie is already dead: it only waits for its parent (the init, or a
 * live interpreter that has not collected its subprocess yet). Counting
 * it as alive would make the sweep wait for a reap that is not ours. */
static bool is_dead(pid_t pid)
{
	char path[32], buf[256];
	bh_autoclose int fd = -1;
	const char *rp;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n == 0 || errno == ESRCH;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold spaces and parentheses, the
	 * fields after it never do. */
	rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return false;
	return rp[2] == 'Z' || rp[2] == 'X' || rp[2] == 'x';
}

static bool spared(pid_t pid, const pid_t *spare, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (spare[i] == pid)
			return true;
	return false;
}

/* /proc is opened once and rewound for every pass: a pass after every
 * call costs a seek and the reads of the listing, not also an open, a stat
 * and a close (under gVisor each is a trip through the Sentry, tens of
 * microseconds). Rewinding starts a fresh listing on Linux and gVisor
 * alike; the descriptor is close-on-exec, and forked helpers close every
 * descriptor before they run (close_fds_except). */
static DIR *proc_dir(void)
{
	static DIR *d;

	if (d) {
		rewinddir(d);
		return d;
	}
	d = opendir("/proc");
	return d;
}

/* Collect-then-kill: gVisor's procfs is not Linux's, and the result must
 * not depend on how a directory behaves while its entries disappear.
 * Returns how many live processes were signalled, or -1 without /proc. */
static int sweep_sparing(const pid_t *spare, size_t nspare)
{
	static pid_t victims[SWEEP_BATCH];
	DIR *d = proc_dir();
	struct dirent *e;
	size_t n = 0;
	int killed = 0;

	if (!d)
		return -1;
	while (n < SWEEP_BATCH && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || pid <= 1 || pid > INT32_MAX)
			continue;
		if (!spared((pid_t)pid, spare, nspare))
			victims[n++] = (pid_t)pid;
	}
	for (size_t i = 0; i < n; i++) {
		if (is_dead(victims[i]))
			continue;
		if (kill(victims[i], SIGKILL) == 0)
			killed++;
	}
	return killed;
}

static size_t collect_spared(const struct init *st, pid_t *spare)
{
	size_t n = 0;

	for (int i = 0; i < NLANG; i++)
		if (interp_live(&st->interp[i]) && !st->interp[i].doomed)
			spare[n++] = st->interp[i].pid;
	for (int i = 0; i < MAX_FSOPS; i++) {
		const struct helper *h = &st->fsops[i];

		if (h->kind != HK_NONE && !h->reaped)
			spare[n++] = h->pid;
	}
	return n;
}

bool sweep_pass(struct init *st)
{
	static bool reported;
	pid_t spare[MAX_SPARED];
	size_t nspare = collect_spared(st, spare);
	int killed;

	/* kill(-1) is atomic against forks racing the sweep; a /proc scan
	 * is only used when there is someone to spare. */
	if (nspare == 0) {
		sweep_everyone();
		return !st->children;
	}
	killed = sweep_sparing(spare, nspare);
	if (killed >= 0)
		return killed == 0;
	if (!reported) {
		reported = true;
		diag("sweep: cannot read /proc (%s); interpreters die with "
		     "everything else", strerror(errno));
	}
	sweep_everyone();
	return !st->children;
}
