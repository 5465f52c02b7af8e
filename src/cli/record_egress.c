/* `bulkhead record`'s brokered upstream (docs/scenarios.md, "egress"): for
 * a script with an "egress" block, the recording gets what the daemon's
 * egress tests have — a test CA made with the openssl CLI, a TLS upstream
 * on a loopback address whose certificate chains to it (upstream.py beside
 * the script), a profiles file naming it, the credential in the daemon's
 * environment only — and each call's path tells what the broker did on the
 * host: the egress events the daemon recorded (ListEvents) and what the
 * upstream saw (whether the credential came, never its value). The
 * credential is the script's test value; no recording that holds it in any
 * form is written. */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct rec_egress {
	char ca[4200], ca_key[4200], cert[4200], key[4200], profiles[4200], seen[4200], log[4200];
	char port[16];
	const char *addr, *cred_env, *cred_value;
	pid_t upstream;
	int64_t events_after; /* the last event id already told */
	long seen_off;	      /* the upstream's lines already told */
	bh_client *op;	      /* the recorder's own look at the events: not a worker's */
};

static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Runs argv (no shell), quiet; 0 when it exited 0. */
static int run_quiet(const char *const *argv, const char *dir)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
		}
		if (dir && chdir(dir) < 0)
			_exit(126);
		execvp(argv[0], (char **)argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The CA and the upstream's certificate (for its address), as the broker's
 * tests make them: the recording's own, gone with its directory. */
static int make_certs(struct recording *r, struct rec_egress *e)
{
	const char *dir = r->d.dir;
	snprintf(e->ca, sizeof e->ca, "%s/testca.pem", dir);
	snprintf(e->ca_key, sizeof e->ca_key, "%s/testca.key", dir);
	snprintf(e->cert, sizeof e->cert, "%s/upstream.pem", dir);
	snprintf(e->key, sizeof e->key, "%s/upstream.key", dir);
	char ext[4200], csr[4200], san[128];
	snprintf(ext, sizeof ext, "%s/upstream.ext", dir);
	snprintf(csr, sizeof csr, "%s/upstream.csr", dir);
	snprintf(san, sizeof san, "subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n", e->addr);
	FILE *f = fopen(ext, "w");
	if (!f || fputs(san, f) < 0 || fclose(f) != 0)
		return -1;
	const char *ca[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
			    "-nodes", "-keyout", e->ca_key, "-out", e->ca, "-days", "2", "-subj",
			    "/CN=bulkhead recording test CA", "-addext", "basicConstraints=critical,CA:TRUE",
			    "-addext", "keyUsage=critical,keyCertSign", NULL};
	const char *req[] = {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			     "-keyout", e->key, "-out", csr, "-subj", "/CN=upstream", NULL};
	const char *sign[] = {"openssl", "x509", "-req", "-in", csr, "-CA", e->ca, "-CAkey", e->ca_key,
			      "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", e->cert, NULL};
	return run_quiet(ca, dir) == 0 && run_quiet(req, dir) == 0 && run_quiet(sign, dir) == 0 ? 0 : -1;
}

static int write_profiles(struct recording *r, struct rec_egress *e, const cJSON *lines)
{
	snprintf(e->profiles, sizeof e->profiles, "%s/profiles", r->d.dir);
	int fd = open(e->profiles, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
		fprintf(f, "%s\n", cJSON_IsString(l) ? l->valuestring : "");
	return fclose(f) == 0 ? 0 : -1;
}

/* Starts argv (this binary when self) with its stdout on a pipe and its
 * stderr appended to log; the pipe's reading end in *out. */
static pid_t spawn_reading(const char *const *argv, bool self, const char *log, int *out)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		dup2(p[1], 1);
		if (fd >= 0)
			dup2(fd, 2);
		close(p[0]);
		close(p[1]);
		if (self)
			execv("/proc/self/exe", (char **)argv);
		else
			execvp(argv[0], (char **)argv);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

/* upstream.py beside the script, on the script's address and port; ready
 * when it says so (or gone: its log says why). */
static int start_upstream(struct recording *r, struct rec_egress *e)
{
	char py[4200], dir[4096];
	snprintf(dir, sizeof dir, "%s", r->script_path);
	char *slash = strrchr(dir, '/');
	snprintf(py, sizeof py, "%s/upstream.py", slash ? (*slash = '\0', dir) : ".");
	snprintf(e->seen, sizeof e->seen, "%s/upstream.seen", r->d.dir);
	snprintf(e->log, sizeof e->log, "%s/upstream.log", r->d.dir);
	const char *argv[] = {"python3", py, "--addr", e->addr, "--port", e->port, "--cert", e->cert,
			      "--key", e->key, "--credential-env", e->cred_env, "--seen", e->seen, NULL};
	int fd;
	pid_t pid = spawn_reading(argv, false, e->log, &fd);
	if (pid < 0)
		return -1;
	e->upstream = pid;
	char line[64] = "";
	FILE *f = fdopen(fd, "r");
	bool ready = f && fgets(line, sizeof line, f) && !strncmp(line, "listening", 9);
	if (f)
		fclose(f);
	else
		close(fd);
	if (!ready) {
		/* The log goes with the recording's directory: say its last line. */
		char last[512] = "", buf[512];
		FILE *log = fopen(e->log, "r");
		while (log && fgets(buf, sizeof buf, log))
			if (buf[0] != '\n')
				snprintf(last, sizeof last, "%s", buf);
		if (log)
			fclose(log);
		last[strcspn(last, "\n")] = '\0';
		cli_error("%s: the recording's upstream did not start on %s:%s: %s", r->script_path, e->addr,
			  e->port, *last ? last : "it said nothing");
	}
	return ready ? 0 : -1;
}

/* The script's principal (default "agent"): a token of the recording's
 * clients file, scopes code:run and operator, for every client it makes. */
static int make_principal(struct recording *r, const char *name)
{
	snprintf(r->d.clients, sizeof r->d.clients, "%s/clients", r->d.dir);
	const char *argv[] = {"bulkhead", "token", "create", name, "--scope", "code:run,operator",
			      "--clients", r->d.clients, NULL};
	int fd;
	pid_t pid = spawn_reading(argv, true, "/dev/null", &fd); /* its notes about the token: not ours */
	if (pid < 0)
		return -1;
	ssize_t n = read(fd, r->d.token, sizeof r->d.token - 1);
	close(fd);
	int st;
	waitpid(pid, &st, 0);
	r->d.token[n > 0 ? n : 0] = '\0';
	r->d.token[strcspn(r->d.token, "\n")] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !*r->d.token) {
		explicit_bzero(r->d.token, sizeof r->d.token);
		cli_error("%s: could not make the recording's principal %s", r->script_path, name);
		return -1;
	}
	return 0;
}

int rec_egress_setup(struct recording *r)
{
	const cJSON *block = cJSON_GetObjectItemCaseSensitive(r->script, "egress");
	if (!block)
		return 0;
	struct rec_egress *e = calloc(1, sizeof *e);
	if (!e)
		return -1;
	r->egress = e;
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(block, "upstream"),
		    *cred = cJSON_GetObjectItemCaseSensitive(block, "credential"),
		    *lines = cJSON_GetObjectItemCaseSensitive(block, "profiles");
	e->addr = rec_str(up, "addr", NULL);
	e->cred_env = rec_str(cred, "env", NULL);
	e->cred_value = rec_str(cred, "value", NULL);
	int port = (int)rec_num(up, "port", 0);
	if (!e->addr || strncmp(e->addr, "127.", 4) || port <= 0 || port > 65535 || !e->cred_env ||
	    !e->cred_value || strlen(e->cred_value) < 12 || !cJSON_IsArray(lines)) {
		cli_error("%s: \"egress\" is {\"upstream\": {\"addr\": a 127.x address, \"port\"}, "
			  "\"credential\": {\"env\", \"value\" (12 characters or more)}, \"profiles\": [lines]}",
			  r->script_path);
		return -1;
	}
	snprintf(e->port, sizeof e->port, "%d", port);
	/* The daemon reads it from its environment (the profile's `credential
	 * env`); the upstream checks it. Nothing else of the recording's has it. */
	if (setenv(e->cred_env, e->cred_value, 1) < 0)
		return -1;
	if (make_principal(r, rec_str(r->script, "principal", "agent")) < 0)
		return -1;
	if (make_certs(r, e) < 0) {
		cli_error("%s: could not make the recording's test CA (openssl)", r->script_path);
		return -1;
	}
	if (write_profiles(r, e, lines) < 0) {
		cli_error("%s: could not write the profiles file: %s", r->script_path, strerror(errno));
		return -1;
	}
	if (start_upstream(r, e) < 0)
		return -1;
	size_t room = sizeof r->d.args / sizeof r->d.args[0];
	if (r->d.n_args + 4 > room) {
		cli_error("%s: too many daemon_args for an egress recording", r->script_path);
		return -1;
	}
	r->d.args[r->d.n_args++] = "--profiles";
	r->d.args[r->d.n_args++] = e->profiles;
	r->d.args[r->d.n_args++] = "--upstream-ca";
	r->d.args[r->d.n_args++] = e->ca;
	return 0;
}

int rec_egress_begin(struct recording *r)
{
	struct rec_egress *e = r->egress;
	if (!e)
		return 0;
	struct bh_client_options co = {.target = r->d.sock, .token = r->d.token};
	struct bh_client_error *err = NULL;
	struct wire_operator_events page = {0};
	if (bh_client_new(&co, &e->op, &err) < 0 || bh_client_list_events(e->op, 0, 1000, 0, &page, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return -1;
	}
	for (size_t i = 0; i < page.n; i++)
		e->events_after = page.events[i].id > e->events_after ? page.events[i].id : e->events_after;
	wire_operator_events_free(&page);
	return 0;
}

/* The upstream's lines since the last call's. */
static void upstream_saw(struct rec_egress *e, cJSON *into, char *words, size_t n)
{
	FILE *f = fopen(e->seen, "r");
	words[0] = '\0';
	if (!f)
		return;
	fseek(f, e->seen_off, SEEK_SET);
	char line[512];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		cJSON_AddItemToArray(into, cJSON_CreateString(line));
		/* "GET /v1/orders/1001 credential=matched" */
		char *cred = strstr(line, " credential=");
		const char *came = cred ? cred + 12 : "";
		if (cred)
			*cred = '\0';
		size_t used = strlen(words);
		snprintf(words + used, n - used, "%s%s %s", *words ? "; " : "", line,
			 !strcmp(came, "matched") ? "with the credential the broker added"
			 : !strcmp(came, "none")  ? "with no credential"
						  : "with a credential that is not the profile's");
	}
	e->seen_off = ftell(f);
	fclose(f);
}

/* The egress events after the last told, waiting (a long poll, 5 s at
 * most) until want of them came: the broker notes a request once its
 * answer is written, so the cell's answer can come first. A request's
 * event ("GET origin route R -> 200; out 0 B, in 70 B, 6 ms; profile P")
 * goes to requests, a session's ("holds profile P: ...") to others; the
 * words keep what holds still between recordings (not the ms: the whole
 * detail is on the wire). */
static size_t new_events(struct rec_egress *e, size_t want, cJSON *into, char *requests, char *others,
			 size_t n)
{
	size_t got = 0;
	requests[0] = others[0] = '\0';
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct wire_operator_events page = {0};
		struct bh_client_error *err = NULL;
		if (bh_client_list_events(e->op, e->events_after, 100, got < want ? 500 : 0, &page, &err) < 0) {
			bh_client_error_free(err);
			return got;
		}
		for (size_t i = 0; i < page.n; i++) {
			const struct bh_event *ev = &page.events[i];
			e->events_after = ev->id > e->events_after ? ev->id : e->events_after;
			if (strcmp(ev->kind, "egress"))
				continue;
			got++;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "kind", ev->kind);
			cJSON_AddStringToObject(o, "actor", ev->actor ? ev->actor : "");
			cJSON_AddStringToObject(o, "detail", ev->detail ? ev->detail : "");
			cJSON_AddItemToArray(into, o);
			const char *d = ev->detail ? ev->detail : "";
			const char *ms = strstr(d, " ms;");
			size_t keep = strlen(d);
			if (ms) {
				const char *comma = ms;
				while (comma > d && *comma != ',')
					comma--;
				keep = (size_t)(comma - d);
			}
			char *to = strstr(d, " -> ") ? requests : others;
			size_t used = strlen(to);
			snprintf(to + used, n - used, "%s%.*s", *to ? "; " : "", (int)keep, d);
		}
		wire_operator_events_free(&page);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (got >= want || (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > 5000)
			return got;
		nap_ms(50);
	}
}

