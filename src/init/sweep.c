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
#include "base.h"

/* Victims collected per /proc pass before they are signalled; a pass that
 * fills the batch just means another pass follows. */
#define SWEEP_BATCH 1024
#define MAX_SPARED (NLANG + MAX_FSOPS)
/* How many killed pids one sweep remembers; past that, a listed pid it
 * killed counts as new (which can only make it give up sparing sooner). */
#define SWEEP_KILLED_MAX 4096

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

/* Whether a listed pid can still run code. A zombie is dead: it only
 * waits for its parent (the init, or a live interpreter that has not
 * collected its subprocess yet), and counting it as alive would make the
 * sweep wait for a reap that is not ours. But "Z" in a process's own stat
 * only says its main thread is gone: a process whose main thread exited
 * runs on in its other threads (num_threads counts them, the zombie leader
 * included), so only a zombie with no thread but itself is dead. A pid
 * whose stat is gone or unreadable (it was reaped meanwhile) is dead too;
 * one whose stat makes no sense is taken as alive and signalled again. */
static bool is_dead(pid_t pid)
{
	char path[32], buf[512];
	cleanup_close int fd = -1;
	const char *rp;
	char state;
	long threads = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n == 0 || errno == ESRCH;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses,
	 * the fields after it never do. num_threads is the 18th of them. */
	rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return false;
	state = rp[2];
	if (state != 'Z' && state != 'X' && state != 'x')
		return false;
	rp += 2;
	for (int field = 0; field < 17 && rp; field++)
		rp = strchr(rp + 1, ' ');
	if (rp)
		threads = strtol(rp + 1, NULL, 10);
	return threads <= 1;
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

/* Processes this sweep has sent SIGKILL to: one still listed is dying,
 * not new. Within one sweep (a second at most) a pid is not reused: the
 * namespace would have to run through its whole pid space first. */
static struct {
	pid_t pid[SWEEP_KILLED_MAX];
	size_t n;
} killed;

/* The dead (zombies) the last pass listed, kept from sweep to sweep: an
 * interpreter's subprocess stays a zombie until the interpreter waits for
 * it, and only a pid that died since the last pass is news. */
static struct {
	pid_t pid[SWEEP_BATCH];
	size_t n;
} dead_seen, dead_now;

static bool among(const pid_t *set, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

struct pass_count {
	int fresh; /* alive and not signalled by this sweep before, or died
		    * since the last pass (it may have forked first) */
	int dying; /* signalled before, not dead yet */
};

/* One pass that spares some: every process /proc lists that is not spared
 * and can still run is killed. The listing is a snapshot, and a process
 * that forks and exits in a tight loop is listed alive and found dead an
 * instant later, its child already born: so a pass counts every pid that
 * is alive, or that died since the last pass, and only a pass that counts
 * nobody means nothing is left. A process that forks faster than passes
 * come keeps them counting; the caller gives up sparing then.
 *
 * (Stopping everyone first with kill(-1, SIGSTOP) would make the snapshot
 * exact, but gVisor 20221219 answers a member leaving a process group in
 * which another member is stopped with SIGHUP and SIGCONT to the whole
 * group, and the interpreter's group is always "orphaned" there: the
 * interpreters died of it.)
 *
 * Collect-then-kill: gVisor's procfs is not Linux's, and the result must
 * not depend on how a directory behaves while its entries disappear.
 * Returns -1 without /proc. */
static int sweep_sparing(const pid_t *spare, size_t nspare, struct pass_count *c)
{
	static pid_t victims[SWEEP_BATCH];
	DIR *d = proc_dir();
	struct dirent *e;
	size_t n = 0;

	*c = (struct pass_count){ 0 };
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
	dead_now.n = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_dead(victims[i])) {
			if (!among(dead_seen.pid, dead_seen.n, victims[i]))
				c->fresh++;
			dead_now.pid[dead_now.n++] = victims[i];
			continue;
		}
		if (among(killed.pid, killed.n, victims[i])) {
			c->dying++;
		} else {
			c->fresh++;
			if (killed.n < SWEEP_KILLED_MAX)
				killed.pid[killed.n++] = victims[i];
		}
		kill(victims[i], SIGKILL);
	}
	dead_seen = dead_now;
	/* A full batch may have left someone unlisted. */
	if (n == SWEEP_BATCH && c->fresh == 0)
		c->fresh = 1;
	return 0;
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

void sweep_begin(struct init *st)
{
	st->sweep_started = now_mono_ns();
	st->sweep_all = false;
	st->sweep_note = NULL;
	killed.n = 0;
}

/* Nothing a call left may live into the next one. When passes that spare
 * the interpreters cannot get there, the interpreters are given up: they
 * die with everything else (kill(-1) reaches everyone at once), and the
 * next cell starts fresh ones, told why. */
static void sweep_give_up_sparing(struct init *st, const char *note)
{
	st->sweep_note = note;
	for (int i = 0; i < NLANG; i++)
		if (interp_live(&st->interp[i]) && !st->interp[i].doomed)
			interp_kill(&st->interp[i]);
	st->sweep_all = true;
	sweep_everyone();
}

bool sweep_pass(struct init *st)
{
	static bool reported;
	pid_t spare[MAX_SPARED];
	size_t nspare = collect_spared(st, spare);
	struct pass_count c;

	if (nspare == 0 || st->sweep_all) {
		sweep_everyone();
		return !st->children;
	}
	if (sweep_sparing(spare, nspare, &c) < 0) {
		if (!reported) {
			reported = true;
			diag("sweep: cannot read /proc (%s); interpreters die with "
			     "everything else", strerror(errno));
		}
		sweep_give_up_sparing(st, "could not be spared: the sweep "
					  "cannot read /proc");
		return false;
	}
	/* Settled only when a pass found nobody alive and nobody dead since
	 * the last one: a pass that signalled nobody proves nothing while
	 * pids come and go. */
	if (c.fresh == 0 && c.dying == 0)
		return true;
	/* New ones after half a second: something forks faster than the
	 * passes kill (a chain), or a thread of user code in an interpreter
	 * keeps starting processes. Those merely slow to die (SIGKILLed,
	 * freeing their memory) are waited for within the caller's grace. */
	if (c.fresh > 0 && now_mono_ns() - st->sweep_started >= SWEEP_SPARING_MS * 1000000ull) {
		diag("sweep: new processes kept appearing for %d ms; stopping the "
		     "interpreters with everything else", SWEEP_SPARING_MS);
		sweep_give_up_sparing(st, "could not be spared: new processes "
					  "kept appearing after the call");
	}
	return false;
}
