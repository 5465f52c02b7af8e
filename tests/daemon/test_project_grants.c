/* ---- pgrant: project runs with a grant (plimsoll's ProjectRun.grant_profile)
 * over a real `bulkhead serve --profiles FILE --upstream-ca PEM` (the daemon
 * starts the real broker), a TLS upstream of the test's on 127.0.0.2 whose
 * certificate chains to a CA the test made (tests/broker/broker_harness.c,
 * the same shape as tests/daemon/test_egress_e2e.c), on both tiers:
 *  - a fresh Run's project reaches an allowed route from its steps (Python's
 *    urllib and curl through the proxy variables), the upstream saw the
 *    credential the broker added, the answer holds none of it, and the
 *    record's request digest carries the grant and verifies;
 *  - in a session, the grant is held for the project's run only: a step's
 *    background process, the session's interpreter and its relay find the
 *    broker serving nothing once the project answered;
 *  - a session project naming a profile that does not allow sessions, or an
 *    unknown one, is refused permission before dispatch (plimsoll §4.7).
 * ---- */
#include "grant_daemon.h"
#include "egress.h"
#include "project.h"
#include "project_record.h"
#include "record.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static struct fixture f;

static void start(const char *tier) { grant_daemon_start(&d, &f, tier); }
static void start_container(void) { start("container"); }
static void start_kernel(void) { start("kernel"); }

static void stop(void) { grant_daemon_stop(&d, &f); }

/* A project request: files {name, content}..., then the steps; NULL ends
 * each list. session_id NULL: a fresh Run. The caller frees. */
static char *project_body(const char *session_id, const char *grant, const char *const *files,
			  const char *const *steps)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "protocol", 3);
	if (session_id)
		cJSON_AddStringToObject(o, "sessionId", session_id);
	cJSON_AddNumberToObject(o, "timeoutMs", 60000);
	cJSON *pr = cJSON_AddObjectToObject(o, "project");
	cJSON *fl = cJSON_AddArrayToObject(pr, "files");
	for (size_t i = 0; files && files[i]; i += 2) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", files[i]);
		cJSON_AddStringToObject(x, "content", files[i + 1]);
		cJSON_AddItemToArray(fl, x);
	}
	cJSON *st = cJSON_AddArrayToObject(pr, "steps");
	for (size_t i = 0; steps[i]; i++)
		cJSON_AddItemToArray(st, cJSON_CreateString(steps[i]));
	if (grant)
		cJSON_AddStringToObject(pr, "grantProfile", grant);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static bool bytes_are(const uint8_t *p, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(p, s, n) == 0;
}

static void assert_step_out(const struct bh_project_step *st, const char *want)
{
	cr_assert(bytes_are(st->out, st->out_len, want), "step `%s` printed \"%.*s\" (stderr \"%.*s\")",
		  st->command, (int)st->out_len, (const char *)st->out, (int)st->errout_len,
		  (const char *)st->errout);
}

static void assert_upstream_saw_the_credential(const char *want_line)
{
	char line[1024], headers[16384], want[256];
	upstream_last(&f.api, line, sizeof line, headers, sizeof headers);
	cr_assert_str_eq(line, want_line);
	snprintf(want, sizeof want, "Authorization: Bearer %s", TEST_CREDENTIAL);
	cr_assert(strcasestr(headers, want), "the upstream saw no credential:\n%s", headers);
}

/* The request digest over what was sent, with the grant as sent and with
 * none: the record's is the first, and the grant changes it. */
static void assert_digest_carries_the_grant(const char *body, const struct bh_record *rec)
{
	struct wire_run_request req;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_request(body, strlen(body), &req, &st), 0, "%s", st.msg);
	struct bh_request_fields rf;
	wire_request_fields(&req, &rf);
	cr_assert_str_eq(rf.grant_profile, "proj");
	char with[65], without[65];
	bh_request_digest(&rf, with);
	rf.grant_profile = "";
	bh_request_digest(&rf, without);
	cr_assert_str_eq(rec->request_sha256, with, "the record's request is not what was sent");
	cr_assert_str_neq(with, without, "the grant takes no part in the request digest");
	wire_run_request_free(&req);
}

