/* The engine worker: one libbulkhead engine (its own state directory and
 * store settings), optionally one warm session with both interpreters, and
 * the measurements that need an engine in this process. */
#include "sysmem.h"
#include "stats.h"
#include "worker.h"
#include "engine_internals.h" /* stream: the hook that turns relaying off */

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define OPEN_TIMEOUT_MS (180 * 1000)
#define CALL_TIMEOUT_MS (120 * 1000)
#define SETTLE_TIMEOUT_MS (60 * 1000)

struct ew {
	const struct worker_cfg *cfg;
	bh_engine *e;
	bh_session *s; /* the warm session, or NULL */
	int fd;
	char err[1024];
};

static void on_log(void *arg, enum bh_log_level level, const char *msg)
{
	const struct ew *w = arg;
	if (level >= BH_LOG_WARN || w->cfg->verbose)
		fprintf(stderr, "[%s] %s\n", w->cfg->name, msg);
}

static int wait_for(struct ew *w, bool *done, int timeout_ms)
{
	bh_error *err = NULL;
	if (bh_engine_wait(w->e, done, timeout_ms, &err) < 0) {
		snprintf(w->err, sizeof w->err, "%s", err ? err->msg : "wait failed");
		bh_error_free(err);
		return -1;
	}
	return 0;
}

/* Lets the engine run (timers, teardowns) for ms. */
static void idle_for(struct ew *w, int ms)
{
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(w->e, &never, ms, &err);
	bh_error_free(err);
}

/* Until no more than `live` sandboxes have processes (teardowns finished). */
static int settle(struct ew *w, size_t live)
{
	double until = now_us() + SETTLE_TIMEOUT_MS * 1000.0;
	while (bh_engine_live_sandboxes(w->e) > live) {
		if (now_us() > until) {
			snprintf(w->err, sizeof w->err, "%zu sandboxes still live after %d s",
				 bh_engine_live_sandboxes(w->e), SETTLE_TIMEOUT_MS / 1000);
			return -1;
		}
		idle_for(w, 20);
	}
	return 0;
}

/* ---- sessions ---- */

struct open_wait {
	bool done;
	double t_ready;
	char err[512];
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct open_wait *o = arg;
	o->done = true;
	o->t_ready = now_us();
	if (err)
		snprintf(o->err, sizeof o->err, "%s", err->msg);
}

