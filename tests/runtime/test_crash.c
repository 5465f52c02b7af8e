/* kill -9 of the process that owns an engine, at named points: the next
 * engine on the same state directory leaves nothing running, ends the dead
 * engine's sessions as reaped, and keeps every record that was returned. */
#include "harness.h"
#include "record.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct harness h;
static char state[4096];
static char cg_parent[256];

static void setup(void)
{
	harness_open(&h, NULL); /* makes the directory and proves (cached) */
	snprintf(state, sizeof state, "%s", h.state_dir);
	snprintf(cg_parent, sizeof cg_parent, "%s", bh_engine_cgroup_parent(h.e));
	bh_engine_close(h.e);   /* the child will own it */
	h.e = NULL;
}

static void teardown(void)
{
	harness_close(&h);
}

/* In the child: open a session and run cells until the crash hook fires,
 * writing each returned record's digest to fd. */
static void child(int fd, enum bh_tier tier, const char *crash_at)
{
	struct harness c = {0};
	harness_open_at(&c, state, crash_at);
	bh_session *s = harness_session(&c, tier, 1u << BH_LANG_PYTHON);
	for (int i = 0; i < 10; i++) {
		struct cell_outcome *o = harness_cell(&c, s, BH_LANG_PYTHON, "x = 1; x", 0);
		if (o->answered) {
			char line[80];
			int n = snprintf(line, sizeof line, "%s\n", o->record_sha256);
			if (write(fd, line, (size_t)n) != n)
				_exit(3);
		}
		cell_outcome_free(o);
	}
	_exit(0); /* the hook should have fired long before */
}

static void crash_and_restart(enum bh_tier tier, const char *crash_at)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		child(p[1], tier, crash_at);
	}
	close(p[1]);
	char returned[8192] = "";
	size_t len = 0;
	ssize_t r;
	while ((r = read(p[0], returned + len, sizeof returned - 1 - len)) > 0)
		len += (size_t)r;
	returned[len] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the engine was not killed at %s (status %d)",
		  crash_at, st);

	/* A new engine on the same directory. */
	harness_open_at(&h, state, NULL);
	char *containers = harness_runtime_list(&h);
	char *cgroups = harness_cgroup_list(&h);
	cr_assert_str_empty(containers, "containers left after %s: %s", crash_at, containers);
	cr_assert_str_empty(cgroups, "cgroups left after %s: %s", crash_at, cgroups);
	free(containers), free(cgroups);
	char out[65536];
	/* "[/]tmp/…" matches the path but not this shell's own command line. */
	harness_sh_into(out, sizeof out, "grep -l -s -E -- '[%c]%s/' /proc/[0-9]*/cmdline || true", state[0], state + 1);
	cr_assert_str_empty(out, "processes of the dead engine's sandboxes remain: %s", out);
	harness_sh_into(out, sizeof out, "sqlite3 '%s' \"SELECT state || ':' || end_reason FROM sessions\"",
	   bh_engine_store_path(h.e));
	cr_assert_str_eq(out, "ended:reaped\n", "after %s: %s", crash_at, out);
	for (char *save = NULL, *d = strtok_r(returned, "\n", &save); d; d = strtok_r(NULL, "\n", &save)) {
		harness_sh_into(out, sizeof out, "sqlite3 '%s' \"SELECT count(*) FROM records WHERE record_sha256 = '%s'\"",
		   bh_engine_store_path(h.e), d);
		cr_assert_str_eq(out, "1\n", "returned record %s is not in the store after %s", d, crash_at);
	}
	harness_sh_into(out, sizeof out, "sqlite3 '%s' 'PRAGMA quick_check'", bh_engine_store_path(h.e));
	cr_assert_str_eq(out, "ok\n");
}

Test(crash, killed_while_opening_a_sandbox, .init = setup, .fini = teardown)
{
	crash_and_restart(BH_TIER_CONTAINER, "open:1");
}

Test(crash, killed_during_a_cell, .init = setup, .fini = teardown)
{
	crash_and_restart(BH_TIER_CONTAINER, "cell:3");
}

Test(crash, killed_right_after_a_records_commit, .init = setup, .fini = teardown)
{
	crash_and_restart(BH_TIER_CONTAINER, "commit:4");
}

Test(crash, killed_during_a_cell_in_the_kernel_tier, .init = setup, .fini = teardown)
{
	crash_and_restart(BH_TIER_KERNEL, "cell:2");
}

/* A worker killed while its sandboxes sleep: a paused one is frozen and
 * cannot see its channel close, so the next engine must thaw and kill it. */
