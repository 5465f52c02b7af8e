/* The conversation manager over a real daemon: one sandbox per run key,
 * warm without waiting, reuse across calls, dispose, idle close, the
 * per-owner cap closing the least recently used idle sandbox, and the one
 * retry after a session-ended refusal that says nothing ran. The daemon's
 * procedures are counted by the client, as an operator would count them. */
#include "client.h"
#include "daemon_harness.h"
#include "manager.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct daemon d;
static bh_client *cl;
static bh_manager *mgr;

static void start_with(uint32_t per_owner, uint32_t idle_close_ms)
{
	daemon_start(&d, "--tier container");
	struct bh_client_options co = {.target = d.sock, .token = d.both_token};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_new(&co, &cl, &err), 0, "%s", err ? err->message : "");
	struct bh_manager_options o;
	bh_manager_defaults(&o);
	o.client = cl;
	o.token = d.both_token;
	o.floor = BH_TIER_CONTAINER;
	o.languages = 1u << BH_LANG_PYTHON;
	o.max_per_owner = per_owner;
	o.idle_close_ms = idle_close_ms;
	cr_assert_eq(bh_manager_new(&o, &mgr, &err), 0, "%s", err ? err->message : "");
}

static void start(void) { start_with(3, 0); }
static void start_cap2(void) { start_with(2, 0); }
static void start_idle(void) { start_with(3, 600); }
static void start_cap1(void) { start_with(1, 0); }

static void stop(void)
{
	if (mgr) {
		bh_manager_dispose_all(mgr);
		bool never = false;
		bh_manager_wait(mgr, &never, 3000); /* lets the closes go out */
		bh_manager_free(mgr);
	}
	mgr = NULL;
	bh_client_free(cl);
	cl = NULL;
	daemon_stop(&d);
}

static uint64_t count(const char *procedure)
{
	return bh_client_procedure_count(cl, procedure);
}

/* One executeCode call; the answer (the caller frees it with free_out). */
static struct bh_exec_output *run(const char *key, const char *owner, const char *code)
{
	struct bh_exec_output *o = calloc(1, sizeof *o);
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = code};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_run(mgr, key, owner, &in, o, &err), 0, "%s: %s", key,
		     err ? err->message : "");
	return o;
}

static void free_out(struct bh_exec_output *o)
{
	bh_exec_output_free(o);
	free(o);
}

Test(manager, warm_returns_before_the_sandbox_is_open_and_the_first_call_uses_it, .init = start,
     .fini = stop)
{
	bh_manager_warm(mgr, "run-1", "alice");
	struct bh_manager_entry e[4];
	cr_assert_eq(bh_manager_entries(mgr, e, 4), 1);
	cr_assert(e[0].opening, "warm waited for the open");
	cr_assert_eq(count("OpenSession"), 1);
	bh_manager_warm(mgr, "run-1", "alice"); /* the key has one: nothing more */
	cr_assert_eq(count("OpenSession"), 1);

	struct bh_exec_output *o = run("run-1", "alice", "x = 20\nprint(x + 1)");
	cr_assert_str_eq(o->stdout_text, "21\n");
	cr_assert(o->fresh_sandbox);
	cr_assert(o->fresh_interpreter);
	cr_assert(o->state_kept);
	cr_assert(o->files_persist);
	cr_assert_str_eq(o->isolation, "container");
	cr_assert_eq(strlen(o->record_sha256), 64);
	free_out(o);
	cr_assert_eq(count("OpenSession"), 1, "the call opened a second sandbox");
}

Test(manager, the_next_call_keeps_state_and_dispose_then_run_gets_a_fresh_sandbox, .init = start,
     .fini = stop)
{
	free_out(run("run-1", "alice", "x = 41"));
	struct bh_exec_output *o = run("run-1", "alice", "print(x + 1)");
	cr_assert_str_eq(o->stdout_text, "42\n");
	cr_assert_not(o->fresh_sandbox);
	cr_assert_not(o->fresh_interpreter);
	free_out(o);
	cr_assert_eq(count("OpenSession"), 1);
	cr_assert_eq(count("CloseSession"), 0, "a sandbox was closed during the turn");

	bh_manager_dispose(mgr, "run-1");
	struct bh_manager_entry e[4];
	cr_assert_eq(bh_manager_entries(mgr, e, 4), 0, "dispose did not forget the key");
	o = run("run-1", "alice", "print('x' in globals())");
	cr_assert_str_eq(o->stdout_text, "False\n");
	cr_assert(o->fresh_sandbox);
	free_out(o);
	cr_assert_eq(count("OpenSession"), 2);
	cr_assert_eq(count("CloseSession"), 1);
}

