/* plimsoll.v1 on the wire: what a plimsoll client sends bulkhead and what it
 * reads back. Byte strings below are computed by hand from the field numbers
 * in plimsoll's proto/plimsoll/v1/sandbox.proto. */
#include "wire.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY(s) (s), strlen(s)

static char *repeat(const char *unit, size_t n)
{
	size_t u = strlen(unit);
	char *s = malloc(u * n + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * u, unit, u);
	s[u * n] = '\0';
	return s;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = NULL;
	cr_assert(vasprintf(&s, f, ap) >= 0);
	va_end(ap);
	return s;
}

static void assert_bytes(const struct wire_bytes *b, const uint8_t *want, size_t n)
{
	cr_assert_eq(b->len, n, "length %zu, want %zu", b->len, n);
	cr_assert(!memcmp(b->data, want, n), "the bytes differ");
}

/* A decode that must be refused: the code, the mark and a word of the message. */
#define assert_refused(st, want_code, want_reason, needle)                                         \
	do {                                                                                       \
		cr_assert_eq((st).code, (want_code), "code %s, want %s (%s)",                     \
			     wire_code_name((st).code), wire_code_name(want_code), (st).msg);      \
		cr_assert_eq((st).reason, (want_reason), "reason %s, want %s (%s)",               \
			     wire_refusal_name((st).reason), wire_refusal_name(want_reason),       \
			     (st).msg);                                                            \
		cr_assert(strstr((st).msg, (needle)), "message \"%s\" does not name \"%s\"",       \
			  (st).msg, (needle));                                                     \
	} while (0)

static int run_req(const char *body, struct wire_status *st)
{
	struct wire_run_request r;
	int rc = wire_decode_run_request(body, strlen(body), &r, st);
	wire_run_request_free(&r);
	return rc;
}

static int session_req(const char *body, struct wire_status *st)
{
	struct wire_session_run_request r;
	int rc = wire_decode_session_run_request(body, strlen(body), &r, st);
	wire_session_run_request_free(&r);
	return rc;
}

/* A SessionRun body with one cell whose files are `files` (a JSON array). */
static char *cell_with_files(const char *files)
{
	return fmt("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\","
		   "\"code\":\"1\",\"files\":%s}}",
		   files);
}

/* ---- bodies ---------------------------------------------------------------- */

static char *nested(int arrays)
{
	char *open = repeat("[", (size_t)arrays), *close = repeat("]", (size_t)arrays);
	char *s = fmt("{\"a\":%s%s}", open, close);
	free(open);
	free(close);
	return s;
}

Test(wire, a_body_nesting_64_levels_is_accepted)
{
	char *body = nested(63); /* the object is level 1 */
	cJSON *root = NULL;
	char *why = NULL;
	cr_assert_eq(wire_parse_body(body, strlen(body), &root, &why), 0, "%s", why);
	cJSON_Delete(root);
	free(body);
}

Test(wire, a_body_nesting_65_levels_is_refused_before_cjson_parses_it)
{
	char *body = nested(64);
	cJSON *root = NULL;
	char *why = NULL;
	cr_assert_eq(wire_parse_body(body, strlen(body), &root, &why), -1);
	cr_assert_null(root);
	cr_assert(strstr(why, "deeper than 64"), "%s", why);
	free(why);
	free(body);
	/* Far deeper than cJSON's own limit is refused the same way. */
	char *deep = repeat("[", 100000);
	cr_assert_eq(wire_parse_body(deep, strlen(deep), &root, &why), -1);
	free(why);
	free(deep);
}

Test(wire, brackets_inside_strings_do_not_count_as_nesting)
{
	char *s = repeat("[", 200);
	char *body = fmt("{\"a\":\"%s\"}", s);
	cJSON *root = NULL;
	char *why = NULL;
	cr_assert_eq(wire_parse_body(body, strlen(body), &root, &why), 0, "%s", why);
	cJSON_Delete(root);
	free(body);
	free(s);
}

Test(wire, a_body_that_is_not_one_json_object_is_refused)
{
	const char *bad[] = {"", "[1]", "42", "\"x\"", "{\"a\":1", "{} {}", "{\"a\":1}x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cJSON *root = NULL;
		char *why = NULL;
		cr_assert_eq(wire_parse_body(bad[i], strlen(bad[i]), &root, &why), -1, "accepted %s",
			     bad[i]);
		cr_assert_not_null(why);
		free(why);
	}
	cJSON *root = NULL;
	char *why = NULL;
	cr_assert_eq(wire_parse_body(BODY(" {} \n"), &root, &why), 0);
	cJSON_Delete(root);
}

Test(wire, a_nul_escape_is_refused_naming_the_member_it_would_have_cut)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":{\"code\":\"a\\u0000b\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "\"code\"");
	cr_assert(strstr(st.msg, "NUL"), "%s", st.msg);
	/* An escaped backslash before "u0000" is text, not a NUL. */
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":{\"code\":\"a\\\\u0000\"}}", &st), 0,
		     "%s", st.msg);
}

Test(wire, a_raw_control_character_inside_a_string_is_refused)
{
	cJSON *root = NULL;
	char *why = NULL;
	cr_assert_eq(wire_parse_body(BODY("{\"a\":\"x\ty\"}"), &root, &why), -1);
	cr_assert(strstr(why, "control character"), "%s", why);
	free(why);
}

/* ---- the protocol gate ------------------------------------------------------- */

Test(wire, a_request_without_protocol_is_invalid_argument_marked_protocol)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"javascript\":{\"code\":\"1\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_PROTOCOL, "protocol");
	cr_assert_eq(run_req("{\"protocol\":0,\"javascript\":{\"code\":\"1\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_PROTOCOL, "protocol is required");
	cr_assert_eq(wire_code_http_status(st.code), 400);
}

Test(wire, another_protocol_is_unimplemented_marked_protocol_before_the_payload_is_read)
{
	struct wire_status st;
	/* The payload is malformed too: the gate answers first. */
	cr_assert_eq(run_req("{\"protocol\":2,\"cell\":\"not an object\"}", &st), -1);
	assert_refused(st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_PROTOCOL, "protocol 2");
	cr_assert(strstr(st.msg, "serves protocol 3"), "%s", st.msg);
	cr_assert_eq(wire_code_http_status(st.code), 501);
	cr_assert_eq(session_req("{\"protocol\":\"4\",\"sessionId\":\"x\"}", &st), -1);
	assert_refused(st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_PROTOCOL, "protocol 4");
	struct wire_close_session_request c;
	cr_assert_eq(wire_decode_close_session_request(BODY("{\"protocol\":1}"), &c, &st), -1);
	assert_refused(st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_PROTOCOL, "protocol 1");
	struct wire_open_session_request o;
	cr_assert_eq(wire_decode_open_session_request(BODY("{}"), &o, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_PROTOCOL, "protocol");
}

Test(wire, protocol_3_passes_the_gate)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}", &st), 0, "%s",
		     st.msg);
	cJSON *root = cJSON_Parse("{\"protocol\":\"3\"}");
	cr_assert_eq(wire_check_protocol(root, &st), 0, "%s", st.msg);
	cJSON_Delete(root);
}

/* ---- requests: proto3 JSON reading ---------------------------------------------- */

Test(wire, a_run_request_decodes_camel_case_and_snake_case_names)
{
	const char *body = "{\"protocol\":3,\"minimum_isolation\":\"kernel\",\"traceId\":\"t-1:a.b\","
			   "\"timeout_ms\":\"5000\",\"javascript\":{\"code\":\"console.log(1)\","
			   "\"grant_profile\":null},\"somethingNewer\":{\"x\":[1,2]}}";
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.env.protocol, 3);
	cr_assert_str_eq(r.env.minimum_isolation, "kernel");
	cr_assert_eq(r.env.floor, BH_TIER_KERNEL);
	cr_assert_str_eq(r.env.trace_id, "t-1:a.b");
	cr_assert_not(r.env.trace_id_rejected);
	cr_assert_eq(r.env.timeout_ms, 5000);
	cr_assert_eq(r.kind, WIRE_PAYLOAD_JAVASCRIPT);
	cr_assert_eq(r.payloads, WIRE_PAYLOAD_JAVASCRIPT);
	cr_assert_str_eq(r.javascript.code, "console.log(1)");
	cr_assert_eq(r.javascript.code_len, 14);
	cr_assert_str_eq(r.javascript.grant_profile, "");
	cr_assert_null(r.env.rule.mode);
	wire_run_request_free(&r);
}

Test(wire, a_field_of_the_wrong_type_is_refused_naming_the_field)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"timeoutMs\":true,\"javascript\":{\"code\":\"1\"}}", &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "timeoutMs");
	cr_assert_eq(run_req("{\"protocol\":3,\"timeoutMs\":1.5,\"javascript\":{\"code\":\"1\"}}", &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "timeoutMs");
	cr_assert_eq(run_req("{\"protocol\":3,\"timeoutMs\":2147483648,\"javascript\":{\"code\":\"1\"}}",
			     &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "timeoutMs is out of range");
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":{\"code\":7}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "javascript.code must be a string");
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":[]}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "javascript must be a JSON object");
}

Test(wire, a_field_sent_under_both_names_is_refused)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"timeoutMs\":1,\"timeout_ms\":2,"
			     "\"javascript\":{\"code\":\"1\"}}",
			     &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "timeoutMs is given more than once");
}

