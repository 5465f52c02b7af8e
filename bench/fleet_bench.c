/* bulkhead-bench-fleet: what the fleet costs and how fast it recovers.
 *
 * A three-node nats-server cluster on loopback (the fleet tests' harness,
 * tests/fleet/nats_cluster.c) and three `bulkhead serve --fleet` daemons,
 * each with its own state directory and unix socket, sharing one images
 * directory; then, measured in one run:
 *
 *  1. forwarding: a warm python cell sent to the host that holds its session
 *     (direct) and the same cell sent to another host (forwarded over NATS
 *     to the holder, its answer relayed back), back to back in alternating
 *     order, N rounds; the figure is the median of the pair-by-pair
 *     differences, so drift cancels;
 *  2. opens a second across the three hosts: one client per host opening
 *     sessions one after another, the three at once (placement decides where
 *     each lands: how many were forwarded is reported);
 *  3. recovery: sessions hibernated on one host, that host killed (-9), and
 *     from the kill to each session answering through another host (found
 *     gone, claimed, adopted from the shared images directory, restored),
 *     its variable intact.
 *
 *   bulkhead-bench-fleet [--rounds N] [--opens N] [--hibernated N] [--root DIR]
 *                        [--gone-ms MS] [--keep]
 * (N: 200 rounds, 6 opens per host, 3 hibernated; --gone-ms 2000). Prints a
 * Markdown table; the daemons' logs stay under the root with --keep. */
#include "fleet.h"
#include "nats_cluster.h"
#include "stats.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOSTS 3
#define HEARTBEAT_MS 500
#define SVC "/plimsoll.v1.SandboxService/"
#define OPS "/bulkhead.v1.OperatorService/"

static struct {
	unsigned rounds, opens, hibernated, gone_ms;
	bool keep;
	char root[4096];
	const char *cli, *interp;
} opt = {.rounds = 200, .opens = 6, .hibernated = 3, .gone_ms = 2000, .cli = BENCH_CLI,
	 .interp = BENCH_INTERP};

struct host {
	char id[16], dir[4200], sock[4300], state[4300];
	pid_t pid;
};
static struct host hosts[HOSTS];
static struct nats_cluster *nats;
static bh_fleet *watch;
static char images[4200];

static void stop_all(void);

/* Says why, stops every daemon and the cluster (their logs stay with --keep). */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	static bool dying;
	va_list ap;
	va_start(ap, fmt);
	fputs("bulkhead-bench-fleet: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (!dying) {
		dying = true;
		stop_all();
	}
	exit(1);
}

/* ---- one HTTP exchange over a host's unix socket ---- */

struct http {
	CURL *c;
	struct curl_slist *headers;
	char *body;
	size_t len, cap;
	long status;
	double took_us;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct http *h = arg;
	size_t len = size * n;
	if (h->len + len + 1 > h->cap) {
		h->cap = (h->len + len + 1) * 2;
		h->body = realloc(h->body, h->cap);
		if (!h->body)
			abort();
	}
	memcpy(h->body + h->len, p, len);
	h->len += len;
	h->body[h->len] = '\0';
	return len;
}

static void http_init(struct http *h)
{
	memset(h, 0, sizeof *h);
	h->c = curl_easy_init();
	h->headers = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT, 120L);
}

static void http_free(struct http *h)
{
	curl_slist_free_all(h->headers);
	curl_easy_cleanup(h->c);
	free(h->body);
}

/* POSTs body to path on host i (a GET when body is NULL); the parsed answer
 * when it is 200 and JSON, else NULL (h->status and h->body say what came). */
static cJSON *http_call(struct http *h, int i, const char *path, const char *body)
{
	char url[512];
	snprintf(url, sizeof url, "http://localhost%s", path);
	h->len = 0;
	if (h->body)
		h->body[0] = '\0';
	h->status = 0;
	curl_easy_setopt(h->c, CURLOPT_UNIX_SOCKET_PATH, hosts[i].sock);
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	if (body) {
		curl_easy_setopt(h->c, CURLOPT_POST, 1L);
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else {
		curl_easy_setopt(h->c, CURLOPT_HTTPGET, 1L);
	}
	double t0 = now_us();
	CURLcode rc = curl_easy_perform(h->c);
	h->took_us = now_us() - t0;
	if (rc == CURLE_OK)
		curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &h->status);
	if (rc != CURLE_OK || h->status != 200)
		return NULL;
	return cJSON_Parse(h->body ? h->body : "");
}

/* ---- sessions ---- */

struct sess {
	char id[128], fp[65];
};

