/* Load: one real `bulkhead serve --tier container` driven over its unix
 * socket by many sessions at once, from one thread with libcurl's multi
 * interface (each session has at most one call in flight; its next call is
 * sent when the previous one is answered).
 *
 *   sessions_under_load: 32 sessions opened concurrently (python warmed),
 *     then 100 cells each, concurrently, then all closed concurrently.
 *   open_close_churn:    16 sessions that each open, run 5 cells and close,
 *     10 times over, concurrently.
 *   sixty_four_sessions_with_churn: 64 sessions opened concurrently, then 50
 *     cells each at full concurrency while 8 more sessions open, run 5 cells
 *     and close over and over for a fixed WIDE_CHURN_S seconds (the 64 stay
 *     open, held, after their cells); then all closed. The
 *     churn comes from a second principal: the daemon admits at most 64
 *     calls in flight per principal (server.c), and the 64 fill that. The
 *     daemon runs with --max-sessions 80 --sandbox-memory 256
 *     --memory-budget 20480 (the default budget admits 32 sandboxes of
 *     512 MiB) and --per-principal 80 (its default, a quarter of the
 *     places, is there to keep one tenant from taking them all; here one
 *     principal is the load); both daemons say --per-peer 256 for the same
 *     reason (one process, one uid, holds every connection).
 *
 * Every answer is checked as a careful plimsoll client checks it: HTTP 200,
 * the request id echoed, the request and result digests recomputed from what
 * was sent and received, the record digest verified, the chain (sequence,
 * previous_sha256) followed, and the cell's stdout proving the session kept
 * its state (the n-th cell prints n). Each close must name the call count
 * and the last record digest the client saw. Afterwards /metrics must show
 * no live session and every audited call must be "ok". Zero errors of any
 * kind are allowed; they are collected (not asserted mid-flight) so the
 * sessions can still be closed, then asserted with the first few named.
 *
 * Timings are printed, never asserted: cell latency p50/p90/p99/max (client
 * side, from handing the call to libcurl to reading its answer, and the
 * daemon's own figure from the audit log), the same split into each
 * session's first cell (which waits for python to start: OpenSession answers
 * once the sandbox is up and warms the interpreter afterwards) and the warm
 * cells after it, throughput in cells/s over the cell phase, open latency
 * p50/max. The only time bound is the whole test's
 * (.timeout), backed by an internal deadline that fails the test early
 * enough for .fini to close the sessions and stop the daemon.
 *
 * The daemon's resident set (VmRSS) is read before the first call and after
 * the last; its growth must stay below RSS_GROWTH_BOUND_KIB (64 MiB). That is
 * a correctness bound, not a speed one: 3,200 cells (or 160 open/close
 * cycles) leaking even 20 KiB each would cross it, while the allocator's
 * high-water mark for 32 live sessions stays far below it.
 *
 * The daemon runs with --rate 1000000: the default admission (600 calls a
 * minute per principal) would rightly shed a single principal's 3,264 calls.
 */
#include "daemon_harness.h"
#include "record.h"
#include "wire.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define DAEMON_ARGS "--tier container --max-sessions 64 --per-principal 64 --per-peer 256 --rate 1000000"

#define LOAD_SESSIONS 32
#define LOAD_CELLS 100
#define CHURN_SESSIONS 16
#define CHURN_CELLS 5
#define CHURN_ROUNDS 10
#define WIDE_SESSIONS 64
#define WIDE_CELLS 50
#define WIDE_CHURN 8
#define WIDE_CHURN_S 60.0
#define MAX_SLOTS (WIDE_SESSIONS + WIDE_CHURN)
#define WIDE_DAEMON_ARGS                                                                           \
	"--tier container --max-sessions 80 --per-principal 80 --per-peer 256 --sandbox-memory 256 " \
	"--memory-budget 20480 --rate 1000000"

#define RSS_GROWTH_BOUND_KIB (64L * 1024L)
#define TEST_TIMEOUT_S 300
#define DRIVER_DEADLINE_S 200.0 /* < TEST_TIMEOUT_S: leaves .fini time to clean up */
#define CALL_TIMEOUT_S 60L

#define CELL_CODE "x = globals().get('x', 0) + 1\nprint(x)"

static struct daemon d;

/* ---- errors: counted and kept, asserted at the end ---- */

#define KEEP_ERRORS 8
static unsigned n_errors;
static char errors[KEEP_ERRORS][512];

static void error_at(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error_at(int slot, const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n_errors < KEEP_ERRORS && slot < 0)
		snprintf(errors[n_errors], sizeof errors[n_errors], "%s", msg);
	else if (n_errors < KEEP_ERRORS)
		snprintf(errors[n_errors], sizeof errors[n_errors], "session %d: %s", slot, msg);
	n_errors++;
}

