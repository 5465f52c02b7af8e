/* ListProcesses over a real daemon: the processes of a session's sandbox,
 * answered while a cell of that session is still running, in the operator
 * scope only, and decoded by the same codec the client and console use. */
#include "daemon_harness.h"
#include "wire_operator.h"

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
static void start(void) { daemon_start(&d, NULL); }
static void stop(void) { daemon_stop(&d); }

static struct answer *list_processes(const char *token, const char *fp)
{
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	return daemon_call(&d, token, OPS "ListProcesses", body);
}

/* The row of `sleep 30`, or NULL. */
static const struct bh_process *find_sleep(const struct wire_operator_processes *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->procs[i].command, "sleep 30"))
			return &p->procs[i];
	return NULL;
}

Test(processes, a_running_cells_background_process_is_listed_to_the_operator, .init = start,
     .fini = stop)
{
	struct daemon_session s;
	daemon_open_session(&d, &s);
	pid_t child = fork();
	if (child == 0) {
		struct answer *a = daemon_cell(&d, d.run_token, s.id, "python",
					       "import subprocess, time\n"
					       "p = subprocess.Popen(['sleep', '30'])\n"
					       "time.sleep(6)\n");
		_exit(a->status == 200 ? 0 : 1);
	}
	bool seen = false, init_seen = false;
	for (int i = 0; i < 200 && !seen; i++) {
		struct answer *a = list_processes(d.op_token, s.fp);
		int st;
		cr_assert_eq(waitpid(child, &st, WNOHANG), 0,
			     "the cell ended before its background process was seen");
		cr_assert_eq(a->status, 200, "%s", a->body);
		struct wire_operator_processes p;
		struct wire_status ws;
		cr_assert_eq(wire_operator_decode_processes(a->body, a->len, &p, &ws), 0, "%s: %s",
			     ws.msg, a->body);
		const struct bh_process *sleep = find_sleep(&p);
		if (sleep) {
			seen = true;
			cr_assert_eq(sleep->uid, 1000, "%s", a->body);
			cr_assert_neq(sleep->ppid, 0, "%s", a->body);
		}
		for (size_t j = 0; j < p.n; j++)
			init_seen |= p.procs[j].pid == 1;
		wire_operator_processes_free(&p);
		answer_free(a);
		if (!seen)
			usleep(20 * 1000);
	}
	cr_assert(seen, "ListProcesses never showed the cell's `sleep 30`");
	cr_assert(init_seen, "the init (pid 1) is not listed");
	int st = 0;
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the cell was not answered");
	/* After the cell, its sweep: the background process is gone. */
	struct answer *a = list_processes(d.op_token, s.fp);
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_null(strstr(a->body, "\"sleep 30\""), "%s", a->body);
	answer_free(a);
}

Test(processes, a_token_without_the_operator_scope_is_refused, .init = start, .fini = stop)
{
	struct daemon_session s;
	daemon_open_session(&d, &s);
	struct answer *a = list_processes(d.run_token, s.fp);
	cr_assert(a->status == 403 || a->status == 401, "HTTP %ld: %s", a->status, a->body);
	answer_free(a);
}

Test(processes, an_unknown_or_ended_session_is_refused_in_words, .init = start, .fini = stop)
{
	struct answer *a = list_processes(d.op_token, "0000000000000000000000000000000000000000000000000000000000000000");
	cr_assert_eq(a->status, 404, "HTTP %ld: %s", a->status, a->body);
	answer_free(a);
	struct daemon_session s;
	daemon_open_session(&d, &s);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", s.fp);
	a = daemon_call(&d, d.op_token, OPS "Close", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = list_processes(d.op_token, s.fp);
	cr_assert_neq(a->status, 200, "an ended session listed processes: %s", a->body);
	cr_assert_not_null(strstr(a->body, "ended"), "%s", a->body);
	answer_free(a);
}
