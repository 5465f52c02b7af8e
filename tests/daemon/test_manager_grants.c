/* Naming a profile per conversation (issue 18), through the C client and the
 * manager over a real daemon with a profiles file: the client's open sends
 * OpenSession's grantProfile and Describe lists what this token may name;
 * the manager asks its resolver once per open, so each conversation's
 * sandbox holds its own profile (or none), and a refusal says nothing ran. */
#include "client.h"
#include "daemon_harness.h"
#include "egress.h"
#include "manager.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct daemon d;
static bh_client *cl;
static bh_manager *mgr;
static char profiles[4096];
static char asked[8][96]; /* "key/owner" the resolver was asked, in order */
static int n_asked;

static const char *profile_for(void *arg, const char *key, const char *owner)
{
	(void)arg;
	if (n_asked < 8)
		snprintf(asked[n_asked++], sizeof asked[0], "%s/%s", key, owner ? owner : "");
	if (!strcmp(key, "run-per-call"))
		return "per-call";
	if (!strcmp(key, "run-sessions"))
		return "sessions-ok";
	return NULL; /* this conversation reaches nothing */
}

static void start(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(profiles, sizeof profiles, "%s/mgr-profiles-%d", root && *root ? root : "/tmp",
		 getpid());
	FILE *f = fopen(profiles, "w");
	cr_assert_not_null(f);
	fputs("profile sessions-ok\n  principals console\n  allow-in-sessions yes\n"
	      "profile per-call\n  principals console\n"
	      "profile someone-elses\n  principals runner\n  allow-in-sessions yes\n",
	      f);
	fclose(f);
	chmod(profiles, 0600);
	char extra[8192];
	snprintf(extra, sizeof extra, "--tier container --profiles '%s'", profiles);
	daemon_start(&d, extra);
	struct bh_client_options co = {.target = d.sock, .token = d.both_token};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_new(&co, &cl, &err), 0, "%s", err ? err->message : "");
	struct bh_manager_options o;
	bh_manager_defaults(&o);
	o.client = cl;
	o.token = d.both_token;
	o.floor = BH_TIER_CONTAINER;
	o.languages = 1u << BH_LANG_PYTHON;
	o.grant_profile_for = profile_for;
	n_asked = 0;
	cr_assert_eq(bh_manager_new(&o, &mgr, &err), 0, "%s", err ? err->message : "");
}

static void stop(void)
{
	if (mgr) {
		bh_manager_dispose_all(mgr);
		bool never = false;
		bh_manager_wait(mgr, &never, 3000);
		bh_manager_free(mgr);
	}
	mgr = NULL;
	bh_client_free(cl);
	cl = NULL;
	daemon_stop(&d);
	unlink(profiles);
}

static bool broker_runs(void)
{
	struct wire_describe_response r;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_describe(cl, &r, &err), 0, "%s", err ? err->message : "");
	bool on = r.supports_javascript_grants;
	wire_describe_response_free(&r);
	return on;
}

