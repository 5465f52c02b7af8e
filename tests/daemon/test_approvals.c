/* The approval desk on a real daemon: a held call runs nothing until an
 * operator approves it (then it answers and keeps its record as if never
 * held), a denial and a timeout are refused not dispatched (permission) with
 * the reason in the message, who decided is in the events, and the queue,
 * the scope and the clients file's approval= are kept. */
#include "daemon_harness.h"
#include "harness.h"
#include "record.h"
#include "wire.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void stop(void)
{
	daemon_stop(&d);
}
static void start_required(void)
{
	daemon_start(&d,
		     "--approval required --approval-timeout 60s --approval-cap-per-principal 1");
}
static void start_short(void)
{
	daemon_start(&d, "--approval required --approval-timeout 1s");
}
static void start_default(void)
{
	daemon_start(&d, NULL);
}

struct session {
	char id[64], fp[65];
};

static void open_session(struct session *s, const char *token)
{
	struct answer *a = daemon_call(&d, token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	snprintf(s->id, sizeof s->id, "%s", r.session_id);
	snprintf(s->fp, sizeof s->fp, "%s", r.session);
	wire_open_session_response_free(&r);
	answer_free(a);
}

/* An agent's call on its own thread: its HTTP request stays open while held. */
struct agent {
	pthread_t t;
	const char *token, *session_id, *code;
	const char *path, *body; /* a raw call instead of a cell, when set */
	struct answer *a;
};

static void *agent_main(void *arg)
{
	struct agent *g = arg;
	g->a = g->path ? daemon_call(&d, g->token, g->path, g->body)
		       : daemon_cell(&d, g->token, g->session_id, "python", g->code);
	return NULL;
}

static void agent_start(struct agent *g)
{
	cr_assert_eq(pthread_create(&g->t, NULL, agent_main, g), 0);
}

static struct answer *agent_join(struct agent *g)
{
	pthread_join(g->t, NULL);
	return g->a;
}

static struct wire_operator_approvals list_approvals(const char *token)
{
	struct answer *a = daemon_call(&d, token, OPS "ListApprovals", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_approvals out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_approvals(a->body, a->len, &out, &st), 0, "%s", st.msg);
	answer_free(a);
	return out;
}

/* Waits until n calls are held (the agent's request is on its way). */
static struct wire_operator_approvals wait_held(size_t n)
{
	for (int i = 0; i < 400; i++) {
		struct wire_operator_approvals l = list_approvals(d.op_token);
		if (l.n >= n)
			return l;
		wire_operator_approvals_free(&l);
		usleep(25 * 1000);
	}
	cr_assert_fail("no call was held within 10 s");
	return (struct wire_operator_approvals){0};
}

/* Waits until one call is held; its id. */
static void held_id(char id[32])
{
	struct wire_operator_approvals l = wait_held(1);
	snprintf(id, 32, "%s", l.approvals[0].id);
	wire_operator_approvals_free(&l);
}

/* The runner's session and one cell of code in it, held: its id. */
static void hold_cell(struct session *s, struct agent *g, const char *code, char id[32])
{
	open_session(s, d.run_token);
	*g = (struct agent){.token = d.run_token, .session_id = s->id, .code = code};
	agent_start(g);
	held_id(id);
}

static struct answer *decide(const char *token, const char *id, const char *decision,
			     const char *reason)
{
	char body[1024];
	snprintf(body, sizeof body, "{\"id\":\"%s\",\"decision\":\"%s\",\"reason\":\"%s\"}", id,
		 decision, reason);
	return daemon_call(&d, token, OPS "DecideApproval", body);
}

/* The approval events naming request (newest last), a line each: the
 * detail, or (actors) who took the step, whether a request id came with
 * it, and the detail up to its first ';' or '('. */
static char *approval_lines(const char *request, bool actors)
{
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListEvents", "{\"newest\":true}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_events ev;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_events(a->body, a->len, &ev, &st), 0, "%s", st.msg);
	size_t cap = 4096, len = 0;
	char *out = calloc(1, cap);
	for (size_t i = 0; i < ev.n; i++) {
		const struct bh_event *e = &ev.events[i];
		if (strcmp(e->kind, "approval") || !strstr(e->detail, request))
			continue;
		if (actors)
			len += (size_t)snprintf(out + len, cap - len, "%s %s %.*s\n", e->actor,
						*e->request_id ? "rid" : "-",
						(int)strcspn(e->detail, ";("), e->detail);
		else
			len += (size_t)snprintf(out + len, cap - len, "%s\n", e->detail);
		cr_assert_lt(len, cap);
	}
	wire_operator_events_free(&ev);
	answer_free(a);
	return out;
}

static char *approval_events(const char *request)
{
	return approval_lines(request, false);
}

static bool work_has(const struct session *s, const char *name)
{
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\",\"path\":\"\"}", s->fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListFiles", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_files f;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_files(a->body, a->len, &f, &st), 0, "%s", st.msg);
	bool found = false;
	for (size_t i = 0; i < f.n; i++)
		found |= !strcmp(f.entries[i].name, name);
	wire_operator_files_free(&f);
	answer_free(a);
	return found;
}

static struct wire_error error_of(const struct answer *a)
{
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	return e;
}

#define MARKER_CODE "open('/work/approved.txt','w').write('yes'); print('ran')"

/* The request digest of a Python cell of MARKER_CODE, as a client computes it. */
static void marker_digest(char out[65])
{
	struct bh_request_fields rq = {
		.protocol = 3,
		.minimum_isolation = "",
		.software_mode = "",
		.kind = "cell",
		.language = "python",
		.code = (const uint8_t *)MARKER_CODE,
		.code_len = strlen(MARKER_CODE),
		.grant_profile = "",
	};
	bh_request_digest(&rq, out);
}

Test(approvals, a_held_call_runs_nothing_until_approved_then_answers_with_its_record,
     .init = start_required, .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token, .session_id = s.id, .code = MARKER_CODE};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	const struct wire_operator_approval *h = &l.approvals[0];
	cr_expect_str_eq(h->principal, "runner");
	cr_expect_str_eq(h->procedure, "SessionRun");
	cr_expect_str_eq(h->session, s.fp);
	cr_expect_str_eq(h->kind, "cell");
	cr_expect_str_eq(h->language, "python");
	cr_expect_str_eq(h->code, MARKER_CODE);
	cr_expect_gt(h->deadline_unix_ms, h->held_unix_ms);
	char want[65];
	marker_digest(want);
	cr_expect_str_eq(h->request_sha256, want, "the held call names another request digest");
	char id[32];
	snprintf(id, sizeof id, "%s", h->id);
	wire_operator_approvals_free(&l);

	/* Held: the cell has not run. */
	usleep(300 * 1000);
	cr_assert(!work_has(&s, "approved.txt"), "the held cell ran before approval");

	struct answer *dec = decide(d.op_token, id, "approve", "reviewed, writes one file");
	cr_assert_eq(dec->status, 200, "%s", dec->body);
	struct wire_operator_decision out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_decision(dec->body, dec->len, &out, &st), 0, "%s",
		     st.msg);
	cr_expect_str_eq(out.by, "watcher", "who decided is the operator's token's principal");
	cr_expect_str_eq(out.decision, "approve");
	wire_operator_decision_free(&out);
	answer_free(dec);

	struct answer *a = agent_join(&g);
	cr_assert_eq(a->status, 200, "the approved call did not answer: %s", a->body);
	struct wire_session_run_response r;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.has_run && r.run.has_record);
	cr_expect_eq(r.run.result.out_len, 4);
	cr_expect(!memcmp(r.run.result.out, "ran\n", 4));
	cr_expect_str_eq(r.run.record.request_sha256, want);
	cr_expect_eq(r.run.record.sequence, 1);
	cr_expect(bh_record_verify(&r.run.record));
	wire_session_run_response_free(&r);
	answer_free(a);
	cr_expect(work_has(&s, "approved.txt"), "the approved cell did not run");

	char *ev = approval_events(want);
	char line[512];
	snprintf(line, sizeof line,
		 "held (waits up to 60 s); request %s; SessionRun call %s of runner\n", want, id);
	cr_expect(strstr(ev, line) != NULL, "%s", ev);
	snprintf(line, sizeof line,
		 "approved by watcher; request %s; SessionRun call %s of runner; reason: reviewed, "
		 "writes one file\n",
		 want, id);
	cr_expect(strstr(ev, line) != NULL, "%s", ev);
	free(ev);
	l = list_approvals(d.op_token);
	cr_expect_eq(l.n, 0, "a decided call is still listed");
	wire_operator_approvals_free(&l);
	struct answer *m = daemon_get_as(&d, d.op_token, "metrics");
	cr_expect(strstr(m->body, "bulkhead_approvals_waiting 0\n") != NULL, "%s", m->body);
	cr_expect(strstr(m->body, "bulkhead_approvals_total{outcome=\"approved\"} 1\n") != NULL,
		  "%s", m->body);
	answer_free(m);
}

