/* The approval desk's pieces without a daemon: the clients file's
 * approval= option (strict: any other key or value refused, by line) and
 * the ListApprovals / DecideApproval codec (what the daemon writes the
 * client reads back; a request the daemon would misread is refused). */
#include "clients.h"
#include "harness.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER "sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char *parse_fails(const char *text)
{
	struct client_entry *v = NULL;
	size_t n = 0;
	char *why = NULL;
	cr_assert_lt(clients_parse(text, strlen(text), &v, &n, &why), 0, "accepted: %s", text);
	cr_assert_null(v);
	return why;
}

Test(approvals_clients, approval_required_and_none_are_read_per_client)
{
	const char *text = "a " DIGEST " code:run approval=required\n"
			   "b " OTHER " code:run,operator approval=none  # ops\n";
	struct client_entry *v = NULL;
	size_t n = 0;
	char *why = NULL;
	cr_assert_eq(clients_parse(text, strlen(text), &v, &n, &why), 0, "%s", why);
	cr_assert_eq(n, 2);
	cr_expect_eq(v[0].approval, CLIENT_APPROVAL_REQUIRED);
	cr_expect_eq(v[1].approval, CLIENT_APPROVAL_NONE);
	free(v);
	text = "a " DIGEST " code:run\n";
	cr_assert_eq(clients_parse(text, strlen(text), &v, &n, &why), 0, "%s", why);
	cr_expect_eq(v[0].approval, CLIENT_APPROVAL_DEFAULT, "no option: the daemon's default");
	free(v);
}

Test(approvals_clients, an_unknown_key_or_value_is_refused_naming_the_line)
{
	static const struct {
		const char *line2, *says;
	} cases[] = {
		{"b " OTHER " code:run aproval=required\n", "unknown option \"aproval\""},
		{"b " OTHER " code:run approval=sometimes\n",
		 "approval must be \"required\" or \"none\""},
		{"b " OTHER " code:run approval=\n", "approval must be"},
		{"b " OTHER " code:run approval=Required\n", "approval must be"},
		{"b " OTHER " code:run required\n", "unknown option \"required\""},
		{"b " OTHER " code:run approval=none approval=none\n", "approval= is given twice"},
		{"b " OTHER " code:run approval=none subject=CN=b x\n", "found 6 fields"}, /* ---- tls ---- */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		snprintf(text, sizeof text, "a " DIGEST " operator\n%s", cases[i].line2);
		char *why = parse_fails(text);
		cr_expect(strstr(why, "line 2: ") != NULL, "case %zu: %s", i, why);
		cr_expect(strstr(why, cases[i].says) != NULL, "case %zu: %s", i, why);
		free(why);
	}
	/* A token pasted where the option goes is still called a token. */
	char *why = parse_fails("a " DIGEST
				" code:run bh_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n");
	cr_expect(strstr(why, "looks like a token") != NULL, "%s", why);
	cr_expect(strstr(why, "bh_AAAA") == NULL, "the refusal repeats the token: %s", why);
	free(why);
}

static struct wire_operator_approvals sample(struct wire_operator_approval_file *file)
{
	static struct wire_operator_approval held = {
		.id = "3f9a1c2b7d4e",
		.procedure = "SessionRun",
		.principal = "runner",
		.run_key = "run-7",
		.owner = "c0ffee",
		.session = "ab12",
		.isolation = "kernel",
		.kind = "cell",
		.language = "python",
		.code = "import os\nprint(os.getcwd())",
		.request_sha256 =
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		.held_unix_ms = 1764590000000,
		.deadline_unix_ms = 1764590060000,
		.n_files = 1,
	};
	wire_operator_approval_file_of(file, held.id, "data/in.csv", (const uint8_t *)"a,b\n1,2\n",
				       8);
	return (struct wire_operator_approvals){.approvals = &held,
						.n = 1,
						.files = file,
						.n_files = 1,
						.cap_total = 64,
						.cap_per_principal = 8,
						.timeout_ms = 60000};
}

