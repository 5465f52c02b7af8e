/* /healthz (the loop answers), /readyz (a bounded preflight: a tier is
 * offered and the store answers; its verdict is kept, so a flood of
 * probes costs one preflight a second), /metrics (Prometheus
 * text; the operator's token unless --metrics-open, see call.c). */
#include "daemon_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A verdict is kept this long: a second once ready; a tenth while not,
 * so the proofs' end is seen at once (each costs at most a store read). */
#define READY_CACHE_MS 1000u
#define NOT_READY_CACHE_MS 100u

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
		struct server *s = c->srv;
		if (s->draining) {
			call_answer_text(c, 503, "text/plain; charset=utf-8",
					 text("not ready: %s\n", "shutting down"));
			return;
		}
		uint64_t now = now_mono_ms();
		if (!s->ready.text ||
		    now - s->ready.at_ms >= (s->ready.ok ? READY_CACHE_MS : NOT_READY_CACHE_MS)) {
			bh_error *err = NULL;
			s->metrics.readiness_checks++;
			free(s->ready.text);
			s->ready.ok = bh_engine_preflight(e, &err) == 0;
			/* ---- truth: the tier sessions get (B14), not the strongest proven ---- */
			s->ready.text = s->ready.ok ? text("ready: %s tier offered\n",
							   bh_tier_name(daemon_served_tier(s)))
						    : text("not ready: %s\n", err->msg);
			s->ready.at_ms = now;
			bh_error_free(err);
		}
		call_answer_text(c, s->ready.ok ? 200 : 503, "text/plain; charset=utf-8",
				 text("%s", s->ready.text));
		return;
	}
	if (!strcmp(path, "/metrics")) {
		call_answer_text(c, 200, "text/plain; version=0.0.4; charset=utf-8",
				 metrics_render(&c->srv->metrics, e));
		return;
	}
	call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported", "no such path");
}
