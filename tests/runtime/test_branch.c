/* ---- density (issue 21) ----
 * Branching a live conversation (bh_session_branch): kernel-tier children
 * start with the parent's variables and files and then diverge from it and
 * from each other; the parent goes on; every chain verifies and a child's
 * names where it came from; the caps count children; the container tier and
 * bad asks are refused with nothing changed. Real gVisor sandboxes. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;

static void teardown(void)
{
	harness_close(&h);
}

struct branch_wait {
	bool done;
	char err[512];
	size_t n;
	struct bh_branch_child kids[BH_BRANCH_MAX];
	uint64_t paused_us, after;
	char after_sha256[65];
};

static void on_branch(void *arg, const struct bh_branch_result *r, const bh_error *err)
{
	struct branch_wait *w = arg;
	w->done = true;
	if (err) {
		snprintf(w->err, sizeof w->err, "%s", err->msg);
		return;
	}
	w->n = r->n;
	memcpy(w->kids, r->children, r->n * sizeof *r->children);
	w->paused_us = r->parent_paused_us;
	w->after = r->after;
	snprintf(w->after_sha256, sizeof w->after_sha256, "%s", r->after_sha256);
}

static void branch(bh_session *s, unsigned n, struct branch_wait *w)
{
	memset(w, 0, sizeof *w);
	bh_error *err = NULL;
	cr_assert_eq(bh_session_branch(s, n, on_branch, w, &err), 0, "branch refused: %s",
		     err ? err->msg : "?");
	cr_assert_eq(bh_engine_wait(h.e, &w->done, 60000, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(w->err[0], '\0', "the branch failed: %s", w->err);
}

static struct cell_outcome *ok(bh_session *s, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered, "%s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, 0, "%s: %s", code, o->errout);
	return o;
}

static void expect(bh_session *s, const char *code, const char *want)
{
	struct cell_outcome *o = ok(s, code);
	cr_assert(strstr(o->out, want), "%s: wanted %s, got %s", code, want, o->out);
	cell_outcome_free(o);
}

Test(branch, children_start_with_the_parents_variables_and_files_then_diverge_and_the_parent_goes_on,
     .fini = teardown, .timeout = 240)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *p = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(p, "findings = ['a']; open('/work/notes.txt', 'w').write('draft'); 1"));
	struct bh_session_info pi;
	bh_session_get_info(p, &pi);
	char parent_fp[65], parent_last[65];
	snprintf(parent_fp, sizeof parent_fp, "%s", pi.fingerprint);
	snprintf(parent_last, sizeof parent_last, "%s", pi.last_record_sha256);

	struct branch_wait w;
	branch(p, 2, &w);
	cr_assert_eq(w.n, 2);
	cr_assert_eq(w.after, 1);
	cr_assert_str_eq(w.after_sha256, parent_last);
	cr_assert_gt(w.paused_us, 0);
	printf("branch: the parent paused %.0f ms for the checkpoint\n", (double)w.paused_us / 1e3);
	fflush(stdout);
	/* The parent, hibernated by the branch, branches again from its image
	 * with no pause at all. */
	struct branch_wait again;
	branch(p, 1, &again);
	cr_assert_eq(again.paused_us, 0);
	cr_assert_eq(again.after, 1);
	bh_session *third = bh_engine_find_session(h.e, again.kids[0].session_id, "test");
	cr_assert_not_null(third);
	expect(third, "findings", "['a']");
	harness_close_session(&h, third, NULL, NULL);
	bh_session *kid[2];
	for (int i = 0; i < 2; i++) {
		kid[i] = bh_engine_find_session(h.e, w.kids[i].session_id, "test");
		cr_assert_not_null(kid[i], "child %d is not found by its id", i);
		struct bh_session_info ki;
		bh_session_get_info(kid[i], &ki);
		cr_assert_str_eq(ki.fingerprint, w.kids[i].fingerprint);
		cr_assert_str_neq(ki.fingerprint, parent_fp);
		cr_assert_str_eq(ki.branched_from, parent_fp);
		cr_assert_eq(ki.state, BH_SESSION_HIBERNATED);
	}
	cr_assert_str_neq(w.kids[0].fingerprint, w.kids[1].fingerprint);

	/* Each child has the parent's state, and diverges. */
	expect(kid[0], "findings.append('b'); findings", "['a', 'b']");
	expect(kid[1], "findings.append('c'); findings", "['a', 'c']");
	expect(kid[0], "open('/work/notes.txt').read()", "draft");
	expect(kid[1], "open('/work/notes.txt', 'a').write(' two'); open('/work/notes.txt').read()",
	       "draft two");
	expect(kid[0], "open('/work/notes.txt').read()", "draft");
	/* The parent goes on (its next call restores it) as it was. */
	expect(p, "findings", "['a']");
	expect(p, "open('/work/notes.txt').read()", "draft");

	/* The chains: the child's first record follows the parent's last. */
	char out[16384];
	int rc = harness_cli(&h, out, sizeof out, "verify");
	cr_assert_eq(rc, 0, "verify: %s", out);
	char said[200];
	snprintf(said, sizeof said,
		 "session %.12s was branched from session %.12s: its chain goes on from the parent's "
		 "record 1 (%.16s)",
		 w.kids[0].fingerprint, parent_fp, parent_last);
	cr_assert(strstr(out, said), "verify does not say where the child came from:\n%s", out);
	struct bh_session_info k0;
	bh_session_get_info(kid[0], &k0);
	cr_assert_eq(k0.calls, 4, "child 0 has %llu calls (1 of its parent's, 3 its own)",
		     (unsigned long long)k0.calls);
	char *seq = harness_sh("sqlite3 '%s' \"SELECT sequence, previous_sha256 FROM records WHERE "
			       "session = '%s' ORDER BY sequence LIMIT 1\"",
			       bh_engine_store_path(h.e), w.kids[0].fingerprint);
	char want[100];
	snprintf(want, sizeof want, "2|%s\n", parent_last);
	cr_assert_str_eq(seq, want, "the child's first record: %s", seq);
	char *from = harness_sh("sqlite3 '%s' \"SELECT branched_from FROM sessions WHERE fingerprint = "
				"'%s'\"",
				bh_engine_store_path(h.e), w.kids[1].fingerprint);
	snprintf(want, sizeof want, "%s\n", parent_fp);
	cr_assert_str_eq(from, want);
	for (int i = 0; i < 2; i++)
		harness_close_session(&h, kid[i], NULL, NULL);
	harness_close_session(&h, p, NULL, NULL);
	char *left = harness_runtime_list_settled(&h, 10000);
	cr_assert_str_eq(left, "", "containers left: %s", left);
	free(left);
}

