/* ---- density (issue 21) ----
 * bulkhead.v1.OperatorService/Branch through a real daemon: an operator
 * branches a kernel-tier conversation by its fingerprint; each child's id,
 * called over plimsoll.v1 with the parent's principal's token, answers with
 * the parent's variables and then diverges; the parent goes on; another
 * principal does not reach a child; a count past the bound or not whole, a
 * container-tier session and a caller without the operator scope are
 * refused, nothing changed. */
#include "daemon_harness.h"
#include "wire.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;

static void stop(void)
{
	daemon_stop(&d);
}

static void expect_cell(const char *id, const char *code, const char *want)
{
	char *out = daemon_cell_stdout(&d, d.run_token, id, code);
	cr_assert(strstr(out, want), "%s: wanted %s in %s", code, want, out);
	free(out);
}

static struct answer *branch(const char *fp, const char *count, const char *token)
{
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"%s%s}", fp, count ? ",\"count\":" : "",
		 count ? count : "");
	return daemon_call(&d, token, OPS "Branch", body);
}

Test(daemon_branch, an_operator_branches_a_conversation_and_each_child_goes_on_with_its_variables,
     .fini = stop, .timeout = 240)
{
	daemon_start(&d, "--tier kernel");
	struct daemon_session p;
	daemon_open_session(&d, &p);
	expect_cell(p.id, "plan = ['read']", "");
	struct answer *a = branch(p.fp, "2", d.op_token);
	cr_assert_eq(a->status, 200, "Branch: %ld %s", a->status, a->body);
	struct wire_operator_branched b;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_branched(a->body, a->len, &b, &st), 0, "%s: %s", st.msg,
		     a->body);
	answer_free(a);
	cr_assert_eq(b.n, 2);
	cr_assert_eq(b.after, 1);
	cr_assert_gt(b.parent_paused_us, 0);
	expect_cell(b.children[0].session_id, "plan.append('try A'); plan", "try A");
	expect_cell(b.children[1].session_id, "plan.append('try B'); plan", "try B");
	char *out = daemon_cell_stdout(&d, d.run_token, b.children[0].session_id, "plan");
	cr_assert(strstr(out, "try A") && !strstr(out, "try B"), "%s", out);
	free(out);
	expect_cell(p.id, "len(plan)", "1");
	/* Counts past the bound, or not whole, are refused naming the bound. */
	const char *bad[] = {"17", "2.5", "0", "\"two\""};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		a = branch(p.fp, bad[i], d.op_token);
		cr_assert_neq(a->status, 200, "count %s: %s", bad[i], a->body);
		cr_assert(strstr(a->body, "a branch makes 1 to 16 children"), "count %s: %s", bad[i],
			  a->body);
		answer_free(a);
	}
	expect_cell(p.id, "len(plan)", "1");
	/* Another principal does not reach a child. */
	struct answer *o = daemon_cell(&d, d.other_token, b.children[0].session_id, "python", "plan");
	cr_assert_neq(o->status, 200, "another principal ran a cell in a child: %s", o->body);
	answer_free(o);
	wire_operator_branched_free(&b);
}

Test(daemon_branch, a_container_session_a_bad_count_and_a_caller_without_the_operator_scope_are_refused,
     .fini = stop, .timeout = 180)
{
	daemon_start(&d, "--tier container");
	struct daemon_session s;
	daemon_open_session(&d, &s);
	expect_cell(s.id, "v = 1", "");
	struct answer *a = branch(s.fp, NULL, d.op_token);
	cr_assert_neq(a->status, 200, "a container-tier session branched: %s", a->body);
	cr_assert(strstr(a->body, "container tier cannot branch on this host"), "%s", a->body);
	cr_assert_eq(a->status, 501, "%ld %s", a->status, a->body);
	cr_assert(strstr(a->body, "\"code\":\"unimplemented\"") &&
			  strstr(a->body, "plimsoll.v1.NotDispatched"),
		  "%s", a->body);
	answer_free(a);
	a = branch(s.fp, "1", d.run_token);
	cr_assert(a->status == 401 || a->status == 403, "a run token branched: %ld %s", a->status,
		  a->body);
	answer_free(a);
	expect_cell(s.id, "v + 1", "2");
}
