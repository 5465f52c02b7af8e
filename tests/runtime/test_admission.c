/* Admission: every new sandbox passes one rule, whoever asks for it. A
 * fresh call (bh_exec, the daemon's Run) holds a place and its memory like
 * a session; a principal at its cap is refused and another is not; the
 * warm pool counts against the budget, waits for room to refill and gives
 * way to a caller; a hibernated session is restored only when the budget
 * has room for it. Sandboxes here have the default 512 MiB limit, so a
 * 1024 MiB budget holds two. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static void teardown(void) { harness_close(&h); }

static void run_for(int ms)
{
	bool never = false;
	bh_engine_wait(h.e, &never, ms, NULL);
}

/* A fresh call that may wait: its outcome once it comes. */
struct call {
	bool done, answered;
	enum bh_refusal refusal;
	enum bh_error_code code;
	char msg[512];
	char out[256];
};

static void on_exec(void *arg, const struct bh_exec_result *r, const bh_error *err)
{
	struct call *c = arg;
	c->done = true;
	if (r) {
		c->answered = true;
		snprintf(c->out, sizeof c->out, "%.*s", (int)r->out_len, (const char *)r->out);
	} else {
		c->code = err->code;
		c->refusal = err->refusal;
		snprintf(c->msg, sizeof c->msg, "%s", err->msg);
	}
}

/* Starts `python3 -c code` in a fresh container sandbox for principal. */
static void start_exec(struct call *c, const char *principal, const char *code)
{
	static const char *argv[] = {"/usr/bin/python3", "-c", NULL, NULL};
	argv[2] = code;
	struct bh_exec_request req = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				      .argv = argv, .principal = principal};
	memset(c, 0, sizeof *c);
	bh_error *err = NULL;
	cr_assert_eq(bh_exec(h.e, &req, on_exec, c, &err), 0, "bh_exec: %s", err ? err->msg : "?");
}

static void wait_call(struct call *c)
{
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_wait(h.e, &c->done, 120000, &err), 0, "%s", err ? err->msg : "");
}

/* Waits (stated slack 60 s) until the call's sandbox is running. */
static void wait_running(size_t live)
{
	for (int i = 0; i < 600 && bh_engine_live_sandboxes(h.e) < live; i++)
		run_for(100);
	cr_assert_geq(bh_engine_live_sandboxes(h.e), live, "the call's sandbox never started\n%s",
		      h.log);
}

static bh_session *open_as(const char *principal, enum bh_tier tier, bh_error **err)
{
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON, .principal = principal};
	bh_session *s = NULL;
	return bh_session_open(h.e, &o, NULL, NULL, &s, err) < 0 ? NULL : s;
}

static void wait_ready(bh_session *s)
{
	for (int i = 0; i < 600; i++) {
		struct bh_session_info info;
		bh_session_get_info(s, &info);
		if (info.state != BH_SESSION_OPENING && info.state != BH_SESSION_WAITING)
			return;
		run_for(100);
	}
}

#define SLOW "import time; time.sleep(4); print('slept')"

Test(admission, a_fresh_call_holds_a_place_in_the_memory_budget, .fini = teardown, .timeout = 240)
{
	struct bh_policy p = {.memory_budget_mb = 1024};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	/* The session and one call fill the budget; the second call is refused
	 * before anything is created. */
	struct call a, b;
	start_exec(&a, "test", SLOW);
	wait_running(2);
	start_exec(&b, "test", "print('should not run')");
	wait_call(&b);
	cr_assert_not(b.answered, "a third 512 MiB sandbox ran in a 1024 MiB budget: %s", b.out);
	cr_assert_eq(b.code, BH_E_NOT_DISPATCHED, "%s", b.msg);
	cr_assert_eq(b.refusal, BH_REFUSAL_CAPACITY, "%s", b.msg);
	cr_assert_not_null(strstr(b.msg, "memory budget"), "%s", b.msg);
	cr_assert_eq(bh_engine_live_sandboxes(h.e), 2, "the refused call created a sandbox");
	/* A session is refused the same place, for the same reason. */
	bh_error *err = NULL;
	cr_assert_null(open_as("test", BH_TIER_CONTAINER, &err), "a session opened past the budget");
	cr_assert_eq(err->refusal, BH_REFUSAL_CAPACITY, "%s", err->msg);
	bh_error_free(err);
	/* Once the call is answered its place is free again. */
	wait_call(&a);
	cr_assert(a.answered, "%s", a.msg);
	cr_assert_str_eq(a.out, "slept\n");
	struct call c;
	start_exec(&c, "test", "print('now')");
	wait_call(&c);
	cr_assert(c.answered, "the freed place was not given out: %s", c.msg);
	cr_assert_str_eq(c.out, "now\n");
	char last[65], reason[32];
	harness_close_session(&h, s, last, reason);
}

