/* What an operator is told about a session over a real daemon: the run it
 * belongs to comes from the client's trace id, describe's fields (the cell
 * in flight, the policy clocks, the tier's evidence) travel on GetSession,
 * a list stays light, and a daemon pinned to a tier says so in its evidence
 * and /readyz whatever the token's scopes. */
#include "daemon_harness.h"
#include "wire.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void stop(void) { daemon_stop(&d); }
static void start(void) { daemon_start(&d, "--tier container"); }

static void open_with(const char *body, char id[64], char fp[65])
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	snprintf(id, 64, "%s", r.session_id);
	snprintf(fp, 65, "%s", r.session);
	wire_open_session_response_free(&r);
	answer_free(a);
}

/* GetSession, decoded with the codec the console uses. */
static void get_session(const char *fp, struct wire_operator_session *out)
{
	char body[128];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "GetSession", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_session(a->body, a->len, out, &st), 0, "%s", st.msg);
	answer_free(a);
}

Test(truth, a_trace_id_on_open_session_becomes_the_sessions_run_key, .init = start, .fini = stop)
{
	char id[64], fp[65], id2[64], fp2[65];
	open_with("{\"protocol\":3,\"traceId\":\"conv-7.turn:2\"}", id, fp);
	/* One that breaks plimsoll's rule is dropped whole: no run key. */
	open_with("{\"protocol\":3,\"traceId\":\"no spaces allowed\"}", id2, fp2);
	struct wire_operator_session s;
	get_session(fp, &s);
	cr_assert_str_eq(s.run_key, "conv-7.turn:2");
	wire_operator_session_free(&s);
	get_session(fp2, &s);
	cr_assert_str_eq(s.run_key, "");
	wire_operator_session_free(&s);
	/* The list says the same, so the console's :runs drills by it. */
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListSessions", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\"runKey\":\"conv-7.turn:2\""), "%s", a->body);
	answer_free(a);
}

struct slow_cell {
	const char *id;
	struct answer *a;
};

static void *run_slow(void *arg)
{
	struct slow_cell *c = arg;
	c->a = daemon_cell(&d, d.run_token, c->id, "python",
			   "import time\nfor i in range(30):\n    time.sleep(0.1)\nprint('done')");
	return NULL;
}

Test(truth, get_session_shows_the_cell_in_flight_and_the_clocks_and_a_list_leaves_the_code_out,
     .init = start, .fini = stop)
{
	char id[64], fp[65];
	open_with("{\"protocol\":3}", id, fp);
	struct answer *warm = daemon_cell(&d, d.run_token, id, "python", "x = 1");
	cr_assert_eq(warm->status, 200, "%s", warm->body);
	answer_free(warm);

	/* Ready: the idle window's clock runs; the pause is due within it, and
	 * hibernating (closing, on this tier) follows the policy's wait. */
	struct wire_operator_session s;
	get_session(fp, &s);
	int64_t now = (int64_t)time(NULL) * 1000;
	cr_assert_str_eq(s.state, "ready");
	cr_assert_str_eq(s.call_language, "");
	cr_assert_eq(s.call_started_unix_ms, 0);
	cr_assert_gt(s.pauses_unix_ms, now - 2000, "no pause clock: %lld", (long long)s.pauses_unix_ms);
	cr_assert_leq(s.pauses_unix_ms, now + 5 * 60 * 1000 + 2000);
	cr_assert_gt(s.hibernates_unix_ms, s.pauses_unix_ms);
	cr_assert(!strncmp(s.evidence, "bulkhead-sandbox:sha256:", 24) && strlen(s.evidence) == 24 + 64,
		  "evidence: %s", s.evidence);
	wire_operator_session_free(&s);

	struct slow_cell c = {.id = id};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, run_slow, &c), 0);
	bool seen = false;
	for (int i = 0; i < 100 && !seen; i++) {
		get_session(fp, &s);
		if (s.call_started_unix_ms) {
			seen = true;
			cr_assert_str_eq(s.state, "busy");
			cr_assert_str_eq(s.call_language, "python");
			cr_assert_not_null(strstr(s.call_code, "time.sleep(0.1)"), "%s", s.call_code);
			cr_assert_eq(s.pauses_unix_ms, 0, "a busy session's idle clock is not running");
			/* The list carries the start, not the code. */
			struct answer *a = daemon_call(&d, d.op_token, OPS "ListSessions", "{}");
			cr_assert_not_null(strstr(a->body, "\"callStartedUnixMs\""), "%s", a->body);
			cr_assert_null(strstr(a->body, "time.sleep"), "%s", a->body);
			answer_free(a);
		}
		wire_operator_session_free(&s);
		if (!seen)
			usleep(50 * 1000);
	}
	pthread_join(t, NULL);
	cr_assert(seen, "GetSession never showed the cell in flight");
	cr_assert_eq(c.a->status, 200, "%s", c.a->body);
	answer_free(c.a);
	get_session(fp, &s);
	cr_assert_eq(s.call_started_unix_ms, 0, "the cell answered: none is in flight");
	cr_assert_str_eq(s.call_code, "");
	wire_operator_session_free(&s);
}