static void assert_no_errors(const char *when)
{
	char all[KEEP_ERRORS * 520] = "";
	for (unsigned i = 0; i < n_errors && i < KEEP_ERRORS; i++) {
		strcat(all, "\n  ");
		strcat(all, errors[i]);
	}
	cr_assert_eq(n_errors, 0, "%u error(s) %s; the first:%s", n_errors, when, all);
}

/* ---- time and figures ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct samples {
	double *v;
	size_t n, cap;
};

static void sample(struct samples *s, double ms)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		cr_assert_not_null(s->v);
	}
	s->v[s->n++] = ms;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double pct(struct samples *s, double q)
{
	if (!s->n)
		return 0;
	qsort(s->v, s->n, sizeof *s->v, by_value);
	size_t k = (size_t)(q * (double)s->n + 0.999999);
	k = k ? k - 1 : 0;
	return s->v[k < s->n ? k : s->n - 1];
}

static void samples_free(struct samples *s)
{
	free(s->v);
	*s = (struct samples){0};
}

static void figure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void figure(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static long rss_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no %s: the daemon is gone", path);
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	cr_assert_geq(v, 0, "no %s in %s", field, path);
	return v;
}

/* ---- sessions driven with the multi interface ---- */

enum phase { IDLE, OPENING, RUNNING, CLOSING };

struct slot {
	int idx;
	enum phase phase;
	bool churn;        /* open -> cells -> close -> open ... on its own */
	const char *token; /* NULL: d.run_token */
	bool open;         /* a session is open (opened and not closed) */
	bool failed;       /* this session went wrong: close it, check nothing more */
	int cells_want, cells_done, rounds_left;
	/* the client's view of its session */
	char id[64], fp[65], last[65], isolation[32];
	uint64_t seq;
	/* the call in flight */
	CURL *easy;
	struct curl_slist *hdrs;
	char rid[48];
	char *req;
	char *body;
	size_t len, cap;
	char answer_rid[80];
	double sent, open_sent;
	unsigned calls;
};

static CURLM *multi;
static struct slot slots[MAX_SLOTS];
static int n_slots;
static int in_flight;
static struct samples cell_ms, open_ms;
static struct samples first_ms;      /* each session's first cell */
static struct samples warm_ms;       /* its second cell onwards */
static struct samples open_first_ms; /* open sent -> first cell answered (churn) */
static bool churn_stop;              /* churning slots start no new round */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t len = size * n;
	if (s->len + len + 1 > s->cap) {
		s->cap = (s->len + len + 1) * 2;
		s->body = realloc(s->body, s->cap);
		if (!s->body)
			abort();
	}
	memcpy(s->body + s->len, p, len);
	s->len += len;
	s->body[s->len] = '\0';
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t len = size * n;
	if (len > 21 && !strncasecmp(p, "Plimsoll-Request-Id: ", 21)) {
		snprintf(s->answer_rid, sizeof s->answer_rid, "%.*s", (int)(len - 21), p + 21);
		s->answer_rid[strcspn(s->answer_rid, "\r\n")] = '\0';
	}
	return len;
}

/* Hands one call to libcurl; req is taken over. */
static void send_call(struct slot *s, const char *procedure, char *req)
{
	if (!s->easy) {
		s->easy = curl_easy_init();
		cr_assert_not_null(s->easy);
	}
	curl_easy_reset(s->easy);
	free(s->req);
	s->req = req;
	s->len = 0;
	if (s->body)
		s->body[0] = '\0';
	s->answer_rid[0] = '\0';
	snprintf(s->rid, sizeof s->rid, "load-%d-%u-%d", s->idx, s->calls++, (int)getpid());
	char url[256], rid[96], auth[192];
	snprintf(url, sizeof url, "http://localhost/%s", procedure);
	snprintf(rid, sizeof rid, "Plimsoll-Request-Id: %s", s->rid);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token ? s->token : d.run_token);
	curl_slist_free_all(s->hdrs);
	s->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	s->hdrs = curl_slist_append(s->hdrs, rid);
	s->hdrs = curl_slist_append(s->hdrs, auth);
	curl_easy_setopt(s->easy, CURLOPT_URL, url);
	curl_easy_setopt(s->easy, CURLOPT_UNIX_SOCKET_PATH, d.sock);
	curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->req);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(s->req));
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(s->easy, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
	curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, CALL_TIMEOUT_S);
	curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
	s->sent = now_s();
	cr_assert_eq(curl_multi_add_handle(multi, s->easy), CURLM_OK);
	in_flight++;
}

