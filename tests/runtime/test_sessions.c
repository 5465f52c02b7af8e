/* Warm sessions as an agent's tool uses them, in both tiers. */
#include "harness.h"
#include "record.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct harness h;
static void setup(void) { harness_open(&h, NULL); }
static void teardown(void) { harness_close(&h); }

#define SESSION_TEST(name)                                                                         \
	static void name##_check(enum bh_tier tier);                                               \
	Test(sessions_container, name, .init = setup, .fini = teardown)                            \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_CONTAINER);                                       \
		name##_check(BH_TIER_CONTAINER);                                                   \
	}                                                                                          \
	Test(sessions_kernel, name, .init = setup, .fini = teardown)                               \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_KERNEL);                                          \
		name##_check(BH_TIER_KERNEL);                                                      \
	}                                                                                          \
	static void name##_check(enum bh_tier tier)

#define PY BH_LANG_PYTHON
#define JS BH_LANG_JAVASCRIPT

static struct cell_outcome *ok(bh_session *s, enum bh_language l, const char *code, int exit_code)
{
	struct cell_outcome *o = harness_cell(&h, s, l, code, 0);
	cr_assert(o->answered, "no answer to %s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, exit_code, "%s: exit %d\nstdout: %s\nstderr: %s", code,
		     o->r.exit_code, o->out, o->errout);
	return o;
}

SESSION_TEST(python_keeps_state_and_says_when_its_interpreter_is_fresh)
{
	bh_session *s = harness_session(&h, tier, 0);
	struct cell_outcome *a = ok(s, PY, "x = 41", 0);
	cr_assert(a->r.interpreter_started, "the first cell runs in a fresh interpreter");
	struct cell_outcome *b = ok(s, PY, "x + 1", 0);
	cr_assert_str_eq(b->out, "42\n");
	cr_assert_not(b->r.interpreter_started);
	cr_assert_not(b->r.interpreter_ended);
	cell_outcome_free(a), cell_outcome_free(b);
}

SESSION_TEST(javascript_redeclares_top_level_let_and_awaits)
{
	bh_session *s = harness_session(&h, tier, 1u << JS);
	struct cell_outcome *a = ok(s, JS, "let a = 1", 0);
	cr_assert(a->r.interpreter_started);
	struct cell_outcome *b = ok(s, JS, "let a = 2; a", 0);
	cr_assert_str_eq(b->out, "2\n");
	struct cell_outcome *c = ok(s, JS, "await new Promise(r => setTimeout(() => r(7), 10))", 0);
	cr_assert_str_eq(c->out, "7\n");
	cell_outcome_free(a), cell_outcome_free(b), cell_outcome_free(c);
}

/* The JavaScript server loads undici (Headers, Request, Response, FormData)
 * only when a cell first reads one of them: they must still be there, and
 * assignable, as plain globals. A throwing cell is a result (exit 1) whose
 * stack ends at the cell, not in the server. */
SESSION_TEST(javascript_web_globals_load_on_first_use_and_errors_are_results)
{
	bh_session *s = harness_session(&h, tier, 1u << JS);
	struct cell_outcome *a = ok(s, JS, "new Headers({a: '1'}).get('a')", 0);
	cr_assert_str_eq(a->out, "'1'\n", "%s", a->errout);
	struct cell_outcome *b = ok(s, JS, "[typeof Request, typeof FormData, typeof fetch].join()", 0);
	cr_assert_str_eq(b->out, "'function,function,function'\n", "%s", b->errout);
	struct cell_outcome *c = ok(s, JS, "Response = 5; Response", 0);
	cr_assert_str_eq(c->out, "5\n", "%s", c->errout);
	struct cell_outcome *e = ok(s, JS, "let y = 1\nthrow new Error('boom')", 1);
	cr_assert_not_null(strstr(e->errout, "Error: boom"), "%s", e->errout);
	cr_assert_not_null(strstr(e->errout, "<cell-4>:2"), "%s", e->errout);
	cr_assert_null(strstr(e->errout, "cell.js"), "%s", e->errout);
	struct cell_outcome *d = ok(s, JS, "y", 0);
	cr_assert_str_eq(d->out, "1\n", "%s", d->errout);
	cell_outcome_free(a), cell_outcome_free(b), cell_outcome_free(c);
	cell_outcome_free(e), cell_outcome_free(d);
}

