/* ---- density (issue 21) ----
 * Branch on the wire (docs/api.md): the children the daemon writes, read
 * back whole by the client's decoder, and the answers it refuses as the
 * daemon's word it cannot take (a child that is not a session bulkhead
 * makes, more children than a branch makes, a digest that is not one); the
 * request's count as the daemon reads it. */
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID "0123456789abcdef0123456789abcdef"

static char *one_child(const char *session, const char *id, const char *sandbox, const char *after)
{
	char *s = NULL;
	cr_assert_gt(asprintf(&s,
			      "{\"children\":[{\"session\":\"%s\",\"sessionId\":\"%s\",\"sandbox\":\"%s\"}],"
			      "\"parentPausedUs\":\"222000\",\"after\":\"3\",\"afterSha256\":\"%s\"}",
			      session, id, sandbox, after),
		     0);
	return s;
}

Test(wire_operator_branch, a_branch_answer_reads_back_whole)
{
	struct wire_operator_branch_child kids[2] = {{FP, ID, "bh-0123456789abcdef"},
						     {FP, ID, "bh-fedcba9876543210"}};
	kids[1].session[0] = 'f';
	struct wire_operator_branched b = {.children = kids, .n = 2, .parent_paused_us = 222000,
					   .after = 3};
	memcpy(b.after_sha256, FP, sizeof FP);
	char *json = wire_operator_encode_branched(&b);
	struct wire_operator_branched back;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_branched(json, strlen(json), &back, &st), 0, "%s", st.msg);
	cr_assert_eq(back.n, 2);
	cr_assert_str_eq(back.children[1].session, kids[1].session);
	cr_assert_str_eq(back.children[0].session_id, ID);
	cr_assert_str_eq(back.children[1].sandbox, "bh-fedcba9876543210");
	cr_assert_eq(back.parent_paused_us, 222000);
	cr_assert_eq(back.after, 3);
	cr_assert_str_eq(back.after_sha256, FP);
	wire_operator_branched_free(&back);
	free(json);
}

Test(wire_operator_branch, a_child_that_is_not_a_session_bulkhead_makes_is_refused)
{
	const char *bad[][3] = {
		{"not-a-digest", ID, "bh-0123456789abcdef"},
		{FP, "../../etc", "bh-0123456789abcdef"},
		{FP, ID, "bh-../../etc/passwd"},
		{FP, ID, "other-0123456789ab"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *json = one_child(bad[i][0], bad[i][1], bad[i][2], FP);
		struct wire_operator_branched b;
		struct wire_status st;
		cr_assert_eq(wire_operator_decode_branched(json, strlen(json), &b, &st), -1,
			     "accepted: %s", json);
		cr_assert(strstr(st.msg, "Branch"), "%s", st.msg);
		free(json);
	}
	char *json = one_child(FP, ID, "bh-0123456789abcdef", "zz");
	struct wire_operator_branched b;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_branched(json, strlen(json), &b, &st), -1);
	cr_assert(strstr(st.msg, "afterSha256"), "%s", st.msg);
	free(json);
	const char *none = "{\"children\":[]}";
	cr_assert_eq(wire_operator_decode_branched(none, strlen(none), &b, &st), -1);
	cr_assert(strstr(st.msg, "0 children; a branch makes 1 to 16"), "%s", st.msg);
}

Test(wire_operator_branch, the_daemon_reads_the_count_absent_as_one_and_anything_not_whole_as_zero)
{
	const char *bodies[] = {"{}", "{\"count\":3}", "{\"count\":2.5}", "{\"count\":\"3\"}",
				"{\"count\":-1}", "{\"count\":1e9}"};
	const uint32_t want[] = {1, 3, 0, 0, 0, 1000};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		struct wire_operator_request r;
		struct wire_status st;
		cr_assert_eq(wire_operator_decode_request(bodies[i], strlen(bodies[i]), &r, &st), 0);
		cr_assert_eq(r.count, want[i], "%s read as %u", bodies[i], r.count);
		wire_operator_request_free(&r);
	}
}