static void start_open(struct slot *s)
{
	s->phase = OPENING;
	s->failed = false;
	s->open = false;
	s->id[0] = s->fp[0] = s->last[0] = '\0';
	s->seq = 0;
	s->cells_done = 0;
	s->open_sent = now_s();
	send_call(s, SVC "OpenSession", strdup("{\"protocol\":3,\"languages\":[\"python\"]}"));
}

static void start_cell(struct slot *s)
{
	s->phase = RUNNING;
	send_call(s, SVC "SessionRun", daemon_cell_body(s->id, "python", CELL_CODE));
}

static void start_close(struct slot *s)
{
	s->phase = CLOSING;
	char *body = NULL;
	cr_assert_gt(asprintf(&body, "{\"protocol\":3,\"sessionId\":\"%s\"}", s->id), 0);
	send_call(s, SVC "CloseSession", body);
}

/* A call went wrong: nothing more is checked of this session; it is closed
 * if it is open. */
static void give_up(struct slot *s)
{
	s->failed = true;
	if (s->open && s->phase != CLOSING)
		start_close(s);
	else
		s->phase = IDLE;
}

/* The common part of every answer. False (and counted) when it is not a 200
 * carrying the request id sent. */
static bool answered(struct slot *s, CURLcode rc, const char *what)
{
	long status = 0;
	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		error_at(s->idx, "%s: transfer failed after %.0f ms: %s", what,
			 (now_s() - s->sent) * 1000, curl_easy_strerror(rc));
		return false;
	}
	if (status != 200) {
		error_at(s->idx, "%s: HTTP %ld: %.300s", what, status, s->body ? s->body : "");
		return false;
	}
	if (strcmp(s->answer_rid, s->rid)) {
		error_at(s->idx, "%s: the answer carries request id \"%s\", not \"%s\"", what,
			 s->answer_rid, s->rid);
		return false;
	}
	return true;
}

static void on_opened(struct slot *s, CURLcode rc)
{
	if (!answered(s, rc, "OpenSession"))
		return give_up(s);
	struct wire_open_session_response r;
	struct wire_status st;
	if (wire_decode_open_session_response(s->body, s->len, &r, &st) < 0) {
		error_at(s->idx, "OpenSession: the answer does not decode: %s", st.msg);
		return give_up(s);
	}
	snprintf(s->id, sizeof s->id, "%s", r.session_id);
	snprintf(s->fp, sizeof s->fp, "%s", r.session);
	snprintf(s->isolation, sizeof s->isolation, "%s", r.isolation);
	wire_open_session_response_free(&r);
	s->open = s->id[0] != '\0';
	char want[65];
	bh_fingerprint_of(s->id, want);
	if (!s->open || strcmp(s->fp, want)) {
		error_at(s->idx, "OpenSession: no session id, or a fingerprint that is not its SHA-256");
		return give_up(s);
	}
	if (strcmp(s->isolation, "container")) {
		error_at(s->idx, "OpenSession: isolation \"%s\" from a --tier container daemon",
			 s->isolation);
		return give_up(s);
	}
	sample(&open_ms, (now_s() - s->sent) * 1000);
	if (s->churn)
		start_cell(s);
	else
		s->phase = IDLE;
}

