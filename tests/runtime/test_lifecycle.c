/* The lifecycle policy with short timers: idle -> paused -> hibernated (or
 * closed), retention, and the owner cap. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static struct harness h;
static void teardown(void) { harness_close(&h); }

static void open_with(uint32_t idle, uint32_t hibernate_after, uint64_t retention, uint32_t per_owner)
{
	struct bh_policy p = {.idle_ms = idle, .hibernate_after_ms = hibernate_after,
			      .retention_ms = retention, .max_per_owner = per_owner};
	harness_open_policy(&h, &p);
}

static const char *state_of(bh_session *s)
{
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	return bh_session_state_name(i.state);
}

/* Runs the engine's loop for a while (timers fire inside it). */
static void run_for(int ms)
{
	bool never = false;
	bh_engine_wait(h.e, &never, ms, NULL);
}

/* Runs the loop until the session is in `state`, at most ms: its clocks
 * fire on time, but the pause or checkpoint they start takes what a loaded
 * host gives it (a kernel checkpoint under ASan and two tests at a time
 * outlasted a fixed 4.5 s wait). The deadline is slack, not a measure. */
static void run_until(bh_session *s, const char *state, int ms)
{
	for (int waited = 0; waited < ms && strcmp(state_of(s), state); waited += 100)
		run_for(100);
}

static struct cell_outcome *ok(bh_session *s, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered, "%s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, 0, "%s: %s", code, o->errout);
	return o;
}


static void pause_and_resume(enum bh_tier tier)
{
	open_with(1000, 60000, 0, 0);
	harness_require_tier(&h, tier);
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 5"));
	run_until(s, "paused", 30000);
	cr_assert_str_eq(state_of(s), "paused");
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	/* Its processes are frozen: the runtime says so. */
	const char *rt = tier == BH_TIER_KERNEL ? "runsc" : "crun";
	char *st = harness_sh("%s --root '%s' state %s", rt, bh_engine_runtime_root(h.e, tier), info.sandbox);
	cr_assert_not_null(strstr(st, "paused"), "%s", st);
	struct cell_outcome *o = ok(s, "x");
	cr_assert_str_eq(o->out, "5\n");
	cr_assert_not(o->r.interpreter_started);
	cr_assert_not(o->r.interpreter_ended);
	cr_assert_gt(o->r.woke_us, 0, "the resume time is part of the answer");
	cell_outcome_free(o);
	st = harness_sh("sqlite3 '%s' \"SELECT count(*) FROM events WHERE kind = 'resumed'\"",
		bh_engine_store_path(h.e));
	cr_assert_str_eq(st, "1\n", "the resume is an event");
}

Test(lifecycle, an_idle_container_sandbox_pauses_and_resumes_with_its_state, .fini = teardown)
{
	pause_and_resume(BH_TIER_CONTAINER);
}

Test(lifecycle, an_idle_kernel_sandbox_pauses_and_resumes_with_its_state, .fini = teardown)
{
	pause_and_resume(BH_TIER_KERNEL);
}

Test(lifecycle, a_paused_kernel_sandbox_hibernates_to_disk_and_restores, .fini = teardown)
{
	open_with(1000, 2000, 0, 0);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 41\nopen('/work/f.txt', 'w').write('on disk')"));
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	run_until(s, "hibernated", 30000);
	cr_assert_str_eq(state_of(s), "hibernated");
	char *list = harness_runtime_list(&h);
	cr_assert_null(strstr(list, info.sandbox), "its container still exists: %s", list);
	free(list);
	/* "[b]h-…" matches the name but not this shell's own command line. */
	char *procs = harness_sh("grep -l -s -E -- '[b]%s' /proc/[0-9]*/cmdline || true", info.sandbox + 1);
	cr_assert_str_empty(procs, "processes remain: %s", procs);
	char *img = harness_sh("du -sk '%s/images/%s' | cut -f1", bh_engine_state_dir(h.e), info.sandbox);
	cr_assert_gt(atoi(img), 0, "no image on disk");
	struct cell_outcome *o = ok(s, "print(x + 1, open('/work/f.txt').read())");
	cr_assert_str_eq(o->out, "42 on disk\n");
	cr_assert_not(o->r.interpreter_started, "restored, not restarted");
	cr_assert_gt(o->r.woke_us, 0);
	cell_outcome_free(o);
}