Test(admission, a_principal_at_its_cap_is_refused_and_another_is_not, .fini = teardown,
     .timeout = 240)
{
	struct bh_policy p = {.max_per_principal = 2};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_error *err = NULL;
	bh_session *a1 = open_as("a", BH_TIER_CONTAINER, &err);
	cr_assert_not_null(a1, "%s", err ? err->msg : "");
	struct call run_a;
	start_exec(&run_a, "a", SLOW);
	wait_ready(a1);
	wait_running(2);
	/* "a" holds a session and a call in flight: its cap of 2. */
	cr_assert_null(open_as("a", BH_TIER_CONTAINER, &err), "a third place for \"a\"");
	cr_assert_eq(err->refusal, BH_REFUSAL_CAPACITY, "%s", err->msg);
	cr_assert_not_null(strstr(err->msg, "this caller"), "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	struct call more_a;
	start_exec(&more_a, "a", "print('should not run')");
	wait_call(&more_a);
	cr_assert_not(more_a.answered, "a third place for \"a\": %s", more_a.out);
	cr_assert_eq(more_a.refusal, BH_REFUSAL_CAPACITY, "%s", more_a.msg);
	/* "b" is not "a". */
	bh_session *b1 = open_as("b", BH_TIER_CONTAINER, &err);
	cr_assert_not_null(b1, "\"b\" was refused: %s", err ? err->msg : "");
	struct call run_b;
	start_exec(&run_b, "b", "print('b ran')");
	wait_call(&run_b);
	cr_assert(run_b.answered, "\"b\" was refused: %s", run_b.msg);
	cr_assert_str_eq(run_b.out, "b ran\n");
	wait_call(&run_a);
	cr_assert(run_a.answered, "%s", run_a.msg);
	wait_ready(b1);
	char last[65], reason[32];
	harness_close_session(&h, a1, last, reason);
	harness_close_session(&h, b1, last, reason);
}

Test(admission, the_pool_counts_against_the_budget_and_gives_way_to_a_caller, .fini = teardown,
     .timeout = 240)
{
	struct bh_policy p = {.memory_budget_mb = 1024, .pool_size = 1,
			      .pool_tiers = 1u << BH_TIER_CONTAINER};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 1);
	/* A session takes the pooled sandbox: its place changes hands, and the
	 * pool refills into the budget's second place. */
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	cr_assert(info.from_pool, "the session did not take the pooled sandbox");
	for (int i = 0; i < 300 && bh_engine_pool_ready(h.e, BH_TIER_CONTAINER) < 1; i++)
		run_for(100);
	cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 1, "the pool did not refill\n%s",
		     h.log);
	/* The budget is full (the session and the pool). A call is a caller's:
	 * the pooled sandbox is closed for it. */
	struct call a;
	start_exec(&a, "test", SLOW);
	run_for(500);
	cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 0,
		     "the pool kept its sandbox while a caller's call needed the place");
	/* While the call runs the pool has no room: its refill waits. */
	for (int i = 0; i < 20 && !a.done; i++) {
		run_for(100);
		cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 0,
			     "the pool refilled past the budget");
	}
	wait_call(&a);
	cr_assert(a.answered, "%s", a.msg);
	cr_assert_str_eq(a.out, "slept\n");
	/* And once the call is done, it refills. */
	for (int i = 0; i < 300 && bh_engine_pool_ready(h.e, BH_TIER_CONTAINER) < 1; i++)
		run_for(100);
	cr_assert_eq(bh_engine_pool_ready(h.e, BH_TIER_CONTAINER), 1,
		     "the pool did not refill once there was room\n%s", h.log);
	char last[65], reason[32];
	harness_close_session(&h, s, last, reason);
}

static void on_action(void *arg, const bh_error *err)
{
	(void)err;
	*(bool *)arg = true;
}

static const char *state_of(bh_session *s)
{
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	return bh_session_state_name(i.state);
}

Test(admission, a_hibernated_session_is_restored_only_when_the_budget_has_room, .fini = teardown,
     .timeout = 300)
{
	struct bh_policy p = {.memory_budget_mb = 1024};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *a = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(&h, a, BH_LANG_PYTHON, "x = 41", 0);
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	cell_outcome_free(o);
	bool done = false;
	cr_assert_eq(bh_session_hibernate(a, on_action, &done, NULL), 0);
	bh_engine_wait(h.e, &done, 60000, NULL);
	cr_assert_str_eq(state_of(a), "hibernated", "%s", h.log);
	/* On disk it holds no memory: two sessions fill the budget. */
	bh_session *b = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	bh_session *c = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	o = harness_cell(&h, a, BH_LANG_PYTHON, "x + 1", 0);
	cr_assert_not(o->answered, "a restore took the budget past its sum: %s", o->out);
	cr_assert_eq(o->err_code, BH_E_NOT_DISPATCHED, "%s", o->err_msg);
	cr_assert_eq(o->refusal, BH_REFUSAL_CAPACITY, "%s", o->err_msg);
	cr_assert_eq(o->session_end, BH_END_NONE, "the session ended: %s",
		     bh_end_reason_name(o->session_end));
	cell_outcome_free(o);
	cr_assert_str_eq(state_of(a), "hibernated", "the refused restore changed the session");
	char last[65], reason[32];
	harness_close_session(&h, c, last, reason);
	o = harness_cell(&h, a, BH_LANG_PYTHON, "x + 1", 0);
	cr_assert(o->answered, "with room again the restore was refused: %s", o->err_msg);
	cr_assert_str_eq(o->out, "42\n");
	cr_assert_not(o->r.interpreter_started, "restored, not restarted");
	cell_outcome_free(o);
	harness_close_session(&h, a, last, reason);
	harness_close_session(&h, b, last, reason);
}