Test(approvals, a_denied_call_is_refused_not_dispatched_with_the_reason, .init = start_required,
     .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token, .session_id = s.id, .code = MARKER_CODE};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	char id[32], request[65];
	snprintf(id, sizeof id, "%s", l.approvals[0].id);
	snprintf(request, sizeof request, "%s", l.approvals[0].request_sha256);
	wire_operator_approvals_free(&l);

	struct answer *dec = decide(d.op_token, id, "deny", "no file writes today");
	cr_assert_eq(dec->status, 200, "%s", dec->body);
	answer_free(dec);
	struct answer *a = agent_join(&g);
	cr_assert_eq(a->status, 403, "%s", a->body);
	struct wire_error e = error_of(a);
	cr_expect_eq(e.code, WIRE_PERMISSION_DENIED);
	cr_expect(e.not_dispatched, "a denial must say nothing ran");
	cr_expect_eq(e.reason, WIRE_REFUSAL_PERMISSION);
	cr_expect(strstr(e.message, "denied by watcher: no file writes today") != NULL, "%s",
		  e.message);
	wire_error_free(&e);
	answer_free(a);
	cr_expect(!work_has(&s, "approved.txt"), "the denied cell ran");

	/* Decided once: the id is no longer held. */
	dec = decide(d.op_token, id, "approve", "");
	cr_expect_eq(dec->status, 404, "%s", dec->body);
	cr_expect(strstr(dec->body, "no call with id") != NULL, "%s", dec->body);
	answer_free(dec);

	char *ev = approval_events(request);
	cr_expect(strstr(ev, "denied by watcher; request ") != NULL, "%s", ev);
	cr_expect(strstr(ev, " of runner; reason: no file writes today\n") != NULL, "%s", ev);
	free(ev);
}

