/* One tenant cannot starve the others, through a real daemon: a token that
 * opens sessions and fires Run calls until it is refused leaves another
 * token room for a session and a cell. */
#include "daemon_harness.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static void stop(void) { daemon_stop(&d); }

/* How a call ended, as a child's exit status. */
enum { ANSWERED = 0, REFUSED_CAPACITY = 10, OTHER = 20 };

static int outcome(const struct answer *a)
{
	if (a->status == 200)
		return ANSWERED;
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	int r = e.code == WIRE_RESOURCE_EXHAUSTED && e.not_dispatched &&
				e.reason == WIRE_REFUSAL_CAPACITY
			? REFUSED_CAPACITY
			: OTHER;
	wire_error_free(&e);
	return r;
}

/* A Run that holds its sandbox for a while, from a child process (the
 * harness's calls block). */
static pid_t run_in_child(const char *token, int hold_ms)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		char body[256];
		snprintf(body, sizeof body,
			 "{\"protocol\":3,\"javascript\":{\"code\":\"setTimeout(() => console.log('held'), "
			 "%d)\"}}",
			 hold_ms);
		struct answer *a = daemon_call(&d, token, SVC "Run", body);
		_exit(outcome(a));
	}
	return pid;
}

/* The child's outcome if it ended within ms, else -1 (still in flight). */
static int ended_within(pid_t pid, int ms)
{
	int st = 0;
	for (int i = 0; i < ms / 20; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : OTHER;
		usleep(20 * 1000);
	}
	return -1;
}

static int open_session(const char *token, char id[64])
{
	struct answer *a = daemon_call(&d, token, SVC "OpenSession", "{\"protocol\":3}");
	int r = outcome(a);
	if (r == ANSWERED) {
		struct wire_open_session_response resp;
		struct wire_status st;
		cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &resp, &st), 0, "%s",
			     st.msg);
		snprintf(id, 64, "%s", resp.session_id);
		wire_open_session_response_free(&resp);
	}
	answer_free(a);
	return r;
}

/* Acceptance 4 of issue 14. 4096 MiB of budget holds 8 sandboxes of the
 * default 512 MiB; the default per-principal cap is a quarter of that. */
Test(fairness, a_tenant_filling_its_places_cannot_stop_another_from_opening_one, .fini = stop,
     .timeout = 240)
{
	daemon_start(&d, "--tier container --memory-budget 4096");
	/* Tenant A: Run calls that hold their sandbox, until one is refused
	 * (an admitted one is still in flight after a second and a half;
	 * a refusal comes at once). At most 12, whatever happens. */
	pid_t held[12];
	int n_held = 0, refused_run = -1;
	for (int i = 0; i < 12 && refused_run < 0; i++) {
		pid_t pid = run_in_child(d.run_token, 20000);
		int r = ended_within(pid, 1500);
		if (r < 0)
			held[n_held++] = pid;
		else
			refused_run = r;
	}
	cr_assert_eq(refused_run, REFUSED_CAPACITY,
		     "tenant A's Run calls were not refused for capacity (%d held)", n_held);
	/* Then sessions, until refused. */
	char ids[16][64];
	int n_open = 0, refused_open = -1;
	for (int i = 0; i < 16 && refused_open < 0; i++) {
		int r = open_session(d.run_token, ids[n_open]);
		if (r == ANSWERED)
			n_open++;
		else
			refused_open = r;
	}
	cr_assert_eq(refused_open, REFUSED_CAPACITY, "tenant A's sessions were not refused for capacity");
	fprintf(stderr, "fairness: tenant A holds %d Run calls and %d sessions before its refusal\n",
		n_held, n_open);
	/* Tenant B still opens a session and runs a cell in it. */
	char b[64];
	cr_assert_eq(open_session(d.other_token, b), ANSWERED,
		     "tenant B was refused a session while tenant A held %d Run calls and %d sessions",
		     n_held, n_open);
	char body[256];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"cell\":{\"language\":\"python\",\"code\":\"6*7\"}}", b);
	struct answer *a = daemon_call(&d, d.other_token, SVC "SessionRun", body);
	cr_assert_eq(a->status, 200, "tenant B's cell: %s", a->body);
	cr_assert_not_null(strstr(a->body, "42"), "%s", a->body);
	answer_free(a);
	/* The cap is the one Describe states. */
	struct answer *desc = daemon_call(&d, d.run_token, SVC "Describe", "{\"protocol\":3}");
	cr_assert_eq(desc->status, 200, "%s", desc->body);
	cr_assert_not_null(strstr(desc->body, "\"maxSessionsPerCaller\":2"),
			   "Describe does not report the per-caller cap of 2: %s", desc->body);
	answer_free(desc);
	for (int i = 0; i < n_held; i++) {
		int st = 0;
		waitpid(held[i], &st, 0);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == ANSWERED,
			  "tenant A's held Run %d was not answered", i);
	}
}
