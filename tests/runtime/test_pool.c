/* The warm pool: sandboxes opened ahead of demand, interpreters started,
 * each handed to exactly one session and never reused, replaced when they
 * wait too long, and gone with the engine. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static void teardown(void) { harness_close(&h); }

static void open_pool(uint32_t size, uint32_t max_age_ms)
{
	struct bh_policy p = {.pool_size = size,
			      .pool_tiers = 1u << BH_TIER_CONTAINER,
			      .pool_max_age_ms = max_age_ms};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_CONTAINER);
}

static void run_for(int ms)
{
	bool never = false;
	bh_engine_wait(h.e, &never, ms, NULL);
}

static void wait_pool_ready(void)
{
	for (int i = 0; i < 300 && bh_engine_pool_ready(h.e, BH_TIER_CONTAINER) < 1; i++)
		run_for(50);
	cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 1, "the pool did not fill\n%s",
		     h.log);
}

static void info_of(bh_session *s, struct bh_session_info *i)
{
	bh_session_get_info(s, i);
}

Test(pool, a_session_gets_a_pooled_sandbox_that_no_other_session_ever_gets, .fini = teardown)
{
	open_pool(1, 0);
	char *before = harness_runtime_list(&h);
	cr_assert_neq(strlen(before), 0, "no pooled container runs");
	bh_session *a = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct bh_session_info ia;
	info_of(a, &ia);
	cr_assert(ia.from_pool, "the session did not take the pooled sandbox");
	cr_assert_not_null(strstr(before, ia.sandbox), "%s is not the pooled container (%s)",
			   ia.sandbox, before);
	struct cell_outcome *o = harness_cell(&h, a, BH_LANG_PYTHON, "x = 6 * 7\nprint(x)", 0);
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	cr_assert_str_eq(o->out, "42\n");
	cr_assert(o->r.interpreter_started, "the first cell is the interpreter's first");
	cell_outcome_free(o);
	o = harness_cell(&h, a, BH_LANG_JAVASCRIPT, "40 + 2", 0);
	cr_assert_str_eq(o->out, "42\n", "the pooled sandbox's node did not answer");
	cell_outcome_free(o);

	/* The pool refilled with another sandbox; the next session gets it. */
	wait_pool_ready();
	bh_session *b = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct bh_session_info ib;
	info_of(b, &ib);
	cr_assert(ib.from_pool);
	cr_assert_str_neq(ib.sandbox, ia.sandbox, "a pooled sandbox was handed out twice");
	o = harness_cell(&h, b, BH_LANG_PYTHON, "print('x' in globals())", 0);
	cr_assert_str_eq(o->out, "False\n", "the second session saw the first one's state");
	cell_outcome_free(o);
	free(before);

	/* A closed session's sandbox is deleted, not returned to the pool. */
	char last[65];
	harness_close_session(&h, a, last, NULL);
	run_for(500);
	char *after = harness_runtime_list(&h);
	cr_assert_null(strstr(after, ia.sandbox), "the closed session's container is back: %s",
		       after);
	free(after);
}

Test(pool, a_pooled_sandbox_unused_past_its_age_is_replaced, .fini = teardown)
{
	open_pool(1, 1500);
	char *first = harness_runtime_list(&h);
	run_for(3500);
	for (int i = 0; i < 100 && bh_engine_pool_ready(h.e, BH_TIER_CONTAINER) < 1; i++)
		run_for(50);
	char *now = harness_runtime_list(&h);
	cr_assert_neq(strlen(now), 0, "the pool was not refilled");
	cr_assert_str_neq(first, now, "the aged sandbox (%s) is still the pooled one", first);
	free(first);
	free(now);
}


Test(pool, closing_the_engine_deletes_its_pooled_sandboxes, .fini = teardown)
{
	open_pool(2, 0);
	char *pooled = harness_runtime_list(&h);
	cr_assert_neq(strlen(pooled), 0);
	free(pooled);
	char cmd[4096], cgcmd[4096];
	snprintf(cmd, sizeof cmd, "crun --root '%s' list -q 2>&1",
		 bh_engine_runtime_root(h.e, BH_TIER_CONTAINER));
	snprintf(cgcmd, sizeof cgcmd, "ls /sys/fs/cgroup/pids%s 2>/dev/null | grep bh- ; true",
		 bh_engine_cgroup_parent(h.e));
	bh_engine_close(h.e);
	h.e = NULL;
	cr_assert_str_empty(harness_sh("%s", cmd), "containers left after close: %s", harness_sh("%s", cmd));
	cr_assert_str_empty(harness_sh("%s", cgcmd), "cgroups left after close: %s", harness_sh("%s", cgcmd));
	h.policy.pool_size = 0;
	harness_open_at(&h, h.state_dir, NULL); /* so teardown removes the directory */
}
