/* inflight (issue 17): a cell's intent is committed before the init sees
 * it and settled by its record; a kill -9 during the call leaves it, and
 * the next engine lists it as an interrupted finding with its code, keeps
 * it (keep_leftovers) until the operator reaps that finding alone; a
 * restored kernel session's image is no leak (B8). */
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNNING_CODE "print('exfil chunk', 0)"

static struct harness h;
static char state[4096];

static void setup(void)
{
	harness_open(&h, NULL);
	snprintf(state, sizeof state, "%s", h.state_dir);
}

static void teardown(void)
{
	harness_close(&h);
}

struct intents {
	size_t n;
	char session[65], code[256];
	int64_t engine_pid, reaped_ms;
};

static int count_intent(void *arg, const struct bh_inflight *r)
{
	struct intents *x = arg;
	x->n++;
	snprintf(x->session, sizeof x->session, "%s", r->session);
	snprintf(x->code, sizeof x->code, "%.*s", (int)r->code_len, r->code);
	x->engine_pid = r->engine_pid;
	x->reaped_ms = r->reaped_ms;
	return 0;
}

static struct intents intents_now(void)
{
	struct intents x = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_inflight(h.e, NULL, count_intent, &x, &err), 0, "%s",
		     err ? err->msg : "");
	return x;
}

static size_t kind_count(const struct bh_leak *v, size_t n, enum bh_leak_kind k, const char *fp)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += v[i].kind == k && (!fp || !strcmp(v[i].fingerprint, fp));
	return c;
}

Test(inflight, an_answered_cell_leaves_no_intent, .init = setup, .fini = teardown)
{
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "1 + 1", 0);
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	cell_outcome_free(o);
	cr_assert_eq(intents_now().n, 0, "the record did not settle the call's intent");
	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(kind_count(v, n, BH_LEAK_INTERRUPTED, NULL), 0);
	free(v);
}

/* The child engine dies right after the cell is sent ("cell:1"). */
static pid_t kill_during_a_cell(char fp[65])
{
	bh_engine_close(h.e);
	h.e = NULL;
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		struct harness c = {0};
		harness_open_at(&c, state, "cell:1");
		bh_session *s = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		dprintf(p[1], "%s\n", bh_session_fingerprint(s));
		cell_outcome_free(harness_cell(&c, s, BH_LANG_PYTHON, RUNNING_CODE, 0));
		_exit(0); /* the hook fires before */
	}
	close(p[1]);
	char line[80] = "";
	cr_assert_gt(read(p[0], line, sizeof line - 1), 0);
	close(p[0]);
	line[strcspn(line, "\n")] = '\0';
	snprintf(fp, 65, "%.64s", line);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "not killed at cell:1 (%d)", st);
	harness_wait_for_warden(state);
	return pid;
}