Test(branch, a_container_tier_session_and_bad_asks_are_refused_with_nothing_changed, .fini = teardown,
     .timeout = 120)
{
	struct bh_policy pol = {.max_per_owner = 2};
	harness_open_policy(&h, &pol);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *c = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(c, "1"));
	bh_error *err = NULL;
	struct branch_wait w = {0};
	cr_assert_eq(bh_session_branch(c, 1, on_branch, &w, &err), -1);
	cr_assert_eq(err->code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(err->refusal, BH_REFUSAL_UNSUPPORTED);
	cr_assert(strstr(err->msg, "container tier cannot branch on this host"), "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	expect(c, "2 + 2", "4");
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *k = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(k, "v = 7"));
	cr_assert_eq(bh_session_branch(k, 0, on_branch, &w, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_REQUEST, "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	cr_assert_eq(bh_session_branch(k, BH_BRANCH_MAX + 1, on_branch, &w, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_REQUEST, "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	struct bh_session_info ki;
	bh_session_get_info(k, &ki);
	cr_assert_eq(ki.state, BH_SESSION_READY, "a refused branch left it %s",
		     bh_session_state_name(ki.state));
	cr_assert(!w.done);
	harness_close_session(&h, c, NULL, NULL);
	harness_close_session(&h, k, NULL, NULL);
}

Test(branch, children_count_against_the_owners_cap, .fini = teardown, .timeout = 120)
{
	struct bh_policy pol = {.max_per_owner = 2};
	harness_open_policy(&h, &pol);
	harness_require_tier(&h, BH_TIER_KERNEL);
	struct bh_session_opts o = {.tier = BH_TIER_KERNEL,
				    .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON,
				    .owner = "agent-7"};
	bh_session *p = harness_session_opts(&h, &o);
	cell_outcome_free(ok(p, "v = 7"));
	bh_error *err = NULL;
	struct branch_wait w = {0};
	cr_assert_eq(bh_session_branch(p, 2, on_branch, &w, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_CAPACITY, "%s", err->msg);
	cr_assert(strstr(err->msg, "past its cap of 2"), "%s", err->msg);
	bh_error_free(err);
	branch(p, 1, &w);
	bh_session *kid = bh_engine_find_session(h.e, w.kids[0].session_id, "test");
	cr_assert_not_null(kid);
	expect(kid, "v", "7");
	harness_close_session(&h, kid, NULL, NULL);
	harness_close_session(&h, p, NULL, NULL);
}
