/* The density run (issue 21): how many idle warm conversations one host
 * holds, what each costs, and how the active ones fare beside them.
 *
 *   build/bench/bulkhead-bench-density [--sessions N] [--active A] [--root DIR]
 *
 * One engine (the library, as `bulkhead serve` runs it) with an
 * overcommitted budget opens N container-tier Python sessions, up to
 * OPENS_IN_FLIGHT at a time, each answering one cell (warm, claimed), and
 * reports as it goes: open -> first cell per session (median, p99, and for
 * the first and last hundred: does it stay flat), MemAvailable's drop per
 * session, PSS per sandbox (a sample of sandboxes spread over the run), the
 * engine's own RSS and CPU per idle second with all N held. A more
 * sessions are active: each runs a cell, waits THINK_MS (an agent reading
 * the answer), and again, for ACTIVE_SECONDS, once alone before the idle
 * ones are opened (the control: what the active load costs by itself) and
 * once beside the N idle; their cells' latency is the figure. Everything
 * is closed at the end and the
 * host is left as found. Measured, never asserted: bench/RESULTS.md keeps
 * the table. */
#include "stats.h"
#include "sysmem.h"

#include "bulkhead.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OPENS_IN_FLIGHT 8
#define THINK_MS 20
#define ACTIVE_SECONDS 20
#define PSS_SAMPLE 24
#define IDLE_SECONDS 10

static bh_engine *engine;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "engine: %s\n", msg);
}

static void spin(int ms)
{
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(engine, &never, ms, &err);
	bh_error_free(err);
}

static void die(const char *what, const bh_error *err)
{
	fprintf(stderr, "bench-density: %s: %s\n", what, err ? err->msg : "?");
	exit(1);
}

/* One conversation: opened, its first cell, then (if active) its loop. */
struct conv {
	bh_session *s;
	double t_open, t_ready, t_first;
	bool ready, answered, failed, in_cell, closed;
	double cell_t0, next_at;
	char err[256];
};

static struct samples *active_ms; /* the running phase's, NULL between */

static void start_cell(struct conv *c);

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct conv *c = arg;
	double t = now_ms();
	c->in_cell = false;
	if (err || r->exit_code != 0) {
		c->failed = true;
		snprintf(c->err, sizeof c->err, "%s", err ? err->msg : "the cell failed");
		return;
	}
	if (!c->answered) {
		c->answered = true;
		c->t_first = t;
	} else if (active_ms) {
		samples_add(active_ms, t - c->cell_t0);
	}
	c->next_at = t + THINK_MS;
}

static void start_cell(struct conv *c)
{
	struct bh_cell cell = {.language = BH_LANG_PYTHON, .code = "x = 1; x", .code_len = 8,
			       .floor = BH_TIER_UNKNOWN};
	bh_error *err = NULL;
	c->in_cell = true;
	c->cell_t0 = now_ms();
	if (bh_session_run(c->s, &cell, on_cell, c, &err) < 0) {
		c->in_cell = false;
		c->failed = true;
		snprintf(c->err, sizeof c->err, "%s", err ? err->msg : "run refused");
		bh_error_free(err);
	}
}

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct conv *c = arg;
	c->t_ready = now_ms();
	if (err) {
		c->failed = true;
		snprintf(c->err, sizeof c->err, "%s", err->msg);
		return;
	}
	c->ready = true;
	start_cell(c);
}

static void open_conv(struct conv *c)
{
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER,
				    .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON,
				    .principal = "density"};
	bh_error *err = NULL;
	c->t_open = now_ms();
	if (bh_session_open(engine, &o, on_open, c, &c->s, &err) < 0)
		die("open", err);
}

static void on_closed(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	(void)r;
	(void)err;
	((struct conv *)arg)->closed = true;
}

/* Opens convs[from, to) with OPENS_IN_FLIGHT in flight, each to its first
 * answer; progress every hundred. */
static void open_range(struct conv *v, size_t from, size_t to)
{
	size_t next = from, done = from;
	while (done < to) {
		while (next < to && next - done < OPENS_IN_FLIGHT)
			open_conv(&v[next++]);
		spin(5);
		while (done < next && (v[done].answered || v[done].failed)) {
			if (v[done].failed) {
				fprintf(stderr, "bench-density: session %zu: %s\n", done, v[done].err);
				exit(1);
			}
			if (++done % 100 == 0)
				fprintf(stderr, "  %zu sessions open, MemAvailable %lld MiB\n", done,
					mem_available_kib() / 1024);
		}
	}
}