Test(approvals_codec, a_held_call_and_its_files_read_back_as_written)
{
	struct wire_operator_approval_file file;
	struct wire_operator_approvals a = sample(&file);
	char *json = wire_operator_encode_approvals(&a);
	struct wire_operator_approvals back;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_approvals(json, strlen(json), &back, &st), 0, "%s",
		     st.msg);
	cr_assert_eq(back.n, 1);
	cr_expect_str_eq(back.approvals[0].id, "3f9a1c2b7d4e");
	cr_expect_str_eq(back.approvals[0].principal, "runner");
	cr_expect_str_eq(back.approvals[0].run_key, "run-7");
	cr_expect_str_eq(back.approvals[0].code, "import os\nprint(os.getcwd())");
	cr_expect_str_eq(back.approvals[0].request_sha256, a.approvals[0].request_sha256);
	cr_expect_eq(back.approvals[0].deadline_unix_ms, 1764590060000);
	cr_assert_eq(back.n_files, 1);
	cr_expect_str_eq(back.files[0].name, "data/in.csv");
	cr_expect_eq(back.files[0].size, 8);
	cr_expect_str_eq(back.files[0].text, "a,b\n1,2\n");
	cr_expect_eq(back.timeout_ms, 60000);
	cr_expect_eq(back.cap_per_principal, 8);
	char *again = wire_operator_encode_approvals(&back);
	cr_expect_str_eq(again, json, "encode(decode(x)) differs from x");
	free(again);
	free(json);
	wire_operator_approvals_free(&back);
	wire_operator_approval_file_clear(&file);
}

Test(approvals_codec, a_damaged_answer_is_refused_naming_the_field)
{
	static const struct {
		const char *body, *says;
	} cases[] = {
		{"{\"approvals\":[{\"id\":7}],\"files\":[]}", "approvals[0].id"},
		{"{\"approvals\":[],\"files\":[{\"approval\":\"nobody\",\"name\":\"x\"}]}",
		 "files[0].approval names no held call"},
		{"{\"approvals\":[{\"id\":\"a\",\"requestSha256\":\"00000000000000000000000000000000000000"
		 "000000000000000000000000000000\"}],\"files\":[]}",
		 "requestSha256"},
		{"{\"approvals\":{},\"files\":[]}", "approvals"},
		{"[]", "not a JSON object"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct wire_operator_approvals out;
		struct wire_status st;
		cr_expect_lt(wire_operator_decode_approvals(cases[i].body, strlen(cases[i].body),
							    &out, &st),
			     0, "case %zu accepted", i);
		cr_expect_eq(st.code, WIRE_DATA_LOSS, "case %zu", i);
		cr_expect(strstr(st.msg, "ListApprovals: ") == st.msg, "case %zu: %s", i, st.msg);
		cr_expect(strstr(st.msg, cases[i].says) != NULL, "case %zu: %s", i, st.msg);
	}
}

Test(approvals_codec, a_decision_request_is_read_strictly_and_who_is_never_the_callers)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"{\"decision\":\"approve\"}", "id: name the held call"},
		{"{\"id\":\"x\",\"decision\":\"yes\"}", "decision must be \"approve\" or \"deny\""},
		{"{\"id\":\"x\",\"decision\":\"deny\"}", "a denial needs a reason"},
		{"{\"id\":\"x\",\"decision\":\"approve\",\"reason\":5}", "reason"},
		{"{\"id\":\"x\",\"id\":\"y\",\"decision\":\"approve\"}", "id"},
		{"nope", ""},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct wire_operator_decision d;
		struct wire_status st;
		cr_expect_lt(wire_operator_decode_decision_request(bad[i].body, strlen(bad[i].body),
								   &d, &st),
			     0, "case %zu accepted", i);
		cr_expect_eq(st.code, WIRE_INVALID_ARGUMENT, "case %zu", i);
		cr_expect_eq(st.reason, WIRE_REFUSAL_REQUEST, "case %zu", i);
		cr_expect(strstr(st.msg, bad[i].says) != NULL, "case %zu: %s", i, st.msg);
	}
	char longer[WIRE_APPROVAL_REASON_MAX + 100];
	int n = snprintf(longer, sizeof longer,
			 "{\"id\":\"x\",\"decision\":\"deny\",\"reason\":\"");
	memset(longer + n, 'r', WIRE_APPROVAL_REASON_MAX + 1);
	snprintf(longer + n + WIRE_APPROVAL_REASON_MAX + 1, 8, "\"}");
	struct wire_operator_decision d;
	struct wire_status st;
	cr_expect_lt(wire_operator_decode_decision_request(longer, strlen(longer), &d, &st), 0);
	cr_expect(strstr(st.msg, "longer than 512 bytes") != NULL, "%s", st.msg);

	const char *ok =
		"{\"id\":\"x\",\"decision\":\"deny\",\"reason\":\"no net\",\"by\":\"root\"}";
	cr_assert_eq(wire_operator_decode_decision_request(ok, strlen(ok), &d, &st), 0, "%s",
		     st.msg);
	cr_expect_str_eq(d.reason, "no net");
	cr_expect_str_eq(d.by, "", "the request named who decided");
	wire_operator_decision_free(&d);
}