static void describe_says_project_grants_are_supported(void)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "Describe", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_describe_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.supports_project_grants, "a broker runs: %s", a->body);
	cr_assert(r.supports_javascript_grants);
	wire_describe_response_free(&r);
	answer_free(a);
}

static void granted_fresh_project(void)
{
	describe_says_project_grants_are_supported();
	char *py = grant_fetch_py(&f);
	char curl[256];
	snprintf(curl, sizeof curl,
		 "curl -sS --max-time 20 --cacert \"$SSL_CERT_FILE\" https://127.0.0.2:%u/v1/items/7",
		 f.api.port);
	const char *files[] = {"fetch.py", py, NULL};
	char refused[256];
	snprintf(refused, sizeof refused,
		 "curl -s -o /dev/null -w '%%{http_code}\\n' --max-time 20 --cacert \"$SSL_CERT_FILE\" "
		 "https://127.0.0.2:%u/admin",
		 f.api.port);
	const char *steps[] = {"python3 fetch.py", curl, refused,
			       "env | grep -c " TEST_CRED_ENV "; echo \"$HTTPS_PROXY\"", NULL};
	char *body = project_body(NULL, "proj", files, steps);
	struct answer *a = daemon_call(&d, d.run_token, SVC "Run", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_eq(r.result.n_steps, 4, "%s", a->body);
	assert_step_out(&r.result.steps[0], "200 hello from upstream\n");
	assert_step_out(&r.result.steps[1], "hello from upstream");
	/* A route the profile does not name: the broker's refusal, never the upstream. */
	assert_step_out(&r.result.steps[2], "403\n");
	/* grep -c found nothing (exit 1 stops the run only at the last step). */
	assert_step_out(&r.result.steps[3], "0\nhttp://127.0.0.1:3128\n");
	cr_assert_eq(upstream_hits(&f.api), 2);
	assert_upstream_saw_the_credential("GET /v1/items/7 HTTP/1.1");
	cr_assert_null(memmem(a->body, a->len, TEST_CREDENTIAL, strlen(TEST_CREDENTIAL)),
		       "the credential is in the answer");
	check_record(body, a->body, &r);
	assert_digest_carries_the_grant(body, &r.record);
	wire_run_response_free(&r);
	answer_free(a);
	free(body);
	free(py);
}

Test(project_grants, a_granted_project_reaches_the_allowed_route_with_the_credential_added_upstream_container,
     .init = start_container, .fini = stop, .timeout = 300)
{
	granted_fresh_project();
}

Test(project_grants, a_granted_project_reaches_the_allowed_route_with_the_credential_added_upstream_kernel,
     .init = start_kernel, .fini = stop, .timeout = 300)
{
	granted_fresh_project();
}

/* The session's answer decoded, its record checked. */
static void session_project(const char *body, struct answer **out, struct wire_session_run_response *r)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "SessionRun", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, r, &st), 0, "%s", st.msg);
	cJSON *root = cJSON_Parse(a->body);
	char *run_json = cJSON_PrintUnformatted(cJSON_GetObjectItem(root, "run"));
	check_record(body, run_json, &r->run);
	free(run_json);
	cJSON_Delete(root);
	*out = a;
}