static void fingerprint_of(const char *id, char out[65])
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)id, strlen(id), d);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int open_session(struct http *h, int via, struct sess *s)
{
	cJSON *j = http_call(h, via, SVC "OpenSession", "{\"protocol\":3,\"languages\":[\"python\"]}");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "sessionId");
	int rc = -1;
	if (cJSON_IsString(id) && strlen(id->valuestring) < sizeof s->id) {
		snprintf(s->id, sizeof s->id, "%s", id->valuestring);
		fingerprint_of(s->id, s->fp);
		rc = 0;
	}
	cJSON_Delete(j);
	return rc;
}

/* A python cell through host via: its stdout into out (n bytes), or -1. */
static int run_cell(struct http *h, int via, const struct sess *s, const char *code, char *out,
		    size_t n)
{
	cJSON *req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "protocol", 3);
	cJSON_AddStringToObject(req, "sessionId", s->id);
	cJSON *c = cJSON_AddObjectToObject(req, "cell");
	cJSON_AddStringToObject(c, "language", "python");
	cJSON_AddStringToObject(c, "code", code);
	char *body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	cJSON *j = http_call(h, via, SVC "SessionRun", body);
	free(body);
	const cJSON *cell = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "run"),
							      "cell");
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(cell, "stdout");
	int rc = cell ? 0 : -1;
	if (out && n) {
		out[0] = '\0';
		/* bytes fields are base64 in plimsoll's JSON */
		size_t b64 = cJSON_IsString(so) ? strlen(so->valuestring) : 0;
		if (b64 && b64 / 4 * 3 < n) {
			int got = EVP_DecodeBlock((unsigned char *)out,
						  (const unsigned char *)so->valuestring, (int)b64);
			got -= (int)(b64 >= 1 && so->valuestring[b64 - 1] == '=') +
			       (int)(b64 >= 2 && so->valuestring[b64 - 2] == '=');
			out[got > 0 ? got : 0] = '\0';
		}
	}
	cJSON_Delete(j);
	return rc;
}

static void close_session(struct http *h, int via, const struct sess *s)
{
	char body[256];
	snprintf(body, sizeof body, "{\"protocol\":3,\"sessionId\":\"%s\"}", s->id);
	cJSON_Delete(http_call(h, via, SVC "CloseSession", body));
}

/* ---- the fleet as an observer sees it ---- */

static void pump(int ms)
{
	struct pollfd p = {.fd = bh_fleet_fd(watch), .events = POLLIN};
	poll(&p, 1, ms);
	bh_fleet_process(watch);
}

static int host_index(const char *id)
{
	for (int i = 0; i < HOSTS; i++)
		if (!strcmp(hosts[i].id, id))
			return i;
	return -1;
}

/* Which host the directory says holds fp in state st (-1: not within 10 s). */
static int holder(const char *fp, enum bh_fleet_entry_state st)
{
	for (int t = 0; t < 1000; t++) {
		struct bh_fleet_entry e;
		if (bh_fleet_lookup(watch, fp, &e) == 0 && e.state == st)
			return host_index(e.host);
		pump(10);
	}
	return -1;
}

static size_t live_hosts(void)
{
	struct bh_fleet_host *h = NULL;
	size_t n = bh_fleet_hosts(watch, &h), live = 0;
	for (size_t i = 0; i < n; i++)
		live += !h[i].gone;
	free(h);
	return live;
}

static void set_drain(int i, bool on)
{
	if (bh_fleet_set_drain(watch, hosts[i].id, on, NULL, NULL) < 0)
		die("could not set the drain of %s", hosts[i].id);
	for (int t = 0; t < 1000; t++) {
		struct bh_fleet_host h;
		if (bh_fleet_host(watch, hosts[i].id, &h) == 0 && h.draining == on)
			return;
		pump(10);
	}
	die("%s never said draining=%d", hosts[i].id, on);
}

/* ---- the hosts ---- */

