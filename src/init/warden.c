/* The warden outlives its engine on purpose. An engine that dies without
 * closing its sandboxes (kill -9, OOM, a crash) would leave them running,
 * and paused ones frozen, until some later engine or `bulkhead gc` came by —
 * which may be never. The warden waits on the engine's pidfd; when the
 * engine is gone it kills every process left in the engine's cgroups
 * (thawing paused ones so the kill lands), removes those cgroups once they
 * are empty, and exits. Hibernated sandboxes
 * have no processes: their images wait for the next engine or for gc.
 *
 * It steps aside when a new engine already holds the state directory: that
 * engine reaps (or re-adopts) what is left itself, and its own sandboxes
 * live under the same cgroup parent. While the warden kills it holds the
 * state directory's lock, so no new engine starts sandboxes under its feet.
 *
 * It lives in this binary because the engine always knows where this
 * binary is, and it needs nothing but system calls. */
#include "warden.h"

#include "base.h"
#include "invocation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>

#define KILL_BUDGET_MS 10000
/* Killed processes leave their cgroups once reaped, in a few ms; a cgroup
 * still busy after this is left (gc finds it) rather than keeping the lock
 * from the next engine. */
#define REMOVE_BUDGET_MS 1000

static bool is_cgroup_fs(const char *path)
{
	struct statfs sf;
	if (statfs(path, &sf) < 0)
		return false;
	/* The engine hides the hybrid cgroup2 mount and crun then writes plain
	 * files under it: pids listed there are stale and must never be killed. */
	return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
}

static void write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t w = write(fd, v, strlen(v));
	(void)w;
	close(fd);
}

/* Kills every process listed in one leaf cgroup; returns how many it saw. */
static int kill_leaf(const char *leaf)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/cgroup.procs", leaf);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int seen = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
			seen++;
	}
	fclose(f);
	/* A frozen process takes the SIGKILL only once it is thawed. */
	snprintf(path, sizeof path, "%s/freezer.state", leaf);
	write_str(path, "THAWED");
	snprintf(path, sizeof path, "%s/cgroup.freeze", leaf);
	write_str(path, "0");
	return seen;
}

/* What one pass does to each of the engine's leaf cgroups. */
enum pass_step { PASS_KILL, PASS_REMOVE };

/* One pass over the engine's parent in every hierarchy: kill what each leaf
 * holds (returns how many processes it saw), or remove the leaves and the
 * parent (returns how many directories stayed: a process not yet reaped
 * keeps its cgroup busy). */
static int tree_pass(const char *parent, enum pass_step step)
{
	int seen = 0;
	char base[PATH_MAX / 2];
	DIR *root = opendir(BH_CGROUP_ROOT);
	if (!root)
		return 0;
	bool v2 = is_cgroup_fs(BH_CGROUP_ROOT) && !is_cgroup_fs(BH_CGROUP_ROOT "/memory");
	struct dirent *h;
	while ((h = readdir(root))) {
		if (h->d_name[0] == '.')
			continue;
		if (v2)
			snprintf(base, sizeof base, BH_CGROUP_ROOT "%s", parent);
		else
			snprintf(base, sizeof base, BH_CGROUP_ROOT "/%s%s", h->d_name, parent);
		if (!is_cgroup_fs(base))
			goto next;
		DIR *d = opendir(base);
		if (!d)
			goto next;
		struct dirent *l;
		while ((l = readdir(d))) {
			if (l->d_name[0] == '.' || l->d_type != DT_DIR)
				continue;
			char leaf[PATH_MAX];
			if (snprintf(leaf, sizeof leaf, "%s/%s", base, l->d_name) >= (int)sizeof leaf)
				continue;
			if (step == PASS_KILL)
				seen += kill_leaf(leaf);
			else if (rmdir(leaf) < 0 && errno != ENOENT)
				seen++;
		}
		closedir(d);
		if (step == PASS_REMOVE && rmdir(base) < 0 && errno != ENOENT)
			seen++;
next:
		if (v2)
			break;
	}
	closedir(root);
	return seen;
}

int bh_warden_main(int argc, char **argv)
{
	if (argc != BH_WARDEN_ARGC) {
		fprintf(stderr, "usage: bulkhead-init --warden ENGINE_PID LOCK_PATH CGROUP_PARENT\n");
		return 2;
	}
	char *end;
	long engine = strtol(argv[BH_WARDEN_ARG_ENGINE_PID], &end, 10);
	const char *lock_path = argv[BH_WARDEN_ARG_LOCK];
	const char *parent = argv[BH_WARDEN_ARG_CGROUP_PARENT];
	if (*end || engine <= 1 || strncmp(parent, "/bulkhead/", 10) || strstr(parent, "..")) {
		fprintf(stderr, "bulkhead-init --warden: bad arguments\n");
		return 2;
	}
	/* The engine may be gone already (then we are no longer its child). */
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)engine, 0);
	if (pidfd >= 0 && getppid() == (pid_t)engine) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	}
	if (pidfd >= 0)
		close(pidfd);

	int lock = open(lock_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC); /* the engine's own file */
	if (lock < 0)
		return 0;
	/* The lock may still be held for a moment by a child the engine forked
	 * just before it died (between fork and exec it shares the engine's
	 * descriptors; its PDEATHSIG is on the way). While the file still names
	 * the dead engine, that is who holds it: retry (the fault loop caught a
	 * warden giving up here after a kill inside open). A new engine writes
	 * its own pid once it holds the lock, and then reaps for itself. */
	uint64_t give_up = now_mono_ms() + 3000;
	while (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		char holder[32] = "";
		ssize_t hn = pread(lock, holder, sizeof holder - 1, 0);
		holder[hn > 0 ? hn : 0] = '\0';
		if (strtol(holder, NULL, 10) != engine || now_mono_ms() > give_up) {
			close(lock);
			return 0;
		}
		usleep(10 * 1000);
	}
	char me[32];
	int n = snprintf(me, sizeof me, "warden %d\n", (int)getpid());
	if (ftruncate(lock, 0) < 0 || pwrite(lock, me, (size_t)n, 0) < 0) {
		/* Only a courtesy to the next engine, which then waits less. */
	}
	uint64_t deadline = now_mono_ms() + KILL_BUDGET_MS;
	while (tree_pass(parent, PASS_KILL) > 0 && now_mono_ms() < deadline)
		usleep(20 * 1000);
	/* Then the empty cgroups go too, still under the lock: on a fresh
	 * state directory (every test's) no later engine would ever open this
	 * one's tree again to remove them. The runtimes' own records stay for
	 * the next engine or `bulkhead gc`. */
	uint64_t remove_by = now_mono_ms() + REMOVE_BUDGET_MS;
	while (tree_pass(parent, PASS_REMOVE) > 0 && now_mono_ms() < remove_by)
		usleep(20 * 1000);
	close(lock);
	return 0;
}
