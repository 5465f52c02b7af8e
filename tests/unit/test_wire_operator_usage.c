/* Usage on the wire (docs/api.md): what the daemon writes for every live
 * session's sample and the host, read back whole by the decoder the client
 * and the console share, and the malformed answers it refuses, naming the
 * method and the field. */
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY(s) (s), strlen(s)
#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define assert_refused(st, needle)                                                                 \
	do {                                                                                       \
		cr_assert_eq((st).code, WIRE_DATA_LOSS, "code %s (%s)", wire_code_name((st).code), \
			     (st).msg);                                                            \
		cr_assert(strstr((st).msg, (needle)), "message \"%s\" does not say \"%s\"",        \
			  (st).msg, (needle));                                                     \
	} while (0)

/* Padding zeroed, so the structs compare whole. */
static void sample(struct bh_session_usage *s)
{
	memset(s, 0, sizeof *s);
	memcpy(s->fingerprint, FP, sizeof FP);
	s->tier = BH_TIER_KERNEL;
	s->state = BH_SESSION_BUSY;
	s->measured = true;
	s->sampled_unix_ms = 1700000000123;
	s->cpu_millicores = 875;
	s->memory_bytes = 230u << 20;
	s->memory_limit_bytes = 512u << 20;
	s->memory_peak_bytes = 240u << 20;
	s->pids = 9;
	s->disk_bytes = 3u << 20;
	s->disk_unix_ms = 1700000000100;
	s->calls_last_minute = 14;
	s->n_history = 2;
	const int64_t at[2] = {1700000000000, 1700000005000};
	const uint32_t cpu[2] = {10, 990};
	const uint64_t mem[2] = {40u << 20, 230u << 20};
	for (size_t i = 0; i < 2; i++) {
		s->history[i].at_unix_ms = at[i];
		s->history[i].cpu_millicores = cpu[i];
		s->history[i].memory_bytes = mem[i];
	}
}

Test(wire_operator_usage, an_answer_round_trips_every_field_and_its_history_oldest_first)
{
	struct bh_session_usage s;
	sample(&s);
	struct wire_operator_usage in;
	memset(&in, 0, sizeof in);
	in.version = "0.1.0";
	in.host.load_milli[0] = 180;
	in.host.load_milli[1] = 750;
	in.host.load_milli[2] = 1290;
	in.host.mem_total_bytes = 24ull << 30;
	in.host.mem_available_bytes = 20ull << 30;
	in.host.budget_held_bytes = 1ull << 30;
	in.host.budget_bytes = 8ull << 30;
	in.host.sandboxes_used_bytes = 230u << 20;
	in.host.images_bytes = 4u << 20;
	in.host.images_budget_bytes = 2ull << 30;
	in.host.started_unix_ms = 1699999990000;
	in.host.now_unix_ms = 1700000000200;
	in.sessions = &s;
	in.n = 1;
	char *json = wire_operator_encode_usage(&in);
	cr_assert(strstr(json,
			 "\"isolation\":\"kernel\",\"state\":\"busy\",\"session\":\"" FP "\""),
		  "%s", json);
	cr_assert(strstr(json, "\"memoryBytes\":\"241172480\""), "64-bit as strings: %s", json);
	struct wire_operator_usage out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_usage(BODY(json), &out, &st), 0, "%s", st.msg);
	cr_assert_str_eq(out.version, "0.1.0");
	cr_assert_eq(memcmp(&out.host, &in.host, sizeof in.host), 0);
	cr_assert_eq(out.n, 1);
	cr_assert_eq(memcmp(&out.sessions[0], &s, sizeof s), 0, "the session did not round-trip");
	char *again = wire_operator_encode_usage(&out);
	cr_assert_str_eq(again, json);
	free(again);
	free(json);
	wire_operator_usage_free(&out);
}

Test(wire_operator_usage, no_sessions_is_an_empty_list_written)
{
	struct wire_operator_usage in = {.version = "0.1.0"};
	char *json = wire_operator_encode_usage(&in);
	cr_assert_str_eq(json, "{\"version\":\"0.1.0\",\"sessions\":[]}");
	free(json);
}

static void refused(const char *json, const char *needle)
{
	struct wire_operator_usage out;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_usage(BODY(json), &out, &st), -1, "accepted %s", json);
	assert_refused(st, "Usage: ");
	assert_refused(st, needle);
	cr_assert_null(out.sessions);
	cr_assert_eq(out.n, 0);
}

Test(wire_operator_usage, malformed_answers_are_refused_naming_the_field)
{
	refused("[]", "");
	refused("{\"sessions\":{}}", "sessions");
	refused("{\"sessions\":[{\"isolation\":\"moon\",\"state\":\"ready\"}]}",
		"sessions[0].isolation \"moon\" is not an isolation");
	refused("{\"sessions\":[{\"isolation\":\"kernel\",\"state\":\"napping\"}]}",
		"sessions[0].state \"napping\" is not a session state");
	refused("{\"sessions\":[{\"state\":\"ready\"}]}", "sessions[0].isolation");
	refused("{\"sessions\":[{\"isolation\":\"kernel\",\"state\":\"ready\",\"session\":\"" FP
		"0\"}]}",
		"longer than a SHA-256 hex digest");
	refused("{\"sessions\":[{\"isolation\":\"kernel\",\"state\":\"ready\",\"pids\":\"x\"}]}",
		"sessions[0].pids");
	refused("{\"sessions\":[{\"isolation\":\"kernel\",\"state\":\"ready\",\"memoryBytes\":1.5}]}",
		"sessions[0].memoryBytes");
	refused("{\"load1Milli\":-1,\"sessions\":[]}", "load1Milli");
	refused("{\"version\":7,\"sessions\":[]}", "version");
	/* A minute's ring holds twelve points: thirteen is not a sample. */
	char body[4096];
	size_t o = (size_t)snprintf(body, sizeof body,
				    "{\"sessions\":[{\"isolation\":\"kernel\",\"state\":\"ready\","
				    "\"history\":[");
	for (int i = 0; i < BH_USAGE_HISTORY + 1; i++)
		o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"atUnixMs\":\"%d\"}",
				      i ? "," : "", i + 1);
	snprintf(body + o, sizeof body - o, "]}]}");
	refused(body, "sessions[0].history holds 13 points");
}
