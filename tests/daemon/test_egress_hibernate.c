/* Issue 18: a hibernated session keeps its egress profile across a daemon
 * restart. `serve --shutdown hibernate` puts a session holding a profile
 * (OpenSession's grantProfile) to disk; a new daemon on the same state
 * directory re-adopts it from the store (migration 006 keeps the profile's
 * name) and its next call wakes it holding the profile again: the broker
 * serves it and the upstream sees the credential. After a profiles reload
 * that takes the profile from the caller, the next call is refused in plain
 * words before the session wakes; after one that removes the profile, an
 * operator's Resume of the hibernated session is refused as plainly and it
 * stays on disk, so nothing in it reaches the credential. Kernel tier (the
 * one that hibernates). */
#include "broker_harness.h"
#include "daemon_harness.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static struct fixture f;
static char profiles[400];
static char extra[2048];

/* The profiles file: e2e for `principals`, and a profile named `marker`
 * whose name tells a reload took (Describe lists it). */
static void write_profiles(bool with_e2e, const char *principals, const char *marker)
{
	FILE *p = fopen(profiles, "w");
	cr_assert_not_null(p);
	if (with_e2e)
		fprintf(p,
			"profile e2e\n"
			"  origin       https://127.0.0.2:%u\n"
			"  route        GET /v1/items\n"
			"  credential   env " TEST_CRED_ENV "\n"
			"  header       Authorization Bearer {credential}\n"
			"  principals   %s\n"
			"  allow-in-sessions yes\n\n",
			f.api.port, principals);
	fprintf(p,
		"profile %s\n"
		"  origin       https://127.0.0.3:%u\n"
		"  route        GET /\n"
		"  principals   *\n",
		marker, f.other.port);
	fclose(p);
	cr_assert_eq(chmod(profiles, 0600), 0);
}

static void start(void)
{
	fixture_init(&f);
	snprintf(profiles, sizeof profiles, "%s/profiles", f.dir);
	write_profiles(true, "*", "first");
	snprintf(extra, sizeof extra,
		 "--tier kernel --shutdown hibernate --profiles '%s' --upstream-ca '%s'", profiles,
		 f.ca_pem);
	daemon_start(&d, extra);
}

static void stop(void)
{
	daemon_stop(&d);
	fixture_fini(&f);
}

/* SIGTERM and wait: --shutdown hibernate puts the session to disk; the
 * state directory stays for the next daemon. */
static void daemon_shutdown(void)
{
	kill(d.pid, SIGTERM);
	int st = 0;
	cr_assert_eq(waitpid(d.pid, &st, 0), d.pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the daemon's exit: %#x", st);
	d.pid = 0;
}

/* After a SIGHUP, until Describe lists the marker profile (the reload took). */
static void reload_until(const char *marker)
{
	kill(d.pid, SIGHUP);
	char want[80];
	snprintf(want, sizeof want, "\"name\":\"%s\"", marker);
	for (int i = 0; i < 200; i++) {
		struct answer *a = daemon_call(&d, d.run_token, SVC "Describe", "{\"protocol\":3}");
		bool took = a->status == 200 && strstr(a->body, want);
		answer_free(a);
		if (took)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("the profiles reload to %s never took", marker);
}

static const char fetch_code[] =
	"import urllib.request, urllib.error\n"
	"try: r = urllib.request.urlopen('https://127.0.0.2:%u/v1/items', timeout=20)\n"
	"except urllib.error.HTTPError as e: r = e\n"
	"print(r.status, r.read().decode())\n";

static struct answer *fetch(const char *sid)
{
	char code[1024];
	snprintf(code, sizeof code, fetch_code, f.api.port);
	return daemon_cell(&d, d.run_token, sid, "python", code);
}

/* The cell's stdout (the caller frees it); a is freed. */
static char *stdout_of(struct answer *a)
{
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.has_run, "%s", a->body);
	char *out = strndup((const char *)r.run.result.out, r.run.result.out_len);
	wire_session_run_response_free(&r);
	answer_free(a);
	return out;
}

static char *session_state(const char *fp)
{
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "GetSession", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *j = cJSON_ParseWithLength(a->body, a->len);
	char *state = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(j, "state")) ?: "");
	cJSON_Delete(j);
	answer_free(a);
	return state;
}

Test(egress_hibernate,
     a_session_readopted_by_a_new_daemon_holds_its_profile_again_and_a_reload_that_takes_it_refuses_plainly,
     .init = start, .fini = stop, .timeout = 300)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession",
				       "{\"protocol\":3,\"grantProfile\":\"e2e\"}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_ParseWithLength(a->body, a->len);
	char sid[128], fp[65];
	snprintf(sid, sizeof sid, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "sessionId")));
	snprintf(fp, sizeof fp, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "session")));
	cJSON_Delete(o);
	answer_free(a);
	char *out = stdout_of(fetch(sid));
	cr_assert_str_eq(out, "200 hello from upstream\n");
	free(out);
	int hits = upstream_hits(&f.api);

	/* To disk with the daemon, and a new daemon on the same directory. */
	daemon_shutdown();
	daemon_restart(&d, extra);
	char *state = session_state(fp);
	cr_assert_str_eq(state, "hibernated", "the new daemon re-adopted it hibernated: %s", state);
	free(state);
	out = stdout_of(fetch(sid));
	cr_assert_str_eq(out, "200 hello from upstream\n", "the woken session's broker: %s", out);
	free(out);
	cr_assert_eq(upstream_hits(&f.api), hits + 1);
	char line[1024], headers[16384], want[256];
	upstream_last(&f.api, line, sizeof line, headers, sizeof headers);
	snprintf(want, sizeof want, "Authorization: Bearer %s", TEST_CREDENTIAL);
	cr_assert(strcasestr(headers, want), "the upstream saw no credential:\n%s", headers);

	/* A reload that gives the profile to someone else: the session's next
	 * call is refused, in words, and nothing ran. */
	write_profiles(true, "stranger", "second");
	reload_until("second");
	a = fetch(sid);
	cr_assert_eq(a->status, 403, "%s", a->body);
	cr_assert(strstr(a->body, "this session holds egress profile e2e, which is no longer yours "
				  "to hold in a session"),
		  "%s", a->body);
	answer_free(a);
	cr_assert_eq(upstream_hits(&f.api), hits + 1);

	/* Hibernated again, and a reload that removes the profile: an
	 * operator's Resume cannot hold it, says so, and the session stays on
	 * disk. */
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	a = daemon_call(&d, d.op_token, OPS "Hibernate", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	write_profiles(false, "*", "third");
	reload_until("third");
	a = daemon_call(&d, d.op_token, OPS "Resume", body);
	cr_assert_neq(a->status, 200, "%s", a->body);
	cr_assert(strstr(a->body,
			 "this hibernated session holds egress profile e2e, which cannot be "
			 "held again"),
		  "%s", a->body);
	cr_assert(strstr(a->body, "it stays hibernated"), "%s", a->body);
	answer_free(a);
	state = session_state(fp);
	cr_assert_str_eq(state, "hibernated");
	free(state);
	cr_assert_eq(upstream_hits(&f.api), hits + 1);
}