Test(manager, a_guest_error_is_an_answer_and_the_sandbox_stays, .init = start, .fini = stop)
{
	struct bh_exec_output *o = run("run-1", "alice", "1 / 0");
	cr_assert_eq(o->exit_code, 1);
	cr_assert_not_null(strstr(o->stderr_text, "ZeroDivisionError"), "%s", o->stderr_text);
	cr_assert(o->state_kept);
	free_out(o);
	o = run("run-1", "alice", "print('still here')");
	cr_assert_not(o->fresh_sandbox);
	cr_assert_not(o->retried);
	free_out(o);
	cr_assert_eq(count("OpenSession"), 1);
}

Test(manager, a_cap_of_two_with_three_keys_closes_the_least_recently_used_idle_one,
     .init = start_cap2, .fini = stop)
{
	free_out(run("run-a", "alice", "a = 1"));
	free_out(run("run-b", "alice", "b = 1"));
	free_out(run("run-a", "alice", "a += 1")); /* run-b is now the least recently used */
	struct bh_exec_output *o = run("run-c", "alice", "c = 1");
	cr_assert(o->fresh_sandbox);
	free_out(o);
	cr_assert_eq(count("CloseSession"), 1);
	struct bh_manager_entry e[4];
	size_t n = bh_manager_entries(mgr, e, 4);
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_neq(e[i].key, "run-b", "the replaced sandbox is still held");
	o = run("run-a", "alice", "print(a)");
	cr_assert_str_eq(o->stdout_text, "2\n", "the kept sandbox lost its state");
	free_out(o);
	/* Another owner is not counted against alice. */
	free_out(run("run-d", "bob", "d = 1"));
	cr_assert_eq(count("CloseSession"), 1);
	/* The replaced conversation's next call starts over, in a new sandbox. */
	o = run("run-b", "alice", "print('b' in globals())");
	cr_assert_str_eq(o->stdout_text, "False\n");
	cr_assert(o->fresh_sandbox);
	free_out(o);
}

struct pending {
	bool done;
	struct bh_exec_output out;
	struct bh_client_error *err;
};

static void on_run(void *arg, struct bh_exec_output *out, const struct bh_client_error *err)
{
	struct pending *p = arg;
	p->done = true;
	if (err)
		p->err = bh_client_error_dup(err);
	else {
		p->out = *out;
		memset(out, 0, sizeof *out);
	}
}

Test(manager, when_every_sandbox_of_the_owner_is_busy_a_new_key_is_refused_and_nothing_ran,
     .init = start_cap1, .fini = stop)
{
	free_out(run("run-a", "alice", "x = 1"));
	struct pending slow = {0};
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = "import time; time.sleep(1.5)"};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_run_async(mgr, "run-a", "alice", &in, on_run, &slow, &err), 0);
	struct bh_exec_input other = {.language = BH_LANG_PYTHON, .code = "print(1)"};
	cr_assert_eq(bh_manager_run_async(mgr, "run-b", "alice", &other, on_run, NULL, &err), -1);
	cr_assert_eq(strncmp(err->message, "Nothing ran (capacity): ", 24), 0, "%s", err->message);
	bh_client_error_free(err);
	cr_assert_eq(count("OpenSession"), 1, "a refused call opened a sandbox");
	/* A warm at the cap does nothing and closes nothing. */
	bh_manager_warm(mgr, "run-c", "alice");
	cr_assert_eq(count("OpenSession"), 1);
	cr_assert_eq(bh_manager_wait(mgr, &slow.done, 10000), 0);
	cr_assert_null(slow.err, "%s", slow.err ? slow.err->message : "");
	bh_exec_output_free(&slow.out);
	cr_assert_eq(count("CloseSession"), 0);
}

