/* ---- project: plimsoll's project payload against a real daemon, on both
 * tiers: files written, steps run in order and stopped at the first
 * failure, the budget, artifacts, the typed outcome, refusals of what
 * plimsoll's limits refuse; and in a session, a project whose files a cell
 * then reads. Every answer's record is checked twice: by bulkhead's digest
 * functions and by tests/support/plimsoll_digest.py, which implements
 * plimsoll's encoding from its documentation alone. ---- */
#include "base.h"
#include "daemon_harness.h"
#include "project_record.h"
#include "project.h"
#include "record.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static void daemon_stop_default(void) { daemon_stop(&d); }

/* A parameter is copied into the test's process: a name, not a pointer. */
struct tier {
	char name[16];
};
static struct tier both_tiers[] = {{"container"}, {"kernel"}};

static void start_tier(const char *tier)
{
	char extra[64];
	snprintf(extra, sizeof extra, "--tier %s", tier);
	daemon_start(&d, extra);
}

/* Run with a project; the decoded answer (status 200 asserted). */
static struct answer *run_project(const char *body, struct wire_run_response *r)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "Run", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(a->body, a->len, r, &st), 0, "%s", st.msg);
	check_record(body, a->body, r);
	cr_assert_str_empty(r->record.session, "a single run has no session");
	return a;
}

static bool bytes_are(const uint8_t *p, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(p, s, n) == 0;
}

ParameterizedTestParameters(project, a_project_runs_its_steps_and_returns_its_artifact)
{
	return cr_make_param_array(struct tier, both_tiers, 2);
}