Test(approvals, a_call_nobody_decides_is_refused_at_its_deadline, .init = start_short, .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token, .session_id = s.id, .code = MARKER_CODE};
	agent_start(&g);
	struct answer *a = agent_join(&g);
	cr_assert_eq(a->status, 403, "%s", a->body);
	struct wire_error e = error_of(a);
	cr_expect(e.not_dispatched);
	cr_expect_eq(e.reason, WIRE_REFUSAL_PERMISSION);
	cr_expect(strstr(e.message, "no one approved within 1 s") != NULL, "%s", e.message);
	wire_error_free(&e);
	answer_free(a);
	cr_expect(!work_has(&s, "approved.txt"), "the timed-out cell ran");
	char want[65];
	marker_digest(want);
	char *ev = approval_events(want);
	cr_expect(strstr(ev, "no one approved within 1 s; request ") != NULL, "%s", ev);
	free(ev);
	struct answer *m = daemon_get_as(&d, d.op_token, "metrics");
	cr_expect(strstr(m->body, "bulkhead_approvals_total{outcome=\"timed_out\"} 1\n") != NULL,
		  "%s", m->body);
	answer_free(m);
}

Test(approvals, deciding_needs_the_operator_scope_and_a_known_id, .init = start_required,
     .fini = stop)
{
	/* A one-shot Run is held too. */
	struct agent g = {.token = d.run_token,
			  .path = SVC "Run",
			  .body = "{\"protocol\":3,\"javascript\":{\"code\":\"console.log(1)\"}}"};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	cr_expect_str_eq(l.approvals[0].procedure, "Run");
	cr_expect_str_eq(l.approvals[0].session, "");
	char id[32];
	snprintf(id, sizeof id, "%s", l.approvals[0].id);
	wire_operator_approvals_free(&l);

	struct answer *a = decide(d.run_token, id, "approve", "me");
	cr_expect_eq(a->status, 403, "a code:run token decided: %s", a->body);
	cr_expect(strstr(a->body, "operator scope") != NULL, "%s", a->body);
	answer_free(a);
	a = daemon_call(&d, d.run_token, OPS "ListApprovals", "{}");
	cr_expect_eq(a->status, 403, "a code:run token listed the held calls: %s", a->body);
	answer_free(a);
	a = decide(d.op_token, "000000000000", "approve", "");
	cr_expect_eq(a->status, 404, "%s", a->body);
	answer_free(a);
	a = decide(d.op_token, id, "deny", "");
	cr_expect_eq(a->status, 400, "a denial without a reason was taken: %s", a->body);
	answer_free(a);
	a = decide(d.op_token, id, "maybe", "x");
	cr_expect_eq(a->status, 400, "%s", a->body);
	answer_free(a);

	a = decide(d.op_token, id, "approve", "");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&g);
	cr_expect_eq(a->status, 200, "the approved Run did not answer: %s", a->body);
	cr_expect(strstr(a->body, "\"record\"") != NULL, "%s", a->body);
	answer_free(a);
}

