/* A tier is offered only because its smoke test passed: take one wall away
 * and the same smoke test must fail and withdraw the tier. */
#include "harness.h"

#include <criterion/criterion.h>
#include <string.h>

static struct harness h;
static void teardown(void) { harness_close(&h); }

static const struct bh_tier_report *report(enum bh_tier tier)
{
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(h.e, &t);
	for (size_t i = 0; i < n; i++)
		if (t[i].tier == tier)
			return &t[i];
	return NULL;
}

static const struct bh_evidence_line *line(const struct bh_tier_report *r, const char *name)
{
	for (size_t i = 0; i < r->n_lines; i++)
		if (!strcmp(r->lines[i].name, name))
			return &r->lines[i];
	return NULL;
}

Test(smoke, both_tiers_are_proven_and_vm_is_refused_with_a_reason, .fini = teardown)
{
	harness_open(&h, NULL);
	const struct bh_tier_report *c = report(BH_TIER_CONTAINER), *k = report(BH_TIER_KERNEL),
				    *v = report(BH_TIER_VM);
	cr_assert(c->offered, "container: %s", c->reason);
	cr_assert(k->offered, "kernel: %s", k->reason);
	cr_assert_not(v->offered);
	cr_assert_neq(strlen(v->reason), 0);
	cr_assert_eq(bh_engine_best_tier(h.e), BH_TIER_KERNEL);
	cr_assert_str_eq(line(k, "kernel release inside")->value, "4.4.0");
	cr_assert_str_eq(line(c, "Seccomp mode")->value, "2");
}

static void assert_withdrawn_without(const char *wall, enum bh_tier tier, const char *check)
{
	harness_open(&h, wall);
	const struct bh_tier_report *r = report(tier);
	cr_assert_not(r->offered, "the %s tier is still offered without %s", bh_tier_name(tier),
		      wall);
	const struct bh_evidence_line *l = line(r, check);
	cr_assert_not_null(l, "no %s line; reason: %s", check, r->reason);
	cr_assert_not(l->ok, "%s still passes: %s", check, l->value);
	/* And a call for that tier is refused, not run. */
	static const char *const argv[] = {"/bin/true", NULL};
	struct run_result *res = harness_exec(&h, tier, BH_TIER_UNKNOWN, argv, NULL, 0, 0);
	cr_assert_not(res->answered);
	cr_assert_eq(res->err_code, BH_E_NOT_DISPATCHED);
	run_result_free(res);
}

Test(smoke, dropping_seccomp_fails_the_container_smoke_test, .fini = teardown)
{
	assert_withdrawn_without("seccomp", BH_TIER_CONTAINER, "Seccomp mode");
}

Test(smoke, dropping_seccomp_fails_the_kernel_smoke_test, .fini = teardown)
{
	assert_withdrawn_without("seccomp", BH_TIER_KERNEL, "unshare(CLONE_NEWUSER)");
}

Test(smoke, dropping_the_network_namespace_fails_the_container_smoke_test, .fini = teardown)
{
	assert_withdrawn_without("netns", BH_TIER_CONTAINER, "network interfaces");
}

/* The argument rules as they were before issue 14: all 64 bits compared and
 * anything unnamed allowed. The probe's high-bit forms must notice. */
Test(smoke, unmasked_argument_rules_fail_the_container_smoke_test, .fini = teardown)
{
	assert_withdrawn_without("seccomp-masks", BH_TIER_CONTAINER,
				 "socket(AF_VSOCK) with bit 32 set");
}

Test(smoke, unmasked_argument_rules_fail_the_kernel_smoke_test, .fini = teardown)
{
	assert_withdrawn_without("seccomp-masks", BH_TIER_KERNEL, "ioctl(TIOCSTI) with bit 32 set");
}

/* crun skips a profile name its libseccomp cannot resolve (a deny-list then
 * allows it); the bundle asks it to refuse the profile instead. */
Test(smoke, a_syscall_name_the_runtime_cannot_resolve_fails_the_container_smoke_test,
     .fini = teardown)
{
	harness_open(&h, "seccomp-unknown-name");
	const struct bh_tier_report *r = report(BH_TIER_CONTAINER);
	cr_assert_not(r->offered, "the container tier is still offered with an unknown name");
	cr_assert_not_null(strstr(r->reason, "bulkhead_no_such_syscall"), "reason: %s", r->reason);
}