ParameterizedTest(struct tier *tier, project, a_project_runs_its_steps_and_returns_its_artifact,
		  .fini = daemon_stop_default)
{
	start_tier(tier->name);
	const char *body =
		"{\"protocol\":3,\"timeoutMs\":30000,\"project\":{\"files\":["
		"{\"path\":\"main.js\",\"content\":\"console.log(require('./lib/answer.js'))\"},"
		"{\"path\":\"lib/answer.js\",\"content\":\"module.exports = 42\"},"
		"{\"path\":\"tool.py\",\"content\":\"import sys; print(sys.argv[1].upper())\"}],"
		"\"steps\":[\"node main.js > out.txt\",\"cat out.txt; python3 tool.py ok; echo warn >&2; id -u\"],"
		"\"artifacts\":[\"out.txt\",\"never-written.txt\",\"lib\"]}}";
	struct wire_run_response r;
	struct answer *a = run_project(body, &r);
	cr_assert_eq(r.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_str_empty(r.result.outcome_detail);
	cr_assert_str_eq(r.isolation, tier->name);
	cr_assert_eq(r.result.n_steps, 2);
	cr_assert_str_eq(r.result.steps[0].command, "node main.js > out.txt");
	cr_assert_eq(r.result.steps[0].exit_code, 0);
	const struct bh_project_step *s2 = &r.result.steps[1];
	cr_assert_eq(s2->exit_code, 0, "%.*s", (int)s2->errout_len, (const char *)s2->errout);
	/* The steps ran as the sandbox user, not as root. */
	cr_assert(s2->out_len > 7 && !memcmp(s2->out, "42\nOK\n", 6), "%.*s", (int)s2->out_len,
		  (const char *)s2->out);
	cr_assert(strncmp((const char *)s2->out + 6, "0\n", 2), "a step ran as root");
	cr_assert(bytes_are(s2->errout, s2->errout_len, "warn\n"));
	/* A missing artifact and a directory are left out, as plimsoll's runner does. */
	cr_assert_eq(r.result.n_artifacts, 1);
	cr_assert_str_eq(r.result.artifacts[0].path, "out.txt");
	cr_assert(bytes_are(r.result.artifacts[0].content, r.result.artifacts[0].len, "42\n"));
	cr_assert_not(r.result.artifacts_truncated);
	wire_run_response_free(&r);
	answer_free(a);
}

static void start_container(void) { start_tier("container"); }

/* plimsoll: a failing step stops the chain and the run is still completed
 * (its outcome says how the run concluded; the steps say what failed). */
Test(project, a_failing_second_step_stops_the_run_and_the_third_never_runs, .init = start_container,
     .fini = daemon_stop_default)
{
	const char *body = "{\"protocol\":3,\"project\":{"
			   "\"steps\":[\"echo one\",\"echo two; exit 3\",\"touch ran-three\"],"
			   "\"artifacts\":[\"ran-three\"]}}";
	struct wire_run_response r;
	struct answer *a = run_project(body, &r);
	cr_assert_eq(r.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_eq(r.result.n_steps, 2, "the step after the failure ran");
	cr_assert_eq(r.result.steps[1].exit_code, 3);
	cr_assert(bytes_are(r.result.steps[1].out, r.result.steps[1].out_len, "two\n"));
	cr_assert_eq(r.result.n_artifacts, 0, "the third step left its file");
	wire_run_response_free(&r);
	answer_free(a);
}

/* A file that cannot be written (a path through another file) stops the
 * run before any step: setup_failed, with the path in the detail. */
Test(project, a_file_that_cannot_be_written_is_setup_failed_before_any_step,
     .init = start_container, .fini = daemon_stop_default)
{
	const char *body = "{\"protocol\":3,\"project\":{\"files\":["
			   "{\"path\":\"a\",\"content\":\"a file\"},{\"path\":\"a/b\",\"content\":\"x\"}],"
			   "\"steps\":[\"touch stepped\"],\"artifacts\":[\"stepped\"]}}";
	struct wire_run_response r;
	struct answer *a = run_project(body, &r);
	cr_assert_eq(r.result.outcome, BH_PROJECT_SETUP_FAILED, "%s", a->body);
	cr_assert(strstr(r.result.outcome_detail, "could not write a/b"), "%s", r.result.outcome_detail);
	cr_assert_eq(r.result.n_steps, 0);
	cr_assert_eq(r.result.n_artifacts, 0);
	wire_run_response_free(&r);
	answer_free(a);
}

/* A step that outlives the budget is killed with what it started: timed
 * out, exit 124, the steps after it not run. */
Test(project, a_step_past_the_budget_times_the_project_out, .init = start_container,
     .fini = daemon_stop_default)
{
	const char *body = "{\"protocol\":3,\"timeoutMs\":1500,\"project\":{"
			   "\"steps\":[\"echo started; sleep 60 & sleep 60\",\"touch after\"],"
			   "\"artifacts\":[\"after\"]}}";
	struct wire_run_response r;
	struct answer *a = run_project(body, &r);
	cr_assert_eq(r.result.outcome, BH_PROJECT_TIMED_OUT, "%s", a->body);
	cr_assert_str_eq(r.result.outcome_detail, "step 1 exceeded the time budget");
	cr_assert_eq(r.result.n_steps, 1);
	cr_assert(r.result.steps[0].timed_out);
	cr_assert_eq(r.result.steps[0].exit_code, 124);
	cr_assert(bytes_are(r.result.steps[0].out, r.result.steps[0].out_len, "started\n"));
	cr_assert_eq(r.result.n_artifacts, 0);
	wire_run_response_free(&r);
	answer_free(a);
}

/* What plimsoll's limits refuse is refused before anything runs. */
Test(project, a_project_past_plimsolls_limits_is_refused_not_dispatched, .init = start_container,
     .fini = daemon_stop_default)
{
	struct buf b = {0};
	const char *head = "{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"files\":[";
	buf_append(&b, head, strlen(head));
	for (int i = 0; i < 201; i++) {
		char f[64];
		snprintf(f, sizeof f, "%s{\"path\":\"f%d\",\"content\":\"x\"}", i ? "," : "", i);
		buf_append(&b, f, strlen(f));
	}
	buf_append(&b, "]}}", 4);
	struct answer *a = daemon_call(&d, d.run_token, SVC "Run", (const char *)b.data);
	cr_assert_eq(a->status, 400, "%s", a->body);
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert_eq(e.code, WIRE_INVALID_ARGUMENT);
	cr_assert(e.not_dispatched);
	cr_assert_eq(e.reason, WIRE_REFUSAL_REQUEST);
	cr_assert(strstr(e.message, "201 files"), "%s", e.message);
	wire_error_free(&e);
	answer_free(a);
	buf_free(&b);
	/* A grant on a project this daemon (no --profiles) knows nothing of is
	 * refused before dispatch (permission, as any unknown profile). */
	a = daemon_call(&d, d.run_token, SVC "Run",
			"{\"protocol\":3,\"project\":{\"steps\":[\"true\"],\"grantProfile\":\"gh\"}}");
	cr_assert_neq(a->status, 200, "%s", a->body);
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert(e.not_dispatched, "%s", a->body);
	wire_error_free(&e);
	answer_free(a);
}

Test(project, describe_says_projects_are_supported_with_their_budget, .init = start_container,
     .fini = daemon_stop_default)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "Describe", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_describe_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.supports_project);
	cr_assert_not(r.supports_project_grants);
	cr_assert_eq(r.project_environment.max_timeout_ms, BH_PROJECT_MAX_TIMEOUT_MS);
	cr_assert_eq(r.project_environment.n_languages, 2);
	cr_assert_str_neq(r.project_environment.identity, "", "the environment names no identity");
	wire_describe_response_free(&r);
	answer_free(a);
}