Test(lifecycle, retention_deletes_the_image_and_ends_the_session, .fini = teardown)
{
	open_with(1000, 1000, 3000, 0);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 1"));
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	run_for(8000);
	cr_assert_str_eq(state_of(s), "ended");
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "x", 0);
	cr_assert_not(o->answered);
	cr_assert_eq(o->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(o->session_end, BH_END_RETENTION_EXPIRED, "%s",
		     bh_end_reason_name(o->session_end));
	cell_outcome_free(o);
	struct stat st;
	char img[4200];
	snprintf(img, sizeof img, "%s/images/%s", bh_engine_state_dir(h.e), info.sandbox);
	cr_assert_neq(stat(img, &st), 0, "the image is still there");
}

Test(lifecycle, a_container_sandbox_paused_too_long_is_closed_idle, .fini = teardown)
{
	open_with(1000, 2000, 0, 0);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 1"));
	run_for(4500);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, "x", 0);
	cr_assert_not(o->answered);
	cr_assert_eq(o->session_end, BH_END_IDLE_CLOSED, "%s",
		     bh_end_reason_name(o->session_end));
	cell_outcome_free(o);
	bh_session *fresh = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	o = ok(fresh, "print('x' in globals())");
	cr_assert_str_eq(o->out, "False\n");
	cr_assert(o->r.interpreter_started);
	cell_outcome_free(o);
}

Test(lifecycle, the_owner_cap_replaces_the_least_recently_used_idle_sandbox, .fini = teardown)
{
	open_with(0, 0, 0, 2);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				    .principal = "test", .owner = "owner-a"};
	bh_session *a = NULL, *b = NULL, *c = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &a, &err), 0);
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &b, &err), 0);
	cell_outcome_free(ok(a, "1"));
	cell_outcome_free(ok(b, "2")); /* a is now the least recently used */
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &c, &err), 0, "%s", err ? err->msg : "");
	struct cell_outcome *r = harness_cell(&h, a, BH_LANG_PYTHON, "1", 0);
	cr_assert_not(r->answered);
	cr_assert_eq(r->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(r->session_end, BH_END_REPLACED, "%s",
		     bh_end_reason_name(r->session_end));
	cell_outcome_free(r);
	cell_outcome_free(ok(b, "'b still works'"));
	cell_outcome_free(ok(c, "'c works'"));
	/* Both busy: a further open is refused and neither is closed. */
	bool d1 = false, d2 = false;
	struct cell_outcome *o1, *o2;
	cr_assert_eq(harness_cell_start(&h, b, BH_LANG_PYTHON, "import time; time.sleep(1)", &d1, &o1, &err), 0);
	cr_assert_eq(harness_cell_start(&h, c, BH_LANG_PYTHON, "import time; time.sleep(1)", &d2, &o2, &err), 0);
	bh_session *d = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &d, &err), -1);
	cr_assert_eq(err->refusal, BH_REFUSAL_CAPACITY, "%s", err->msg);
	bh_error_free(err);
	cr_assert_eq(bh_engine_wait(h.e, &d1, 30000, NULL), 0);
	cr_assert_eq(bh_engine_wait(h.e, &d2, 30000, NULL), 0);
	cr_assert(o1->answered && o2->answered, "both kept running");
	cell_outcome_free(o1), cell_outcome_free(o2);
	/* A different owner is not affected. */
	o.owner = "owner-b";
	cr_assert_eq(bh_session_open(h.e, &o, NULL, NULL, &d, &err), 0);
}

/* A dead worker's sandbox and a container nobody registered: leaks names
 * them, gc reaps them. */
