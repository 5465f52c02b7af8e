/* ---- plimsoll: what plimsoll's Python client 0.21.0 sends and how it reads
 * the answers, found by driving `bulkhead serve` with that client unchanged
 * (issue 18's manual check); no plimsoll code is here.
 *
 * CodeExecutor (its execution.py, the base of its agno and crewai tools)
 * makes two calls, written here byte for byte as the client serializes them:
 * over TCP, its headers, a Describe of "{}", then a Run whose compact UTF-8
 * JSON (json.dumps, ensure_ascii=False) carries the caller's files plus the
 * script under the reserved `.plimsoll/` directory and one fixed step —
 * runpy for Python, an ES module for JavaScript. What the client then checks
 * is checked: Describe's project support, tier and languages (else it refuses
 * before Run), the request id answered, the step's output, the artifact, and
 * the record (bulkhead's digests and the independent
 * tests/support/plimsoll_digest.py).
 *
 * A session call the sandbox does not survive is answered as plimsoll
 * answers it: failed_precondition with the SessionEnded and UnansweredCall
 * details and no mark. The client types an error by its code first, so under
 * resource_exhausted (what bulkhead said for out of memory) it was an
 * admission shed (AtCapacityError, HTTP 429) and the session's end was
 * dropped. ---- */
#include "daemon_harness.h"
#include "project.h"
#include "project_record.h"
#include "record.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <string.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static void start(void)
{
	daemon_start(&d, "--tier container --listen 127.0.0.1:0");
}
static void start_kernel(void)
{
	daemon_start(&d, "--tier kernel");
}
static void stop(void)
{
	daemon_stop(&d);
}

/* What its Transport.call adds to every request besides the bearer token,
 * the content type and the request id (the harness sends those). */
static const char *const python_client_headers[] = {
	"Connect-Protocol-Version: 1",
	"Accept-Encoding: identity",
	"User-Agent: plimsoll-client-python/0.21.0",
	NULL,
};

static struct answer *send_as_python_client(const char *procedure, const char *body)
{
	struct answer *a = daemon_call_with(&d, d.run_token, procedure, body, strlen(body), true,
					    python_client_headers);
	cr_assert_eq(a->curl_code, 0);
	cr_assert_eq(a->status, 200, "%s", a->body);
	/* An answer without its request's id is believed in nothing (protocol 3). */
	cr_assert_eq(strlen(a->request_id), 32, "the answer carries no request id: %s", a->body);
	return a;
}

static bool has_language(const struct wire_describe_response *r, const char *lang)
{
	for (size_t i = 0; i < r->project_environment.n_languages; i++)
		if (!strcmp(r->project_environment.languages[i], lang))
			return true;
	return false;
}

