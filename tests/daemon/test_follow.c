/* FollowCell and ListCells over a real daemon (stream): an operator follows
 * a cell while the agent's call is still waiting for its answer, the answer
 * the agent then gets is the one unary answer it always was, and the
 * session's cells come back newest first with their whole output. */
#include "daemon_harness.h"
#include "wire.h"
#include "wire_operator.h"

#include <cJSON.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void start(void) { daemon_start(&d, "--tier container"); }
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

struct agent {
	const struct session *s;
	const char *code;
	struct answer *a;
};

static void *agent_call(void *arg)
{
	struct agent *g = arg;
	g->a = daemon_cell(&d, d.run_token, g->s->id, "python", g->code);
	return NULL;
}

static struct wire_operator_follow follow(const char *token, const char *fp, uint64_t seq,
					  uint64_t out_after, uint32_t wait_ms, long *status)
{
	char body[512];
	snprintf(body, sizeof body,
		 "{\"session\":\"%s\",\"sequence\":\"%llu\",\"stdoutAfter\":\"%llu\",\"waitMs\":%u}",
		 fp, (unsigned long long)seq, (unsigned long long)out_after, wait_ms);
	struct answer *a = daemon_call(&d, token, OPS "FollowCell", body);
	struct wire_operator_follow f = {0};
	*status = a->status;
	if (a->status == 200) {
		struct wire_status st;
		cr_assert_eq(wire_operator_decode_follow(a->body, a->len, &f, &st), 0, "%s", st.msg);
	}
	answer_free(a);
	return f;
}

Test(follow, an_operator_reads_a_line_before_the_agents_answer_arrives, .init = start, .fini = stop)
{
	struct session s;
	open_session(&s);
	struct agent g = {&s, "import time\nprint('first', flush=True)\ntime.sleep(3)\nprint('last')",
			  NULL};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, agent_call, &g), 0);
	/* Long polls until the line is there (each up to 2 s; 20 s in all). */
	char seen[256] = "";
	uint64_t seq = 0, off = 0;
	bool running_when_seen = false;
	for (int i = 0; i < 10 && !strstr(seen, "first\n"); i++) {
		long status;
		struct wire_operator_follow f = follow(d.op_token, s.fp, seq, off, 2000, &status);
		cr_assert_eq(status, 200);
		if (f.sequence && f.sequence != seq)
			off = 0;
		if (f.sequence) {
			seq = f.sequence;
			strncat(seen, (const char *)f.out, f.out_len < 100 ? f.out_len : 100);
			off = f.stdout_offset + f.out_len;
			running_when_seen = f.running;
			if (f.running) {
				cr_assert_eq(f.code_len, strlen(g.code), "the running code is the cell's");
				cr_assert_str_eq(f.language, "python");
				cr_assert_gt(f.started_unix_ms, 0);
			}
		}
		wire_operator_follow_free(&f);
	}
	cr_assert_str_eq(seen, "first\n", "the line printed first was not followed");
	cr_assert(running_when_seen, "the line came only with the cell's end");
	cr_assert_null(g.a, "the agent's answer came before the operator read the line");
	/* A follower asking past what exists waits, then hears nothing new. */
	long status;
	struct wire_operator_follow idle = follow(d.op_token, s.fp, seq, off, 100, &status);
	cr_assert_eq(status, 200);
	cr_assert_eq(idle.out_len, 0);
	cr_assert(idle.running && !idle.done);
	wire_operator_follow_free(&idle);
	pthread_join(t, NULL);
	/* The agent's answer: one unary answer with the whole output and its record. */
	cr_assert_eq(g.a->status, 200, "%s", g.a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(g.a->body, g.a->len, &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.run.result.out_len, strlen("first\nlast\n"));
	cr_assert(!memcmp(r.run.result.out, "first\nlast\n", r.run.result.out_len));
	/* The follower's end: the rest, done, and the record the agent got. */
	struct wire_operator_follow end = follow(d.op_token, s.fp, seq, off, 2000, &status);
	cr_assert(end.done && end.answered && !end.running);
	cr_assert_eq(end.out_len, strlen("last\n"));
	cr_assert_str_eq(end.record_sha256, r.run.record.record_sha256);
	wire_operator_follow_free(&end);
	wire_session_run_response_free(&r);
	answer_free(g.a);
	/* The cell after the one seen done: nothing yet. */
	struct wire_operator_follow next = follow(d.op_token, s.fp, seq + 1, 0, 100, &status);
	cr_assert_eq(status, 200);
	cr_assert_eq(next.sequence, seq + 1);
	cr_assert(!next.running && !next.done && next.out_len == 0);
	wire_operator_follow_free(&next);
}

