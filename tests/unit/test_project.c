/* ---- project: the project kind's record encoding against plimsoll's own
 * golden vectors (record/testdata/golden.json), and the wire's ProjectRun
 * limits as plimsoll's validation states them. ---- */
#include "project.h"
#include "record.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT(s) (const uint8_t *)(s), sizeof(s) - 1
static const struct bh_file golden_files[] = {
	{"main.js", TEXT("console.log(require('./lib.js'))")},
	{"lib.js", TEXT("module.exports = 42")},
};
static const char *const golden_steps[] = {"node main.js > out.txt", "cat out.txt"};
static const char *const golden_artifacts[] = {"out.txt"};

static struct bh_request_fields golden_request(uint32_t protocol)
{
	static const char *const ids[] = {
		"oci-manifest:linux/amd64@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"oci-manifest:linux/amd64@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	};
	return (struct bh_request_fields){
		.protocol = protocol,
		.minimum_isolation = "",
		.timeout_ms = 30000,
		.software_mode = protocol >= 2 ? "approved" : "",
		.software_identities = ids,
		.n_identities = protocol >= 2 ? 2 : 0,
		.kind = "project",
		.grant_profile = "",
		.files = golden_files,
		.n_files = 2,
		.steps = golden_steps,
		.n_steps = 2,
		.artifacts = golden_artifacts,
		.n_artifacts = 1,
	};
}

Test(project, plimsolls_golden_project_requests_reproduce)
{
	char out[65];
	struct bh_request_fields v1 = golden_request(1);
	bh_request_digest(&v1, out);
	cr_assert_str_eq(out, "894bec2baf1b52612c2f060ba2aa9080273294e737bae5f3a65ff661b50481d0");
	struct bh_request_fields v2 = golden_request(2);
	bh_request_digest(&v2, out);
	cr_assert_str_eq(out, "abf8235a62b43c4384dc9e7a0f704f1f5f0936ac01a98d7344e50195455d97e1");
}

/* The golden project result, as plimsoll's answer carries it, decoded by
 * the client's own decoder and digested. */
Test(project, plimsolls_golden_project_result_decodes_and_reproduces)
{
	const char *body =
		"{\"sandbox\":\"openshell\",\"isolation\":\"container\",\"durationMs\":\"4210\","
		"\"project\":{\"steps\":[{\"command\":\"node main.js > out.txt\",\"durationMs\":\"90\"},"
		"{\"command\":\"cat out.txt\",\"stdout\":\"NDIK\",\"durationMs\":\"3\"}],"
		"\"outcome\":\"PROJECT_OUTCOME_COMPLETED\","
		"\"artifacts\":[{\"path\":\"out.txt\",\"content\":\"NDIK\"}]}}";
	struct wire_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(body, strlen(body), &r, &st), 0, "%s", st.msg);
	cr_assert_str_eq(r.result.kind, "project");
	cr_assert_eq(r.result.outcome, BH_PROJECT_COMPLETED);
	cr_assert_eq(r.result.n_steps, 2);
	cr_assert_eq(r.result.steps[1].out_len, 3);
	cr_assert_eq(memcmp(r.result.steps[1].out, "42\n", 3), 0);
	cr_assert_eq(r.result.steps[0].duration_us, 90000);
	cr_assert_eq(r.result.n_artifacts, 1);
	cr_assert_str_eq(r.result.artifacts[0].path, "out.txt");
	char out[65];
	bh_result_digest(&r.result, out);
	cr_assert_str_eq(out, "bfb9756e0d38ac39c7ffd523278e5c32b63c5db76ec5162b7d1ffbe363d0ad6f");
	/* What bulkhead encodes decodes to the same digest. */
	char *again = wire_encode_run_response(&r);
	struct wire_run_response r2;
	cr_assert_eq(wire_decode_run_response(again, strlen(again), &r2, &st), 0, "%s", st.msg);
	char out2[65];
	bh_result_digest(&r2.result, out2);
	cr_assert_str_eq(out2, out);
	free(again);
	wire_run_response_free(&r2);
	wire_run_response_free(&r);
}

/* ---- the request's limits ---- */

static void expect_refused(const char *body, const char *words)
{
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(body, strlen(body), &r, &st), -1, "accepted: %.200s", body);
	cr_assert_eq(st.code, WIRE_INVALID_ARGUMENT, "%s", st.msg);
	cr_assert_eq(st.reason, WIRE_REFUSAL_REQUEST, "%s", st.msg);
	cr_assert(strstr(st.msg, words), "\"%s\" does not say \"%s\"", st.msg, words);
}