static void host_start(int i)
{
	struct host *h = &hosts[i];
	char id[sizeof h->id];
	snprintf(id, sizeof id, "host-%c", 'a' + i);
	memcpy(h->id, id, sizeof id);
	snprintf(h->dir, sizeof h->dir, "%s/%s", opt.root, id);
	snprintf(h->sock, sizeof h->sock, "%s/%s/sock", opt.root, id);
	snprintf(h->state, sizeof h->state, "%s/%s/state", opt.root, id);
	mkdir(h->dir, 0711);
	mkdir(h->state, 0711);
	chmod(h->state, 0711);
	char log[4400], evidence[4200], gone[16], beat[16];
	snprintf(log, sizeof log, "%s/daemon.log", h->dir);
	snprintf(evidence, sizeof evidence, "%s/evidence", opt.root);
	snprintf(gone, sizeof gone, "%u", opt.gone_ms);
	snprintf(beat, sizeof beat, "%u", HEARTBEAT_MS);
	int out[2];
	if (pipe(out) < 0)
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	h->pid = fork();
	if (h->pid < 0)
		die("fork: %s", strerror(errno));
	if (h->pid == 0) {
		signal(SIGINT, SIG_IGN); /* the bench stops it with SIGTERM */
		dup2(out[1], 1);
		int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (lf >= 0)
			dup2(lf, 2);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		setenv("BULKHEAD_INTERP", opt.interp, 1);
		setenv("BULKHEAD_EVIDENCE", evidence, 1);
		execl(opt.cli, opt.cli, "serve", "--no-config", "--open", "--socket", h->sock,
		      "--state", h->state, "--fleet", nats_cluster_urls(nats), "--host-id", h->id,
		      "--images-dir", images, "--fleet-heartbeat-ms", beat, "--fleet-gone-ms", gone,
		      "--rate", "1000000", "--max-sessions", "64", "--shutdown", "hibernate",
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	char line[8192] = "";
	char *got = fgets(line, sizeof line, f);
	fclose(f);
	if (!got || strncmp(line, "ready ", 6))
		die("%s did not start (its log: %s)", h->id, log);
	struct http hc;
	http_init(&hc);
	for (int t = 0; t < 3000; t++) {
		cJSON_Delete(http_call(&hc, i, "/readyz", NULL));
		if (hc.status == 200)
			break;
		usleep(100 * 1000);
	}
	http_free(&hc);
	if (hc.status != 200)
		die("%s never became ready (its log: %s)", h->id, log);
}

/* SIGTERM, or a killed host's leftovers collected. */
static void host_stop(int i)
{
	struct host *h = &hosts[i];
	if (h->pid > 0) {
		kill(h->pid, SIGTERM);
		int st;
		for (int t = 0; t < 1200 && h->pid > 0; t++) {
			if (waitpid(h->pid, &st, WNOHANG) == h->pid)
				h->pid = 0;
			else
				usleep(50 * 1000);
		}
		if (h->pid > 0) {
			kill(h->pid, SIGKILL);
			waitpid(h->pid, &st, 0);
			h->pid = 0;
		}
	}
	if (!h->state[0])
		return;
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "BULKHEAD_INTERP='%s' '%s' gc --state '%s' >/dev/null 2>&1",
		 opt.interp, opt.cli, h->state);
	if (system(cmd) != 0)
		fprintf(stderr, "bulkhead-bench-fleet: gc on %s failed\n", h->state);
}

static void stop_all(void)
{
	for (int i = 0; i < HOSTS; i++)
		host_stop(i);
	if (watch)
		bh_fleet_close(watch);
	watch = NULL;
	if (nats)
		nats_cluster_stop(nats);
	nats = NULL;
	if (!opt.keep && opt.root[0]) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", opt.root);
		if (system(cmd) != 0)
			fprintf(stderr, "bulkhead-bench-fleet: could not remove %s\n", opt.root);
	}
}

static void on_signal(int sig)
{
	(void)sig;
	stop_all();
	_exit(130);
}

/* ---- 1. a forwarded call against the same call made directly ---- */

static void bench_forwarding(void)
{
	struct http h;
	http_init(&h);
	struct sess s;
	if (open_session(&h, 0, &s) < 0)
		die("OpenSession: HTTP %ld %.300s", h.status, h.body ? h.body : "");
	int owner = holder(s.fp, BH_FLEET_LIVE);
	if (owner < 0)
		die("the directory never listed the session");
	int other = (owner + 1) % HOSTS;
	char out[64];
	if (run_cell(&h, owner, &s, "x = 1", out, sizeof out) < 0 ||
	    run_cell(&h, other, &s, "x = 2", out, sizeof out) < 0)
		die("the first cells: HTTP %ld %.300s", h.status, h.body ? h.body : "");
	struct samples direct = {0}, forwarded = {0}, diff = {0};
	for (unsigned r = 0; r < opt.rounds; r++) {
		double t[2];
		for (int k = 0; k < 2; k++) {
			bool fwd = (k == 0) == (r % 2 == 1); /* alternate the order */
			if (run_cell(&h, fwd ? other : owner, &s, "x += 1", NULL, 0) < 0)
				die("round %u: HTTP %ld %.300s", r, h.status, h.body ? h.body : "");
			t[fwd] = h.took_us;
		}
		samples_add(&direct, t[0] / 1000.0);
		samples_add(&forwarded, t[1] / 1000.0);
		samples_add(&diff, (t[1] - t[0]) / 1000.0);
	}
	close_session(&h, other, &s);
	struct summary d = summarize(&direct), f = summarize(&forwarded), x = summarize(&diff);
	printf("| warm python cell, direct to its host (unix socket) | %.3f ms | p95 %.3f ms | %zu |\n",
	       d.median, d.p95, d.n);
	printf("| the same cell through another host (forwarded over NATS) | %.3f ms | p95 %.3f ms | %zu |\n",
	       f.median, f.p95, f.n);
	printf("| forwarding's added latency (median of pair-by-pair differences) | **%.3f ms** | "
	       "p95 %.3f ms | %zu pairs |\n",
	       x.median, percentile(&diff, 0.95), x.n);
	samples_free(&direct);
	samples_free(&forwarded);
	samples_free(&diff);
	http_free(&h);
}

