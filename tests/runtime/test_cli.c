/* The bulkhead command as an operator types it. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char state[256];

static void setup(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	root = root && *root ? root : "/tmp/bulkhead-tests";
	mkdir(root, 0711);
	snprintf(state, sizeof state, "%s/cli-XXXXXX", root);
	cr_assert_not_null(mkdtemp(state));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
	cr_assert_eq(system(cmd), 0);
}

Test(cli, run_prints_the_programs_output_then_the_outcome, .init = setup, .fini = teardown)
{
	char out[8192];
	const char *tiers[] = {"container", "kernel"};
	for (int i = 0; i < 2; i++) {
		int rc = harness_sh_into(out, sizeof out, "%s run --state %s --tier %s 'print(1+1)' 2>&1", BH_TEST_CLI,
			    state, tiers[i]);
		cr_assert_eq(rc, 0, "%s", out);
		cr_assert_eq(strncmp(out, "2\n", 2), 0, "%s", out);
		char want[64];
		snprintf(want, sizeof want, "exit=0 timed_out=no stdout_truncated=no");
		cr_assert_not_null(strstr(out, want), "%s", out);
		snprintf(want, sizeof want, "tier=%s", tiers[i]);
		cr_assert_not_null(strstr(out, want), "%s", out);
		rc = harness_sh_into(out, sizeof out, "%s run --state %s --tier %s --lang javascript 'console.log(1+1)' 2>/dev/null",
			BH_TEST_CLI, state, tiers[i]);
		cr_assert_eq(rc, 0);
		cr_assert_str_eq(out, "2\n");
	}
}

Test(cli, run_exits_with_the_programs_status_and_refusals_say_nothing_ran, .init = setup,
     .fini = teardown)
{
	char out[8192];
	int rc = harness_sh_into(out, sizeof out, "%s run --state %s --tier container 'raise SystemExit(3)' 2>&1",
		    BH_TEST_CLI, state);
	cr_assert_eq(rc, 3, "%s", out);
	rc = harness_sh_into(out, sizeof out, "%s run --state %s --tier container --floor kernel 'print(1)' 2>&1",
		BH_TEST_CLI, state);
	cr_assert_eq(rc, 125, "%s", out);
	cr_assert_not_null(strstr(out, "Nothing ran (isolation): the floor kernel is above the container tier"),
			   "%s", out);
	rc = harness_sh_into(out, sizeof out, "%s run --state %s --lang cobol 'x' 2>&1", BH_TEST_CLI, state);
	cr_assert_eq(rc, 2);
	cr_assert_not_null(strstr(out, "--lang needs python or javascript"), "%s", out);
}

Test(cli, doctor_shows_both_tiers_offered_and_vm_unavailable, .init = setup, .fini = teardown)
{
	static char out[65536];
	int rc = harness_sh_into(out, sizeof out, "%s doctor --state %s 2>&1", BH_TEST_CLI, state);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "container offered  (crun"), "%s", out);
	cr_assert_not_null(strstr(out, "kernel    offered  (runsc"), "%s", out);
	cr_assert_not_null(strstr(out, "vm        not offered"), "%s", out);
	cr_assert_not_null(strstr(out, "ok   Seccomp mode                 2"), "%s", out);
	rc = harness_sh_into(out, sizeof out, "%s doctor --json --state %s 2>/dev/null", BH_TEST_CLI, state);
	cr_assert_eq(rc, 0);
	cr_assert_not_null(strstr(out, "\"strongestTier\":\t\"kernel\""), "%s", out);
}

Test(cli, a_second_engine_on_a_held_state_directory_is_told_who_holds_it, .init = setup,
     .fini = teardown)
{
	char out[4096];
	/* Hold the lock from a shell for a moment with flock(1). */
	int rc = harness_sh_into(out, sizeof out,
		    "flock %s/lock -c 'sleep 3' & sleep 0.5; %s run --state %s 'print(1)' 2>&1; "
		    "rc=$?; wait; exit $rc",
		    state, BH_TEST_CLI, state);
	cr_assert_eq(rc, 125, "%s", out);
	cr_assert_not_null(strstr(out, "is held by another engine"), "%s", out);
	cr_assert_null(strstr(out, "1\n"), "it ran anyway: %s", out);
}
