#include "daemon_harness.h"
#include "harness.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static void token(struct daemon *d, const char *name, const char *scopes, char out[128])
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "%s token create %s --scope %s --clients '%s/clients' 2>/dev/null",
		 BH_TEST_CLI, name, scopes, d->dir);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char *line = fgets(out, 128, f);
	int st = pclose(f);
	cr_assert(line && st == 0, "token create %s failed", name);
	out[strcspn(out, "\n")] = '\0';
}

void daemon_start(struct daemon *d, const char *extra)
{
	memset(d, 0, sizeof *d);
	mkdir(test_root(), 0711);
	snprintf(d->dir, sizeof d->dir, "%s/daemon-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(d->dir));
	chmod(d->dir, 0711); /* sandboxes run as other uids and walk through it */
	snprintf(d->sock, sizeof d->sock, "%s/sock", d->dir);
	token(d, "runner", "code:run", d->run_token);
	token(d, "watcher", "operator", d->op_token);
	token(d, "console", "code:run,operator", d->both_token);
	token(d, "stranger", "code:run", d->other_token);
	daemon_restart(d, extra);
}

void daemon_restart(struct daemon *d, const char *extra)
{
	char evidence[4200];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	char cmd[32768];
	snprintf(cmd, sizeof cmd,
		 "exec %s serve --state '%s/state' --socket '%s' --clients '%s/clients' "
		 "--audit '%s/audit.log' --no-config %s", /* config: never the host's file */
		 BH_TEST_CLI, d->dir, d->sock, d->dir, d->dir, extra ? extra : "");
	int out[2];
	cr_assert_eq(pipe(out), 0);
	pid_t test = getpid();
	d->pid = fork();
	cr_assert_neq(d->pid, -1);
	if (d->pid == 0) {
		/* A test that crashes runs no .fini: its daemon must not outlive it
		 * (an orphan holds the suite's output pipe open, and the run hangs
		 * on it). SIGTERM: the daemon drains and closes its sandboxes. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != test)
			_exit(127);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		harness_child_signals_default();
		setenv("BULKHEAD_INTERP", BH_TEST_INTERP, 1);
		setenv("BULKHEAD_EVIDENCE", evidence, 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	char line[8192] = "";
	/* "ready SOCKET PORT" once it listens (proofs may still run). */
	char *got = fgets(line, sizeof line, f);
	fclose(f);
	cr_assert(got && !strncmp(line, "ready ", 6), "the daemon did not start: %s", line);
	char *sp = strrchr(line, ' ');
	d->port = atoi(sp + 1);
	/* Ready for calls once the tiers are proven. */
	for (int i = 0; i < 600; i++) {
		struct answer *a = daemon_get(d, "/readyz");
		long st = a->status;
		answer_free(a);
		if (st == 200)
			return;
		usleep(50 * 1000);
	}
	cr_assert_fail("the daemon never became ready");
}

void daemon_stop(struct daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		int st = 0;
		for (int i = 0; i < 600 && waitpid(d->pid, &st, WNOHANG) == 0; i++)
			usleep(50 * 1000);
		if (waitpid(d->pid, &st, WNOHANG) == 0) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
		}
		d->pid = 0;
	}
	if (!d->dir[0])
		return;
	char cmd[16384];
	snprintf(cmd, sizeof cmd,
		 "BULKHEAD_INTERP='%s' %s gc --state '%s/state' >/dev/null 2>&1; rm -rf '%s'",
		 BH_TEST_INTERP, BH_TEST_CLI, d->dir, d->dir);
	if (system(cmd) != 0) {
		/* The leftovers check at the end of the run will name what stayed. */
	}
	d->dir[0] = '\0';
}

struct sink {
	struct answer *a;
	size_t cap;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	if (s->a->len + len + 1 > s->cap) {
		s->cap = (s->a->len + len + 1) * 2;
		s->a->body = realloc(s->a->body, s->cap);
	}
	memcpy(s->a->body + s->a->len, p, len);
	s->a->len += len;
	s->a->body[s->a->len] = '\0';
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;
	char line[512];
	snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), p);
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncasecmp(line, "Plimsoll-Request-Id: ", 21))
		snprintf(a->request_id, sizeof a->request_id, "%.*s",
			 (int)sizeof a->request_id - 1, line + 21);
	if (!strncasecmp(line, "Plimsoll-Not-Dispatched: ", 25))
		snprintf(a->not_dispatched, sizeof a->not_dispatched, "%.*s",
			 (int)sizeof a->not_dispatched - 1, line + 25);
	return len;
}