Test(manager_grants, describe_through_the_client_lists_this_tokens_profiles, .init = start,
     .fini = stop)
{
	struct wire_describe_response r;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_describe(cl, &r, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(r.n_grant_profiles, 2, "someone-elses is not this token's");
	cr_assert_str_eq(r.grant_profiles[0].name, "sessions-ok");
	cr_assert(r.grant_profiles[0].allow_in_sessions);
	cr_assert_str_eq(r.grant_profiles[1].name, "per-call");
	cr_assert_not(r.grant_profiles[1].allow_in_sessions);
	wire_describe_response_free(&r);
}

Test(manager_grants, the_clients_open_sends_the_sessions_profile, .init = start, .fini = stop)
{
	struct bh_client_open_opts oo = {.floor = BH_TIER_CONTAINER, .grant_profile = "someone-elses"};
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_open(cl, &oo, &s, &err), -1);
	cr_assert_eq(err->code, WIRE_PERMISSION_DENIED);
	cr_assert(err->not_dispatched && err->reason == WIRE_REFUSAL_PERMISSION);
	char want[256];
	snprintf(want, sizeof want, BH_EGRESS_REFUSED_FMT, "someone-elses");
	cr_assert(strstr(err->message, want), "%s", err->message);
	cr_assert(!strncmp(err->message, "Nothing ran", 11), "%s", err->message);
	bh_client_error_free(err);
	err = NULL;
	/* Without one, the open is plimsoll's and works. */
	oo.grant_profile = NULL;
	cr_assert_eq(bh_client_open(cl, &oo, &s, &err), 0, "%s", err ? err->message : "");
	struct wire_close_session_response closed;
	cr_assert_eq(bh_client_session_close(s, &closed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(closed.ended, WIRE_END_CLOSED);
	wire_close_session_response_free(&closed);
	bh_client_session_free(s);
}

Test(manager_grants, the_clients_run_sends_its_grant_and_checks_the_record_over_it, .init = start,
     .fini = stop)
{
	bool broker = broker_runs();
	struct bh_client_run_opts ro = {.floor = BH_TIER_CONTAINER, .grant_profile = "per-call"};
	struct wire_run_response r;
	struct bh_client_error *err = NULL;
	int rc = bh_client_run(cl, "console.log(6*7)", &ro, &r, &err);
	if (broker) {
		/* The client recomputed the request digest with the grant in it. */
		cr_assert_eq(rc, 0, "%s", err ? err->message : "");
		cr_assert_eq(r.result.out_len, 3);
		wire_run_response_free(&r);
	} else {
		cr_assert_eq(rc, -1);
		cr_assert(err->not_dispatched && err->reason == WIRE_REFUSAL_PERMISSION, "%s",
			  err->message);
		cr_assert(strstr(err->message, "grant profile per-call cannot be held"), "%s",
			  err->message);
		bh_client_error_free(err);
		err = NULL;
	}
	ro.grant_profile = "someone-elses";
	cr_assert_eq(bh_client_run(cl, "console.log(1)", &ro, &r, &err), -1);
	char want[256];
	snprintf(want, sizeof want, BH_EGRESS_REFUSED_FMT, "someone-elses");
	cr_assert(strstr(err->message, want), "%s", err->message);
	bh_client_error_free(err);
}

Test(manager_grants, each_conversation_opens_with_the_profile_its_resolver_names, .init = start,
     .fini = stop)
{
	bool broker = broker_runs();
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = "print(6*7)"};
	struct bh_exec_output out = {0};
	struct bh_client_error *err = NULL;

	/* A profile that does not allow sessions: refused before anything opened. */
	cr_assert_eq(bh_manager_run(mgr, "run-per-call", "alice", &in, &out, &err), -1);
	cr_assert_eq(err->code, WIRE_PERMISSION_DENIED, "%s", err->message);
	cr_assert(err->not_dispatched);
	char want[256];
	snprintf(want, sizeof want, BH_EGRESS_NOT_FOR_SESSIONS_FMT, "per-call");
	cr_assert(strstr(err->message, want), "%s", err->message);
	bh_client_error_free(err);
	err = NULL;

	/* One that does: held where a broker runs, refused (nothing ran) where none does. */
	int rc = bh_manager_run(mgr, "run-sessions", "bob", &in, &out, &err);
	if (broker) {
		cr_assert_eq(rc, 0, "%s", err ? err->message : "");
		bh_exec_output_free(&out);
	} else {
		cr_assert_eq(rc, -1);
		cr_assert(err->not_dispatched && err->reason == WIRE_REFUSAL_PERMISSION, "%s",
			  err->message);
		cr_assert(strstr(err->message, "grant profile sessions-ok cannot be held: this daemon "
					       "runs no broker"),
			  "%s", err->message);
		bh_client_error_free(err);
		err = NULL;
	}

	/* A conversation whose resolver names none is plimsoll's session. */
	cr_assert_eq(bh_manager_run(mgr, "run-plain", "carol", &in, &out, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_str_eq(out.stdout_text, "42\n");
	bh_exec_output_free(&out);
	/* Asked once per open, with the conversation's key and owner. */
	cr_assert_eq(bh_manager_run(mgr, "run-plain", "carol", &in, &out, &err), 0);
	bh_exec_output_free(&out);
	cr_assert_str_eq(asked[0], "run-per-call/alice");
	cr_assert_str_eq(asked[1], "run-sessions/bob");
	cr_assert_str_eq(asked[2], "run-plain/carol");
	cr_assert_eq(n_asked, 3, "the second call reused the open sandbox");
}