/* Top-level await in Python: every await of a session runs on one event
 * loop — the one a cell got from asyncio.get_event_loop() before it ever
 * awaited — and a cell's asyncio.run() does not take it away. */
SESSION_TEST(python_awaits_at_top_level_on_one_loop_across_cells)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	cell_outcome_free(ok(s, PY, "import asyncio\nloop = asyncio.get_event_loop()", 0));
	struct cell_outcome *a = ok(s, PY, "(await asyncio.sleep(0, asyncio.get_running_loop())) is loop", 0);
	cr_assert_str_eq(a->out, "True\n", "%s", a->errout);
	cell_outcome_free(ok(s, PY, "asyncio.run(asyncio.sleep(0))", 0));
	struct cell_outcome *b = ok(s, PY, "(await asyncio.sleep(0.01, asyncio.get_running_loop())) is loop", 0);
	cr_assert_str_eq(b->out, "True\n", "%s", b->errout);
	struct cell_outcome *c = ok(s, PY, "async def f():\n    return 6 * 7\nawait f()", 0);
	cr_assert_str_eq(c->out, "42\n", "%s", c->errout);
	cell_outcome_free(a), cell_outcome_free(b), cell_outcome_free(c);
}

SESSION_TEST(a_raising_cell_exits_1_and_keeps_earlier_state)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	cell_outcome_free(ok(s, PY, "x = 41", 0));
	struct cell_outcome *r = ok(s, PY, "1 / 0", 1);
	cr_assert_not_null(strstr(r->errout, "Traceback"), "%s", r->errout);
	cr_assert_not_null(strstr(r->errout, "ZeroDivisionError"), "%s", r->errout);
	struct cell_outcome *b = ok(s, PY, "x", 0);
	cr_assert_str_eq(b->out, "41\n");
	cell_outcome_free(r), cell_outcome_free(b);
}

SESSION_TEST(a_deadline_kills_the_interpreter_but_not_the_files)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	cell_outcome_free(ok(s, PY, "x = 5\nopen('/work/kept.txt', 'w').write('still here')", 0));
	struct cell_outcome *t = harness_cell(&h, s, PY, "while True: pass", 1000);
	cr_assert(t->answered, "%s", t->err_msg ? t->err_msg : "");
	cr_assert_eq(t->r.exit_code, 124);
	cr_assert(t->r.timed_out);
	/* Correctness with a stated slack: answered within 1.5 s of a 1 s deadline. */
	cr_assert_lt(t->r.wall_us, 1500000, "answered after %llu us", (unsigned long long)t->r.wall_us);
	struct cell_outcome *n = ok(s, PY, "print('x' in globals()); print(open('/work/kept.txt').read())", 0);
	cr_assert(n->r.interpreter_started, "the next cell gets a fresh interpreter");
	cr_assert_str_eq(n->out, "False\nstill here\n");
	cell_outcome_free(t), cell_outcome_free(n);
}

SESSION_TEST(files_given_with_a_cell_are_readable_and_unsafe_paths_are_refused)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	struct bh_file good[] = {{.path = "data/in.csv", .content = (const uint8_t *)"a,b\n1,2\n", .len = 8},
				 {.path = "json.py", .content = (const uint8_t *)"raise SystemExit('shadowed!')\n", .len = 30}};
	struct cell_outcome *o = harness_cell_files(&h, s, PY,
		"import json\nprint(open('data/in.csv').read().splitlines()[1], json.dumps([1]))", good, 2);
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	cr_assert_str_eq(o->out, "1,2 [1]\n", "json.py in /work must not shadow the stdlib: %s %s", o->out, o->errout);
	cell_outcome_free(o);
	const char *bad[] = {"../x", "/etc/x", "a/../../x", "", "a//b", "tab\there"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct bh_file f = {.path = bad[i], .content = (const uint8_t *)"x", .len = 1};
		o = harness_cell_files(&h, s, PY, "print('ran')", &f, 1);
		cr_assert_not(o->answered, "%s was accepted", bad[i]);
		cr_assert_eq(o->refusal, BH_REFUSAL_REQUEST, "%s: %s", bad[i], o->err_msg);
		cell_outcome_free(o);
	}
	/* A symlink the sandbox planted is never written through. */
	cell_outcome_free(ok(s, PY, "import os; os.symlink('/tmp', '/work/link')", 0));
	struct bh_file through = {.path = "link/planted", .content = (const uint8_t *)"x", .len = 1};
	o = harness_cell_files(&h, s, PY, "print('ran')", &through, 1);
	cr_assert_not(o->answered, "written through a planted symlink");
	cr_assert_eq(o->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(o->refusal, BH_REFUSAL_REQUEST, "%s", o->err_msg);
	cell_outcome_free(o);
	o = ok(s, PY, "import os; print(os.path.exists('/tmp/planted'))", 0);
	cr_assert_str_eq(o->out, "False\n");
	cell_outcome_free(o);
}

