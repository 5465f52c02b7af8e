/* The conversation manager over an engine in this process (the console's
 * and the CLI's embedded mode): the same rules as over a daemon — reuse,
 * dispose, the per-owner cap, the one retry — and the same errors. */
#include "harness.h"
#include "manager.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static bh_manager *mgr;

static void open_manager(uint32_t per_owner, enum bh_tier floor)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	struct bh_manager_options o;
	bh_manager_defaults(&o);
	o.engine = h.e;
	o.principal = "worker";
	o.token = "a token";
	o.floor = floor;
	o.languages = 1u << BH_LANG_PYTHON | 1u << BH_LANG_JAVASCRIPT;
	o.max_per_owner = per_owner;
	o.idle_close_ms = 0;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_new(&o, &mgr, &err), 0, "%s", err ? err->message : "");
}

static void teardown(void)
{
	if (mgr) {
		bh_manager_dispose_all(mgr);
		bool never = false;
		bh_manager_wait(mgr, &never, 2000);
		bh_manager_free(mgr);
	}
	mgr = NULL;
	harness_close(&h);
}

static struct bh_exec_output *run(const char *key, const char *owner, enum bh_language lang,
				  const char *code)
{
	struct bh_exec_output *o = calloc(1, sizeof *o);
	struct bh_exec_input in = {.language = lang, .code = code};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_run(mgr, key, owner, &in, o, &err), 0, "%s: %s", key,
		     err ? err->message : "");
	return o;
}

static void free_out(struct bh_exec_output *o)
{
	bh_exec_output_free(o);
	free(o);
}

static size_t live_sessions(void)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(h.e, &list), live = 0;
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		live += info.end_reason == BH_END_NONE;
	}
	free(list);
	return live;
}

Test(manager_engine, a_run_keeps_one_sandbox_across_calls_and_languages_until_disposed,
     .fini = teardown)
{
	open_manager(3, BH_TIER_CONTAINER);
	bh_manager_warm(mgr, "run-1", "alice");
	struct bh_manager_entry e[2];
	cr_assert_eq(bh_manager_entries(mgr, e, 2), 1);
	cr_assert(e[0].opening, "warm waited for the open");
	struct bh_exec_output *o = run("run-1", "alice", BH_LANG_PYTHON, "x = 41\nprint(x + 1)");
	cr_assert_str_eq(o->stdout_text, "42\n");
	cr_assert(o->fresh_sandbox);
	cr_assert(o->state_kept);
	cr_assert_eq(strlen(o->record_sha256), 64);
	free_out(o);
	o = run("run-1", "alice", BH_LANG_JAVASCRIPT, "6 * 7");
	cr_assert_str_eq(o->stdout_text, "42\n");
	cr_assert_not(o->fresh_sandbox, "a second sandbox answered the run's second call");
	free_out(o);
	o = run("run-1", "alice", BH_LANG_PYTHON, "print(x)");
	cr_assert_str_eq(o->stdout_text, "41\n");
	free_out(o);
	cr_assert_eq(live_sessions(), 1);

	bh_manager_dispose(mgr, "run-1");
	o = run("run-1", "alice", BH_LANG_PYTHON, "print('x' in globals())");
	cr_assert_str_eq(o->stdout_text, "False\n");
	cr_assert(o->fresh_sandbox);
	free_out(o);
	cr_assert_eq(live_sessions(), 1, "the disposed sandbox is still open");
}

Test(manager_engine, the_owner_cap_closes_the_least_recently_used_idle_sandbox, .fini = teardown)
{
	open_manager(2, BH_TIER_CONTAINER);
	free_out(run("run-a", "alice", BH_LANG_PYTHON, "a = 1"));
	free_out(run("run-b", "alice", BH_LANG_PYTHON, "b = 1"));
	free_out(run("run-a", "alice", BH_LANG_PYTHON, "a += 1"));
	free_out(run("run-c", "alice", BH_LANG_PYTHON, "c = 1"));
	cr_assert_eq(live_sessions(), 2);
	struct bh_exec_output *o = run("run-a", "alice", BH_LANG_PYTHON, "print(a)");
	cr_assert_str_eq(o->stdout_text, "2\n", "the kept sandbox is not run-a's");
	free_out(o);
	o = run("run-b", "alice", BH_LANG_PYTHON, "print('b' in globals())");
	cr_assert_str_eq(o->stdout_text, "False\n");
	cr_assert(o->fresh_sandbox);
	free_out(o);
}

Test(manager_engine, a_call_on_a_sandbox_that_ended_is_retried_once_in_a_new_one,
     .fini = teardown)
{
	open_manager(3, BH_TIER_CONTAINER);
	free_out(run("run-1", "alice", BH_LANG_PYTHON, "x = 1"));
	struct bh_manager_entry e[2];
	cr_assert_eq(bh_manager_entries(mgr, e, 2), 1);
	/* An operator kills it behind the manager's back. */
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(h.e, &list);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), e[0].fingerprint))
			bh_session_kill(list[i]);
	free(list);
	bool never = false;
	bh_manager_wait(mgr, &never, 500);
	struct bh_exec_output *o = run("run-1", "alice", BH_LANG_PYTHON, "print('x' in globals())");
	cr_assert(o->retried, "the refused call was not retried");
	cr_assert(o->fresh_sandbox);
	cr_assert_str_eq(o->stdout_text, "False\n");
	free_out(o);
}

Test(manager_engine, a_floor_above_every_tier_is_refused_before_anything_opens, .fini = teardown)
{
	open_manager(3, BH_TIER_VM);
	struct bh_exec_output o;
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = "print(1)"};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_run(mgr, "run-1", "alice", &in, &o, &err), -1);
	cr_assert_eq(strncmp(err->message, "Nothing ran (isolation): ", 25), 0, "%s", err->message);
	bh_client_error_free(err);
	cr_assert_eq(live_sessions(), 0);
	struct bh_manager_entry e[2];
	cr_assert_eq(bh_manager_entries(mgr, e, 2), 0);
}