/* ACTIVE_SECONDS of the active sessions' loop (a cell, THINK_MS, again);
 * their latencies into out. */
static void run_active(struct conv *a, size_t na, struct samples *out)
{
	active_ms = out;
	double until = now_ms() + ACTIVE_SECONDS * 1000.0;
	while (now_ms() < until) {
		double t = now_ms();
		for (size_t i = 0; i < na; i++) {
			if (a[i].failed) {
				fprintf(stderr, "bench-density: active %zu: %s\n", i, a[i].err);
				exit(1);
			}
			if (!a[i].in_cell && t >= a[i].next_at)
				start_cell(&a[i]);
		}
		spin(1);
	}
	for (;;) {
		bool busy = false;
		for (size_t i = 0; i < na; i++)
			busy |= a[i].in_cell;
		if (!busy)
			break;
		spin(5);
	}
	active_ms = NULL;
}

static long self_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static double self_cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static long long mem_available_mean(void)
{
	long long sum = 0;
	for (int i = 0; i < 3; i++) {
		sum += mem_available_kib();
		spin(300);
	}
	return sum / 3;
}

static void line(const char *what, const struct samples *s, const char *unit, const char *target)
{
	struct summary m = summarize(s);
	printf("  %-64s %9.3f %-4s (min %.3f, p99 %.3f, max %.3f, n %zu)%s%s\n", what, m.median, unit,
	       m.min, percentile(s, 0.99), m.max, m.n, target ? "  " : "", target ? target : "");
}

