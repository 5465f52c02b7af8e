/* Grants on the wire (issue 18): a javascript payload's grantProfile is
 * decoded and enters the request digest as plimsoll's does; a cell carries
 * none; OpenSession's grantProfile is bulkhead's extension; Describe lists
 * the profiles a caller may name in an extension plimsoll's decoders skip. */
#include "record.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY(s) (s), strlen(s)

#define assert_refused(st, want_code, want_reason, text)                                          \
	do {                                                                                      \
		cr_assert_eq((st).code, (want_code), "code %s (%s)", wire_code_name((st).code),   \
			     (st).msg);                                                           \
		cr_assert_eq((st).reason, (want_reason), "reason %s (%s)",                       \
			     wire_refusal_name((st).reason), (st).msg);                           \
		cr_assert_str_eq((st).msg, (text));                                               \
	} while (0)

Test(wire_grants, a_javascript_grant_is_decoded_and_digested_as_sent)
{
	struct wire_run_request r;
	struct wire_status st;
	const char *body = "{\"protocol\":3,\"javascript\":{\"code\":\"1\",\"grantProfile\":\"github-issues\"}}";
	cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
	cr_assert_str_eq(r.javascript.grant_profile, "github-issues");
	struct bh_request_fields f;
	wire_request_fields(&r, &f);
	cr_assert_str_eq(f.grant_profile, "github-issues");
	char with[65], without[65];
	bh_request_digest(&f, with);
	f.grant_profile = "";
	bh_request_digest(&f, without);
	cr_assert_str_neq(with, without, "the grant is part of what the record says was sent");
	char *again = wire_encode_run_request(&r);
	cr_assert(strstr(again, "\"grantProfile\":\"github-issues\""), "%s", again);
	free(again);
	wire_run_request_free(&r);

	cr_assert_eq(wire_decode_run_request(BODY("{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}"),
					     &r, &st),
		     0);
	cr_assert_str_eq(r.javascript.grant_profile, "", "no grant reads as none");
	wire_run_request_free(&r);
}

Test(wire_grants, a_grant_name_longer_than_a_profile_may_have_is_a_request_error)
{
	char body[512];
	snprintf(body, sizeof body, "{\"protocol\":3,\"javascript\":{\"code\":\"1\",\"grantProfile\":\"%065d\"}}", 0);
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
		       "javascript.grantProfile is 65 bytes, more than the 64 a profile's name may have");
	snprintf(body, sizeof body, "{\"protocol\":3,\"grantProfile\":\"%065d\"}", 0);
	struct wire_open_session_request o;
	cr_assert_eq(wire_decode_open_session_request(BODY(body), &o, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
		       "grantProfile is 65 bytes, more than the 64 a profile's name may have");
}

Test(wire_grants, a_cell_carries_no_grant)
{
	struct wire_session_run_request r;
	struct wire_status st;
	const char *body = "{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\","
			   "\"code\":\"1\",\"grantProfile\":\"gh\"}}";
	cr_assert_eq(wire_decode_session_run_request(BODY(body), &r, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
		       "cell.grantProfile: a cell carries no grant; open the session with "
		       "grantProfile, or send a javascript payload with one");
	body = "{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\",\"code\":\"1\","
	       "\"grantProfile\":\"\"}}";
	cr_assert_eq(wire_decode_session_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
	wire_session_run_request_free(&r);
}

Test(wire_grants, open_session_names_the_sessions_profile)
{
	struct wire_open_session_request o;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_request(
			     BODY("{\"protocol\":3,\"grantProfile\":\"package-index\"}"), &o, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(o.grant_profile, "package-index");
	char *json = wire_encode_open_session_request(&o);
	cr_assert(strstr(json, "\"grantProfile\":\"package-index\""), "%s", json);
	free(json);
	wire_open_session_request_free(&o);
	/* A plimsoll client's open names none; an empty one is none too. */
	cr_assert_eq(wire_decode_open_session_request(BODY("{\"protocol\":3,\"grantProfile\":\"\"}"), &o,
						      &st),
		     0);
	cr_assert_null(o.grant_profile);
	json = wire_encode_open_session_request(&o);
	cr_assert_null(strstr(json, "grantProfile"), "%s", json);
	free(json);
	wire_open_session_request_free(&o);
}

Test(wire_grants, describe_lists_the_callers_profiles_and_a_bad_list_is_data_loss)
{
	const char *origins[] = {"https://api.github.com:443"};
	struct wire_grant_profile g[] = {
		{.name = "github-issues", .description = "issues", .origins = origins, .n_origins = 1},
		{.name = "untrusted", .allow_in_sessions = true},
	};
	struct wire_describe_response d = {.protocol = 3, .supports_javascript_grants = true,
					   .grant_profiles = g, .n_grant_profiles = 2};
	char *json = wire_encode_describe_response(&d);
	cr_assert_str_eq(json, "{\"supportsJavascriptGrants\":true,\"protocol\":3,\"grantProfiles\":["
			       "{\"name\":\"github-issues\",\"description\":\"issues\","
			       "\"origins\":[\"https://api.github.com:443\"]},"
			       "{\"name\":\"untrusted\",\"allowInSessions\":true}]}");
	struct wire_describe_response b;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(BODY(json), &b, &st), 0, "%s", st.msg);
	cr_assert(b.supports_javascript_grants);
	cr_assert_eq(b.n_grant_profiles, 2);
	cr_assert_str_eq(b.grant_profiles[0].name, "github-issues");
	cr_assert_str_eq(b.grant_profiles[0].origins[0], "https://api.github.com:443");
	cr_assert(b.grant_profiles[1].allow_in_sessions);
	cr_assert_str_eq(b.grant_profiles[1].description, "");
	wire_describe_response_free(&b);
	free(json);

	cr_assert_eq(wire_decode_describe_response(BODY("{\"protocol\":3}"), &b, &st), 0);
	cr_assert_eq(b.n_grant_profiles, 0, "a plimsoll daemon lists none");
	wire_describe_response_free(&b);
	cr_assert_eq(wire_decode_describe_response(BODY("{\"grantProfiles\":[1]}"), &b, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
		       "grantProfiles[0] must be a JSON object");
	cr_assert_eq(wire_decode_describe_response(BODY("{\"grantProfiles\":[{\"name\":\"\"}]}"), &b,
						   &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "grantProfiles[0].name is empty");
}
