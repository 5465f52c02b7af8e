/* Overview (light, B27): what an attached console's header and sandboxes
 * view show, in one answer, and a long poll on it. The change token is the
 * engine's (its start, its generation, its last usage sample) and the held
 * calls' (how many and which): a console that sends the token it last saw
 * is parked with the ListEvents and FollowCell waiters — no thread, looked
 * at every 100 ms by the server's one poll — until the token moves or its
 * wait (at most WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS) ends. */
#include "daemon_priv.h"

#include "wire_operator.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The held calls, as a digest of their ids: a call decided and another held
 * in the same 100 ms still moves it. */
static uint64_t approvals_digest(const struct server *s, uint32_t *waiting)
{
	struct wire_operator_approvals a;
	approvals_list(s, &a);
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < a.n; i++)
		for (const char *p = a.approvals[i].id; p && *p; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ull;
	*waiting = (uint32_t)a.n;
	free(a.approvals); /* the strings are the table's */
	free(a.files);
	return h ^ a.n;
}

static void token_now(const struct server *s, char *out, size_t n, uint32_t *waiting)
{
	struct bh_change_token t;
	bh_engine_change_token(s->e, &t);
	uint64_t held = approvals_digest(s, waiting);
	snprintf(out, n, "%" PRIx64 ".%" PRIx64 ".%" PRIx64 ".%" PRIx64, (uint64_t)t.started_unix_ms,
		 t.generation, (uint64_t)t.usage_sampled_unix_ms, held);
}

/* The whole overview: the session list as ListSessions answers it (without
 * the code in flight: GetSession gives that) and the usage as Usage does. */
static void answer_whole(struct call *c, const char *token, uint32_t waiting)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(c->srv->e, &list);
	struct bh_session_info *info = xzalloc((n ? n : 1) * sizeof *info);
	struct wire_operator_overview out = {.token = token, .changed = true,
					     .approvals_waiting = waiting};
	out.sessions.sessions = xzalloc((n ? n : 1) * sizeof *out.sessions.sessions);
	for (size_t i = 0; i < n; i++) {
		bh_session_get_info(list[i], &info[i]);
		out.sessions.sessions[i] = wire_operator_session_of(&info[i]);
		out.sessions.sessions[i].call_code = "";
	}
	out.sessions.n = n;
	out.usage.version = BULKHEAD_VERSION;
	out.usage.n = bh_engine_usage(c->srv->e, &out.usage.host, &out.usage.sessions);
	call_answer_json(c, wire_operator_encode_overview(&out));
	free(out.usage.sessions);
	free(out.sessions.sessions);
	free(info);
	free(list);
}

static bool overview_look(struct call *c, void *arg, bool final)
{
	const char *seen = arg;
	char token[WIRE_OPERATOR_TOKEN_MAX + 1];
	uint32_t waiting = 0;
	token_now(c->srv, token, sizeof token, &waiting);
	if (strcmp(token, seen)) {
		answer_whole(c, token, waiting);
		return true;
	}
	if (!final)
		return false;
	/* Nothing moved in the wait: the token alone, a few dozen bytes. */
	struct wire_operator_overview same = {.token = token};
	call_answer_json(c, wire_operator_encode_overview(&same));
	return true;
}

bool operator_overview(struct call *c, const char *method)
{
	if (strcmp(method, "Overview"))
		return false;
	struct wire_operator_overview_request req;
	struct wire_status st;
	if (wire_operator_decode_overview_request(c->body ? c->body : "{}", c->body ? c->body_len : 2,
						  &req, &st) < 0) {
		call_refuse(c, st.code, st.reason, "Overview: %s", st.msg);
		return true;
	}
	/* A request without a token is answered at once, whatever its wait:
	 * it has seen nothing to wait for a change of. */
	uint32_t wait = *req.token ? req.wait_ms : 0;
	operator_park(c, wait, overview_look, (void *)req.token, free);
	req.token = NULL;
	wire_operator_overview_request_free(&req);
	return true;
}
