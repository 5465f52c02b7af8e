/* report: what an operator's later `bulkhead gc` does with a dead engine's
 * leftovers that were kept as evidence, and a crash loop that keeps them.
 *
 * These hosts are cgroup v1 with an almost empty cgroup2 at
 * /sys/fs/cgroup/unified that every engine hides in its own mount
 * namespace (src/engine/cgroup.c); crun then makes its cgroup2 paths as
 * plain directories in the tmpfs below it, which only a view with the
 * mount hidden sees. After the gc nothing of the dead engine may be left
 * anywhere: not in the runtime's list, not as crun's state directory, not
 * as a v1 cgroup, not as a directory below the hidden mount. */
#include "daemon_leftovers.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct daemon d;
static struct dead_daemon dd;

/* The container tier: crun's state directories and cgroup2 paths. */
static void start(void)
{
	daemon_start(&d, "--tier container");
}

static void stop(void)
{
	daemon_stop(&d);
	memset(&dd, 0, sizeof dd);
}

static char *cli(int *status, const char *args)
{
	return dead_daemon_cli(status, NULL, args);
}

/* Everything of the engine's on the host, one line each (caller frees):
 * its containers and crun's state directories, its v1 cgroups and the
 * directories below the hidden cgroup2 mount. */
static char *traces(const struct dead_daemon *x)
{
	return strdup(harness_sh(
		"for r in '%s'/run/*; do [ -d \"$r\" ] || continue; "
		"  ls \"$r\" | sed \"s|^|state-dir ${r##*/} |\"; done; "
		"find /sys/fs/cgroup/*%s -mindepth 1 -maxdepth 1 -type d 2>/dev/null | "
		"  sed 's|^|cgroup |'; "
		"unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null && "
		"  find /sys/fs/cgroup/unified%s -mindepth 1 -maxdepth 1 -type d 2>/dev/null' | "
		"  sed 's|^|hidden-cgroup-dir |'; true",
		x->state, x->cgroup_parent, x->cgroup_parent));
}

static void has(const char *text, const char *want)
{
	cr_assert_not_null(strstr(text, want), "no \"%s\" in:\n%s", want, text);
}

Test(kept_leftovers, a_later_gc_of_a_dead_engines_kept_sandboxes_removes_crun_state_and_every_cgroup_even_below_the_hidden_mount,
     .init = start, .fini = stop)
{
	daemon_kill_with_leftovers(&d, &dd);
	char *before = traces(&dd);
	/* The evidence is there to be seen first. */
	char want[256];
	snprintf(want, sizeof want, "state-dir crun %s", dd.paused_sandbox);
	has(before, want);
	snprintf(want, sizeof want, "/memory%s/%s", dd.cgroup_parent, dd.paused_sandbox);
	has(before, want);
	/* On a hybrid host crun's cgroup2 paths are below the hidden mount. */
	if (!strcmp(harness_sh("stat -fc %%T /sys/fs/cgroup/unified 2>/dev/null"), "cgroup2fs\n")) {
		snprintf(want, sizeof want, "hidden-cgroup-dir /sys/fs/cgroup/unified%s/%s",
			 dd.cgroup_parent, dd.paused_sandbox);
		has(before, want);
	}
	int st;
	char args[8192];
	snprintf(args, sizeof args, "gc --no-attach --state '%s'", dd.state);
	char *out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	has(out, dd.paused_sandbox);
	free(out);
	char *after = traces(&dd);
	cr_assert_str_empty(after, "the gc left these of the dead engine (before it:\n%s):\n%s", before,
			    after);
	free(before);
	free(after);
	/* And nothing is found any more. */
	snprintf(args, sizeof args, "leaks --no-attach --state '%s'", dd.state);
	out = cli(&st, args);
	cr_assert_eq(st, 0, "leaks still finds something after the gc: %s", out);
	free(out);
}

/* A crash loop: the daemon killed four times on one directory, each restart
 * keeping what the dead one left. The fifth engine keeps the leftovers of
 * the BH_LEFTOVERS_KEPT_ENGINES (3) newest dead engines as they are; the
 * oldest's paused sandbox is captured into STATE/captures/ — a folder whose
 * MANIFEST verifies — and then reaped, its row ended with the reap's event. */
Test(kept_leftovers, a_crash_loop_keeps_the_three_newest_dead_engines_leftovers_and_captures_then_reaps_older_ones,
     .init = start, .fini = stop)
{
	struct dead_daemon turn[BH_LEFTOVERS_KEPT_ENGINES + 1];
	size_t turns = sizeof turn / sizeof turn[0];
	for (size_t i = 0; i < turns; i++) {
		if (i)
			daemon_restart(&d, "--tier container");
		daemon_kill_holding_a_paused_sandbox(&d, &turn[i]);
	}
	daemon_restart(&d, "--tier container");
	char *host = dead_daemon_host(&turn[0]);
	cr_assert_null(strstr(host, turn[0].paused_sandbox),
		       "the oldest dead engine's sandbox is still kept:\n%s", host);
	for (size_t i = 1; i < turns; i++) {
		char row[128];
		snprintf(row, sizeof row, "%s paused", turn[i].paused_sandbox);
		cr_assert_not_null(strstr(host, row), "turn %zu's sandbox was not kept:\n%s", i, host);
	}
	free(host);
	char out[8192];
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT state FROM sessions WHERE "
			"fingerprint = '%s'; SELECT count(*) FROM events WHERE kind = 'leak_reaped' AND "
			"session = '%s'; SELECT count(*) FROM sessions WHERE state = 'paused'\"",
			turn[0].state, turn[0].paused_fp, turn[0].paused_fp);
	cr_assert_str_eq(out, "ended\n1\n3\n", "the oldest row, its reap's event, the kept ones:\n%s",
			 out);
	/* Its evidence, captured before the reap, verifies. */
	harness_sh_into(out, sizeof out, "ls -d '%s/%s'/engine-*-%s-* 2>&1", turn[0].state,
			BH_LEFTOVERS_CAPTURES, turn[0].paused_sandbox);
	out[strcspn(out, "\n")] = '\0';
	cr_assert(out[0] == '/', "no capture of the reaped sandbox: %s", out);
	int st;
	char args[8400];
	snprintf(args, sizeof args, "capture --verify '%s'", out);
	char *said = cli(&st, args);
	cr_assert_eq(st, 0, "%s", said);
	has(said, " verifies: ");
	free(said);
	char procs[8300];
	snprintf(procs, sizeof procs, "%s/usage.txt", out);
	char *usage = harness_slurp(procs);
	cr_assert_not_null(usage, "the capture holds no usage.txt");
	has(usage, "FROZEN");
	free(usage);
}
