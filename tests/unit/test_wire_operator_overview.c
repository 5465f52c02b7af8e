/* Overview on the wire (light, docs/api.md): the console's one request a
 * refresh. A changed answer carries the sessions and the usage as
 * ListSessions and Usage write them, read back by their own decoders; an
 * unchanged one carries its token alone; the request is read strictly
 * (INVALID_ARGUMENT, marked REQUEST) and its wait capped. */
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY(s) (s), strlen(s)
#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define assert_refused(st, code_, needle)                                                          \
	do {                                                                                       \
		cr_assert_eq((st).code, (code_), "code %s (%s)", wire_code_name((st).code),        \
			     (st).msg);                                                            \
		cr_assert(strstr((st).msg, (needle)), "message \"%s\" does not say \"%s\"",        \
			  (st).msg, (needle));                                                     \
	} while (0)

static char *changed_answer(void)
{
	struct wire_operator_session s = {
		.fingerprint = FP, .sandbox = "bh-1", .state = "ready", .isolation = "container",
		.floor = "", .principal = "agent", .owner = "acme", .run_key = "run-42",
		.calls = 3, .last_record_sha256 = FP, .created_unix_ms = 1700000000000,
		.end_reason = "", .call_code = "", .call_language = "", .evidence = "",
		.end_detail = "",
	};
	struct bh_session_usage u;
	memset(&u, 0, sizeof u);
	memcpy(u.fingerprint, FP, sizeof FP);
	u.tier = BH_TIER_CONTAINER;
	u.state = BH_SESSION_READY;
	u.measured = true;
	u.memory_bytes = 1u << 20;
	struct wire_operator_overview o = {
		.token = "18c.7.0.ab",
		.changed = true,
		.sessions = {.sessions = &s, .n = 1},
		.usage = {.version = "0.1.0", .sessions = &u, .n = 1},
		.approvals_waiting = 2,
	};
	o.usage.host.started_unix_ms = 1700000000000;
	o.usage.host.now_unix_ms = 1700000042000;
	return wire_operator_encode_overview(&o);
}

Test(wire_operator_overview, a_changed_answer_round_trips_the_sessions_the_usage_and_the_count)
{
	char *json = changed_answer();
	struct wire_operator_overview got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_overview(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_str_eq(got.token, "18c.7.0.ab");
	cr_assert(got.changed);
	cr_assert_eq(got.sessions.n, 1);
	cr_assert_str_eq(got.sessions.sessions[0].fingerprint, FP);
	cr_assert_str_eq(got.sessions.sessions[0].run_key, "run-42");
	cr_assert_eq(got.sessions.sessions[0].calls, 3);
	cr_assert_eq(got.usage.n, 1);
	cr_assert_eq(got.usage.sessions[0].memory_bytes, 1u << 20);
	cr_assert_eq(got.usage.host.now_unix_ms - got.usage.host.started_unix_ms, 42000);
	cr_assert_eq(got.approvals_waiting, 2);
	/* What the daemon wrote is what it reads again, byte for byte. */
	char *again = wire_operator_encode_overview(&got);
	cr_assert_str_eq(again, json);
	free(again);
	wire_operator_overview_free(&got);
	free(json);
}

Test(wire_operator_overview, an_unchanged_answer_is_its_token_alone)
{
	struct wire_operator_overview same = {.token = "18c.7.0.ab"};
	char *json = wire_operator_encode_overview(&same);
	cr_assert_str_eq(json, "{\"token\":\"18c.7.0.ab\"}");
	struct wire_operator_overview got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_overview(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_not(got.changed);
	cr_assert_eq(got.sessions.n, 0);
	wire_operator_overview_free(&got);
	free(json);
}

Test(wire_operator_overview, malformed_answers_are_refused_naming_the_method_and_what_is_wrong)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"[]", "Overview: "},
		{"{\"changed\":true}", "every answer carries one"},
		{"{\"token\":\"t\",\"changed\":true,\"usage\":{\"sessions\":[]}}", "sessions: a changed"},
		{"{\"token\":\"t\",\"changed\":true,\"sessions\":{\"sessions\":[]}}", "usage: a changed"},
		{"{\"token\":\"t\",\"sessions\":{\"sessions\":[]}}", "only its token"},
		{"{\"token\":\"t\",\"approvalsWaiting\":3}", "only its token"},
		{"{\"token\":\"t\",\"extra\":1}", "\"extra\" is not a member"},
		{"{\"token\":\"a b\"}", "a byte no change token has"},
		{"{\"token\":\"t\",\"changed\":true,\"sessions\":{\"sessions\":[{\"calls\":\"many\"}]},"
		 "\"usage\":{\"sessions\":[]}}",
		 "sessions: ListSessions: "},
		{"{\"token\":\"t\",\"changed\":\"yes\"}", "changed"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct wire_operator_overview got;
		struct wire_status st;
		cr_assert_eq(wire_operator_decode_overview(BODY(bad[i].body), &got, &st), -1, "%s",
			     bad[i].body);
		assert_refused(st, WIRE_DATA_LOSS, bad[i].says);
		cr_assert_eq(strncmp(st.msg, "Overview: ", 10), 0, "%s", st.msg);
	}
}

Test(wire_operator_overview, a_request_is_read_strictly_and_its_wait_is_capped)
{
	struct wire_operator_overview_request req;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_overview_request(BODY("{\"token\":\"1.2.3.4\",\"waitMs\":600000}"),
							   &req, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(req.token, "1.2.3.4");
	cr_assert_eq(req.wait_ms, WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS);
	wire_operator_overview_request_free(&req);
	cr_assert_eq(wire_operator_decode_overview_request(BODY("{}"), &req, &st), 0, "%s", st.msg);
	cr_assert_str_eq(req.token, "");
	cr_assert_eq(req.wait_ms, 0);
	wire_operator_overview_request_free(&req);
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"{\"token\":\"t\",\"session\":\"x\"}", "\"session\" is not a member"},
		{"{\"waitMs\":-1}", "0 or more"},
		{"{\"waitMs\":true}", "waitMs"},
		{"{\"token\":7}", "token"},
		{"{\"token\":\"\\u0001\"}", "a byte no change token has"},
		{"not json", ""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(wire_operator_decode_overview_request(BODY(bad[i].body), &req, &st), -1,
			     "%s", bad[i].body);
		assert_refused(st, WIRE_INVALID_ARGUMENT, bad[i].says);
	}
	char long_token[200];
	memset(long_token, 'a', sizeof long_token);
	char body[300];
	snprintf(body, sizeof body, "{\"token\":\"%.*s\"}", WIRE_OPERATOR_TOKEN_MAX + 1, long_token);
	cr_assert_eq(wire_operator_decode_overview_request(BODY(body), &req, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "longer than a change token");
}
