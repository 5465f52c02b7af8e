/* The daemon worker: a plimsoll client of `bulkhead serve --open` on its
 * unix socket, one libcurl easy handle reused for every call (keep-alive:
 * one connection), one session with both interpreters. A cell is timed from
 * handing the request to libcurl to having the whole answer. */
#include "stats.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

struct dw {
	const struct worker_cfg *cfg;
	CURL *c;
	struct curl_slist *headers;
	char *body;
	size_t len, cap;
	char session[64];
	char err[1024];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct dw *w = arg;
	size_t len = size * n;
	if (w->len + len + 1 > w->cap) {
		w->cap = (w->len + len + 1) * 2;
		w->body = realloc(w->body, w->cap);
	}
	memcpy(w->body + w->len, p, len);
	w->len += len;
	w->body[w->len] = '\0';
	return len;
}

/* POST; the parsed answer, or NULL with w->err set. */
static cJSON *call(struct dw *w, const char *method, const char *body, double *took_us)
{
	char url[256];
	snprintf(url, sizeof url, "http://localhost/" SVC "%s", method);
	w->len = 0;
	if (w->body)
		w->body[0] = '\0';
	curl_easy_setopt(w->c, CURLOPT_URL, url);
	curl_easy_setopt(w->c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(w->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	double t0 = now_us();
	CURLcode rc = curl_easy_perform(w->c);
	if (took_us)
		*took_us = now_us() - t0;
	long status = 0;
	curl_easy_getinfo(w->c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status != 200) {
		snprintf(w->err, sizeof w->err, "%s: %s, HTTP %ld: %.300s", method,
			 curl_easy_strerror(rc), status, w->body ? w->body : "");
		return NULL;
	}
	cJSON *j = cJSON_Parse(w->body);
	if (!j)
		snprintf(w->err, sizeof w->err, "%s: the answer is not JSON", method);
	return j;
}

static int open_session(struct dw *w)
{
	/* The daemon was started with --tier, so no floor is needed. */
	const char *body = "{\"protocol\":3,\"languages\":[\"python\",\"javascript\"]}";
	cJSON *j = call(w, "OpenSession", body, NULL);
	if (!j)
		return -1;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "sessionId");
	if (!cJSON_IsString(id)) {
		snprintf(w->err, sizeof w->err, "OpenSession: no sessionId");
		cJSON_Delete(j);
		return -1;
	}
	snprintf(w->session, sizeof w->session, "%s", id->valuestring);
	cJSON_Delete(j);
	return 0;
}

static int run_cell(struct dw *w, const char *lang, const char *code, double *took_us,
		    double *duration_ms)
{
	cJSON *req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "protocol", 3);
	cJSON_AddStringToObject(req, "sessionId", w->session);
	cJSON *c = cJSON_AddObjectToObject(req, "cell");
	cJSON_AddStringToObject(c, "language", lang);
	cJSON_AddStringToObject(c, "code", code);
	char *body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	cJSON *j = call(w, "SessionRun", body, took_us);
	free(body);
	if (!j)
		return -1;
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
	const cJSON *cell = cJSON_GetObjectItemCaseSensitive(run, "cell");
	const cJSON *exit_code = cJSON_GetObjectItemCaseSensitive(cell, "exitCode");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(run, "durationMs");
	if (!cell || (exit_code && cJSON_IsNumber(exit_code) && exit_code->valueint != 0)) {
		snprintf(w->err, sizeof w->err, "SessionRun: the cell failed: %.300s", w->body);
		cJSON_Delete(j);
		return -1;
	}
	if (duration_ms)
		*duration_ms = cJSON_IsNumber(dur) ? dur->valuedouble
			     : cJSON_IsString(dur) ? atof(dur->valuestring) : -1;
	cJSON_Delete(j);
	return 0;
}

static void close_session(struct dw *w)
{
	if (!w->session[0])
		return;
	char body[256];
	snprintf(body, sizeof body, "{\"protocol\":3,\"sessionId\":\"%s\"}", w->session);
	cJSON *j = call(w, "CloseSession", body, NULL);
	cJSON_Delete(j);
	w->session[0] = '\0';
}

int daemon_worker_main(const struct worker_cfg *cfg, int fd)
{
	struct dw w = {.cfg = cfg};
	struct worker_reply rep = {0};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	w.c = curl_easy_init();
	w.headers = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(w.c, CURLOPT_UNIX_SOCKET_PATH, cfg->socket);
	curl_easy_setopt(w.c, CURLOPT_HTTPHEADER, w.headers);
	curl_easy_setopt(w.c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(w.c, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(w.c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(w.c, CURLOPT_POST, 1L);
	if (open_session(&w) < 0 || run_cell(&w, "python", CELL_SETUP, NULL, NULL) < 0 ||
	    run_cell(&w, "javascript", CELL_SETUP, NULL, NULL) < 0) {
		reply_fail(fd, "%s: %s", cfg->name, w.err);
		close_session(&w);
		goto out;
	}
	rep.ok = 1;
	reply_send(fd, &rep);
	for (;;) {
		struct worker_cmd c;
		ssize_t got = recv(fd, &c, sizeof c, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got != (ssize_t)sizeof c || c.op == OP_QUIT)
			break;
		memset(&rep, 0, sizeof rep);
		if (c.op != OP_CELL) {
			reply_fail(fd, "%s: only cells go through the daemon here", cfg->name);
			continue;
		}
		double took, dur;
		if (run_cell(&w, c.a == BH_LANG_JAVASCRIPT ? "javascript" : "python", CELL_CODE, &took,
			     &dur) < 0) {
			reply_fail(fd, "%s: %s", cfg->name, w.err);
			continue;
		}
		long conns = 0;
		curl_easy_getinfo(w.c, CURLINFO_NUM_CONNECTS, &conns);
		rep.ok = 1;
		rep.cell.client_us = took;
		rep.cell.inside_us = dur * 1000.0;
		rep.cell.new_connections = conns;
		reply_send(fd, &rep);
	}
	close_session(&w);
	memset(&rep, 0, sizeof rep);
	rep.ok = 1;
	reply_send(fd, &rep);
out:
	curl_slist_free_all(w.headers);
	curl_easy_cleanup(w.c);
	free(w.body);
	curl_global_cleanup();
	return 0;
}
