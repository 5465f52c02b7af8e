/* The daemon keeps itself out of the OOM killer's way: oom_score_adj -900,
 * or as low as the host lets it (this host's root lacks CAP_SYS_RESOURCE and
 * may not go below 0), saying so; its sandboxes stay at the bundle's 500
 * and its warden shares its score. The test starts the daemon at 200 so a
 * lowered score is visible either way. */
#include "daemon_harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;

static bool have_cap_sys_resource(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long eff = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "CapEff:", 7))
			eff = strtoull(line + 7, NULL, 16);
	if (f)
		fclose(f);
	return eff & (1ull << 24);
}

/* The i-th NUL-separated argument of a /proc/PID/cmdline, "" past the end. */
static const char *arg(const char *cmdline, int i)
{
	for (; i > 0 && *cmdline; i--)
		cmdline += strlen(cmdline) + 1;
	return cmdline;
}

static void stop(void)
{
	daemon_stop(&d);
	harness_set_oom_score_adj(0);
}

Test(daemon_oom, the_daemon_lowers_its_oom_score_and_its_sandboxes_keep_theirs, .fini = stop)
{
	harness_set_oom_score_adj(200);
	char err_log[4200], extra[4300];
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(err_log, sizeof err_log, "%s/serve-err-%d.log", root && *root ? root : "/tmp",
		 (int)getpid());
	snprintf(extra, sizeof extra, "2>'%s'", err_log);
	daemon_start(&d, extra);
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)d.pid);
	int adj = harness_oom_score_adj(pid);
	char *log = read_file(err_log, 65536, NULL);
	unlink(err_log);
	if (have_cap_sys_resource()) {
		cr_assert_eq(adj, -900, "the daemon's oom_score_adj is %d", adj);
	} else {
		cr_assert_eq(adj, 0, "the daemon's oom_score_adj is %d (started at 200)", adj);
		cr_assert(log && strstr(log, "cannot lower our oom_score_adj to -900") &&
				  strstr(log, "CAP_SYS_RESOURCE"),
			  "no warning that -900 was out of reach:\n%s", log ? log : "");
	}
	free(log);
	/* A session's sandbox (the kernel tier: runsc's Sentry, gofer and stubs). */
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	char state[PATH_MAX + 16], real[PATH_MAX], key[65], cgroup[64];
	snprintf(state, sizeof state, "%s/state", d.dir);
	cr_assert_not_null(realpath(state, real));
	sha256_hex(real, strlen(real), key);
	snprintf(cgroup, sizeof cgroup, "/bulkhead/%.12s/", key);
	DIR *p = opendir("/proc");
	struct dirent *de;
	size_t sandbox_procs = 0, wardens = 0;
	while ((de = readdir(p))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/%s/cgroup", de->d_name);
		char *cg = read_file(path, 65536, NULL);
		snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
		char *cmd = read_file(path, 65536, NULL);
		int a2 = harness_oom_score_adj(de->d_name);
		if (cg && strstr(cg, cgroup) && a2 != -10000) {
			sandbox_procs++;
			cr_assert_eq(a2, 500, "sandbox process %s (%s) has oom_score_adj %d", de->d_name,
				     cmd ? cmd : "?", a2);
		} else if (cmd && !strcmp(arg(cmd, 1), "--warden") && !strcmp(arg(cmd, 2), pid)) {
			wardens++;
			cr_assert_eq(a2, adj, "the warden has %d, the daemon %d", a2, adj);
		}
		free(cg);
		free(cmd);
	}
	closedir(p);
	cr_assert_geq(sandbox_procs, 2, "no sandbox process found under %s", cgroup);
	cr_assert_eq(wardens, 1);
}
