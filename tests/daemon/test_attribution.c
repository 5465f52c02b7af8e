/* Attribution over a real daemon: an agent's token opens a session, the
 * operator's token pauses it and the idle clock hibernates it; the events
 * name runner, watcher and policy:idle, ListEvents carries them, and the
 * pause's request id is the one on the pause's audit line. */
#include "daemon_harness.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static void stop(void) { daemon_stop(&d); }
/* The kernel tier hibernates; a paused session sleeps after a second. */
static void start(void) { daemon_start(&d, "--tier kernel --hibernate-after 1s"); }

/* The session's events, ListEvents' answer as the operator reads it. */
static cJSON *events_of(const char *fp)
{
	struct answer *a = daemon_call(&d, d.op_token, OPS "ListEvents", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	answer_free(a);
	cr_assert_not_null(o);
	cJSON *mine = cJSON_CreateArray();
	const cJSON *ev;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(o, "events"))
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "session")) ?: "", fp))
			cJSON_AddItemToArray(mine, cJSON_Duplicate(ev, true));
	}
	cJSON_Delete(o);
	return mine;
}

/* The event whose detail is `detail`, or NULL. */
static const cJSON *event_with(const cJSON *list, const char *detail)
{
	const cJSON *ev;
	cJSON_ArrayForEach(ev, list)
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "detail")) ?: "", detail))
			return ev;
	}
	return NULL;
}

static const char *field(const cJSON *ev, const char *name)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(ev, name));
	return v ? v : "";
}

/* The audit log's call line for procedure, its request id (empty: none). */
static void audited_request_id(const char *procedure, char *out, size_t n)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no audit log at %s", path);
	char line[8192];
	out[0] = '\0';
	while (fgets(line, sizeof line, f)) {
		cJSON *o = cJSON_Parse(line);
		if (o && !strcmp(field(o, "audit"), "call") && !strcmp(field(o, "procedure"), procedure))
			snprintf(out, n, "%s", field(o, "requestId"));
		cJSON_Delete(o);
	}
	fclose(f);
}

Test(attribution, events_name_the_agent_that_opened_the_operator_that_paused_and_the_idle_clock,
     .init = start, .fini = stop, .timeout = 120)
{
	struct answer *a =
		daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", field(o, "session"));
	cJSON_Delete(o);
	char open_rid[80];
	snprintf(open_rid, sizeof open_rid, "%s", a->request_id);
	answer_free(a);
	cr_assert(fp[0], "the open named no session");

	/* Ready before the pause: an idle one pauses. */
	cJSON *evs = NULL;
	for (int i = 0; i < 600 && !event_with(evs, "opening -> ready"); i++) {
		cJSON_Delete(evs);
		usleep(50 * 1000);
		evs = events_of(fp);
	}
	cr_assert_not_null(event_with(evs, "opening -> ready"), "the session never became ready");
	cJSON_Delete(evs);

	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	a = daemon_call(&d, d.op_token, OPS "Pause", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	char pause_rid[80];
	snprintf(pause_rid, sizeof pause_rid, "%s", a->request_id);
	answer_free(a);
	cr_assert(pause_rid[0], "the harness sent the pause no request id");

	/* hibernate-after is a second: the idle clock takes it from there. */
	evs = NULL;
	for (int i = 0; i < 600 && !event_with(evs, "hibernating -> hibernated"); i++) {
		cJSON_Delete(evs);
		usleep(100 * 1000);
		evs = events_of(fp);
	}
	const cJSON *opened = event_with(evs, "opening");
	const cJSON *ready = event_with(evs, "opening -> ready");
	const cJSON *pausing = event_with(evs, "ready -> pausing");
	const cJSON *paused = event_with(evs, "pausing -> paused");
	const cJSON *sleeping = event_with(evs, "paused -> hibernating");
	const cJSON *slept = event_with(evs, "hibernating -> hibernated");
	char *all = cJSON_PrintUnformatted(evs);
	cr_assert(opened && ready && pausing && paused && sleeping && slept, "events: %s", all);

	/* The agent's token opened it, with its open's request id. */
	cr_expect_str_eq(field(opened, "actor"), "runner", "%s", all);
	cr_expect_str_eq(field(ready, "actor"), "runner", "%s", all);
	cr_expect_str_eq(field(opened, "requestId"), open_rid, "%s", all);
	/* The operator's token paused it: both steps of the pause. */
	cr_expect_str_eq(field(pausing, "actor"), "watcher", "%s", all);
	cr_expect_str_eq(field(paused, "actor"), "watcher", "%s", all);
	cr_expect_str_eq(field(pausing, "requestId"), pause_rid, "%s", all);
	/* The idle clock hibernated it, for no request. */
	cr_expect_str_eq(field(sleeping, "actor"), "policy:idle", "%s", all);
	cr_expect_str_eq(field(slept, "actor"), "policy:idle", "%s", all);
	cr_expect_str_eq(field(slept, "requestId"), "", "%s", all);

	/* The pause's request id is the audit log's for that call. */
	char audited[80];
	audited_request_id(OPS "Pause", audited, sizeof audited);
	cr_expect_str_eq(audited, pause_rid, "the audit line's request id");
	cr_expect_str_eq(audited, field(pausing, "requestId"), "%s", all);
	free(all);
	cJSON_Delete(evs);

	/* `bulkhead events` says the same to an operator at a terminal. */
	const char *cli = harness_sh("BULKHEAD_TOKEN='%s' %s events --attach '%s' --session %s 2>&1",
			       d.op_token, BH_TEST_CLI, d.sock, fp);
	cr_assert_not_null(strstr(cli, " watcher "), "%s", cli);
	cr_assert_not_null(strstr(cli, pause_rid), "the pause's request id is not listed: %s", cli);
	cr_assert_not_null(strstr(cli, " policy:idle "), "%s", cli);
	cr_assert_not_null(strstr(cli, " runner "), "%s", cli);
}

/* A client that sends no request id still gets one on its audit line and
 * its events (the daemon's own), and is not answered one it never sent. */
static size_t keep_body(char *p, size_t size, size_t n, void *arg)
{
	char *out = arg;
	size_t have = strlen(out), add = size * n;
	if (have + add < 4096) {
		memcpy(out + have, p, add);
		out[have + add] = '\0';
	}
	return size * n;
}

static size_t note_request_id(char *p, size_t size, size_t n, void *arg)
{
	if (!strncasecmp(p, "Plimsoll-Request-Id:", 20))
		*(bool *)arg = true;
	return size * n;
}

/* OpenSession with the run token and no Plimsoll-Request-Id (the harness
 * always sends one): its body, and whether one came back. */
static void open_without_request_id(char body[4096], bool *answered_id)
{
	CURL *c = curl_easy_init();
	cr_assert_not_null(c);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	char auth[256];
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", d.run_token);
	h = curl_slist_append(h, auth);
	body[0] = '\0';
	*answered_id = false;
	curl_easy_setopt(c, CURLOPT_URL, "http://localhost/" SVC "OpenSession");
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d.sock);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"protocol\":3}");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, note_request_id);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, answered_id);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	cr_assert_eq(rc, CURLE_OK);
	cr_assert_eq(status, 200, "%s", body);
}

