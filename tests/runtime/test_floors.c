/* A floor the tier does not meet is refused before anything is created. */
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>

static struct harness h;
static void setup(void) { harness_open(&h, NULL); }
static void teardown(void) { harness_close(&h); }

Test(floors, a_kernel_floor_on_the_container_tier_creates_nothing, .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	char *runtime_before = harness_runtime_list(&h);
	char *cgroups_before = harness_cgroup_list(&h);
	char *bundles = NULL;
	static const char *const argv[] = {"/bin/sh", "-c", "echo ran > /work/ran", NULL};
	struct run_result *r =
		harness_exec(&h, BH_TIER_CONTAINER, BH_TIER_KERNEL, argv, NULL, 0, 0);
	cr_assert_not(r->answered, "it ran");
	cr_assert_eq(r->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(r->refusal, BH_REFUSAL_ISOLATION);
	cr_assert_str_eq(r->err_msg, "the floor kernel is above the container tier");
	cr_assert_eq(bh_engine_live_sandboxes(h.e), 0);
	char *runtime_after = harness_runtime_list(&h);
	char *cgroups_after = harness_cgroup_list(&h);
	cr_assert_str_eq(runtime_after, runtime_before, "the runtime list changed");
	cr_assert_str_eq(cgroups_after, cgroups_before, "the cgroups changed");
	free(runtime_before), free(runtime_after), free(cgroups_before), free(cgroups_after);
	(void)bundles;
	run_result_free(r);
}

Test(floors, a_floor_at_or_below_the_tier_runs, .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	static const char *const argv[] = {"/bin/echo", "ran", NULL};
	struct run_result *r =
		harness_exec(&h, BH_TIER_CONTAINER, BH_TIER_CONTAINER, argv, NULL, 0, 0);
	cr_assert(r->answered, "%s", r->err_msg ? r->err_msg : "");
	cr_assert_str_eq(r->out, "ran\n");
	run_result_free(r);
}

Test(floors, the_vm_floor_is_refused_on_every_tier_here, .init = setup, .fini = teardown)
{
	static const char *const argv[] = {"/bin/true", NULL};
	struct run_result *r = harness_exec(&h, BH_TIER_UNKNOWN, BH_TIER_VM, argv, NULL, 0, 0);
	cr_assert_not(r->answered);
	cr_assert_eq(r->refusal, BH_REFUSAL_ISOLATION, "%s", r->err_msg);
	run_result_free(r);
}

Test(floors, bad_requests_are_refused_with_the_problem_named, .init = setup, .fini = teardown)
{
	static const char *const relative[] = {"python3", NULL};
	struct run_result *r = harness_exec(&h, BH_TIER_UNKNOWN, BH_TIER_UNKNOWN, relative, NULL, 0, 0);
	cr_assert_eq(r->refusal, BH_REFUSAL_REQUEST);
	cr_assert_not_null(strstr(r->err_msg, "absolute path"), "%s", r->err_msg);
	run_result_free(r);
	static const char *const ok[] = {"/bin/true", NULL};
	r = harness_exec(&h, BH_TIER_UNKNOWN, BH_TIER_UNKNOWN, ok, NULL, 10u * 60u * 1000u, 0);
	cr_assert_eq(r->refusal, BH_REFUSAL_REQUEST);
	cr_assert_not_null(strstr(r->err_msg, "timeout"), "%s", r->err_msg);
	run_result_free(r);
}