Test(leaks, an_orphan_and_a_ghost_are_found_and_reaped, .fini = teardown)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	char state[4096];
	snprintf(state, sizeof state, "%s", h.state_dir);
	char root[4096];
	snprintf(root, sizeof root, "%s", bh_engine_runtime_root(h.e, BH_TIER_CONTAINER));
	char cgparent[128];
	snprintf(cgparent, sizeof cgparent, "%s", bh_engine_cgroup_parent(h.e));
	bh_engine_close(h.e);
	h.e = NULL;

	/* A worker that dies holding a session. */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct harness c = {0};
		harness_open_at(&c, state, NULL);
		bh_session *s = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		struct cell_outcome *o = harness_cell(&c, s, BH_LANG_PYTHON, "1", 0);
		struct bh_session_info info;
		bh_session_get_info(s, &info);
		dprintf(p[1], "%s\n", info.sandbox);
		(void)o;
		raise(SIGKILL);
	}
	close(p[1]);
	char name[64] = "";
	cr_assert_gt(read(p[0], name, sizeof name - 1), 0);
	close(p[0]);
	*strchr(name, '\n') = '\0';
	waitpid(pid, NULL, 0);
	/* Its warden stops the dead engine's sandboxes (and would stop the
	 * orphan below too, were it planted before the warden is done). */
	harness_wait_for_warden(state);
	/* Its container is deleted out of band: the row is now a ghost. */
	harness_sh("crun --root '%s' delete -f %s 2>&1", root, name);
	/* And a container nobody registered runs under our root. */
	char *r = harness_sh("set -e; d='%s/bundles/bh-orphan'; mkdir -p \"$d\"; "
		     "sed -e 's|\"args\":\\[\"[^\"]*\"\\]|\"args\":[\"/bin/sleep\",\"300\"]|' "
		     "-e 's|%s/%s|%s/bh-orphan|' '%s/bundles/%s/config.json' > \"$d/config.json\"; "
		     "crun --root '%s' run -d --bundle \"$d\" bh-orphan </dev/null >/dev/null 2>&1 && echo started",
		     state, cgparent, name, cgparent, state, name, root);
	cr_assert_str_eq(r, "started\n", "could not plant the orphan: %s", r);

	char out[8192];
	struct harness view = {.state_dir = state};
	int rc = harness_cli(&view, out, sizeof out, "leaks");
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert_not_null(strstr(out, "orphan        bh-orphan"), "%s", out);
	char ghost[128];
	snprintf(ghost, sizeof ghost, "ghost         %s", name);
	cr_assert_not_null(strstr(out, ghost), "%s", out);
	rc = harness_cli(&view, out, sizeof out, "gc");
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "reaped"), "%s", out);
	rc = harness_cli(&view, out, sizeof out, "leaks");
	cr_assert_eq(rc, 0, "%s", out);
	r = harness_sh("crun --root '%s' list -q", root);
	cr_assert_str_empty(r, "still running: %s", r);
	harness_open_at(&h, state, NULL); /* so teardown closes and removes it */
}

/* A graceful stop with the hibernate policy puts kernel-tier sessions to
 * disk; the next engine on the directory continues them. */
Test(lifecycle, a_graceful_stop_hibernates_and_the_next_engine_continues, .fini = teardown)
{
	struct bh_policy p = {.shutdown_hibernate = true};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 41\nopen('/work/kept', 'w').write('yes')"));
	char id[40];
	snprintf(id, sizeof id, "%s", bh_session_id(s));
	char state[4096];
	snprintf(state, sizeof state, "%s", h.state_dir);
	bh_engine_close(h.e);
	h.e = NULL;
	h.policy = (struct bh_policy){0};
	harness_open_at(&h, state, NULL);
	bh_session *again = bh_engine_find_session(h.e, id, "test");
	cr_assert_not_null(again, "the hibernated session was not re-adopted\n%s", h.log);
	cr_assert_str_eq(state_of(again), "hibernated");
	struct cell_outcome *o = ok(again, "print(x + 1, open('/work/kept').read())");
	cr_assert_str_eq(o->out, "42 yes\n");
	cr_assert_not(o->r.interpreter_started);
	cr_assert_eq(o->sequence, 2, "the chain goes on");
	cell_outcome_free(o);
}

static void on_done(void *arg, const bh_error *err)
{
	(void)err;
	*(bool *)arg = true;
}

/* kill -9 of the engine's process while one session is hibernated, one
 * ready and one paused: the hibernated one is re-adopted and restores, the
 * others end reaped with nothing left running. */
Test(lifecycle, after_a_crash_hibernated_sessions_survive_and_the_rest_are_reaped, .fini = teardown)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_KERNEL);
	char state[4096];
	snprintf(state, sizeof state, "%s", h.state_dir);
	bh_engine_close(h.e);
	h.e = NULL;
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct harness c = {0};
		harness_open_at(&c, state, NULL);
		bh_session *hib = harness_session(&c, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
		bh_session *ready = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		bh_session *paused = harness_session(&c, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
		cell_outcome_free(harness_cell(&c, hib, BH_LANG_PYTHON, "x = 7", 0));
		cell_outcome_free(harness_cell(&c, ready, BH_LANG_PYTHON, "y = 1", 0));
		cell_outcome_free(harness_cell(&c, paused, BH_LANG_PYTHON, "z = 1", 0));
		bool done = false;
		bh_session_hibernate(hib, on_done, &done, NULL);
		bh_engine_wait(c.e, &done, 30000, NULL);
		done = false;
		bh_session_pause(paused, on_done, &done, NULL);
		bh_engine_wait(c.e, &done, 30000, NULL);
		dprintf(p[1], "%s\n", bh_session_id(hib));
		raise(SIGKILL);
	}
	close(p[1]);
	char id[64] = "";
	cr_assert_gt(read(p[0], id, sizeof id - 1), 0);
	close(p[0]);
	*strchr(id, '\n') = '\0';
	waitpid(pid, NULL, 0);
	harness_open_at(&h, state, NULL);
	char *containers = harness_runtime_list(&h);
	cr_assert_str_empty(containers, "containers left: %s", containers);
	free(containers);
	char *procs = harness_sh("grep -l -s -E -- '[%c]%s/' /proc/[0-9]*/cmdline || true", state[0], state + 1);
	cr_assert_str_empty(procs, "processes remain: %s", procs);
	char *rows = harness_sh("sqlite3 '%s' \"SELECT state || ':' || coalesce(end_reason, '') FROM sessions ORDER BY 1\"",
			bh_engine_store_path(h.e));
	cr_assert_str_eq(rows, "ended:reaped\nended:reaped\nhibernated:\n", "%s", rows);
	bh_session *s = bh_engine_find_session(h.e, id, "test");
	cr_assert_not_null(s, "not re-adopted\n%s", h.log);
	struct cell_outcome *o = ok(s, "x * 6");
	cr_assert_str_eq(o->out, "42\n");
	cell_outcome_free(o);
}

