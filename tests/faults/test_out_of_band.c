/* Faults from outside the engine, with real runtimes:
 *   - a sandbox killed behind the engine's back: `crun kill NAME KILL`,
 *     SIGKILL of its init from the host, `runsc kill NAME KILL`;
 *   - a sandbox SIGSTOPped (its init stopped): the next cell hits the
 *     engine's backstop (its deadline + 5 s grace) instead of hanging;
 *   - the runtime binary missing when the engine opens: runsc hidden under
 *     /dev/null in a private mount namespace of this test's process.
 * Each must be reported with the right end reason or refusal, and a
 * bystander session in the same engine keeps answering throughout. After
 * each, nothing is left: no container, cgroup, process or bundle.
 *
 * Criterion runs each test in a process of its own, so the mount namespace
 * the last test makes dies with it; nothing is mounted on the host. */
#include "faults.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

static struct harness h;

static void setup(void)
{
	harness_open(&h, NULL);
}

static void teardown(void)
{
	harness_close(&h); /* kills and deletes what is left, stopped sandboxes included */
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin(bh_engine *e, int ms)
{
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(e, &never, ms, &err);
	bh_error_free(err);
}

static bh_session *open_session(enum bh_tier tier)
{
	char why[512] = "";
	bh_session *s = faults_open(h.e, tier, why, sizeof why);
	cr_assert_not_null(s, "open (%s): %s", bh_tier_name(tier), why);
	return s;
}

/* The bystander answers, and keeps its state (its n-th call prints n). */
static void bystander_answers(bh_session *b, int n)
{
	struct faults_cell c;
	cr_assert_eq(faults_cell(h.e, b, "n = globals().get('n', 0) + 1\nprint(n)", 30000, &c), 0,
		     "the bystander did not answer: %s", c.err);
	char want[16];
	snprintf(want, sizeof want, "%d\n", n);
	cr_assert_str_eq(c.out, want, "the bystander lost its state");
}

static const char *sandbox_of(bh_session *s)
{
	static char name[64];
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	snprintf(name, sizeof name, "%s", info.sandbox);
	return name;
}

/* The init's host pid, from the runtime. */
static long init_pid(enum bh_tier tier, bh_session *s)
{
	char out[4096];
	faults_sh(out, sizeof out, "%s --root '%s' state '%s' | sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p'",
		  tier == BH_TIER_KERNEL ? "runsc" : "crun", bh_engine_runtime_root(h.e, tier),
		  sandbox_of(s));
	long pid = atol(out);
	cr_assert_gt(pid, 1, "no init pid for %s: %s", sandbox_of(s), out);
	return pid;
}

/* Runs the loop until s has ended (stated slack: 15 s); its end reason. */
static enum bh_end_reason wait_ended(bh_session *s, int ms)
{
	struct bh_session_info info;
	for (int waited = 0; waited < ms; waited += 50) {
		bh_session_get_info(s, &info);
		if (info.end_reason != BH_END_NONE)
			return info.end_reason;
		spin(h.e, 50);
	}
	bh_session_get_info(s, &info);
	return info.end_reason;
}

static void nothing_left(void)
{
	for (int waited = 0; bh_engine_live_sandboxes(h.e) > 0 && waited < 20000; waited += 50)
		spin(h.e, 50);
	char report[8192] = "";
	int leaks = faults_leaks(h.e, h.state_dir, report, sizeof report);
	cr_assert_eq(leaks, 0, "left behind:\n%s", report);
}

/* A victim killed out of band: the engine sees its sandbox go (at once, or
 * at the latest at the next call), ends the session main_process_ended, and
 * the next call on it says so; the bystander never notices. */
static void killed_out_of_band(enum bh_tier tier, const char *how)
{
	harness_require_tier(&h, tier);
	bh_session *victim = open_session(tier);
	bh_session *bystander = open_session(tier);
	struct faults_cell c;
	cr_assert_eq(faults_cell(h.e, victim, "x = 1\nprint(x)", 30000, &c), 0, "%s", c.err);
	bystander_answers(bystander, 1);

	const char *rt = tier == BH_TIER_KERNEL ? "runsc" : "crun";
	if (!strcmp(how, "runtime")) {
		char out[4096];
		int st = faults_sh(out, sizeof out, "%s --root '%s' kill '%s' KILL 2>&1", rt,
				   bh_engine_runtime_root(h.e, tier), sandbox_of(victim));
		cr_assert_eq(st, 0, "%s kill: %s", rt, out);
	} else {
		long pid = init_pid(tier, victim);
		cr_assert_eq(kill((pid_t)pid, SIGKILL), 0, "kill %ld: %s", pid, strerror(errno));
	}

	/* Noticed while idle (the channel closes), within a stated 15 s. */
	enum bh_end_reason reason = wait_ended(victim, 15000);
	cr_log_info("%s, %s killed by %s: ended %s", bh_tier_name(tier), sandbox_of(victim), how,
		    reason != BH_END_NONE ? bh_end_reason_name(reason) : "(not yet)");
	bystander_answers(bystander, 2);
	faults_cell(h.e, victim, "print(x)", 30000, &c);
	cr_assert(!c.answered, "a killed sandbox answered: %s", c.out);
	cr_assert_neq(c.session_end, BH_END_NONE, "the refusal names no end reason: %s", c.err);
	cr_assert_eq(c.session_end, BH_END_MAIN_PROCESS_ENDED, "%s: %s",
		     bh_end_reason_name(c.session_end), c.err);
	cr_assert_eq(wait_ended(victim, 1000), BH_END_MAIN_PROCESS_ENDED);
	cr_log_info("the next call: %s", c.err);
	bystander_answers(bystander, 3);
	char why[512];
	cr_assert_eq(faults_close(h.e, bystander, why, sizeof why), 0, "%s", why);
	nothing_left();
}

Test(faults, container_killed_by_crun_out_of_band_ends_main_process_ended, .init = setup,
     .fini = teardown, .timeout = 120)
{
	killed_out_of_band(BH_TIER_CONTAINER, "runtime");
}

Test(faults, container_init_sigkilled_from_the_host_ends_main_process_ended, .init = setup,
     .fini = teardown, .timeout = 120)
{
	killed_out_of_band(BH_TIER_CONTAINER, "signal");
}

Test(faults, kernel_sandbox_killed_by_runsc_out_of_band_ends_main_process_ended, .init = setup,
     .fini = teardown, .timeout = 180)
{
	killed_out_of_band(BH_TIER_KERNEL, "runtime");
}

struct pending {
	bool done;
	struct faults_cell c;
};

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct pending *p = arg;
	p->done = true;
	if (err) {
		snprintf(p->c.err, sizeof p->c.err, "%s", err->msg);
		p->c.session_end = err->session_end;
		p->c.code = err->code;
		return;
	}
	p->c.answered = true;
	p->c.exit_code = r->exit_code;
}