void rec_egress_annotate(struct recording *r, const cJSON *src, cJSON *path)
{
	struct rec_egress *e = r->egress;
	if (!e)
		return;
	const char *profile = rec_grant_profile_for(r, rec_str(src, "run", "run-1"), NULL);
	/* Told where the step reached deepest: the sandbox, else the daemon. */
	cJSON *at = NULL, *v;
	cJSON_ArrayForEach(v, path)
		if (!strcmp(rec_str(v, "leg", ""), "down") &&
		    (!strcmp(rec_str(v, "hop", ""), "sandbox") || !strcmp(rec_str(v, "hop", ""), "daemon")))
			at = v;
	bool in_sandbox = at && !strcmp(rec_str(at, "hop", ""), "sandbox");
	size_t want = (size_t)rec_num(src, "egress_events", 0);
	cJSON *wire = cJSON_CreateObject();
	cJSON *evs = cJSON_AddArrayToObject(wire, "egressEvents");
	cJSON *saw = cJSON_AddArrayToObject(wire, "upstreamSaw");
	char requests[2048], others[1024], seen[2048];
	size_t got = new_events(e, want, evs, requests, others, sizeof others);
	upstream_saw(e, saw, seen, sizeof seen);
	if (!at || (!got && !cJSON_GetArraySize(saw))) {
		cJSON_Delete(wire);
		return;
	}
	/* What the broker did first: on 24 lines the narrator shows three. */
	char words[6000];
	size_t u = 0;
	words[0] = '\0';
	if (*requests || (in_sandbox && cJSON_GetObjectItemCaseSensitive(src, "call")))
		u += (size_t)snprintf(
			words, sizeof words,
			"The broker on the host (profile %s) took the cell's requests: %s. The upstream saw %s.%s "
			"The sandbox reaches the broker only through its relay (127.0.0.1:3128) and "
			"/run/host-api.sock; the credential stays on the host, with the broker. ",
			profile ? profile : "(none)", *requests ? requests : "no request", *seen ? seen : "nothing",
			strstr(requests, ", refused: ")
				? " A refused request goes no further: no credential is added, nothing is sent "
				  "upstream."
				: "");
	u += (size_t)snprintf(words + u, sizeof words - u, "%s", rec_str(at, "narration", ""));
	if (*others)
		snprintf(words + u, sizeof words - u, " The daemon's egress event: %s.", others);
	cJSON_ReplaceItemInObject(at, "narration", cJSON_CreateString(words));
	char *text = cJSON_PrintUnformatted(wire);
	cJSON_Delete(wire);
	/* The daemon's hop keeps its request on the wire; the sandbox's is free. */
	if (in_sandbox && !cJSON_GetObjectItemCaseSensitive(at, "wire")) {
		cJSON *w = cJSON_CreateObject();
		cJSON_AddStringToObject(w, "what", "the broker's egress events (ListEvents) and what the upstream saw");
		cJSON_AddStringToObject(w, "text", text ? text : "");
		cJSON_AddItemToObject(at, "wire", w);
	}
	free(text);
}

