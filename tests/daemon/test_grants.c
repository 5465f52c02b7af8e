/* Grants over a real daemon (issue 18): `serve --profiles`, what Describe
 * tells each caller, every refusal before dispatch (one text for a profile
 * that does not exist and one the caller may not use, as plimsoll answers;
 * not for sessions; a cell's grant), SIGHUP swapping the set or keeping it
 * when the new file is bad, and a daemon with no profiles answering
 * plimsoll's refusal. */
#include "daemon_harness.h"
#include "egress.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static char profiles[4096]; /* the file serve reads, beside the daemon's directory */

static const char first_set[] =
	"# the test's profiles\n"
	"profile shared\n"
	"  description  Reaches nothing, for everyone\n"
	"  principals   *\n"
	"  allow-in-sessions yes\n"
	"profile runner-only\n"
	"  origin       https://127.0.0.1:9\n"
	"  route        GET /v1/*\n"
	"  principals   runner\n"
	"  allow-in-sessions yes\n"
	"profile per-call\n"
	"  principals   runner stranger\n";

static void write_profiles(const char *text, mode_t mode)
{
	FILE *f = fopen(profiles, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(profiles, mode), 0);
}

static void start_with(const char *extra_fmt)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(profiles, sizeof profiles, "%s/profiles-%d", root && *root ? root : "/tmp", getpid());
	write_profiles(first_set, 0600);
	char extra[8192];
	snprintf(extra, sizeof extra, extra_fmt, profiles);
	daemon_start(&d, extra);
}

static void start(void) { start_with("--tier container --profiles '%s'"); }
static void start_open(void) { start_with("--tier container --open --profiles '%s'"); }
static void start_plain(void) { daemon_start(&d, "--tier container"); }
static void stop(void)
{
	daemon_stop(&d);
	if (profiles[0])
		unlink(profiles);
}

static char *reload(int n);

static struct wire_describe_response describe(const char *token)
{
	struct answer *a = daemon_call(&d, token, SVC "Describe", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_describe_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_describe_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	answer_free(a);
	return r;
}

/* The names Describe lists, "a,b,c". */
static const char *names(const struct wire_describe_response *r)
{
	static char out[512];
	out[0] = '\0';
	for (size_t i = 0; i < r->n_grant_profiles; i++)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "",
			 r->grant_profiles[i].name);
	return out;
}

/* A refusal's message, its code and mark asserted: PermissionDenied, nothing ran. */
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

static struct answer *run_with_grant(const char *token, const char *grant)
{
	char body[512];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"javascript\":{\"code\":\"console.log(1)\",\"grantProfile\":\"%s\"}}",
		 grant);
	return daemon_call(&d, token, SVC "Run", body);
}

static char *refused_text(const char *fmt, const char *name)
{
	char *s = NULL;
	cr_assert(asprintf(&s, fmt, name) > 0);
	return s;
}

Test(grants, describe_lists_only_the_profiles_the_caller_may_use, .init = start, .fini = stop)
{
	struct wire_describe_response r = describe(d.run_token);
	cr_assert_str_eq(names(&r), "shared,runner-only,per-call");
	cr_assert_str_eq(r.grant_profiles[0].description, "Reaches nothing, for everyone");
	cr_assert(r.grant_profiles[0].allow_in_sessions);
	cr_assert_not(r.grant_profiles[2].allow_in_sessions);
	cr_assert_eq(r.grant_profiles[1].n_origins, 1);
	cr_assert_str_eq(r.grant_profiles[1].origins[0], "https://127.0.0.1:9");
	wire_describe_response_free(&r);
	r = describe(d.other_token);
	cr_assert_str_eq(names(&r), "shared,per-call", "another principal's profile is not shown");
	wire_describe_response_free(&r);
}

