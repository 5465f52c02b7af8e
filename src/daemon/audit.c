/* The audit trail: one JSON line per call and per session event. It names
 * principals, procedures, outcomes and session fingerprints — never code,
 * output, tokens or session ids. */
#include "daemon_priv.h"

#include "wire_operator.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
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

static bool tally_read(struct server *s, const struct call *c);

void audit_call(struct server *s, const struct call *c)
{
	if (tally_read(s, c))
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "audit", "call");
	cJSON_AddStringToObject(o, "procedure", c->procedure);
	if (c->who.name[0])
		cJSON_AddStringToObject(o, "principal", c->who.name);
	cJSON_AddStringToObject(o, "via", c->via->tcp ? "tcp" : "unix");
	/* ---- tls: who called over TCP (a trusted proxy's client), how ---- */
	if (c->client_addr[0])
		cJSON_AddStringToObject(o, "client", c->client_addr);
	if (c->via->tls)
		cJSON_AddBoolToObject(o, "tls", true);
	if (c->forwarded_proto[0])
		cJSON_AddStringToObject(o, "forwardedProto", c->forwarded_proto);
	cJSON_AddNumberToObject(o, "status", c->status);
	cJSON_AddStringToObject(o, "code", wire_code_name(c->code));
	if (c->session_fp[0])
		cJSON_AddStringToObject(o, "session", c->session_fp);
	if (c->request_id[0])
		cJSON_AddStringToObject(o, "requestId", c->request_id);
	if (c->grant_profile[0]) /* ---- profiles: which profile it named, held or refused ---- */
		cJSON_AddStringToObject(o, "grantProfile", c->grant_profile);
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
	/* ---- ci: attribution ---- */
	if (ev->actor && *ev->actor)
		cJSON_AddStringToObject(o, "actor", ev->actor);
	if (ev->request_id && *ev->request_id)
		cJSON_AddStringToObject(o, "requestId", ev->request_id);
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
	audit_reads_flush(s, false);
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

/* ---- truth: the console's polling does not fill the trail (B27) ----
 *
 * An open console reads the sessions every two seconds: a line per read was
 * 86,000 lines a day saying nothing new. A read of the daemon's own state
 * that succeeds (listing sessions, records, events, leaks, the evidence) is
 * counted per principal, procedure and listener instead, and written as one
 * "reads" line a minute (and at stop) with how many and since when: the
 * trail still says who read what and how often. What acts, what reads a
 * sandbox (ListFiles, ReadFile) and every refusal stay a line each. */

#define READ_TALLY_MS 60000u

struct audit_read {
	char procedure[96], principal[CLIENTS_NAME_MAX + 1];
	bool tcp;
	uint64_t calls;
	double since_t;     /* the first read's wall time */
	uint64_t since_ms;  /* and monotonic */
};

static bool is_state_read(const char *procedure)
{
	static const char *const reads[] = {"ListSessions", "GetSession", "ListRecords",
					    "ListEvents", "Leaks", "Evidence",
					    "Overview" /* ---- light ---- */,
					    /* ---- remote: the console's header and timeline ---- */
					    "Leftovers", "ListIntents"};
	const char *prefix = WIRE_OPERATOR_SERVICE "/";
	size_t n = strlen(prefix);
	if (strncmp(procedure, prefix, n))
		return false;
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
		if (!strcmp(procedure + n, reads[i]))
			return true;
	return false;
}

static bool tally_read(struct server *s, const struct call *c)
{
	if (c->code != WIRE_OK || c->status != 200 || !is_state_read(c->procedure))
		return false;
	struct audit_read *r = NULL;
	for (size_t i = 0; i < s->n_reads && !r; i++)
		if (!strcmp(s->reads[i].procedure, c->procedure) &&
		    !strcmp(s->reads[i].principal, c->who.name) && s->reads[i].tcp == c->via->tcp)
			r = &s->reads[i];
	if (!r) {
		struct audit_read *grown = realloc(s->reads, (s->n_reads + 1) * sizeof *s->reads);
		if (!grown)
			abort();
		s->reads = grown;
		r = &s->reads[s->n_reads++];
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		*r = (struct audit_read){.tcp = c->via->tcp, .since_ms = now_mono_ms(),
					 .since_t = (double)ts.tv_sec +
						    (double)(ts.tv_nsec / 1000000) / 1000.0};
		snprintf(r->procedure, sizeof r->procedure, "%s", c->procedure);
		snprintf(r->principal, sizeof r->principal, "%s", c->who.name);
	}
	r->calls++;
	return true;
}

void audit_reads_flush(struct server *s, bool all)
{
	uint64_t now = now_mono_ms();
	size_t kept = 0;
	for (size_t i = 0; i < s->n_reads; i++) {
		struct audit_read *r = &s->reads[i];
		if (!all && now - r->since_ms < READ_TALLY_MS) {
			s->reads[kept++] = *r;
			continue;
		}
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "audit", "reads");
		cJSON_AddStringToObject(o, "procedure", r->procedure);
		if (r->principal[0])
			cJSON_AddStringToObject(o, "principal", r->principal);
		cJSON_AddStringToObject(o, "via", r->tcp ? "tcp" : "unix");
		cJSON_AddNumberToObject(o, "calls", (double)r->calls);
		cJSON_AddNumberToObject(o, "since", r->since_t);
		emit(s, o);
	}
	s->n_reads = kept;
	if (all) {
		free(s->reads);
		s->reads = NULL;
	}
}