/* ---- 2. opens a second across three hosts ---- */

struct opener {
	int via;
	struct sess *s;
	unsigned n, ok;
	pthread_barrier_t *go;
};

static void *open_many(void *arg)
{
	struct opener *o = arg;
	struct http h;
	http_init(&h);
	pthread_barrier_wait(o->go);
	for (unsigned k = 0; k < o->n; k++)
		o->ok += open_session(&h, o->via, &o->s[k]) == 0;
	http_free(&h);
	return NULL;
}

static void bench_opens(void)
{
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, HOSTS + 1);
	struct opener o[HOSTS];
	pthread_t th[HOSTS];
	for (int i = 0; i < HOSTS; i++) {
		o[i] = (struct opener){.via = i, .n = opt.opens, .go = &go};
		o[i].s = calloc(opt.opens, sizeof *o[i].s);
		pthread_create(&th[i], NULL, open_many, &o[i]);
	}
	pthread_barrier_wait(&go);
	double t0 = now_us();
	unsigned ok = 0;
	for (int i = 0; i < HOSTS; i++) {
		pthread_join(th[i], NULL);
		ok += o[i].ok;
	}
	double took_s = (now_us() - t0) / 1e6;
	unsigned placed[HOSTS] = {0}, forwarded = 0;
	struct http h;
	http_init(&h);
	for (int i = 0; i < HOSTS; i++)
		for (unsigned k = 0; k < o[i].ok; k++) {
			int at = holder(o[i].s[k].fp, BH_FLEET_LIVE);
			if (at >= 0) {
				placed[at]++;
				forwarded += at != i;
			}
			close_session(&h, i, &o[i].s[k]);
		}
	http_free(&h);
	printf("| opens a second, three hosts at once, kernel tier, python started | **%.2f /s** | "
	       "%u opened in %.2f s (%u refused); placed %u / %u / %u, %u of them forwarded | — |\n",
	       ok / took_s, ok, took_s, HOSTS * opt.opens - ok, placed[0], placed[1], placed[2],
	       forwarded);
	for (int i = 0; i < HOSTS; i++)
		free(o[i].s);
	pthread_barrier_destroy(&go);
}

/* ---- 3. from a host's death to its hibernated sessions answering elsewhere ---- */

static void bench_recovery(void)
{
	const int victim = HOSTS - 1, via = 0;
	struct http h;
	http_init(&h);
	unsigned n = opt.hibernated;
	struct sess *s = calloc(n, sizeof *s);
	for (int i = 0; i < HOSTS; i++)
		if (i != victim)
			set_drain(i, true); /* so that every open lands on the victim */
	for (unsigned k = 0; k < n; k++) {
		char code[64];
		snprintf(code, sizeof code, "kept = 'conversation %u'", k);
		if (open_session(&h, victim, &s[k]) < 0 || run_cell(&h, victim, &s[k], code, NULL, 0) < 0)
			die("a session on the victim: HTTP %ld %.300s", h.status, h.body ? h.body : "");
		char body[256];
		snprintf(body, sizeof body, "{\"session\":\"%s\"}", s[k].fp);
		cJSON_Delete(http_call(&h, victim, OPS "Hibernate", body));
		if (h.status != 200)
			die("Hibernate: HTTP %ld %.300s", h.status, h.body ? h.body : "");
		if (holder(s[k].fp, BH_FLEET_HIBERNATED) != victim)
			die("the directory never listed session %u hibernated on the victim", k);
	}
	for (int i = 0; i < HOSTS; i++)
		if (i != victim)
			set_drain(i, false);
	kill(hosts[victim].pid, SIGKILL);
	double t0 = now_us();
	waitpid(hosts[victim].pid, NULL, 0);
	hosts[victim].pid = 0;
	struct samples answered = {0}, restore = {0};
	unsigned tries = 0;
	for (unsigned k = 0; k < n; k++) {
		char want[64], out[128];
		snprintf(want, sizeof want, "conversation %u\n", k);
		for (;;) {
			tries++;
			if (run_cell(&h, via, &s[k], "print(kept)", out, sizeof out) == 0) {
				if (strcmp(out, want))
					die("session %u answered %s after its adoption", k, out);
				break;
			}
			if ((now_us() - t0) / 1e6 > 120)
				die("session %u did not answer within 120 s of the kill: HTTP %ld %.300s", k,
				    h.status, h.body ? h.body : "");
			usleep(20 * 1000);
		}
		samples_add(&answered, (now_us() - t0) / 1000.0);
		samples_add(&restore, h.took_us / 1000.0);
	}
	while (live_hosts() != HOSTS - 1)
		pump(50);
	for (unsigned k = 0; k < n; k++)
		close_session(&h, via, &s[k]);
	struct summary a = summarize(&answered), r = summarize(&restore);
	printf("| a killed host's hibernated sessions: from kill -9 to answering through another host "
	       "(gone after %u ms) | first **%.0f ms**, last %.0f ms | the adopting call itself: median "
	       "%.0f ms | %zu sessions, %u calls |\n",
	       opt.gone_ms, a.min, a.max, r.median, a.n, tries);
	samples_free(&answered);
	samples_free(&restore);
	free(s);
	http_free(&h);
}