Test(approvals, past_the_cap_per_principal_a_call_is_refused_resource_exhausted,
     .init = start_required, .fini = stop)
{
	struct session s;
	struct agent g;
	char id[32];
	hold_cell(&s, &g, "print(1)", id);

	struct answer *a = daemon_cell(&d, d.run_token, s.id, "python", "print(2)");
	cr_expect_eq(a->status, 429, "%s", a->body);
	struct wire_error e = error_of(a);
	cr_expect_eq(e.code, WIRE_RESOURCE_EXHAUSTED);
	cr_expect(e.not_dispatched);
	cr_expect(strstr(e.message, "already wait for approval") != NULL, "%s", e.message);
	wire_error_free(&e);
	answer_free(a);

	a = decide(d.op_token, id, "deny", "cleaning up");
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	answer_free(agent_join(&g));
}

/* approval=required on one client's line holds only that client's calls. */
Test(approvals, a_clients_line_with_approval_required_holds_only_that_principal,
     .init = start_default, .fini = stop)
{
	char cmd[9000];
	snprintf(cmd, sizeof cmd,
		 "sed -i 's/^\\(stranger .*\\)$/\\1 approval=required/' '%s/clients'", d.dir);
	cr_assert_eq(system(cmd), 0);
	kill(d.pid, SIGHUP);
	usleep(300 * 1000);
	struct session mine, theirs;
	open_session(&mine, d.run_token);
	open_session(&theirs, d.other_token);
	struct answer *a = daemon_cell(&d, d.run_token, mine.id, "python", "print('free')");
	cr_expect_eq(a->status, 200, "runner's call was held: %s", a->body);
	answer_free(a);
	struct agent g = {.token = d.other_token, .session_id = theirs.id, .code = "print('held')"};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	cr_expect_str_eq(l.approvals[0].principal, "stranger");
	char id[32];
	snprintf(id, sizeof id, "%s", l.approvals[0].id);
	wire_operator_approvals_free(&l);
	a = decide(d.op_token, id, "approve", "ok");
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&g);
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
}

/* `bulkhead approvals` from a script: list, deny with a reason, and the
 * exit status of an id no longer held. */
static int cli(char *out, size_t len, const char *args)
{
	return harness_sh_into(out, len,
			       "%s approvals --attach '%s' --token-file '%s/op.token' %s 2>&1",
			       BH_TEST_CLI, d.sock, d.dir, args);
}

Test(approvals, the_cli_lists_held_calls_and_decides_them_with_exit_codes, .init = start_required,
     .fini = stop)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/op.token", d.dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%s\n", d.op_token);
	fclose(f);
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token,
			  .session_id = s.id,
			  .code = "print('first line')\nprint('second')"};
	agent_start(&g);
	char id[32];
	held_id(id);

	char out[8192], args[256];
	cr_assert_eq(cli(out, sizeof out, ""), 0, "%s", out);
	cr_expect(strstr(out, "ID ") == out, "no header: %s", out);
	cr_expect(strstr(out, id) != NULL, "the held call is not listed: %s", out);
	cr_expect(strstr(out, "runner") != NULL, "%s", out);
	cr_expect(strstr(out, "print('first line') …") != NULL, "%s", out);
	snprintf(args, sizeof args, "show %s", id);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	cr_expect(strstr(out, "print('first line')\nprint('second')") != NULL, "%s", out);

	cr_expect_eq(cli(out, sizeof out, "deny"), 2, "deny without an id: %s", out);
	snprintf(args, sizeof args, "deny %s", id);
	cr_expect_eq(cli(out, sizeof out, args), 2, "deny without a reason: %s", out);
	cr_expect(strstr(out, "--reason") != NULL, "%s", out);
	snprintf(args, sizeof args, "deny %s --reason 'not in business hours'", id);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	cr_expect(strstr(out, "denied by watcher: not in business hours") != NULL, "%s", out);
	struct answer *a = agent_join(&g);
	cr_expect_eq(a->status, 403, "%s", a->body);
	cr_expect(strstr(a->body, "denied by watcher: not in business hours") != NULL, "%s",
		  a->body);
	answer_free(a);

	snprintf(args, sizeof args, "approve %s", id);
	cr_expect_eq(cli(out, sizeof out, args), 1, "an id already decided: %s", out);
	cr_expect(strstr(out, "no call with id") != NULL, "%s", out);
	cr_expect_eq(cli(out, sizeof out, ""), 0, "%s", out);
	cr_expect(strstr(out, "no call waits for approval") != NULL, "%s", out);
}