Test(wire, none_is_not_a_floor)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"minimumIsolation\":\"none\",\"javascript\":{\"code\":\"1\"}}",
			     &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "minimumIsolation");
	cr_assert(strstr(st.msg, "\"none\""), "%s", st.msg);
	cr_assert_eq(run_req("{\"protocol\":3,\"minimumIsolation\":\"Kernel\",\"javascript\":{\"code\":\"1\"}}",
			     &st),
		     -1);
	const char *floors[] = {"process", "container", "kernel", "vm"};
	for (int i = 0; i < 4; i++) {
		char *body = fmt("{\"protocol\":3,\"minimumIsolation\":\"%s\",\"javascript\":{\"code\":\"1\"}}",
				 floors[i]);
		struct wire_run_request r;
		cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
		cr_assert_eq(r.env.floor, BH_TIER_PROCESS + i);
		wire_run_request_free(&r);
		free(body);
	}
}

Test(wire, an_invalid_trace_id_is_dropped_and_flagged_not_refused)
{
	char *long_id = repeat("a", 65);
	const char *bad[] = {"has space", "../etc", "é", long_id};
	for (size_t i = 0; i < 4; i++) {
		char *body = fmt("{\"protocol\":3,\"traceId\":\"%s\",\"javascript\":{\"code\":\"1\"}}", bad[i]);
		struct wire_run_request r;
		struct wire_status st;
		cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
		cr_assert_null(r.env.trace_id, "kept %s", bad[i]);
		cr_assert(r.env.trace_id_rejected);
		wire_run_request_free(&r);
		free(body);
	}
	free(long_id);
	char *ok = repeat("a", 64);
	char *body = fmt("{\"protocol\":3,\"traceId\":\"%s\",\"javascript\":{\"code\":\"1\"}}", ok);
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(BODY(body), &r, &st), 0);
	cr_assert_str_eq(r.env.trace_id, ok);
	cr_assert_not(r.env.trace_id_rejected);
	wire_run_request_free(&r);
	free(body);
	free(ok);
}

Test(wire, a_software_rule_must_have_its_shape)
{
	struct wire_status st;
	struct {
		const char *rule, *needle;
	} cases[] = {
		{"{\"mode\":\"exact\",\"identities\":[\"a\",\"b\"]}", "exactly one identity"},
		{"{\"mode\":\"exact\"}", "exactly one identity"},
		{"{\"mode\":\"approved\",\"identities\":[]}", "1 to 32 identities"},
		{"{\"mode\":\"newest\",\"identities\":[\"a\"]}", "softwareRule.mode must be exact or approved"},
		{"{\"mode\":\"exact\",\"identities\":[\"a b\"]}", "softwareRule.identities[0] has a character"},
		{"{\"mode\":\"exact\",\"identities\":[\"\"]}", "softwareRule.identities[0] is empty"},
		{"{\"mode\":\"approved\",\"identities\":[\"a\",\"b\",\"a\"]}", "identities[2] repeats identities[0]"},
		{"{\"mode\":\"approved\",\"identities\":[1]}", "softwareRule.identities[0]"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *body = fmt("{\"protocol\":3,\"softwareRule\":%s,\"javascript\":{\"code\":\"1\"}}",
				 cases[i].rule);
		cr_assert_eq(run_req(body, &st), -1, "accepted %s", cases[i].rule);
		assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, cases[i].needle);
		free(body);
	}
	char *ids = fmt("[%s\"x32\"]", "\"x1\",\"x2\",\"x3\",\"x4\",\"x5\",\"x6\",\"x7\",\"x8\",\"x9\",\"x10\","
				       "\"x11\",\"x12\",\"x13\",\"x14\",\"x15\",\"x16\",\"x17\",\"x18\",\"x19\","
				       "\"x20\",\"x21\",\"x22\",\"x23\",\"x24\",\"x25\",\"x26\",\"x27\",\"x28\","
				       "\"x29\",\"x30\",\"x31\",\"x33\",");
	char *body = fmt("{\"protocol\":3,\"softwareRule\":{\"mode\":\"approved\",\"identities\":%s},"
			 "\"javascript\":{\"code\":\"1\"}}",
			 ids);
	cr_assert_eq(run_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "it holds 33");
	free(body);
	free(ids);
	/* An empty rule is no rule; a good one is kept. */
	struct wire_run_request r;
	cr_assert_eq(wire_decode_run_request(BODY("{\"protocol\":3,\"softwareRule\":{},\"javascript\":"
						  "{\"code\":\"1\"}}"),
					     &r, &st),
		     0);
	cr_assert_null(r.env.rule.mode);
	wire_run_request_free(&r);
	cr_assert_eq(wire_decode_run_request(BODY("{\"protocol\":3,\"softwareRule\":{\"mode\":\"exact\","
						  "\"identities\":[\"oci-manifest:linux/amd64@sha256:ab\"]},"
						  "\"javascript\":{\"code\":\"1\"}}"),
					     &r, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(r.env.rule.mode, "exact");
	cr_assert_eq(r.env.rule.n_identities, 1);
	wire_run_request_free(&r);
}

/* ---- requests: payloads -------------------------------------------------------------- */

Test(wire, a_request_without_a_payload_or_with_two_is_invalid_argument)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "no payload");
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":null}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "no payload");
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"javascript\":{\"code\":\"1\"},"
				 "\"cell\":{\"language\":\"python\",\"code\":\"1\"}}",
				 &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "javascript and cell");
}

Test(wire, a_cell_on_run_is_refused_because_a_cell_runs_only_in_a_session)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"cell\":{\"language\":\"python\",\"code\":\"1\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "only in a session");
}

/* ---- project: a project decodes now (tests/unit/test_project.c holds its
 * limits); one without steps is a malformed request, not an unsupported one ---- */
Test(wire, a_module_is_unimplemented_marked_unsupported_and_a_project_decodes)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":3,\"project\":{\"steps\":[\"make\"]}}", &st), 0, "%s",
		     st.msg);
	cr_assert_eq(run_req("{\"protocol\":3,\"module\":{\"model\":\"m\"}}", &st), -1);
	assert_refused(st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_UNSUPPORTED, "module");
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"project\":{}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "project.steps");
	/* SessionRun has no module field: it is an unknown field, ignored. */
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"module\":{},"
				 "\"javascript\":{\"code\":\"1\"}}",
				 &st),
		     0, "%s", st.msg);
}

Test(wire, a_session_cell_decodes_with_its_files)
{
	const char *body = "{\"protocol\":3,\"sessionId\":\"0123456789abcdef0123456789abcdef\","
			   "\"timeoutMs\":30000,\"cell\":{\"language\":\"python\",\"code\":\"len(rows)\","
			   "\"files\":[{\"path\":\"data/orders.csv\",\"content\":\"id,total\\n1,2\\n\"},"
			   "{\"path\":\"empty.txt\"}]}}";
	struct wire_session_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
	cr_assert_str_eq(r.session_id, "0123456789abcdef0123456789abcdef");
	cr_assert_eq(r.call.kind, WIRE_PAYLOAD_CELL);
	cr_assert_eq(r.call.cell.language, BH_LANG_PYTHON);
	cr_assert_str_eq(r.call.cell.code, "len(rows)");
	cr_assert_eq(r.call.cell.n_files, 2);
	cr_assert_str_eq(r.call.cell.files[0].path, "data/orders.csv");
	cr_assert_eq(r.call.cell.files[0].len, 13);
	cr_assert(!memcmp(r.call.cell.files[0].content, "id,total\n1,2\n", 13));
	cr_assert_str_eq(r.call.cell.files[1].path, "empty.txt");
	cr_assert_eq(r.call.cell.files[1].len, 0);
	cr_assert_eq(r.call.env.timeout_ms, 30000);
	wire_session_run_request_free(&r);
}