Test(follow, following_needs_the_operator_scope_and_a_session, .init = start, .fini = stop)
{
	struct session s;
	open_session(&s);
	long status;
	struct wire_operator_follow f = follow(d.run_token, s.fp, 0, 0, 0, &status);
	cr_assert_eq(status, 403, "a code:run token followed a cell (HTTP %ld)", status);
	wire_operator_follow_free(&f);
	f = follow(d.op_token, "0000000000000000000000000000000000000000000000000000000000000000", 0,
		   0, 0, &status);
	cr_assert_eq(status, 404);
	wire_operator_follow_free(&f);
}

Test(follow, list_cells_pages_a_sessions_cells_newest_first, .init = start, .fini = stop)
{
	struct session s;
	open_session(&s);
	for (int i = 0; i < 3; i++) {
		char code[64];
		snprintf(code, sizeof code, "print('cell %d')", i);
		struct answer *a = daemon_cell(&d, d.run_token, s.id, "python", code);
		cr_assert_eq(a->status, 200, "%s", a->body);
		answer_free(a);
	}
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\",\"limit\":2}", s.fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListCells", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_cells page;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_cells(a->body, a->len, &page, &st), 0, "%s", st.msg);
	answer_free(a);
	cr_assert_eq(page.n, 2);
	cr_assert_eq(page.cells[0].sequence, 3, "newest first");
	cr_assert_eq(page.cells[0].out_len, strlen("cell 2\n"));
	cr_assert(!memcmp(page.cells[0].out, "cell 2\n", page.cells[0].out_len));
	cr_assert(!memcmp(page.cells[0].code, "print('cell 2')", page.cells[0].code_len));
	cr_assert_str_eq(page.cells[0].language, "python");
	cr_assert_eq(page.next_before_sequence, 2);
	snprintf(body, sizeof body, "{\"session\":\"%s\",\"beforeSequence\":\"%llu\"}", s.fp,
		 (unsigned long long)page.next_before_sequence);
	wire_operator_cells_free(&page);
	a = daemon_call(&d, d.op_token, OPS "ListCells", body);
	cr_assert_eq(wire_operator_decode_cells(a->body, a->len, &page, &st), 0, "%s", st.msg);
	answer_free(a);
	cr_assert_eq(page.n, 1);
	cr_assert_eq(page.cells[0].sequence, 1);
	cr_assert_eq(page.next_before_sequence, 0, "no page before the first");
	wire_operator_cells_free(&page);
}

/* ---- bulkhead follow ---- */

/* Reads the command's stdout until want is in it (or EOF); true if it was. */
static bool read_until(FILE *f, const char *want, char *got, size_t n)
{
	size_t len = strlen(got);
	while (!strstr(got, want) && len + 1 < n) {
		int ch = fgetc(f);
		if (ch == EOF)
			return false;
		got[len++] = (char)ch;
		got[len] = '\0';
	}
	return strstr(got, want) != NULL;
}

/* A follow that never prints what is waited for would block the read: the
 * test's own timeout ends it. */
Test(follow, bulkhead_follow_prints_the_running_cells_output_as_it_arrives, .init = start,
     .fini = stop, .timeout = 60)
{
	struct session s;
	open_session(&s);
	char tokens[4300];
	snprintf(tokens, sizeof tokens, "%s/op.token", d.dir);
	FILE *tf = fopen(tokens, "w");
	cr_assert_not_null(tf);
	fprintf(tf, "%s\n", d.op_token);
	fclose(tf);
	/* A prefix names the session; --once ends after the cell it follows.
	 * The cell's stdout is escaped as the CLI escapes it for a terminal
	 * (here a pipe: as it came). */
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "'%s' follow %.12s --once --attach '%s' --token-file '%s' 2>&1",
		 BH_TEST_CLI, s.fp, d.sock, tokens);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char got[4096] = "";
	cr_assert(read_until(f, "no cell yet\n", got, sizeof got), "follow did not start: %s", got);
	struct agent g = {&s, "import time\nprint('first', flush=True)\ntime.sleep(3)\nprint('last')",
			  NULL};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, agent_call, &g), 0);
	cr_assert(read_until(f, "first\n", got, sizeof got), "follow printed no line: %s", got);
	cr_assert_null(g.a, "the line came only after the agent's answer:\n%s", got);
	cr_assert(read_until(f, "ended: exit 0", got, sizeof got), "no end: %s", got);
	cr_assert_not_null(strstr(got, "cell 1 (python) running"), "%s", got);
	cr_assert_not_null(strstr(got, "first\nlast\n"), "%s", got);
	int st = pclose(f);
	cr_assert_eq(st, 0, "follow --once exited %d:\n%s", st, got);
	pthread_join(t, NULL);
	cr_assert_eq(g.a->status, 200);
	answer_free(g.a);
}
