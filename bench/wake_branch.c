/* Wake and branch (issue 21), kernel tier: what a hibernated conversation
 * takes to answer again, against how much live data it holds, and what a
 * branch takes.
 *
 *   build/bench/bulkhead-bench-wake [--rounds R] [--root DIR]
 *
 * For each size of live data (16, 64, 256 MiB of random bytes held by a
 * Python variable, so the image cannot compress it away): hibernate ->
 * the next cell's answer (the restore, reported by the engine as woke_us,
 * and the cell), and the image's size on disk. Then a branch of an idle
 * session holding 16 MiB: the parent's pause (its checkpoint), the request
 * to the first child's first cell answered, and to five children's. One
 * engine, real gVisor sandboxes; measured, never asserted (RESULTS.md). */
#include "stats.h"
#include "sysmem.h"

#include "bulkhead.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bh_engine *engine;

static void on_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "engine: %s\n", msg);
}

static void wait_done(bool *done)
{
	bh_error *err = NULL;
	if (bh_engine_wait(engine, done, 120000, &err) < 0 || !*done) {
		fprintf(stderr, "bench-wake: wait: %s\n", err ? err->msg : "timed out");
		exit(1);
	}
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench-wake: %s: %s\n", what, why);
	exit(1);
}

struct opened {
	bool done;
	char err[512];
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct opened *o = arg;
	o->done = true;
	if (err)
		snprintf(o->err, sizeof o->err, "%s", err->msg);
}

static bh_session *open_kernel(void)
{
	struct bh_session_opts o = {.tier = BH_TIER_KERNEL,
				    .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON,
				    .principal = "bench"};
	struct opened w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	if (bh_session_open(engine, &o, on_open, &w, &s, &err) < 0)
		die("open", err->msg);
	wait_done(&w.done);
	if (w.err[0])
		die("open", w.err);
	return s;
}

struct celled {
	bool done;
	uint64_t woke_us;
	double t;
	char err[512];
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct celled *c = arg;
	c->done = true;
	c->t = now_ms();
	if (err)
		snprintf(c->err, sizeof c->err, "%s", err->msg);
	else if (r->exit_code)
		snprintf(c->err, sizeof c->err, "exit %d: %.*s", r->exit_code, (int)r->errout_len,
			 (const char *)r->errout);
	else
		c->woke_us = r->woke_us;
}

static void start_cell(bh_session *s, const char *code, struct celled *c)
{
	struct bh_cell cell = {.language = BH_LANG_PYTHON, .code = code, .code_len = strlen(code),
			       .floor = BH_TIER_UNKNOWN};
	bh_error *err = NULL;
	memset(c, 0, sizeof *c);
	if (bh_session_run(s, &cell, on_cell, c, &err) < 0)
		die("run", err->msg);
}

static void cell(bh_session *s, const char *code, struct celled *c)
{
	start_cell(s, code, c);
	wait_done(&c->done);
	if (c->err[0])
		die(code, c->err);
}

struct acted {
	bool done;
	char err[512];
};

static void on_act(void *arg, const bh_error *err)
{
	struct acted *a = arg;
	a->done = true;
	if (err)
		snprintf(a->err, sizeof a->err, "%s", err->msg);
}

static void hibernate(bh_session *s)
{
	struct acted a = {0};
	bh_error *err = NULL;
	if (bh_session_hibernate(s, on_act, &a, &err) < 0)
		die("hibernate", err->msg);
	wait_done(&a.done);
	if (a.err[0])
		die("hibernate", a.err);
}

struct closed {
	bool done;
};

static void on_close(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	(void)r, (void)err;
	((struct closed *)arg)->done = true;
}

static void close_session(bh_session *s)
{
	struct closed c = {0};
	bh_error *err = NULL;
	if (bh_session_close(s, on_close, &c, &err) == 0)
		wait_done(&c.done);
	bh_error_free(err);
}

struct branched {
	bool done;
	char err[512];
	size_t n;
	struct bh_branch_child kids[BH_BRANCH_MAX];
	uint64_t paused_us;
	double t;
};

static void on_branch(void *arg, const struct bh_branch_result *r, const bh_error *err)
{
	struct branched *b = arg;
	b->done = true;
	b->t = now_ms();
	if (err) {
		snprintf(b->err, sizeof b->err, "%s", err->msg);
		return;
	}
	b->n = r->n;
	memcpy(b->kids, r->children, r->n * sizeof *r->children);
	b->paused_us = r->parent_paused_us;
}