SESSION_TEST(no_process_a_cell_left_behind_is_alive_at_the_next_call)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	cell_outcome_free(ok(s, PY,
			     "import os, subprocess\n"
			     "subprocess.Popen(['sleep', '300'])\n"
			     "subprocess.Popen(['setsid', 'sleep', '301'])\n"
			     "if os.fork() == 0:\n"
			     "    if os.fork() == 0:\n"
			     "        os.execv('/bin/sleep', ['sleep', '302'])\n"
			     "    os._exit(0)\n"
			     "print('left three behind')",
			     0));
	struct cell_outcome *o = ok(s, PY,
				    "import os\n"
				    "alive = []\n"
				    "for p in os.listdir('/proc'):\n"
				    "    if p.isdigit():\n"
				    "        try:\n"
				    "            c = open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\\0', b' ')\n"
				    "        except OSError:\n"
				    "            continue\n"
				    "        if c.startswith(b'sleep'):\n"
				    "            alive.append(c)\n"
				    "print(alive)",
				    0);
	cr_assert_str_eq(o->out, "[]\n", "still alive: %s", o->out);
	cell_outcome_free(o);
}

SESSION_TEST(a_third_concurrent_call_is_refused_and_two_are_served_in_order)
{
	bh_session *s = harness_session(&h, tier, 1u << PY);
	bool d1 = false, d2 = false, d3 = false;
	struct cell_outcome *a, *b, *c;
	bh_error *err = NULL;
	cr_assert_eq(harness_cell_start(&h, s, PY, "import time; time.sleep(0.3); order = ['first']", &d1, &a, &err), 0);
	cr_assert_eq(harness_cell_start(&h, s, PY, "order.append('second'); order", &d2, &b, &err), 0);
	cr_assert_eq(harness_cell_start(&h, s, PY, "order.append('third')", &d3, &c, &err), -1);
	bh_error_free(err);
	cr_assert(d3);
	cr_assert_eq(c->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(c->refusal, BH_REFUSAL_CAPACITY);
	cr_assert_eq(bh_engine_wait(h.e, &d2, 60000, NULL), 0);
	cr_assert(d1, "the first finished before the second");
	cr_assert(b->answered, "%s", b->err_msg ? b->err_msg : "");
	cr_assert_str_eq(b->out, "['first', 'second']\n");
	cr_assert_eq(b->sequence, a->sequence + 1);
	cell_outcome_free(a), cell_outcome_free(b), cell_outcome_free(c);
}

SESSION_TEST(close_reports_the_calls_and_the_last_record)
{
	bh_session *s = harness_session(&h, tier, 0);
	struct cell_outcome *a = ok(s, PY, "1", 0);
	struct cell_outcome *b = ok(s, JS, "2", 0);
	cr_assert_eq(b->sequence, 2);
	char last[65], reason[32];
	cr_assert_eq(harness_close_session(&h, s, last, reason), 2);
	cr_assert_str_eq(last, b->record_sha256);
	cr_assert_str_eq(reason, "closed");
	struct cell_outcome *after = harness_cell(&h, s, PY, "1", 0);
	cr_assert_not(after->answered);
	cr_assert_eq(after->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(after->session_end, BH_END_CLOSED, "%s",
		     bh_end_reason_name(after->session_end));
	cell_outcome_free(a), cell_outcome_free(b), cell_outcome_free(after);
}

Test(sessions, a_hundred_cells_chain_and_verify_and_tampering_is_named, .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << PY);
	cell_outcome_free(ok(s, PY, "n = 0", 0));
	for (int i = 0; i < 99; i++)
		cell_outcome_free(ok(s, PY, "n += 1; n", 0));
	char last[65];
	cr_assert_eq(harness_close_session(&h, s, last, NULL), 100);
	char out[8192];
	int rc = harness_cli(&h, out, sizeof out, "verify");
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "100 records verified"), "%s", out);
	/* Alter one stored field of record 57 (its exit code is not in the
	 * digest; its end time is). */
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "sqlite3 '%s' \"UPDATE records SET ended_unix_ms = ended_unix_ms + 1 WHERE sequence = 57\"",
		 bh_engine_store_path(h.e));
	cr_assert_eq(system(cmd), 0);
	rc = harness_cli(&h, out, sizeof out, "verify");
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert_not_null(strstr(out, "sequence 57): its digest does not match"), "%s", out);
}

