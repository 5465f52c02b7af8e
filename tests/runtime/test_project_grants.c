/* ---- pgrant: the engine's side of a project with a grant, on both tiers:
 * held for the project's run only (the hold taken before the runner's EXEC,
 * released once its report is in and before the answer, as a granted
 * snippet's), the broker's socket there and the proxy and CA variables in
 * every step's environment, fresh and in a session; and without a broker
 * (bh_config.egress NULL) a granted project refused permission, nothing
 * run. The engine's broker is tests/support/test_broker.h's (it logs every
 * hold and release the engine asks for); the daemon's end to end, with the
 * real broker and a TLS upstream, is tests/daemon/test_project_grants.c.
 * ---- */
#include "harness.h"
#include "egress.h"
#include "test_broker.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static struct test_broker broker;

static void setup(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	tb_init(&broker, root && *root ? root : "/tmp");
	harness_open_egress(&h, &tb_ops, &broker);
}

static void teardown(void)
{
	harness_close(&h);
	tb_fini(&broker);
}

struct project_wait {
	bool done;
	char *err;
	int outcome;
	char out[512];
	/* What the broker had been asked when the answer came. */
	size_t holds, releases;
};

static void on_project(void *arg, const struct bh_project_result *r, const bh_error *err)
{
	struct project_wait *w = arg;
	w->done = true;
	w->holds = tb_count(&broker, "hold", "weather");
	w->releases = tb_count(&broker, "release", NULL);
	if (err) {
		w->err = strdup(err->msg);
		return;
	}
	w->outcome = (int)r->outcome;
	for (size_t i = 0; i < r->n_steps; i++)
		snprintf(w->out + strlen(w->out), sizeof w->out - strlen(w->out), "%.*s",
			 (int)r->steps[i].out_len, (const char *)r->steps[i].out);
}

/* What a step sees of egress: the socket and the variables. */
static const char *const env_step[] = {
	"test -S /run/host-api.sock && echo socket; echo \"$HTTPS_PROXY $SSL_CERT_FILE\"", NULL};
static const char env_seen[] = "socket\nhttp://127.0.0.1:3128 /run/host-api-ca.pem\n";

static void held_for_the_run_only(enum bh_tier tier)
{
	struct bh_project p = {.tier = tier, .floor = BH_TIER_UNKNOWN, .steps = env_step,
			       .n_steps = 1, .principal = "test", .grant_profile = "weather"};
	struct project_wait w = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_run_project(h.e, &p, on_project, &w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0);
	cr_assert_null(w.err, "%s", w.err);
	cr_assert_eq(w.outcome, BH_PROJECT_COMPLETED);
	cr_assert_str_eq(w.out, env_seen, "%s", tb_dump(&broker));
	cr_assert_eq(w.holds, 1, "%s", tb_dump(&broker));
	cr_assert_eq(w.releases, 1, "the hold outlived the answer:\n%s", tb_dump(&broker));

	/* In a session without a profile of its own: the same, for that
	 * call; the session's interpreter has none of it. */
	bh_session *s = harness_session(&h, tier, 0);
	struct project_wait sw = {0};
	cr_assert_eq(bh_session_run_project(s, &p, on_project, &sw, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &sw.done, 120000, &err), 0);
	cr_assert_null(sw.err, "%s", sw.err);
	cr_assert_eq(sw.outcome, BH_PROJECT_COMPLETED);
	cr_assert_str_eq(sw.out, env_seen, "%s", tb_dump(&broker));
	cr_assert_eq(sw.holds, 2, "%s", tb_dump(&broker));
	cr_assert_eq(sw.releases, 2, "the hold outlived the answer:\n%s", tb_dump(&broker));
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON,
					      "import os; print(os.environ.get('HTTPS_PROXY', 'none'))", 0);
	cr_assert(o->answered, "%s", o->err_msg);
	cr_assert_str_eq(o->out, "none\n");
	cell_outcome_free(o);
	/* A project with no grant takes no hold. */
	p.grant_profile = NULL;
	struct project_wait nw = {0};
	cr_assert_eq(bh_session_run_project(s, &p, on_project, &nw, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &nw.done, 120000, &err), 0);
	cr_assert_null(nw.err, "%s", nw.err);
	cr_assert_str_eq(nw.out, "socket\n \n", "no variables without a grant");
	cr_assert_eq(nw.holds, 2, "%s", tb_dump(&broker));
	free(w.err);
}

Test(project_grants_container, a_granted_project_holds_its_profile_for_its_run_only, .init = setup,
     .fini = teardown, .timeout = 300)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	held_for_the_run_only(BH_TIER_CONTAINER);
}

Test(project_grants_kernel, a_granted_project_holds_its_profile_for_its_run_only, .init = setup,
     .fini = teardown, .timeout = 300)
{
	harness_require_tier(&h, BH_TIER_KERNEL);
	held_for_the_run_only(BH_TIER_KERNEL);
}

/* ---- without a broker ---- */

static void plain_setup(void) { harness_open(&h, NULL); }
static void plain_teardown(void) { harness_close(&h); }

Test(project_grants_none, a_granted_project_is_refused_permission_and_nothing_runs,
     .init = plain_setup, .fini = plain_teardown, .timeout = 300)
{
	enum bh_tier tier = bh_engine_best_tier(h.e);
	if (tier == BH_TIER_UNKNOWN)
		cr_skip_test("no tier offered here");
	static const char *const steps[] = {"echo ran > /work/ran.txt", NULL};
	struct bh_project p = {.tier = tier, .floor = BH_TIER_UNKNOWN, .steps = steps, .n_steps = 1,
			       .principal = "test", .grant_profile = "weather"};
	struct project_wait w = {0};
	bh_error *err = NULL;
	cr_assert_lt(bh_run_project(h.e, &p, on_project, &w, &err), 0);
	cr_assert_eq(err->code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	cr_assert_str_eq(err->msg, "grant profile weather is unknown or not available to this caller");
	bh_error_free(err), err = NULL;
	bh_session *s = harness_session(&h, tier, 0);
	cr_assert_lt(bh_session_run_project(s, &p, on_project, &w, &err), 0);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	cr_assert_str_eq(err->msg, "grant profile weather is unknown or not available to this caller");
	bh_error_free(err);
	cr_assert_not(w.done, "a refused project was answered as well");
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON,
					      "import os; print(os.path.exists('/work/ran.txt'))", 0);
	cr_assert(o->answered, "%s", o->err_msg);
	cr_assert_str_eq(o->out, "False\n");
	cr_assert_eq(o->sequence, 1, "the refused project took a place in the chain");
	cell_outcome_free(o);
}