int main(int argc, char **argv)
{
	size_t n = 1000, active = 32;
	const char *root = "/tmp";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sessions") && i + 1 < argc)
			n = (size_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--active") && i + 1 < argc)
			active = (size_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--root") && i + 1 < argc)
			root = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--sessions N] [--active A] [--root DIR]\n", argv[0]);
			return 2;
		}
	}
	if (!n || n + active > 2000) {
		fprintf(stderr, "bench-density: --sessions plus --active: 1 to 2000\n");
		return 2;
	}
	char state[4096];
	snprintf(state, sizeof state, "%s/bench-density-XXXXXX", root);
	if (!mkdtemp(state)) {
		fprintf(stderr, "bench-density: mkdtemp %s: %s\n", state, strerror(errno));
		return 1;
	}
	chmod(state, 0711);
	uint32_t places = (uint32_t)(n + active + 8), budget = 20480;
	struct bh_config cfg = {
		.state_dir = state,
		.init_path = BENCH_INIT,
		.interp_dir = BENCH_INTERP,
		.log = on_log,
		.policy = {.max_sessions = places,
			   .max_per_owner = places,
			   .max_per_principal = places,
			   .memory_budget_mb = budget,
			   /* limits (512 MiB each) may sum past the budget: what
			    * is used is held under it */
			   .memory_overcommit_pct = (uint32_t)((uint64_t)places * 512u * 100u / budget + 1),
			   .idle_ms = 3600u * 1000u,
			   .hibernate_after_ms = 3600u * 1000u,
			   .lifetime_ms = 7200u * 1000u},
	};
	bh_error *err = NULL;
	if (bh_engine_open(&cfg, &engine, &err) < 0)
		die("engine open", err);
	while (!bh_engine_proven(engine))
		spin(50);
	struct conv *v = calloc(n + active, sizeof *v);
	struct conv *act = v, *idle = v + active;
	/* The control: the active sessions alone, before any idle one. */
	fprintf(stderr, "opening %zu active sessions, %d s of their cells alone\n", active,
		ACTIVE_SECONDS);
	open_range(act, 0, active);
	struct samples alone = {0};
	run_active(act, active, &alone);
	double t_start = now_ms();
	long long avail0 = mem_available_mean();
	long rss0 = self_rss_kib();
	fprintf(stderr, "opening %zu idle sessions\n", n);
	open_range(idle, 0, n);
	double t_opened = now_ms();
	spin(2000);
	long long avail1 = mem_available_mean();
	/* The engine alone, with n held and nothing asked of it. */
	double cpu0 = self_cpu_ms(), w0 = now_ms();
	spin(IDLE_SECONDS * 1000);
	double idle_cpu = (self_cpu_ms() - cpu0) / ((now_ms() - w0) / 1e3);
	long rss1 = self_rss_kib();
	struct samples pss = {0}, procs = {0};
	for (size_t i = 0; i < PSS_SAMPLE; i++) {
		size_t k = i * (n - 1) / (PSS_SAMPLE > 1 ? PSS_SAMPLE - 1 : 1);
		struct bh_session_info info;
		bh_session_get_info(idle[k].s, &info);
		struct pss_total t = {0};
		sandbox_pss(bh_engine_cgroup_parent(engine), info.sandbox, &t);
		samples_add(&pss, (double)t.pss_kib / 1024.0);
		samples_add(&procs, t.procs);
	}
	fprintf(stderr, "%d s of the active sessions' cells beside the %zu idle\n", ACTIVE_SECONDS, n);
	struct samples beside = {0};
	run_active(act, active, &beside);

	struct samples open_all = {0}, open_first = {0}, open_last = {0};
	for (size_t i = 0; i < n; i++) {
		double d = idle[i].t_first - idle[i].t_open;
		samples_add(&open_all, d);
		if (i < 100)
			samples_add(&open_first, d);
		if (i >= n - (n < 100 ? n : 100))
			samples_add(&open_last, d);
	}
	fprintf(stderr, "closing %zu sessions\n", n + active);
	double tc = now_ms();
	for (size_t i = 0; i < n + active; i++)
		if (bh_session_close(v[i].s, on_closed, &v[i], &err) < 0) {
			fprintf(stderr, "close %zu: %s\n", i, err ? err->msg : "?");
			bh_error_free(err);
			err = NULL;
			v[i].closed = true;
		}
	for (;;) {
		size_t open = 0;
		for (size_t i = 0; i < n + active; i++)
			open += !v[i].closed;
		if (!open && !bh_engine_live_sandboxes(engine))
			break;
		spin(20);
	}
	double close_s = (now_ms() - tc) / 1e3;

	printf("density: %zu idle warm container-tier sessions (python), %zu active beside them\n", n,
	       active);
	line("open -> first cell answered, every session", &open_all, "ms", NULL);
	line("  of which the first hundred", &open_first, "ms", NULL);
	line("  of which the last hundred (the host holding the others)", &open_last, "ms", NULL);
	printf("  %-64s %9.1f s\n", "time to open them all", (t_opened - t_start) / 1e3);
	printf("  %-64s %9.3f MiB\n", "MemAvailable drop / idle session",
	       (double)(avail0 - avail1) / 1024.0 / (double)n);
	line("PSS per idle sandbox (a sample spread over the run)", &pss, "MiB",
	     summarize(&pss).median <= 12 ? "target <= 12 MiB: met" : "target <= 12 MiB: NOT met");
	printf("  %-64s %9.1f\n", "  processes per sandbox", summarize(&procs).median);
	printf("  %-64s %9.1f MiB (%.1f KiB per session)\n", "the engine's own RSS with all held",
	       (double)rss1 / 1024.0, (double)(rss1 - rss0) / (double)n);
	printf("  %-64s %9.2f ms/s\n", "the engine's CPU per idle second with all held", idle_cpu);
	char tgt[64];
	snprintf(tgt, sizeof tgt, "target p99 <= 10 ms: %s",
		 percentile(&beside, 0.99) <= 10 ? "met" : "NOT met");
	char what[128];
	snprintf(what, sizeof what, "warm cell of %zu active sessions (think %d ms) beside %zu idle",
		 active, THINK_MS, n);
	line(what, &beside, "ms", tgt);
	snprintf(what, sizeof what, "  control: the same %zu active sessions alone, before", active);
	line(what, &alone, "ms", NULL);
	printf("  %-64s %9.1f s\n", "closing them all", close_s);
	bh_engine_close(engine);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", state);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-density: could not remove %s\n", state);
	samples_free(&open_all), samples_free(&open_first), samples_free(&open_last);
	samples_free(&pss), samples_free(&procs), samples_free(&alone), samples_free(&beside);
	free(v);
	return 0;
}