static void on_cell(struct slot *s, CURLcode rc)
{
	double ms = (now_s() - s->sent) * 1000;
	char what[64];
	snprintf(what, sizeof what, "SessionRun #%d", s->cells_done + 1);
	if (!answered(s, rc, what))
		return give_up(s);
	struct wire_session_run_response r;
	struct wire_status st;
	if (wire_decode_session_run_response(s->body, s->len, &r, &st) < 0) {
		error_at(s->idx, "%s: the answer does not decode: %s", what, st.msg);
		return give_up(s);
	}
	bool ok = false;
	const struct bh_record *rec = &r.run.record;
	char want_request[65], want_result[65] = "", out[32];
	struct bh_request_fields rq = {
		.protocol = 3, .minimum_isolation = "", .timeout_ms = 0, .software_mode = "",
		.kind = "cell", .language = "python", .code = (const uint8_t *)CELL_CODE,
		.code_len = strlen(CELL_CODE),
	};
	bh_request_digest(&rq, want_request);
	if (r.has_run)
		bh_result_digest(&r.run.result, want_result);
	snprintf(out, sizeof out, "%d\n", s->cells_done + 1);
	if (!r.has_run || !r.run.has_record) {
		error_at(s->idx, "%s: no run or no record: %.300s", what, s->body);
	} else if (r.ended != WIRE_END_OPEN) {
		error_at(s->idx, "%s: the session ended (%s): %s", what,
			 wire_session_end_name(r.ended), r.end_detail);
	} else if (r.run.result.exit_code != 0 || r.run.result.timed_out ||
		   r.run.result.out_len != strlen(out) ||
		   memcmp(r.run.result.out, out, r.run.result.out_len) || r.run.result.err_len) {
		error_at(s->idx, "%s: exit %d%s, stdout \"%.*s\" (want \"%d\\n\"), stderr \"%.*s\"",
			 what, r.run.result.exit_code, r.run.result.timed_out ? " (timed out)" : "",
			 (int)(r.run.result.out_len < 64 ? r.run.result.out_len : 64),
			 (const char *)r.run.result.out, s->cells_done + 1,
			 (int)(r.run.result.err_len < 200 ? r.run.result.err_len : 200),
			 (const char *)r.run.result.err);
	} else if (strcmp(rec->request_sha256, want_request)) {
		error_at(s->idx, "%s: the request digest differs from what was sent", what);
	} else if (strcmp(rec->result_sha256, want_result)) {
		error_at(s->idx, "%s: the result digest differs from what was received", what);
	} else if (rec->version != 2 || !bh_record_verify(rec)) {
		error_at(s->idx, "%s: the record (version %d) does not verify", what, rec->version);
	} else if (strcmp(rec->session, s->fp) || strcmp(rec->provider, r.run.sandbox) ||
		   strcmp(rec->isolation, r.run.isolation) || strcmp(rec->isolation, "container")) {
		error_at(s->idx, "%s: the record names session %.12s, %s/%s", what, rec->session,
			 rec->provider, rec->isolation);
	} else if (rec->sequence != s->seq + 1 || strcmp(rec->previous_sha256, s->last)) {
		error_at(s->idx, "%s: the chain broke: sequence %llu after %llu, previous %.12s, "
				 "last seen %.12s",
			 what, (unsigned long long)rec->sequence, (unsigned long long)s->seq,
			 rec->previous_sha256, s->last);
	} else {
		ok = true;
		s->seq = rec->sequence;
		snprintf(s->last, sizeof s->last, "%s", rec->record_sha256);
	}
	wire_session_run_response_free(&r);
	if (!ok)
		return give_up(s);
	sample(&cell_ms, ms);
	sample(s->cells_done ? &warm_ms : &first_ms, ms);
	if (!s->cells_done && s->churn)
		sample(&open_first_ms, (now_s() - s->open_sent) * 1000);
	if (++s->cells_done < s->cells_want)
		start_cell(s);
	else if (s->churn)
		start_close(s);
	else
		s->phase = IDLE;
}

static void on_closed(struct slot *s, CURLcode rc)
{
	bool ok = answered(s, rc, "CloseSession");
	struct wire_close_session_response r = {0};
	struct wire_status st;
	if (ok && wire_decode_close_session_response(s->body, s->len, &r, &st) < 0) {
		error_at(s->idx, "CloseSession: the answer does not decode: %s", st.msg);
		ok = false;
	} else if (ok) {
		s->open = false;
		if (!s->failed &&
		    (r.calls != (uint64_t)s->cells_want || strcmp(r.last_record_sha256, s->last) ||
		     strcmp(r.session, s->fp) || r.ended != WIRE_END_CLOSED)) {
			error_at(s->idx, "CloseSession: %llu calls (want %d), last %.12s (saw %.12s), "
					 "ended %s",
				 (unsigned long long)r.calls, s->cells_want, r.last_record_sha256,
				 s->last, wire_session_end_name(r.ended));
			ok = false;
		}
		wire_close_session_response_free(&r);
	}
	s->phase = IDLE;
	if (!ok || s->failed)
		return;
	if (s->churn && --s->rounds_left > 0 && !churn_stop)
		start_open(s);
}