Test(lifecycle, a_session_over_its_disk_budget_ends_and_the_next_call_is_told, .fini = teardown)
{
	struct bh_policy p = {.disk_budget_mb = 8};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct cell_outcome *small = ok(s, "open('/work/small', 'wb').write(b'x' * 1024)");
	cr_assert_eq(small->r.ended, BH_END_NONE, "%s", bh_end_reason_name(small->r.ended));
	cell_outcome_free(small);
	struct cell_outcome *big = ok(s, "open('/work/big', 'wb').write(b'x' * (16 << 20))");
	cr_assert_neq(big->r.ended, BH_END_NONE, "the call that crossed the budget is told");
	cr_assert_eq(big->r.ended, BH_END_DISK_EXCEEDED, "%s", bh_end_reason_name(big->r.ended));
	cell_outcome_free(big);
	struct cell_outcome *next = harness_cell(&h, s, BH_LANG_PYTHON, "1", 0);
	cr_assert_not(next->answered);
	cr_assert_eq(next->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(next->session_end, BH_END_DISK_EXCEEDED, "%s",
		     bh_end_reason_name(next->session_end));
	cell_outcome_free(next);
}

/* Hibernation images share one disk budget: when a newer image pushes the
 * total past it, the oldest image goes and its session ends as if its
 * retention had passed; the newer one restores. */
Test(lifecycle, past_the_images_budget_the_oldest_image_is_deleted_first, .fini = teardown)
{
	struct bh_policy p = {.shutdown_hibernate = true};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *a = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(a, "a = 1"));
	char id_a[40], state[4096], sandbox_a[64];
	snprintf(id_a, sizeof id_a, "%s", bh_session_id(a));
	snprintf(state, sizeof state, "%s", h.state_dir);
	struct bh_session_info info;
	bh_session_get_info(a, &info);
	snprintf(sandbox_a, sizeof sandbox_a, "%s", info.sandbox);
	bh_engine_close(h.e); /* a goes to disk */
	h.e = NULL;
	char *kib = harness_sh("du -sk '%s/images/%s' | cut -f1", state, sandbox_a);
	long image_mib = atol(kib) / 1024 + 1;
	cr_assert_gt(image_mib, 1, "no image was written for the first session");

	/* Room for one image of this size and a half, not two. */
	h.policy = (struct bh_policy){.idle_ms = 500, .hibernate_after_ms = 1000,
				      .images_budget_mb = (uint32_t)(image_mib * 3 / 2)};
	harness_open_at(&h, state, NULL);
	a = bh_engine_find_session(h.e, id_a, "test");
	cr_assert_not_null(a, "the first session was not re-adopted (its image fits)\n%s", h.log);
	cr_assert_str_eq(state_of(a), "hibernated");
	bh_session *b = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(b, "b = 2"));
	for (int i = 0; i < 40 && strcmp(state_of(b), "hibernated"); i++)
		run_for(250);
	cr_assert_str_eq(state_of(b), "hibernated", "the second session did not hibernate");
	cr_assert_str_eq(state_of(a), "ended", "the older image was kept past the budget");

	struct cell_outcome *o = harness_cell(&h, a, BH_LANG_PYTHON, "a", 0);
	cr_assert_not(o->answered);
	cr_assert_eq(o->err_code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(o->session_end, BH_END_RETENTION_EXPIRED, "%s",
		     bh_end_reason_name(o->session_end));
	cell_outcome_free(o);
	struct stat st;
	char img[4200];
	snprintf(img, sizeof img, "%s/images/%s", state, sandbox_a);
	cr_assert_neq(stat(img, &st), 0, "the older image is still on disk");

	o = ok(b, "print(b)");
	cr_assert_str_eq(o->out, "2\n", "the newer session lost its state");
	cell_outcome_free(o);
}
