/* bulkhead.v1.OperatorService/Usage over a real daemon: only the operator
 * scope is answered; the answer holds every live session's usage (a cell
 * holding 200 MiB shows), the host's figures and the daemon's version and
 * start, in the codec's shape; /metrics carries the same per sandbox. */
#include "daemon_harness.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"
#define MiB (1024ull * 1024ull)

static struct daemon d;

static void stop(void)
{
	daemon_stop(&d);
}

static void start(void)
{
	daemon_start(&d, "--tier container");
}

static void member(const char *json, const char *name, char *out, size_t n)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":\"", name);
	const char *k = strstr(json, key);
	cr_assert_not_null(k, "no %s in %s", name, json);
	k += strlen(key);
	snprintf(out, n, "%.*s", (int)strcspn(k, "\""), k);
}

Test(daemon_usage, usage_needs_the_operator_scope, .init = start, .fini = stop)
{
	struct answer *a = daemon_call(&d, NULL, OPS "Usage", "{}");
	cr_assert_eq(a->status, 401, "%s", a->body);
	answer_free(a);
	a = daemon_call(&d, d.run_token, OPS "Usage", "{}");
	cr_assert_eq(a->status, 403, "%s", a->body);
	cr_assert(strstr(a->body, "operator"), "the refusal does not name the scope: %s", a->body);
	answer_free(a);
}

Test(daemon_usage, usage_answers_every_live_session_and_the_host_in_one_call, .init = start,
     .fini = stop, .timeout = 300)
{
	/* None yet: an empty list, written. */
	struct answer *a = daemon_call(&d, d.op_token, OPS "Usage", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert(strstr(a->body, "\"sessions\":[]"), "%s", a->body);
	cr_assert(strstr(a->body, "\"version\":\"" BULKHEAD_VERSION "\""), "%s", a->body);
	answer_free(a);

	a = daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	char id[64], fp[65];
	member(a->body, "sessionId", id, sizeof id);
	member(a->body, "session", fp, sizeof fp);
	answer_free(a);
	a = daemon_cell(&d, d.run_token, id, "python", "x = bytearray(200 * 1024 * 1024)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);

	a = daemon_call(&d, d.op_token, OPS "Usage", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_usage u;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_usage(a->body, a->len, &u, &st), 0, "%s", st.msg);
	cr_assert_str_eq(u.version, BULKHEAD_VERSION);
	cr_assert_gt(u.host.started_unix_ms, 0);
	cr_assert_geq(u.host.now_unix_ms, u.host.started_unix_ms);
	cr_assert_gt(u.host.mem_total_bytes, 0);
	cr_assert_geq(u.host.budget_bytes, u.host.budget_held_bytes);
	cr_assert_geq(u.host.budget_held_bytes, 512 * MiB);
	cr_assert_eq(u.n, 1, "%s", a->body);
	const struct bh_session_usage *s = &u.sessions[0];
	cr_assert_str_eq(s->fingerprint, fp);
	cr_assert_eq(s->tier, BH_TIER_CONTAINER);
	cr_assert_eq(s->state, BH_SESSION_READY);
	cr_assert(s->measured);
	cr_assert_geq(s->memory_bytes, 200 * MiB, "%s", a->body);
	cr_assert_eq(s->memory_limit_bytes, 512 * MiB);
	cr_assert_geq(s->pids, 2);
	cr_assert_eq(s->calls_last_minute, 1);
	cr_assert_gt(s->disk_unix_ms, 0);
	wire_operator_usage_free(&u);
	answer_free(a);

	/* /metrics: the same sandbox, labelled by its fingerprint's prefix. */
	struct answer *m = daemon_get_as(&d, d.op_token, "/metrics");
	cr_assert_eq(m->status, 200);
	char want[128];
	snprintf(want, sizeof want,
		 "bulkhead_sandbox_memory_bytes{session=\"%.12s\",tier=\"container\"} ", fp);
	const char *line = strstr(m->body, want);
	cr_assert_not_null(line, "%s", m->body);
	cr_assert_geq(strtoull(line + strlen(want), NULL, 10), 200 * MiB);
	snprintf(want, sizeof want,
		 "bulkhead_sandbox_calls_last_minute{session=\"%.12s\",tier=\"container\"} 1\n",
		 fp);
	cr_assert(strstr(m->body, want), "%s", m->body);
	cr_assert(strstr(m->body, "bulkhead_sandbox_series_folded 0\n"), "%s", m->body);
	cr_assert(strstr(m->body, "bulkhead_build_info{version=\"" BULKHEAD_VERSION "\"} 1\n"));
	cr_assert(strstr(m->body, "bulkhead_host_load{window=\"1m\"} "));
	cr_assert(strstr(m->body, "bulkhead_memory_budget_bytes{kind=\"held\"} "));
	cr_assert(strstr(m->body, "bulkhead_uptime_seconds "));
	answer_free(m);
}

/* `bulkhead usage` asks the daemon once and prints the host and a row per
 * live session; --json is the answer as the API gives it. */
Test(daemon_usage, the_usage_command_prints_the_host_and_a_row_per_live_session, .init = start,
     .fini = stop, .timeout = 300)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	char fp[65];
	member(a->body, "session", fp, sizeof fp);
	answer_free(a);
	char cmd[9000], out[8192] = "";
	snprintf(cmd, sizeof cmd, "BULKHEAD_TOKEN='%s' %s usage --attach '%s' 2>&1", d.op_token,
		 BH_TEST_CLI, d.sock);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	cr_assert_eq(pclose(f), 0, "%s", out);
	cr_assert(strstr(out, "daemon " BULKHEAD_VERSION ", up "), "%s", out);
	cr_assert(strstr(out, "sandboxes' memory budget: 512 of "), "%s", out);
	char row[32];
	snprintf(row, sizeof row, "%.12s ready", fp);
	cr_assert(strstr(out, row), "no row for the session: %s", out);
	cr_assert(strstr(out, "512.0"), "the limit is not shown: %s", out);

	/* Without the operator scope: refused, naming it. */
	snprintf(cmd, sizeof cmd, "BULKHEAD_TOKEN='%s' %s usage --attach '%s' 2>&1", d.run_token,
		 BH_TEST_CLI, d.sock);
	f = popen(cmd, "r");
	n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	cr_assert_neq(pclose(f), 0, "%s", out);
	cr_assert(strstr(out, "operator"), "%s", out);
}

/* ---- light: /metrics' cardinality cap past 32 live sessions ----
 * A series per sandbox for the 32 that use the most memory; every one past
 * them is summed into session="_other" (one series, whatever their number),
 * and bulkhead_sandbox_series_folded says how many were folded. The memory
 * limit each holds is the same for all, so _other's limit is exactly the
 * folded ones' limits summed. */
static void start_roomy(void)
{
	daemon_start(&d, "--tier container --max-sessions 40 --per-principal 40 --sandbox-memory 64");
}

static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, prefix)); p++)
		n += p == text || p[-1] == '\n';
	return n;
}