/* A raw SessionRun over the unix socket; its connection, for the test to
 * close: an agent that gives up while its call is held. */
static int post_raw(const char *token, const char *body)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(d.sock), sizeof sa.sun_path);
	memcpy(sa.sun_path, d.sock, strlen(d.sock) + 1);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	char head[1024];
	int n = snprintf(head, sizeof head,
			 "POST /" SVC "SessionRun HTTP/1.1\r\nHost: localhost\r\n"
			 "Content-Type: application/json\r\nAuthorization: Bearer %s\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 token, strlen(body), body);
	cr_assert_eq(write(fd, head, (size_t)n), n);
	return fd;
}

Test(approvals, a_held_call_whose_client_hangs_up_is_dropped_and_nothing_runs,
     .init = start_required, .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	char *body = daemon_cell_body(s.id, "python", MARKER_CODE);
	int fd = post_raw(d.run_token, body);
	free(body);
	struct wire_operator_approvals held = wait_held(1);
	wire_operator_approvals_free(&held);
	close(fd); /* the agent gives up */
	char want[65];
	marker_digest(want);
	/* Held first, dropped at the next sweep (every second). */
	char *ev = NULL;
	for (int i = 0; i < 100; i++) {
		free(ev);
		ev = approval_events(want);
		if (strstr(ev, "dropped: "))
			break;
		usleep(100 * 1000);
	}
	cr_expect(strstr(ev, "held (waits up to 60 s)") != NULL, "%s", ev);
	cr_expect(strstr(ev, "dropped: the client went away while it was held; nothing ran") !=
			  NULL,
		  "%s", ev);
	free(ev);
	struct wire_operator_approvals l = list_approvals(d.op_token);
	cr_expect_eq(l.n, 0, "a call nobody waits for is still listed");
	wire_operator_approvals_free(&l);
	cr_expect(!work_has(&s, "approved.txt"), "the dropped call ran");
}

Test(approvals, stopping_the_daemon_refuses_what_is_held, .init = start_required)
{
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token, .session_id = s.id, .code = "print(1)"};
	agent_start(&g);
	struct wire_operator_approvals held = wait_held(1);
	wire_operator_approvals_free(&held);
	kill(d.pid, SIGTERM);
	struct answer *a = agent_join(&g);
	cr_expect_eq(a->status, 503, "%s", a->body);
	cr_expect(strstr(a->body, "shutting down before anyone decided; nothing ran") != NULL, "%s",
		  a->body);
	answer_free(a);
	int st = 0;
	for (int i = 0; i < 200 && waitpid(d.pid, &st, WNOHANG) == 0; i++)
		usleep(50 * 1000);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the daemon did not stop cleanly (%d)",
		  st);
	d.pid = 0;
	daemon_stop(&d);
}

/* The held call's files are listed by name and size, with their text (a
 * NUL byte is refused before anything is held: the unit tests show binary
 * content). */
