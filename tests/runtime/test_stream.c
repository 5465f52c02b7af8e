/* The running cell's output as it is produced (bh_session_output), both
 * tiers: what a cell prints before it ends is readable while it runs, the
 * cursor hands out only what is new, and the agent's answer is the one it
 * always was. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static struct harness h;
static void setup(void) { harness_open(&h, NULL); }
static void teardown(void) { harness_close(&h); }

#define STREAM_TEST(name)                                                                          \
	static void name##_check(enum bh_tier tier);                                               \
	Test(stream_container, name, .init = setup, .fini = teardown)                              \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_CONTAINER);                                       \
		name##_check(BH_TIER_CONTAINER);                                                   \
	}                                                                                          \
	Test(stream_kernel, name, .init = setup, .fini = teardown)                                 \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_KERNEL);                                          \
		name##_check(BH_TIER_KERNEL);                                                      \
	}                                                                                          \
	static void name##_check(enum bh_tier tier)

/* Runs the engine until the latest cell's stdout after the cursor holds
 * want, or it is answered, or 20 s (a correctness deadline with slack).
 * Returns what a follower saw, in order, appended to seen. */
static void follow_until(bh_session *s, const bool *done, const char *want, char *seen, size_t n,
			 uint64_t *seq, uint64_t *out_off, bool *saw_running)
{
	for (int i = 0; i < 2000 && !*done; i++) {
		struct bh_cell_output o;
		bh_engine_wait(h.e, done, 10, NULL);
		cr_assert_eq(bh_session_output(s, *seq, *out_off, 0, &o), 0);
		if (o.sequence != *seq) /* a new cell: read from its start */
			*out_off = 0;
		cr_assert_eq(o.out_offset, *out_off, "the bytes start at the cursor");
		size_t have = strlen(seen);
		if (have + o.out_len < n) {
			memcpy(seen + have, o.out, o.out_len);
			seen[have + o.out_len] = '\0';
		}
		*seq = o.sequence;
		*out_off += o.out_len;
		if (o.running && strstr(seen, want)) {
			*saw_running = true;
			return;
		}
	}
}

STREAM_TEST(a_line_printed_before_the_cell_ends_is_read_while_it_runs)
{
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	bool done = false;
	struct cell_outcome *o = NULL;
	bh_error *err = NULL;
	const char *code = "import time\nprint('first', flush=True)\ntime.sleep(3)\nprint('second')";
	cr_assert_eq(harness_cell_start(&h, s, BH_LANG_PYTHON, code, &done, &o, &err), 0, "%s",
		     err ? err->msg : "");
	char seen[256] = "";
	uint64_t seq = 0, off = 0;
	bool running = false;
	follow_until(s, &done, "first\n", seen, sizeof seen, &seq, &off, &running);
	cr_assert(running, "'first' was not readable before the cell ended (saw \"%s\")\n%s", seen,
		  h.log);
	cr_assert_not(done, "the answer came before the follower read the line");
	cr_assert_str_eq(seen, "first\n");
	struct bh_cell_output now;
	bh_session_output(s, seq, off, 0, &now);
	cr_assert(now.running);
	cr_assert_eq(now.code_len, strlen(code));
	cr_assert(!memcmp(now.code, code, now.code_len), "the running code is the cell's");
	cr_assert_gt(now.started_unix_ms, 0);
	cr_assert_str_eq(now.record_sha256, "", "no record while it runs");
	bh_engine_wait(h.e, &done, 20000, NULL);
	cr_assert(done && o->answered, "%s", o && o->err_msg ? o->err_msg : "no answer");
	/* The agent's answer is the whole output, as ever. */
	cr_assert_str_eq(o->out, "first\nsecond\n");
	struct bh_cell_output end;
	bh_session_output(s, seq, off, 0, &end);
	cr_assert_not(end.running);
	cr_assert(end.answered);
	cr_assert_eq(end.sequence, o->sequence, "the followed cell is the answered one");
	cr_assert_str_eq(end.record_sha256, o->record_sha256);
	cr_assert_eq(end.out_offset, strlen("first\n"));
	cr_assert_eq(end.out_len, strlen("second\n"), "after the cursor: only what is new");
	cr_assert(!memcmp(end.out, "second\n", end.out_len));
	cr_assert_eq(end.exit_code, 0);
	cell_outcome_free(o);
}