static unsigned number(const char *flag, const char *v)
{
	char *end = NULL;
	unsigned long x = v ? strtoul(v, &end, 10) : 0;
	if (!v || !*v || *end || x == 0 || x > 100000)
		die("%s needs a whole number from 1 to 100000, not \"%s\"", flag, v ? v : "");
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--rounds"))
			opt.rounds = number(a, v), i++;
		else if (!strcmp(a, "--opens"))
			opt.opens = number(a, v), i++;
		else if (!strcmp(a, "--hibernated"))
			opt.hibernated = number(a, v), i++;
		else if (!strcmp(a, "--gone-ms"))
			opt.gone_ms = number(a, v), i++;
		else if (!strcmp(a, "--root") && v)
			snprintf(opt.root, sizeof opt.root, "%s", v), i++;
		else if (!strcmp(a, "--keep"))
			opt.keep = true;
		else {
			fprintf(stderr, "usage: bulkhead-bench-fleet [--rounds N] [--opens N] "
					"[--hibernated N] [--gone-ms MS] [--root DIR] [--keep]\n");
			return 2;
		}
	}
	if (!opt.root[0]) {
		snprintf(opt.root, sizeof opt.root, "/tmp/bh-bench-fleet.XXXXXX");
		if (!mkdtemp(opt.root))
			die("mkdtemp: %s", strerror(errno));
	} else if (mkdir(opt.root, 0711) < 0 && errno != EEXIST) {
		die("%s: %s", opt.root, strerror(errno));
	}
	chmod(opt.root, 0711);
	setenv("BULKHEAD_TEST_ROOT", opt.root, 1); /* where the cluster harness keeps its nodes */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(images, sizeof images, "%s/images", opt.root);
	mkdir(images, 0711);
	chmod(images, 0711);

	time_t now = time(NULL);
	char started[32];
	strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	double t0 = now_us();
	nats = nats_cluster_start(HOSTS);
	struct bh_fleet_config fc = {.servers = nats_cluster_urls(nats)};
	char *why = NULL;
	if (bh_fleet_open(&fc, &watch, &why) < 0)
		die("the observer: %s", why);
	for (int i = 0; i < HOSTS; i++)
		host_start(i);
	for (int t = 0; t < 1000 && live_hosts() != HOSTS; t++)
		pump(20);
	if (live_hosts() != HOSTS)
		die("the fleet never showed %d live hosts", HOSTS);
	double loadavg[1] = {0};
	getloadavg(loadavg, 1);
	printf("bulkhead-bench-fleet, %s: three nats-server %s nodes and three `serve --fleet` daemons "
	       "on loopback (heartbeat %d ms, gone after %u ms), load %.2f at the start\n\n",
	       started, "2.9", HEARTBEAT_MS, opt.gone_ms, loadavg[0]);
	printf("| figure | median | spread | n |\n|---|---|---|---|\n");
	fflush(stdout);
	bench_forwarding();
	fflush(stdout);
	bench_opens();
	fflush(stdout);
	bench_recovery();
	getloadavg(loadavg, 1);
	printf("\n%.0f s in all, load %.2f at the end\n", (now_us() - t0) / 1e6, loadavg[0]);
	stop_all();
	curl_global_cleanup();
	return 0;
}