static char *project_body(const char *files, const char *steps, const char *artifacts)
{
	size_t n = strlen(files) + strlen(steps) + strlen(artifacts) + 128;
	char *b = malloc(n);
	snprintf(b, n, "{\"protocol\":3,\"project\":{\"files\":[%s],\"steps\":[%s],\"artifacts\":[%s]}}",
		 files, steps, artifacts);
	return b;
}

static char *repeat(const char *fmt, int n, const char *sep)
{
	size_t cap = (size_t)n * (strlen(fmt) + 32) + 1;
	char *out = calloc(1, cap);
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, cap - len, fmt, i, i ? sep : "");
	return out;
}

Test(project, a_project_within_plimsolls_limits_decodes_with_its_digest_fields)
{
	const char *body = "{\"protocol\":3,\"timeoutMs\":30000,\"project\":{\"files\":["
			   "{\"path\":\"main.js\",\"content\":\"console.log(require('./lib.js'))\"},"
			   "{\"path\":\"lib.js\",\"content\":\"module.exports = 42\"}],"
			   "\"steps\":[\"node main.js > out.txt\",\"cat out.txt\"],"
			   "\"artifacts\":[\"out.txt\"]}}";
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(body, strlen(body), &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.kind, WIRE_PAYLOAD_PROJECT);
	cr_assert_eq(r.project.n_files, 2);
	cr_assert_eq(r.project.n_steps, 2);
	cr_assert_str_eq(r.project.artifacts[0], "out.txt");
	struct bh_request_fields f;
	wire_request_fields(&r, &f);
	struct bh_request_fields want = golden_request(3);
	want.software_mode = ""; /* the body sent no rule */
	want.n_identities = 0;
	char a[65], b[65];
	bh_request_digest(&f, a);
	bh_request_digest(&want, b);
	cr_assert_str_eq(a, b, "the decoded request digests as the one built by hand");
	/* The client's encoder writes what the daemon's decoder reads back. */
	char *again = wire_encode_run_request(&r);
	struct wire_run_request r2;
	cr_assert_eq(wire_decode_run_request(again, strlen(again), &r2, &st), 0, "%s", st.msg);
	wire_request_fields(&r2, &f);
	bh_request_digest(&f, a);
	cr_assert_str_eq(a, b);
	free(again);
	wire_run_request_free(&r2);
	wire_run_request_free(&r);
}

Test(project, steps_outside_one_to_twenty_or_too_long_are_refused)
{
	char *b = project_body("", "", "");
	expect_refused(b, "project.steps must hold 1 to 20");
	free(b);
	char *steps = repeat("%2$s\"echo %1$d\"", 21, ",");
	b = project_body("", steps, "");
	expect_refused(b, "project.steps must hold 1 to 20 commands (it holds 21)");
	free(b);
	free(steps);
	b = project_body("", "\"true\",\"\"", "");
	expect_refused(b, "project.steps[1] is empty");
	free(b);
	char *long_step = calloc(1, BH_PROJECT_MAX_STEP_BYTES + 4);
	long_step[0] = '"';
	memset(long_step + 1, 'x', BH_PROJECT_MAX_STEP_BYTES + 1);
	long_step[BH_PROJECT_MAX_STEP_BYTES + 2] = '"';
	b = project_body("", long_step, "");
	expect_refused(b, "project.steps[0] is 16385 bytes, more than the 16384 allowed");
	free(b);
	free(long_step);
}

Test(project, files_over_two_hundred_twice_named_or_escaping_work_are_refused)
{
	char *files = repeat("%2$s{\"path\":\"f%1$d\",\"content\":\"x\"}", 201, ",");
	char *b = project_body(files, "\"true\"", "");
	expect_refused(b, "project.files holds 201 files, more than the 200 allowed");
	free(b);
	free(files);
	b = project_body("{\"path\":\"a\",\"content\":\"1\"},{\"path\":\"a\",\"content\":\"2\"}", "\"true\"", "");
	expect_refused(b, "repeats project.files[0].path");
	free(b);
	b = project_body("{\"path\":\"../etc/passwd\",\"content\":\"\"}", "\"true\"", "");
	expect_refused(b, "has a '.' or '..' segment");
	free(b);
	b = project_body("{\"path\":\"a\\\\b\",\"content\":\"\"}", "\"true\"", "");
	expect_refused(b, "contains a backslash");
	free(b);
}