Test(approvals, a_held_cells_files_are_listed_with_their_text_and_sizes, .init = start_required,
     .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	char body[1024];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"cell\":{\"language\":\"python\","
		 "\"code\":\"print(open('in.csv').read())\",\"files\":["
		 "{\"path\":\"in.csv\",\"content\":\"a,b\\n1,2\\n\"},"
		 "{\"path\":\"notes/todo.md\",\"content\":\"# todo\"}]}}",
		 s.id);
	struct agent g = {.token = d.run_token, .path = SVC "SessionRun", .body = body};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	cr_assert_eq(l.approvals[0].n_files, 2);
	cr_expect_eq(l.approvals[0].code_bytes, strlen("print(open('in.csv').read())"));
	cr_expect(!l.approvals[0].code_omitted);
	cr_assert_eq(l.n_files, 2);
	cr_expect_str_eq(l.files[0].approval, l.approvals[0].id);
	cr_expect_str_eq(l.files[0].name, "in.csv");
	cr_expect_eq(l.files[0].size, 8);
	cr_expect_str_eq(l.files[0].text, "a,b\n1,2\n");
	cr_expect(!l.files[0].binary);
	cr_expect_str_eq(l.files[1].name, "notes/todo.md");
	cr_expect_eq(l.files[1].size, 6);
	cr_expect_str_eq(l.files[1].text, "# todo");
	char id[32];
	snprintf(id, sizeof id, "%s", l.approvals[0].id);
	wire_operator_approvals_free(&l);
	struct answer *a = decide(d.op_token, id, "approve", "");
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&g);
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
}

/* Approved after its session closed: dispatched as if it had just arrived,
 * it is refused as a call after the close would be (the session ended,
 * nothing ran), at once. */
Test(approvals, a_call_approved_after_its_session_closed_is_refused_as_ended,
     .init = start_required, .fini = stop)
{
	struct session s;
	struct agent g;
	char id[32];
	hold_cell(&s, &g, "print(1)", id);
	char body[256];
	snprintf(body, sizeof body, "{\"protocol\":3,\"sessionId\":\"%s\"}", s.id);
	struct answer *a = daemon_call(&d, d.run_token, SVC "CloseSession", body);
	cr_assert_eq(a->status, 200, "the session did not close while its call was held: %s",
		     a->body);
	answer_free(a);
	a = decide(d.op_token, id, "approve", "too late");
	cr_expect_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&g);
	struct wire_error e = error_of(a);
	cr_expect_eq(e.code, WIRE_FAILED_PRECONDITION, "%s", a->body);
	cr_expect(e.not_dispatched && e.session_ended, "%s", a->body);
	cr_expect(strstr(e.message, "the session has ended (closed)") != NULL, "%s", e.message);
	wire_error_free(&e);
	answer_free(a);
}

/* ---- remote: an approval's events are by whoever took each step ---- */

Test(approvals, a_held_calls_events_are_by_its_caller_the_deciding_operator_and_the_desks_clock,
     .init = start_required, .fini = stop)
{
	struct session s;
	struct agent g;
	char id[32], want[65];
	hold_cell(&s, &g, MARKER_CODE, id);
	struct answer *dec = decide(d.op_token, id, "approve", "looked at it");
	cr_assert_eq(dec->status, 200, "%s", dec->body);
	char rid[80];
	snprintf(rid, sizeof rid, "%s", dec->request_id);
	answer_free(dec);
	answer_free(agent_join(&g));
	marker_digest(want);
	char *ev = approval_lines(want, true);
	cr_expect_str_eq(ev, "runner rid held \nwatcher rid approved by watcher\n", "%s", ev);
	free(ev);
	/* The decision's event carries the DecideApproval call's request id. */
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListEvents", "{\"newest\":true}");
	char tied[160];
	snprintf(tied, sizeof tied, "\"requestId\":\"%s\"", rid);
	cr_expect(strstr(a->body, tied) != NULL, "no event carries %s: %s", rid, a->body);
	answer_free(a);
}

Test(approvals, a_call_that_timed_out_is_the_desks_clocks_event, .init = start_short, .fini = stop)
{
	struct session s;
	open_session(&s, d.run_token);
	struct agent g = {.token = d.run_token, .session_id = s.id, .code = MARKER_CODE};
	agent_start(&g);
	answer_free(agent_join(&g));
	char want[65];
	marker_digest(want);
	char *ev = approval_lines(want, true);
	cr_expect_str_eq(ev, "runner rid held \npolicy:approval_timeout - no one approved within 1 s\n",
			 "%s", ev);
	free(ev);
}

/* ---- egress: a project run is held like a code call ---- */

