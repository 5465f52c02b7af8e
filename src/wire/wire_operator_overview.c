/* Overview (light): the console's header and sandboxes view in one answer —
 * the sessions as ListSessions gives them, the usage as Usage gives it, and
 * how many calls wait for a decision — with a change token, so a console
 * that sends the token it last saw waits for news instead of asking again
 * (B27). The sessions and the usage are those answers' own messages, read
 * by their own strict decoders: one definition of each. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* NULL when the token is at most WIRE_OPERATOR_TOKEN_MAX printable bytes. */
static const char *token_problem(const char *t)
{
	size_t n = strlen(t);
	if (n > WIRE_OPERATOR_TOKEN_MAX)
		return "token is longer than a change token";
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e)
			return "token holds a byte no change token has";
	return NULL;
}

/* ---- the request ---- */

char *wire_operator_encode_overview_request(const struct wire_operator_overview_request *r)
{
	cJSON *o = jw_object();
	jw_string(o, "token", r->token ? r->token : "");
	jw_u32(o, "waitMs", r->wait_ms);
	return jw_print(o);
}

void wire_operator_overview_request_free(struct wire_operator_overview_request *r)
{
	if (!r)
		return;
	free((char *)r->token);
	memset(r, 0, sizeof *r);
}

int wire_operator_decode_overview_request(const char *body, size_t len,
					  struct wire_operator_overview_request *out,
					  struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	cleanup_free char *why = NULL;
	struct jr r = {st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST};
	memset(out, 0, sizeof *out);
	if (wire_parse_body(body, len, &root, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	static const char *const names[] = {"token", "waitMs"};
	char *token = NULL;
	double wait = 0;
	if (op_only_members(&r, root, names, ARRAY_SIZE(names)) < 0 ||
	    jr_string(&r, root, "", "token", &token, NULL) < 0 ||
	    jr_double(&r, root, "", "waitMs", &wait) < 0) {
		free(token);
		return -1;
	}
	out->token = token ? token : xstrdup("");
	const char *bad = token_problem(out->token);
	if (!bad && !(wait >= 0))
		bad = "waitMs must be a number of milliseconds, 0 or more";
	if (bad) {
		wire_operator_overview_request_free(out);
		return jr_fail(&r, "%s", bad);
	}
	/* A longer wait is shortened, not refused: the daemon holds a parked
	 * call no longer than its cap, whatever a console asks. */
	out->wait_ms = wait >= WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS ? WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS
								  : (uint32_t)wait;
	return 0;
}

/* ---- the answer ---- */

static cJSON *parsed(char *json)
{
	cJSON *o = cJSON_Parse(json);
	free(json);
	return wire_check_alloc(o);
}

char *wire_operator_encode_overview(const struct wire_operator_overview *o)
{
	cJSON *root = jw_object();
	jw_string(root, "token", o->token ? o->token : "");
	jw_bool(root, "changed", o->changed);
	if (o->changed) {
		jw_add(root, "sessions", parsed(wire_operator_encode_sessions(&o->sessions)));
		jw_add(root, "usage", parsed(wire_operator_encode_usage(&o->usage)));
		jw_u32(root, "approvalsWaiting", o->approvals_waiting);
	}
	return jw_print(root);
}

void wire_operator_overview_free(struct wire_operator_overview *o)
{
	if (!o)
		return;
	free((char *)o->token);
	wire_operator_sessions_free(&o->sessions);
	wire_operator_usage_free(&o->usage);
	memset(o, 0, sizeof *o);
}

/* A part of the answer (an object), read by its own answer's decoder. */
static int read_part(const struct jr *r, const cJSON *root, const char *name,
		     int (*decode)(const char *, size_t, void *, struct wire_status *), void *out)
{
	const cJSON *part = NULL;
	if (jr_object(r, root, "", name, &part) < 0)
		return -1;
	if (!part)
		return jr_fail(r, "%s: a changed overview carries it", name);
	cleanup_free char *text = wire_check_alloc(cJSON_PrintUnformatted(part));
	struct wire_status inner;
	if (decode(text, strlen(text), out, &inner) < 0)
		return jr_fail(r, "%s: %s", name, inner.msg);
	return 0;
}

static int decode_sessions(const char *b, size_t n, void *out, struct wire_status *st)
{
	return wire_operator_decode_sessions(b, n, out, st);
}

static int decode_usage(const char *b, size_t n, void *out, struct wire_status *st)
{
	return wire_operator_decode_usage(b, n, out, st);
}

int wire_operator_decode_overview(const char *body, size_t len, struct wire_operator_overview *out,
				  struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("Overview", body, len, &root, st) < 0)
		return -1;
	static const char *const names[] = {"token", "changed", "sessions", "usage",
					    "approvalsWaiting"};
	char *token = NULL;
	int rc = -1;
	if (op_only_members(&r, root, names, ARRAY_SIZE(names)) < 0 ||
	    jr_string(&r, root, "", "token", &token, NULL) < 0 ||
	    jr_bool(&r, root, "", "changed", &out->changed) < 0 ||
	    jr_u32(&r, root, "", "approvalsWaiting", &out->approvals_waiting) < 0)
		goto out;
	out->token = token ? token : xstrdup("");
	token = NULL;
	const char *bad = token_problem(out->token);
	if (!bad && !*out->token)
		bad = "token: every answer carries one (the next request sends it)";
	if (bad) {
		jr_fail(&r, "%s", bad);
		goto out;
	}
	if (!out->changed) {
		/* Unchanged: the token alone, nothing that could be mistaken for
		 * a fresh (and different) list. */
		if (cJSON_GetObjectItemCaseSensitive(root, "sessions") ||
		    cJSON_GetObjectItemCaseSensitive(root, "usage") || out->approvals_waiting) {
			jr_fail(&r, "an unchanged overview carries only its token");
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (read_part(&r, root, "sessions", decode_sessions, &out->sessions) < 0 ||
	    read_part(&r, root, "usage", decode_usage, &out->usage) < 0)
		goto out;
	rc = 0;
out:
	free(token);
	if (rc < 0) {
		wire_operator_overview_free(out);
		return op_refused("Overview", st);
	}
	return 0;
}