Test(wire, cell_language_and_code_are_checked)
{
	struct wire_status st;
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"ruby\","
				 "\"code\":\"1\"}}",
				 &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.language must be javascript or python");
	cr_assert(strstr(st.msg, "\"ruby\""), "%s", st.msg);
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"code\":\"1\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.language is required");
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"javascript\"}}",
				 &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.code is required");
	cr_assert_eq(session_req("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\","
				 "\"code\":\"\xff\xfe\"}}",
				 &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.code is not valid UTF-8");
	cr_assert_eq(run_req("{\"protocol\":3,\"javascript\":{\"code\":\"\"}}", &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "javascript.code is required");
}

Test(wire, code_over_256_kib_is_refused_and_256_kib_is_not)
{
	struct wire_status st;
	char *code = repeat("x", 256 * 1024);
	char *body = fmt("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\","
			 "\"code\":\"%s\"}}",
			 code);
	cr_assert_eq(session_req(body, &st), 0, "%s", st.msg);
	free(body);
	body = fmt("{\"protocol\":3,\"sessionId\":\"s\",\"cell\":{\"language\":\"python\","
		   "\"code\":\"%sy\"}}",
		   code);
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.code is 262145 bytes");
	free(body);
	free(code);
}

Test(wire, unsafe_file_paths_are_refused_naming_the_file)
{
	char *long_path = repeat("a", 1025);
	struct {
		const char *path, *needle;
	} cases[] = {
		{"/etc/passwd", "is absolute"},
		{"../up", "'.' or '..' segment"},
		{"a/./b", "'.' or '..' segment"},
		{"a//b", "empty segment"},
		{"dir/", "empty segment"},
		{"", "is empty"},
		{"a\\\\b", "backslash"},
		{"a\\u0001b", "control character"},
		{"a\\u007fb", "control character"},
		{"a\\u0085b", "control character"},
		{long_path, "longer than 1024 bytes"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *files = fmt("[{\"path\":\"ok.txt\"},{\"path\":\"%s\",\"content\":\"x\"}]", cases[i].path);
		char *body = cell_with_files(files);
		struct wire_status st;
		cr_assert_eq(session_req(body, &st), -1, "accepted %s", cases[i].path);
		assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.files[1].path");
		cr_assert(strstr(st.msg, cases[i].needle), "\"%s\" does not say %s", st.msg, cases[i].needle);
		free(body);
		free(files);
	}
	free(long_path);
	/* Unicode names are fine. */
	char *body = cell_with_files("[{\"path\":\"données/é.csv\",\"content\":\"x\"}]");
	struct wire_status st;
	cr_assert_eq(session_req(body, &st), 0, "%s", st.msg);
	free(body);
}

Test(wire, file_count_total_size_and_duplicates_are_bounded)
{
	struct wire_status st;
	/* 201 files */
	size_t cap = 201 * 32 + 16, o = 0;
	char *many = malloc(cap);
	many[o++] = '[';
	for (int i = 0; i < 201; i++)
		o += (size_t)snprintf(many + o, cap - o, "%s{\"path\":\"f%d\"}", i ? "," : "", i);
	many[o++] = ']';
	many[o] = '\0';
	char *body = cell_with_files(many);
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.files holds 201 files");
	free(body);
	/* 200 are fine */
	char *last = strrchr(many, ',');
	strcpy(last, "]");
	body = cell_with_files(many);
	cr_assert_eq(session_req(body, &st), 0, "%s", st.msg);
	free(body);
	free(many);
	/* 4 MiB in all is fine, one byte more is not */
	char *half = repeat("x", 2u << 20);
	char *two = fmt("[{\"path\":\"a\",\"content\":\"%s\"},{\"path\":\"b\",\"content\":\"%s\"}]",
			half, half);
	body = cell_with_files(two);
	cr_assert_eq(session_req(body, &st), 0, "%s", st.msg);
	free(body);
	free(two);
	two = fmt("[{\"path\":\"a\",\"content\":\"%s\"},{\"path\":\"b\",\"content\":\"%sx\"}]", half,
		  half);
	body = cell_with_files(two);
	free(two);
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "more than 4194304 bytes");
	cr_assert(strstr(st.msg, "cell.files[1]"), "%s", st.msg);
	free(body);
	free(half);
	/* the same path twice */
	body = cell_with_files("[{\"path\":\"a/b\"},{\"path\":\"c\"},{\"path\":\"a/b\"}]");
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.files[2].path");
	cr_assert(strstr(st.msg, "repeats cell.files[0].path"), "%s", st.msg);
	free(body);
	/* a file that is not an object, content that is not a string */
	body = cell_with_files("[\"a\"]");
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.files[0] must be a JSON object");
	free(body);
	body = cell_with_files("[{\"path\":\"a\",\"content\":[]}]");
	cr_assert_eq(session_req(body, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "cell.files[0].content must be a string");
	free(body);
}

Test(wire, open_session_reads_languages_owner_and_durations)
{
	const char *body = "{\"protocol\":3,\"minimumIsolation\":\"container\",\"lifetimeMs\":600000,"
			   "\"idle_timeout_ms\":\"60000\",\"languages\":[\"python\",\"javascript\",\"python\"],"
			   "\"owner\":\"hmac:3f2a9c01\"}";
	struct wire_open_session_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_request(BODY(body), &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.env.floor, BH_TIER_CONTAINER);
	cr_assert_eq(r.lifetime_ms, 600000);
	cr_assert_eq(r.idle_timeout_ms, 60000);
	cr_assert_eq(r.languages, (1u << BH_LANG_PYTHON) | (1u << BH_LANG_JAVASCRIPT));
	cr_assert_str_eq(r.owner, "hmac:3f2a9c01");
	wire_open_session_request_free(&r);
	cr_assert_eq(wire_decode_open_session_request(BODY("{\"protocol\":3}"), &r, &st), 0);
	cr_assert_null(r.owner, "an absent owner is none");
	cr_assert_eq(r.languages, 0);
	wire_open_session_request_free(&r);
}

Test(wire, a_bad_owner_or_language_is_refused_not_dropped)
{
	char *long_owner = repeat("o", 65);
	const char *owners[] = {"alice smith", "alice@example.com", long_owner};
	for (size_t i = 0; i < 3; i++) {
		char *body = fmt("{\"protocol\":3,\"owner\":\"%s\"}", owners[i]);
		struct wire_open_session_request r;
		struct wire_status st;
		cr_assert_eq(wire_decode_open_session_request(BODY(body), &r, &st), -1, "accepted %s", owners[i]);
		assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "owner must be 1 to 64");
		free(body);
	}
	free(long_owner);
	struct wire_open_session_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_request(BODY("{\"protocol\":3,\"languages\":[\"python\",\"cobol\"]}"),
						      &r, &st),
		     -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "languages[1]");
	cr_assert_eq(wire_decode_open_session_request(BODY("{\"protocol\":3,\"lifetimeMs\":-1}"), &r, &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "lifetimeMs must not be negative");
}

Test(wire, close_and_describe_requests_decode)
{
	struct wire_close_session_request c;
	struct wire_status st;
	cr_assert_eq(wire_decode_close_session_request(BODY("{\"protocol\":3,\"session_id\":\"abc\"}"), &c, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(c.session_id, "abc");
	wire_close_session_request_free(&c);
	cr_assert_eq(wire_decode_describe_request(BODY("{}"), &st), 0);
	cr_assert_eq(wire_decode_describe_request(BODY("{\"anything\":1}"), &st), 0);
	cr_assert_eq(wire_decode_describe_request(BODY(""), &st), -1);
	assert_refused(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "empty");
}

Test(wire, the_decoded_request_digests_as_the_record_encoding_says)
{
	const char *body = "{\"protocol\":3,\"minimumIsolation\":\"container\",\"timeoutMs\":5000,"
			   "\"sessionId\":\"s\",\"softwareRule\":{\"mode\":\"exact\",\"identities\":[\"id:1\"]},"
			   "\"cell\":{\"language\":\"python\",\"code\":\"1+1\","
			   "\"files\":[{\"path\":\"a.txt\",\"content\":\"hi\"}]}}";
	struct wire_session_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_request(BODY(body), &r, &st), 0, "%s", st.msg);
	struct bh_request_fields got;
	wire_request_fields(&r.call, &got);
	const char *ids[] = {"id:1"};
	struct bh_file file = {"a.txt", (const uint8_t *)"hi", 2};
	struct bh_request_fields want = {
		.protocol = 3, .minimum_isolation = "container", .timeout_ms = 5000,
		.software_mode = "exact", .software_identities = ids, .n_identities = 1,
		.kind = "cell", .language = "python", .code = (const uint8_t *)"1+1", .code_len = 3,
		.files = &file, .n_files = 1,
	};
	char a[65], b[65];
	bh_request_digest(&got, a);
	bh_request_digest(&want, b);
	cr_assert_str_eq(a, b);
	wire_session_run_request_free(&r);
}

/* ---- requests: encode -> decode ------------------------------------------------------- */

Test(wire, every_request_survives_encode_then_decode)
{
	char *ids[] = {"a:1", "b:2"};
	struct bh_file files[] = {{"x/y.py", (const uint8_t *)"print(1)\n", 9}, {"z", (const uint8_t *)"", 0}};
	struct wire_session_run_request in = {
		.call = {.env = {.protocol = 3, .minimum_isolation = "kernel", .trace_id = "t1",
				 .timeout_ms = -1, .rule = {.mode = "approved", .identities = ids, .n_identities = 2}},
			 .kind = WIRE_PAYLOAD_CELL,
			 .cell = {.language = BH_LANG_JAVASCRIPT, .code = "let a = \"é\"\n", .code_len = 13,
				  .files = files, .n_files = 2}},
		.session_id = "0123",
	};
	char *json = wire_encode_session_run_request(&in);
	struct wire_session_run_request out;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_request(BODY(json), &out, &st), 0, "%s\n%s", st.msg, json);
	cr_assert_str_eq(out.session_id, "0123");
	cr_assert_str_eq(out.call.env.minimum_isolation, "kernel");
	cr_assert_str_eq(out.call.env.trace_id, "t1");
	cr_assert_eq(out.call.env.timeout_ms, -1);
	cr_assert_str_eq(out.call.env.rule.mode, "approved");
	cr_assert_eq(out.call.env.rule.n_identities, 2);
	cr_assert_str_eq(out.call.env.rule.identities[1], "b:2");
	cr_assert_eq(out.call.cell.language, BH_LANG_JAVASCRIPT);
	cr_assert_str_eq(out.call.cell.code, "let a = \"é\"\n");
	cr_assert_eq(out.call.cell.n_files, 2);
	cr_assert_str_eq(out.call.cell.files[0].path, "x/y.py");
	cr_assert_eq(out.call.cell.files[0].len, 9);
	cr_assert_str_eq(out.call.cell.files[1].path, "z");
	char a[65], b[65];
	struct bh_request_fields fa, fb;
	wire_request_fields(&in.call, &fa);
	wire_request_fields(&out.call, &fb);
	bh_request_digest(&fa, a);
	bh_request_digest(&fb, b);
	cr_assert_str_eq(a, b, "the digest survives the trip");
	wire_session_run_request_free(&out);
	free(json);

	struct wire_run_request run = {.env = {.protocol = 3}, .kind = WIRE_PAYLOAD_JAVASCRIPT,
				       .javascript = {.code = "1", .code_len = 1}};
	json = wire_encode_run_request(&run);
	cr_assert_str_eq(json, "{\"protocol\":3,\"javascript\":{\"code\":\"1\"}}");
	struct wire_run_request rout;
	cr_assert_eq(wire_decode_run_request(BODY(json), &rout, &st), 0, "%s", st.msg);
	cr_assert_str_eq(rout.javascript.code, "1");
	wire_run_request_free(&rout);
	free(json);

	struct wire_open_session_request open = {
		.env = {.protocol = 3, .minimum_isolation = "container"}, .lifetime_ms = 1000,
		.idle_timeout_ms = 2000, .languages = 1u << BH_LANG_PYTHON, .owner = "u:1"};
	json = wire_encode_open_session_request(&open);
	cr_assert_str_eq(json, "{\"protocol\":3,\"minimumIsolation\":\"container\",\"lifetimeMs\":1000,"
			       "\"idleTimeoutMs\":2000,\"languages\":[\"python\"],\"owner\":\"u:1\"}");
	struct wire_open_session_request oout;
	cr_assert_eq(wire_decode_open_session_request(BODY(json), &oout, &st), 0, "%s", st.msg);
	cr_assert_eq(oout.lifetime_ms, 1000);
	cr_assert_eq(oout.idle_timeout_ms, 2000);
	cr_assert_eq(oout.languages, 1u << BH_LANG_PYTHON);
	cr_assert_str_eq(oout.owner, "u:1");
	wire_open_session_request_free(&oout);
	free(json);

	struct wire_close_session_request close = {.protocol = 3, .session_id = "abc"};
	json = wire_encode_close_session_request(&close);
	cr_assert_str_eq(json, "{\"protocol\":3,\"sessionId\":\"abc\"}");
	struct wire_close_session_request cout;
	cr_assert_eq(wire_decode_close_session_request(BODY(json), &cout, &st), 0);
	cr_assert_str_eq(cout.session_id, "abc");
	wire_close_session_request_free(&cout);
	free(json);
}

/* ---- answers --------------------------------------------------------------------- */

static struct bh_record sample_record(void)
{
	struct bh_record rec = {
		.version = 2,
		.provider = "bulkhead-crun",
		.isolation = "container",
		.environment = "bulkhead-sandbox:sha256:00",
		.policy = "",
		.software_identity = "oci-manifest:linux/amd64@sha256:11",
		.software_rule_id = "exact:oci-manifest:linux/amd64@sha256:11",
		.started_unix_ms = 1700000000000,
		.ended_unix_ms = 1700000000042,
		.sequence = 1,
	};
	strcpy(rec.request_sha256, "aa");
	strcpy(rec.result_sha256, "bb");
	bh_fingerprint_of("0123456789abcdef0123456789abcdef", rec.session);
	bh_record_seal(&rec);
	return rec;
}

#define S(x) ((x) ? (x) : "")

static void assert_same_record(const struct bh_record *a, const struct bh_record *b)
{
	cr_assert_eq(a->version, b->version);
	cr_assert_str_eq(a->request_sha256, b->request_sha256);
	cr_assert_str_eq(a->result_sha256, b->result_sha256);
	cr_assert_str_eq(S(a->unanswered), S(b->unanswered));
	cr_assert_str_eq(S(a->provider), S(b->provider));
	cr_assert_str_eq(S(a->isolation), S(b->isolation));
	cr_assert_str_eq(S(a->environment), S(b->environment));
	cr_assert_str_eq(S(a->policy), S(b->policy));
	cr_assert_str_eq(S(a->software_identity), S(b->software_identity));
	cr_assert_str_eq(S(a->software_rule_id), S(b->software_rule_id));
	cr_assert_eq(a->started_unix_ms, b->started_unix_ms);
	cr_assert_eq(a->ended_unix_ms, b->ended_unix_ms);
	cr_assert_str_eq(a->session, b->session);
	cr_assert_eq(a->sequence, b->sequence);
	cr_assert_str_eq(a->previous_sha256, b->previous_sha256);
	cr_assert_str_eq(a->record_sha256, b->record_sha256);
}

Test(wire, a_record_is_written_with_64_bit_fields_as_strings_and_version_as_a_number)
{
	struct bh_record rec = sample_record();
	char *json = wire_encode_record(&rec);
	cr_assert(strstr(json, "\"version\":2,"), "%s", json);
	cr_assert(strstr(json, "\"startedUnixMs\":\"1700000000000\""), "%s", json);
	cr_assert(strstr(json, "\"endedUnixMs\":\"1700000000042\""), "%s", json);
	cr_assert(strstr(json, "\"sequence\":\"1\""), "%s", json);
	cr_assert_null(strstr(json, "policy"), "an empty string is omitted: %s", json);
	cr_assert_null(strstr(json, "previousSha256"), "%s", json);
	cr_assert_null(strstr(json, "unanswered"), "%s", json);
	struct bh_record back;
	struct wire_status st;
	cr_assert_eq(wire_decode_record(BODY(json), &back, &st), 0, "%s", st.msg);
	assert_same_record(&rec, &back);
	cr_assert(bh_record_verify(&back), "the decoded record still verifies");
	wire_record_free(&back);
	free(json);
}

Test(wire, sixty_four_bit_fields_read_from_strings_or_exact_numbers)
{
	struct bh_record rec;
	struct wire_status st;
	cr_assert_eq(wire_decode_record(BODY("{\"startedUnixMs\":1700000000000,\"endedUnixMs\":\"-5\","
					     "\"sequence\":\"18446744073709551615\"}"),
				    &rec, &st),
		     0, "%s", st.msg);
	cr_assert_eq(rec.started_unix_ms, 1700000000000);
	cr_assert_eq(rec.ended_unix_ms, -5);
	cr_assert_eq(rec.sequence, UINT64_MAX);
	wire_record_free(&rec);
	cr_assert_eq(wire_decode_record(BODY("{\"sequence\":9007199254740993}"), &rec, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "sequence is a number too large");
	cr_assert_eq(wire_decode_record(BODY("{\"sequence\":\"18446744073709551616\"}"), &rec, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "sequence is out of range");
	cr_assert_eq(wire_decode_record(BODY("{\"sequence\":\"-1\"}"), &rec, &st), -1);
	cr_assert_eq(wire_decode_record(BODY("{\"recordSha256\":\"" "0123456789012345678901234567890123456789012345678901234567890123x" "\"}"),
				    &rec, &st),
		     -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "recordSha256 is longer");
}

Test(wire, a_cell_answer_omits_its_zero_values)
{
	struct wire_run_response r = {
		.sandbox = "bulkhead-crun",
		.isolation = "container",
		.result = {.kind = "cell"},
	};
	char *json = wire_encode_run_response(&r);
	cr_assert_str_eq(json, "{\"sandbox\":\"bulkhead-crun\",\"isolation\":\"container\",\"cell\":{}}");
	free(json);
	struct wire_session_run_response s = {0};
	json = wire_encode_session_run_response(&s);
	cr_assert_str_eq(json, "{}");
	free(json);
}

Test(wire, a_run_answer_writes_bytes_as_padded_base64_and_duration_as_a_string)
{
	struct bh_record rec = sample_record();
	struct wire_run_response r = {
		.sandbox = "bulkhead-crun",
		.isolation = "container",
		.duration_ms = 42,
		.has_record = true,
		.record = rec,
		.software_identity = "oci-manifest:linux/amd64@sha256:11",
		.environment = "bulkhead-sandbox:sha256:00",
		.result = {.kind = "cell", .exit_code = 1, .out = (const uint8_t *)"hi", .out_len = 2,
			   .err = (const uint8_t *)"\xfb\xff", .err_len = 2, .stderr_truncated = true,
			   .interpreter_started = true},
	};
	char *json = wire_encode_run_response(&r);
	cr_assert(strstr(json, "\"durationMs\":\"42\""), "%s", json);
	cr_assert(strstr(json, "\"cell\":{\"stdout\":\"aGk=\",\"stderr\":\"+/8=\",\"exitCode\":1,"
			       "\"stderrTruncated\":true,\"interpreterStarted\":true}"),
		  "%s", json);
	struct wire_run_response back;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(BODY(json), &back, &st), 0, "%s", st.msg);
	cr_assert_str_eq(back.sandbox, "bulkhead-crun");
	cr_assert_eq(back.duration_ms, 42);
	cr_assert(back.has_record);
	assert_same_record(&rec, &back.record);
	cr_assert_str_eq(back.result.kind, "cell");
	cr_assert_eq(back.result.exit_code, 1);
	cr_assert_eq(back.result.out_len, 2);
	cr_assert(!memcmp(back.result.out, "hi", 2));
	cr_assert_eq(back.result.err_len, 2);
	cr_assert(!memcmp(back.result.err, "\xfb\xff", 2));
	cr_assert(back.result.stderr_truncated);
	cr_assert_not(back.result.stdout_truncated);
	cr_assert(back.result.interpreter_started);
	cr_assert_not(back.result.interpreter_ended);
	char a[65], b[65];
	bh_result_digest(&r.result, a);
	bh_result_digest(&back.result, b);
	cr_assert_str_eq(a, b, "the result digest survives the trip");
	wire_run_response_free(&back);
	free(json);
}

Test(wire, answer_bytes_read_padded_unpadded_or_url_safe)
{
	const char *bodies[] = {"{\"javascript\":{\"stdout\":\"+/8=\"}}", "{\"javascript\":{\"stdout\":\"+/8\"}}",
				"{\"javascript\":{\"stdout\":\"-_8\"}}"};
	for (int i = 0; i < 3; i++) {
		struct wire_run_response r;
		struct wire_status st;
		cr_assert_eq(wire_decode_run_response(BODY(bodies[i]), &r, &st), 0, "%s", st.msg);
		cr_assert_str_eq(r.result.kind, "javascript");
		cr_assert_eq(r.result.out_len, 2);
		cr_assert(!memcmp(r.result.out, "\xfb\xff", 2));
		wire_run_response_free(&r);
	}
	struct wire_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(BODY("{\"javascript\":{\"stdout\":\"a b\"}}"), &r, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "javascript.stdout must be base64");
	cr_assert_eq(wire_decode_run_response(BODY("{\"javascript\":{},\"cell\":{}}"), &r, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "more than one result");
	/* A result bulkhead does not read is named, not refused: the client decides. */
	cr_assert_eq(wire_decode_run_response(BODY("{\"project\":{\"outcome\":\"PROJECT_OUTCOME_COMPLETED\"}}"),
					      &r, &st),
		     0, "%s", st.msg);
	cr_assert_str_eq(r.result.kind, "project");
	wire_run_response_free(&r);
	cr_assert_eq(wire_decode_run_response(BODY("{\"record\":{\"version\":\"two\"}}"), &r, &st), -1);
	assert_refused(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "record.version");
}

Test(wire, base64_round_trips_every_length)
{
	uint8_t data[64];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 37 + 5);
	for (size_t n = 0; n <= sizeof data; n++) {
		for (int pad = 0; pad < 2; pad++) {
			char *s = wire_base64_encode(data, n, pad);
			uint8_t *back = NULL;
			size_t len = 0;
			cr_assert_eq(wire_base64_decode(s, strlen(s), &back, &len), 0, "%s", s);
			cr_assert_eq(len, n);
			cr_assert(!memcmp(back, data, n));
			if (!pad)
				cr_assert_null(strchr(s, '='));
			free(back);
			free(s);
		}
	}
	uint8_t *out = NULL;
	size_t len = 0;
	cr_assert_eq(wire_base64_decode(BODY("a"), &out, &len), -1, "one character is no byte");
	cr_assert_eq(wire_base64_decode(BODY("aGk=="), &out, &len), -1);
	cr_assert_eq(wire_base64_decode(BODY("+-8="), &out, &len), -1, "mixed alphabets");
	cr_assert_eq(wire_base64_decode(BODY("aG k"), &out, &len), -1);
}

Test(wire, a_session_answer_names_its_end_by_enum_name)
{
	struct wire_session_run_response r = {
		.has_run = true,
		.run = {.sandbox = "bulkhead-runsc", .isolation = "kernel", .duration_ms = 7,
			.result = {.kind = "cell", .out = (const uint8_t *)"2\n", .out_len = 2}},
		.ended = WIRE_END_DISK_EXCEEDED,
		.end_detail = "the session wrote 300 MiB",
	};
	char *json = wire_encode_session_run_response(&r);
	cr_assert(strstr(json, "\"ended\":\"SESSION_END_DISK_EXCEEDED\",\"endDetail\":\"the session wrote 300 MiB\""),
		  "%s", json);
	struct wire_session_run_response back;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(BODY(json), &back, &st), 0, "%s", st.msg);
	cr_assert(back.has_run);
	cr_assert_str_eq(back.run.isolation, "kernel");
	cr_assert_eq(back.run.duration_ms, 7);
	cr_assert_eq(back.run.result.out_len, 2);
	cr_assert_eq(back.ended, WIRE_END_DISK_EXCEEDED);
	cr_assert_str_eq(back.end_detail, "the session wrote 300 MiB");
	wire_session_run_response_free(&back);
	free(json);
	/* Enums read by number too, and a name this build lacks still means ended. */
	cr_assert_eq(wire_decode_session_run_response(BODY("{\"ended\":8}"), &back, &st), 0);
	cr_assert_eq(back.ended, WIRE_END_REPLACED);
	wire_session_run_response_free(&back);
	cr_assert_eq(wire_decode_session_run_response(BODY("{\"ended\":\"SESSION_END_EATEN\"}"), &back, &st), 0);
	cr_assert_eq(back.ended, WIRE_END_UNKNOWN);
	wire_session_run_response_free(&back);
	cr_assert_eq(wire_decode_session_run_response(BODY("{\"ended\":\"SESSION_END_UNSPECIFIED\"}"), &back, &st),
		     0);
	cr_assert_eq(back.ended, WIRE_END_OPEN);
	wire_session_run_response_free(&back);
}

Test(wire, open_and_close_answers_survive_encode_then_decode)
{
	struct wire_open_session_response o = {
		.session_id = "0123456789abcdef0123456789abcdef",
		.session = "fp",
		.sandbox = "bulkhead-crun",
		.isolation = "container",
		.expires_unix_ms = 1700000600000,
		.idle_timeout_ms = 300000,
		.software_identity = "sw",
	};
	char *json = wire_encode_open_session_response(&o);
	cr_assert_str_eq(json, "{\"sessionId\":\"0123456789abcdef0123456789abcdef\",\"session\":\"fp\","
			       "\"sandbox\":\"bulkhead-crun\",\"isolation\":\"container\","
			       "\"expiresUnixMs\":\"1700000600000\",\"idleTimeoutMs\":300000,"
			       "\"softwareIdentity\":\"sw\"}");
	struct wire_open_session_response ob;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(BODY(json), &ob, &st), 0, "%s", st.msg);
	cr_assert_str_eq(ob.session_id, o.session_id);
	cr_assert_str_eq(ob.session, "fp");
	cr_assert_eq(ob.expires_unix_ms, 1700000600000);
	cr_assert_eq(ob.idle_timeout_ms, 300000);
	cr_assert_str_eq(ob.software_identity, "sw");
	wire_open_session_response_free(&ob);
	free(json);

	struct wire_close_session_response c = {.session = "fp", .calls = 3,
						.last_record_sha256 = "cc", .ended = WIRE_END_CLOSED};
	json = wire_encode_close_session_response(&c);
	cr_assert_str_eq(json, "{\"session\":\"fp\",\"calls\":\"3\",\"lastRecordSha256\":\"cc\","
			       "\"ended\":\"SESSION_END_CLOSED\"}");
	struct wire_close_session_response cb;
	cr_assert_eq(wire_decode_close_session_response(BODY(json), &cb, &st), 0, "%s", st.msg);
	cr_assert_eq(cb.calls, 3);
	cr_assert_str_eq(cb.last_record_sha256, "cc");
	cr_assert_eq(cb.ended, WIRE_END_CLOSED);
	wire_close_session_response_free(&cb);
	free(json);
	/* An empty close (no calls) reads as zero values, strings "". */
	cr_assert_eq(wire_decode_close_session_response(BODY("{}"), &cb, &st), 0);
	cr_assert_eq(cb.calls, 0);
	cr_assert_str_eq(cb.session, "");
	cr_assert_eq(cb.ended, WIRE_END_OPEN);
	wire_close_session_response_free(&cb);
}

Test(wire, describe_states_sessions_and_environments)
{
	const char *langs[] = {"python", "javascript"};
	struct wire_describe_response d = {
		.sandbox = "bulkhead",
		.isolation = "kernel",
		.protocol = 3,
		.javascript_environment = {.present = true, .identity = "node:22", .max_timeout_ms = 300000},
		.project_environment = {.present = true},
		.resources = {.present = true, .memory_mb = 512, .cpus = 1.5, .pids = 256, .disk_mb = 256},
		.supports_sessions = true,
		.session_lifetime_ms = 1800000,
		.session_idle_timeout_ms = 300000,
		.session_environment = {.present = true, .identity = "bulkhead-sandbox:sha256:00",
					.max_timeout_ms = 300000, .languages = langs, .n_languages = 2},
		.max_sessions_per_owner = 4,
	};
	char *json = wire_encode_describe_response(&d);
	cr_assert_str_eq(json,
			 "{\"sandbox\":\"bulkhead\",\"isolation\":\"kernel\",\"protocol\":3,"
			 "\"javascriptEnvironment\":{\"identity\":\"node:22\",\"maxTimeoutMs\":300000},"
			 "\"projectEnvironment\":{},"
			 "\"resources\":{\"memoryMb\":512,\"cpus\":1.5,\"pids\":256,\"diskMb\":256},"
			 "\"supportsSessions\":true,\"sessionLifetimeMs\":1800000,\"sessionIdleTimeoutMs\":300000,"
			 "\"sessionEnvironment\":{\"identity\":\"bulkhead-sandbox:sha256:00\",\"maxTimeoutMs\":300000,"
			 "\"languages\":[\"python\",\"javascript\"]},\"maxSessionsPerOwner\":4}");
	cr_assert_null(strstr(json, "supportsProject"), "false is omitted");
	struct wire_describe_response b;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(BODY(json), &b, &st), 0, "%s", st.msg);
	cr_assert_str_eq(b.sandbox, "bulkhead");
	cr_assert_eq(b.protocol, 3);
	cr_assert_not(b.supports_project);
	cr_assert(b.supports_sessions);
	cr_assert(b.javascript_environment.present);
	cr_assert_eq(b.javascript_environment.max_timeout_ms, 300000);
	cr_assert(b.project_environment.present, "an empty environment is still stated");
	cr_assert_not(b.module_environment.present);
	cr_assert(b.resources.present);
	cr_assert_eq(b.resources.cpus, 1.5);
	cr_assert_eq(b.resources.memory_mb, 512);
	cr_assert_eq(b.session_environment.n_languages, 2);
	cr_assert_str_eq(b.session_environment.languages[1], "javascript");
	cr_assert_eq(b.session_lifetime_ms, 1800000);
	cr_assert_eq(b.max_sessions_per_owner, 4);
	cr_assert_eq(b.max_sessions_per_caller, 0);
	wire_describe_response_free(&b);
	free(json);
}