static void crash_while_paused(enum bh_tier tier)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct harness c;
		memset(&c, 0, sizeof c);
		c.policy.idle_ms = 500;
		c.policy.hibernate_after_ms = 600000;
		harness_open_at(&c, state, NULL);
		c.policy = (struct bh_policy){0};
		bh_session *s = harness_session(&c, tier, 1u << BH_LANG_PYTHON);
		cell_outcome_free(harness_cell(&c, s, BH_LANG_PYTHON, "x = 1", 0));
		bool never = false;
		bh_engine_wait(c.e, &never, 1500, NULL);
		struct bh_session_info info;
		bh_session_get_info(s, &info);
		if (info.state != BH_SESSION_PAUSED)
			_exit(4);
		raise(SIGKILL);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st), "the worker did not reach a paused sandbox (status %d)", st);
	harness_open_at(&h, state, NULL);
	char *containers = harness_runtime_list(&h);
	char *cgroups = harness_cgroup_list(&h);
	cr_assert_str_empty(containers, "containers left: %s", containers);
	cr_assert_str_empty(cgroups, "cgroups left: %s", cgroups);
	free(containers), free(cgroups);
	char out[4096];
	harness_sh_into(out, sizeof out, "grep -l -s -E -- '[%c]%s/' /proc/[0-9]*/cmdline || true", state[0], state + 1);
	cr_assert_str_empty(out, "processes remain: %s", out);
	harness_sh_into(out, sizeof out, "sqlite3 '%s' \"SELECT state || ':' || end_reason FROM sessions\"",
	   bh_engine_store_path(h.e));
	cr_assert_str_eq(out, "ended:reaped\n");
}

Test(crash, killed_while_a_container_sandbox_is_paused, .init = setup, .fini = teardown)
{
	crash_while_paused(BH_TIER_CONTAINER);
}

Test(crash, killed_while_a_kernel_sandbox_is_paused, .init = setup, .fini = teardown)
{
	crash_while_paused(BH_TIER_KERNEL);
}

/* Processes left in the engine's cgroups (the pids hierarchy lists every
 * task of every sandbox, frozen or not). */
static int procs_below_parent(void)
{
	char out[65536];
	harness_sh_into(out, sizeof out, "cat /sys/fs/cgroup/pids%s/*/cgroup.procs 2>/dev/null | wc -l", cg_parent);
	return atoi(out);
}

/* The worker dies and no engine ever comes back: its warden still stops
 * every sandbox it left, the paused one included, and removes their cgroups
 * (a test's fresh state directory is never opened again to remove them). */
Test(crash, a_dead_engines_sandboxes_stop_and_their_cgroups_go_even_if_no_engine_starts_again,
     .init = setup, .fini = teardown)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		struct harness c;
		memset(&c, 0, sizeof c);
		c.policy.idle_ms = 500;
		c.policy.hibernate_after_ms = 600000;
		harness_open_at(&c, state, NULL);
		bh_session *sleeper = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		cell_outcome_free(harness_cell(&c, sleeper, BH_LANG_PYTHON, "x = 1", 0));
		bool never = false;
		bh_engine_wait(c.e, &never, 1500, NULL);
		bh_session *busy = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		bool done = false;
		struct cell_outcome *o = NULL;
		harness_cell_start(&c, busy, BH_LANG_PYTHON, "import time; time.sleep(60)", &done, &o, NULL);
		bh_engine_wait(c.e, &never, 500, NULL);
		struct bh_session_info info;
		bh_session_get_info(sleeper, &info);
		const char *name = bh_session_state_name(info.state);
		if (write(p[1], name, strlen(name)) < 0)
			_exit(3);
		raise(SIGKILL);
	}
	close(p[1]);
	char sleeper_state[32] = "";
	cr_assert_gt(read(p[0], sleeper_state, sizeof sleeper_state - 1), 0);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st), "the worker did not die as planned (status %d)", st);
	cr_assert_str_eq(sleeper_state, "paused");
	int left = -1;
	/* Stated slack: the warden wakes on the engine's pidfd, so this is
	 * milliseconds; 5 s allows for a loaded CI host. */
	for (int i = 0; i < 50 && (left = procs_below_parent()) > 0; i++)
		usleep(100 * 1000);
	cr_assert_eq(left, 0, "%d processes of the dead engine's sandboxes still run", left);
	char dirs[4096] = "";
	for (int i = 0; i < 50; i++, usleep(100 * 1000)) {
		/* Real cgroups only: under the hidden hybrid mount (a tmpfs of
		 * this process's namespace) crun's plain directories go with it. */
		harness_sh_into(dirs, sizeof dirs,
				"for d in /sys/fs/cgroup/*%s; do [ -d \"$d\" ] && "
				"[ \"$(stat -f -c %%T \"$d\")\" != tmpfs ] && echo \"$d\"; done; true",
				cg_parent);
		if (!dirs[0])
			break;
	}
	cr_assert_str_empty(dirs, "the dead engine's cgroups are still there: %s", dirs);
	/* The next engine then finds only stopped containers to delete. */
	harness_open_at(&h, state, NULL);
	char *containers = harness_runtime_list(&h);
	cr_assert_str_empty(containers, "containers left: %s", containers);
	free(containers);
}
