/* The store under a steady trickle (bulkhead-bench --soak SECONDS): one
 * engine, one container-tier session, one cell a second, never a second
 * without a commit, which is the load that used to grow the WAL until the
 * state disk filled. Every cell writes 64 KiB of output (the store keeps
 * its 4 KiB prefix) and its code, like a real agent's cell. The WAL's size
 * is sampled after every cell; the report gives its maximum against the
 * stated bound, then waits for the engine to truncate it once idle. A
 * figure, not a verdict: the exit code is 1 only when the soak could not
 * run (or the WAL passed the bound, which is a bug, not a slow machine). */
#include "soak.h"
#include "stats.h"

#include "bulkhead.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* docs/api.md "The store under load": the engine checkpoints every 2 s
 * and when a commit leaves 1 MiB of WAL; the file stays under 2 MiB. */
#define SOAK_WAL_BOUND (2ll << 20)

static const char soak_code[] = "import sys\nsys.stdout.write('x' * 65536)\n";

static void on_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "[soak] %s\n", msg);
}

static long long size_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

struct wait {
	bool done;
	char err[512];
	bool ended; /* the session ended (its lifetime): open another */
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct wait *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
}

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct wait *w = arg;
	w->done = true;
	if (err) {
		snprintf(w->err, sizeof w->err, "%s", err->msg);
		w->ended = err->session_end != BH_END_NONE;
	} else if (r->exit_code != 0) {
		snprintf(w->err, sizeof w->err, "the cell exited %d", r->exit_code);
	}
}

static void run_for(bh_engine *e, int ms)
{
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(e, &never, ms, &err);
	bh_error_free(err);
}

static bh_session *open_one(bh_engine *e, char *why, size_t n)
{
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON, .principal = "soak"};
	struct wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	if (bh_session_open(e, &o, on_open, &w, &s, &err) < 0 ||
	    bh_engine_wait(e, &w.done, 180000, &err) < 0) {
		snprintf(why, n, "open: %s", err ? err->msg : "?");
		bh_error_free(err);
		return NULL;
	}
	if (w.err[0]) {
		snprintf(why, n, "open: %s", w.err);
		return NULL;
	}
	return s;
}

int bench_soak(const struct soak_opts *so, volatile sig_atomic_t *interrupted)
{
	char state[4300];
	snprintf(state, sizeof state, "%s/soak", so->run_dir);
	struct bh_config cfg = {
		.state_dir = state,
		.init_path = so->init,
		.interp_dir = so->interp,
		.evidence_dir = so->evidence,
		.log = on_log,
		/* Awake time is what a lifetime counts: a soak of hours keeps
		 * its one session. */
		.policy = {.lifetime_ms = 12u * 3600u * 1000u},
	};
	bh_engine *e = NULL;
	bh_error *err = NULL;
	if (bh_engine_open(&cfg, &e, &err) < 0) {
		fprintf(stderr, "soak: engine: %s\n", err ? err->msg : "?");
		bh_error_free(err);
		return 1;
	}
	while (!bh_engine_proven(e))
		run_for(e, 50);
	char why[600] = "";
	bh_session *s = open_one(e, why, sizeof why);
	char wal[4400], db[4400];
	snprintf(wal, sizeof wal, "%s/bulkhead.db-wal", state);
	snprintf(db, sizeof db, "%s/bulkhead.db", state);
	long long most = 0;
	int cells = 0, failed = 0, minute = 0;
	double t0 = now_us();
	fprintf(stderr, "soak: one cell a second for %d s in %s (WAL bound %lld bytes)\n",
		so->seconds, state, SOAK_WAL_BOUND);
	while (s && !*interrupted && (now_us() - t0) / 1e6 < so->seconds) {
		double due = t0 + (cells + 1) * 1e6;
		struct bh_cell c = {.language = BH_LANG_PYTHON, .code = soak_code,
				    .code_len = sizeof soak_code - 1, .floor = BH_TIER_UNKNOWN};
		struct wait w = {0};
		if (bh_session_run(s, &c, on_cell, &w, &err) < 0 ||
		    bh_engine_wait(e, &w.done, 120000, &err) < 0) {
			snprintf(why, sizeof why, "cell %d: %s", cells, err ? err->msg : "?");
			bh_error_free(err);
			break;
		}
		if (w.err[0]) {
			failed++;
			fprintf(stderr, "soak: cell %d: %s\n", cells, w.err);
			if (w.ended && !(s = open_one(e, why, sizeof why)))
				break;
		}
		cells++;
		long long now = size_of(wal);
		if (now > most)
			most = now;
		if ((int)((now_us() - t0) / 60e6) > minute) {
			minute++;
			fprintf(stderr, "soak: %d min: %d cells, WAL %lld bytes (max %lld), database %lld\n",
				minute, cells, now, most, size_of(db));
		}
		double left = due - now_us();
		if (left > 0)
			run_for(e, (int)(left / 1000));
	}
	long long at_end = size_of(wal);
	/* Idle now: the engine truncates the WAL within a few seconds. */
	long long idle = at_end;
	for (int i = 0; i < 100 && (idle = size_of(wal)) > 0; i++)
		run_for(e, 100);
	long long db_bytes = size_of(db);
	if (s)
		bh_session_kill(s);
	bh_engine_close(e);
	if (why[0])
		fprintf(stderr, "soak: stopped: %s\n", why);
	double took = (now_us() - t0) / 1e6;
	printf("soak: %d cells in %.0f s (%d failed); WAL max %lld bytes (%.2f MiB), bound %lld "
	       "(%.0f MiB): %s; at the end %lld, %lld once idle; database %lld bytes\n",
	       cells, took, failed, most, most / 1048576.0, SOAK_WAL_BOUND,
	       SOAK_WAL_BOUND / 1048576.0, most <= SOAK_WAL_BOUND ? "within" : "EXCEEDED", at_end,
	       idle, db_bytes);
	fflush(stdout);
	if (!why[0]) {
		char cmd[4400];
		snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", state);
		if (system(cmd) != 0)
			fprintf(stderr, "soak: could not remove %s\n", state);
	}
	return why[0] || failed || most > SOAK_WAL_BOUND ? 1 : 0;
}