static void granted_session_project(void)
{
	struct daemon_session ds;
	daemon_open_session(&d, &ds); /* no profile of its own */
	char *py = grant_fetch_py(&f);
	char poller[1024];
	/* Left running by the second step: once the project has answered, it
	 * tries the allowed route through the proxy it inherited. */
	snprintf(poller, sizeof poller,
		 "import time, urllib.request\n"
		 "time.sleep(1.5)\n"
		 "for i in range(6):\n"
		 "    try: s = str(urllib.request.urlopen('https://127.0.0.2:%u/v1/items', timeout=5).status)\n"
		 "    except Exception as e: s = type(e).__name__\n"
		 "    open('/work/poller.log', 'a').write(s + '\\n')\n"
		 "    time.sleep(0.3)\n",
		 f.api.port);
	const char *files[] = {"fetch.py", py, "poller.py", poller, NULL};
	const char *steps[] = {"python3 fetch.py",
			       "setsid python3 poller.py < /dev/null > /dev/null 2>&1 & echo started",
			       NULL};
	char *body = project_body(ds.id, "proj", files, steps);
	struct answer *a;
	struct wire_session_run_response r;
	session_project(body, &a, &r);
	cr_assert_eq(r.run.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_assert_eq(r.run.result.n_steps, 2, "%s", a->body);
	assert_step_out(&r.run.result.steps[0], "200 hello from upstream\n");
	assert_step_out(&r.run.result.steps[1], "started\n");
	cr_assert_str_eq(r.run.record.session, ds.fp);
	cr_assert_null(memmem(a->body, a->len, TEST_CREDENTIAL, strlen(TEST_CREDENTIAL)));
	assert_digest_carries_the_grant(body, &r.run.record);
	assert_upstream_saw_the_credential("GET /v1/items HTTP/1.1");
	int hits = upstream_hits(&f.api);
	cr_assert_eq(hits, 1);
	wire_session_run_response_free(&r);
	answer_free(a);

	/* After the answer: what the poller got (if its call's sweep left
	 * it), and the session's interpreter, which outlived the call too,
	 * through the socket and the relay. */
	char code[4096];
	snprintf(code, sizeof code,
		 "import os, socket, time\n"
		 "time.sleep(4)\n"
		 "log = open('/work/poller.log').read().split() if os.path.exists('/work/poller.log') else []\n"
		 "print('poller passed', sum(x == '200' for x in log))\n"
		 "def raw(c):\n"
		 "    c.settimeout(10)\n"
		 "    c.sendall(b'GET https://127.0.0.2:%u/v1/items HTTP/1.1\\r\\nHost: 127.0.0.2:%u\\r\\n\\r\\n')\n"
		 "    got = b''\n"
		 "    while b'\\r\\n\\r\\n' not in got:\n"
		 "        b = c.recv(4096)\n"
		 "        if not b: break\n"
		 "        got += b\n"
		 "    return got.split(b'\\r\\n')[0].decode()\n"
		 "u = socket.socket(socket.AF_UNIX); u.connect('/run/host-api.sock')\n"
		 "print('socket', raw(u))\n"
		 "print('relay', raw(socket.create_connection(('127.0.0.1', 3128), timeout=5)))\n"
		 "print('proxy', os.environ.get('HTTPS_PROXY', 'none'))\n",
		 f.api.port, f.api.port);
	a = daemon_cell(&d, d.run_token, ds.id, "python", code);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	const char *want = "poller passed 0\n"
			   "socket HTTP/1.1 503 Service Unavailable\n"
			   "relay HTTP/1.1 503 Service Unavailable\n"
			   "proxy none\n";
	cr_assert(bytes_are(r.run.result.out, r.run.result.out_len, want), "%.*s|%.*s",
		  (int)r.run.result.out_len, (const char *)r.run.result.out,
		  (int)r.run.result.err_len, (const char *)r.run.result.err);
	cr_assert_eq(upstream_hits(&f.api), hits, "the upstream saw a request after the project");
	wire_session_run_response_free(&r);
	answer_free(a);
	free(body);
	free(py);
}

Test(project_grants, a_session_project_holds_its_grant_for_its_run_only_container,
     .init = start_container, .fini = stop, .timeout = 300)
{
	granted_session_project();
}

Test(project_grants, a_session_project_holds_its_grant_for_its_run_only_kernel,
     .init = start_kernel, .fini = stop, .timeout = 300)
{
	granted_session_project();
}

/* A refusal's message, PermissionDenied marked permission asserted. */
static char *permission_denied(struct answer *a)
{
	cr_assert_eq(a->status, 403, "%s", a->body);
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert_eq(e.code, WIRE_PERMISSION_DENIED, "%s", a->body);
	cr_assert(e.not_dispatched && e.reason == WIRE_REFUSAL_PERMISSION, "%s", a->body);
	char *msg = strdup(e.message);
	wire_error_free(&e);
	answer_free(a);
	return msg;
}

static void assert_refused(const char *procedure, const char *body, const char *fmt,
			   const char *name)
{
	char *msg = permission_denied(daemon_call(&d, d.run_token, procedure, body));
	char want[256];
	snprintf(want, sizeof want, fmt, name);
	cr_assert_str_eq(msg, want);
	free(msg);
}

/* The daemon's check is the same on both tiers: it answers before anything
 * reaches the engine. */
Test(project_grants, a_session_project_with_a_profile_not_for_sessions_is_refused_permission,
     .init = start_container, .fini = stop, .timeout = 300)
{
	struct daemon_session ds;
	daemon_open_session(&d, &ds);
	const char *steps[] = {"echo ran > /work/ran.txt", NULL};
	char *body = project_body(ds.id, "per-call", NULL, steps);
	assert_refused(SVC "SessionRun", body, BH_EGRESS_NOT_FOR_SESSIONS_FMT, "per-call");
	free(body);
	/* An unknown profile reads as one the caller may not use, in a session
	 * and in a fresh Run. */
	body = project_body(ds.id, "never-defined", NULL, steps);
	assert_refused(SVC "SessionRun", body, BH_EGRESS_REFUSED_FMT, "never-defined");
	free(body);
	body = project_body(NULL, "never-defined", NULL, steps);
	assert_refused(SVC "Run", body, BH_EGRESS_REFUSED_FMT, "never-defined");
	free(body);
	/* The audit line names the profile the refused project asked for. */
	char path[4200], line[4096];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	bool seen = false;
	for (int i = 0; i < 100 && !seen; i++) { /* written as the exchange completes */
		FILE *fa = fopen(path, "r");
		cr_assert_not_null(fa);
		while (fgets(line, sizeof line, fa))
			seen |= strstr(line, "\"procedure\":\"plimsoll.v1.SandboxService/SessionRun\"") &&
				strstr(line, "\"code\":\"permission_denied\"") &&
				strstr(line, "\"grantProfile\":\"per-call\"");
		fclose(fa);
		if (!seen)
			usleep(50 * 1000);
	}
	cr_assert(seen, "no audit line names the refused project's grant");
	/* Nothing ran: the session's /work has no trace of the step. */
	struct answer *a = daemon_cell(&d, d.run_token, ds.id, "python",
				       "import os; print(os.path.exists('/work/ran.txt'))");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(bytes_are(r.run.result.out, r.run.result.out_len, "False\n"));
	cr_assert_eq(r.run.record.sequence, 1, "a refused project took a place in the chain");
	wire_session_run_response_free(&r);
	answer_free(a);
	/* The per-call profile serves a fresh Run's project. */
	char *py = grant_fetch_py(&f);
	const char *files[] = {"fetch.py", py, NULL};
	const char *fetch[] = {"python3 fetch.py", NULL};
	body = project_body(NULL, "per-call", files, fetch);
	a = daemon_call(&d, d.run_token, SVC "Run", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_run_response rr;
	cr_assert_eq(wire_decode_run_response(a->body, a->len, &rr, &st), 0, "%s", st.msg);
	cr_assert_eq(rr.result.n_steps, 1, "%s", a->body);
	assert_step_out(&rr.result.steps[0], "200 hello from upstream\n");
	cr_assert_eq(upstream_hits(&f.api), 1, "only the fresh run reached the upstream");
	wire_run_response_free(&rr);
	answer_free(a);
	free(body);
	free(py);
}
