/* Usage answers: what each live session's sandbox uses (read from its host
 * cgroup by the engine, src/engine/usage.c) and the host's and daemon's
 * figures, for the console's columns and header. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

#define USAGE(member) WIRE_AT(struct wire_operator_usage, member)
static const struct wire_field usage_fields[] = {
	{"version", WIRE_F_STR, USAGE(version)},
	{"startedUnixMs", WIRE_F_I64, USAGE(host.started_unix_ms)},
	{"nowUnixMs", WIRE_F_I64, USAGE(host.now_unix_ms)},
	{"load1Milli", WIRE_F_U32, USAGE(host.load_milli[0])},
	{"load5Milli", WIRE_F_U32, USAGE(host.load_milli[1])},
	{"load15Milli", WIRE_F_U32, USAGE(host.load_milli[2])},
	{"memTotalBytes", WIRE_F_U64, USAGE(host.mem_total_bytes)},
	{"memAvailableBytes", WIRE_F_U64, USAGE(host.mem_available_bytes)},
	{"budgetHeldBytes", WIRE_F_U64, USAGE(host.budget_held_bytes)},
	{"budgetBytes", WIRE_F_U64, USAGE(host.budget_bytes)},
	{"sandboxesUsedBytes", WIRE_F_U64, USAGE(host.sandboxes_used_bytes)},
	{"imagesBytes", WIRE_F_U64, USAGE(host.images_bytes)},
	{"imagesBudgetBytes", WIRE_F_U64, USAGE(host.images_budget_bytes)},
};
#undef USAGE

/* A session's fields after its isolation and state (read by their names). */
#define SESSION(member) WIRE_AT(struct bh_session_usage, member)
static const struct wire_field session_fields[] = {
	{"session", WIRE_F_DIGEST, SESSION(fingerprint)},
	{"measured", WIRE_F_BOOL, SESSION(measured)},
	{"sampledUnixMs", WIRE_F_I64, SESSION(sampled_unix_ms)},
	{"cpuMillicores", WIRE_F_U32, SESSION(cpu_millicores)},
	{"memoryBytes", WIRE_F_U64, SESSION(memory_bytes)},
	{"memoryLimitBytes", WIRE_F_U64, SESSION(memory_limit_bytes)},
	{"memoryPeakBytes", WIRE_F_U64, SESSION(memory_peak_bytes)},
	{"pids", WIRE_F_U32, SESSION(pids)},
	{"diskBytes", WIRE_F_U64, SESSION(disk_bytes)},
	{"diskUnixMs", WIRE_F_I64, SESSION(disk_unix_ms)},
	{"callsLastMinute", WIRE_F_U32, SESSION(calls_last_minute)},
};
#undef SESSION

#define POINT(member) WIRE_AT(struct bh_usage_point, member)
static const struct wire_field point_fields[] = {
	{"atUnixMs", WIRE_F_I64, POINT(at_unix_ms)},
	{"cpuMillicores", WIRE_F_U32, POINT(cpu_millicores)},
	{"memoryBytes", WIRE_F_U64, POINT(memory_bytes)},
};
#undef POINT

static const struct op_items point_list =
	OP_FIELD_ITEMS("history", struct bh_usage_point, point_fields);

char *wire_operator_encode_usage(const struct wire_operator_usage *u)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(usage_fields), u);
	cJSON *list = op_list(o, "sessions");
	for (size_t i = 0; i < u->n; i++) {
		const struct bh_session_usage *s = &u->sessions[i];
		cJSON *x = jw_object();
		jw_string(x, "isolation", bh_tier_name(s->tier));
		jw_string(x, "state", bh_session_state_name(s->state));
		wire_fields_json(x, WIRE_FIELDS(session_fields), s);
		size_t n = s->n_history < BH_USAGE_HISTORY ? s->n_history : BH_USAGE_HISTORY;
		op_items_json(x, &point_list, s->history, n);
		cJSON_AddItemToArray(list, x);
	}
	return jw_print(o);
}

void wire_operator_usage_free(struct wire_operator_usage *u)
{
	if (!u)
		return;
	wire_fields_free(WIRE_FIELDS(usage_fields), u);
	free(u->sessions);
	memset(u, 0, sizeof *u);
}

/* A name the engine's vocabulary knows, or a refusal naming it. */
static int read_name(const struct jr *r, const cJSON *o, const char *path, const char *name,
		     int (*parse)(const char *, void *), void *out, const char *what)
{
	cleanup_free char *v = NULL;
	if (jr_string(r, o, path, name, &v, NULL) < 0)
		return -1;
	if (parse(v, out) == 0)
		return 0;
	char q[64];
	return jr_fail(r, "%s.%s %s is not %s this build knows", path, name,
		       wire_quote(q, v, strlen(v)), what);
}

static int parse_tier(const char *name, void *out)
{
	return bh_tier_parse(name, out);
}

static int parse_state(const char *name, void *out)
{
	return bh_session_state_parse(name, out);
}

static int read_session(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_session_usage *out = item;
	memset(out, 0, sizeof *out);
	if (read_name(r, o, path, "isolation", parse_tier, &out->tier, "an isolation") < 0 ||
	    read_name(r, o, path, "state", parse_state, &out->state, "a session state") < 0 ||
	    wire_fields_read(r, o, path, WIRE_FIELDS(session_fields), out) < 0)
		return -1;
	void *points = NULL;
	size_t n = 0;
	int rc = op_read_items(r, o, path, &point_list, &points, &n);
	if (rc == 0 && n > BH_USAGE_HISTORY)
		rc = jr_fail(r, "%s.history holds %zu points; a minute's ring holds at most %d",
			     path, n, BH_USAGE_HISTORY);
	if (rc == 0) {
		memcpy(out->history, points, n * sizeof *out->history);
		out->n_history = n;
	}
	free(points);
	return rc;
}

static int read_usage_rest(const struct jr *r, const cJSON *root, void *out)
{
	return wire_fields_read(r, root, "", WIRE_FIELDS(usage_fields), out);
}

int wire_operator_decode_usage(const char *body, size_t len, struct wire_operator_usage *out,
			       struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	static const struct op_items sessions = {.name = "sessions",
						 .size = sizeof(struct bh_session_usage),
						 .read = read_session};
	int rc = op_decode_list("Usage", body, len, &sessions, &items, &out->n, read_usage_rest,
				out, st);
	out->sessions = items;
	if (rc < 0)
		wire_operator_usage_free(out);
	return rc;
}