static void no_answer_expected(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	(void)arg, (void)r, (void)err;
	cr_assert_fail("a refused call was answered through its callback too");
}

static void no_listing_expected(void *arg, const struct bh_file_entry *e, size_t n, bool more,
				const bh_error *err)
{
	(void)arg, (void)e, (void)n, (void)more, (void)err;
	cr_assert_fail("a refused listing was answered through its callback too");
}

static void no_file_expected(void *arg, const uint8_t *data, size_t len, uint64_t size,
			     bool truncated, const bh_error *err)
{
	(void)arg, (void)data, (void)len, (void)size, (void)truncated, (void)err;
	cr_assert_fail("a refused read was answered through its callback too");
}

static void no_action_expected(void *arg, const bh_error *err)
{
	(void)arg, (void)err;
	cr_assert_fail("a refused action was answered through its callback too");
}

/* bulkhead.h lets every call be given a NULL err. On an ended session each
 * call is refused; before, the refusal wrote the end reason through the
 * NULL err (a crash for the caller who did not ask why). */
Test(sessions, calls_on_an_ended_session_given_no_err_are_refused_not_a_crash, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 0);
	bh_session_kill(s);
	struct bh_cell c = {.language = PY, .code = "1", .code_len = 1, .floor = BH_TIER_UNKNOWN};
	cr_assert_eq(bh_session_run(s, &c, no_answer_expected, NULL, NULL), -1);
	cr_assert_eq(bh_session_list_files(s, "", no_listing_expected, NULL, NULL), -1);
	cr_assert_eq(bh_session_read_file(s, "a", 0, no_file_expected, NULL, NULL), -1);
	cr_assert_eq(bh_session_pause(s, no_action_expected, NULL, NULL), -1);
	cr_assert_eq(bh_session_resume(s, no_action_expected, NULL, NULL), -1);
	cr_assert_eq(bh_session_hibernate(s, no_action_expected, NULL, NULL), -1);
	/* And the same calls given an err still learn why. */
	bh_error *err = NULL;
	cr_assert_eq(bh_session_run(s, &c, no_answer_expected, NULL, &err), -1);
	cr_assert_not_null(err);
	cr_assert_eq(err->session_end, BH_END_KILLED, "%s", bh_end_reason_name(err->session_end));
	bh_error_free(err);
}

/* ---- replay: refused calls, for :live ---- */
/* A call refused before it ran is not a call (calls stays 0, no record)
 * but the session counts it and keeps what its caller was told, so the
 * operator API can show it; the next call that runs is counted as before. */
Test(sessions, a_call_refused_before_it_ran_is_counted_with_its_refusal_not_as_a_call, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 0);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	cr_assert_eq(info.refused, 0);
	cr_assert_str_empty(info.last_refusal);
	struct bh_cell c = {.language = PY, .code = "1", .code_len = 1, .floor = BH_TIER_VM};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_run(s, &c, no_answer_expected, NULL, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_ISOLATION, "%s", err->msg);
	bh_error_free(err);
	c.floor = BH_TIER_UNKNOWN;
	c.timeout_ms = 999999999; /* above the maximum: refused as a request */
	cr_assert_eq(bh_session_run(s, &c, no_answer_expected, NULL, NULL), -1);
	bh_session_get_info(s, &info);
	cr_assert_eq(info.refused, 2);
	cr_assert_eq(info.calls, 0, "a refused call is not a call");
	cr_assert_not_null(strstr(info.last_refusal, "Nothing ran (request): timeout 999999999 ms"), "%s",
			   info.last_refusal);
	struct cell_outcome *a = ok(s, PY, "print(1)", 0);
	cell_outcome_free(a);
	bh_session_get_info(s, &info);
	cr_assert_eq(info.calls, 1);
	cr_assert_eq(info.refused, 2);
}