static int open_session(struct ew *w, uint32_t languages, struct open_wait *o, bh_session **out)
{
	struct bh_session_opts opts = {
		.tier = w->cfg->tier,
		.floor = BH_TIER_UNKNOWN,
		.languages = languages,
		.principal = "bench",
	};
	bh_error *err = NULL;
	memset(o, 0, sizeof *o);
	if (bh_session_open(w->e, &opts, on_open, o, out, &err) < 0) {
		snprintf(w->err, sizeof w->err, "open: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	return 0;
}

struct cell_wait {
	bool done;
	bool ok;
	double t_answer;
	uint64_t wall_us, duration_us, woke_us;
	bool started;
	char err[512];
};

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct cell_wait *c = arg;
	c->t_answer = now_us();
	c->done = true;
	if (err) {
		snprintf(c->err, sizeof c->err, "%s", err->msg);
		return;
	}
	c->wall_us = r->wall_us;
	c->duration_us = r->duration_us;
	c->woke_us = r->woke_us;
	c->started = r->interpreter_started;
	if (r->exit_code != 0) {
		snprintf(c->err, sizeof c->err, "the cell exited %d: %.*s", r->exit_code,
			 (int)(r->errout_len > 300 ? 300 : r->errout_len), (const char *)r->errout);
		return;
	}
	c->ok = true;
}

static int start_cell(struct ew *w, bh_session *s, enum bh_language lang, const char *code,
		      struct cell_wait *c)
{
	struct bh_cell cell = {
		.language = lang,
		.code = code,
		.code_len = strlen(code),
		.floor = BH_TIER_UNKNOWN,
	};
	bh_error *err = NULL;
	memset(c, 0, sizeof *c);
	if (bh_session_run(s, &cell, on_cell, c, &err) < 0) {
		snprintf(w->err, sizeof w->err, "run: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	return 0;
}

/* One cell, timed from the call to its answer. */
static int cell(struct ew *w, bh_session *s, enum bh_language lang, const char *code,
		struct cell_wait *c, double *client_us)
{
	double t0 = now_us();
	if (start_cell(w, s, lang, code, c) < 0)
		return -1;
	if (wait_for(w, &c->done, CALL_TIMEOUT_MS) < 0)
		return -1;
	if (!c->ok) {
		snprintf(w->err, sizeof w->err, "%s cell: %s", bh_language_name(lang), c->err);
		return -1;
	}
	if (client_us)
		*client_us = c->t_answer - t0;
	return 0;
}

struct close_wait {
	bool done;
};

static void on_close(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	(void)r;
	(void)err;
	((struct close_wait *)arg)->done = true;
}

static int close_session(struct ew *w, bh_session *s)
{
	struct close_wait c = {0};
	bh_error *err = NULL;
	if (bh_session_close(s, on_close, &c, &err) < 0) {
		snprintf(w->err, sizeof w->err, "close: %s", err ? err->msg : "?");
		bh_error_free(err);
		bh_session_kill(s);
		return -1;
	}
	return wait_for(w, &c.done, CALL_TIMEOUT_MS);
}

struct action_wait {
	bool done;
	char err[512];
};

static void on_action(void *arg, const bh_error *err)
{
	struct action_wait *a = arg;
	a->done = true;
	if (err)
		snprintf(a->err, sizeof a->err, "%s", err->msg);
}

/* ---- operations ---- */

static const char *const exec_argv[BH_LANG_COUNT][4] = {
	[BH_LANG_PYTHON] = {"/usr/bin/python3", "-c", "x = 1\nx = x + 1\nprint(x)", NULL},
	[BH_LANG_JAVASCRIPT] = {"/usr/bin/node", "-e", "let x = 1; x = x + 1; console.log(x)", NULL},
};

struct exec_wait {
	bool done, ok;
	double t_answer;
	uint64_t wall_us, duration_us;
	char err[512];
};

static void on_exec(void *arg, const struct bh_exec_result *r, const bh_error *err)
{
	struct exec_wait *x = arg;
	x->t_answer = now_us();
	x->done = true;
	if (err) {
		snprintf(x->err, sizeof x->err, "%s", err->msg);
		return;
	}
	x->wall_us = r->wall_us;
	x->duration_us = r->duration_us;
	if (r->exit_code != 0 || r->out_len < 1 || r->out[0] != '2') {
		snprintf(x->err, sizeof x->err, "exited %d: %.*s", r->exit_code,
			 (int)(r->errout_len > 300 ? 300 : r->errout_len), (const char *)r->errout);
		return;
	}
	x->ok = true;
}

static int op_exec(struct ew *w, enum bh_language lang, struct worker_reply *rep)
{
	size_t live = bh_engine_live_sandboxes(w->e);
	struct bh_exec_request req = {
		.tier = w->cfg->tier,
		.floor = BH_TIER_UNKNOWN,
		.argv = exec_argv[lang],
	};
	struct exec_wait x = {0};
	bh_error *err = NULL;
	double t0 = now_us();
	if (bh_exec(w->e, &req, on_exec, &x, &err) < 0) {
		snprintf(w->err, sizeof w->err, "exec: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	if (wait_for(w, &x.done, CALL_TIMEOUT_MS) < 0)
		return -1;
	if (!x.ok) {
		snprintf(w->err, sizeof w->err, "exec %s: %s", exec_argv[lang][0], x.err);
		return -1;
	}
	rep->cell.client_us = x.t_answer - t0;
	rep->cell.engine_wall_us = (double)x.wall_us;
	rep->cell.inside_us = (double)x.duration_us;
	/* The throwaway sandbox's teardown is not part of the answer, but it
	 * must not overlap the next measurement. */
	return settle(w, live);
}

static int op_cell(struct ew *w, enum bh_language lang, struct worker_reply *rep)
{
	struct cell_wait c;
	double client;
	if (!w->s) {
		snprintf(w->err, sizeof w->err, "no warm session");
		return -1;
	}
	if (cell(w, w->s, lang, CELL_CODE, &c, &client) < 0)
		return -1;
	rep->cell.client_us = client;
	rep->cell.engine_wall_us = (double)c.wall_us;
	rep->cell.inside_us = (double)c.duration_us;
	rep->cell.interpreter_started = c.started;
	return 0;
}

/* Open, and at once a python cell (it waits for the sandbox): the session
 * is left open for the caller. 0 with the times filled, or -1 with w->err. */
struct first_cell {
	bh_session *s;
	double t0, t_ready, t_answer;
	uint64_t duration_us;  /* the cell inside the sandbox */
	bool from_pool;
};

static int open_first_cell(struct ew *w, uint32_t languages, struct first_cell *f)
{
	struct open_wait o;
	struct cell_wait c;
	*f = (struct first_cell){.t0 = now_us()};
	if (open_session(w, languages, &o, &f->s) < 0)
		return -1;
	if (start_cell(w, f->s, BH_LANG_PYTHON, "1 + 1", &c) < 0) {
		bh_session_kill(f->s);
		return -1;
	}
	int r = wait_for(w, &c.done, CALL_TIMEOUT_MS);
	if (r == 0 && !c.ok)
		snprintf(w->err, sizeof w->err, "first cell: %.400s%s%.400s", c.err, o.err[0] ? "; open: " : "",
			 o.err);
	struct bh_session_info info;
	bh_session_get_info(f->s, &info);
	f->t_ready = o.t_ready;
	f->t_answer = c.t_answer;
	f->duration_us = c.duration_us;
	f->from_pool = info.from_pool;
	if (r < 0 || !c.ok) {
		close_session(w, f->s);
		return -1;
	}
	return 0;
}

static int op_cold(struct ew *w, uint32_t languages, struct worker_reply *rep)
{
	size_t live = bh_engine_live_sandboxes(w->e);
	struct first_cell f;
	if (open_first_cell(w, languages, &f) < 0)
		return -1;
	double t1 = now_us();
	int rc = close_session(w, f.s);
	double t2 = now_us();
	if (rc < 0 || settle(w, live) < 0)
		return -1;
	rep->cold.answer_us = f.t_answer - f.t0;
	rep->cold.ready_us = f.t_ready - f.t0;
	rep->cold.close_us = t2 - t1;
	rep->cold.gone_us = now_us() - t1;
	return 0;
}

/* The pool full and its interpreters up (as it is between demands on a
 * quiet daemon), then open and at once a python cell; then close, and let
 * the pool refill before the next round. */
static int op_pool(struct ew *w, struct worker_reply *rep)
{
	double until = now_us() + OPEN_TIMEOUT_MS * 1000.0;
	while (bh_engine_pool_ready(w->e, w->cfg->tier) < 1) {
		if (now_us() > until) {
			snprintf(w->err, sizeof w->err, "the warm pool did not fill");
			return -1;
		}
		idle_for(w, 20);
	}
	idle_for(w, 1000); /* the interpreters it started are up */
	struct first_cell f;
	if (open_first_cell(w, 1u << BH_LANG_PYTHON, &f) < 0 || close_session(w, f.s) < 0)
		return -1;
	rep->pool.answer_us = f.t_answer - f.t0;
	rep->pool.from_pool = f.from_pool;
	rep->pool.ready_us = f.t_ready - f.t0;
	rep->pool.inside_us = (double)f.duration_us;
	return 0;
}

static int op_pause(struct ew *w, struct worker_reply *rep)
{
	struct action_wait a = {0};
	bh_error *err = NULL;
	double t0 = now_us();
	if (bh_session_pause(w->s, on_action, &a, &err) < 0) {
		snprintf(w->err, sizeof w->err, "pause: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	if (wait_for(w, &a.done, CALL_TIMEOUT_MS) < 0)
		return -1;
	if (a.err[0]) {
		snprintf(w->err, sizeof w->err, "pause: %s", a.err);
		return -1;
	}
	double paused = now_us() - t0;
	/* Truly asleep for a moment before the call arrives. */
	idle_for(w, 50);
	struct cell_wait c;
	double client;
	if (cell(w, w->s, BH_LANG_PYTHON, CELL_CODE, &c, &client) < 0)
		return -1;
	rep->wake.client_us = client;
	rep->wake.woke_us = (double)c.woke_us;
	rep->wake.slept_us = paused;
	rep->wake.engine_wall_us = (double)c.wall_us;
	return 0;
}

static int op_hibernate(struct ew *w, struct worker_reply *rep)
{
	struct action_wait a = {0};
	bh_error *err = NULL;
	struct bh_session_info info;
	bh_session_get_info(w->s, &info);
	char image[8192];
	snprintf(image, sizeof image, "%s/images/%s", bh_engine_state_dir(w->e), info.sandbox);
	double t0 = now_us();
	if (bh_session_hibernate(w->s, on_action, &a, &err) < 0) {
		snprintf(w->err, sizeof w->err, "hibernate: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	if (wait_for(w, &a.done, CALL_TIMEOUT_MS) < 0)
		return -1;
	if (a.err[0]) {
		snprintf(w->err, sizeof w->err, "hibernate: %s", a.err);
		return -1;
	}
	double slept = now_us() - t0;
	uint64_t apparent = 0, on_disk = 0;
	du(image, &apparent, &on_disk);
	idle_for(w, 50);
	struct cell_wait c;
	double client;
	if (cell(w, w->s, BH_LANG_PYTHON, CELL_CODE, &c, &client) < 0)
		return -1;
	rep->wake.client_us = client;
	rep->wake.woke_us = (double)c.woke_us;
	rep->wake.slept_us = slept;
	rep->wake.image_disk_bytes = (double)on_disk;
	rep->wake.image_apparent_bytes = (double)apparent;
	rep->wake.engine_wall_us = (double)c.wall_us;
	return 0;
}

/* N more sandboxes with both interpreters started and one cell each run,
 * side by side: the system's MemAvailable before, during and after, and the
 * PSS of every process in their cgroups (plus, for gVisor, the runsc
 * processes named after them, which need not sit in the cgroup). */
static int op_memory(struct ew *w, int n, struct worker_reply *rep)
{
	if (n < 1 || n > 64) {
		snprintf(w->err, sizeof w->err, "memory: N out of range");
		return -1;
	}
	size_t live = bh_engine_live_sandboxes(w->e);
	bh_session *ss[64] = {0};
	struct open_wait ow[64];
	struct cell_wait cw[64];
	int rc = -1;
	idle_for(w, 500);
	long long before = mem_available_kib(), during = 0;
	double t0 = now_us();
	for (int i = 0; i < n; i++)
		if (open_session(w, 1u << BH_LANG_PYTHON | 1u << BH_LANG_JAVASCRIPT, &ow[i], &ss[i]) < 0)
			goto out;
	for (int lang = 0; lang < BH_LANG_COUNT; lang++) {
		for (int i = 0; i < n; i++)
			if (start_cell(w, ss[i], (enum bh_language)lang, CELL_SETUP, &cw[i]) < 0)
				goto out;
		for (int i = 0; i < n; i++) {
			if (wait_for(w, &cw[i].done, CALL_TIMEOUT_MS) < 0)
				goto out;
			if (!cw[i].ok) {
				snprintf(w->err, sizeof w->err, "memory: warm-up cell: %s", cw[i].err);
				goto out;
			}
		}
	}
	double opened = now_us() - t0;
	idle_for(w, 1500);
	during = mem_available_kib();
	struct pss_total pt = {0};
	for (int i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(ss[i], &info);
		sandbox_pss(bh_engine_cgroup_parent(w->e), info.sandbox, &pt);
	}
	rep->memory.pss_kib = (double)pt.pss_kib / n;
	rep->memory.rss_kib = (double)pt.rss_kib / n;
	rep->memory.procs = (double)pt.procs / n;
	rep->memory.cgroup_kib = (double)pt.cgroup_kib / n;
	rep->memory.n = n;
	rep->memory.opened_us = opened;
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		if (ss[i])
			close_session(w, ss[i]);
	if (settle(w, live) < 0)
		rc = -1;
	if (rc == 0) {
		idle_for(w, 1500);
		long long after = mem_available_kib();
		/* The baseline is the mean of before and after: a machine whose
		 * free memory drifts linearly meanwhile cancels out. */
		rep->memory.drop_kib = ((double)(before + after) / 2.0 - (double)during) / n;
		rep->memory.rise_after_close_kib = (double)(after - during) / n;
		rep->memory.drop_from_before_kib = (double)(before - during) / n;
	}
	return rc;
}

/* ---- throughput: K sessions, each with one call in flight ---- */

struct tp;
struct tp_slot {
	struct tp *tp;
	bh_session *s;
	struct cell_wait c;
	double t0;
	bool busy;
};

struct tp {
	struct ew *w;
	struct tp_slot slot[64];
	double until;
	size_t answered;
	int busy;
	bool failed;
	double t_last;
	struct samples lat;
	char err[512];
};

static void tp_issue(struct tp_slot *sl);

static void tp_on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct tp_slot *sl = arg;
	struct tp *tp = sl->tp;
	double t = now_us();
	sl->busy = false;
	tp->busy--;
	if (err || r->exit_code != 0) {
		if (!tp->failed)
			snprintf(tp->err, sizeof tp->err, "throughput cell: %s",
				 err ? err->msg : "non-zero exit");
		tp->failed = true;
		return;
	}
	tp->answered++;
	tp->t_last = t;
	samples_add(&tp->lat, (t - sl->t0) / 1000.0);
	if (t < tp->until && !tp->failed)
		tp_issue(sl);
}

static void tp_issue(struct tp_slot *sl)
{
	struct bh_cell cell = {
		.language = BH_LANG_PYTHON,
		.code = CELL_CODE,
		.code_len = strlen(CELL_CODE),
		.floor = BH_TIER_UNKNOWN,
	};
	bh_error *err = NULL;
	sl->t0 = now_us();
	if (bh_session_run(sl->s, &cell, tp_on_cell, sl, &err) < 0) {
		snprintf(sl->tp->err, sizeof sl->tp->err, "throughput run: %s", err ? err->msg : "?");
		sl->tp->failed = true;
		bh_error_free(err);
		return;
	}
	sl->busy = true;
	sl->tp->busy++;
}

static int tp_window(struct tp *tp, int k, int window_ms, double *cells_s)
{
	tp->answered = 0;
	tp->failed = false;
	double start = now_us();
	tp->until = start + window_ms * 1000.0;
	tp->t_last = start;
	for (int i = 0; i < k; i++)
		tp_issue(&tp->slot[i]);
	while (tp->busy > 0) {
		idle_for(tp->w, 10);
		if (now_us() > tp->until + CALL_TIMEOUT_MS * 1000.0) {
			snprintf(tp->err, sizeof tp->err, "throughput: calls never answered");
			return -1;
		}
	}
	if (tp->failed)
		return -1;
	*cells_s = (double)tp->answered / ((tp->t_last - start) / 1e6);
	return 0;
}

static int op_throughput(struct ew *w, int max_k, int window_ms, int rounds, struct worker_reply *rep)
{
	static const int ks[THROUGHPUT_KS] = {1, 8, 32};
	struct tp *tp = calloc(1, sizeof *tp);
	struct open_wait ow[64];
	struct samples per_k[THROUGHPUT_KS] = {{0}}, lat_k[THROUGHPUT_KS] = {{0}};
	int rc = -1;
	size_t live = bh_engine_live_sandboxes(w->e);
	if (max_k > 64)
		max_k = 64;
	tp->w = w;
	double t0 = now_us();
	for (int i = 0; i < max_k; i++) {
		tp->slot[i].tp = tp;
		if (open_session(w, 1u << BH_LANG_PYTHON, &ow[i], &tp->slot[i].s) < 0)
			goto out;
	}
	/* The first cell of each waits for its sandbox and defines x. */
	for (int i = 0; i < max_k; i++)
		if (start_cell(w, tp->slot[i].s, BH_LANG_PYTHON, CELL_SETUP, &tp->slot[i].c) < 0)
			goto out;
	for (int i = 0; i < max_k; i++) {
		if (wait_for(w, &tp->slot[i].c.done, OPEN_TIMEOUT_MS) < 0)
			goto out;
		if (!tp->slot[i].c.ok) {
			snprintf(w->err, sizeof w->err, "throughput: session %d: %.400s %.400s", i,
				 tp->slot[i].c.err, ow[i].err);
			goto out;
		}
	}
	rep->throughput.open_ms = (now_us() - t0) / 1000.0;
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < THROUGHPUT_KS; j++) {
			if (ks[j] > max_k)
				continue;
			double cps;
			samples_free(&tp->lat);
			if (tp_window(tp, ks[j], window_ms, &cps) < 0) {
				snprintf(w->err, sizeof w->err, "%s", tp->err);
				goto out;
			}
			samples_add(&per_k[j], cps);
			for (size_t i = 0; i < tp->lat.n; i++)
				samples_add(&lat_k[j], tp->lat.v[i]);
		}
	for (int j = 0; j < THROUGHPUT_KS; j++) {
		struct summary m = summarize(&per_k[j]), l = summarize(&lat_k[j]);
		rep->throughput.k[j].sessions = ks[j];
		rep->throughput.k[j].cells_s_median = m.median;
		rep->throughput.k[j].cells_s_min = m.min;
		rep->throughput.k[j].cells_s_max = m.max;
		rep->throughput.k[j].latency_p50_ms = l.median;
		rep->throughput.k[j].latency_p95_ms = l.p95;
	}
	rep->throughput.rounds = rounds;
	rc = 0;
out:
	for (int i = 0; i < max_k; i++)
		if (tp->slot[i].s)
			close_session(w, tp->slot[i].s);
	if (settle(w, live) < 0)
		rc = -1;
	for (int j = 0; j < THROUGHPUT_KS; j++) {
		samples_free(&per_k[j]);
		samples_free(&lat_k[j]);
	}
	samples_free(&tp->lat);
	free(tp);
	return rc;
}

/* ---- usage: what one read of every session's usage costs ---- */

static int op_usage_read(struct ew *w, struct worker_reply *rep)
{
	struct bh_host_usage host;
	struct bh_session_usage *u = NULL;
	double t0 = now_us();
	size_t n = bh_engine_usage(w->e, &host, &u);
	rep->cell.client_us = now_us() - t0;
	bool measured = n == 1 && u[0].measured;
	free(u);
	if (!measured) {
		snprintf(w->err, sizeof w->err, "the warm session's usage was not read");
		return -1;
	}
	return 0;
}

/* ---- the worker ---- */

static int start_engine(struct ew *w)
{
	struct bh_config cfg = {
		.state_dir = w->cfg->state_dir,
		.init_path = w->cfg->init_path,
		.interp_dir = w->cfg->interp_dir,
		.log = on_log,
		.log_arg = w,
		.evidence_dir = w->cfg->evidence_dir,
		.store_sync_full = w->cfg->sync_full,
		.store_digests_only = w->cfg->digests_only,
		.policy = {.pool_size = w->cfg->pool_size, .pool_tiers = 1u << w->cfg->tier},
	};
	bh_error *err = NULL;
	/* The bench's controls: the usage sampler off (its cost), cells that
	 * ask their init for no OUTPUT frames (streaming's). */
	struct bh_test_hooks hooks = {.usage_off = w->cfg->usage_off,
				      .no_output_relay = w->cfg->no_output_relay};
	if (bh_engine_open_hooked(&cfg, &hooks, &w->e, &err) < 0) {
		snprintf(w->err, sizeof w->err, "engine open: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	/* Proven, and the proofs' throwaway sandboxes gone (a pool full). */
	double until = now_us() + OPEN_TIMEOUT_MS * 1000.0;
	while (!bh_engine_proven(w->e) ||
	       bh_engine_live_sandboxes(w->e) > bh_engine_pool_ready(w->e, w->cfg->tier) ||
	       bh_engine_pool_ready(w->e, w->cfg->tier) < w->cfg->pool_size) {
		if (now_us() > until) {
			snprintf(w->err, sizeof w->err, "the engine did not prove its tiers in time");
			return -1;
		}
		idle_for(w, 50);
	}
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(w->e, &t);
	for (size_t i = 0; i < n; i++)
		if (t[i].tier == w->cfg->tier && !t[i].offered) {
			snprintf(w->err, sizeof w->err, "the %s tier is not offered: %s",
				 bh_tier_name(w->cfg->tier), t[i].reason);
			return -1;
		}
	if (!w->cfg->warm_session)
		return 0;
	struct open_wait o;
	if (open_session(w, 1u << BH_LANG_PYTHON | 1u << BH_LANG_JAVASCRIPT, &o, &w->s) < 0)
		return -1;
	if (wait_for(w, &o.done, OPEN_TIMEOUT_MS) < 0)
		return -1;
	if (o.err[0]) {
		snprintf(w->err, sizeof w->err, "the warm session did not open: %s", o.err);
		return -1;
	}
	struct cell_wait c;
	if (cell(w, w->s, BH_LANG_PYTHON, CELL_SETUP, &c, NULL) < 0 ||
	    cell(w, w->s, BH_LANG_JAVASCRIPT, CELL_SETUP, &c, NULL) < 0)
		return -1;
	return 0;
}

static void stop_engine(struct ew *w)
{
	if (w->s)
		close_session(w, w->s);
	w->s = NULL;
	if (w->e)
		bh_engine_close(w->e);
	w->e = NULL;
}

int engine_worker_main(const struct worker_cfg *cfg, int fd)
{
	struct ew w = {.cfg = cfg, .fd = fd};
	struct worker_reply rep = {0};
	if (start_engine(&w) < 0) {
		reply_fail(fd, "%s: %s", cfg->name, w.err);
		stop_engine(&w);
		return 1;
	}
	rep.ok = 1;
	reply_send(fd, &rep);
	for (;;) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = bh_engine_fd(w.e), .events = POLLIN}};
		int n = poll(p, 2, bh_engine_timeout_ms(w.e));
		if (n < 0 && errno != EINTR)
			break;
		if (p[1].revents || n == 0)
			bh_engine_process(w.e);
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		struct worker_cmd c;
		ssize_t got = recv(fd, &c, sizeof c, 0);
		if (got != (ssize_t)sizeof c || c.op == OP_QUIT)
			break;
		memset(&rep, 0, sizeof rep);
		w.err[0] = '\0';
		int r;
		switch (c.op) {
		case OP_CELL:
			r = op_cell(&w, (enum bh_language)c.a, &rep);
			break;
		case OP_EXEC:
			r = op_exec(&w, (enum bh_language)c.a, &rep);
			break;
		case OP_COLD:
			r = op_cold(&w, (uint32_t)c.a, &rep);
			break;
		case OP_POOL:
			r = op_pool(&w, &rep);
			break;
		case OP_PAUSE:
			r = w.s ? op_pause(&w, &rep) : -1;
			break;
		case OP_HIBERNATE:
			r = w.s ? op_hibernate(&w, &rep) : -1;
			break;
		case OP_MEMORY:
			r = op_memory(&w, c.a, &rep);
			break;
		case OP_THROUGHPUT:
			r = op_throughput(&w, c.a, c.b, c.c, &rep);
			break;
		case OP_USAGE_READ: /* ---- usage ---- */
			r = op_usage_read(&w, &rep);
			break;
		default:
			snprintf(w.err, sizeof w.err, "unknown command %d", c.op);
			r = -1;
		}
		if (r < 0) {
			reply_fail(fd, "%s: %s", cfg->name, w.err[0] ? w.err : "failed");
			continue;
		}
		rep.ok = 1;
		reply_send(fd, &rep);
	}
	stop_engine(&w);
	memset(&rep, 0, sizeof rep);
	rep.ok = 1;
	reply_send(fd, &rep);
	return 0;
}
