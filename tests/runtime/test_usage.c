/* Usage on both tiers: a cell that holds 200 MiB raises its session's
 * memory above it (read from the host cgroup; for gVisor the Sentry's),
 * the sandbox's pids, calls a minute and disk move, a busy cell shows as
 * CPU, the loop's tick fills the minute's ring, and the host's figures are
 * there. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024ull)

static struct harness h;

static void teardown(void)
{
	harness_close(&h);
}

/* The session's usage now (the test fails when it is not listed). */
static struct bh_session_usage usage_of(bh_session *s, struct bh_host_usage *host)
{
	struct bh_session_usage *all = NULL, found = {0};
	struct bh_host_usage hu;
	size_t n = bh_engine_usage(h.e, &hu, &all);
	bool seen = false;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i].fingerprint, bh_session_fingerprint(s))) {
			found = all[i];
			seen = true;
		}
	free(all);
	cr_assert(seen, "bh_engine_usage does not list the session");
	if (host)
		*host = hu;
	return found;
}

static void ran(bh_session *s, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered && o->r.exit_code == 0, "%s: %s %s", code,
		  o->err_msg ? o->err_msg : "", o->errout ? o->errout : "");
	cell_outcome_free(o);
}

/* Lets the engine's loop run for ms (its tick samples). */
static void let_time_pass(int ms)
{
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(h.e, &never, ms, &err);
	bh_error_free(err);
}

static void a_cell_holding_memory_shows_in_its_sessions_usage(enum bh_tier tier)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, tier);
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	struct bh_host_usage host;
	struct bh_session_usage before = usage_of(s, &host);
	cr_assert(before.measured, "a live sandbox's cgroup was not read");
	cr_assert_eq(before.tier, tier);
	cr_assert_lt(before.memory_bytes, 150 * MiB, "an idle sandbox uses %llu MiB",
		     (unsigned long long)(before.memory_bytes / MiB));
	cr_assert_eq(before.memory_limit_bytes, 512 * MiB, "limit %llu",
		     (unsigned long long)before.memory_limit_bytes);
	cr_assert_geq(before.pids, 1, "pids %u", before.pids);
	uint32_t calls_before = before.calls_last_minute;

	ran(s, "x = bytearray(200 * 1024 * 1024)");
	struct bh_session_usage held = usage_of(s, NULL);
	cr_assert_geq(held.memory_bytes, 200 * MiB, "holding 200 MiB, the session uses %llu MiB",
		      (unsigned long long)(held.memory_bytes / MiB));
	cr_assert_geq(held.memory_peak_bytes, held.memory_bytes);
	cr_assert_geq(held.pids, 2, "the init and its python: pids %u", held.pids);
	cr_assert_eq(held.calls_last_minute, calls_before + 1);
	cr_assert_gt(held.disk_unix_ms, 0, "the DONE's disk figure was not kept");

	/* A file in /work and a background process: disk and pids move. */
	ran(s, "import subprocess; open('/work/f','wb').write(b'z' * (3 << 20)); "
	       "p = subprocess.Popen(['sleep', '60'])");
	struct bh_session_usage more = usage_of(s, &host);
	cr_assert_geq(more.disk_bytes, 3 * MiB, "disk %llu", (unsigned long long)more.disk_bytes);
	cr_assert_gt(more.pids, held.pids, "pids %u then %u", held.pids, more.pids);
	cr_assert_eq(more.calls_last_minute, calls_before + 2);

	/* The tick's ring fills, and a busy cell is CPU. */
	let_time_pass((int)BH_USAGE_SAMPLE_MS + 1200);
	ran(s, "import time\nt = time.time()\nwhile time.time() - t < 2.5: pass");
	struct bh_session_usage busy = usage_of(s, &host);
	cr_assert_geq(busy.n_history, 1, "no sample in the ring after a sample interval");
	cr_assert_geq(busy.history[busy.n_history - 1].memory_bytes, 200 * MiB);
	/* Over a window of at most 6 s ending now (BH_USAGE_SAMPLE_MS and a
	 * second): 2.5 s busy at even half a core on a loaded host is 200. */
	cr_assert_gt(busy.cpu_millicores, 150, "a busy 2.5 s cell shows %u millicores",
		     busy.cpu_millicores);

	/* The host's figures. */
	cr_assert_gt(host.mem_total_bytes, 0);
	cr_assert_leq(host.mem_available_bytes, host.mem_total_bytes);
	cr_assert_geq(host.budget_held_bytes, 512 * MiB, "held %llu",
		      (unsigned long long)host.budget_held_bytes);
	cr_assert_geq(host.budget_bytes, host.budget_held_bytes);
	cr_assert_geq(host.sandboxes_used_bytes, 200 * MiB);
	cr_assert_gt(host.started_unix_ms, 0);
	cr_assert_geq(host.now_unix_ms, host.started_unix_ms);
}

Test(usage, container_a_cell_holding_200_mib_raises_memory_and_moves_pids_calls_disk_cpu,
     .fini = teardown, .timeout = 300)
{
	a_cell_holding_memory_shows_in_its_sessions_usage(BH_TIER_CONTAINER);
}

Test(usage, kernel_a_cell_holding_200_mib_raises_memory_through_the_sentrys_host_cgroup,
     .fini = teardown, .timeout = 300)
{
	a_cell_holding_memory_shows_in_its_sessions_usage(BH_TIER_KERNEL);
}

static void on_hibernated(void *arg, const bh_error *err)
{
	cr_assert_null(err, "hibernate: %s", err ? err->msg : "");
	*(bool *)arg = true;
}

Test(usage, a_hibernated_session_is_listed_unmeasured_and_its_image_counts, .fini = teardown,
     .timeout = 300)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	ran(s, "y = 1");
	bool done = false;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_hibernate(s, on_hibernated, &done, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &done, 60000, &err), 0, "%s", err ? err->msg : "");
	struct bh_host_usage host;
	struct bh_session_usage u = usage_of(s, &host);
	cr_assert_eq(u.state, BH_SESSION_HIBERNATED);
	cr_assert_not(u.measured, "a hibernated session has no cgroup to read");
	cr_assert_eq(u.memory_bytes, 0);
	cr_assert_eq(u.calls_last_minute, 1, "its calls still count");
	cr_assert_gt(host.images_bytes, 0, "its image is not in the images budget's use");
}