static struct answer *perform(struct daemon *d, const char *path, const char *token,
			      const char *body, size_t len, bool post, bool tcp,
			      const char *const *headers)
{
	CURL *c = curl_easy_init();
	cr_assert_not_null(c);
	struct answer *a = calloc(1, sizeof *a);
	a->body = calloc(1, 1);
	struct sink s = {.a = a, .cap = 1};
	char url[512];
	if (tcp)
		snprintf(url, sizeof url, "http://127.0.0.1:%d/%s", d->port, path[0] == '/' ? path + 1 : path);
	else
		snprintf(url, sizeof url, "http://localhost/%s", path[0] == '/' ? path + 1 : path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (!tcp)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->sock);
	struct curl_slist *h = NULL;
	char auth[256], rid[80];
	if (post) {
		h = curl_slist_append(h, "Content-Type: application/json");
		unsigned char r[16];
		FILE *u = fopen("/dev/urandom", "r");
		cr_assert_eq(fread(r, 1, 16, u), 16);
		fclose(u);
		for (int i = 0; i < 16; i++)
			sprintf(rid + 2 * i, "%02x", r[i]);
		char hdr[128];
		snprintf(hdr, sizeof hdr, "Plimsoll-Request-Id: %s", rid);
		h = curl_slist_append(h, hdr);
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	for (size_t i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	a->curl_code = (int)curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return a;
}

struct answer *daemon_call_with(struct daemon *d, const char *token, const char *path,
				const char *body, size_t len, bool tcp, const char *const *headers)
{
	return perform(d, path, token, body, len, true, tcp, headers);
}

struct answer *daemon_call(struct daemon *d, const char *token, const char *path, const char *body)
{
	return perform(d, path, token, body, strlen(body), true, false, NULL);
}

struct answer *daemon_get(struct daemon *d, const char *path)
{
	return perform(d, path, NULL, NULL, 0, false, false, NULL);
}

struct answer *daemon_get_as(struct daemon *d, const char *token, const char *path)
{
	return perform(d, path, token, NULL, 0, false, false, NULL);
}

void answer_free(struct answer *a)
{
	if (!a)
		return;
	free(a->body);
	free(a);
}

char *daemon_cell_body(const char *session_id, const char *language, const char *code)
{
	cJSON *req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "protocol", 3);
	cJSON_AddStringToObject(req, "sessionId", session_id);
	cJSON *c = cJSON_AddObjectToObject(req, "cell");
	cJSON_AddStringToObject(c, "language", language);
	cJSON_AddStringToObject(c, "code", code);
	char *body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	return body;
}

struct answer *daemon_cell(struct daemon *d, const char *token, const char *session_id,
			   const char *language, const char *code)
{
	char *body = daemon_cell_body(session_id, language, code);
	struct answer *a = daemon_call(d, token, "plimsoll.v1.SandboxService/SessionRun", body);
	free(body);
	return a;
}

char *daemon_cell_stdout(struct daemon *d, const char *token, const char *session_id,
			 const char *code)
{
	struct answer *a = daemon_cell(d, token, session_id, "python", code);
	cr_assert_eq(a->status, 200, "%s: HTTP %ld, curl %d: %s", code, a->status, a->curl_code,
		     a->body ? a->body : "");
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	char *out = strndup((const char *)r.run.result.out, r.run.result.out_len);
	wire_session_run_response_free(&r);
	answer_free(a);
	return out;
}

void daemon_open_session(struct daemon *d, struct daemon_session *out)
{
	struct answer *a =
		daemon_call(d, d->run_token, "plimsoll.v1.SandboxService/OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	snprintf(out->id, sizeof out->id, "%s", r.session_id);
	snprintf(out->fp, sizeof out->fp, "%s", r.session);
	wire_open_session_response_free(&r);
	answer_free(a);
}