static void line(const char *what, const struct samples *s, const char *unit, const char *tail)
{
	struct summary m = summarize(s);
	printf("  %-66s %9.1f %-4s (min %.1f, max %.1f, n %zu)%s%s\n", what, m.median, unit, m.min,
	       m.max, m.n, tail ? "  " : "", tail ? tail : "");
}

int main(int argc, char **argv)
{
	int rounds = 3;
	const char *root = "/tmp";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--root") && i + 1 < argc)
			root = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--rounds R] [--root DIR]\n", argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || rounds > 50)
		die("--rounds", "1 to 50");
	char state[4096];
	snprintf(state, sizeof state, "%s/bench-wake-XXXXXX", root);
	if (!mkdtemp(state))
		die("mkdtemp", strerror(errno));
	chmod(state, 0711);
	struct bh_config cfg = {.state_dir = state,
				.init_path = BENCH_INIT,
				.interp_dir = BENCH_INTERP,
				.log = on_log,
				.policy = {.max_per_owner = 16, .max_sessions = 32}};
	bh_error *err = NULL;
	if (bh_engine_open(&cfg, &engine, &err) < 0)
		die("engine open", err->msg);
	{
		bool never = false;
		while (!bh_engine_proven(engine))
			bh_engine_wait(engine, &never, 50, NULL);
	}
	printf("wake and branch, kernel tier (gVisor), %d rounds each\n", rounds);
	static const int sizes[] = {0, 16, 64, 256};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		struct samples wake = {0}, answer = {0}, image = {0};
		for (int r = 0; r < rounds; r++) {
			bh_session *s = open_kernel();
			struct celled c;
			char code[160];
			snprintf(code, sizeof code, "import os\nlive = os.urandom(%d << 20)\nlen(live)",
				 sizes[k]);
			cell(s, code, &c);
			hibernate(s);
			struct bh_session_info info;
			bh_session_get_info(s, &info);
			char path[8192];
			snprintf(path, sizeof path, "%s/images/%s", state, info.sandbox);
			uint64_t apparent = 0, on_disk = 0;
			du(path, &apparent, &on_disk);
			samples_add(&image, (double)on_disk / 1048576.0);
			double t0 = now_ms();
			cell(s, "len(live)", &c);
			samples_add(&answer, c.t - t0);
			samples_add(&wake, (double)c.woke_us / 1e3);
			close_session(s);
		}
		char what[128];
		snprintf(what, sizeof what, "restore from hibernate -> answer, %d MiB of live data", sizes[k]);
		line(what, &answer, "ms", "target <= 150 ms");
		line("  of which the restore itself (woke_us)", &wake, "ms", NULL);
		line("  the image on disk", &image, "MiB", NULL);
		samples_free(&wake), samples_free(&answer), samples_free(&image);
	}
	struct samples paused = {0}, first = {0}, five = {0};
	for (int r = 0; r < rounds; r++) {
		bh_session *p = open_kernel();
		struct celled c;
		cell(p, "import os\nlive = os.urandom(16 << 20)\nlen(live)", &c);
		struct branched b = {0};
		double t0 = now_ms();
		if (bh_session_branch(p, 5, on_branch, &b, &err) < 0)
			die("branch", err->msg);
		wait_done(&b.done);
		if (b.err[0])
			die("branch", b.err);
		samples_add(&paused, (double)b.paused_us / 1e3);
		struct celled kc[5];
		bh_session *kid[5];
		for (int i = 0; i < 5; i++) {
			kid[i] = bh_engine_find_session(engine, b.kids[i].session_id, "bench");
			start_cell(kid[i], "len(live)", &kc[i]);
		}
		double t_first = 0, t_all = 0;
		for (int i = 0; i < 5; i++) {
			wait_done(&kc[i].done);
			if (kc[i].err[0])
				die("child cell", kc[i].err);
		}
		for (int i = 0; i < 5; i++) {
			t_first = !t_first || kc[i].t < t_first ? kc[i].t : t_first;
			t_all = kc[i].t > t_all ? kc[i].t : t_all;
		}
		samples_add(&first, t_first - t0);
		samples_add(&five, t_all - t0);
		for (int i = 0; i < 5; i++)
			close_session(kid[i]);
		close_session(p);
	}
	line("branch: the parent's pause (its checkpoint), 16 MiB live", &paused, "ms",
	     "reported");
	line("branch: request -> the first child's first cell answered", &first, "ms",
	     "target <= 250 ms");
	line("branch: request -> five children's first cells answered", &five, "ms",
	     "target <= 600 ms");
	samples_free(&paused), samples_free(&first), samples_free(&five);
	bh_engine_close(engine);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-wake: could not remove %s\n", state);
	return 0;
}