Test(grants, an_unknown_profile_and_another_callers_get_the_same_refusal, .init = start,
     .fini = stop)
{
	/* "runner-only" exists, but not for the stranger. */
	char *not_theirs = permission_denied(run_with_grant(d.other_token, "runner-only"));
	char *want = refused_text(BH_EGRESS_REFUSED_FMT, "runner-only");
	cr_assert_str_eq(not_theirs, want);
	/* Gone from the file, it is unknown to everyone: the words do not change. */
	write_profiles("profile shared\n  principals *\n", 0600);
	free(reload(1));
	char *unknown = permission_denied(run_with_grant(d.run_token, "runner-only"));
	cr_assert_str_eq(unknown, not_theirs, "unknown and not-yours must read the same");
	char *never = permission_denied(run_with_grant(d.run_token, "never-defined"));
	/* The audit line names the profile a call asked for, refused or not. */
	char path[4200], line[4096];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	bool seen = false;
	for (int i = 0; i < 100 && !seen; i++) { /* written as the exchange completes */
		FILE *f = fopen(path, "r");
		cr_assert_not_null(f);
		while (fgets(line, sizeof line, f))
			seen |= strstr(line, "\"procedure\":\"plimsoll.v1.SandboxService/Run\"") &&
				strstr(line, "\"code\":\"permission_denied\"") &&
				strstr(line, "\"grantProfile\":\"never-defined\"");
		fclose(f);
		if (!seen)
			usleep(50 * 1000);
	}
	cr_assert(seen, "no audit line names the refused grant");
	free(want);
	want = refused_text(BH_EGRESS_REFUSED_FMT, "never-defined");
	cr_assert_str_eq(never, want);
	free(never);
	free(unknown);
	free(not_theirs);
	free(want);
}

Test(grants, a_session_may_use_only_a_profile_that_allows_sessions, .init = start, .fini = stop)
{
	/* OpenSession naming a per-call profile, an unknown one, another's. */
	char *msg = permission_denied(daemon_call(&d, d.run_token, SVC "OpenSession",
						  "{\"protocol\":3,\"grantProfile\":\"per-call\"}"));
	char *want = refused_text(BH_EGRESS_NOT_FOR_SESSIONS_FMT, "per-call");
	cr_assert_str_eq(msg, want);
	free(msg);
	free(want);
	msg = permission_denied(daemon_call(&d, d.other_token, SVC "OpenSession",
					    "{\"protocol\":3,\"grantProfile\":\"runner-only\"}"));
	want = refused_text(BH_EGRESS_REFUSED_FMT, "runner-only");
	cr_assert_str_eq(msg, want);
	free(msg);
	free(want);

	/* A session's javascript call with a per-call grant. */
	struct daemon_session s;
	daemon_open_session(&d, &s);
	char body[512];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"javascript\":{\"code\":\"1\","
		 "\"grantProfile\":\"per-call\"}}",
		 s.id);
	msg = permission_denied(daemon_call(&d, d.run_token, SVC "SessionRun", body));
	want = refused_text(BH_EGRESS_NOT_FOR_SESSIONS_FMT, "per-call");
	cr_assert_str_eq(msg, want);
	free(msg);
	free(want);

	/* A cell carries no grant at all. */
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"cell\":{\"language\":\"python\","
		 "\"code\":\"1\",\"grantProfile\":\"shared\"}}",
		 s.id);
	struct answer *a = daemon_call(&d, d.run_token, SVC "SessionRun", body);
	cr_assert_eq(a->status, 400, "%s", a->body);
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert_eq(e.code, WIRE_INVALID_ARGUMENT);
	cr_assert(e.not_dispatched && e.reason == WIRE_REFUSAL_REQUEST);
	cr_assert(strstr(e.message, "a cell carries no grant"), "%s", e.message);
	wire_error_free(&e);
	answer_free(a);

	/* The session still works: nothing above reached it. */
	a = daemon_cell(&d, d.run_token, s.id, "python", "print(6*7)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert(strstr(a->body, "\"stdout\":\"NDIK\""), "%s", a->body);
	answer_free(a);
}

Test(grants, an_allowed_grant_is_held_only_where_a_broker_runs, .init = start, .fini = stop)
{
	struct wire_describe_response r = describe(d.run_token);
	bool broker = r.supports_javascript_grants;
	wire_describe_response_free(&r);
	struct answer *a = run_with_grant(d.run_token, "shared");
	if (broker) {
		cr_assert_eq(a->status, 200, "%s", a->body);
		answer_free(a);
		return;
	}
	char *msg = permission_denied(a);
	cr_assert_str_eq(msg, "grant profile shared cannot be held: this daemon runs no broker "
			      "(Describe says supportsJavascriptGrants false)");
	free(msg);
}

/* Sends SIGHUP and waits for the audit line saying what the daemon did
 * with the file (the n-th such line since it started). */