Test(daemon_usage, metrics_keep_32_sandbox_series_and_fold_the_rest_into_other,
     .init = start_roomy, .fini = stop, .timeout = 600)
{
	enum { OPENED = 35 };
	for (int i = 0; i < OPENED; i++) {
		struct daemon_session s;
		daemon_open_session(&d, &s);
	}
	struct answer *a = daemon_get_as(&d, d.op_token, "/metrics");
	cr_assert_eq(a->status, 200, "%s", a->body);
	const char *m = a->body;
	cr_assert_eq(count_lines(m, "bulkhead_sandbox_memory_bytes{session=\""), 33,
		     "not 32 sandboxes and _other:\n%s", m);
	cr_assert_eq(count_lines(m, "bulkhead_sandbox_memory_bytes{session=\"_other\""), 1, "%s", m);
	cr_assert_eq(count_lines(m, "bulkhead_sandbox_pids{session=\""), 33, "%s", m);
	cr_assert_eq(count_lines(m, "bulkhead_sandbox_series_folded 3\n"), 1,
		     "three sessions past the 32 are not said to be folded:\n%s", m);
	char want[128];
	snprintf(want, sizeof want, "bulkhead_sandbox_memory_limit_bytes{session=\"_other\",tier=\"\"} %llu\n",
		 3ull * 64 * MiB);
	cr_assert(strstr(m, want), "_other is not the folded ones' sum (%s):\n%s", want, m);
	answer_free(a);
}
