/* /healthz (the loop answers), /readyz (a bounded preflight: a tier is
 * offered and the store answers), /metrics (Prometheus text). */
#include "daemon_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *text(const char *fmt, const char *arg)
{
	char *s = NULL;
	if (asprintf(&s, fmt, arg) < 0)
		abort();
	return s;
}

void health_endpoint(struct call *c, const char *path)
{
	bh_engine *e = c->srv->e;
	if (!strcmp(path, "/healthz")) {
		call_answer_text(c, 200, "text/plain; charset=utf-8", text("%s", "ok\n"));
		return;
	}
	if (!strcmp(path, "/readyz")) {
		bh_error *err = NULL;
		if (c->srv->draining)
			call_answer_text(c, 503, "text/plain; charset=utf-8",
					 text("not ready: %s\n", "shutting down"));
		else if (bh_engine_preflight(e, &err) < 0)
			call_answer_text(c, 503, "text/plain; charset=utf-8", text("not ready: %s\n", err->msg));
		else
			call_answer_text(c, 200, "text/plain; charset=utf-8",
					 text("ready: %s tier offered\n",
					      bh_tier_name(bh_engine_best_tier(e))));
		bh_error_free(err);
		return;
	}
	if (!strcmp(path, "/metrics")) {
		call_answer_text(c, 200, "text/plain; version=0.0.4; charset=utf-8",
				 metrics_render(&c->srv->metrics, e));
		return;
	}
	call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported", "no such path");
}
