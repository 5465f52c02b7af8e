/* The C client against a real daemon: sessions opened, run and closed with
 * every check plimsoll's clients make, refusals that say nothing ran, a man
 * in the middle caught, the asynchronous interface driven from the test's
 * own poll loop, the operator API, and the CLI attached to a daemon. */
#include "client.h"
#include "daemon_harness.h"
#include "gen_store.h"
#include "tamper_proxy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct daemon d;
static struct tamper_proxy px;
static bh_client *cl;

static void stop(void)
{
	bh_client_free(cl);
	cl = NULL;
	proxy_stop(&px);
	daemon_stop(&d);
}

static bh_client *client_for(const char *target, const char *token)
{
	bh_client *c = NULL;
	struct bh_client_error *err = NULL;
	struct bh_client_options o = {.target = target, .token = token};
	cr_assert_eq(bh_client_new(&o, &c, &err), 0, "%s", err ? err->message : "");
	return c;
}

static void start(void)
{
	daemon_start(&d, NULL);
	cl = client_for(d.sock, d.both_token);
}

static bool starts_with(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

static bh_client_session *open_session(bh_client *c, enum bh_tier floor)
{
	struct bh_client_open_opts o = {.floor = floor};
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_open(c, &o, &s, &err), 0, "%s", err ? err->message : "");
	return s;
}

/* One cell through the client; its stdout (caller frees), or NULL with *errp. */
static char *cell(bh_client_session *s, enum bh_language lang, const char *code,
		  struct bh_client_error **errp)
{
	struct bh_client_cell c = {.language = lang, .code = code};
	struct wire_session_run_response r;
	struct bh_client_error *err = NULL;
	if (bh_client_session_run(s, &c, &r, &err) < 0) {
		cr_assert_not_null(errp, "the cell failed: %s", err->message);
		*errp = err;
		return NULL;
	}
	char *out = strndup((const char *)r.run.result.out, r.run.result.out_len);
	wire_session_run_response_free(&r);
	return out;
}