/* Runs the multi loop until no call is in flight. */
static void drive(double deadline)
{
	while (in_flight > 0) {
		int running = 0;
		CURLMcode mc = curl_multi_perform(multi, &running);
		cr_assert_eq(mc, CURLM_OK, "%s", curl_multi_strerror(mc));
		CURLMsg *m;
		int queued;
		while ((m = curl_multi_info_read(multi, &queued))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			char *priv = NULL;
			CURL *e = m->easy_handle;
			CURLcode rc = m->data.result;
			curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
			struct slot *s = (struct slot *)priv;
			curl_multi_remove_handle(multi, e);
			in_flight--;
			switch (s->phase) {
			case OPENING:
				on_opened(s, rc);
				break;
			case RUNNING:
				on_cell(s, rc);
				break;
			case CLOSING:
				on_closed(s, rc);
				break;
			case IDLE:
				cr_assert_fail("an answer for an idle session");
			}
		}
		if (now_s() > deadline) {
			error_at(-1, "the run passed its deadline with %d call(s) in flight", in_flight);
			return;
		}
		if (in_flight > 0)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
}

/* ---- setup and teardown ---- */

static void setup_with(const char *args)
{
	n_errors = 0;
	churn_stop = false;
	in_flight = 0;
	n_slots = 0;
	memset(slots, 0, sizeof slots);
	cell_ms = open_ms = first_ms = warm_ms = open_first_ms = (struct samples){0};
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	multi = curl_multi_init();
	cr_assert_not_null(multi);
	/* One connection per session, kept alive between its calls. */
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)MAX_SLOTS * 2);
	daemon_start(&d, args);
}

static void setup(void)
{
	setup_with(DAEMON_ARGS);
}

static void setup_wide(void)
{
	setup_with(WIDE_DAEMON_ARGS);
}

/* Even after a failure: whatever is in flight is dropped, every session the
 * client still holds is closed (best effort, short timeout), the daemon is
 * stopped (SIGTERM closes what is left) and its state collected. */
static void teardown(void)
{
	for (int i = 0; i < n_slots; i++) {
		struct slot *s = &slots[i];
		if (s->easy && multi)
			curl_multi_remove_handle(multi, s->easy);
	}
	in_flight = 0;
	for (int i = 0; i < n_slots && d.pid > 0; i++) {
		struct slot *s = &slots[i];
		if (!s->open || !s->easy)
			continue;
		char *body = NULL;
		if (asprintf(&body, "{\"protocol\":3,\"sessionId\":\"%s\"}", s->id) < 0)
			continue;
		send_call(s, SVC "CloseSession", body);
		curl_multi_remove_handle(multi, s->easy);
		in_flight--;
		curl_easy_setopt(s->easy, CURLOPT_TIMEOUT, 5L);
		CURLcode rc = curl_easy_perform(s->easy);
		s->open = false;
		if (rc != CURLE_OK)
			break; /* it does not answer: SIGTERM (and gc) end the rest */
	}
	for (int i = 0; i < n_slots; i++) {
		struct slot *s = &slots[i];
		if (s->easy)
			curl_easy_cleanup(s->easy);
		curl_slist_free_all(s->hdrs);
		free(s->req);
		free(s->body);
	}
	memset(slots, 0, sizeof slots);
	n_slots = 0;
	if (multi)
		curl_multi_cleanup(multi);
	multi = NULL;
	samples_free(&cell_ms);
	samples_free(&open_ms);
	samples_free(&first_ms);
	samples_free(&warm_ms);
	samples_free(&open_first_ms);
	daemon_stop(&d);
	curl_global_cleanup();
}

/* ---- after the run: metrics and the audit log ---- */

static long long metric(const char *text, const char *name)
{
	const char *p = strstr(text, name);
	while (p && p != text && p[-1] != '\n')
		p = strstr(p + 1, name);
	return p ? atoll(p + strlen(name)) : -1;
}

static void check_metrics(long long cells)
{
	struct answer *m = daemon_get_as(&d, d.op_token, "/metrics");
	cr_assert_eq(m->status, 200, "/metrics: %ld", m->status);
	static const char *const live[] = {"waiting", "opening", "ready", "busy", "pausing",
					   "paused", "hibernating", "hibernated", "waking"};
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
		char name[80];
		snprintf(name, sizeof name, "bulkhead_sessions{state=\"%s\"} ", live[i]);
		cr_assert_eq(metric(m->body, name), 0, "%s is not 0 after every session closed:\n%s",
			     name, m->body);
	}
	cr_assert_eq(metric(m->body, "bulkhead_cells_total "), cells, "%s", m->body);
	/* Every call counted was answered ok. */
	for (const char *p = strstr(m->body, "bulkhead_calls_total{"); p;
	     p = strstr(p + 1, "bulkhead_calls_total{")) {
		const char *eol = strchr(p, '\n');
		int n = eol ? (int)(eol - p) : (int)strlen(p);
		char line[256];
		snprintf(line, sizeof line, "%.*s", n, p);
		cr_assert_not_null(strstr(line, "code=\"ok\""), "a call was not ok: %s", line);
	}
	answer_free(m);
}

/* Every audited call must be ok; returns the daemon's own SessionRun
 * latencies (ms, from the request's arrival to its answer). */
