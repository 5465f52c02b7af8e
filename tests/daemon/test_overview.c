/* Overview over a real daemon (light, B27): the console's one request a
 * refresh. Without a token it answers at once with the sessions, the usage
 * and the held calls' count; with the token it last gave it is a long poll
 * that a change (a session opened) wakes before its wait ends, that answers
 * its token alone when nothing changed, and that the daemon cuts at its cap
 * whatever the wait asked. The times asserted are the poll's contract
 * (woken early, held no longer than the cap), each with slack. */
#include "daemon_harness.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void stop(void) { daemon_stop(&d); }
static void start(void) { daemon_start(&d, "--tier container"); }

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Overview with a token and a wait, decoded with the console's codec. */
static void overview(const char *token, uint32_t wait_ms, struct wire_operator_overview *out)
{
	struct wire_operator_overview_request req = {.token = token, .wait_ms = wait_ms};
	char *body = wire_operator_encode_overview_request(&req);
	struct answer *a = daemon_call(&d, d.op_token, OPS "Overview", body);
	free(body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_overview(a->body, a->len, out, &st), 0, "%s: %s", st.msg,
		     a->body);
	answer_free(a);
}

Test(overview, without_a_token_it_answers_at_once_with_the_sessions_usage_and_uptime,
     .init = start, .fini = stop)
{
	struct daemon_session s;
	daemon_open_session(&d, &s);
	struct wire_operator_overview o;
	overview(NULL, 5000, &o);
	cr_assert(o.changed);
	cr_assert_eq(o.sessions.n, 1);
	cr_assert_str_eq(o.sessions.sessions[0].fingerprint, s.fp);
	cr_assert_str_eq(o.sessions.sessions[0].call_code, "", "a list stays light");
	cr_assert_eq(o.usage.n, 1);
	cr_assert_str_eq(o.usage.sessions[0].fingerprint, s.fp);
	cr_assert_str_eq(o.usage.version, BULKHEAD_VERSION);
	cr_assert_eq(o.approvals_waiting, 0);
	cr_assert_neq(o.usage.host.started_unix_ms, 0);
	wire_operator_overview_free(&o);
}

struct poll_arg {
	const char *token;
	uint32_t wait_ms;
	struct wire_operator_overview got;
	uint64_t answered_ms;
};

static void *poll_thread(void *p)
{
	struct poll_arg *a = p;
	overview(a->token, a->wait_ms, &a->got);
	a->answered_ms = mono_ms();
	return NULL;
}

Test(overview, a_session_opened_wakes_a_waiting_poll_before_its_wait_ends, .init = start,
     .fini = stop)
{
	struct wire_operator_overview first;
	overview(NULL, 0, &first);
	cr_assert_eq(first.sessions.n, 0);
	struct poll_arg a = {.token = first.token, .wait_ms = WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, poll_thread, &a), 0);
	struct timespec pause = {0, 300 * 1000 * 1000};
	nanosleep(&pause, NULL); /* the poll is parked by now (or answers the open either way) */
	struct daemon_session s;
	daemon_open_session(&d, &s);
	uint64_t opened = mono_ms();
	pthread_join(t, NULL);
	cr_assert(a.got.changed, "the poll answered without the change");
	cr_assert_eq(a.got.sessions.n, 1);
	cr_assert_str_eq(a.got.sessions.sessions[0].fingerprint, s.fp);
	cr_assert_str_neq(a.got.token, first.token);
	/* Woken by the change: well before the 5 s wait it asked for. */
	uint64_t after = a.answered_ms > opened ? a.answered_ms - opened : 0;
	cr_assert_lt(after, 3000, "the poll answered %llu ms after the open", (unsigned long long)after);
	wire_operator_overview_free(&a.got);
	wire_operator_overview_free(&first);
}

Test(overview, an_unchanged_poll_waits_then_answers_its_token_alone_and_the_cap_bounds_the_wait,
     .init = start, .fini = stop)
{
	struct wire_operator_overview first;
	overview(NULL, 0, &first);
	uint64_t t0 = mono_ms();
	struct wire_operator_overview same;
	overview(first.token, 600, &same);
	uint64_t waited = mono_ms() - t0;
	cr_assert_not(same.changed);
	cr_assert_str_eq(same.token, first.token);
	cr_assert_eq(same.sessions.n, 0);
	cr_assert_geq(waited, 500, "an unchanged poll answered after %llu ms, not its wait",
		      (unsigned long long)waited);
	wire_operator_overview_free(&same);
	/* Ten minutes asked: the daemon holds it no longer than its cap. */
	t0 = mono_ms();
	overview(first.token, 600000, &same);
	waited = mono_ms() - t0;
	cr_assert_not(same.changed);
	cr_assert_leq(waited, WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS + 2000, "held %llu ms",
		      (unsigned long long)waited);
	wire_operator_overview_free(&same);
	wire_operator_overview_free(&first);
}

Test(overview, a_malformed_request_is_refused_as_the_callers_mistake, .init = start, .fini = stop)
{
	struct answer *a = daemon_call(&d, d.op_token, OPS "Overview", "{\"token\":\"t\",\"wait\":5}");
	cr_assert_eq(a->status, 400, "%s", a->body);
	cr_assert(strstr(a->body, "\\\"wait\\\" is not a member"), "%s", a->body);
	answer_free(a);
	/* And only an operator asks. */
	a = daemon_call(&d, d.run_token, OPS "Overview", "{}");
	cr_assert_eq(a->status, 403, "%s", a->body);
	answer_free(a);
}