Test(manager, an_idle_sandbox_is_closed_after_the_window_and_the_next_call_opens_a_new_one,
     .init = start_idle, .fini = stop)
{
	free_out(run("run-1", "alice", "x = 1"));
	bool never = false;
	bh_manager_wait(mgr, &never, 300);
	cr_assert_eq(count("CloseSession"), 0, "closed before the idle window");
	bh_manager_wait(mgr, &never, 900); /* stated slack: 600 ms window, checked at 1200 ms */
	cr_assert_eq(count("CloseSession"), 1, "not closed after the idle window");
	struct bh_exec_output *o = run("run-1", "alice", "print('x' in globals())");
	cr_assert_str_eq(o->stdout_text, "False\n");
	cr_assert(o->fresh_sandbox);
	free_out(o);
}

Test(manager, a_call_on_a_session_ended_elsewhere_is_retried_once_in_a_new_sandbox, .init = start,
     .fini = stop)
{
	free_out(run("run-1", "alice", "x = 1"));
	struct bh_manager_entry e[2];
	cr_assert_eq(bh_manager_entries(mgr, e, 2), 1);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", e[0].fingerprint);
	/* An operator closes it behind the manager's back. */
	struct bh_client_error *err = NULL;
	struct wire_operator_closed closed;
	cr_assert_eq(bh_client_close(cl, fp, &closed, &err), 0, "%s", err ? err->message : "");
	wire_operator_closed_free(&closed);
	uint64_t runs = count("SessionRun");

	struct bh_exec_output *o = run("run-1", "alice", "print('x' in globals())");
	cr_assert(o->retried, "the refused call was not retried");
	cr_assert(o->fresh_sandbox);
	cr_assert_str_eq(o->stdout_text, "False\n");
	free_out(o);
	cr_assert_eq(count("SessionRun") - runs, 2, "one refused call and one retry");
	cr_assert_eq(count("OpenSession"), 2);

	/* A guest error is not a refusal: no retry, no new sandbox. */
	o = run("run-1", "alice", "raise SystemExit(3)");
	cr_assert_not(o->retried);
	free_out(o);
	cr_assert_eq(count("OpenSession"), 2);
}

Test(manager, a_floor_the_daemon_cannot_meet_is_refused_once_and_never_retried, .init = start,
     .fini = stop)
{
	bh_manager_free(mgr);
	struct bh_manager_options o;
	bh_manager_defaults(&o);
	o.client = cl;
	o.token = d.both_token;
	o.languages = 1u << BH_LANG_PYTHON;
	o.floor = BH_TIER_KERNEL; /* the daemon was started with --tier container */
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_new(&o, &mgr, &err), 0);
	struct bh_exec_output out;
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = "print(1)"};
	cr_assert_eq(bh_manager_run(mgr, "run-1", "alice", &in, &out, &err), -1);
	cr_assert_eq(strncmp(err->message, "Nothing ran (isolation): ", 25), 0, "%s", err->message);
	bh_client_error_free(err);
	cr_assert_eq(count("OpenSession"), 1);
	cr_assert_eq(count("SessionRun"), 0);
	struct bh_manager_entry e[2];
	cr_assert_eq(bh_manager_entries(mgr, e, 2), 0, "a refused open left an entry");
}

Test(manager, the_owner_goes_to_the_daemon_only_as_a_keyed_digest)
{
	char a[65], b[65], c[65];
	bh_owner_digest("token-1", "alice", a);
	bh_owner_digest("token-2", "alice", b);
	bh_owner_digest("token-1", "bob", c);
	cr_assert_eq(strlen(a), 64);
	cr_assert_str_neq(a, b, "the digest does not depend on the token");
	cr_assert_str_neq(a, c);
	cr_assert_null(strstr(a, "alice"));
	char again[65];
	bh_owner_digest("token-1", "alice", again);
	cr_assert_str_eq(a, again);
}

/* ---- truth ---- */

/* The manager names its run on the daemon: the run key goes as OpenSession's
 * trace id, so an operator's :runs groups a deployment's sandboxes by run as
 * the embedded manager's do (B26). */
Test(manager, the_run_key_reaches_the_daemon_as_the_sessions_run, .init = start, .fini = stop)
{
	free_out(run("conv-42", "alice", "x = 1"));
	struct wire_operator_sessions list;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_list_sessions(cl, NULL, &list, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(list.n, 1);
	cr_assert_str_eq(list.sessions[0].run_key, "conv-42");
	wire_operator_sessions_free(&list);
}