static void check_audit(struct samples *served, long long want_runs)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "no audit log at %s", path);
	char line[4096];
	long long runs = 0, bad = 0;
	char first_bad[512] = "";
	while (fgets(line, sizeof line, f)) {
		cJSON *o = cJSON_Parse(line);
		cr_assert_not_null(o, "an audit line is not JSON: %s", line);
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(o, "audit"));
		if (kind && !strcmp(kind, "call")) {
			const char *proc = cJSON_GetStringValue(cJSON_GetObjectItem(o, "procedure"));
			const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(o, "code"));
			if (!code || strcmp(code, "ok")) {
				if (!bad++)
					snprintf(first_bad, sizeof first_bad, "%.500s", line);
			}
			if (proc && !strcmp(proc, SVC "SessionRun")) {
				runs++;
				sample(served, cJSON_GetNumberValue(cJSON_GetObjectItem(o, "ms")));
			}
		}
		cJSON_Delete(o);
	}
	fclose(f);
	cr_assert_eq(bad, 0, "%lld audited call(s) not ok; the first: %s", bad, first_bad);
	cr_assert_eq(runs, want_runs, "the audit log has %lld SessionRun calls", runs);
}

static void print_cells(const char *test, double wall_s)
{
	struct samples *c = &cell_ms;
	figure("load %s: cell latency ms (client) p50 %.2f p90 %.2f p99 %.2f max %.2f over %zu cells",
	       test, pct(c, 0.50), pct(c, 0.90), pct(c, 0.99), pct(c, 1.0), c->n);
	c = &warm_ms;
	figure("load %s: warm cells (2nd onwards) ms p50 %.2f p90 %.2f p99 %.2f max %.2f over %zu",
	       test, pct(c, 0.50), pct(c, 0.90), pct(c, 0.99), pct(c, 1.0), c->n);
	c = &first_ms;
	figure("load %s: first cell of a session ms p50 %.2f max %.2f over %zu (python starts after "
	       "the open is answered)",
	       test, pct(c, 0.50), pct(c, 1.0), c->n);
	figure("load %s: throughput %.0f cells/s (%zu cells in %.2f s)", test,
	       wall_s > 0 ? (double)cell_ms.n / wall_s : 0, cell_ms.n, wall_s);
}

/* ---- the tests ---- */

Test(load, sessions_under_load, .init = setup, .fini = teardown, .timeout = TEST_TIMEOUT_S)
{
	double t0 = now_s(), deadline = t0 + DRIVER_DEADLINE_S;
	long rss0 = rss_kib(d.pid, "VmRSS");
	n_slots = LOAD_SESSIONS;
	for (int i = 0; i < n_slots; i++)
		slots[i] = (struct slot){.idx = i, .cells_want = LOAD_CELLS, .rounds_left = 1};

	/* 1. Open all at once. */
	double t_open = now_s();
	for (int i = 0; i < n_slots; i++)
		start_open(&slots[i]);
	drive(deadline);
	double open_wall = now_s() - t_open;
	figure("load sessions: open latency ms p50 %.1f max %.1f (%d opened concurrently in %.2f s)",
	       pct(&open_ms, 0.50), pct(&open_ms, 1.0), n_slots, open_wall);

	/* 2. 100 cells in each, all sessions at once. */
	double t_cells = now_s();
	if (!n_errors)
		for (int i = 0; i < n_slots; i++)
			if (slots[i].open)
				start_cell(&slots[i]);
	drive(deadline);
	double cells_wall = now_s() - t_cells;
	print_cells("sessions", cells_wall);

	/* 3. Close all at once (also after a failure: give_up closed those). */
	for (int i = 0; i < n_slots; i++)
		if (slots[i].open && slots[i].phase == IDLE)
			start_close(&slots[i]);
	drive(deadline);
	for (int i = 0; i < n_slots; i++)
		if (slots[i].open)
			error_at(i, "still open after the close phase");
	assert_no_errors("under load");
	for (int i = 0; i < n_slots; i++)
		cr_assert_eq(slots[i].cells_done, LOAD_CELLS, "session %d ran %d cells", i,
			     slots[i].cells_done);

	check_metrics((long long)LOAD_SESSIONS * LOAD_CELLS);
	struct samples served = {0};
	check_audit(&served, (long long)LOAD_SESSIONS * LOAD_CELLS);
	figure("load sessions: cell latency ms (daemon, audit log) p50 %.2f p99 %.2f max %.2f",
	       pct(&served, 0.50), pct(&served, 0.99), pct(&served, 1.0));
	samples_free(&served);

	long rss1 = rss_kib(d.pid, "VmRSS"), hwm = rss_kib(d.pid, "VmHWM");
	figure("load sessions: daemon RSS %ld KiB before, %ld KiB after (growth %+ld KiB; peak %ld "
	       "KiB; bound %ld KiB); whole test %.1f s",
	       rss0, rss1, rss1 - rss0, hwm, RSS_GROWTH_BOUND_KIB, now_s() - t0);
	cr_assert_lt(rss1 - rss0, RSS_GROWTH_BOUND_KIB, "the daemon grew by %ld KiB", rss1 - rss0);
}