Test(attribution, a_call_without_a_request_id_gets_the_daemons_own_on_its_audit_line_and_events,
     .init = start, .fini = stop, .timeout = 120)
{
	char body[4096];
	bool answered_id;
	open_without_request_id(body, &answered_id);
	cr_expect_not(answered_id, "the daemon answered a request id the client never sent");
	cJSON *o = cJSON_Parse(body);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", field(o, "session"));
	cJSON_Delete(o);

	char audited[80];
	audited_request_id(SVC "OpenSession", audited, sizeof audited);
	cr_assert_eq(strncmp(audited, "bh-", 3), 0, "the audit line's request id: \"%s\"", audited);
	cr_expect_eq(strlen(audited), 19u, "%s", audited);
	cJSON *evs = events_of(fp);
	const cJSON *opened = event_with(evs, "opening");
	cr_assert_not_null(opened);
	cr_expect_str_eq(field(opened, "requestId"), audited);
	cr_expect_str_eq(field(opened, "actor"), "runner");
	cJSON_Delete(evs);
}

/* A close queued on a paused session wakes it first: the wake, the resume
 * and the end are the operator's who closed it, not the agent's whose
 * session it is (only a call wakes a session in its principal's name). */
static void start_container(void) { daemon_start(&d, "--tier container"); }

Test(attribution, an_operator_closing_a_paused_session_is_named_for_its_wake_and_its_end,
     .init = start_container, .fini = stop, .timeout = 120)
{
	struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", field(o, "session"));
	cJSON_Delete(o);
	answer_free(a);
	cJSON *evs = NULL;
	for (int i = 0; i < 600 && !event_with(evs, "opening -> ready"); i++) {
		cJSON_Delete(evs);
		usleep(50 * 1000);
		evs = events_of(fp);
	}
	cr_assert_not_null(event_with(evs, "opening -> ready"), "the session never became ready");
	cJSON_Delete(evs);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", fp);
	a = daemon_call(&d, d.op_token, OPS "Pause", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	a = daemon_call(&d, d.op_token, OPS "Close", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	bool ended = false;
	evs = NULL;
	for (int i = 0; i < 600 && !ended; i++) {
		cJSON_Delete(evs);
		usleep(50 * 1000);
		evs = events_of(fp);
		const cJSON *ev;
		cJSON_ArrayForEach(ev, evs)
		{
			if (!strcmp(field(ev, "kind"), "ended"))
				ended = true;
		}
	}
	char *all = cJSON_PrintUnformatted(evs);
	cr_assert(ended, "the session never ended: %s", all);
	/* Everything after the pause: the operator's. */
	bool after_pause = false;
	size_t n = 0;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, evs)
	{
		if (after_pause) {
			cr_expect_str_eq(field(ev, "actor"), "watcher", "event \"%s %s\": %s", field(ev, "kind"),
					 field(ev, "detail"), all);
			n++;
		}
		if (!strcmp(field(ev, "detail"), "pausing -> paused"))
			after_pause = true;
	}
	cr_assert_geq(n, 2, "no wake and end after the pause: %s", all);
	free(all);
	cJSON_Delete(evs);
}