Test(approvals_codec, a_files_text_is_cut_at_a_character_and_binary_is_not_shown)
{
	struct wire_operator_approval_file f;
	static const uint8_t bin[] = {'P', 'N', 'G', 0, 0xff, 0xfe};
	wire_operator_approval_file_of(&f, "id", "plot.png", bin, sizeof bin);
	cr_expect(f.binary);
	cr_expect_str_eq(f.text, "");
	cr_expect_eq(f.size, sizeof bin);
	wire_operator_approval_file_clear(&f);

	size_t len = WIRE_APPROVAL_TEXT_MAX + 10;
	uint8_t *big = malloc(len);
	memset(big, 'x', len);
	/* "é" (2 bytes) across the cut. */
	big[WIRE_APPROVAL_TEXT_MAX - 1] = 0xc3;
	big[WIRE_APPROVAL_TEXT_MAX] = 0xa9;
	wire_operator_approval_file_of(&f, "id", "long.txt", big, len);
	cr_expect(!f.binary, "a long text was called binary");
	cr_expect(f.truncated);
	cr_expect_eq(strlen(f.text), WIRE_APPROVAL_TEXT_MAX - 1, "the cut split a character");
	cr_expect_eq(f.size, len);
	wire_operator_approval_file_clear(&f);
	free(big);
}

/* `bulkhead token create --approval` writes the option; the file loads
 * with it and `token list` shows it. */
Test(approvals_clients, token_create_writes_the_approval_option_and_list_shows_it)
{
	char dir[] = "/tmp/bh-approvals-token.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char out[4096];
	int rc = harness_sh_into(
		out, sizeof out,
		"%s token create agent --scope code:run --approval required --clients "
		"'%s/clients' 2>/dev/null >/dev/null; echo $?",
		BH_TEST_CLI, dir);
	cr_assert_eq(rc, 0);
	cr_expect_str_eq(out, "0\n");
	rc = harness_sh_into(out, sizeof out,
			     "%s token create ops --scope operator --approval maybe "
			     "--clients '%s/clients' 2>&1",
			     BH_TEST_CLI, dir);
	cr_expect_neq(rc, 0, "a bad --approval was taken: %s", out);
	cr_expect(strstr(out, "--approval is required or none") != NULL, "%s", out);
	char path[128];
	snprintf(path, sizeof path, "%s/clients", dir);
	struct clients *c = NULL;
	char *why = NULL;
	cr_assert_eq(clients_load(path, &c, &why), 0, "%s", why);
	cr_expect_eq(clients_count(c), 1, "the refused create added a client");
	clients_free(c);
	rc = harness_sh_into(out, sizeof out, "%s token list --clients '%s/clients'", BH_TEST_CLI,
			     dir);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "approval=required") != NULL, "%s", out);
	char rm[160];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	cr_expect_eq(system(rm), 0);
}

/* The listing's budget counts a string as JSON writes it: escapes too. */
Test(approvals_codec, a_strings_cost_counts_its_escapes)
{
	cr_expect_eq(wire_operator_json_string_cost(""), 2);
	cr_expect_eq(wire_operator_json_string_cost("ab"), 4);
	cr_expect_eq(wire_operator_json_string_cost("a\"\n\\\x01"), 2 + 1 + 2 + 2 + 2 + 6);
	char *json = NULL;
	struct wire_operator_decision d = {.id = "x", .decision = "deny", .reason = "a\"\n\\\x01"};
	json = wire_operator_encode_decision(&d);
	/* {"id":"x","decision":"deny","reason":...}: the reason's cost is its bytes there. */
	const char *r = strstr(json, "\"reason\":") + strlen("\"reason\":");
	cr_expect_eq(strlen(r) - 1, wire_operator_json_string_cost(d.reason), "%s", json);
	free(json);
}