Test(load, open_close_churn, .init = setup, .fini = teardown, .timeout = TEST_TIMEOUT_S)
{
	double t0 = now_s(), deadline = t0 + DRIVER_DEADLINE_S;
	long rss0 = rss_kib(d.pid, "VmRSS");
	n_slots = CHURN_SESSIONS;
	for (int i = 0; i < n_slots; i++)
		slots[i] = (struct slot){.idx = i, .churn = true, .cells_want = CHURN_CELLS,
					 .rounds_left = CHURN_ROUNDS};
	for (int i = 0; i < n_slots; i++)
		start_open(&slots[i]);
	drive(deadline);
	double wall = now_s() - t0;
	for (int i = 0; i < n_slots; i++)
		if (slots[i].open)
			error_at(i, "still open at the end");
	for (int i = 0; i < n_slots && !n_errors; i++)
		if (slots[i].rounds_left != 0)
			error_at(i, "%d round(s) not run", slots[i].rounds_left);
	figure("load churn: open latency ms p50 %.1f max %.1f over %zu opens", pct(&open_ms, 0.50),
	       pct(&open_ms, 1.0), open_ms.n);
	figure("load churn: open sent -> first cell answered ms p50 %.1f max %.1f",
	       pct(&open_first_ms, 0.50), pct(&open_first_ms, 1.0));
	print_cells("churn", wall);
	assert_no_errors("in churn");
	cr_assert_eq(open_ms.n, (size_t)CHURN_SESSIONS * CHURN_ROUNDS);

	check_metrics((long long)CHURN_SESSIONS * CHURN_ROUNDS * CHURN_CELLS);
	struct samples served = {0};
	check_audit(&served, (long long)CHURN_SESSIONS * CHURN_ROUNDS * CHURN_CELLS);
	samples_free(&served);

	long rss1 = rss_kib(d.pid, "VmRSS"), hwm = rss_kib(d.pid, "VmHWM");
	figure("load churn: daemon RSS %ld KiB before, %ld KiB after (growth %+ld KiB; peak %ld "
	       "KiB; bound %ld KiB); whole test %.1f s",
	       rss0, rss1, rss1 - rss0, hwm, RSS_GROWTH_BOUND_KIB, now_s() - t0);
	cr_assert_lt(rss1 - rss0, RSS_GROWTH_BOUND_KIB, "the daemon grew by %ld KiB", rss1 - rss0);
}

/* 64 sessions at once with churn beside them. Besides the checks every
 * answer gets, the client's p50/p99 are printed, the daemon's RSS growth is
 * asserted below RSS_GROWTH_BOUND_KIB, and afterwards no session is live and
 * no container or cgroup of the daemon's engine is left (daemon_stop's
 * collection would hide a leak, so the runtime is asked before it). */
