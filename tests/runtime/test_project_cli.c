/* ---- project: `bulkhead run --project` as an operator types it: a
 * directory's files in /work, the steps' output, an artifact saved, the
 * exit status; and the record it leaves verifies. ---- */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char dir[256];

static void setup(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	root = root && *root ? root : "/tmp/bulkhead-tests";
	mkdir(root, 0711);
	snprintf(dir, sizeof dir, "%s/project-cli-XXXXXX", root);
	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0711); /* sandboxes pass through to their state below it */
	char out[4096];
	cr_assert_eq(harness_sh_into(out, sizeof out,
				     "mkdir -p %s/src/lib && printf 'print(open(\"lib/n.txt\").read().strip() * 2)' "
				     "> %s/src/main.py && printf '21' > %s/src/lib/n.txt",
				     dir, dir, dir),
		     0, "%s", out);
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(project_cli, run_project_shows_each_step_saves_the_artifact_and_exits_with_the_last_status,
     .init = setup, .fini = teardown)
{
	char out[8192];
	const char *tiers[] = {"container", "kernel"};
	for (int i = 0; i < 2; i++) {
		int rc = harness_sh_into(out, sizeof out,
					 "%s run --state %s/state-%s --tier %s --project %s/src "
					 "--step 'python3 main.py > out.txt' --step 'cat out.txt' "
					 "--artifact out.txt --save-artifacts %s/saved-%s 2>&1",
					 BH_TEST_CLI, dir, tiers[i], tiers[i], dir, dir, tiers[i]);
		cr_assert_eq(rc, 0, "%s", out);
		cr_assert_not_null(strstr(out, "2121\n"), "%s", out);
		cr_assert_not_null(strstr(out, "bulkhead: step 2 exit=0 timed_out=no"), "%s", out);
		cr_assert_not_null(strstr(out, "bulkhead: artifact out.txt (5 bytes)"), "%s", out);
		char want[64];
		snprintf(want, sizeof want, "outcome=completed artifacts_truncated=no tier=%s", tiers[i]);
		cr_assert_not_null(strstr(out, want), "%s", out);
		rc = harness_sh_into(out, sizeof out, "cat %s/saved-%s/out.txt", dir, tiers[i]);
		cr_assert_eq(rc, 0);
		cr_assert_str_eq(out, "2121\n");
		rc = harness_sh_into(out, sizeof out, "%s verify --state %s/state-%s 2>&1", BH_TEST_CLI, dir,
				     tiers[i]);
		cr_assert_eq(rc, 0, "%s", out);
		cr_assert_not_null(strstr(out, "1 records verified"), "%s", out);
	}
	/* A failing step's status is the command's; the steps after it never run. */
	int rc = harness_sh_into(out, sizeof out,
				 "%s run --state %s/state-container --tier container --project %s/src "
				 "--step 'exit 7' --step 'echo never' 2>&1",
				 BH_TEST_CLI, dir, dir);
	cr_assert_eq(rc, 7, "%s", out);
	cr_assert_null(strstr(out, "never\n"), "%s", out);
	cr_assert_not_null(strstr(out, "outcome=completed"), "%s", out);
}