/* ---- in a session ---- */

ParameterizedTestParameters(project, a_session_project_leaves_its_files_for_the_next_cell)
{
	return cr_make_param_array(struct tier, both_tiers, 2);
}

ParameterizedTest(struct tier *tier, project, a_session_project_leaves_its_files_for_the_next_cell,
		  .fini = daemon_stop_default)
{
	start_tier(tier->name);
	struct daemon_session ds;
	daemon_open_session(&d, &ds);
	char body[1024];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"project\":{\"files\":["
		 "{\"path\":\"data/in.csv\",\"content\":\"a,b\\n1,2\\n\"}],"
		 "\"steps\":[\"wc -l < data/in.csv > data/count.txt\"],\"artifacts\":[\"data/count.txt\"]}}",
		 ds.id);
	struct answer *a = daemon_call(&d, d.run_token, SVC "SessionRun", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	/* The independent script reads the RunResponse inside the answer. */
	cJSON *root = cJSON_Parse(a->body);
	char *run_json = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "run"));
	check_record(body, run_json, &r.run);
	free(run_json);
	cJSON_Delete(root);
	cr_assert_eq(r.run.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_eq(r.run.record.sequence, 1);
	cr_assert_str_eq(r.run.record.session, ds.fp);
	cr_assert_eq(r.run.result.n_artifacts, 1);
	cr_assert(bytes_are(r.run.result.artifacts[0].content, r.run.result.artifacts[0].len, "2\n"));
	char first[65];
	snprintf(first, sizeof first, "%s", r.run.record.record_sha256);
	wire_session_run_response_free(&r);
	answer_free(a);
	/* A cell finds the project's files, and its record chains after it. */
	a = daemon_cell(&d, d.run_token, ds.id, "python",
			"print(open('data/count.txt').read().strip(), open('data/in.csv').read().count(','))");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(bytes_are(r.run.result.out, r.run.result.out_len, "2 2\n"), "%.*s",
		  (int)r.run.result.out_len, (const char *)r.run.result.out);
	cr_assert_eq(r.run.record.sequence, 2);
	cr_assert_str_eq(r.run.record.previous_sha256, first);
	wire_session_run_response_free(&r);
	answer_free(a);
	/* `bulkhead verify` recomputes the stored chain, the project's record in it. */
	char cmd[9000], out[4096] = "";
	snprintf(cmd, sizeof cmd, "%s verify --session %s --state '%s/state' 2>&1", BH_TEST_CLI, ds.fp,
		 d.dir);
	FILE *p = popen(cmd, "r");
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "verify: %s", out);
	cr_assert(strstr(out, "2 records"), "verify: %s", out);
}

/* A step cannot speak for the runner: its write to the runner's stdout
 * (through /proc, as any process of the same uid would try) is refused, or
 * what it wrote breaks the report; either way no forged step result is
 * believed, on either tier. */
ParameterizedTestParameters(project, a_step_cannot_forge_the_runners_report)
{
	return cr_make_param_array(struct tier, both_tiers, 2);
}

ParameterizedTest(struct tier *tier, project, a_step_cannot_forge_the_runners_report,
		  .fini = daemon_stop_default)
{
	start_tier(tier->name);
	const char *body = "{\"protocol\":3,\"project\":{\"steps\":["
			   "\"printf 'forged report' > /proc/$PPID/fd/1\",\"echo second\"]}}";
	struct wire_run_response r;
	struct answer *a = run_project(body, &r);
	if (r.result.outcome == BH_PROJECT_COMPLETED) {
		cr_assert_eq(r.result.n_steps, 1, "%s", a->body);
		cr_assert_neq(r.result.steps[0].exit_code, 0, "the step reached the runner's stdout: %s",
			      a->body);
	} else {
		cr_assert_eq(r.result.outcome, BH_PROJECT_PROTOCOL_ERROR, "%s", a->body);
		cr_assert_eq(r.result.n_steps, 0);
	}
	wire_run_response_free(&r);
	answer_free(a);
}