Test(project, more_than_four_mebibytes_of_files_are_refused)
{
	size_t half = BH_MAX_FILES_BYTES / 2 + 1;
	char *content = malloc(half + 1);
	memset(content, 'a', half);
	content[half] = '\0';
	size_t n = 2 * half + 256;
	char *files = malloc(n);
	snprintf(files, n, "{\"path\":\"a\",\"content\":\"%s\"},{\"path\":\"b\",\"content\":\"%s\"}", content,
		 content);
	char *b = project_body(files, "\"true\"", "");
	expect_refused(b, "project.files hold more than 4194304 bytes of content (at project.files[1])");
	free(b);
	free(files);
	free(content);
}

Test(project, artifacts_over_a_hundred_twice_named_or_absolute_are_refused)
{
	char *arts = repeat("%2$s\"a%1$d\"", 101, ",");
	char *b = project_body("", "\"true\"", arts);
	expect_refused(b, "project.artifacts holds 101 paths, more than the 100 allowed");
	free(b);
	free(arts);
	b = project_body("", "\"true\"", "\"out.txt\",\"out.txt\"");
	expect_refused(b, "project.artifacts[1] \"out.txt\" repeats artifacts[0]");
	free(b);
	b = project_body("", "\"true\"", "\"/etc/shadow\"");
	expect_refused(b, "is absolute");
	free(b);
}

/* A daemon's answer is held to the same limits: more steps than a project
 * may have is not an answer to any request. */
Test(project, a_result_with_more_steps_than_a_project_may_have_is_data_loss)
{
	char *steps = repeat("%2$s{\"command\":\"s%1$d\"}", 21, ",");
	size_t n = strlen(steps) + 128;
	char *body = malloc(n);
	snprintf(body, n, "{\"project\":{\"steps\":[%s],\"outcome\":\"PROJECT_OUTCOME_COMPLETED\"}}", steps);
	struct wire_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(body, strlen(body), &r, &st), -1);
	cr_assert_eq(st.code, WIRE_DATA_LOSS);
	cr_assert(strstr(st.msg, "project.steps holds 21 steps"), "%s", st.msg);
	const char *odd = "{\"project\":{\"outcome\":\"PROJECT_OUTCOME_SOMETHING_NEW\"}}";
	cr_assert_eq(wire_decode_run_response(odd, strlen(odd), &r, &st), -1);
	cr_assert(strstr(st.msg, "no ProjectOutcome"), "%s", st.msg);
	free(body);
	free(steps);
}

/* ---- pgrant: a project's grant is the sent name in the request digest,
 * round-tripped by the client's encoder; a name past 64 bytes is refused
 * as javascript.grantProfile's is. ---- */
Test(project, a_projects_grant_is_its_digests_grant_profile_and_a_long_name_is_refused)
{
	const char *body = "{\"protocol\":3,\"timeoutMs\":30000,\"project\":{\"files\":["
			   "{\"path\":\"main.js\",\"content\":\"console.log(require('./lib.js'))\"},"
			   "{\"path\":\"lib.js\",\"content\":\"module.exports = 42\"}],"
			   "\"steps\":[\"node main.js > out.txt\",\"cat out.txt\"],"
			   "\"artifacts\":[\"out.txt\"],\"grantProfile\":\"gh\"}}";
	struct wire_run_request r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(body, strlen(body), &r, &st), 0, "%s", st.msg);
	struct bh_request_fields f;
	wire_request_fields(&r, &f);
	cr_assert_str_eq(f.grant_profile, "gh");
	struct bh_request_fields want = golden_request(3);
	want.software_mode = "";
	want.n_identities = 0;
	char a[65], b[65], none[65];
	bh_request_digest(&want, none);
	want.grant_profile = "gh";
	bh_request_digest(&f, a);
	bh_request_digest(&want, b);
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, none, "the grant takes no part in the digest");
	char *again = wire_encode_run_request(&r);
	cr_assert(strstr(again, "\"grantProfile\":\"gh\""), "%s", again);
	free(again);
	wire_run_request_free(&r);

	char name[80];
	memset(name, 'a', 65);
	name[65] = '\0';
	char long_body[256];
	snprintf(long_body, sizeof long_body,
		 "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"grantProfile\":\"%s\"}}", name);
	expect_refused(long_body, "project.grantProfile is 65 bytes, more than the 64 a profile's "
				  "name may have");
	name[64] = '\0';
	snprintf(long_body, sizeof long_body,
		 "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"grantProfile\":\"%s\"}}", name);
	cr_assert_eq(wire_decode_run_request(long_body, strlen(long_body), &r, &st), 0, "%s", st.msg);
	wire_run_request_free(&r);
}