STREAM_TEST(stderr_is_followed_apart_and_a_new_cell_starts_from_zero)
{
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	struct cell_outcome *a = harness_cell(&h, s, BH_LANG_PYTHON,
					      "import sys\nsys.stderr.write('oops\\n')\nprint('out')", 0);
	cr_assert(a->answered);
	struct bh_cell_output o;
	bh_session_output(s, 0, 0, 0, &o);
	cr_assert_eq(o.sequence, a->sequence);
	cr_assert_eq(o.out_len, 4);
	cr_assert(!memcmp(o.out, "out\n", 4));
	cr_assert_eq(o.err_len, 5);
	cr_assert(!memcmp(o.err, "oops\n", 5));
	/* A cursor past the end reads nothing, not past the buffer. */
	bh_session_output(s, a->sequence, 1u << 30, 1u << 30, &o);
	cr_assert_eq(o.out_len, 0);
	cr_assert_eq(o.err_len, 0);
	struct cell_outcome *b = harness_cell(&h, s, BH_LANG_PYTHON, "print('next')", 0);
	bh_session_output(s, a->sequence, 4, 5, &o);
	cr_assert_eq(o.sequence, b->sequence);
	cr_assert_eq(o.out_offset, 0, "another cell's cursor reads this one from its start");
	cr_assert_eq(o.out_len, 5);
	cell_outcome_free(a), cell_outcome_free(b);
}

/* ---- cells from the store ---- */

struct big_answer {
	bool done, answered;
	size_t out_len;
	bool stdout_truncated;
};

static void on_big(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct big_answer *a = arg;
	a->done = true;
	a->answered = r && !err;
	if (a->answered) {
		a->out_len = r->out_len;
		a->stdout_truncated = r->stdout_truncated;
	}
}

struct cells_seen {
	size_t n;
	uint64_t sequence[8];
	size_t out_len[8], code_len[8];
	char flags[8][200], language[8][16], first_out[8][16];
	int exit_code[8];
};

static int on_cell_row(void *arg, const struct bh_cell_row *row)
{
	struct cells_seen *c = arg;
	if (c->n >= 8)
		return 1;
	size_t i = c->n++;
	c->sequence[i] = row->sequence;
	c->out_len[i] = row->out_len;
	c->code_len[i] = row->code_len;
	c->exit_code[i] = row->exit_code;
	snprintf(c->flags[i], sizeof c->flags[i], "%s", row->flags);
	snprintf(c->language[i], sizeof c->language[i], "%s", row->language);
	snprintf(c->first_out[i], sizeof c->first_out[i], "%.*s",
		 (int)(row->out_len < 15 ? row->out_len : 15), (const char *)row->out);
	return 0;
}

STREAM_TEST(the_store_keeps_each_cells_whole_output_up_to_its_cap_newest_first)
{
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	struct cell_outcome *a = harness_cell(&h, s, BH_LANG_PYTHON, "print('small')", 0);
	cr_assert(a->answered);
	/* 300 000 bytes: under the cell's cap (1 MiB), over the store's. */
	const char *code = "import sys\n_ = sys.stdout.write('y' * 300000)";
	struct bh_cell cell = {.language = BH_LANG_PYTHON, .code = code, .code_len = strlen(code),
			       .output_cap = 1u << 20, .floor = BH_TIER_UNKNOWN};
	struct big_answer big = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_run(s, &cell, on_big, &big, &err), 0, "%s", err ? err->msg : "");
	bh_engine_wait(h.e, &big.done, 30000, NULL);
	cr_assert(big.answered);
	cr_assert_eq(big.out_len, 300000, "the agent gets all of it");
	cr_assert_not(big.stdout_truncated);
	struct cells_seen seen = {0};
	cr_assert_eq(bh_engine_cells(h.e, bh_session_fingerprint(s), 0, 0, on_cell_row, &seen, &err),
		     0, "%s", err ? err->msg : "");
	cr_assert_eq(seen.n, 2);
	cr_assert_eq(seen.sequence[0], a->sequence + 1, "newest first");
	cr_assert_eq(seen.out_len[0], BH_STORE_OUTPUT_CAP, "kept up to the store's cap");
	cr_assert_str_eq(seen.flags[0], "stored_stdout_truncated",
			 "the store's cut is flagged apart from the cell's own truncation");
	cr_assert_eq(seen.code_len[0], strlen(code));
	cr_assert_str_eq(seen.language[0], "python");
	cr_assert_str_eq(seen.first_out[1], "small\n");
	cr_assert_eq(seen.exit_code[1], 0);
	/* The page before the newest, by its sequence. */
	struct cells_seen older = {0};
	cr_assert_eq(bh_engine_cells(h.e, bh_session_fingerprint(s), seen.sequence[0], 0, on_cell_row,
				     &older, &err),
		     0);
	cr_assert_eq(older.n, 1);
	cr_assert_eq(older.sequence[0], a->sequence);
	/* The same through a store opened read-only (the console's --db). */
	bh_history *hist = NULL;
	cr_assert_eq(bh_history_open(bh_engine_store_path(h.e), &hist, &err), 0, "%s",
		     err ? err->msg : "");
	struct cells_seen ro = {0};
	cr_assert_eq(bh_history_cells(hist, bh_session_fingerprint(s), 0, 1, on_cell_row, &ro, &err),
		     0, "%s", err ? err->msg : "");
	bh_history_close(hist);
	cr_assert_eq(ro.n, 1, "a page of one");
	cr_assert_eq(ro.out_len[0], BH_STORE_OUTPUT_CAP);
	cell_outcome_free(a);
}