/* A stopped sandbox cannot answer: the cell's deadline (2 s) plus the
 * engine's 5 s grace fires the backstop, which kills the sandbox (SIGKILL
 * works on a stopped process) and ends the session main_process_ended;
 * meanwhile the bystander answers, so the engine did not hang. Stated
 * bound: 2 s + 5 s + 10 s slack for a shared 2-core host. */
Test(faults, sigstopped_container_hits_its_deadline_and_ends_without_hanging_the_engine,
     .init = setup, .fini = teardown, .timeout = 120)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *victim = open_session(BH_TIER_CONTAINER);
	bh_session *bystander = open_session(BH_TIER_CONTAINER);
	struct faults_cell c;
	cr_assert_eq(faults_cell(h.e, victim, "print(1)", 30000, &c), 0, "%s", c.err);
	long pid = init_pid(BH_TIER_CONTAINER, victim);
	cr_assert_eq(kill((pid_t)pid, SIGSTOP), 0, "SIGSTOP %ld: %s", pid, strerror(errno));

	struct pending p = {0};
	struct bh_cell cell = {.language = BH_LANG_PYTHON, .code = "print(2)", .code_len = 8,
			       .timeout_ms = 2000, .floor = BH_TIER_UNKNOWN};
	bh_error *err = NULL;
	double t0 = now_s();
	cr_assert_eq(bh_session_run(victim, &cell, on_cell, &p, &err), 0, "%s",
		     err ? err->msg : "?");
	/* While the victim's call hangs, the bystander answers twice. */
	bystander_answers(bystander, 1);
	bystander_answers(bystander, 2);
	cr_assert(!p.done, "the stopped sandbox's call was answered within the bystander's calls");
	spin(h.e, 0);
	bh_engine_wait(h.e, &p.done, 17000, &err);
	bh_error_free(err);
	double took = now_s() - t0;
	cr_assert(p.done, "no answer from the stopped sandbox's call within 17 s");
	cr_log_info("stopped sandbox: answered after %.1f s: %s", took, p.c.err);
	cr_assert(!p.c.answered, "a stopped sandbox answered");
	cr_assert_geq(took, 2.0, "the call ended before its own deadline: %s", p.c.err);
	cr_assert_neq(p.c.session_end, BH_END_NONE, "%s", p.c.err);
	cr_assert_eq(p.c.session_end, BH_END_MAIN_PROCESS_ENDED, "%s: %s",
		     bh_end_reason_name(p.c.session_end), p.c.err);
	cr_assert(strstr(p.c.err, "deadline"), "the reason does not say deadline: %s", p.c.err);
	cr_assert_eq(wait_ended(victim, 1000), BH_END_MAIN_PROCESS_ENDED);
	bystander_answers(bystander, 3);
	char why[512];
	cr_assert_eq(faults_close(h.e, bystander, why, sizeof why), 0, "%s", why);
	nothing_left();
}