/* ---- protobuf details, against hand-computed bytes ------------------------------------- */

Test(wire, not_dispatched_is_field_one_as_a_varint)
{
	struct wire_bytes b;
	wire_pb_encode_not_dispatched(WIRE_REFUSAL_REQUEST, &b);
	assert_bytes(&b, (const uint8_t[]){0x08, 0x01}, 2);
	free(b.data);
	wire_pb_encode_not_dispatched(WIRE_REFUSAL_ENVIRONMENT, &b);
	assert_bytes(&b, (const uint8_t[]){0x08, 0x07}, 2);
	free(b.data);
	wire_pb_encode_not_dispatched(WIRE_REFUSAL_UNSPECIFIED, &b);
	cr_assert_eq(b.len, 0, "a zero enum is not written");
	free(b.data);
	enum wire_refusal r;
	cr_assert_eq(wire_pb_decode_not_dispatched((const uint8_t[]){0x08, 0x03}, 2, &r), 0);
	cr_assert_eq(r, WIRE_REFUSAL_PROTOCOL);
	/* An unknown field (99, varint) is skipped. */
	cr_assert_eq(wire_pb_decode_not_dispatched((const uint8_t[]){0x98, 0x06, 0x01, 0x08, 0x06}, 5, &r), 0);
	cr_assert_eq(r, WIRE_REFUSAL_CAPACITY);
	/* Field 1 as length-delimited, or cut short, is refused. */
	cr_assert_eq(wire_pb_decode_not_dispatched((const uint8_t[]){0x0a, 0x01, 0x01}, 3, &r), -1);
	cr_assert_eq(wire_pb_decode_not_dispatched((const uint8_t[]){0x08}, 1, &r), -1);
	cr_assert_eq(wire_pb_decode_not_dispatched((const uint8_t[]){0x08, 0x80}, 2, &r), -1);
}

