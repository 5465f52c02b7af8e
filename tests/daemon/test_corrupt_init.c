/* A daemon whose sandboxes run a corrupt init (the test-only build,
 * tests/support/corrupt_init.c): a cell writes the file that tells it which
 * reply to rewrite, and the engine must end that sandbox's session as
 * boundary_failed, with the store and the events naming what the init sent
 * wrong, while the daemon (the same pid) and another session live on. */
#include "daemon_harness.h"
#include "wire.h"

#include <cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;

static void start(void)
{
	/* Read by `serve` (the test's own process only: criterion runs each
	 * test in a process of its own). */
	setenv("BULKHEAD_INIT", BH_TEST_CORRUPT_INIT, 1);
	daemon_start(&d, "--tier container");
}

static void stop(void) { daemon_stop(&d); }

struct session {
	char id[64], fp[65];
};

static void open_session(struct session *s)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	snprintf(s->id, sizeof s->id, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "sessionId")));
	snprintf(s->fp, sizeof s->fp, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "session")));
	cJSON_Delete(o);
	answer_free(a);
}

static struct answer *run_cell(const struct session *s, const char *code)
{
	return daemon_cell(&d, d.run_token, s->id, "python", code);
}

/* stdout of a cell that must be answered normally. */
static char *cell_out(const struct session *s, const char *code)
{
	return daemon_cell_stdout(&d, d.run_token, s->id, code);
}

/* The other session: it answers, with its state. */
static int bystander_n;
static void bystander_check(const struct session *b)
{
	char *out = cell_out(b, "n += 1; n");
	char want[32];
	snprintf(want, sizeof want, "%d\n", ++bystander_n);
	cr_assert_str_eq(out, want, "the other session lost its state: %s", out);
	free(out);
}

/* The session's end as the operator API and the store say it. */
static void expect_ended(const struct session *s, const char *what)
{
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", s->fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "GetSession", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\"endReason\":\"boundary_failed\""),
			   "the session did not end as boundary_failed: %s", a->body);
	answer_free(a);
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
		 "sqlite3 -readonly '%s/state/bulkhead.db' \"SELECT end_reason || ': ' || end_detail "
		 "FROM sessions WHERE fingerprint = '%s'\"",
		 d.dir, s->fp);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char row[4096] = "";
	char *got = fgets(row, sizeof row, f);
	pclose(f);
	cr_assert_not_null(got, "no row for the session in the store");
	cr_assert_not_null(strstr(row, "boundary_failed: "), "the store says: %s", row);
	cr_assert_not_null(strstr(row, what), "the store does not say what the init sent wrong "
					      "(%s): %s", what, row);
	a = daemon_call(&d, d.op_token, OPS "ListEvents", "{\"limit\":1000}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	bool named = false;
	cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(o, "events"))
	{
		const char *detail = cJSON_GetStringValue(cJSON_GetObjectItem(e, "detail"));
		named |= detail && strstr(detail, what);
	}
	cr_assert(named, "no event says what the init sent wrong (%s): %s", what, a->body);
	cJSON_Delete(o);
	answer_free(a);
}

