/* The processes inside a sandbox, read by its init from the sandbox's own
 * /proc, while a cell is still running: what the cell started is seen, as
 * the sandbox user, and is gone once the cell's sweep is over. Both tiers. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct harness h;
static void setup(void) { harness_open(&h, NULL); }
static void teardown(void) { harness_close(&h); }

struct ps_seen {
	bool done;
	char err[512];
	size_t n;
	bool found;
	struct bh_process sleep; /* the background `sleep 30` */
	uint32_t interp_pid;     /* whose child it should be */
	bool init_seen;
};

static void on_procs(void *arg, const struct bh_process *p, size_t n, bool more, const bh_error *err)
{
	struct ps_seen *w = arg;
	(void)more;
	w->done = true;
	if (err) {
		snprintf(w->err, sizeof w->err, "%s", err->msg);
		return;
	}
	w->n = n;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(p[i].command, "sleep 30")) {
			w->found = true;
			w->sleep = p[i];
			w->sleep.command = NULL;
		}
		if (p[i].pid == 1 && strstr(p[i].command, "bulkhead-init"))
			w->init_seen = true;
	}
}

static void list_now(bh_session *s, struct ps_seen *w)
{
	memset(w, 0, sizeof *w);
	bh_error *err = NULL;
	cr_assert_eq(bh_session_processes(s, on_procs, w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w->done, 30000, NULL), 0, "the list of processes hung");
	cr_assert_eq(w->err[0], '\0', "the processes could not be listed: %s\n%s", w->err, h.log);
}

static void background_process_check(enum bh_tier tier)
{
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	bool cell_done = false;
	struct cell_outcome *o = NULL;
	bh_error *err = NULL;
	cr_assert_eq(harness_cell_start(&h, s, BH_LANG_PYTHON,
					"import subprocess, time\n"
					"p = subprocess.Popen(['sleep', '30'])\n"
					"time.sleep(6)\n",
					&cell_done, &o, &err),
		     0, "%s", err ? err->msg : "");
	struct ps_seen w;
	/* The cell starts its child at once; the list is asked for again
	 * until it shows settled in its sleep, the cell still running
	 * throughout (a list taken in the instant of its exec, which a loaded
	 * host stretches, shows it with no resident page yet or in D, paging
	 * its binary in: both seen under --jobs 2). */
	for (int i = 0; i < 200; i++) {
		list_now(s, &w);
		cr_assert_not(cell_done, "the cell ended before its child was seen");
		if (w.found && w.sleep.rss_bytes > 0 && strchr("SR", w.sleep.state))
			break;
		bool never = false;
		bh_engine_wait(h.e, &never, 20, NULL);
	}
	cr_assert(w.found, "the background `sleep 30` a running cell started is not listed "
			   "(%zu processes)", w.n);
	cr_assert_eq(w.sleep.uid, 1000, "it runs as uid %u", w.sleep.uid);
	cr_assert_str_eq(bh_sandbox_user_name(w.sleep.uid), "sandbox");
	cr_assert_neq(w.sleep.ppid, 0);
	cr_assert(strchr("SR", w.sleep.state), "state %c", w.sleep.state);
	cr_assert_gt(w.sleep.rss_bytes, 0);
	cr_assert(w.init_seen, "the init itself (pid 1) is not listed");
	cr_assert_eq(bh_engine_wait(h.e, &cell_done, 60000, NULL), 0, "the cell never ended");
	cr_assert(o->answered, "%s", o->err_msg ? o->err_msg : "");
	/* The sweep after the cell killed what it left behind. */
	list_now(s, &w);
	cr_assert_not(w.found, "the cell's child outlived the cell");
	cell_outcome_free(o);
}

Test(processes_container, a_background_process_a_running_cell_started_is_listed, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	background_process_check(BH_TIER_CONTAINER);
}

Test(processes_kernel, a_background_process_a_running_cell_started_is_listed, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_KERNEL);
	background_process_check(BH_TIER_KERNEL);
}

static void on_refused(void *arg, const struct bh_process *p, size_t n, bool more,
		       const bh_error *err)
{
	(void)arg, (void)p, (void)n, (void)more, (void)err;
	cr_assert_fail("a refused list of processes was answered");
}

Test(processes_container, an_ended_session_refuses_to_list_in_words, .init = setup,
     .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	char reason[32];
	harness_close_session(&h, s, NULL, reason);
	bh_error *err = NULL;
	cr_assert_lt(bh_session_processes(s, on_refused, NULL, &err), 0);
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err->msg, "ended"), "%s", err->msg);
	bh_error_free(err);
}

/* ---- bulkhead files and cp, embedded (--state) ---- */
/* A kernel-tier session an engine left hibernated is the one an engine of
 * the CLI's own holds: files lists its /work and cp copies a file out of
 * it, byte for byte, after restoring it. */
#include "png_cell.h"

Test(processes_kernel, files_and_cp_embedded_reach_a_hibernated_sessions_work, .fini = teardown)
{
	struct bh_policy p = {.shutdown_hibernate = true};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, PNG_CELL, 0);
	cr_assert(o->answered && o->r.exit_code == 0, "%s %s", o->err_msg ? o->err_msg : "",
		  o->errout);
	char digest[65];
	snprintf(digest, sizeof digest, "%.64s", o->out);
	cell_outcome_free(o);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", bh_session_fingerprint(s));
	/* Closing the engine hibernates its idle kernel-tier session. */
	bh_engine_close(h.e);
	h.e = NULL;
	char out[16384], args[8192], dest[4200], got[256];
	snprintf(args, sizeof args, "files %.12s", fp);
	cr_assert_eq(harness_cli(&h, out, sizeof out, args), 0, "%s", out);
	cr_assert_not_null(strstr(out, "  plot.png\n"), "%s", out);
	snprintf(dest, sizeof dest, "%s-plot.png", h.state_dir);
	snprintf(args, sizeof args, "cp %s:plot.png '%s'", fp, dest);
	cr_assert_eq(harness_cli(&h, out, sizeof out, args), 0, "%s", out);
	cr_assert_eq(harness_sh_into(got, sizeof got, "sha256sum '%s'", dest), 0, "%s", got);
	cr_assert_eq(strncmp(got, digest, 64), 0, "the copy differs: %s vs %s", got, digest);
	/* Again, without --force: refused, the copy unchanged. */
	cr_assert_eq(harness_cli(&h, out, sizeof out, args), 125, "%s", out);
	cr_assert_not_null(strstr(out, "exists: not overwritten"), "%s", out);
	unlink(dest);
	/* A session no engine left is named as such. */
	cr_assert_eq(harness_cli(&h, out, sizeof out, "files 0000dead"), 125, "%s", out);
	cr_assert_not_null(strstr(out, "no session \"0000dead\" here"), "%s", out);
}