Test(wire, session_ended_is_an_enum_then_a_string)
{
	struct wire_bytes b;
	wire_pb_encode_session_ended(WIRE_END_NOT_FOUND, "no such session", &b);
	const uint8_t want[] = {0x08, 0x09, 0x12, 0x0f, 'n', 'o', ' ', 's', 'u', 'c', 'h', ' ',
				's',  'e',  's',  's',  'i', 'o', 'n'};
	assert_bytes(&b, want, sizeof want);
	free(b.data);
	wire_pb_encode_session_ended(WIRE_END_REPLACED, "", &b);
	assert_bytes(&b, (const uint8_t[]){0x08, 0x08}, 2);
	free(b.data);
	enum wire_session_end e;
	char *detail = NULL;
	cr_assert_eq(wire_pb_decode_session_ended(want, sizeof want, &e, &detail), 0);
	cr_assert_eq(e, WIRE_END_NOT_FOUND);
	cr_assert_str_eq(detail, "no such session");
	free(detail);
	/* A number past this build's table is an end all the same. */
	cr_assert_eq(wire_pb_decode_session_ended((const uint8_t[]){0x08, 0x2a}, 2, &e, &detail), 0);
	cr_assert_eq(e, WIRE_END_UNKNOWN);
	free(detail);
	/* A detail that is not UTF-8, or that overruns, is refused. */
	cr_assert_eq(wire_pb_decode_session_ended((const uint8_t[]){0x12, 0x01, 0xff}, 3, &e, &detail), -1);
	cr_assert_eq(wire_pb_decode_session_ended((const uint8_t[]){0x12, 0x05, 'a'}, 3, &e, &detail), -1);
}