Test(sessions, a_floor_above_the_tier_opens_nothing, .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_KERNEL};
	bh_session *s = NULL;
	bh_error *err = NULL;
	char *before = harness_runtime_list(&h);
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &s, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_ISOLATION);
	cr_assert_null(s);
	char *after = harness_runtime_list(&h);
	cr_assert_str_eq(before, after);
	cr_assert_eq(bh_engine_live_sandboxes(h.e), 0);
	bh_error_free(err);
	free(before), free(after);
}

struct lw {
	bool done;
	char text[2048];
};

static void list_cb(void *arg, const struct bh_file_entry *e, size_t n, bool more, const bh_error *er)
{
	struct lw *w = arg;
	(void)more;
	w->done = true;
	if (er) {
		snprintf(w->text, sizeof w->text, "error %s", er->msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(w->text);
		snprintf(w->text + used, sizeof w->text - used, "%c %s%s%s\n", e[i].type, e[i].name,
			 e[i].type == 'l' ? " -> " : "", e[i].type == 'l' ? e[i].target : "");
	}
}

struct rw {
	bool done;
	char text[256];
	int err_no;
};

static void read_cb(void *arg, const uint8_t *d, size_t n, uint64_t size, bool tr, const bh_error *er)
{
	struct rw *w = arg;
	(void)size, (void)tr;
	w->done = true;
	if (er) {
		w->err_no = er->sys_errno;
		snprintf(w->text, sizeof w->text, "error");
		return;
	}
	snprintf(w->text, sizeof w->text, "%.*s", (int)n, (const char *)d);
}

Test(sessions, files_come_out_through_the_init_and_symlinks_and_fifos_are_refused, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << PY);
	cell_outcome_free(ok(s, PY,
			     "import os\n"
			     "open('/work/report.txt', 'w').write('hello')\n"
			     "os.symlink('/etc/passwd', '/work/pw')\n"
			     "os.mkfifo('/work/pipe')", 0));
	/* Listing shows all three, the symlink with its target, nothing followed. */
	struct lw lw = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_list_files(s, "", list_cb, &lw, &err), 0);
	cr_assert_eq(bh_engine_wait(h.e, &lw.done, 30000, NULL), 0);
	cr_assert_str_eq(lw.text, "p pipe\nl pw -> /etc/passwd\nf report.txt\n");
	struct rw rw;
	const char *paths[] = {"report.txt", "pw", "pipe"};
	const char *want[] = {"hello", "error", "error"};
	for (int i = 0; i < 3; i++) {
		memset(&rw, 0, sizeof rw);
		cr_assert_eq(bh_session_read_file(s, paths[i], 4096, read_cb, &rw, &err), 0);
		cr_assert_eq(bh_engine_wait(h.e, &rw.done, 30000, NULL), 0, "reading %s hung", paths[i]);
		cr_assert_str_eq(rw.text, want[i], "%s", paths[i]);
	}
}

Test(sessions, history_older_than_the_retention_is_pruned_whole_chains_at_a_time, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *old = harness_session(&h, BH_TIER_CONTAINER, 1u << PY);
	cell_outcome_free(ok(old, PY, "1", 0));
	cell_outcome_free(ok(old, PY, "2", 0));
	harness_close_session(&h, old, NULL, NULL);
	bh_session *recent = harness_session(&h, BH_TIER_CONTAINER, 1u << PY);
	cell_outcome_free(ok(recent, PY, "3", 0));
	harness_close_session(&h, recent, NULL, NULL);
	char cmd[4200];
	/* The first session ended 40 days ago; the retention is 30 days. */
	snprintf(cmd, sizeof cmd,
		 "sqlite3 '%s' \"UPDATE sessions SET ended_ms = ended_ms - 40*86400000 WHERE fingerprint = '%s'\"",
		 bh_engine_store_path(h.e), bh_session_fingerprint(old));
	cr_assert_eq(system(cmd), 0);
	char state[4096];
	snprintf(state, sizeof state, "%s", h.state_dir);
	bh_engine_close(h.e);
	h.e = NULL;
	harness_open_at(&h, state, NULL); /* the prune runs at start */
	char out[4096];
	cr_assert_eq(harness_cli(&h, out, sizeof out, "verify"), 0, "%s", out);
	cr_assert_not_null(strstr(out, "1 records verified"), "the old chain is gone, the recent one stays: %s", out);
}