static void expect_daemon_alive(pid_t pid)
{
	cr_assert_eq(d.pid, pid);
	struct answer *a = daemon_get(&d, "/healthz");
	long status = a->status;
	answer_free(a);
	if (status == 200)
		return;
	/* Say how it died, if it did. */
	int st = 0;
	pid_t got = 0;
	for (int i = 0; i < 40 && (got = waitpid(d.pid, &st, WNOHANG)) == 0; i++)
		usleep(50 * 1000);
	if (got == d.pid) {
		d.pid = 0;
		cr_assert_fail("the daemon died: %s %d", WIFSIGNALED(st) ? "signal" : "exit status",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	cr_assert_fail("the daemon does not answer /healthz (HTTP %ld)", status);
}

/* A session and a bystander; the victim's cell writes the control file
 * (mode), then `provoke` makes the init send the reply it rewrites. */
struct victim {
	struct session s, b;
	pid_t pid;
};

static void arm(struct victim *v, const char *mode)
{
	v->pid = d.pid;
	open_session(&v->b);
	free(cell_out(&v->b, "n = 0"));
	bystander_n = 0;
	open_session(&v->s);
	free(cell_out(&v->s, "open('/work/kept.txt', 'w').write('k')"));
	bystander_check(&v->b);
	if (!mode)
		return;
	char code[256];
	snprintf(code, sizeof code, "open('/work/.bulkhead-corrupt-init', 'w').write('%s')", mode);
	/* DONE modes rewrite the answer to this very cell, OUTPUT modes
	 * what it prints while it runs (stream). */
	if (!strncmp(mode, "done-", 5) || !strncmp(mode, "output-", 7))
		return;
	free(cell_out(&v->s, code));
}

static void after(struct victim *v, const char *what)
{
	expect_daemon_alive(v->pid);
	expect_ended(&v->s, what);
	bystander_check(&v->b);
	expect_daemon_alive(v->pid);
	/* The ended session says so to its next call, and nothing else. */
	struct answer *a = run_cell(&v->s, "1");
	cr_assert_neq(a->status, 200, "an ended session answered a cell: %s", a->body);
	answer_free(a);
	bystander_check(&v->b);
}

static void corrupt_done(const char *mode, const char *what)
{
	struct victim v;
	arm(&v, mode);
	char code[256];
	snprintf(code, sizeof code, "open('/work/.bulkhead-corrupt-init', 'w').write('%s')", mode);
	struct answer *a = run_cell(&v.s, code);
	/* Not a normal answer: the code ran, its answer is not to be had,
	 * the call keeps its place in the chain (an unanswered record) and
	 * the session ends. */
	cr_assert_neq(a->status, 200, "the corrupt answer was passed on: %.300s", a->body);
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert(e.session_ended && e.end == WIRE_END_BOUNDARY_FAILED,
		  "the call's answer does not end the session as BOUNDARY_FAILED: %s", a->body);
	cr_assert(e.unanswered, "no unanswered record: %s", a->body);
	cr_assert(!e.not_dispatched, "the code ran, yet the answer says nothing ran: %s", a->body);
	wire_error_free(&e);
	answer_free(a);
	after(&v, what);
}

/* ---- stream: OUTPUT frames while the cell runs ---- */
static void corrupt_output(const char *mode, const char *what)
{
	struct victim v;
	arm(&v, mode);
	char code[512];
	snprintf(code, sizeof code,
		 "import time\nopen('/work/.bulkhead-corrupt-init', 'w').write('%s')\n"
		 "print('relayed', flush=True)\ntime.sleep(2)",
		 mode);
	struct answer *a = run_cell(&v.s, code);
	cr_assert_neq(a->status, 200, "a cell whose relay broke the rules was answered: %.300s",
		      a->body);
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert(e.session_ended && e.end == WIRE_END_BOUNDARY_FAILED,
		  "the call's answer does not end the session as BOUNDARY_FAILED: %s", a->body);
	cr_assert(e.unanswered, "no unanswered record: %s", a->body);
	wire_error_free(&e);
	answer_free(a);
	after(&v, what);
}

Test(corrupt_init, output_not_contiguous_with_what_was_relayed_ends_only_its_session,
     .init = start, .fini = stop)
{
	corrupt_output("output-offset", "at offset 100");
}

Test(corrupt_init, output_for_an_unknown_stream_ends_only_its_session, .init = start, .fini = stop)
{
	corrupt_output("output-stream", "stream 3");
}

Test(corrupt_init, output_for_a_call_nobody_made_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_output("output-call-id", "OUTPUT for call");
}

Test(corrupt_init, an_output_chunk_over_16_kib_ends_only_its_session, .init = start, .fini = stop)
{
	corrupt_output("output-chunk", "chunk of 16385 bytes");
}

Test(corrupt_init, output_relayed_past_the_cap_ends_only_its_session, .init = start, .fini = stop)
{
	corrupt_output("output-flood 5", "the cap asked for was 65536");
}

static void corrupt_files_op(const char *mode, const char *method, const char *what)
{
	struct victim v;
	arm(&v, mode);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\",\"path\":\"%s\"}", v.s.fp,
		 !strcmp(method, "ReadFile") ? "kept.txt" : "");
	struct answer *a = daemon_call(&d, d.op_token, method[0] == 'R' ? OPS "ReadFile" : OPS "ListFiles",
				       body);
	cr_assert_neq(a->status, 200, "the corrupt answer was passed on: %.300s", a->body);
	answer_free(a);
	after(&v, what);
}

Test(corrupt_init, a_listing_claiming_two_billion_entries_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_files_op("listing-count", "ListFiles", "2147483647 entries");
}

Test(corrupt_init, a_listing_with_more_entries_than_asked_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_files_op("listing-entries 10001", "ListFiles", "10001 entries");
}

Test(corrupt_init, file_content_longer_than_asked_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_files_op("content-bytes 2000000", "ReadFile", "2000000 bytes");
}

Test(corrupt_init, stdout_longer_than_the_cap_ends_only_its_session, .init = start, .fini = stop)
{
	corrupt_done("done-stdout 70000", "70000 bytes of stdout");
}

Test(corrupt_init, a_stdout_length_past_the_frame_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_done("done-stdout-length", "stdout");
}

Test(corrupt_init, a_listing_in_answer_to_a_cell_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_done("done-type", "LISTING");
}

Test(corrupt_init, an_answer_to_a_call_nobody_made_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_done("done-call-id", "nobody asked for");
}

/* Without the control file the corrupt build is the init: the frame above
 * is not what ends those sessions. */
Test(corrupt_init, untriggered_it_is_an_ordinary_init, .init = start, .fini = stop)
{
	struct victim v;
	arm(&v, NULL);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\",\"path\":\"\"}", v.s.fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListFiles", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\"name\":\"kept.txt\""), "%s", a->body);
	answer_free(a);
	char *out = cell_out(&v.s, "print('x' * 10)");
	cr_assert_str_eq(out, "xxxxxxxxxx\n");
	free(out);
	bystander_check(&v.b);
	expect_daemon_alive(v.pid);
}

/* ---- procs ---- */
/* A list of processes the init rewrote, asked for by the operator: the
 * session ends, the daemon and the bystander live on. */
static void corrupt_procs(const char *mode, const char *what)
{
	struct victim v;
	arm(&v, mode);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", v.s.fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListProcesses", body);
	cr_assert_neq(a->status, 200, "the corrupt list was passed on: %.300s", a->body);
	answer_free(a);
	after(&v, what);
}

Test(corrupt_init, a_process_list_claiming_two_billion_processes_ends_only_its_session,
     .init = start, .fini = stop)
{
	corrupt_procs("procs-count", "2147483647 processes");
}

Test(corrupt_init, a_process_command_longer_than_the_limit_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_procs("procs-command 5000", "command of 5000 bytes");
}

Test(corrupt_init, a_nul_in_a_process_command_ends_only_its_session, .init = start, .fini = stop)
{
	corrupt_procs("procs-command-nul", "NUL in its command");
}

Test(corrupt_init, a_process_state_that_is_no_letter_ends_only_its_session, .init = start,
     .fini = stop)
{
	corrupt_procs("procs-state", "state 0x01");
}
