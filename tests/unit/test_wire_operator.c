/* bulkhead.v1.OperatorService on the wire (docs/api.md): the bytes the daemon
 * writes, read back by the decoders the client and the console use, and the
 * malformed answers those decoders refuse, naming the method and the field. */
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY(s) (s), strlen(s)
#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A refused answer: DATA_LOSS, unmarked, and the message says needle. */
#define assert_refused(st, needle)                                                                 \
	do {                                                                                       \
		cr_assert_eq((st).code, WIRE_DATA_LOSS, "code %s (%s)", wire_code_name((st).code), \
			     (st).msg);                                                            \
		cr_assert_eq((st).reason, WIRE_REFUSAL_UNSPECIFIED, "marked: %s", (st).msg);      \
		cr_assert(strstr((st).msg, (needle)), "message \"%s\" does not say \"%s\"",        \
			  (st).msg, (needle));                                                     \
	} while (0)

static void assert_json(char *got, const char *want)
{
	cr_assert_str_eq(got, want);
	free(got);
}

Test(wire_operator, a_session_is_written_with_64_bit_fields_as_strings_and_zero_values_omitted)
{
	struct wire_operator_session s = {
		.fingerprint = FP, .sandbox = "bh-1", .state = "ready", .isolation = "container",
		.floor = "", .principal = "alice", .owner = NULL, .run_key = "run-1", .calls = 3,
		.last_record_sha256 = "ab", .created_unix_ms = 1700000000000, .expires_unix_ms = -1,
		.awake_ms = 0, .end_reason = NULL,
	};
	assert_json(wire_operator_encode_session(&s),
		    "{\"session\":\"" FP "\",\"sandbox\":\"bh-1\",\"state\":\"ready\","
		    "\"isolation\":\"container\",\"principal\":\"alice\",\"runKey\":\"run-1\","
		    "\"calls\":\"3\",\"lastRecordSha256\":\"ab\",\"createdUnixMs\":\"1700000000000\","
		    "\"expiresUnixMs\":\"-1\"}");
	struct wire_operator_sessions none = {0};
	assert_json(wire_operator_encode_sessions(&none), "{\"sessions\":[]}");
}

Test(wire_operator, sessions_survive_encode_then_decode)
{
	struct wire_operator_session v[2] = {
		{.fingerprint = FP, .state = "paused", .isolation = "kernel", .floor = "container",
		 .calls = 18446744073709551615u, .awake_ms = 12, .last_call_unix_ms = 5},
		{.fingerprint = "x", .state = "ended", .end_reason = "idle_closed"},
	};
	struct wire_operator_sessions in = {v, 2}, out;
	struct wire_status st;
	char *json = wire_operator_encode_sessions(&in);
	cr_assert_eq(wire_operator_decode_sessions(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(out.n, 2);
	cr_assert_str_eq(out.sessions[0].fingerprint, FP);
	cr_assert_str_eq(out.sessions[0].floor, "container");
	cr_assert_eq(out.sessions[0].calls, 18446744073709551615u);
	cr_assert_eq(out.sessions[0].awake_ms, 12);
	cr_assert_eq(out.sessions[0].last_call_unix_ms, 5);
	cr_assert_str_eq(out.sessions[0].end_reason, "", "an absent string reads as \"\"");
	cr_assert_str_eq(out.sessions[1].end_reason, "idle_closed");
	cr_assert_str_eq(out.sessions[1].owner, "");
	wire_operator_sessions_free(&out);

	/* proto3 omits an empty list; that is no list at all, not an error. */
	cr_assert_eq(wire_operator_decode_sessions(BODY("{}"), &out, &st), 0, "%s", st.msg);
	cr_assert_eq(out.n, 0);
	wire_operator_sessions_free(&out);
}

Test(wire_operator, a_malformed_sessions_answer_is_refused_naming_the_method_and_the_field)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"[]", "ListSessions: the answer is not a JSON object"},
		{"{\"sessions\":{}}", "ListSessions: sessions must be a JSON array"},
		{"{\"sessions\":[7]}", "ListSessions: sessions[0] must be a JSON object"},
		{"{\"sessions\":[{\"calls\":true}]}", "ListSessions: sessions[0].calls must be an integer"},
		{"{\"sessions\":[{},{\"calls\":\"3x\"}]}", "sessions[1].calls must be an integer"},
		{"{\"sessions\":[{\"calls\":-1}]}", "sessions[0].calls must not be negative"},
		{"{\"sessions\":[{\"calls\":1e300}]}", "sessions[0].calls is a number too large"},
		{"{\"sessions\":[{\"state\":3}]}", "sessions[0].state must be a string"},
		{"{\"sessions\":[{\"state\":\"a\",\"state\":\"b\"}]}", "sessions[0].state is given more than once"},
		{"{\"sessions\":[{\"owner\":\"\xff\"}]}", "sessions[0].owner is not valid UTF-8"},
		{"{\"sessions\":[{\"createdUnixMs\":\"99999999999999999999\"}]}",
		 "sessions[0].createdUnixMs is out of range"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct wire_operator_sessions out;
		struct wire_status st;
		cr_assert_eq(wire_operator_decode_sessions(BODY(bad[i].body), &out, &st), -1, "%s",
			     bad[i].body);
		assert_refused(st, bad[i].says);
		cr_assert_eq(out.n, 0);
		cr_assert_null(out.sessions, "a refused answer leaves nothing behind");
	}
}