/* runsc hidden when the engine opens: the kernel tier is reported not
 * offered with the reason, a session asking for it or for its floor is
 * refused before anything is made, and the container tier serves. */
Test(faults, runtime_binary_missing_at_start_is_reported_and_its_tier_refused, .timeout = 120)
{
	/* A private mount namespace for this test's process only. */
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "make / private: %s",
		     strerror(errno));
	cr_assert_eq(mount("/dev/null", "/usr/bin/runsc", NULL, MS_BIND, NULL), 0,
		     "bind /dev/null over /usr/bin/runsc: %s", strerror(errno));
	setup();
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(h.e, &t);
	const struct bh_tier_report *kernel = NULL;
	for (size_t i = 0; i < n; i++)
		if (t[i].tier == BH_TIER_KERNEL)
			kernel = &t[i];
	cr_assert_not_null(kernel);
	cr_assert(!kernel->offered, "the kernel tier is offered without its runtime");
	cr_assert(strstr(kernel->reason, "runsc") && strstr(kernel->reason, "not installed"),
		  "the reason does not say runsc is missing: %s", kernel->reason);
	cr_log_info("kernel tier: %s", kernel->reason);
	harness_require_tier(&h, BH_TIER_CONTAINER);

	bh_session *bystander = open_session(BH_TIER_CONTAINER);
	bystander_answers(bystander, 1);
	size_t live = bh_engine_live_sandboxes(h.e);
	struct bh_session_opts asks[] = {
		{.tier = BH_TIER_KERNEL, .floor = BH_TIER_UNKNOWN, .principal = FAULTS_PRINCIPAL},
		{.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_KERNEL, .principal = FAULTS_PRINCIPAL},
	};
	static const enum bh_refusal want[] = {BH_REFUSAL_UNSUPPORTED, BH_REFUSAL_ISOLATION};
	for (size_t i = 0; i < 2; i++) {
		bh_session *s = NULL;
		bh_error *err = NULL;
		int r = bh_session_open(h.e, &asks[i], NULL, NULL, &s, &err);
		cr_assert_lt(r, 0, "a session %s kernel was admitted without runsc",
			     i ? "with the floor" : "on the tier");
		cr_assert_eq(err->code, BH_E_NOT_DISPATCHED, "%s", err->msg);
		cr_assert_eq(err->refusal, want[i], "refusal %s: %s", bh_refusal_name(err->refusal),
			     err->msg);
		cr_assert(strstr(err->msg, "kernel"), "the refusal does not name the tier: %s",
			  err->msg);
		cr_log_info("refused: %s", err->msg);
		bh_error_free(err);
	}
	cr_assert_eq(bh_engine_live_sandboxes(h.e), live, "a refused open created a sandbox");
	bystander_answers(bystander, 2);
	char why[512];
	cr_assert_eq(faults_close(h.e, bystander, why, sizeof why), 0, "%s", why);
	nothing_left();
	teardown();
}