Test(inflight, a_cell_running_at_kill_9_is_an_interrupted_finding_kept_until_it_alone_is_reaped,
     .init = setup, .fini = teardown)
{
	char fp[65];
	pid_t dead = kill_during_a_cell(fp);
	h.keep_leftovers = true;
	harness_open_at(&h, state, NULL);

	struct bh_leftovers left;
	bh_engine_leftovers(h.e, &left);
	cr_assert(left.any);
	cr_assert_eq(left.engine_pid, dead, "the previous engine is %lld, not %d",
		     (long long)left.engine_pid, dead);
	cr_assert_eq(left.by_kind[BH_LEAK_INTERRUPTED], 1);
	char text[512];
	bh_leftovers_text(&left, text, sizeof text);
	cr_assert_not_null(strstr(text, "1 call was running"), "%s", text);

	struct intents x = intents_now();
	cr_assert_eq(x.n, 1);
	cr_assert_str_eq(x.session, fp);
	cr_assert_str_eq(x.code, RUNNING_CODE);
	cr_assert_eq(x.engine_pid, dead);
	cr_assert_eq(x.reaped_ms, 0);

	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(kind_count(v, n, BH_LEAK_INTERRUPTED, fp), 1);
	/* Its row was kept too: the sandbox the warden stopped is a ghost. */
	size_t row = kind_count(v, n, BH_LEAK_GHOST, fp) + kind_count(v, n, BH_LEAK_ABANDONED, fp);
	cr_assert_eq(row, 1, "the dead engine's row was not kept");
	struct bh_leak chosen = {0};
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == BH_LEAK_INTERRUPTED)
			chosen = v[i];
	free(v);

	struct bh_leak *reaped = NULL;
	cr_assert_eq(bh_engine_reap(h.e, &chosen, 1, &reaped), 1);
	cr_assert_eq(reaped[0].kind, BH_LEAK_INTERRUPTED);
	free(reaped);
	n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(kind_count(v, n, BH_LEAK_INTERRUPTED, NULL), 0);
	row = kind_count(v, n, BH_LEAK_GHOST, fp) + kind_count(v, n, BH_LEAK_ABANDONED, fp);
	cr_assert_eq(row, 1, "reaping the call reaped its session's row too");
	free(v);
	/* The intent stays for the timeline, marked. */
	x = intents_now();
	cr_assert_eq(x.n, 1);
	cr_assert_gt(x.reaped_ms, 0);
	bh_engine_leftovers(h.e, &left);
	cr_assert_eq(left.by_kind[BH_LEAK_INTERRUPTED], 0);
	/* What is still kept (the session's row, and the cgroup directories
	 * its crun made under the engine's hidden cgroup2 mount) goes with
	 * the take-over an engine that keeps nothing does. */
	harness_close(&h);
	h.keep_leftovers = false;
	harness_open_at(&h, state, NULL);
	n = bh_engine_leaks(h.e, &v);
	free(v);
	cr_assert_eq(n, 0, "the take-over left %zu findings", n);
}

Test(inflight, the_take_over_settles_a_dead_engines_interrupted_call_as_reaped, .init = setup,
     .fini = teardown)
{
	char fp[65];
	kill_during_a_cell(fp);
	harness_open_at(&h, state, NULL); /* keep_leftovers off: the library's take-over */
	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(n, 0, "the take-over left %zu findings (first: %s %s)", n,
		     n ? bh_leak_kind_name(v[0].kind) : "", n ? v[0].reason : "");
	free(v);
	struct intents x = intents_now();
	cr_assert_eq(x.n, 1, "the intent is gone: the timeline cannot show the call");
	cr_assert_gt(x.reaped_ms, 0);
}

static void on_done(void *arg, const bh_error *err)
{
	(void)err;
	*(bool *)arg = true;
}

/* B8: the image a restored session came back from is no stale-image leak. */
Test(inflight, a_restored_kernel_sessions_image_is_no_leak, .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(harness_cell(&h, s, BH_LANG_PYTHON, "x = 7", 0));
	/* The review's steps: pause, then hibernate, then a cell restores. */
	bool done = false;
	cr_assert_eq(bh_session_pause(s, on_done, &done, NULL), 0);
	bh_engine_wait(h.e, &done, 30000, NULL);
	done = false;
	cr_assert_eq(bh_session_hibernate(s, on_done, &done, NULL), 0);
	bh_engine_wait(h.e, &done, 60000, NULL);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	cr_assert_eq(info.state, BH_SESSION_HIBERNATED, "%s", bh_session_state_name(info.state));
	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(kind_count(v, n, BH_LEAK_STALE_IMAGE, NULL), 0, "hibernated: %s",
		     n ? v[0].reason : "");
	free(v);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "print(x)", 0);
	cr_assert(o->answered && !strcmp(o->out, "7\n"), "not restored: %s",
		  o->err_msg ? o->err_msg : o->out);
	cell_outcome_free(o);
	n = bh_engine_leaks(h.e, &v);
	cr_assert_eq(n, 0, "a live restored session is reported: %s %s %s", n ? bh_leak_kind_name(v[0].kind) : "",
		     n ? v[0].sandbox : "", n ? v[0].reason : "");
	free(v);
	/* And a reap of everything leaves it working. */
	cr_assert_eq(bh_engine_gc(h.e, NULL), 0);
	o = harness_cell(&h, s, BH_LANG_PYTHON, "print(x * 6)", 0);
	cr_assert(o->answered && !strcmp(o->out, "42\n"), "%s", o->err_msg ? o->err_msg : o->out);
	cell_outcome_free(o);
}
