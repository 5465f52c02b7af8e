#include "bulkhead.h"
#include "internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

Test(tiers, names_round_trip_in_order_weakest_first)
{
	const char *names[] = {"none", "process", "container", "kernel", "vm"};
	for (int i = 0; i < 5; i++) {
		enum bh_tier t;
		cr_assert_eq(bh_tier_parse(names[i], &t), 0);
		cr_assert_eq((int)t, i);
		cr_assert_str_eq(bh_tier_name(t), names[i]);
	}
}

Test(tiers, unknown_names_are_rejected)
{
	enum bh_tier t = BH_TIER_VM;
	cr_assert_eq(bh_tier_parse("microvm", &t), -1);
	cr_assert_eq(bh_tier_parse("", &t), -1);
	cr_assert_eq(bh_tier_parse(NULL, &t), -1);
	cr_assert_str_eq(bh_tier_name(BH_TIER_UNKNOWN), "unknown");
}

Test(tiers, a_floor_is_met_only_by_that_tier_or_stronger)
{
	cr_assert(bh_tier_meets(BH_TIER_KERNEL, BH_TIER_CONTAINER));
	cr_assert(bh_tier_meets(BH_TIER_CONTAINER, BH_TIER_CONTAINER));
	cr_assert_not(bh_tier_meets(BH_TIER_CONTAINER, BH_TIER_KERNEL));
	cr_assert_not(bh_tier_meets(BH_TIER_KERNEL, BH_TIER_VM));
	cr_assert(bh_tier_meets(BH_TIER_CONTAINER, BH_TIER_UNKNOWN), "no floor: anything known");
	cr_assert_not(bh_tier_meets(BH_TIER_UNKNOWN, BH_TIER_NONE), "unknown meets nothing");
}

Test(errors, refusals_carry_their_reason_and_a_readable_message)
{
	bh_error *err = NULL;
	cr_assert_eq(bh_refuse(&err, BH_REFUSAL_ISOLATION, "the floor %s is above %s", "kernel",
			       "container"),
		     -1);
	cr_assert_eq(err->code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(err->refusal, BH_REFUSAL_ISOLATION);
	cr_assert_str_eq(bh_refusal_name(err->refusal), "isolation");
	cr_assert_str_eq(err->msg, "the floor kernel is above container");
	bh_error_wrap(err, "open %s", "sandbox");
	cr_assert_str_eq(err->msg, "open sandbox: the floor kernel is above container");
	bh_error_free(err);
}

Test(errors, system_errors_name_the_errno)
{
	bh_error *err = NULL;
	bh_fail(&err, BH_E_SYSTEM, ENOENT, "open %s", "/nope");
	cr_assert_str_eq(err->msg, "open /nope: No such file or directory");
	cr_assert_eq(err->sys_errno, ENOENT);
	bh_error_free(err);
	cr_assert_eq(bh_fail(NULL, BH_E_SYSTEM, 0, "ignored"), -1, "a NULL err is allowed");
}