static char *reload(int n)
{
	cr_assert_eq(kill(d.pid, SIGHUP), 0);
	char path[4200];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(path, "r");
		char line[4096];
		int seen = 0;
		while (f && fgets(line, sizeof line, f))
			if (strstr(line, "\"kind\":\"profiles_") && ++seen == n) {
				fclose(f);
				return strdup(line);
			}
		if (f)
			fclose(f);
		usleep(50 * 1000);
	}
	cr_assert_fail("no audit line for reload %d", n);
	return NULL;
}

Test(grants, a_bad_file_on_sighup_keeps_the_profiles_loaded_before, .init = start, .fini = stop)
{
	write_profiles("profile shared\n  principals *\n  colour blue\n", 0600);
	char *line = reload(1);
	cr_assert(strstr(line, "\"kind\":\"profiles_kept\"") &&
		  strstr(line, "line 3: unknown key \\\"colour\\\""), "%s", line);
	free(line);
	/* One that others could write is refused as well. */
	write_profiles("profile only\n  principals *\n", 0666);
	line = reload(2);
	cr_assert(strstr(line, "\"kind\":\"profiles_kept\"") && strstr(line, "world-writable"), "%s",
		  line);
	free(line);
	struct wire_describe_response r = describe(d.run_token);
	cr_assert_str_eq(names(&r), "shared,runner-only,per-call");
	wire_describe_response_free(&r);
	/* A good one is taken. */
	write_profiles("profile only\n  principals runner\n", 0600);
	line = reload(3);
	cr_assert(strstr(line, "\"kind\":\"profiles_loaded\",\"detail\":\"1 profiles\""), "%s",
		  line);
	free(line);
	r = describe(d.run_token);
	cr_assert_str_eq(names(&r), "only");
	wire_describe_response_free(&r);
}

Test(grants, without_a_profiles_file_a_grant_is_refused_as_plimsoll_refuses_it,
     .init = start_plain, .fini = stop)
{
	struct wire_describe_response r = describe(d.run_token);
	cr_assert_eq(r.n_grant_profiles, 0);
	cr_assert_not(r.supports_javascript_grants);
	wire_describe_response_free(&r);
	char *msg = permission_denied(run_with_grant(d.run_token, "github"));
	char *want = refused_text(BH_EGRESS_REFUSED_FMT, "github");
	cr_assert_str_eq(msg, want);
	free(msg);
	free(want);
	msg = permission_denied(daemon_call(&d, d.run_token, SVC "OpenSession",
					    "{\"protocol\":3,\"grantProfile\":\"github\"}"));
	cr_assert(strstr(msg, "unknown or not available"), "%s", msg);
	free(msg);
}

Test(grants, an_unauthenticated_caller_holds_no_profile_even_one_for_everyone,
     .init = start_open, .fini = stop)
{
	struct wire_describe_response r = describe(NULL);
	cr_assert_eq(r.n_grant_profiles, 0, "--open: nobody is a principal");
	wire_describe_response_free(&r);
	char *msg = permission_denied(run_with_grant(NULL, "shared"));
	char *want = refused_text(BH_EGRESS_REFUSED_FMT, "shared");
	cr_assert_str_eq(msg, want);
	free(msg);
	free(want);
}

Test(grants, serve_refuses_to_start_on_a_bad_profiles_file, .fini = stop)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(profiles, sizeof profiles, "%s/profiles-bad-%d", root && *root ? root : "/tmp",
		 getpid());
	write_profiles("profile p\n  principals *\n  route GET /v1/../admin\n", 0600);
	char cmd[16384];
	snprintf(cmd, sizeof cmd,
		 "%s serve --open --state '%s.state' --socket '%s.sock' --profiles '%s' 2>&1 "
		 "</dev/null; echo \"exit $?\"",
		 BH_TEST_CLI, profiles, profiles, profiles);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char out[4096];
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	pclose(f);
	char want[8192];
	snprintf(want, sizeof want,
		 "bulkhead: serve: profiles file: %s: line 3: a route's pattern has no \".\" or \"..\" "
		 "segment\n",
		 profiles);
	cr_assert(strstr(out, want), "got:\n%s\nwanted:\n%s", out, want);
	cr_assert(strstr(out, "exit 0") == NULL, "%s", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s.state' '%s.sock'", profiles, profiles);
	cr_assert_eq(system(cmd), 0);
}