Test(wire_operator, unknown_fields_are_ignored_as_connect_go_discards_them)
{
	struct wire_operator_session s;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_session(BODY("{\"session\":\"" FP "\",\"future\":[1,{}]}"),
						  &s, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(s.fingerprint, FP);
	wire_operator_session_free(&s);
}

Test(wire_operator, close_and_the_actions_answers)
{
	struct wire_operator_closed in = {.session = FP, .calls = 2, .last_record_sha256 = "cd",
					  .end_reason = "closed"},
				    out;
	struct wire_status st;
	char *json = wire_operator_encode_closed(&in);
	cr_assert_str_eq(json, "{\"session\":\"" FP "\",\"calls\":\"2\",\"lastRecordSha256\":\"cd\","
			       "\"endReason\":\"closed\"}");
	cr_assert_eq(wire_operator_decode_closed(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(out.calls, 2);
	cr_assert_str_eq(out.end_reason, "closed");
	wire_operator_closed_free(&out);
	cr_assert_eq(wire_operator_decode_closed(BODY("{\"calls\":[]}"), &out, &st), -1);
	assert_refused(st, "Close: calls must be an integer");

	assert_json(wire_operator_encode_done(), "{}");
	cr_assert_eq(wire_operator_decode_done("Pause", BODY("{}"), &st), 0);
	cr_assert_eq(wire_operator_decode_done("Pause", BODY("ok"), &st), -1);
	assert_refused(st, "Pause: the answer is not a JSON object");
}

Test(wire_operator, leaks_are_written_under_their_list_and_refused_when_they_do_not_fit)
{
	struct bh_leak l = {.kind = BH_LEAK_ORPHAN, .first_seen_ms = 7};
	snprintf(l.sandbox, sizeof l.sandbox, "bh-x");
	snprintf(l.runtime, sizeof l.runtime, "crun");
	struct wire_operator_leaks in = {&l, 1}, out;
	struct wire_status st;
	char *json = wire_operator_encode_leaks(WIRE_LEAKS_WOULD_REAP, &in);
	cr_assert_str_eq(json, "{\"wouldReap\":[{\"kind\":\"orphan\",\"sandbox\":\"bh-x\","
			       "\"runtime\":\"crun\",\"firstSeenUnixMs\":\"7\"}]}");
	cr_assert_eq(wire_operator_decode_leaks(BODY(json), WIRE_LEAKS_WOULD_REAP, &out, &st), 0,
		     "%s", st.msg);
	free(json);
	cr_assert_eq(out.n, 1);
	cr_assert_eq(out.leaks[0].kind, BH_LEAK_ORPHAN);
	cr_assert_str_eq(out.leaks[0].sandbox, "bh-x");
	cr_assert_eq(out.leaks[0].first_seen_ms, 7);
	wire_operator_leaks_free(&out);
	struct wire_operator_leaks none = {0};
	assert_json(wire_operator_encode_leaks(WIRE_LEAKS_FOUND, &none), "{\"leaks\":[]}");
	assert_json(wire_operator_encode_leaks(WIRE_LEAKS_REAPED, &none), "{\"reaped\":[]}");

	cr_assert_eq(wire_operator_decode_leaks(BODY("{\"leaks\":[{\"kind\":\"ghost_town\"}]}"),
					       WIRE_LEAKS_FOUND, &out, &st), -1);
	assert_refused(st, "Leaks: leaks[0].kind \"ghost_town\" is not a kind of leak");
	cr_assert_eq(wire_operator_decode_leaks(BODY("{\"leaks\":[{}]}"), WIRE_LEAKS_FOUND, &out,
					       &st), -1);
	assert_refused(st, "leaks[0].kind \"\" is not a kind of leak");
	cr_assert_eq(wire_operator_decode_leaks(BODY("{\"reaped\":[{\"kind\":\"orphan\","
						     "\"runtime\":\"crun-and-more\"}]}"),
					       WIRE_LEAKS_REAPED, &out, &st), -1);
	assert_refused(st, "Gc: reaped[0].runtime is longer than 7 bytes");
	cr_assert_eq(wire_operator_decode_leaks(BODY("{\"leaks\":[{\"kind\":\"orphan\","
						     "\"firstSeenUnixMs\":\"soon\"}]}"),
					       WIRE_LEAKS_FOUND, &out, &st), -1);
	assert_refused(st, "leaks[0].firstSeenUnixMs must be an integer");
}

Test(wire_operator, evidence_survives_encode_then_decode)
{
	struct bh_evidence_line lines[2] = {{"seccomp", "2", "2", true}, {"userns", "no", "yes", false}};
	struct wire_operator_tier tiers[2] = {
		{.tier = "container", .offered = true, .runtime = "crun", .runtime_version = "crun 1.8",
		 .environment = "env-1", .evidence = lines, .n_evidence = 2},
		{.tier = "vm", .reason = "no runtime"},
	};
	struct wire_operator_evidence in = {.strongest = "container", .proving = true,
					    .tiers = tiers, .n_tiers = 2},
				      out;
	struct wire_status st;
	char *json = wire_operator_encode_evidence(&in);
	cr_assert_str_eq(json, "{\"strongest\":\"container\",\"proving\":true,\"tiers\":["
			       "{\"tier\":\"container\",\"offered\":true,\"runtime\":\"crun\","
			       "\"runtimeVersion\":\"crun 1.8\",\"environment\":\"env-1\",\"evidence\":["
			       "{\"check\":\"seccomp\",\"value\":\"2\",\"expect\":\"2\",\"ok\":true},"
			       "{\"check\":\"userns\",\"value\":\"no\",\"expect\":\"yes\"}]},"
			       "{\"tier\":\"vm\",\"reason\":\"no runtime\",\"evidence\":[]}]}");
	cr_assert_eq(wire_operator_decode_evidence(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert(out.proving);
	cr_assert_eq(out.n_tiers, 2);
	cr_assert(out.tiers[0].offered);
	cr_assert_eq(out.tiers[0].n_evidence, 2);
	cr_assert_str_eq(out.tiers[0].evidence[1].expect, "yes");
	cr_assert_not(out.tiers[0].evidence[1].ok);
	cr_assert_str_eq(out.tiers[1].reason, "no runtime");
	wire_operator_evidence_free(&out);

	cr_assert_eq(wire_operator_decode_evidence(
			     BODY("{\"tiers\":[{\"tier\":\"kernel\",\"evidence\":[{\"ok\":\"yes\"}]}]}"),
			     &out, &st), -1);
	assert_refused(st, "Evidence: tiers[0].evidence[0].ok must be true or false");
}

static struct bh_record a_record(uint64_t sequence)
{
	struct bh_record r;
	memset(&r, 0, sizeof r);
	r.version = 2;
	r.provider = "bulkhead";
	r.isolation = "container";
	r.environment = r.policy = r.software_identity = r.software_rule_id = r.unanswered = "";
	snprintf(r.session, sizeof r.session, FP);
	r.sequence = sequence;
	r.started_unix_ms = 10;
	snprintf(r.record_sha256, sizeof r.record_sha256, "%064d", 0);
	return r;
}

Test(wire_operator, a_page_of_records_keeps_its_rows_and_cursors)
{
	struct bh_record rec[2] = {a_record(1), a_record(2)};
	struct wire_operator_records page = {0}, out;
	struct bh_record_row rows[2] = {
		{.id = 41, .record = &rec[0], .language = "python", .flags = "", .exit_code = 0,
		 .duration_us = 900},
		{.id = 42, .record = &rec[1], .language = "javascript", .flags = "timed_out",
		 .exit_code = -9, .duration_us = 0},
	};
	wire_operator_records_add(&page, &rows[0]);
	wire_operator_records_add(&page, &rows[1]);
	page.next_after_id = 42;
	page.next_before_id = 41;
	struct wire_status st;
	char *json = wire_operator_encode_records(&page);
	wire_operator_records_free(&page);
	cr_assert(strstr(json, "{\"records\":[{\"id\":\"41\",\"record\":{\"version\":2,"), "%s", json);
	cr_assert(strstr(json, "\"language\":\"javascript\",\"exitCode\":-9,\"flags\":\"timed_out\"}"),
		  "%s", json);
	cr_assert(strstr(json, "],\"nextAfterId\":\"42\",\"nextBeforeId\":\"41\"}"), "%s", json);
	cr_assert_eq(wire_operator_decode_records(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(out.n, 2);
	cr_assert_eq(out.rows[1].id, 42);
	cr_assert_eq(out.rows[1].record.sequence, 2);
	cr_assert_str_eq(out.rows[1].record.provider, "bulkhead");
	cr_assert_eq(out.rows[1].exit_code, -9);
	cr_assert_eq(out.rows[0].duration_us, 900);
	cr_assert_eq(out.next_after_id, 42);
	cr_assert_eq(out.next_before_id, 41);
	wire_operator_records_free(&out);

	struct wire_operator_records none = {0};
	assert_json(wire_operator_encode_records(&none), "{\"records\":[]}");
}

Test(wire_operator, a_record_row_without_its_record_or_with_a_bad_one_is_refused)
{
	struct wire_operator_records out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_records(BODY("{\"records\":[{\"id\":\"1\"}]}"), &out, &st),
		     -1);
	assert_refused(st, "ListRecords: records[0] carries no record");
	cr_assert_eq(wire_operator_decode_records(
			     BODY("{\"records\":[{\"record\":{\"sequence\":\"one\"}}]}"), &out, &st),
		     -1);
	assert_refused(st, "records[0].record.sequence must be an integer");
	cr_assert_eq(wire_operator_decode_records(BODY("{\"records\":[{\"record\":{},\"exitCode\":"
						       "4294967296}]}"),
						  &out, &st),
		     -1);
	assert_refused(st, "records[0].exitCode is out of range");
	cr_assert_eq(wire_operator_decode_records(BODY("{\"nextAfterId\":1.5}"), &out, &st), -1);
	assert_refused(st, "nextAfterId must be a whole number");
}

Test(wire_operator, a_page_of_events_survives_encode_then_decode)
{
	struct wire_operator_events page = {0}, out;
	wire_operator_events_add(&page, &(struct bh_event){.id = 3, .at_unix_ms = 9, .kind = "open",
							  .session = FP, .sandbox = "bh-1",
							  .detail = "container"});
	page.next_after_id = page.next_before_id = 3;
	struct wire_status st;
	char *json = wire_operator_encode_events(&page);
	wire_operator_events_free(&page);
	cr_assert_str_eq(json, "{\"events\":[{\"id\":\"3\",\"atUnixMs\":\"9\",\"kind\":\"open\","
			       "\"session\":\"" FP "\",\"sandbox\":\"bh-1\",\"detail\":\"container\"}],"
			       "\"nextAfterId\":\"3\",\"nextBeforeId\":\"3\"}");
	cr_assert_eq(wire_operator_decode_events(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(out.n, 1);
	cr_assert_str_eq(out.events[0].detail, "container");
	wire_operator_events_free(&out);
	cr_assert_eq(wire_operator_decode_events(BODY("{\"events\":[{\"kind\":{}}]}"), &out, &st), -1);
	assert_refused(st, "ListEvents: events[0].kind must be a string");
}

Test(wire_operator, files_and_a_file_survive_encode_then_decode)
{
	struct bh_file_entry e[2] = {{.name = "a.txt", .type = 'f', .size = 5, .mtime_ms = 1},
				     {.name = "l", .type = 'l', .target = "a.txt"}};
	struct wire_operator_files in = {e, 2, true}, out;
	struct wire_status st;
	char *json = wire_operator_encode_files(&in);
	cr_assert_str_eq(json, "{\"entries\":[{\"name\":\"a.txt\",\"type\":\"f\",\"size\":\"5\","
			       "\"mtimeUnixMs\":\"1\"},{\"name\":\"l\",\"type\":\"l\",\"target\":"
			       "\"a.txt\"}],\"more\":true}");
	cr_assert_eq(wire_operator_decode_files(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(out.n, 2);
	cr_assert_eq(out.entries[1].type, 'l');
	cr_assert_str_eq(out.entries[1].target, "a.txt");
	cr_assert(out.more);
	wire_operator_files_free(&out);
	cr_assert_eq(wire_operator_decode_files(BODY("{\"entries\":[{\"type\":\"file\"}]}"), &out,
						&st), -1);
	assert_refused(st, "ListFiles: entries[0].type must be one character");

	struct wire_operator_file f = {(const uint8_t *)"hi\0", 3, 10, true}, g;
	json = wire_operator_encode_file(&f);
	cr_assert_str_eq(json, "{\"content\":\"aGkA\",\"size\":\"10\",\"truncated\":true}");
	cr_assert_eq(wire_operator_decode_file(BODY(json), &g, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_eq(g.len, 3);
	cr_assert(!memcmp(g.content, "hi\0", 3));
	wire_operator_file_free(&g);
	cr_assert_eq(wire_operator_decode_file(BODY("{\"content\":\"%%\"}"), &g, &st), -1);
	assert_refused(st, "ReadFile: content must be base64");
}

Test(wire_operator, requests_are_written_with_only_what_they_ask)
{
	assert_json(wire_operator_encode_request(&(struct wire_operator_request){0}), "{}");
	assert_json(wire_operator_encode_request(&(struct wire_operator_request){
			    .session = FP, .newest = true, .before_id = 77, .limit = 1000}),
		    "{\"session\":\"" FP "\",\"newest\":true,\"beforeId\":\"77\",\"limit\":1000}");
	/* A sequence is sent even when 0, and a session even when empty: the
	 * daemon refuses them rather than answer every record. */
	assert_json(wire_operator_encode_request(&(struct wire_operator_request){
			    .session = "", .has_sequence = true}),
		    "{\"session\":\"\",\"sequence\":\"0\"}");
	assert_json(wire_operator_encode_request(&(struct wire_operator_request){
			    .after_id = 5, .wait_ms = 100}),
		    "{\"afterId\":\"5\",\"waitMs\":100}");
	assert_json(wire_operator_encode_request(&(struct wire_operator_request){.dry_run = true}),
		    "{\"dryRun\":true}");
}

Test(wire_operator, the_daemon_reads_requests_as_leniently_as_it_always_has)
{
	struct wire_operator_request r;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_request(BODY("{}"), &r, &st), 0);
	cr_assert_null(r.session);
	cr_assert_not(r.has_session);
	cr_assert_eq(r.limit, WIRE_OPERATOR_PAGE_DEFAULT);
	cr_assert_eq(r.max_bytes, WIRE_OPERATOR_READ_DEFAULT);
	cr_assert_str_eq(r.path, "", "no path is /work itself");
	wire_operator_request_free(&r);

	cr_assert_eq(wire_operator_decode_request(
			     BODY("{\"session\":7,\"afterId\":12,\"beforeId\":\"34\",\"limit\":5000,"
				  "\"waitMs\":90000,\"path\":null,\"maxBytes\":9999999,"
				  "\"sequence\":\"-3\",\"newest\":1}"),
			     &r, &st),
		     0);
	cr_assert(r.has_session, "a session of another type is still a session sent");
	cr_assert_null(r.session);
	cr_assert_eq(r.after_id, 12);
	cr_assert_eq(r.before_id, 34);
	cr_assert_eq(r.limit, WIRE_OPERATOR_PAGE_MAX);
	cr_assert_eq(r.wait_ms, WIRE_OPERATOR_WAIT_MAX_MS);
	cr_assert_null(r.path, "a path that is not a string is for the daemon to refuse");
	cr_assert_eq(r.max_bytes, WIRE_OPERATOR_READ_DEFAULT);
	cr_assert(r.has_sequence);
	cr_assert_eq(r.sequence, 0, "a sequence below 1 is no record's");
	cr_assert_not(r.newest, "only true is newest");
	wire_operator_request_free(&r);

	cr_assert_eq(wire_operator_decode_request(BODY("[1]"), &r, &st), -1);
	cr_assert_eq(st.code, WIRE_INVALID_ARGUMENT);
	cr_assert_eq(st.reason, WIRE_REFUSAL_REQUEST);
}

/* ---- truth ---- */

/* Describe's fields ride on a Session: the cell in flight, the clocks, the
 * evidence and the end's detail survive the codec, and a clock that is not
 * an integer is refused naming it. */
Test(wire_operator, describes_fields_survive_encode_then_decode_and_a_bad_clock_is_refused)
{
	struct wire_operator_session in = {
		.fingerprint = FP, .state = "busy", .isolation = "kernel",
		.call_code = "import time\ntime.sleep(8)", .call_language = "python",
		.call_started_unix_ms = 1796126930000, .pauses_unix_ms = 0,
		.hibernates_unix_ms = 1796127829811,
		.evidence = "bulkhead-sandbox:sha256:" FP, .end_detail = "",
	};
	char *json = wire_operator_encode_session(&in);
	cr_assert_null(strstr(json, "pausesUnixMs"), "a clock not running is omitted: %s", json);
	struct wire_operator_session out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_session(BODY(json), &out, &st), 0, "%s", st.msg);
	free(json);
	cr_assert_str_eq(out.call_code, "import time\ntime.sleep(8)");
	cr_assert_str_eq(out.call_language, "python");
	cr_assert_eq(out.call_started_unix_ms, 1796126930000);
	cr_assert_eq(out.pauses_unix_ms, 0);
	cr_assert_eq(out.hibernates_unix_ms, 1796127829811);
	cr_assert_str_eq(out.evidence, "bulkhead-sandbox:sha256:" FP);
	cr_assert_str_eq(out.end_detail, "");
	wire_operator_session_free(&out);

	cr_assert_eq(wire_operator_decode_session(BODY("{\"session\":\"x\",\"pausesUnixMs\":\"soon\"}"),
						  &out, &st),
		     -1);
	assert_refused(st, "GetSession: pausesUnixMs");
}