Test(client, a_session_runs_python_and_javascript_with_every_check_passing, .init = start,
     .fini = stop)
{
	struct wire_describe_response info;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_describe(cl, &info, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(info.protocol, 3);
	cr_assert(info.supports_sessions);
	wire_describe_response_free(&info);

	bh_client_session *s = open_session(cl, BH_TIER_CONTAINER);
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	cr_assert_eq(strlen(v.fingerprint), 64);
	free(cell(s, BH_LANG_PYTHON, "x = 41", NULL));
	char *out = cell(s, BH_LANG_PYTHON, "print(x + 1)", NULL);
	cr_assert_str_eq(out, "42\n");
	free(out);
	free(cell(s, BH_LANG_JAVASCRIPT, "globalThis.y = 5", NULL));
	out = cell(s, BH_LANG_JAVASCRIPT, "console.log(y * 2)", NULL);
	cr_assert_str_eq(out, "10\n");
	free(out);
	bh_client_session_get(s, &v);
	cr_assert_eq(v.calls, 4, "the client's chain counts %llu calls", (unsigned long long)v.calls);
	char last[65];
	snprintf(last, sizeof last, "%s", v.last_record_sha256);

	struct wire_close_session_response closed;
	cr_assert_eq(bh_client_session_close(s, &closed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(closed.calls, 4);
	cr_assert_str_eq(closed.last_record_sha256, last);
	cr_assert_eq(closed.ended, WIRE_END_CLOSED);
	wire_close_session_response_free(&closed);
	bh_client_session_free(s);

	struct wire_run_response run;
	struct bh_client_run_opts ro = {.floor = BH_TIER_CONTAINER, .timeout_ms = 10000};
	cr_assert_eq(bh_client_run(cl, "console.log(6 * 7)", &ro, &run, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(run.result.out_len, 3);
	cr_assert_eq(memcmp(run.result.out, "42\n", 3), 0);
	cr_assert_str_empty(run.record.session);
	wire_run_response_free(&run);
}

Test(client, a_floor_above_the_tier_is_refused_and_nothing_ran, .init = start, .fini = stop)
{
	struct bh_client_open_opts o = {.floor = BH_TIER_VM};
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_open(cl, &o, &s, &err), -1);
	cr_assert_null(s);
	cr_assert(starts_with(err->message, "Nothing ran (isolation): "), "%s", err->message);
	cr_assert(err->not_dispatched);
	cr_assert_eq(err->code, WIRE_FAILED_PRECONDITION);
	bh_client_error_free(err);

	struct wire_run_response run;
	struct bh_client_run_opts ro = {.floor = BH_TIER_VM};
	err = NULL;
	cr_assert_eq(bh_client_run(cl, "console.log(1)", &ro, &run, &err), -1);
	cr_assert(starts_with(err->message, "Nothing ran (isolation): "), "%s", err->message);
	bh_client_error_free(err);

	struct wire_operator_sessions list = {.n = 99};
	cr_assert_eq(bh_client_list_sessions(cl, NULL, &list, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(list.n, 0, "a refused open left a session behind");
	wire_operator_sessions_free(&list);
}

Test(client, an_unknown_session_and_another_principals_are_refused_as_not_found, .init = start,
     .fini = stop)
{
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_adopt(cl, "0123456789abcdef0123456789abcdef", 0, "",
					     BH_TIER_UNKNOWN, &s, &err), 0);
	char *out = cell(s, BH_LANG_PYTHON, "print(1)", &err);
	cr_assert_null(out);
	cr_assert(starts_with(err->message, "Nothing ran (request): "), "%s", err->message);
	cr_assert_eq(err->code, WIRE_NOT_FOUND);
	cr_assert(err->session_ended);
	cr_assert_eq(err->end, WIRE_END_NOT_FOUND);
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	cr_assert_eq(v.end, WIRE_END_NOT_FOUND, "the session does not know it ended");
	cr_assert_null(v.stopped, "a refusal must not stop the session");
	bh_client_error_free(err);
	bh_client_session_free(s);

	/* A session another principal opened (its id learnt the way a
	 * process that persisted it would): the same answer. */
	struct answer *a = daemon_call(&d, d.run_token, "plimsoll.v1.SandboxService/OpenSession",
				       "{\"protocol\":3}");
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", a->body);
	bh_client *stranger = client_for(d.sock, d.other_token);
	cr_assert_eq(bh_client_session_adopt(stranger, r.session_id, 0, "", BH_TIER_UNKNOWN, &s,
					     &err), 0);
	err = NULL;
	out = cell(s, BH_LANG_PYTHON, "print(1)", &err);
	cr_assert_null(out);
	cr_assert(starts_with(err->message, "Nothing ran (request): "), "%s", err->message);
	cr_assert_eq(err->end, WIRE_END_NOT_FOUND);
	bh_client_error_free(err);
	bh_client_session_free(s);
	bh_client_free(stranger);
	wire_open_session_response_free(&r);
	answer_free(a);
}

/* Through the proxy: the first answer is honest, the next is spoiled. */
static void start_proxied(enum tamper mode, const char *path, int spare)
{
	daemon_start(&d, NULL);
	char sock[4300];
	snprintf(sock, sizeof sock, "%s/proxy.sock", d.dir);
	proxy_start(&px, d.sock, sock, mode, path, spare);
	cl = client_for(px.sock, d.both_token);
}

static void start_flip(void) { start_proxied(TAMPER_FLIP_STDOUT, "SessionRun", 1); }
static void start_drop(void) { start_proxied(TAMPER_DROP_REQUEST_ID, "SessionRun", 1); }
static void start_drop_open(void) { start_proxied(TAMPER_DROP_REQUEST_ID, "OpenSession", 0); }

/* The daemon's count of a session's calls, from the operator API. */
static uint64_t daemon_calls(const char *fp)
{
	bh_client *op = client_for(d.sock, d.op_token);
	struct wire_operator_session info;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_get_session(op, fp, &info, &err), 0, "%s", err ? err->message : "");
	uint64_t n = info.calls;
	wire_operator_session_free(&info);
	bh_client_free(op);
	return n;
}

static void expect_caught_then_stopped(const char *why)
{
	bh_client_session *s = open_session(cl, BH_TIER_UNKNOWN);
	char *out = cell(s, BH_LANG_PYTHON, "print('honest')", NULL);
	cr_assert_str_eq(out, "honest\n", "the proxy must pass an untouched answer through");
	free(out);

	struct bh_client_error *err = NULL;
	out = cell(s, BH_LANG_PYTHON, "print('spoiled')", &err);
	cr_assert_null(out);
	cr_assert(starts_with(err->message, "The code may have run, and there is no checked answer "
					    "for it: "),
		  "%s", err->message);
	cr_assert_eq(err->code, WIRE_DATA_LOSS);
	cr_assert_not(err->not_dispatched);
	cr_assert_not_null(strstr(err->message, why), "%s", err->message);
	bh_client_error_free(err);

	/* It did run: the daemon counts it. The client cannot know what it
	 * answered, so it sends nothing more on the session. */
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	cr_assert_eq(daemon_calls(v.fingerprint), 2);
	cr_assert_not_null(v.stopped);
	err = NULL;
	out = cell(s, BH_LANG_PYTHON, "print('never sent')", &err);
	cr_assert_null(out);
	cr_assert(starts_with(err->message, "Nothing ran (request): "), "%s", err->message);
	bh_client_error_free(err);
	cr_assert_eq(daemon_calls(v.fingerprint), 2, "a refused call reached the daemon");

	/* Closing shows the gap: the daemon counts a call the client has no
	 * checked record of. */
	struct wire_close_session_response closed;
	err = NULL;
	cr_assert_eq(bh_client_session_close(s, &closed, &err), -1);
	cr_assert_eq(err->code, WIRE_DATA_LOSS, "%s", err->message);
	bh_client_error_free(err);
	bh_client_session_free(s);
}

Test(client, a_flipped_byte_of_stdout_is_caught_and_the_session_sends_nothing_more,
     .init = start_flip, .fini = stop)
{
	expect_caught_then_stopped("result digest");
}

Test(client, an_answer_without_the_request_id_is_not_believed, .init = start_drop, .fini = stop)
{
	expect_caught_then_stopped("does not carry this request's id back");
}

Test(client, an_unbound_refusal_loses_its_mark, .init = start_drop_open, .fini = stop)
{
	struct bh_client_open_opts o = {.floor = BH_TIER_VM};
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_open(cl, &o, &s, &err), -1);
	/* The daemon refused it, but an answer that is not bound to the
	 * request cannot say so. */
	cr_assert_eq(err->code, WIRE_FAILED_PRECONDITION, "%s", err->message);
	cr_assert_not(err->not_dispatched);
	cr_assert(starts_with(err->message, "The code may have run"), "%s", err->message);
	bh_client_error_free(err);
}

Test(client, a_daemon_that_cannot_be_reached_is_nothing_ran_environment)
{
	char sock[256];
	snprintf(sock, sizeof sock, "/tmp/bh-client-nothing-%d.sock", (int)getpid());
	cl = client_for(sock, "tok");
	struct wire_describe_response info;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_describe(cl, &info, &err), -1);
	cr_assert(starts_with(err->message, "Nothing ran (environment): "), "%s", err->message);
	bh_client_error_free(err);
	bh_client_free(cl);
	cl = NULL;

	struct bh_client_options o = {.target = "http://example.com:8746", .token = "t"};
	bh_client *c = NULL;
	cr_assert_eq(bh_client_new(&o, &c, &err), -1, "a token must not go to a remote host in cleartext");
	bh_client_error_free(err);
}

/* ---- the asynchronous interface, from the test's own loop ---- */

struct async_run {
	bh_client_session *s[2];
	int opened, cells, closed;
	bool described, listed;
	char out[3][64];
	char why[1024];
};

struct slot {
	struct async_run *run;
	int i;
};

static void fail_async(struct async_run *r, const struct bh_client_error *err)
{
	if (!r->why[0])
		snprintf(r->why, sizeof r->why, "%s", err->message);
}

static void on_cell_done(void *arg, struct wire_session_run_response *res,
			 const struct bh_client_error *err)
{
	struct slot *sl = arg;
	if (err) {
		fail_async(sl->run, err);
	} else {
		snprintf(sl->run->out[sl->i], sizeof sl->run->out[0], "%.*s",
			 (int)res->run.result.out_len, (const char *)res->run.result.out);
	}
	sl->run->cells++;
}

static struct slot cell_slots[3];

static void on_opened(void *arg, bh_client_session *s, const struct bh_client_error *err)
{
	struct slot *sl = arg;
	struct async_run *r = sl->run;
	if (err) {
		fail_async(r, err);
		r->opened++;
		return;
	}
	r->s[sl->i] = s;
	r->opened++;
	struct bh_client_error *e = NULL;
	if (sl->i == 0) {
		/* Two calls queued on one session: sent in order, one at a time. */
		struct bh_client_cell a = {.language = BH_LANG_PYTHON, .code = "x = 20"};
		struct bh_client_cell b = {.language = BH_LANG_PYTHON, .code = "print(x * 2 + 2)"};
		cell_slots[0] = (struct slot){r, 0};
		cell_slots[1] = (struct slot){r, 1};
		cr_assert_eq(bh_client_session_run_async(s, &a, on_cell_done, &cell_slots[0], &e), 0);
		cr_assert_eq(bh_client_session_run_async(s, &b, on_cell_done, &cell_slots[1], &e), 0);
	} else {
		struct bh_client_cell c = {.language = BH_LANG_JAVASCRIPT, .code = "console.log('b')"};
		cell_slots[2] = (struct slot){r, 2};
		cr_assert_eq(bh_client_session_run_async(s, &c, on_cell_done, &cell_slots[2], &e), 0);
	}
}

static void on_described(void *arg, struct wire_describe_response *res,
			 const struct bh_client_error *err)
{
	struct async_run *r = arg;
	if (err)
		fail_async(r, err);
	else if (res->protocol != 3)
		snprintf(r->why, sizeof r->why, "Describe states protocol %u", res->protocol);
	r->described = true;
}

static void on_listed(void *arg, const char *json, const struct bh_client_error *err)
{
	struct async_run *r = arg;
	if (err)
		fail_async(r, err);
	else if (!strstr(json, "\"sessions\""))
		snprintf(r->why, sizeof r->why, "ListSessions answered %s", json);
	r->listed = true;
}

static void on_closed(void *arg, struct wire_close_session_response *res,
		      const struct bh_client_error *err)
{
	struct async_run *r = arg;
	if (err)
		fail_async(r, err);
	else if (res->ended != WIRE_END_CLOSED)
		snprintf(r->why, sizeof r->why, "a session closed as %d", (int)res->ended);
	r->closed++;
}

/* The host's loop: poll the client's sockets with its timeout, then process. */
static size_t loop_until(bool (*done)(struct async_run *), struct async_run *r)
{
	size_t most = 0;
	time_t until = time(NULL) + 180;
	while (!done(r)) {
		cr_assert_lt(time(NULL), until, "the calls never finished");
		struct pollfd fds[16];
		size_t n = bh_client_pollfds(cl, fds, 16);
		cr_assert_leq(n, 16);
		int t = bh_client_timeout_ms(cl);
		if (t < 0 || t > 500)
			t = 500;
		poll(fds, n, t);
		bh_client_process_pollfds(cl, fds, n);
		size_t p = bh_client_pending(cl);
		most = p > most ? p : most;
	}
	return most;
}

static bool all_answered(struct async_run *r)
{
	return r->opened == 2 && r->cells == 3 && r->described && r->listed;
}

static bool all_closed(struct async_run *r)
{
	return r->closed == 2;
}

Test(client, the_async_interface_carries_several_calls_at_once_from_the_hosts_poll_loop,
     .init = start, .fini = stop)
{
	struct async_run r = {0};
	struct slot opens[2] = {{&r, 0}, {&r, 1}};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_open_async(cl, NULL, on_opened, &opens[0], &err), 0);
	cr_assert_eq(bh_client_open_async(cl, NULL, on_opened, &opens[1], &err), 0);
	cr_assert_eq(bh_client_describe_async(cl, on_described, &r, &err), 0);
	cr_assert_eq(bh_client_operator_call_async(cl, "ListSessions", "{}", on_listed, &r, &err), 0);
	cr_assert_eq(bh_client_pending(cl), 4, "four calls are in flight at once");
	size_t most = loop_until(all_answered, &r);
	cr_assert_str_empty(r.why, "%s", r.why);
	cr_assert_geq(most, 3, "the calls were not in flight together (at most %zu)", most);
	cr_assert_str_eq(r.out[0], "");
	cr_assert_str_eq(r.out[1], "42\n", "the queued cell ran before the one it follows");
	cr_assert_str_eq(r.out[2], "b\n");

	cr_assert_eq(bh_client_session_close_async(r.s[0], on_closed, &r, &err), 0);
	cr_assert_eq(bh_client_session_close_async(r.s[1], on_closed, &r, &err), 0);
	loop_until(all_closed, &r);
	cr_assert_str_empty(r.why, "%s", r.why);
	bh_client_session_free(r.s[0]);
	bh_client_session_free(r.s[1]);
	cr_assert_eq(bh_client_pending(cl), 0);
}

/* ---- the operator API ---- */

Test(client, an_operator_steers_and_inspects_a_session_through_the_client, .init = start,
     .fini = stop)
{
	bh_client_session *s = open_session(cl, BH_TIER_UNKNOWN);
	free(cell(s, BH_LANG_PYTHON, "k = 3", NULL));
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	char fp[65], last[65];
	snprintf(fp, sizeof fp, "%s", v.fingerprint);
	snprintf(last, sizeof last, "%s", v.last_record_sha256);

	struct bh_client_error *err = NULL;
	struct wire_operator_sessions list;
	cr_assert_eq(bh_client_list_sessions(cl, NULL, &list, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(list.n, 1);
	cr_assert_str_eq(list.sessions[0].fingerprint, fp);
	cr_assert_eq(list.sessions[0].calls, 1);
	cr_assert_str_eq(list.sessions[0].last_record_sha256, last);
	wire_operator_sessions_free(&list);

	cr_assert_eq(bh_client_pause(cl, fp, &err), 0, "%s", err ? err->message : "");
	struct wire_operator_session info;
	cr_assert_eq(bh_client_get_session(cl, fp, &info, &err), 0);
	cr_assert_str_eq(info.state, "paused");
	wire_operator_session_free(&info);
	cr_assert_eq(bh_client_resume(cl, fp, &err), 0, "%s", err ? err->message : "");
	char *out = cell(s, BH_LANG_PYTHON, "print(k)", NULL);
	cr_assert_str_eq(out, "3\n");
	free(out);
	bh_client_session_get(s, &v);
	snprintf(last, sizeof last, "%s", v.last_record_sha256);

	struct wire_operator_records recs;
	cr_assert_eq(bh_client_list_records(cl, fp, 0, 1, &recs, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(recs.n, 1, "a page of one");
	cr_assert(bh_record_verify(&recs.rows[0].record));
	int64_t next = recs.next_after_id;
	wire_operator_records_free(&recs);
	cr_assert_eq(bh_client_list_records(cl, fp, next, 0, &recs, &err), 0);
	cr_assert_eq(recs.n, 1);
	cr_assert_str_eq(recs.rows[0].record.record_sha256, last, "the daemon's last record is not ours");
	cr_assert_str_eq(recs.rows[0].language, "python");
	wire_operator_records_free(&recs);

	struct wire_operator_events ev;
	cr_assert_eq(bh_client_list_events(cl, 0, 0, 0, &ev, &err), 0, "%s", err ? err->message : "");
	cr_assert_gt(ev.n, 0, "opening and pausing a session are events");
	wire_operator_events_free(&ev);

	struct wire_operator_leaks leaks;
	cr_assert_eq(bh_client_gc(cl, true, &leaks, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(leaks.n, 0, "a healthy daemon has nothing to reap (first: %s)",
		     leaks.n ? leaks.leaks[0].reason : "");
	wire_operator_leaks_free(&leaks);
	struct wire_operator_evidence evidence;
	cr_assert_eq(bh_client_evidence(cl, &evidence, &err), 0);
	cr_assert_gt(evidence.n_tiers, 0, "the evidence lists no tier");
	wire_operator_evidence_free(&evidence);

	/* An operator closes it; its client collects the count, and it matches. */
	struct wire_operator_closed closed;
	cr_assert_eq(bh_client_close(cl, fp, &closed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(closed.calls, 2);
	wire_operator_closed_free(&closed);
	struct wire_close_session_response r;
	cr_assert_eq(bh_client_session_close(s, &r, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(r.calls, 2);
	wire_close_session_response_free(&r);
	bh_client_session_free(s);

	/* And a wrong fingerprint is refused before anything is sent. */
	cr_assert_eq(bh_client_pause(cl, "nope", &err), -1);
	cr_assert(starts_with(err->message, "Nothing ran (request): "), "%s", err->message);
	bh_client_error_free(err);
}

/* ---- the CLI attached to the daemon ---- */

/* Runs `bulkhead ARGS` (a shell line); its stdout (caller frees) and status. */
static char *cli(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *cli(int *status, const char *fmt, ...)
{
	char args[16384], cmd[20000];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "BULKHEAD_INTERP='%s' %s %s", BH_TEST_INTERP, BH_TEST_CLI, args);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t cap = 1 << 20, len = 0, n;
	char *out = malloc(cap);
	while ((n = fread(out + len, 1, cap - len - 1, f)) > 0)
		len += n;
	out[len] = '\0';
	*status = pclose(f);
	return out;
}

static void write_token(const char *path, const char *token)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%s\n", token);
	fclose(f);
}

Test(client, ls_and_records_attached_show_what_the_daemons_store_holds, .init = start,
     .fini = stop)
{
	bh_client_session *s = open_session(cl, BH_TIER_UNKNOWN);
	free(cell(s, BH_LANG_PYTHON, "1 + 1", NULL));
	free(cell(s, BH_LANG_JAVASCRIPT, "console.log(2)", NULL));
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	char token[4300];
	snprintf(token, sizeof token, "%s/op.token", d.dir);
	write_token(token, d.op_token);

	int st = 0;
	char *ls = cli(&st, "ls --attach '%s' --token-file '%s' --json", d.sock, token);
	cr_assert_eq(st, 0, "%s", ls);
	cJSON *sessions = cJSON_Parse(ls);
	cr_assert_eq(cJSON_GetArraySize(sessions), 1, "%s", ls);
	cJSON *one = cJSON_GetArrayItem(sessions, 0);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(one, "session")), v.fingerprint);
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(one, "calls")), 2);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(one, "lastRecordSha256")),
			 v.last_record_sha256);
	cJSON_Delete(sessions);
	free(ls);

	/* The table names it by its fingerprint's prefix. */
	char *table = cli(&st, "ls --attach '%s' --token-file '%s'", d.sock, token);
	cr_assert_eq(st, 0, "%s", table);
	char prefix[13];
	snprintf(prefix, sizeof prefix, "%.12s", v.fingerprint);
	cr_assert_not_null(strstr(table, prefix), "%s", table);
	free(table);

	/* Records through the daemon, and read from its store beside it. */
	char *attached = cli(&st, "records --attach '%s' --token-file '%s' --json", d.sock, token);
	cr_assert_eq(st, 0, "%s", attached);
	char *store = cli(&st, "records --no-attach --state '%s/state' --json", d.dir);
	cr_assert_eq(st, 0, "%s", store);
	cr_assert_str_eq(attached, store, "the daemon and its store disagree");
	cr_assert_not_null(strstr(store, v.last_record_sha256));
	free(attached);

	/* Found through the state directory: the daemon named its socket there. */
	char *found = cli(&st, "records --state '%s/state' --token-file '%s' --json", d.dir, token);
	cr_assert_eq(st, 0, "%s", found);
	cr_assert_str_eq(found, store);
	free(found);
	free(store);
	char *auto_ls = cli(&st, "ls --state '%s/state' --token-file '%s' --json", d.dir, token);
	cr_assert_eq(st, 0, "%s", auto_ls);
	cr_assert_not_null(strstr(auto_ls, v.fingerprint), "ls did not attach by itself: %s", auto_ls);
	free(auto_ls);

	/* leaks and gc ask the daemon, which holds the state directory's lock. */
	char *leaks = cli(&st, "leaks --state '%s/state' --token-file '%s'", d.dir, token);
	cr_assert_eq(st, 0, "%s", leaks);
	cr_assert_not_null(strstr(leaks, "no leaks"), "%s", leaks);
	free(leaks);
	char *gc = cli(&st, "gc --dry-run --attach '%s' --token-file '%s' --json", d.sock, token);
	cr_assert_eq(st, 0, "%s", gc);
	cr_assert_not_null(strstr(gc, "[]"), "%s", gc);
	free(gc);

	/* A token without the operator scope is told so. */
	write_token(token, d.run_token);
	char *refused = cli(&st, "ls --attach '%s' --token-file '%s' 2>&1", d.sock, token);
	cr_assert_neq(st, 0);
	cr_assert_not_null(strstr(refused, "Nothing ran (permission)"), "%s", refused);
	free(refused);
	bh_client_session_free(s);
}

/* A long history in the daemon's store (grown beside it, as 30 days of
 * traffic would): the newest page of events and records, the page before,
 * and a record by its sequence (audit F9). */
Test(client, the_newest_events_and_records_page_back_and_a_record_is_found_by_its_sequence,
     .init = start, .fini = stop)
{
	char db[4300];
	snprintf(db, sizeof db, "%s/state/bulkhead.db", d.dir);
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = 1500,
					       .events = 2200});
	struct bh_client_error *err = NULL;
	struct wire_operator_events ev;
	cr_assert_eq(bh_client_list_events(cl, 0, 1, 0, &ev, &err), 0, "%s", err ? err->message : "");
	wire_operator_events_free(&ev);
	cr_assert_eq(bh_client_list_events_newest(cl, 0, 1000, &ev, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(ev.n, 1000);
	int64_t newest = ev.events[999].id;
	cr_assert_eq(ev.next_before_id, ev.events[0].id);
	cr_assert_eq(ev.next_after_id, newest);
	cr_assert(!strncmp(ev.events[999].detail, "event 2200", 10), "the newest event is %s",
		  ev.events[999].detail);
	int64_t before = ev.next_before_id;
	wire_operator_events_free(&ev);
	cr_assert_eq(bh_client_list_events_newest(cl, before, 1000, &ev, &err), 0);
	cr_assert_eq(ev.n, 1000);
	cr_assert_eq(ev.events[999].id, before - 1, "the page before ends just before it");
	wire_operator_events_free(&ev);
	/* Nothing new after the newest: afterId still follows the tail. */
	cr_assert_eq(bh_client_list_events(cl, newest, 10, 0, &ev, &err), 0);
	cr_assert_eq(ev.n, 0);
	wire_operator_events_free(&ev);

	char fp[65];
	gen_store_session(0, fp);
	struct wire_operator_records recs;
	cr_assert_eq(bh_client_list_records_newest(cl, fp, 0, 1000, &recs, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(recs.n, 1000);
	cr_assert_eq(recs.rows[0].record.sequence, 501);
	cr_assert_eq(recs.rows[999].record.sequence, 1500);
	wire_operator_records_free(&recs);
	cr_assert_eq(bh_client_record_at(cl, fp, 1003, &recs, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(recs.n, 1);
	cr_assert_eq(recs.rows[0].record.sequence, 1003);
	wire_operator_records_free(&recs);
	cr_assert_eq(bh_client_record_at(cl, fp, 1501, &recs, &err), 0);
	cr_assert_eq(recs.n, 0, "no record #1501");
	wire_operator_records_free(&recs);
	/* A sequence without a session is refused, not read as all. */
	char *json = NULL;
	cr_assert_eq(bh_client_operator_call(cl, "ListRecords", "{\"sequence\":\"3\"}", &json, &err), -1);
	cr_assert_not_null(strstr(err->message, "sequence"), "%s", err->message);
	bh_client_error_free(err);
	err = NULL;
	/* waitMs follows the tail after afterId; with newest it is refused. */
	cr_assert_eq(bh_client_operator_call(cl, "ListEvents", "{\"newest\":true,\"waitMs\":100}",
					     &json, &err), -1);
	bh_client_error_free(err);
}

Test(client, ls_without_a_daemon_says_it_cannot_see_live_sessions)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	char dir[4096];
	root = root && *root ? root : "/tmp/bulkhead-tests";
	mkdir(root, 0711);
	snprintf(dir, sizeof dir, "%s/ls-XXXXXX", root);
	cr_assert_not_null(mkdtemp(dir));
	int st = 0;
	char *out = cli(&st, "ls --state '%s/state' 2>&1", dir);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert_not_null(strstr(out, "SESSION"), "%s", out);
	cr_assert_not_null(strstr(out, "no live session is listed"), "%s", out);
	free(out);
}

Test(client, shell_attached_runs_cells_in_a_daemons_session, .init = start, .fini = stop)
{
	int st = 0;
	/* Without a token the daemon refuses, and nothing ran. */
	unsetenv("BULKHEAD_TOKEN");
	char *out = cli(&st, "shell --attach '%s' </dev/null 2>&1", d.sock);
	cr_assert_neq(st, 0);
	cr_assert_not_null(strstr(out, "Nothing ran (permission)"), "%s", out);
	free(out);
	setenv("BULKHEAD_TOKEN", d.run_token, 1);
	out = cli(&st, "shell --attach '%s' <<'EOF'\nx = 6\nprint(x * 7)\n:js\nconsole.log(5)\n"
		       ":close\nEOF\n",
		  d.sock);
	unsetenv("BULKHEAD_TOKEN");
	cr_assert_eq(st, 0, "%s", out);
	cr_assert_not_null(strstr(out, "42\n"), "%s", out);
	cr_assert_not_null(strstr(out, "5\n"), "%s", out);
	cr_assert_not_null(strstr(out, "[closed "), "%s", out);
	cr_assert_not_null(strstr(out, ": 3 calls"), "%s", out);
	free(out);
}

/* ---- a call that may have run: its version-3 record ---- */

Test(client, a_call_whose_sandbox_died_keeps_its_checked_record_in_the_chain, .init = start,
     .fini = stop)
{
	bh_client_session *s = open_session(cl, BH_TIER_UNKNOWN);
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	if (strcmp(v.isolation, "kernel")) {
		bh_client_session_free(s);
		cr_skip_test("under %s running out of memory ends the interpreter, not the sandbox",
			     v.isolation);
	}
	free(cell(s, BH_LANG_PYTHON, "x = 1", NULL));
	/* Under gVisor, running out of memory ends the whole sandbox. */
	struct bh_client_error *err = NULL;
	char *out = cell(s, BH_LANG_PYTHON, "b = bytearray(2000 * 1024 * 1024)", &err);
	cr_assert_null(out);
	cr_assert(starts_with(err->message, "The code may have run"), "%s", err->message);
	cr_assert(err->unanswered, "no checked version-3 record: %s", err->message);
	cr_assert_eq(err->record.version, 3);
	cr_assert_eq(err->record.sequence, 2);
	bh_client_session_get(s, &v);
	cr_assert_eq(v.calls, 2, "the unanswered call is not in the client's chain");
	cr_assert_str_eq(v.last_record_sha256, err->record.record_sha256);
	cr_assert_null(v.stopped, "a checked unanswered call must not stop the session");
	bh_client_error_free(err);

	/* Its close counts it, and the client agrees. */
	struct wire_close_session_response r;
	err = NULL;
	cr_assert_eq(bh_client_session_close(s, &r, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(r.calls, 2);
	wire_close_session_response_free(&r);
	bh_client_session_free(s);
}

struct in_flight {
	bool done;
	struct bh_client_error *err;
};

static void on_slow(void *arg, struct wire_session_run_response *res,
		    const struct bh_client_error *err)
{
	(void)res;
	struct in_flight *f = arg;
	f->done = true;
	f->err = bh_client_error_dup(err);
}

Test(client, a_call_cut_by_an_operators_kill_may_have_run, .init = start, .fini = stop)
{
	bh_client_session *s = open_session(cl, BH_TIER_UNKNOWN);
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", v.fingerprint);
	struct in_flight f = {0};
	struct bh_client_cell c = {.language = BH_LANG_PYTHON,
				   .code = "import time\ntime.sleep(20)"};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_run_async(s, &c, on_slow, &f, &err), 0);
	/* Wait until the cell is running: the daemon says its session is busy
	 * (the loop carries the cell meanwhile). */
	bool running = false;
	for (int i = 0; i < 300 && !running && !f.done; i++) {
		struct wire_operator_session info;
		err = NULL;
		if (bh_client_get_session(cl, fp, &info, &err) == 0) {
			running = !strcmp(info.state, "busy");
			wire_operator_session_free(&info);
		}
		bh_client_error_free(err);
		bool never = false;
		if (!running)
			bh_client_wait(cl, &never, 50);
	}
	cr_assert(running && !f.done, "the cell never ran, or answered before it was killed");
	err = NULL;
	cr_assert_eq(bh_client_kill(cl, fp, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(bh_client_wait(cl, &f.done, 30000), 0);
	cr_assert_not_null(f.err, "a killed call answered as if it completed");
	cr_assert_not(f.err->not_dispatched, "a call that was running reads as not dispatched: %s",
		      f.err->message);
	cr_assert(f.err->unanswered, "no checked version-3 record: %s", f.err->message);
	bh_client_error_free(f.err);
	bh_client_session_get(s, &v);
	cr_assert_eq(v.calls, 1, "the killed call is not in the client's chain");

	/* Collecting the killed session: the daemon's count is the client's. */
	struct wire_close_session_response r;
	err = NULL;
	cr_assert_eq(bh_client_session_close(s, &r, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(r.calls, 1);
	cr_assert_neq(r.ended, WIRE_END_OPEN);
	wire_close_session_response_free(&r);
	bh_client_session_free(s);
}