static struct bh_record small_v3_record(void)
{
	struct bh_record rec = {.version = 3, .provider = "p", .isolation = "container",
				.started_unix_ms = 1000, .sequence = 2, .unanswered = "unknown"};
	strcpy(rec.request_sha256, "ab");
	strcpy(rec.session, "cd");
	strcpy(rec.record_sha256, "ef");
	return rec;
}

/* RunRecord fields in number order: 1 version, 2 request, 4 provider,
 * 5 isolation, 8 started, 10 session, 11 sequence, 13 record, 16 unanswered
 * (tag 16<<3|2 = 130, two bytes). Empty fields are absent. */
static const uint8_t unanswered_bytes[] = {
	0x0a, 0x2b,                                     /* UnansweredCall.record, 43 bytes */
	0x08, 0x03,                                     /* version 3 */
	0x12, 0x02, 'a', 'b',                           /* request_sha256 */
	0x22, 0x01, 'p',                                /* provider */
	0x2a, 0x09, 'c', 'o', 'n', 't', 'a', 'i', 'n', 'e', 'r', /* isolation */
	0x40, 0xe8, 0x07,                               /* started_unix_ms 1000 */
	0x52, 0x02, 'c', 'd',                           /* session */
	0x58, 0x02,                                     /* sequence 2 */
	0x6a, 0x02, 'e', 'f',                           /* record_sha256 */
	0x82, 0x01, 0x07, 'u', 'n', 'k', 'n', 'o', 'w', 'n', /* unanswered */
};

Test(wire, unanswered_call_carries_the_record_with_its_real_field_numbers)
{
	struct bh_record rec = small_v3_record();
	struct wire_bytes b;
	wire_pb_encode_unanswered_call(&rec, &b);
	assert_bytes(&b, unanswered_bytes, sizeof unanswered_bytes);
	free(b.data);
	struct bh_record back;
	bool has = false;
	cr_assert_eq(wire_pb_decode_unanswered_call(unanswered_bytes, sizeof unanswered_bytes, &back, &has), 0);
	cr_assert(has);
	assert_same_record(&rec, &back);
	wire_record_free(&back);
}

Test(wire, a_negative_time_is_a_ten_byte_varint_and_reads_back)
{
	struct bh_record rec = {.started_unix_ms = -1};
	struct wire_bytes b;
	wire_pb_encode_unanswered_call(&rec, &b);
	const uint8_t want[] = {0x0a, 0x0b, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff,
				0xff, 0xff, 0xff, 0xff, 0x01};
	assert_bytes(&b, want, sizeof want);
	struct bh_record back;
	bool has;
	cr_assert_eq(wire_pb_decode_unanswered_call(b.data, b.len, &back, &has), 0);
	cr_assert_eq(back.started_unix_ms, -1);
	wire_record_free(&back);
	free(b.data);
	/* An empty message has no record; a record of the wrong wire type is refused. */
	cr_assert_eq(wire_pb_decode_unanswered_call(NULL, 0, &back, &has), 0);
	cr_assert_not(has);
	wire_record_free(&back);
	cr_assert_eq(wire_pb_decode_unanswered_call((const uint8_t[]){0x08, 0x01}, 2, &back, &has), -1);
	cr_assert_eq(wire_pb_decode_unanswered_call((const uint8_t[]){0x0a, 0x02, 0x12, 0x01, 'a'}, 5, &back,
						    &has),
		     -1, "a record field that overruns its message");
}

/* ---- Connect errors ----------------------------------------------------------------- */

Test(wire, an_error_is_code_message_and_unpadded_base64_details)
{
	uint8_t nd[] = {0x08, 0x01};
	uint8_t se[] = {0x08, 0x01, 0x12, 0x06, 'c', 'l', 'o', 's', 'e', 'd'};
	struct wire_detail details[] = {{WIRE_TYPE_NOT_DISPATCHED, nd, sizeof nd},
					{WIRE_TYPE_SESSION_ENDED, se, sizeof se}};
	char *json = wire_error_json(WIRE_FAILED_PRECONDITION, "the session has ended", details, 2);
	cr_assert_str_eq(json, "{\"code\":\"failed_precondition\",\"message\":\"the session has ended\","
			       "\"details\":[{\"type\":\"plimsoll.v1.NotDispatched\",\"value\":\"CAE\"},"
			       "{\"type\":\"plimsoll.v1.SessionEnded\",\"value\":\"CAESBmNsb3NlZA\"}]}");
	free(json);
	json = wire_error_json(WIRE_UNAVAILABLE, NULL, NULL, 0);
	cr_assert_str_eq(json, "{\"code\":\"unavailable\"}");
	free(json);
}

