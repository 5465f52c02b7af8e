/* remote: the forensics procedures on the wire (docs/api.md, Forensics).
 * What the daemon writes its decoders read back whole; each request is read
 * strictly (INVALID_ARGUMENT, marked REQUEST: only its members, a capture's
 * folder absolute and clean, a search's text not empty, a reap naming at
 * least one finding); an answer that does not keep its shape is DATA_LOSS
 * naming the procedure. */
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

Test(wire_operator_forensics, leftovers_round_trip_with_their_kinds_and_refuse_an_unknown_kind)
{
	struct wire_operator_leftovers v = {.l = {.any = true, .engine_pid = 5287,
						  .last_sign_ms = 1700000000000, .paused = 1}};
	v.l.by_kind[BH_LEAK_ABANDONED] = 2;
	v.l.by_kind[BH_LEAK_INTERRUPTED] = 1;
	char *json = wire_operator_encode_leftovers(&v);
	struct wire_operator_leftovers got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_leftovers(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_eq(memcmp(&got.l, &v.l, sizeof v.l), 0, "%s", json);
	free(json);
	cr_assert_eq(wire_operator_decode_leftovers(BODY("{\"byKind\":{\"zombie\":\"1\"}}"), &got,
						    &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, "Leftovers: byKind.\"zombie\" is not a kind");
	cr_assert_eq(wire_operator_decode_empty_request("Leftovers", BODY("{\"x\":1}"), &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "Leftovers: \"x\" is not a member");
}

Test(wire_operator_forensics, an_intent_round_trips_its_code_bytes_and_a_forged_one_is_refused)
{
	static const char code[] = "print('a\0b')";
	struct bh_inflight row = {
		.session = FP, .code_sha256 = FP, .language = "python", .principal = "runner",
		.owner = "acme", .code = code, .code_len = sizeof code - 1, .code_kept = true,
		.sequence = 3, .engine_pid = 42, .started_ms = 1700000000000, .interrupted = true,
	};
	struct wire_operator_intents v = {0};
	cr_assert(wire_operator_intents_add(&v, &row));
	char *json = wire_operator_encode_intents(&v);
	wire_operator_intents_free(&v);
	struct wire_operator_intents got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_intents(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_eq(got.n, 1);
	struct bh_inflight back;
	wire_operator_intent_as_inflight(&got.intents[0], &back);
	cr_assert_eq(back.code_len, sizeof code - 1);
	cr_assert_eq(memcmp(back.code, code, back.code_len), 0);
	cr_assert(back.interrupted && back.code_kept);
	cr_assert_eq(back.sequence, 3);
	cr_assert_str_eq(back.principal, "runner");
	wire_operator_intents_free(&got);
	free(json);
	cr_assert_eq(wire_operator_decode_intents(
			     BODY("{\"intents\":[{\"session\":\"../x\",\"codeSha256\":\"" FP
				  "\",\"sequence\":\"1\"}]}"),
			     &got, &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, "ListIntents: intents[0]: session is not a fingerprint");
	struct wire_operator_intents_request rq;
	cr_assert_eq(wire_operator_decode_intents_request(BODY("{\"session\":\"abc\"}"), &rq, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "64 hex digits");
	cr_assert_eq(wire_operator_decode_intents_request(BODY("{}"), &rq, &st), 0, "%s", st.msg);
	cr_assert_str_eq(rq.session, "");
	wire_operator_intents_request_free(&rq);
}

static int capture_request(const char *body, struct wire_status *st)
{
	struct wire_operator_capture_request r;
	int rc = wire_operator_decode_capture_request(BODY(body), &r, st);
	if (rc == 0)
		wire_operator_capture_request_free(&r);
	return rc;
}

Test(wire_operator_forensics, a_capture_request_names_an_absolute_clean_new_folder_and_clean_work_paths)
{
	struct wire_status st;
	const char *files[] = {"notes.txt", "src/main.py"};
	struct wire_operator_capture_request r = {.target = "bh-1", .dir = "/srv/evidence/case-1",
						  .files = files, .n_files = 2};
	char *json = wire_operator_encode_capture_request(&r);
	struct wire_operator_capture_request got;
	cr_assert_eq(wire_operator_decode_capture_request(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_str_eq(got.dir, "/srv/evidence/case-1");
	cr_assert_eq(got.n_files, 2);
	cr_assert_str_eq(got.files[1], "src/main.py");
	wire_operator_capture_request_free(&got);
	free(json);
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"{\"target\":\"bh-1\",\"dir\":\"case\"}", "absolute path"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/../etc/cron.d\"}", "'..' part"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv//x\"}", "empty part"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/x/\"}", "no trailing slash"},
		{"{\"target\":\"bh-1\",\"dir\":\"/\"}", "not /"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/a\\u0000b\"}", "NUL"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/a\\nb\"}", "control character"},
		{"{\"target\":\"\",\"dir\":\"/srv/x\"}", "name a finding"},
		{"{\"target\":\"bh 1\",\"dir\":\"/srv/x\"}", "holds a byte"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/x\",\"files\":[\"../etc/shadow\"]}",
		 "files[0] has a '.' or '..' segment"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/x\",\"files\":\"notes.txt\"}", "files"},
		{"{\"target\":\"bh-1\",\"dir\":\"/srv/x\",\"overwrite\":true}",
		 "\"overwrite\" is not a member"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_assert_eq(capture_request(bad[i].body, &st), -1, "%s was taken", bad[i].body);
		assert_refused(st, WIRE_INVALID_ARGUMENT, bad[i].says);
		cr_assert_eq(st.reason, WIRE_REFUSAL_REQUEST);
	}
}

Test(wire_operator_forensics, a_captured_answer_round_trips_and_one_without_its_digest_is_refused)
{
	struct wire_operator_captured c = {.dir = "/srv/evidence/case-1", .manifest_sha256 = FP};
	snprintf(c.target.sandbox, sizeof c.target.sandbox, "bh-1");
	snprintf(c.target.fingerprint, sizeof c.target.fingerprint, FP);
	snprintf(c.target.runtime, sizeof c.target.runtime, "crun");
	c.target.held = true;
	char *json = wire_operator_encode_captured(&c);
	struct wire_operator_captured got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_captured(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_str_eq(got.dir, c.dir);
	cr_assert_str_eq(got.manifest_sha256, FP);
	cr_assert(got.target.held);
	cr_assert_str_eq(got.target.runtime, "crun");
	wire_operator_captured_free(&got);
	free(json);
	cr_assert_eq(wire_operator_decode_captured(BODY("{\"dir\":\"/srv/x\"}"), &got, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, "Capture: manifestSha256");
}

Test(wire_operator_forensics, a_search_hit_round_trips_its_bytes_and_a_match_outside_its_snippet_is_refused)
{
	static const uint8_t snip[] = "x = open('/etc/passwd')\xff";
	struct bh_search_hit h = {.id = 7, .session = FP, .sequence = 2, .stream = "code",
				  .snippet = snip, .snippet_len = sizeof snip - 1, .match_at = 10,
				  .match_len = 11, .cut_after = true, .started_unix_ms = 17};
	struct wire_operator_hits v = {0};
	wire_operator_hits_add(&v, &h);
	char *json = wire_operator_encode_hits(&v);
	wire_operator_hits_free(&v);
	struct wire_operator_hits got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_hits(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert_eq(got.n, 1);
	cr_assert_eq(got.hits[0].snippet_len, sizeof snip - 1);
	cr_assert_eq(memcmp(got.hits[0].snippet, snip, sizeof snip - 1), 0);
	cr_assert_eq(got.hits[0].match_at, 10);
	cr_assert(got.hits[0].cut_after && !got.hits[0].cut_before);
	wire_operator_hits_free(&got);
	free(json);
	cr_assert_eq(wire_operator_decode_hits(BODY("{\"hits\":[{\"stream\":\"code\",\"snippet\":"
						     "\"YWJj\",\"matchAt\":2,\"matchLen\":5}]}"),
					       &got, &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, "Search: hits[0]: the match is not inside its snippet");
	cr_assert_eq(wire_operator_decode_hits(BODY("{\"hits\":[{\"stream\":\"env\",\"snippet\":"
						     "\"YWJj\",\"matchLen\":1}]}"),
					       &got, &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, "stream is none of");

	struct wire_operator_search_request rq;
	cr_assert_eq(wire_operator_decode_search_request(BODY("{\"query\":\"code:/etc/passwd\","
							      "\"limit\":5000}"),
						     &rq, &st),
		     0, "%s", st.msg);
	cr_assert_eq(rq.limit, BH_SEARCH_MAX, "a longer limit is shortened to the engine's");
	wire_operator_search_request_free(&rq);
	cr_assert_eq(wire_operator_decode_search_request(BODY("{\"query\":\"code:\"}"), &rq, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "what text?");
	cr_assert_eq(wire_operator_decode_search_request(BODY("{\"query\":\"x\",\"limit\":-1}"), &rq,
							 &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "limit");
}

Test(wire_operator_forensics, a_reap_request_names_its_findings_and_the_answer_is_the_list_it_asked_for)
{
	struct bh_leak l = {.kind = BH_LEAK_INTERRUPTED};
	snprintf(l.sandbox, sizeof l.sandbox, "#3");
	snprintf(l.fingerprint, sizeof l.fingerprint, FP);
	struct wire_operator_reap_request r = {.findings = &l, .n = 1, .dry_run = true};
	char *json = wire_operator_encode_reap_request(&r);
	struct wire_operator_reap_request got;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_reap_request(BODY(json), &got, &st), 0, "%s", st.msg);
	cr_assert(got.dry_run);
	cr_assert_eq(got.n, 1);
	cr_assert_eq(got.findings[0].kind, BH_LEAK_INTERRUPTED);
	cr_assert_str_eq(got.findings[0].sandbox, "#3");
	wire_operator_reap_request_free(&got);
	free(json);
	cr_assert_eq(wire_operator_decode_reap_request(BODY("{\"findings\":[]}"), &got, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "name at least one");
	cr_assert_eq(wire_operator_decode_reap_request(BODY("{}"), &got, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "findings: the list is missing");
	cr_assert_eq(wire_operator_decode_reap_request(BODY("{\"findings\":[{\"kind\":\"meteor\"}]}"),
						       &got, &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, "not a kind of leak");

	struct wire_operator_leaks v = {.leaks = &l, .n = 1};
	char *answer = wire_operator_encode_leaks(WIRE_LEAKS_WOULD_REAP, &v);
	struct wire_operator_leaks back;
	cr_assert_eq(wire_operator_decode_reap(BODY(answer), true, &back, &st), 0, "%s", st.msg);
	cr_assert_eq(back.n, 1);
	wire_operator_leaks_free(&back);
	/* A dry run answered as a reap (or the other way) is not what was asked. */
	cr_assert_eq(wire_operator_decode_reap(BODY(answer), false, &back, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, "Reap: \"wouldReap\" is not a member");
	free(answer);
}
