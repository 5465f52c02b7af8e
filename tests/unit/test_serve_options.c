/* `bulkhead serve` refuses a number it would otherwise misread ("8x" as 8,
 * "abc" as 0), naming the option, before it opens anything. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

/* Runs `bulkhead serve OPT VALUE` with a state directory and a clients file
 * that do not exist, so a value misread still serves nothing; returns its
 * exit status and its stderr in err. */
static int serve_with(const char *opt, const char *value, char *err, size_t errlen)
{
	return harness_sh_into(err, errlen,
			       "%s serve --state /nonexistent/bulkhead-serve-options --clients "
			       "/nonexistent/clients %s '%s' 2>&1 >/dev/null",
			       BH_TEST_CLI, opt, value);
}

/* serve refuses each of opts with each of bad as a usage error (2); with
 * by_name, naming the option too. */
static void each_refused(const char *const *opts, size_t nopts, const char *const *bad,
			 size_t nbad, bool by_name)
{
	for (size_t i = 0; i < nopts; i++)
		for (size_t j = 0; j < nbad; j++) {
			char err[4096];
			int rc = serve_with(opts[i], bad[j], err, sizeof err);
			cr_expect_eq(rc, 2, "serve %s '%s' exited %d, not 2 (usage): %s", opts[i],
				     bad[j], rc, err);
			if (by_name)
				cr_expect(strstr(err, opts[i]) != NULL,
					  "serve %s '%s' did not name the option: %s", opts[i],
					  bad[j], err);
		}
}

Test(serve_options, a_count_with_trailing_letters_or_no_digits_is_refused_by_name)
{
	static const char *const opts[] = {"--per-owner",     "--max-sessions",   "--per-principal",
					   "--per-peer",      "--session-disk",   "--min-free",
					   "--memory-budget", "--sandbox-memory", "--pool",
					   "--rate"};
	static const char *const bad[] = {"8x", "abc", "", "-3", "1e3", " 8"};
	each_refused(opts, sizeof opts / sizeof *opts, bad, sizeof bad / sizeof *bad, true);
}

Test(serve_options, a_count_past_its_range_is_refused)
{
	char err[4096];
	cr_expect_eq(serve_with("--sandbox-memory", "63", err, sizeof err), 2, "%s", err);
	cr_expect_eq(serve_with("--per-peer", "257", err, sizeof err), 2, "%s", err);
	cr_expect_eq(serve_with("--pool", "17", err, sizeof err), 2, "%s", err);
	cr_expect_eq(serve_with("--max-sessions", "99999999999", err, sizeof err), 2, "%s", err);
}

Test(serve_options, a_duration_without_digits_first_or_with_a_stray_unit_is_refused)
{
	static const char *const opts[] = {"--idle", "--hibernate-after", "--lifetime", "--retention",
					   "--drain", "--pool-age"};
	static const char *const bad[] = {"5x", "m", " 5m", "+5m", "5mm", "99999999999h", ""};
	each_refused(opts, sizeof opts / sizeof *opts, bad, sizeof bad / sizeof *bad, false);
}

/* ---- approvals ---- */
Test(serve_options, approval_takes_required_or_none_and_its_timeout_at_most_five_minutes)
{
	static const char *const policy[] = {"--approval"};
	static const char *const bad_policy[] = {"yes", "Required", "", "always"};
	each_refused(policy, 1, bad_policy, sizeof bad_policy / sizeof *bad_policy, true);
	static const char *const timeout[] = {"--approval-timeout"};
	static const char *const bad_timeout[] = {"0", "6m", "1h", "-1s", "5x", ""};
	each_refused(timeout, 1, bad_timeout, sizeof bad_timeout / sizeof *bad_timeout, true);
	static const char *const caps[] = {"--approval-cap", "--approval-cap-per-principal"};
	static const char *const bad_cap[] = {"0", "4097", "8x", ""};
	each_refused(caps, 2, bad_cap, sizeof bad_cap / sizeof *bad_cap, true);
	/* Good values pass the parser and fail later, on the missing clients file. */
	char err[4096];
	int rc = harness_sh_into(err, sizeof err,
				 "%s serve --state /nonexistent/bulkhead-serve-options --clients "
				 "/nonexistent/clients --approval required --approval-timeout 5m "
				 "--approval-cap 4096 2>&1 >/dev/null",
				 BH_TEST_CLI);
	cr_expect_neq(rc, 2, "good approval options were a usage error: %s", err);
}