Test(wire, connect_codes_map_to_the_specs_http_statuses)
{
	struct {
		enum wire_code c;
		const char *name;
		int http;
	} t[] = {
		{WIRE_CANCELED, "canceled", 499},
		{WIRE_UNKNOWN, "unknown", 500},
		{WIRE_INVALID_ARGUMENT, "invalid_argument", 400},
		{WIRE_DEADLINE_EXCEEDED, "deadline_exceeded", 504},
		{WIRE_NOT_FOUND, "not_found", 404},
		{WIRE_ALREADY_EXISTS, "already_exists", 409},
		{WIRE_PERMISSION_DENIED, "permission_denied", 403},
		{WIRE_RESOURCE_EXHAUSTED, "resource_exhausted", 429},
		{WIRE_FAILED_PRECONDITION, "failed_precondition", 400},
		{WIRE_ABORTED, "aborted", 409},
		{WIRE_OUT_OF_RANGE, "out_of_range", 400},
		{WIRE_UNIMPLEMENTED, "unimplemented", 501},
		{WIRE_INTERNAL, "internal", 500},
		{WIRE_UNAVAILABLE, "unavailable", 503},
		{WIRE_DATA_LOSS, "data_loss", 500},
		{WIRE_UNAUTHENTICATED, "unauthenticated", 401},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		cr_assert_str_eq(wire_code_name(t[i].c), t[i].name);
		cr_assert_eq(wire_code_http_status(t[i].c), t[i].http, "%s", t[i].name);
		enum wire_code back;
		cr_assert_eq(wire_code_parse(t[i].name, &back), 0);
		cr_assert_eq(back, t[i].c);
	}
	enum wire_code c;
	cr_assert_eq(wire_code_parse("ok", &c), -1);
	cr_assert_eq(wire_code_parse("teapot", &c), -1);
	cr_assert_eq(wire_code_from_http_status(400), WIRE_INTERNAL);
	cr_assert_eq(wire_code_from_http_status(404), WIRE_UNIMPLEMENTED);
	cr_assert_eq(wire_code_from_http_status(429), WIRE_UNAVAILABLE);
	cr_assert_eq(wire_code_from_http_status(418), WIRE_UNKNOWN);
}

Test(wire, an_error_survives_encode_then_decode_with_all_its_details)
{
	struct bh_record rec = small_v3_record();
	struct wire_error e = {.code = WIRE_UNKNOWN, .message = "the sandbox ended during the call",
			       .session_ended = true, .end = WIRE_END_MAIN_PROCESS_ENDED,
			       .end_detail = "oom", .unanswered = true, .record = rec};
	char *json = wire_encode_error(&e);
	cr_assert(strstr(json, "\"type\":\"plimsoll.v1.UnansweredCall\",\"value\":"
			       "\"CisIAxICYWIiAXAqCWNvbnRhaW5lckDoB1ICY2RYAmoCZWaCAQd1bmtub3du\""),
		  "%s", json);
	struct wire_error back;
	wire_decode_error(500, BODY(json), &back);
	cr_assert_eq(back.code, WIRE_UNKNOWN);
	cr_assert_str_eq(back.message, "the sandbox ended during the call");
	cr_assert_not(back.not_dispatched, "no mark: the call may have run");
	cr_assert(back.session_ended);
	cr_assert_eq(back.end, WIRE_END_MAIN_PROCESS_ENDED);
	cr_assert_str_eq(back.end_detail, "oom");
	cr_assert(back.unanswered);
	assert_same_record(&rec, &back.record);
	wire_error_free(&back);
	free(json);
}

Test(wire, error_details_read_with_a_type_url_prefix_and_padding)
{
	const char *body = "{\"code\":\"not_found\",\"message\":\"no such session for this caller\","
			   "\"details\":[{\"type\":\"type.googleapis.com/plimsoll.v1.NotDispatched\",\"value\":\"CAE=\"},"
			   "{\"type\":\"plimsoll.v1.SessionEnded\",\"value\":\"CAkSD25vIHN1Y2ggc2Vzc2lvbg==\","
			   "\"debug\":{\"reason\":\"SESSION_END_NOT_FOUND\"}}]}";
	struct wire_error e;
	wire_decode_error(404, BODY(body), &e);
	cr_assert_eq(e.code, WIRE_NOT_FOUND);
	cr_assert(e.not_dispatched);
	cr_assert_eq(e.reason, WIRE_REFUSAL_REQUEST);
	cr_assert(e.session_ended);
	cr_assert_eq(e.end, WIRE_END_NOT_FOUND);
	cr_assert_str_eq(e.end_detail, "no such session");
	wire_error_free(&e);
}

Test(wire, an_error_body_that_states_nothing_falls_back_to_the_http_status)
{
	struct wire_error e;
	wire_decode_error(503, BODY("<html>bad gateway</html>"), &e);
	cr_assert_eq(e.code, WIRE_UNAVAILABLE);
	cr_assert_str_eq(e.message, "HTTP 503");
	cr_assert_not(e.not_dispatched);
	wire_error_free(&e);
	wire_decode_error(400, BODY("{\"code\":\"teapot\"}"), &e);
	cr_assert_eq(e.code, WIRE_UNKNOWN, "a code outside Connect's set is unknown");
	wire_error_free(&e);
	/* A detail that does not decode states nothing, in particular no mark. */
	wire_decode_error(400, BODY("{\"code\":\"invalid_argument\",\"details\":[{\"type\":"
				    "\"plimsoll.v1.NotDispatched\",\"value\":\"CA\"}]}"),
			  &e);
	cr_assert_eq(e.code, WIRE_INVALID_ARGUMENT);
	cr_assert_not(e.not_dispatched);
	wire_error_free(&e);
	/* A mark and a record together: the mark wins. */
	char *json = fmt("{\"code\":\"unknown\",\"details\":[{\"type\":\"plimsoll.v1.NotDispatched\",\"value\":\"CAE\"},"
			 "{\"type\":\"plimsoll.v1.UnansweredCall\",\"value\":\"%s\"}]}",
			 "CisIAxICYWIiAXAqCWNvbnRhaW5lckDoB1ICY2RYAmoCZWaCAQd1bmtub3du");
	wire_decode_error(500, BODY(json), &e);
	cr_assert(e.not_dispatched);
	cr_assert_not(e.unanswered);
	wire_error_free(&e);
	free(json);
}

/* ---- mapping bulkhead's words onto plimsoll's ------------------------------------------ */

Test(wire, every_bulkhead_end_reason_maps_to_the_nearest_plimsoll_end)
{
	struct {
		enum bh_end_reason reason;
		enum wire_session_end end;
	} t[] = {
		{BH_END_CLOSED, WIRE_END_CLOSED},
		{BH_END_EXPIRED, WIRE_END_EXPIRED},
		{BH_END_DISK_EXCEEDED, WIRE_END_DISK_EXCEEDED},
		{BH_END_MAIN_PROCESS_ENDED, WIRE_END_MAIN_PROCESS_ENDED},
		{BH_END_BOUNDARY_FAILED, WIRE_END_BOUNDARY_FAILED},
		{BH_END_SANDBOX_CHANGED, WIRE_END_SANDBOX_CHANGED},
		{BH_END_SHUTDOWN, WIRE_END_SHUTDOWN},
		{BH_END_REPLACED, WIRE_END_REPLACED},
		{BH_END_UNCLAIMED, WIRE_END_UNCLAIMED},
		{BH_END_NOT_FOUND, WIRE_END_NOT_FOUND},
		{BH_END_IDLE_CLOSED, WIRE_END_EXPIRED},
		{BH_END_RETENTION_EXPIRED, WIRE_END_EXPIRED},
		{BH_END_KILLED, WIRE_END_CLOSED},
		{BH_END_REAPED, WIRE_END_SHUTDOWN},
		{BH_END_OOM, WIRE_END_MAIN_PROCESS_ENDED},
		{BH_END_HOST_LOST, WIRE_END_MAIN_PROCESS_ENDED},
	};
	cr_assert_eq(sizeof t / sizeof t[0], BH_END_REASON_COUNT - 1,
		     "every end reason is in the table");
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		cr_assert_eq(wire_session_end_of(t[i].reason), t[i].end, "%s -> %s",
			     bh_end_reason_name(t[i].reason),
			     wire_session_end_enum_name(wire_session_end_of(t[i].reason)));
	cr_assert_eq(wire_session_end_of(BH_END_NONE), WIRE_END_OPEN);
	cr_assert_eq(wire_session_end_of((enum bh_end_reason)BH_END_REASON_COUNT), WIRE_END_CLOSED,
		     "an unknown end is still an end");
	cr_assert_str_eq(wire_session_end_enum_name(WIRE_END_UNCLAIMED), "SESSION_END_UNCLAIMED");
	cr_assert_str_eq(wire_session_end_name(WIRE_END_NOT_FOUND), "not_found");
}

/* Each end reason plimsoll has a word for maps to that word, by name: the
 * two vocabularies cannot drift apart for the words they share. */
Test(wire, plimsolls_own_end_reasons_map_to_the_end_of_the_same_name)
{
	for (int i = BH_END_NONE + 1; i < BH_END_REASON_COUNT; i++) {
		enum bh_end_reason r = (enum bh_end_reason)i;
		enum wire_session_end end = wire_session_end_of(r);
		cr_assert_neq(end, WIRE_END_OPEN, "%s reads as open", bh_end_reason_name(r));
		bool finer = i >= BH_END_IDLE_CLOSED;
		cr_assert_eq(strcmp(bh_end_reason_name(r), wire_session_end_name(end)) != 0, finer,
			     "%s -> %s", bh_end_reason_name(r), wire_session_end_name(end));
	}
}

