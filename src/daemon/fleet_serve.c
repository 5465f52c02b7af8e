/* A call another host of the fleet forwarded here, because this host holds
 * its session (or was chosen for an OpenSession): it becomes a call with no
 * HTTP connection that goes through the same path as one from a listener
 * (call_run_headless: the header's checks, the Authorization header against
 * this host's clients file, the rate limit, approvals, the handlers), and
 * its answer goes back with bh_fleet_reply, with the headers libmicrohttpd
 * would have carried. It is never forwarded again: a headless call is
 * always handled here (fleet_route.c), so two hosts whose directories
 * disagree cannot bounce a call between them. */
#include "daemon_priv.h"
#include "daemon_fleet.h"

#include <string.h>

#define SANDBOX_PREFIX "/plimsoll.v1.SandboxService/"

static void deliver(struct call *c)
{
	struct server *s = c->srv;
	struct bh_fleet_request *r = c->deliver_arg;
	struct bh_fleet_msg ans = {.status = c->status,
				   .body = (const uint8_t *)c->answer,
				   .body_len = c->answer_len};
	if (c->content_type) {
		ans.header_names[ans.n_headers] = "Content-Type";
		ans.header_values[ans.n_headers++] = c->content_type;
	}
	if (c->request_id[0] && !c->request_id_minted) {
		ans.header_names[ans.n_headers] = "Plimsoll-Request-Id";
		ans.header_values[ans.n_headers++] = c->request_id;
	}
	if (c->not_dispatched) {
		ans.header_names[ans.n_headers] = "Plimsoll-Not-Dispatched";
		ans.header_values[ans.n_headers++] = c->not_dispatched;
	}
	if (!s->fleet || bh_fleet_reply(s->fleet->f, r, &ans) < 0)
		daemon_log(BH_LOG_WARN, "fleet", "could not answer a call %s forwarded (%s)",
			   s->fleet ? bh_fleet_request_from(r) : "another host", c->procedure);
}

void daemon_fleet_on_forwarded(void *arg, struct bh_fleet_request *r, const struct bh_fleet_msg *req)
{
	struct server *s = arg;
	/* Only plimsoll.v1 calls are forwarded: an operator's call goes to its
	 * host's own API (the console reaches every host). */
	if (!req->path || strncmp(req->path, SANDBOX_PREFIX, strlen(SANDBOX_PREFIX)) ||
	    strlen(req->path) > 95) {
		static const char body[] =
			"{\"code\":\"unimplemented\",\"message\":\"only plimsoll.v1.SandboxService "
			"calls are forwarded between hosts\"}";
		struct bh_fleet_msg ans = {
			.status = 404,
			.n_headers = 2,
			.header_names = {"Content-Type", "Plimsoll-Not-Dispatched"},
			.header_values = {"application/json", "unsupported"},
			.body = (const uint8_t *)body,
			.body_len = sizeof body - 1,
		};
		bh_fleet_reply(s->fleet->f, r, &ans);
		return;
	}
	s->metrics.fleet_served++;
	call_run_headless(s, req->path, req->n_headers, req->header_names, req->header_values,
			  req->body, req->body_len, deliver, r);
}