/* Under --approval required a session's project run waits for the person:
 * the approval row names it a project with its steps one a line and its
 * files, and the request digest its record will carry; approved, it runs
 * and answers as if never held. A one-shot Run's project is held as well,
 * and denied it is refused with nothing run. */
Test(approvals, a_project_run_is_held_listing_its_steps_and_runs_only_once_approved,
     .init = start_required, .fini = stop, .timeout = 120)
{
	struct session s;
	open_session(&s, d.run_token);
	char body[1024];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"project\":{"
		 "\"files\":[{\"path\":\"in.txt\",\"content\":\"seed\"}],"
		 "\"steps\":[\"cat in.txt > approved.txt\",\"echo built\"],"
		 "\"artifacts\":[\"approved.txt\"]}}",
		 s.id);
	struct agent g = {.token = d.run_token, .path = SVC "SessionRun", .body = body};
	agent_start(&g);
	struct wire_operator_approvals l = wait_held(1);
	const struct wire_operator_approval *h = &l.approvals[0];
	cr_expect_str_eq(h->procedure, "SessionRun");
	cr_expect_str_eq(h->session, s.fp);
	cr_expect_str_eq(h->kind, "project");
	cr_expect_str_eq(h->language, "");
	cr_expect_str_eq(h->code, "$ cat in.txt > approved.txt\n$ echo built\n");
	cr_assert_eq(l.n_files, 1);
	cr_expect_str_eq(l.files[0].name, "in.txt");
	cr_expect_str_eq(l.files[0].text, "seed");
	char id[32], digest[65];
	snprintf(id, sizeof id, "%s", h->id);
	snprintf(digest, sizeof digest, "%s", h->request_sha256);
	wire_operator_approvals_free(&l);
	/* `bulkhead approvals show` names it a project and lists its steps */
	char path[4200], out[8192], args[256];
	snprintf(path, sizeof path, "%s/op.token", d.dir);
	FILE *tf = fopen(path, "w");
	cr_assert_not_null(tf);
	fprintf(tf, "%s\n", d.op_token);
	fclose(tf);
	snprintf(args, sizeof args, "show %s", id);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	cr_expect(strstr(out, ", project)\nrequest ") != NULL, "%s", out);
	cr_expect(strstr(out, "--- steps (") != NULL, "%s", out);
	cr_expect(strstr(out, "$ cat in.txt > approved.txt\n$ echo built\n") != NULL, "%s", out);
	usleep(300 * 1000);
	cr_assert(!work_has(&s, "approved.txt"), "the held project ran before approval");

	struct answer *a = decide(d.op_token, id, "approve", "builds one file");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&g);
	cr_assert_eq(a->status, 200, "the approved project did not answer: %s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.has_run && r.run.has_record, "%s", a->body);
	cr_expect_str_eq(r.run.result.kind, "project");
	cr_expect_eq(r.run.result.outcome, BH_PROJECT_COMPLETED, "%s", a->body);
	cr_expect_eq(r.run.result.n_steps, 2);
	cr_expect_str_eq(r.run.record.request_sha256, digest,
			 "the held row named another request digest than the record's");
	cr_expect(bh_record_verify(&r.run.record));
	wire_session_run_response_free(&r);
	answer_free(a);
	cr_expect(work_has(&s, "approved.txt"), "the approved project did not run");
	char *ev = approval_events(digest);
	cr_expect(strstr(ev, "approved by watcher; request ") != NULL, "%s", ev);
	free(ev);

	/* A one-shot Run's project: held, denied, nothing ran. */
	struct agent one = {.token = d.run_token,
			    .path = SVC "Run",
			    .body = "{\"protocol\":3,\"project\":{\"steps\":[\"echo never\"]}}"};
	agent_start(&one);
	l = wait_held(1);
	cr_expect_str_eq(l.approvals[0].procedure, "Run");
	cr_expect_str_eq(l.approvals[0].kind, "project");
	cr_expect_str_eq(l.approvals[0].code, "$ echo never\n");
	snprintf(id, sizeof id, "%s", l.approvals[0].id);
	wire_operator_approvals_free(&l);
	a = decide(d.op_token, id, "deny", "not today");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = agent_join(&one);
	cr_assert_eq(a->status, 403, "%s", a->body);
	struct wire_error e = error_of(a);
	cr_expect(strstr(e.message, "denied by watcher: not today; nothing ran") != NULL, "%s",
		  e.message);
	wire_error_free(&e);
	answer_free(a);
}