Test(wire, end_detail_keeps_the_finer_reason)
{
	char *d = wire_session_end_detail(BH_END_IDLE_CLOSED, "paused past hibernate_after");
	cr_assert_str_eq(d, "idle_closed: paused past hibernate_after");
	free(d);
	d = wire_session_end_detail(BH_END_REAPED, NULL);
	cr_assert_str_eq(d, "reaped");
	free(d);
	d = wire_session_end_detail(BH_END_KILLED, "the session has ended (killed)");
	cr_assert_str_eq(d, "the session has ended (killed)", "no second prefix");
	free(d);
	d = wire_session_end_detail(BH_END_EXPIRED, "lifetime passed");
	cr_assert_str_eq(d, "lifetime passed", "plimsoll's own word needs no prefix");
	free(d);
}

Test(wire, every_refusal_maps_to_its_not_dispatched_reason)
{
	struct {
		enum bh_refusal in;
		enum wire_refusal out;
		const char *name, *enum_name;
	} t[] = {
		{BH_REFUSAL_NONE, WIRE_REFUSAL_UNSPECIFIED, "unknown", "NOT_DISPATCHED_REASON_UNSPECIFIED"},
		{BH_REFUSAL_REQUEST, WIRE_REFUSAL_REQUEST, "request", "NOT_DISPATCHED_REASON_REQUEST"},
		{BH_REFUSAL_PERMISSION, WIRE_REFUSAL_PERMISSION, "permission", "NOT_DISPATCHED_REASON_PERMISSION"},
		{BH_REFUSAL_PROTOCOL, WIRE_REFUSAL_PROTOCOL, "protocol", "NOT_DISPATCHED_REASON_PROTOCOL"},
		{BH_REFUSAL_UNSUPPORTED, WIRE_REFUSAL_UNSUPPORTED, "unsupported", "NOT_DISPATCHED_REASON_UNSUPPORTED"},
		{BH_REFUSAL_ISOLATION, WIRE_REFUSAL_ISOLATION, "isolation", "NOT_DISPATCHED_REASON_ISOLATION"},
		{BH_REFUSAL_CAPACITY, WIRE_REFUSAL_CAPACITY, "capacity", "NOT_DISPATCHED_REASON_CAPACITY"},
		{BH_REFUSAL_ENVIRONMENT, WIRE_REFUSAL_ENVIRONMENT, "environment", "NOT_DISPATCHED_REASON_ENVIRONMENT"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		cr_assert_eq(wire_refusal_of(t[i].in), t[i].out);
		cr_assert_str_eq(wire_refusal_name(t[i].out), t[i].name);
		cr_assert_str_eq(wire_refusal_enum_name(t[i].out), t[i].enum_name);
	}
}

static bh_error engine_error(enum bh_error_code code, enum bh_refusal r, const char *msg,
			     enum bh_end_reason end)
{
	return (bh_error){.code = code, .refusal = r, .msg = (char *)msg, .session_end = end};
}

Test(wire, a_call_on_an_idle_closed_session_reads_as_ended_and_not_dispatched)
{
	bh_error err = engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_REQUEST,
				    "the session has ended (idle_closed): paused past hibernate_after",
				    BH_END_IDLE_CLOSED);
	struct wire_error e;
	wire_error_from_bh(&err, NULL, &e);
	char *json = wire_encode_error(&e);
	wire_error_free(&e);
	struct wire_error seen;
	wire_decode_error(400, BODY(json), &seen);
	cr_assert_eq(seen.code, WIRE_FAILED_PRECONDITION);
	cr_assert(seen.not_dispatched);
	cr_assert_eq(seen.reason, WIRE_REFUSAL_REQUEST);
	cr_assert(seen.session_ended);
	cr_assert_eq(seen.end, WIRE_END_EXPIRED);
	cr_assert(strstr(seen.end_detail, "idle_closed"), "%s", seen.end_detail);
	wire_error_free(&seen);
	free(json);
}

Test(wire, engine_errors_become_the_codes_a_plimsoll_client_expects)
{
	struct {
		bh_error err;
		enum wire_code code;
		bool marked;
	} t[] = {
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_CAPACITY, "busy", BH_END_NONE), WIRE_RESOURCE_EXHAUSTED, true},
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_ISOLATION, "floor", BH_END_NONE), WIRE_FAILED_PRECONDITION, true},
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_UNSUPPORTED, "lang", BH_END_NONE), WIRE_UNIMPLEMENTED, true},
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_ENVIRONMENT, "files", BH_END_NONE), WIRE_FAILED_PRECONDITION, true},
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_PERMISSION, "who", BH_END_NONE), WIRE_PERMISSION_DENIED, true},
		{engine_error(BH_E_NOT_DISPATCHED, BH_REFUSAL_REQUEST, "gone", BH_END_NOT_FOUND), WIRE_NOT_FOUND, true},
		{engine_error(BH_E_INVALID, BH_REFUSAL_NONE, "bad", BH_END_NONE), WIRE_INVALID_ARGUMENT, true},
		{engine_error(BH_E_TIMEOUT, BH_REFUSAL_NONE, "late", BH_END_NONE), WIRE_DEADLINE_EXCEEDED, false},
		{engine_error(BH_E_SANDBOX, BH_REFUSAL_NONE, "died", BH_END_NONE), WIRE_UNKNOWN, false},
		{engine_error(BH_E_CLOSED, BH_REFUSAL_NONE, "bye", BH_END_NONE), WIRE_UNAVAILABLE, false},
		{engine_error(BH_E_RUNTIME, BH_REFUSAL_NONE, "crun", BH_END_NONE), WIRE_INTERNAL, false},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct wire_error e;
		wire_error_from_bh(&t[i].err, NULL, &e);
		cr_assert_eq(e.code, t[i].code, "%s: %s", t[i].err.msg, wire_code_name(e.code));
		cr_assert_eq(e.not_dispatched, t[i].marked, "%s", t[i].err.msg);
		cr_assert_str_eq(e.message, t[i].err.msg);
		wire_error_free(&e);
	}
}

Test(wire, a_call_that_may_have_run_carries_its_version_3_record)
{
	struct bh_record rec = sample_record();
	rec.version = 3;
	rec.result_sha256[0] = '\0';
	rec.unanswered = "resource_exhausted";
	bh_record_seal(&rec);
	bh_error err = engine_error(BH_E_SANDBOX, BH_REFUSAL_NONE, "the sandbox ended during the call (oom)",
				    BH_END_MAIN_PROCESS_ENDED);
	struct wire_error e;
	wire_error_from_bh(&err, &rec, &e);
	cr_assert_eq(e.code, WIRE_RESOURCE_EXHAUSTED, "the record's own code");
	char *json = wire_encode_error(&e);
	wire_error_free(&e);
	struct wire_error seen;
	wire_decode_error(429, BODY(json), &seen);
	cr_assert_not(seen.not_dispatched);
	cr_assert(seen.session_ended);
	cr_assert_eq(seen.end, WIRE_END_MAIN_PROCESS_ENDED);
	cr_assert(seen.unanswered);
	assert_same_record(&rec, &seen.record);
	cr_assert(bh_record_verify(&seen.record), "the client can check the record it got");
	wire_error_free(&seen);
	free(json);
}

Test(wire, a_decoder_refusal_becomes_a_marked_error)
{
	struct wire_status st;
	cr_assert_eq(run_req("{\"protocol\":2}", &st), -1);
	struct wire_error e;
	wire_error_from_status(&st, &e);
	char *json = wire_encode_error(&e);
	wire_error_free(&e);
	cr_assert_str_eq(json, "{\"code\":\"unimplemented\",\"message\":\"protocol 2 is not served here: this "
			       "daemon serves protocol 3\",\"details\":[{\"type\":\"plimsoll.v1.NotDispatched\","
			       "\"value\":\"CAM\"}]}");
	free(json);
}

/* ---- layering ------------------------------------------------------------------------ */

static char *run(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	pclose(f);
	return buf;
}

Test(wire, wire_sources_never_print_and_include_no_curses_http_or_curl)
{
	char *hits = run("grep -rnE '\\b(printf|fprintf|puts|perror|fputs|fwrite)[[:space:]]*\\(' " BH_SOURCE_DIR
			 "/src/wire 2>/dev/null");
	cr_assert_str_empty(hits, "the wire prints:\n%s", hits);
	hits = run("grep -rlE '#include[[:space:]]*[<\"](n?curses|microhttpd|curl/)' " BH_SOURCE_DIR
		   "/src/wire 2>/dev/null");
	cr_assert_str_empty(hits, "wire files including UI/HTTP headers:\n%s", hits);
}

Test(wire, strings_must_be_strict_utf8)
{
	cr_assert(wire_utf8_valid("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 12));
	cr_assert_not(wire_utf8_valid("\xc0\xaf", 2), "overlong");
	cr_assert_not(wire_utf8_valid("\xed\xa0\x80", 3), "a surrogate");
	cr_assert_not(wire_utf8_valid("\xf4\x90\x80\x80", 4), "past U+10FFFF");
	cr_assert_not(wire_utf8_valid("\xe2\x82", 2), "cut short");
	cr_assert_not(wire_utf8_valid("\x80", 1), "a lone continuation byte");
}
