/* The audit trail: one JSON line per call and per session event. It names
 * principals, procedures, outcomes and session fingerprints — never code,
 * output, tokens or session ids. */
#include "daemon_priv.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <time.h>

static void emit(struct server *s, cJSON *o)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	cJSON_AddNumberToObject(o, "t", (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1000.0);
	char *line = cJSON_PrintUnformatted(o);
	if (line) {
		fprintf(s->audit, "%s\n", line);
		fflush(s->audit);
		free(line);
	}
	cJSON_Delete(o);
}

void audit_call(struct server *s, const struct call *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "audit", "call");
	cJSON_AddStringToObject(o, "procedure", c->procedure);
	if (c->who.name[0])
		cJSON_AddStringToObject(o, "principal", c->who.name);
	cJSON_AddStringToObject(o, "via", c->via->tcp ? "tcp" : "unix");
	cJSON_AddNumberToObject(o, "status", c->status);
	cJSON_AddStringToObject(o, "code", wire_code_name(c->code));
	if (c->session_fp[0])
		cJSON_AddStringToObject(o, "session", c->session_fp);
	if (c->request_id[0])
		cJSON_AddStringToObject(o, "requestId", c->request_id);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	cJSON_AddNumberToObject(o, "ms", (double)(now - c->t0_us) / 1000.0);
	emit(s, o);
}

static int audit_one(void *arg, const struct bh_event *ev)
{
	struct server *s = arg;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "audit", "session");
	cJSON_AddStringToObject(o, "kind", ev->kind);
	if (ev->session && *ev->session)
		cJSON_AddStringToObject(o, "session", ev->session);
	if (ev->sandbox && *ev->sandbox)
		cJSON_AddStringToObject(o, "sandbox", ev->sandbox);
	if (ev->detail && *ev->detail)
		cJSON_AddStringToObject(o, "detail", ev->detail);
	emit(s, o);
	s->audited_event = ev->id;
	return 0;
}

static int skip_one(void *arg, const struct bh_event *ev)
{
	((struct server *)arg)->audited_event = ev->id;
	return 0;
}

/* The engine's own events (opened, paused, hibernated, ended, reaped …)
 * become audit lines too, once each; what happened before we started is
 * history, not news. */
void audit_engine_events(struct server *s, bool first)
{
	int64_t before;
	do {
		before = s->audited_event;
		bh_engine_events(s->e, s->audited_event, 500, first ? skip_one : audit_one, s, NULL);
	} while (s->audited_event != before);
}

void audit_event(struct server *s, const char *kind, const char *fingerprint, const char *detail)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "audit", "event");
	cJSON_AddStringToObject(o, "kind", kind);
	if (fingerprint && *fingerprint)
		cJSON_AddStringToObject(o, "session", fingerprint);
	if (detail && *detail)
		cJSON_AddStringToObject(o, "detail", detail);
	emit(s, o);
}