const char *rec_grant_profile_for(void *arg, const char *key, const char *owner)
{
	(void)owner;
	const struct recording *r = arg;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(r->script, "manager");
	const char *per = rec_str(cJSON_GetObjectItemCaseSensitive(m, "grant_profiles"), key, NULL);
	return per ? per : rec_str(m, "grant_profile", NULL);
}

/* ---- the credential, in the forms a scrub might miss ---- */

static void base64(const unsigned char *in, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = '\0';
}

bool rec_egress_leaks(const struct recording *r, const char *text)
{
	const struct rec_egress *e = r->egress;
	if (!e || !e->cred_value)
		return false;
	if (*r->d.token && strstr(text, r->d.token))
		return true; /* the principal's bearer token is a secret too */
	const char *c = e->cred_value;
	size_t n = strlen(c);
	char b64[512], hex[512], url[1024];
	if (n > 160)
		return strstr(text, c) != NULL;
	/* The value's first 12 characters catch a cut copy; base64 (without
	 * its padding), hex in either case and percent-encoding the encoded
	 * echoes a scrub of the raw value would miss. */
	base64((const unsigned char *)c, n, b64);
	b64[strlen(b64) - (n % 3 ? 3 - n % 3 : 0)] = '\0'; /* without its padding */
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)c[i]);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		u += (size_t)snprintf(url + u, sizeof url - u, "%%%02X", (unsigned char)c[i]);
	char head[13];
	snprintf(head, sizeof head, "%.12s", c);
	return strstr(text, head) || strstr(text, b64) || strcasestr(text, hex) || strcasestr(text, url);
}

void rec_egress_stop(struct recording *r)
{
	struct rec_egress *e = r->egress;
	if (!e)
		return;
	bh_client_free(e->op);
	if (e->upstream > 0) {
		kill(e->upstream, SIGTERM);
		waitpid(e->upstream, NULL, 0);
	}
	if (e->cred_env)
		unsetenv(e->cred_env);
	explicit_bzero(r->d.token, sizeof r->d.token);
	free(e);
	r->egress = NULL;
}
