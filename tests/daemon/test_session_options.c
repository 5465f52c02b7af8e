/* What plimsoll's own clients read and ask of a daemon, checked where they
 * look: OpenSession's idleTimeoutMs (a shorter one honoured, the answer
 * stating the window in effect), endDetail on the answer of a call that
 * ended its session, and Describe's projectEnvironment. */
#include "daemon_harness.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void stop(void) { daemon_stop(&d); }

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct opened {
	char id[64], fp[65];
	uint32_t idle_ms;
};

static struct opened open_with(const char *body)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", body);
	cr_assert_eq(a->status, 200, "%s: %s", body, a->body);
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	struct opened o = {.idle_ms = r.idle_timeout_ms};
	snprintf(o.id, sizeof o.id, "%s", r.session_id);
	snprintf(o.fp, sizeof o.fp, "%s", r.session);
	wire_open_session_response_free(&r);
	answer_free(a);
	return o;
}

/* One python cell; the decoded answer (caller frees) or NULL with *a kept. */
static struct answer *cell_call(const struct opened *s, const char *code)
{
	return daemon_cell(&d, d.run_token, s->id, "python", code);
}

static void state_of(const struct opened *s, char *out, size_t n)
{
	char body[128];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", s->fp);
	struct answer *a = daemon_call(&d, d.op_token, OPS "GetSession", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	const char *k = strstr(a->body, "\"state\":\"");
	cr_assert_not_null(k, "%s", a->body);
	k += 9;
	size_t len = strcspn(k, "\"");
	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), k);
	answer_free(a);
}

/* The daemon's idle window is 5 minutes; a session that asks for 1.5 s is
 * paused on its own schedule (stated slack: 6 s), one that names none gets
 * the daemon's, a longer one is held to the daemon's, and one under a
 * second gets plimsoll's floor of one second. */
Test(session_options, open_session_honours_a_shorter_idle_timeout_and_reports_the_one_in_effect,
     .fini = stop)
{
	daemon_start(&d, "--tier container");
	struct opened dflt = open_with("{\"protocol\":3}");
	cr_assert_eq(dflt.idle_ms, 300000, "the daemon's own idle window: %u", dflt.idle_ms);
	struct opened longer = open_with("{\"protocol\":3,\"idleTimeoutMs\":86400000}");
	cr_assert_eq(longer.idle_ms, 300000, "a longer idle window than the daemon's: %u",
		     longer.idle_ms);
	struct opened tiny = open_with("{\"protocol\":3,\"idleTimeoutMs\":200}");
	cr_assert_eq(tiny.idle_ms, 1000, "under the 1 s floor: %u", tiny.idle_ms);
	struct opened s = open_with("{\"protocol\":3,\"idleTimeoutMs\":1500}");
	cr_assert_eq(s.idle_ms, 1500, "the answer does not report the shorter window: %u", s.idle_ms);

	struct answer *a = cell_call(&s, "x = 42");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	double called = now_s();
	char st[32];
	state_of(&s, st, sizeof st);
	cr_assert_str_eq(st, "ready", "paused before its idle window passed");
	while (now_s() - called < 1.5 + 6.0) {
		state_of(&s, st, sizeof st);
		if (!strcmp(st, "paused"))
			break;
		usleep(100 * 1000);
	}
	double paused_after = now_s() - called;
	cr_assert_str_eq(st, "paused", "not paused %.1f s after its last call (idle 1.5 s)",
			 paused_after);
	cr_assert_geq(paused_after, 1.4, "paused after %.2f s, before its 1.5 s window", paused_after);
	state_of(&dflt, st, sizeof st);
	cr_assert_str_eq(st, "ready", "a session with the daemon's 5 min window is %s", st);

	/* It resumes with its state, and its next idle period is as short. */
	a = cell_call(&s, "print(x)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);

	/* Unclaimed (no call named it) with a short window: closed on that
	 * schedule, and its first call learns why. */
	struct opened idle = open_with("{\"protocol\":3,\"idleTimeoutMs\":1000}");
	usleep((1000 + 4000) * 1000);
	a = cell_call(&idle, "print(1)");
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert(e.session_ended && e.end == WIRE_END_UNCLAIMED,
		  "an unclaimed 1 s session still open after 5 s: %ld %s", a->status, a->body);
	wire_error_free(&e);
	answer_free(a);
}

/* The call that crossed the disk budget is answered, with ended set and the
 * reason in endDetail; the next call's refusal says the same. */
Test(session_options, the_answer_that_ends_a_session_over_its_disk_budget_says_why, .fini = stop)
{
	daemon_start(&d, "--tier container --session-disk 8");
	struct opened s = open_with("{\"protocol\":3}");
	struct answer *a =
		cell_call(&s, "open('/work/big', 'wb').write(b'x' * (9 << 20))\nprint('wrote')");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.ended, WIRE_END_DISK_EXCEEDED, "%s", a->body);
	cr_assert_str_neq(r.end_detail, "", "endDetail is empty on a disk_exceeded answer: %s",
			  a->body);
	cr_assert_not_null(strstr(r.end_detail, "9 MiB"), "%s", r.end_detail);
	cr_assert_not_null(strstr(r.end_detail, "budget is 8 MiB"), "%s", r.end_detail);
	wire_session_run_response_free(&r);
	answer_free(a);
	a = cell_call(&s, "print(1)");
	struct wire_error e;
	wire_decode_error((int)a->status, a->body, a->len, &e);
	cr_assert(e.session_ended && e.end == WIRE_END_DISK_EXCEEDED, "%s", a->body);
	cr_assert_not_null(strstr(e.end_detail, "budget is 8 MiB"), "the refusal's detail: %s",
			   e.end_detail);
	wire_error_free(&e);
	answer_free(a);
}

/* plimsoll's CodeSandboxes checks a cell's language against
 * Describe's projectEnvironment.languages before it sends the cell (and
 * runs a fresh call as a project when supportsProject is true). */
Test(session_options, describe_states_the_cell_languages_where_plimsolls_clients_look, .fini = stop)
{
	daemon_start(&d, "--tier container");
	struct answer *a = daemon_call(&d, d.run_token, SVC "Describe", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *j = cJSON_Parse(a->body);
	cr_assert_not_null(j, "%s", a->body);
	cJSON *pe = cJSON_GetObjectItem(j, "projectEnvironment");
	cr_assert(cJSON_IsObject(pe), "no projectEnvironment: %s", a->body);
	cJSON *langs = cJSON_GetObjectItem(pe, "languages");
	cr_assert(cJSON_IsArray(langs) && cJSON_GetArraySize(langs) == 2,
		  "projectEnvironment.languages: %s", a->body);
	cr_assert_str_eq(cJSON_GetArrayItem(langs, 0)->valuestring, "javascript");
	cr_assert_str_eq(cJSON_GetArrayItem(langs, 1)->valuestring, "python");
	/* ---- project: projects run here now (tests/daemon/test_project.c) ---- */
	cJSON *sp = cJSON_GetObjectItem(j, "supportsProject");
	cr_assert(cJSON_IsTrue(sp), "project payloads run here: %s", a->body);
	cJSON_Delete(j);
	answer_free(a);
}
