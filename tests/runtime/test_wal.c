/* The store's write-ahead log under steady load: cells that never leave
 * the engine a second without a commit must still see the WAL
 * checkpointed, so its file stays bounded instead of growing until the
 * state disk fills; and once the calls stop it is truncated. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The stated bound (docs/api.md, "The store under load"): the engine
 * checkpoints every 2 s and as soon as a commit leaves 256 pages (1 MiB)
 * in the WAL, so the file stays under twice that. These cells write about
 * 30 KiB of WAL each: 200 of them without a checkpoint make 6 MiB. */
#define WAL_BOUND_BYTES (2ll << 20)

static struct harness h;
static void teardown(void) { harness_close(&h); }

static long long wal_bytes(void)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/bulkhead.db-wal", h.state_dir);
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void run_for(int ms)
{
	bool never = false;
	bh_engine_wait(h.e, &never, ms, NULL);
}

Test(wal, cells_every_100_ms_for_20_s_keep_the_wal_bounded_and_idle_truncates_it,
     .fini = teardown, .timeout = 180)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	/* Each cell keeps 64 KiB of output (its 4 KiB prefix is stored) and
	 * its code: several pages of WAL per commit, as real cells write. */
	const char *code = "import sys\nsys.stdout.write('x' * 65536)\n";
	long long most = 0, first = -1;
	int cells = 0;
	for (int i = 0; i < 200; i++) {
		struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
		cr_assert(o->answered, "cell %d: %s", i, o->err_msg ? o->err_msg : "");
		cell_outcome_free(o);
		cells++;
		run_for(100);
		long long now = wal_bytes();
		if (first < 0)
			first = now;
		if (now > most)
			most = now;
	}
	fprintf(stderr, "wal: %d cells, one every 100 ms: the WAL peaked at %lld bytes "
			"(bound %lld), %lld after the first\n",
		cells, most, WAL_BOUND_BYTES, first);
	cr_assert_leq(most, WAL_BOUND_BYTES,
		      "the WAL grew to %lld bytes under steady load (bound %lld): it is never "
		      "checkpointed while commits keep coming",
		      most, WAL_BOUND_BYTES);
	/* Idle: within a few seconds (stated slack 10 s) the WAL is truncated. */
	long long idle = wal_bytes();
	for (int i = 0; i < 100 && (idle = wal_bytes()) > 0; i++)
		run_for(100);
	cr_assert_eq(idle, 0, "the WAL kept %lld bytes 10 s after the last commit", idle);
	char last[65], reason[32];
	cr_assert_eq(harness_close_session(&h, s, last, reason), (unsigned long long)cells);
}

/* Faster than the timer: a commit that fills the WAL has it checkpointed
 * in the next round of the loop. */
Test(wal, a_burst_of_cells_back_to_back_keeps_the_wal_bounded, .fini = teardown, .timeout = 180)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	const char *code = "import sys\nsys.stdout.write('x' * 65536)\n";
	long long most = 0;
	for (int i = 0; i < 400; i++) {
		struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
		cr_assert(o->answered, "cell %d: %s", i, o->err_msg ? o->err_msg : "");
		cell_outcome_free(o);
		long long now = wal_bytes();
		if (now > most)
			most = now;
	}
	fprintf(stderr, "wal: 400 cells back to back: the WAL peaked at %lld bytes (bound %lld)\n",
		most, WAL_BOUND_BYTES);
	cr_assert_leq(most, WAL_BOUND_BYTES,
		      "the WAL grew to %lld bytes in a burst (bound %lld)", most, WAL_BOUND_BYTES);
	char last[65], reason[32];
	cr_assert_eq(harness_close_session(&h, s, last, reason), 400ull);
}
