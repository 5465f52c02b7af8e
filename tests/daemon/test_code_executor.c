/* ---- plimsoll: the two calls plimsoll's Python CodeExecutor makes (its
 * execution.py, the base of its agno and crewai tools), byte for byte as its
 * client 0.21.0 sends them: over TCP, its headers, a Describe of "{}", then a
 * Run whose compact UTF-8 JSON (json.dumps, ensure_ascii=False) carries the
 * caller's files plus the script under the reserved `.plimsoll/` directory
 * and one fixed step — runpy for Python, an ES module for JavaScript. The
 * bytes are that client's own serialization, captured while it drove
 * `bulkhead serve` (issue 18's manual check); no plimsoll code is here.
 * What the client then checks is checked: Describe's project support, tier and languages
 * (else it refuses before Run), the request id answered, the step's output,
 * the artifact, and the record (bulkhead's digests and the independent
 * tests/support/plimsoll_digest.py). ---- */
#include "daemon_harness.h"
#include "project.h"
#include "project_record.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <string.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static void start(void)
{
	daemon_start(&d, "--tier container --listen 127.0.0.1:0");
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

Test(code_executor,
     python_and_javascript_calls_as_plimsolls_python_client_sends_them_run_and_verify,
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
