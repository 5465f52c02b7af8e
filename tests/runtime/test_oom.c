/* Who the host's OOM killer picks: every process of a sandbox carries the
 * bundle's oomScoreAdj (500) whatever the engine's own score, on both tiers
 * (the daemon lowers its own; tests/daemon/test_oom.c). This host's root may
 * not go below 0 (no CAP_SYS_RESOURCE), so the engine's score is raised to
 * 200 here to tell an inherited value from a set one. */
#include "harness.h"
#include "util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;

static void teardown(void)
{
	harness_close(&h);
	harness_set_oom_score_adj(0);
}

/* "pid=adj ..." of every host process in the sandbox's memory cgroup. */
static size_t sandbox_scores(const char *sandbox, char *out, size_t n, int *worst_low)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t procs = 0, used = 0;
	*worst_low = 1000;
	out[0] = '\0';
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/%s/cgroup", de->d_name);
		char *cg = read_file(path, 65536, NULL);
		bool ours = cg && strstr(cg, sandbox);
		free(cg);
		if (!ours)
			continue;
		int adj = harness_oom_score_adj(de->d_name);
		if (adj == -10000)
			continue; /* gone meanwhile */
		procs++;
		if (adj < *worst_low)
			*worst_low = adj;
		used += (size_t)snprintf(out + used, used < n ? n - used : 0, "%s=%d ", de->d_name, adj);
	}
	if (d)
		closedir(d);
	return procs;
}

static void sandbox_processes_carry_the_bundles_score(enum bh_tier tier)
{
	harness_set_oom_score_adj(200);
	harness_open(&h, NULL);
	harness_require_tier(&h, tier);
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "import os; print(open('/proc/self/oom_score_adj').read().strip())", 0);
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	/* gVisor's /proc shows its Sentry's own bookkeeping (0) to user code. */
	if (tier == BH_TIER_CONTAINER)
		cr_assert_str_eq(o->out, "500\n", "user code sees %s", o->out);
	cell_outcome_free(o);
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	char scores[4096];
	int low;
	size_t n = sandbox_scores(i.sandbox, scores, sizeof scores, &low);
	/* crun: the init and the interpreter; runsc: its sandbox (the Sentry),
	 * the gofer and the ptrace stubs. */
	cr_assert_geq(n, 2, "%zu processes in %s's cgroup: %s", n, i.sandbox, scores);
	cr_assert_eq(low, 500, "a sandbox process has another score than the bundle's 500 (the "
			       "engine's is 200): %s",
		     scores);
}

Test(oom, container_sandbox_processes_carry_the_bundles_score_not_the_engines, .fini = teardown)
{
	sandbox_processes_carry_the_bundles_score(BH_TIER_CONTAINER);
}

Test(oom, kernel_sandbox_processes_carry_the_bundles_score_not_the_engines, .fini = teardown)
{
	sandbox_processes_carry_the_bundles_score(BH_TIER_KERNEL);
}