Test(load, sixty_four_sessions_with_churn, .init = setup_wide, .fini = teardown,
     .timeout = TEST_TIMEOUT_S)
{
	double t0 = now_s(), deadline = t0 + DRIVER_DEADLINE_S;
	long rss0 = rss_kib(d.pid, "VmRSS");
	n_slots = WIDE_SESSIONS + WIDE_CHURN;
	for (int i = 0; i < WIDE_SESSIONS; i++)
		slots[i] = (struct slot){.idx = i, .cells_want = WIDE_CELLS, .rounds_left = 1};
	for (int i = WIDE_SESSIONS; i < n_slots; i++)
		slots[i] = (struct slot){.idx = i, .churn = true, .cells_want = CHURN_CELLS,
					 .rounds_left = 1000000, .token = d.other_token};

	/* 1. The 64 opened all at once. */
	double t_open = now_s();
	for (int i = 0; i < WIDE_SESSIONS; i++)
		start_open(&slots[i]);
	drive(deadline);
	figure("load wide: open latency ms p50 %.1f max %.1f (%d opened concurrently in %.2f s)",
	       pct(&open_ms, 0.50), pct(&open_ms, 1.0), WIDE_SESSIONS, now_s() - t_open);

	/* 2. 50 cells in each of the 64 at once, churn beside them for
	 * WIDE_CHURN_S seconds and at least until the 64 are done (the churning
	 * slots finish their round and stop opening once churn_stop is set). */
	double t_cells = now_s();
	size_t opens_before = open_ms.n;
	if (!n_errors) {
		for (int i = 0; i < WIDE_SESSIONS; i++)
			if (slots[i].open)
				start_cell(&slots[i]);
		for (int i = WIDE_SESSIONS; i < n_slots; i++)
			start_open(&slots[i]);
	}
	while (in_flight > 0 && now_s() < deadline) {
		/* drive() until only churn is left, then tell it to stop. */
		int steady_busy = 0;
		for (int i = 0; i < WIDE_SESSIONS; i++)
			steady_busy += slots[i].phase != IDLE;
		if (!steady_busy && now_s() >= t_cells + WIDE_CHURN_S)
			churn_stop = true;
		int running = 0;
		cr_assert_eq(curl_multi_perform(multi, &running), CURLM_OK);
		CURLMsg *m;
		int queued;
		while ((m = curl_multi_info_read(multi, &queued))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			char *priv = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
			struct slot *sl = (struct slot *)priv;
			CURLcode rc = m->data.result;
			curl_multi_remove_handle(multi, m->easy_handle);
			in_flight--;
			if (sl->phase == OPENING)
				on_opened(sl, rc);
			else if (sl->phase == RUNNING)
				on_cell(sl, rc);
			else if (sl->phase == CLOSING)
				on_closed(sl, rc);
		}
		if (in_flight > 0)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	if (in_flight > 0)
		error_at(-1, "the run passed its deadline with %d call(s) in flight", in_flight);
	double cells_wall = now_s() - t_cells;
	int churn_rounds = (int)(open_ms.n - opens_before);
	print_cells("wide", cells_wall);
	figure("load wide: %d churn sessions opened, ran %d cells and closed beside the 64 in %.1f s",
	       churn_rounds, CHURN_CELLS, cells_wall);

	/* 3. Close the 64 at once. */
	for (int i = 0; i < WIDE_SESSIONS; i++)
		if (slots[i].open && slots[i].phase == IDLE)
			start_close(&slots[i]);
	drive(deadline);
	for (int i = 0; i < n_slots; i++)
		if (slots[i].open)
			error_at(i, "still open after the close phase");
	assert_no_errors("with 64 sessions and churn");
	for (int i = 0; i < WIDE_SESSIONS; i++)
		cr_assert_eq(slots[i].cells_done, WIDE_CELLS, "session %d ran %d cells", i,
			     slots[i].cells_done);
	cr_assert_geq(churn_rounds, WIDE_CHURN, "the churn did not complete a round per slot");

	long long cells = (long long)WIDE_SESSIONS * WIDE_CELLS + (long long)churn_rounds * CHURN_CELLS;
	check_metrics(cells);
	struct samples served = {0};
	check_audit(&served, cells);
	figure("load wide: cell latency ms (daemon, audit log) p50 %.2f p99 %.2f max %.2f",
	       pct(&served, 0.50), pct(&served, 0.99), pct(&served, 1.0));
	samples_free(&served);

	/* Zero leaks: no container in the daemon's runtime root, no process of
	 * its sandboxes, once the last close was answered (stated slack: 10 s
	 * for the deletes in flight on a shared 2-core host). */
	char root[4400], out[4096] = "";
	snprintf(root, sizeof root, "%s/state/run/crun", d.dir);
	for (int waited = 0; waited <= 10000; waited += 250) {
		char cmd[4600];
		snprintf(cmd, sizeof cmd, "crun --root '%s' list -q 2>/dev/null", root);
		FILE *f = popen(cmd, "r");
		cr_assert_not_null(f);
		size_t got = fread(out, 1, sizeof out - 1, f);
		out[got] = '\0';
		pclose(f);
		if (!out[0])
			break;
		usleep(250000);
	}
	cr_assert_str_empty(out, "containers left after every session closed:\n%s", out);

	long rss1 = rss_kib(d.pid, "VmRSS"), hwm = rss_kib(d.pid, "VmHWM");
	figure("load wide: daemon RSS %ld KiB before, %ld KiB after (growth %+ld KiB; peak %ld "
	       "KiB; bound %ld KiB); whole test %.1f s",
	       rss0, rss1, rss1 - rss0, hwm, RSS_GROWTH_BOUND_KIB, now_s() - t0);
	cr_assert_lt(rss1 - rss0, RSS_GROWTH_BOUND_KIB, "the daemon grew by %ld KiB", rss1 - rss0);
}
