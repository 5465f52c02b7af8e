/* The posture check on every sandbox start: a sandbox whose walls drifted
 * after its tier was proven (its evidence still stands) is seen from the
 * host's /proc, refused with the failed check named, and deleted. */
#include "harness.h"
#include "engine_internals.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static bh_engine *drifted;

static void on_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

static void open_drifted(const char *wall)
{
	/* A plain engine first: the shared evidence is proven (or loaded). */
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_engine_close(h.e);
	h.e = NULL;
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	char evidence[4096];
	snprintf(evidence, sizeof evidence, "%s/evidence", root && *root ? root : "/tmp/bulkhead-tests");
	struct bh_config cfg = {
		.state_dir = h.state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = on_log,
		.evidence_dir = evidence,
	};
	bh_error *err = NULL;
	struct bh_test_hooks hooks = {.drop_wall_after_proof = wall};
	cr_assert_eq(bh_engine_open_hooked(&cfg, &hooks, &drifted, &err), 0, "%s", err ? err->msg : "?");
	h.e = drifted;
	while (!bh_engine_proven(h.e) || bh_engine_live_sandboxes(h.e) > 0) {
		bool never = false;
		bh_engine_wait(h.e, &never, 50, &err);
		bh_error_free(err);
		err = NULL;
	}
	/* The tier is still offered: its smoke test (or cached evidence) passed. */
	harness_require_tier(&h, BH_TIER_CONTAINER);
}

static void teardown(void)
{
	harness_close(&h);
}

struct open_wait {
	bool done;
	char msg[1024];
	enum bh_error_code code;
	enum bh_refusal refusal;
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct open_wait *w = arg;
	w->done = true;
	if (err) {
		w->code = err->code;
		w->refusal = err->refusal;
		snprintf(w->msg, sizeof w->msg, "%s", err->msg);
	}
}

static void assert_refused_by_posture(const char *check)
{
	char *containers_before = harness_runtime_list(&h);
	char *cgroups_before = harness_cgroup_list(&h);
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON, .principal = "test"};
	struct open_wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, on_open, &w, &s, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 60000, &err), 0);
	cr_assert(w.msg[0], "the session opened on a sandbox that fails its posture");
	cr_assert_not_null(strstr(w.msg, "failed its posture check and was not used"), "%s", w.msg);
	cr_assert_not_null(strstr(w.msg, check), "%s", w.msg);
	/* A fresh run is refused the same way, nothing ran. */
	static const char *const argv[] = {"/bin/echo", "ran", NULL};
	struct run_result *r = harness_exec(&h, BH_TIER_CONTAINER, BH_TIER_UNKNOWN, argv, NULL, 0, 0);
	cr_assert_not(r->answered, "it ran: %s", r->out);
	cr_assert_eq(r->err_code, BH_E_NOT_DISPATCHED, "%s", r->err_msg);
	cr_assert_eq(r->refusal, BH_REFUSAL_ISOLATION, "%s", r->err_msg);
	cr_assert_not_null(strstr(r->err_msg, check), "%s", r->err_msg);
	run_result_free(r);
	/* And the refused sandboxes are deleted: containers and cgroups as
	 * before (the deletes are asynchronous; 30 s bound). */
	for (int i = 0; i < 600 && bh_engine_live_sandboxes(h.e) > 0; i++) {
		bool never = false;
		bh_engine_wait(h.e, &never, 50, &err);
		bh_error_free(err);
		err = NULL;
	}
	cr_assert_eq(bh_engine_live_sandboxes(h.e), 0);
	char *containers_after = harness_runtime_list(&h);
	char *cgroups_after = harness_cgroup_list(&h);
	cr_assert_str_eq(containers_after, containers_before);
	cr_assert_str_eq(cgroups_after, cgroups_before);
	free(containers_before), free(containers_after), free(cgroups_before), free(cgroups_after);
}

Test(posture, a_sandbox_that_lost_its_seccomp_filter_after_the_proof_is_refused_and_deleted,
     .fini = teardown)
{
	open_drifted("seccomp");
	assert_refused_by_posture("Seccomp is 0, want 2");
}

Test(posture, a_sandbox_that_gained_capabilities_after_the_proof_is_refused_and_deleted,
     .fini = teardown)
{
	open_drifted("caps");
	assert_refused_by_posture("CapEff is");
}

Test(posture, a_sandbox_without_no_new_privs_after_the_proof_is_refused_and_deleted,
     .fini = teardown)
{
	open_drifted("no-new-privs");
	assert_refused_by_posture("NoNewPrivs is 0, want 1");
}

Test(posture, sandboxes_of_both_tiers_pass_their_posture_and_run, .fini = teardown)
{
	harness_open(&h, NULL);
	for (enum bh_tier t = BH_TIER_CONTAINER; t <= BH_TIER_KERNEL; t++) {
		harness_require_tier(&h, t);
		bh_session *s = harness_session(&h, t, 1u << BH_LANG_PYTHON);
		struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "6 * 7", 0);
		cr_assert(o->answered && !strcmp(o->out, "42\n"), "%s", o->err_msg ? o->err_msg : "");
		cell_outcome_free(o);
	}
}