/* CodeExecutor.execute_code: Describe, its checks, then the Run. */
static void execute_code(const char *run_body, const char *stdout_want, const char *artifact,
			 const char *artifact_want)
{
	struct answer *a = send_as_python_client(SVC "Describe", "{}");
	struct wire_describe_response info;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(a->body, a->len, &info, &st), 0, "%s", st.msg);
	cr_assert_eq(info.protocol, 3, "the client speaks protocol 3 only");
	cr_assert(info.supports_project, "CodeExecutor refuses a daemon without projects");
	cr_assert_str_eq(info.isolation, "container", "the executor's floor is container here");
	cr_assert(has_language(&info, "python") && has_language(&info, "javascript"),
		  "the client refuses a language the project environment does not state");
	wire_describe_response_free(&info);
	answer_free(a);

	a = send_as_python_client(SVC "Run", run_body);
	struct wire_run_response r;
	cr_assert_eq(wire_decode_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	check_record(run_body, a->body, &r);
	cr_assert_str_empty(r.record.session, "a single run's record has no session fields");
	cr_assert_str_eq(r.isolation, "container");
	cr_assert_eq(r.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_eq(r.result.n_steps, 1);
	const struct bh_project_step *s = &r.result.steps[0];
	cr_assert_eq(s->exit_code, 0, "%.*s", (int)s->errout_len, (const char *)s->errout);
	cr_assert(s->out_len == strlen(stdout_want) && !memcmp(s->out, stdout_want, s->out_len),
		  "stdout %.*s", (int)s->out_len, (const char *)s->out);
	if (artifact) {
		cr_assert_eq(r.result.n_artifacts, 1, "%s", a->body);
		cr_assert_str_eq(r.result.artifacts[0].path, artifact);
		cr_assert(r.result.artifacts[0].len == strlen(artifact_want) &&
			  !memcmp(r.result.artifacts[0].content, artifact_want,
				  r.result.artifacts[0].len));
	} else {
		cr_assert_eq(r.result.n_artifacts, 0);
	}
	wire_run_response_free(&r);
	answer_free(a);
}

Test(python_client, code_executors_python_and_javascript_calls_as_it_sends_them_run_and_verify,
     .init = start, .fini = stop)
{
	/* execute_code(code, files={"helper.py": ...}, artifacts=["result.txt"]):
	 * the caller's file imports as a module (runpy keeps /work on the path),
	 * and a non-ASCII character travels as raw UTF-8. */
	execute_code(
		"{\"protocol\":3,\"minimumIsolation\":\"container\",\"timeoutMs\":30000,"
		"\"project\":{\"steps\":[\"python3 -c 'import runpy; runpy.run_path("
		"\\\".plimsoll/code.py\\\", run_name=\\\"__main__\\\")'\"],"
		"\"files\":[{\"path\":\"helper.py\",\"content\":\"N = 7\\n\"},"
		"{\"path\":\".plimsoll/code.py\",\"content\":\"import helper\\n"
		"print('caf\xc3\xa9', helper.N * 6)\\nopen('result.txt','w').write('seven')\\n\"}],"
		"\"artifacts\":[\"result.txt\"]}}",
		"caf\xc3\xa9 42\n", "result.txt", "seven");
	/* execute_code(code, language="javascript", files={"helper.mjs": ...}):
	 * an ES module (its imports resolve from .plimsoll/, as under plimsoll)
	 * with a dynamic import of the caller's file and top-level await. */
	execute_code(
		"{\"protocol\":3,\"minimumIsolation\":\"container\",\"timeoutMs\":30000,"
		"\"project\":{\"steps\":[\"node .plimsoll/code.mjs\"],"
		"\"files\":[{\"path\":\"helper.mjs\",\"content\":\"export const N = 7;\\n\"},"
		"{\"path\":\".plimsoll/code.mjs\",\"content\":\"const {N} = await import('../helper.mjs');\\n"
		"await new Promise(r => setTimeout(r, 5));\\nconsole.log(N * 6);\\n\"}]}}",
		"42\n", NULL, NULL);
}

/* gVisor ends the whole sandbox when a cell runs it out of memory (under crun
 * only the interpreter dies, and the cell is answered 137). */
Test(python_client,
     a_cell_its_sandbox_does_not_survive_is_failed_precondition_with_its_end_and_record,
     .init = start_kernel, .fini = stop)
{
	struct daemon_session ds;
	daemon_open_session(&d, &ds);
	struct answer *a = daemon_cell(&d, d.run_token, ds.id, "python", "x = 1");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response first;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &first, &st), 0, "%s",
		     st.msg);
	answer_free(a);

	a = daemon_cell(&d, d.run_token, ds.id, "python", "b = bytearray(2000 * 1024 * 1024)");
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert_eq(e.code, WIRE_FAILED_PRECONDITION, "%ld %s", a->status, a->body);
	cr_assert_eq(a->status, 400, "not a shed refusal's 429: %s", a->body);
	cr_assert(!e.not_dispatched && !a->not_dispatched[0], "the code may have run: %s", a->body);
	cr_assert(e.session_ended && e.end == WIRE_END_MAIN_PROCESS_ENDED, "%s", a->body);
	cr_assert(e.unanswered, "no UnansweredCall: %s", a->body);
	/* plimsoll's record: its code is the error's, and it takes its place in
	 * the chain after the last answered call. */
	cr_assert_eq(e.record.version, 3);
	cr_assert_str_eq(e.record.unanswered, "failed_precondition");
	cr_assert_str_empty(e.record.result_sha256);
	cr_assert_eq(e.record.sequence, 2);
	cr_assert_str_eq(e.record.session, ds.fp);
	cr_assert_str_eq(e.record.previous_sha256, first.run.record.record_sha256);
	cr_assert(bh_record_verify(&e.record), "the record's own digest does not verify");
	wire_error_free(&e);
	wire_session_run_response_free(&first);
	answer_free(a);

	/* The next call is refused, nothing run, with the same end. */
	a = daemon_cell(&d, d.run_token, ds.id, "python", "x");
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert_eq(e.code, WIRE_FAILED_PRECONDITION, "%s", a->body);
	cr_assert(e.not_dispatched && e.reason == WIRE_REFUSAL_REQUEST, "%s", a->body);
	cr_assert(e.session_ended && e.end == WIRE_END_MAIN_PROCESS_ENDED, "%s", a->body);
	wire_error_free(&e);
	answer_free(a);
}
