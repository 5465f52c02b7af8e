/* Operator requests. The client and the console encode them; the daemon
 * reads them the way it always has, leniently: a field of another type reads
 * as its zero value, ids come as numbers or strings, and a limit or a cap
 * outside its range means the default (or the most). Only a body that is not
 * a JSON object is refused here; what a method needs (a session's
 * fingerprint, a path that is a string) the daemon judges, in its order. */
#include "wire_operator_priv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

char *wire_operator_encode_request(const struct wire_operator_request *r)
{
	cJSON *o = jw_object();
	if (r->session) /* even "": a session sent empty is refused, not read as all */
		wire_check_alloc(cJSON_AddStringToObject(o, "session", r->session));
	jw_string(o, "state", r->state);
	if (r->newest)
		jw_bool(o, "newest", true);
	if (r->after_id > 0)
		jw_i64(o, "afterId", r->after_id);
	if (r->before_id > 0)
		jw_i64(o, "beforeId", r->before_id);
	if (r->has_sequence) { /* even 0: the daemon refuses it rather than list them all */
		char seq[24];
		snprintf(seq, sizeof seq, "%llu", (unsigned long long)r->sequence);
		wire_check_alloc(cJSON_AddStringToObject(o, "sequence", seq));
	}
	jw_u32(o, "limit", r->limit);
	jw_u32(o, "waitMs", r->wait_ms);
	jw_bool(o, "dryRun", r->dry_run);
	if (r->path)
		wire_check_alloc(cJSON_AddStringToObject(o, "path", r->path));
	jw_u32(o, "maxBytes", r->max_bytes);
	/* ---- stream ---- */
	jw_u64(o, "stdoutAfter", r->stdout_after);
	jw_u64(o, "stderrAfter", r->stderr_after);
	jw_u64(o, "beforeSequence", r->before_sequence);
	jw_u32(o, "count", r->count); /* ---- density ---- */
	return jw_print(o);
}

void wire_operator_request_free(struct wire_operator_request *r)
{
	if (!r)
		return;
	free((char *)r->session);
	free((char *)r->state);
	free((char *)r->path);
	memset(r, 0, sizeof *r);
}

static const cJSON *member(const cJSON *msg, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(msg, name);
}

static char *string_of(const cJSON *v)
{
	return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

/* An id: a decimal string (read as far as it is digits) or a number; 0
 * for anything else. */
static int64_t cursor_of(const cJSON *v)
{
	if (cJSON_IsString(v))
		return strtoll(v->valuestring, NULL, 10);
	if (!cJSON_IsNumber(v) || isnan(v->valuedouble))
		return 0;
	if (v->valuedouble >= 9223372036854775807.0)
		return INT64_MAX;
	if (v->valuedouble <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v->valuedouble;
}

/* A positive number, whole or not, cut below `most`; dflt otherwise. The
 * cut is a truncation, so 0.5 reads as 0: what the daemon then asks the
 * engine for (0 rows is a page of its own default). */
static uint32_t count_of(const cJSON *v, double most, uint32_t dflt)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
		return dflt;
	return v->valuedouble > most ? (uint32_t)most : (uint32_t)v->valuedouble;
}

int wire_operator_decode_request(const char *body, size_t len, struct wire_operator_request *out,
				 struct wire_status *st)
{
	cleanup_cjson cJSON *msg = NULL;
	cleanup_free char *why = NULL;
	memset(out, 0, sizeof *out);
	if (wire_parse_body(body, len, &msg, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	const cJSON *session = member(msg, "session"), *path = member(msg, "path");
	const cJSON *sequence = member(msg, "sequence"), *wait = member(msg, "waitMs");
	out->has_session = session != NULL;
	out->session = string_of(session);
	out->state = string_of(member(msg, "state"));
	out->after_id = cursor_of(member(msg, "afterId"));
	out->before_id = cursor_of(member(msg, "beforeId"));
	out->newest = cJSON_IsTrue(member(msg, "newest"));
	out->has_sequence = sequence != NULL;
	int64_t seq = cursor_of(sequence);
	out->sequence = seq > 0 ? (uint64_t)seq : 0;
	out->limit = count_of(member(msg, "limit"), WIRE_OPERATOR_PAGE_MAX,
			      WIRE_OPERATOR_PAGE_DEFAULT);
	/* A wait of a fraction of a millisecond still waits (until the next
	 * look at the parked calls). */
	out->wait_ms = cJSON_IsNumber(wait) && wait->valuedouble > 0
			       ? (wait->valuedouble >= WIRE_OPERATOR_WAIT_MAX_MS
					  ? WIRE_OPERATOR_WAIT_MAX_MS
					  : (uint32_t)ceil(wait->valuedouble))
			       : 0;
	out->dry_run = cJSON_IsTrue(member(msg, "dryRun"));
	out->path = path ? string_of(path) : xstrdup("");
	const cJSON *max = member(msg, "maxBytes");
	out->max_bytes = cJSON_IsNumber(max) && max->valuedouble > 0 &&
					 max->valuedouble < WIRE_OPERATOR_READ_MAX
				 ? (uint32_t)max->valuedouble
				 : WIRE_OPERATOR_READ_DEFAULT;
	/* ---- stream: cursors, read as ids are ---- */
	int64_t v = cursor_of(member(msg, "stdoutAfter"));
	out->stdout_after = v > 0 ? (uint64_t)v : 0;
	v = cursor_of(member(msg, "stderrAfter"));
	out->stderr_after = v > 0 ? (uint64_t)v : 0;
	v = cursor_of(member(msg, "beforeSequence"));
	out->before_sequence = v > 0 ? (uint64_t)v : 0;
	/* ---- density: a branch's children; more than a branch makes reads
	 * as asked (the engine names the bound), a fraction or worse as 0 ---- */
	const cJSON *count = member(msg, "count");
	out->count = !count ? 1
		     : cJSON_IsNumber(count) && count->valuedouble >= 1 &&
				   count->valuedouble == floor(count->valuedouble)
			     ? (count->valuedouble > 1000 ? 1000 : (uint32_t)count->valuedouble)
			     : 0;
	return 0;
}