/* A daemon pinned to the container tier gives its sessions that tier: its
 * evidence says so to an operator-only token as to any (B14: the console's
 * header read it from Describe, which needs code:run). */
Test(truth, a_pinned_daemons_evidence_offers_only_its_tier_to_an_operator_token, .init = start,
     .fini = stop)
{
	struct answer *a = daemon_call(&d, d.op_token, OPS "Evidence", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_evidence e;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_evidence(a->body, a->len, &e, &st), 0, "%s", st.msg);
	cr_assert_str_eq(e.strongest, "container");
	for (size_t i = 0; i < e.n_tiers; i++) {
		if (strcmp(e.tiers[i].tier, "kernel"))
			continue;
		cr_assert(!e.tiers[i].offered, "kernel is offered by a container-pinned daemon");
		if (strstr(e.tiers[i].reason, "proven"))
			cr_assert_not_null(strstr(e.tiers[i].reason, "serve --tier"), "%s",
					   e.tiers[i].reason);
	}
	wire_operator_evidence_free(&e);
	answer_free(a);
	/* /readyz names the same tier. */
	a = daemon_get(&d, "/readyz");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_str_eq(a->body, "ready: container tier offered\n");
	answer_free(a);
}

static char *audit_log(void)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t cap = 1 << 20, n = 0;
	char *log = malloc(cap);
	n = fread(log, 1, cap - 1, f);
	log[n] = '\0';
	fclose(f);
	return log;
}

static size_t lines_with(const char *log, const char *a, const char *b)
{
	size_t n = 0;
	for (const char *p = log; *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *line = strndup(p, len);
		if (strstr(line, a) && (!b || strstr(line, b)))
			n++;
		free(line);
		p += len + (e ? 1 : 0);
	}
	return n;
}

/* B27: a console polling the sessions wrote a line per read. Reads of the
 * daemon's state that succeed are tallied, one "reads" line per principal
 * and procedure a minute and at stop; a refused read and an action are still
 * a line each. */
Test(truth, successful_state_reads_are_tallied_in_the_audit_log_and_refusals_are_a_line_each,
     .init = start, .fini = stop)
{
	for (int i = 0; i < 20; i++) {
		struct answer *a = daemon_call(&d, d.op_token, OPS "ListSessions", "{}");
		cr_assert_eq(a->status, 200, "%s", a->body);
		answer_free(a);
	}
	struct answer *a = daemon_call(&d, d.run_token, OPS "ListSessions", "{}");
	cr_assert_eq(a->status, 403, "%s", a->body);
	answer_free(a);
	char *log = audit_log();
	cr_assert_eq(lines_with(log, "\"audit\":\"call\"", "ListSessions"), 1,
		     "not only the refusal is a line:\n%s", log);
	cr_assert_eq(lines_with(log, "\"permission_denied\"", "ListSessions"), 1, "%s", log);
	free(log);
	/* At stop the tally is written: who, what, how many. */
	kill(d.pid, SIGTERM);
	cr_assert_eq(waitpid(d.pid, NULL, 0), d.pid);
	d.pid = 0;
	log = audit_log();
	cr_assert_eq(lines_with(log, "\"audit\":\"reads\"", "ListSessions"), 1, "%s", log);
	cr_assert_eq(lines_with(log, "\"calls\":20", "\"principal\":\"watcher\""), 1,
		     "the tally does not say who read how often:\n%s", log);
	free(log);
}
