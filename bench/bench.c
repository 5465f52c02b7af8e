/* bulkhead-bench: the performance figures bulkhead sets targets for,
 * measured in one run on this machine, each printed next to its target and
 * marked met or not.
 *
 *   bulkhead-bench [--quick] [--tier container|kernel|all] [--json]
 *                  [--root DIR] [--verbose] [--rounds N] [--only PHASES]
 *                  [--compare-init PATH] [--compare-interp DIR]
 *   bulkhead-bench --soak SECONDS [--root DIR]
 *
 * --compare-init/--compare-interp add one more engine worker per tier that
 * runs another bulkhead-init (or other cell servers) in the warm-cell
 * rounds, so a change is measured before/after pair by pair in one run.
 *
 * Every configuration under test is a worker process (worker.h): an engine
 * with NORMAL store, one with FULL, one keeping digests only, and a libcurl
 * client of a real `bulkhead serve --open` on a unix socket, per tier. The
 * warm-cell rounds go through all of them in turn, cell by cell, so every
 * ratio is taken pair by pair (A then B, the ratio of that pair, then the
 * median of the ratios): drift of a busy machine hits both sides of a pair.
 *
 * Performance is measured here and never asserted by a test: the exit code
 * says only whether the measurements ran (0) or failed (1), never whether a
 * target was met. */
#include "stats.h"
#include "engine_internals.h"
#include "record.h"
#include "soak.h"
#include "sysmem.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <limits.h>
#include <openssl/sha.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_INIT
#define BENCH_INIT ""
#endif
#ifndef BENCH_INTERP
#define BENCH_INTERP ""
#endif
#ifndef BENCH_CLI
#define BENCH_CLI ""
#endif

/* ---- options and plan ---- */

struct plan {
	int warm_rounds, warm_discard;
	int exec_n[2];   /* per tier: container, kernel */
	int cold_n[2];
	int pause_n[2];
	int hibernate_n;
	int memory_n[2];
	int memory_reps;
	int tp_sessions, tp_window_ms, tp_rounds;
	int store_n;
};

static const struct plan full_plan = {
	.warm_rounds = 300, .warm_discard = 10,
	.exec_n = {20, 10}, .cold_n = {20, 8}, .pause_n = {20, 10}, .hibernate_n = 8,
	.memory_n = {8, 8}, .memory_reps = 3,
	.tp_sessions = 32, .tp_window_ms = 3000, .tp_rounds = 3,
	.store_n = 500,
};

static const struct plan quick_plan = {
	.warm_rounds = 30, .warm_discard = 3,
	.exec_n = {5, 2}, .cold_n = {5, 2}, .pause_n = {5, 3}, .hibernate_n = 2,
	.memory_n = {4, 3}, .memory_reps = 1,
	.tp_sessions = 32, .tp_window_ms = 800, .tp_rounds = 1,
	.store_n = 60,
};

static struct {
	bool quick, json, verbose;
	char only[256]; /* "" or a comma list of phases: warm store fresh cold wake memory throughput */
	bool tiers[2]; /* container, kernel */
	char root[4096];
	char run_dir[4200];
	char evidence[4200];
	const char *init, *interp, *cli;
	const char *compare_init; /* another bulkhead-init, run side by side (before/after) */
	const char *compare_interp; /* other cell servers for that worker */
	struct plan p;
	char command[4096];
} opt;

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static enum bh_tier tier_of(int t)
{
	return t == 0 ? BH_TIER_CONTAINER : BH_TIER_KERNEL;
}

static const char *tier_label(int t)
{
	return t == 0 ? "container" : "kernel";
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* ---- figures ---- */

enum fig_kind { FK_SUMMARY, FK_VALUE, FK_NA };

struct figure {
	char key[64];
	char label[128];
	int tier; /* 0 container, 1 kernel, -1 neither */
	char unit[12];
	enum fig_kind kind;
	struct samples raw;
	struct summary s;
	double value; /* FK_VALUE */
	bool has_target;
	double target;
	char target_text[64];
	char note[256];
	bool in_table; /* a targeted figure's row: goes into the summary table */
	char row[64];  /* the summary table's row name */
};

#define MAX_FIGURES 256
static struct figure figs[MAX_FIGURES];
static int n_figs;

static struct figure *fig(const char *key, int tier, const char *label, const char *unit)
{
	for (int i = 0; i < n_figs; i++)
		if (!strcmp(figs[i].key, key) && figs[i].tier == tier)
			return &figs[i];
	if (n_figs == MAX_FIGURES)
		abort();
	struct figure *f = &figs[n_figs++];
	memset(f, 0, sizeof *f);
	snprintf(f->key, sizeof f->key, "%s", key);
	snprintf(f->label, sizeof f->label, "%s", label);
	snprintf(f->unit, sizeof f->unit, "%s", unit);
	f->tier = tier;
	f->kind = FK_SUMMARY;
	return f;
}

static void target(struct figure *f, double t, const char *row)
{
	f->has_target = true;
	f->target = t;
	snprintf(f->target_text, sizeof f->target_text, "<= %g %s", t, f->unit);
	if (row) {
		f->in_table = true;
		snprintf(f->row, sizeof f->row, "%.63s", row);
	}
}

static void table_row(struct figure *f, const char *row, const char *target_text)
{
	f->in_table = true;
	snprintf(f->row, sizeof f->row, "%.63s", row);
	if (target_text)
		snprintf(f->target_text, sizeof f->target_text, "%s", target_text);
}

static double headline(const struct figure *f)
{
	return f->kind == FK_VALUE ? f->value : f->s.median;
}

static const char *met_text(const struct figure *f)
{
	if (f->kind == FK_NA)
		return "n/a";
	if (!f->has_target)
		return "reported";
	if (isnan(headline(f)))
		return "no data";
	return headline(f) <= f->target ? "met" : "NOT met";
}

static void finish_figures(void)
{
	for (int i = 0; i < n_figs; i++)
		if (figs[i].kind == FK_SUMMARY)
			figs[i].s = summarize(&figs[i].raw);
}

/* ---- cgroups the engines leave behind ---- */

/* Every state directory an engine of this run used, with its name. */
#define MAX_STATES 64
static struct {
	char dir[4600];
	char name[48];
} states[MAX_STATES];
static int n_states;

static void remember_state(const char *dir, const char *name)
{
	if (n_states < MAX_STATES) {
		snprintf(states[n_states].dir, sizeof states[n_states].dir, "%s", dir);
		snprintf(states[n_states].name, sizeof states[n_states].name, "%s", name);
		n_states++;
	}
}

/* The engine's cgroup parent is /bulkhead/<first 12 hex of SHA-256 of the
 * state directory's real path> (engine.c). */
static void state_key(const char *dir, char key[13])
{
	char real[PATH_MAX];
	unsigned char md[SHA256_DIGEST_LENGTH];
	/* A directory already gone is keyed by its name as given, whole. */
	const char *path = realpath(dir, real) ? real : dir;
	SHA256((const unsigned char *)path, strlen(path), md);
	for (int i = 0; i < 6; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
}

static bool has_subdirs(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool any = false;
	while (d && (e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			any = true;
	if (d)
		closedir(d);
	return any;
}

/* After every engine of the run closed: an engine's close removes its
 * cgroup parent; one still there is reported (and removed when empty, so
 * the host is left as it was found). Returns how many were left. */
static int check_cgroups(void)
{
	int left = 0;
	for (int i = 0; i < n_states; i++) {
		char key[13], path[256];
		state_key(states[i].dir, key);
		snprintf(path, sizeof path, "/sys/fs/cgroup/pids/bulkhead/%s", key);
		struct stat st;
		for (int k = 0; k < 50 && stat(path, &st) == 0; k++)
			usleep(100 * 1000);
		if (stat(path, &st) != 0)
			continue;
		left++;
		if (has_subdirs(path)) {
			say("bulkhead-bench: WARNING: %s left /bulkhead/%s with sandboxes in it; "
			    "run `bulkhead gc --state %s`\n", states[i].name, key, states[i].dir);
			continue;
		}
		DIR *d = opendir("/sys/fs/cgroup");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char p2[512];
			snprintf(p2, sizeof p2, "/sys/fs/cgroup/%s/bulkhead/%s", e->d_name, key);
			rmdir(p2);
		}
		if (d)
			closedir(d);
		say("bulkhead-bench: WARNING: %s closed but left its empty cgroup parent /bulkhead/%s "
		    "(an engine teardown race); removed it\n", states[i].name, key);
	}
	return left;
}

/* ---- the daemon under test ---- */

struct daemon {
	pid_t pid;
	char dir[4400];
	char sock[4500];
};

static int readyz(const char *sock)
{
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, "http://localhost/readyz");
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	FILE *null = fopen("/dev/null", "we");
	curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
	long status = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (null)
		fclose(null);
	return (int)status;
}

static int daemon_start(struct daemon *d, int t, char *why, size_t n)
{
	memset(d, 0, sizeof *d);
	char dir[4400];
	snprintf(dir, sizeof dir, "%.4300s/daemon-%s", opt.run_dir, tier_label(t));
	memcpy(d->dir, dir, sizeof d->dir);
	snprintf(d->sock, sizeof d->sock, "%s/sock", dir);
	mkdir(d->dir, 0711);
	chmod(d->dir, 0711);
	char state[4600], log[4600];
	snprintf(state, sizeof state, "%s/state", d->dir);
	mkdir(state, 0711);
	chmod(state, 0711);
	remember_state(state, t ? "the kernel daemon" : "the container daemon");
	snprintf(log, sizeof log, "%s/daemon.log", d->dir);
	int out[2];
	if (pipe(out) < 0) {
		snprintf(why, n, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	d->pid = fork();
	if (d->pid < 0) {
		snprintf(why, n, "fork: %s", strerror(errno));
		return -1;
	}
	if (d->pid == 0) {
		signal(SIGINT, SIG_IGN); /* the bench stops it with SIGTERM */
		dup2(out[1], 1);
		int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (lf >= 0)
			dup2(lf, 2);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		setenv("BULKHEAD_INTERP", opt.interp, 1);
		setenv("BULKHEAD_EVIDENCE", opt.evidence, 1);
		execl(opt.cli, opt.cli, "serve", "--open", "--socket", d->sock, "--state", state,
		      "--tier", tier_label(t), "--rate", "1000000", "--max-sessions", "64",
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	char line[8192] = "";
	char *got = fgets(line, sizeof line, f);
	fclose(f);
	if (!got || strncmp(line, "ready ", 6)) {
		snprintf(why, n, "the %s daemon did not start (see %.900s)", tier_label(t), log);
		return -1;
	}
	for (int i = 0; i < 3000; i++) {
		if (readyz(d->sock) == 200)
			return 0;
		usleep(100 * 1000);
	}
	snprintf(why, n, "the %s daemon never became ready (see %.900s)", tier_label(t), log);
	return -1;
}

static void daemon_stop(struct daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 1200; i++) {
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			break;
		}
		usleep(50 * 1000);
	}
	if (d->pid > 0) {
		say("bulkhead-bench: the daemon in %s did not stop; killing it and collecting its sandboxes\n",
		    d->dir);
		kill(d->pid, SIGKILL);
		waitpid(d->pid, &st, 0);
		d->pid = 0;
		char cmd[16384];
		snprintf(cmd, sizeof cmd, "BULKHEAD_INTERP='%s' '%s' gc --state '%s/state' >/dev/null 2>&1",
			 opt.interp, opt.cli, d->dir);
		if (system(cmd) != 0)
			say("bulkhead-bench: gc on %s/state failed\n", d->dir);
	}
}

/* ---- workers per tier ---- */

enum { W_NORMAL, W_FULL, W_DIGESTS, W_DAEMON, W_COMPARE, W_MAX };
#define W_COUNT (opt.compare_init || opt.compare_interp ? W_MAX : W_COMPARE)
static const char *const wnames[W_MAX] = {"NORMAL", "FULL", "digests-only", "daemon", "compare-init"};

static struct worker workers[2][W_MAX];
static struct daemon daemons[2];

static void engine_cfg(struct worker_cfg *c, int t, const char *what, bool full, bool digests,
		       bool warm)
{
	memset(c, 0, sizeof *c);
	c->kind = WK_ENGINE;
	snprintf(c->name, sizeof c->name, "%s/%s", tier_label(t), what);
	c->tier = tier_of(t);
	c->sync_full = full;
	c->digests_only = digests;
	c->warm_session = warm;
	snprintf(c->state_dir, sizeof c->state_dir, "%.4000s/%s-%s", opt.run_dir, tier_label(t), what);
	mkdir(c->state_dir, 0711);
	chmod(c->state_dir, 0711);
	remember_state(c->state_dir, c->name);
	snprintf(c->evidence_dir, sizeof c->evidence_dir, "%.4000s", opt.evidence);
	c->init_path = opt.init;
	c->interp_dir = opt.interp;
	c->verbose = opt.verbose;
}

static int start_tier(int t)
{
	char why[1024];
	for (int k = 0; k < W_COUNT; k++) {
		struct worker_cfg c;
		if (interrupted)
			return -1;
		if (k == W_DAEMON) {
			if (daemon_start(&daemons[t], t, why, sizeof why) < 0) {
				say("bulkhead-bench: %s\n", why);
				return -1;
			}
			memset(&c, 0, sizeof c);
			c.kind = WK_DAEMON;
			c.tier = tier_of(t);
			snprintf(c.name, sizeof c.name, "%s/daemon", tier_label(t));
			snprintf(c.socket, sizeof c.socket, "%.4000s", daemons[t].sock);
		} else if (k == W_COMPARE) {
			engine_cfg(&c, t, "compare", false, false, true);
			c.init_path = opt.compare_init ? opt.compare_init : opt.init;
			if (opt.compare_interp)
				c.interp_dir = opt.compare_interp;
		} else {
			engine_cfg(&c, t, k == W_NORMAL ? "normal" : k == W_FULL ? "full" : "digests",
				   k == W_FULL, k == W_DIGESTS, true);
		}
		double t0 = now_us();
		if (worker_start(&workers[t][k], &c, why, sizeof why) < 0) {
			say("bulkhead-bench: %s\n", why);
			return -1;
		}
		say("  %-22s up in %.0f ms\n", c.name, (now_us() - t0) / 1000.0);
	}
	return 0;
}

static void stop_tier(int t)
{
	for (int k = 0; k < W_COUNT; k++)
		worker_stop(&workers[t][k]);
	daemon_stop(&daemons[t]);
}

static int call(struct worker *w, int op, int a, int b, int c, struct worker_reply *r)
{
	struct worker_cmd cmd = {.op = op, .a = a, .b = b, .c = c};
	if (interrupted) {
		snprintf(r->msg, sizeof r->msg, "interrupted");
		return -1;
	}
	if (worker_call(w, &cmd, r) < 0) {
		say("bulkhead-bench: %s\n", r->msg);
		return -1;
	}
	return 0;
}

/* ---- 1, 2: warm cells through every configuration, interleaved ---- */

static const char *const lang_key[2] = {"python", "javascript"};

static int daemon_calls[2], daemon_connects[2];

static int warm_rounds(void)
{
	int rounds = opt.p.warm_rounds + opt.p.warm_discard;
	int order[2 * W_MAX], n = 0;
	for (int t = 0; t < 2; t++)
		if (opt.tiers[t])
			for (int k = 0; k < W_COUNT; k++)
				order[n++] = t * W_COUNT + k;
	say("warm cells: %d rounds x 2 languages x %d configurations, interleaved\n", rounds, n);
	for (int r = 0; r < rounds; r++) {
		for (int lang = 0; lang < 2; lang++) {
			double wall[2][W_MAX] = {{0}}, inside[2][W_MAX] = {{0}},
			       engine_wall[2][W_MAX] = {{0}};
			/* Rotate who goes first, so no configuration always
			 * follows the same one. */
			for (int i = 0; i < n; i++) {
				int slot = order[(i + r) % n];
				int t = slot / W_COUNT, k = slot % W_COUNT;
				struct worker_reply rep;
				if (call(&workers[t][k], OP_CELL, lang, 0, 0, &rep) < 0)
					return -1;
				wall[t][k] = rep.cell.client_us;
				engine_wall[t][k] = rep.cell.engine_wall_us;
				inside[t][k] = rep.cell.inside_us;
				if (k == W_DAEMON) {
					daemon_calls[t]++;
					daemon_connects[t] += (int)rep.cell.new_connections;
				}
			}
			if (r < opt.p.warm_discard)
				continue;
			for (int t = 0; t < 2; t++) {
				if (!opt.tiers[t])
					continue;
				char key[64], label[128];
				for (int k = 0; k < W_COUNT; k++) {
					if (k == W_COMPARE) {
						snprintf(key, sizeof key, "warm_compare_%s", lang_key[lang]);
						snprintf(label, sizeof label,
							 "warm cell, engine API (NORMAL), compare worker, %s",
							 lang_key[lang]);
						samples_add(&fig(key, t, label, "ms")->raw, wall[t][k] / 1000.0);
						snprintf(key, sizeof key, "ratio_init_compare_%s", lang_key[lang]);
						snprintf(label, sizeof label,
							 "  ratio this build / compare worker (pairwise), %s",
							 lang_key[lang]);
						samples_add(&fig(key, t, label, "x")->raw,
							    wall[t][W_NORMAL] / wall[t][k]);
						snprintf(key, sizeof key, "inside_compare_%s", lang_key[lang]);
						snprintf(label, sizeof label,
							 "  compare worker: inside the sandbox (duration_us), %s",
							 lang_key[lang]);
						samples_add(&fig(key, t, label, "ms")->raw, inside[t][k] / 1000.0);
						continue;
					}
					snprintf(key, sizeof key, "warm_%s_%s", k == W_DAEMON ? "daemon" : "engine",
						 lang_key[lang]);
					if (k == W_NORMAL || k == W_DAEMON) {
						snprintf(label, sizeof label, "warm cell, %s, %s",
							 k == W_DAEMON ? "daemon (unix socket)"
								       : "engine API (store NORMAL)",
							 lang_key[lang]);
					} else {
						snprintf(key, sizeof key, "warm_engine_%s_%s",
							 k == W_FULL ? "full" : "digests", lang_key[lang]);
						snprintf(label, sizeof label, "warm cell, engine API (store %s), %s",
							 wnames[k], lang_key[lang]);
					}
					samples_add(&fig(key, t, label, "ms")->raw, wall[t][k] / 1000.0);
				}
				snprintf(key, sizeof key, "inside_%s", lang_key[lang]);
				snprintf(label, sizeof label,
					 "  of which inside the sandbox (init's duration_us), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "ms")->raw, inside[t][W_NORMAL] / 1000.0);
				snprintf(key, sizeof key, "outside_%s", lang_key[lang]);
				snprintf(label, sizeof label,
					 "  of which outside it (wall - duration_us: channel, init, store), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "ms")->raw,
					    (wall[t][W_NORMAL] - inside[t][W_NORMAL]) / 1000.0);
				/* The engine's wall_us is taken when the answer is in
				 * hand, before the record is built and committed; the
				 * callback comes after the commit. So wall_us is the
				 * cell without a store, and the rest is the store's. */
				snprintf(key, sizeof key, "engine_wall_%s", lang_key[lang]);
				snprintf(label, sizeof label,
					 "  no store: engine's wall_us (answer in hand, before the record), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "ms")->raw, engine_wall[t][W_NORMAL] / 1000.0);
				static const int share_of[3] = {W_NORMAL, W_FULL, W_DIGESTS};
				static const char *const share_key[3] = {"normal", "full", "digests"};
				for (int j = 0; j < 3; j++) {
					int k = share_of[j];
					snprintf(key, sizeof key, "store_share_%s_%s", share_key[j], lang_key[lang]);
					snprintf(label, sizeof label,
						 "  store's share, %s (wall - wall_us: record digests + commit), %s",
						 wnames[k], lang_key[lang]);
					samples_add(&fig(key, t, label, "ms")->raw,
						    (wall[t][k] - engine_wall[t][k]) / 1000.0);
				}
				/* Pair by pair. */
				snprintf(key, sizeof key, "ratio_full_normal_%s", lang_key[lang]);
				snprintf(label, sizeof label, "  ratio FULL / NORMAL (pairwise), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "x")->raw, wall[t][W_FULL] / wall[t][W_NORMAL]);
				snprintf(key, sizeof key, "ratio_digests_normal_%s", lang_key[lang]);
				snprintf(label, sizeof label, "  ratio digests-only / NORMAL (pairwise), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "x")->raw,
					    wall[t][W_DIGESTS] / wall[t][W_NORMAL]);
				snprintf(key, sizeof key, "diff_full_normal_%s", lang_key[lang]);
				snprintf(label, sizeof label, "  FULL - NORMAL (pairwise difference), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "ms")->raw,
					    (wall[t][W_FULL] - wall[t][W_NORMAL]) / 1000.0);
				snprintf(key, sizeof key, "ratio_daemon_engine_%s", lang_key[lang]);
				snprintf(label, sizeof label, "  ratio daemon / engine API (pairwise), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "x")->raw,
					    wall[t][W_DAEMON] / wall[t][W_NORMAL]);
				snprintf(key, sizeof key, "diff_daemon_engine_%s", lang_key[lang]);
				snprintf(label, sizeof label, "  daemon - engine API (pairwise difference), %s",
					 lang_key[lang]);
				samples_add(&fig(key, t, label, "ms")->raw,
					    (wall[t][W_DAEMON] - wall[t][W_NORMAL]) / 1000.0);
			}
			if (opt.tiers[0] && opt.tiers[1]) {
				char key[64], label[128];
				snprintf(key, sizeof key, "ratio_kernel_container_%s", lang_key[lang]);
				snprintf(label, sizeof label,
					 "warm cell, kernel / container, engine API (pairwise), %s",
					 lang_key[lang]);
				samples_add(&fig(key, -1, label, "x")->raw,
					    wall[1][W_NORMAL] / wall[0][W_NORMAL]);
			}
		}
		if ((r + 1) % 50 == 0)
			say("  round %d/%d\n", r + 1, rounds);
	}
	static const double engine_target[2] = {0.5, 2}, daemon_target[2] = {1.5, 3};
	for (int t = 0; t < 2; t++) {
		if (!opt.tiers[t])
			continue;
		for (int lang = 0; lang < 2; lang++) {
			char key[64], row[64];
			snprintf(key, sizeof key, "warm_engine_%s", lang_key[lang]);
			snprintf(row, sizeof row, "warm cell, engine API, record committed (%s)", lang_key[lang]);
			target(fig(key, t, "", "ms"), engine_target[t], row);
			snprintf(key, sizeof key, "warm_daemon_%s", lang_key[lang]);
			snprintf(row, sizeof row, "warm cell through the daemon, unix socket (%s)",
				 lang_key[lang]);
			struct figure *f = fig(key, t, "", "ms");
			target(f, daemon_target[t], row);
			snprintf(f->note, sizeof f->note,
				 "libcurl keep-alive: %d new connection(s) in %d calls", daemon_connects[t],
				 daemon_calls[t]);
		}
	}
	return 0;
}

/* ---- the store's share: the engine's commit, timed alone ---- */

static void fake_hex(char out[65], unsigned seed, unsigned i)
{
	snprintf(out, 65, "%08x%08x%048x", seed, i, 0u);
}

/* The engine's per-cell store work (result digest, seal, one transaction:
 * the record and the session's chain) against a store in the bench's state
 * root (same filesystem as the engines'), NORMAL and FULL interleaved. */
static int store_share(void)
{
	char path[2][4400];
	struct bh_store *st[2] = {0};
	bh_error *err = NULL;
	say("store: %d commits each, NORMAL and FULL interleaved\n", opt.p.store_n);
	for (int m = 0; m < 2; m++) {
		snprintf(path[m], sizeof path[m], "%s/store-%s.db", opt.run_dir, m ? "full" : "normal");
		if (store_open(path[m], false, m == 1, &st[m], &err) < 0) {
			say("bulkhead-bench: store: %s\n", err->msg);
			bh_error_free(err);
			return -1;
		}
		char fp[65];
		fake_hex(fp, 0xfeedu, (unsigned)m);
		struct store_session_row row = {
			.fingerprint = fp, .sandbox = "bh-bench", .runtime = "crun", .tier = "container",
			.floor = "", .principal = "bench", .owner = "", .run_key = "",
			.state = BH_SESSION_READY,
			.engine_pid = getpid(), .created_ms = 1, .expires_ms = 2,
		};
		if (store_session_intent(st[m], &row, &err) < 0) {
			say("bulkhead-bench: store: %s\n", err->msg);
			bh_error_free(err);
			return -1;
		}
	}
	const char *code = CELL_CODE;
	const uint8_t out[] = "1\n";
	char prev[2][65] = {"", ""};
	for (int i = 0; i < opt.p.store_n; i++) {
		double took[2];
		for (int j = 0; j < 2; j++) {
			int m = (i + j) % 2;
			struct bh_record rec;
			memset(&rec, 0, sizeof rec);
			rec.version = 2;
			fake_hex(rec.request_sha256, 1u + (unsigned)m, (unsigned)i);
			rec.provider = "bulkhead-crun";
			rec.isolation = "container";
			rec.environment = "bulkhead-sandbox:sha256:0000";
			rec.policy = rec.software_identity = rec.software_rule_id = "";
			rec.started_unix_ms = 1700000000000 + i;
			rec.ended_unix_ms = rec.started_unix_ms + 1;
			fake_hex(rec.session, 0xfeedu, (unsigned)m);
			rec.sequence = (uint64_t)i + 1;
			snprintf(rec.previous_sha256, sizeof rec.previous_sha256, "%s", prev[m]);
			struct bh_result_fields rf = {.kind = "cell", .out = out, .out_len = 2};
			struct store_record_extra x = {
				.language = "python", .flags = "", .duration_us = 100,
				.code = (const uint8_t *)code, .code_len = strlen(code),
				.out = out, .out_len = 2,
			};
			double t0 = now_us();
			bh_result_digest(&rf, rec.result_sha256);
			bh_record_seal(&rec);
			int r = store_record_commit(st[m], &rec, &x, true, &err);
			took[m] = now_us() - t0;
			if (r < 0) {
				say("bulkhead-bench: store commit: %s\n", err->msg);
				bh_error_free(err);
				store_close(st[0]);
				store_close(st[1]);
				return -1;
			}
			snprintf(prev[m], sizeof prev[m], "%s", rec.record_sha256);
		}
		samples_add(&fig("store_commit_normal", -1,
				 "store alone: one record (digests + transaction) on a fresh store, NORMAL",
				 "ms")->raw,
			    took[0] / 1000.0);
		samples_add(&fig("store_commit_full", -1,
				 "store alone: one record (digests + transaction) on a fresh store, FULL",
				 "ms")->raw,
			    took[1] / 1000.0);
		samples_add(&fig("store_ratio_full_normal", -1, "store: commit FULL / NORMAL (pairwise)",
				 "x")->raw,
			    took[1] / took[0]);
	}
	store_close(st[0]);
	store_close(st[1]);
	return 0;
}

/* ---- stream: see "usage, stream, aa" below ---- */

/* ---- 7: a fresh sandbox per call against the warm cell ---- */

static int fresh_vs_warm(int t)
{
	struct worker *w = &workers[t][W_NORMAL];
	int n = opt.p.exec_n[t];
	say("%s: fresh sandbox per call (bh_exec) vs warm cell, %d pairs per language\n",
	    tier_label(t), n);
	for (int i = 0; i < n; i++)
		for (int lang = 0; lang < 2; lang++) {
			struct worker_reply ex, ce;
			/* Alternate which goes first. */
			if (i % 2 == 0) {
				if (call(w, OP_EXEC, lang, 0, 0, &ex) < 0 || call(w, OP_CELL, lang, 0, 0, &ce) < 0)
					return -1;
			} else {
				if (call(w, OP_CELL, lang, 0, 0, &ce) < 0 || call(w, OP_EXEC, lang, 0, 0, &ex) < 0)
					return -1;
			}
			char key[64], label[128];
			snprintf(key, sizeof key, "fresh_%s", lang_key[lang]);
			snprintf(label, sizeof label, "fresh sandbox per call, bh_exec %s, %s",
				 lang ? "node -e" : "python3 -c", lang_key[lang]);
			samples_add(&fig(key, t, label, "ms")->raw, ex.cell.client_us / 1000.0);
			snprintf(key, sizeof key, "fresh_ratio_%s", lang_key[lang]);
			snprintf(label, sizeof label, "fresh sandbox per call / warm cell (pairwise), %s",
				 lang_key[lang]);
			struct figure *f = fig(key, t, label, "x");
			samples_add(&f->raw, ex.cell.client_us / ce.cell.client_us);
			snprintf(label, sizeof label, "per-call fresh sandbox / warm cell, ratio (%s)",
				 lang_key[lang]);
			table_row(f, label, "ratio reported");
		}
	return 0;
}

/* ---- usage, stream, aa: the warm cell with a feature on and off ---- */

/* A feature's cost, pair by pair: warm cells alternated between an engine
 * with the feature and one opened with the test hook that switches it off
 * (usage: the sampler every BH_USAGE_SAMPLE_MS on the loop's tick;
 * stream: cells that ask their init to relay output while they run).
 *
 * Two engines of one tier opened one after the other are not alike: on the
 * kernel tier the second one's warm cells answered slower (the control half
 * came out slower whatever it switched off). So the phase runs in two
 * halves, each with two fresh engines opened in turn, and the hook goes to
 * the second engine in the first half and to the first engine in the
 * second: the open order weighs on both sides of the ratio equally. Each
 * phase also reports the engines' own difference (second opened / first
 * opened, pair by pair, whatever they carry), and the aa phase runs the
 * same procedure with no hook on either side: its on / off ratio is the
 * A/A control, 1.00 within the noise when the procedure has no bias. */
enum hook_kind { HOOK_USAGE, HOOK_STREAM, HOOK_NONE };

struct hook_phase {
	const char *prefix;   /* figure keys and state directories: usage, stream, aa */
	const char *on, *off; /* the two sides, for labels */
};

static const struct hook_phase hook_phases[] = {
	[HOOK_USAGE] = {"usage", "usage sampler on", "usage sampler off"},
	[HOOK_STREAM] = {"stream", "streaming on", "streaming off"},
	[HOOK_NONE] = {"aa", "A/A control: engine A", "A/A control: engine B (no hook either)"},
};

static void hook_figures(int t, const struct hook_phase *h, int lang, double on_us, double off_us,
			 double first_us, double second_us)
{
	char key[64], label[128];
	snprintf(key, sizeof key, "%s_on_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "warm cell, %s (engine API), %s", h->on, lang_key[lang]);
	samples_add(&fig(key, t, label, "ms")->raw, on_us / 1000.0);
	snprintf(key, sizeof key, "%s_off_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "warm cell, %s (engine API), %s", h->off, lang_key[lang]);
	samples_add(&fig(key, t, label, "ms")->raw, off_us / 1000.0);
	snprintf(key, sizeof key, "%s_ratio_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "  ratio on / off (pairwise, both halves pooled), %s",
		 lang_key[lang]);
	samples_add(&fig(key, t, label, "x")->raw, on_us / off_us);
	snprintf(key, sizeof key, "%s_diff_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "  on - off (pairwise difference), %s", lang_key[lang]);
	samples_add(&fig(key, t, label, "ms")->raw, (on_us - off_us) / 1000.0);
	snprintf(key, sizeof key, "%s_order_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "  engines' own: second opened / first opened (pairwise), %s",
		 lang_key[lang]);
	samples_add(&fig(key, t, label, "x")->raw, second_us / first_us);
}

static void hook_cfg(struct worker_cfg *c, int t, enum hook_kind kind, int half, int k, bool hooked)
{
	char what[32];
	snprintf(what, sizeof what, "%s-h%d-%c", hook_phases[kind].prefix, half, k ? 'b' : 'a');
	engine_cfg(c, t, what, false, false, true);
	c->usage_off = hooked && kind == HOOK_USAGE;
	c->no_output_relay = hooked && kind == HOOK_STREAM;
}

/* The figure to read: the geometric mean of the two halves' median on / off
 * ratios. Were the second engine opened slower by a factor b in both halves,
 * the first half's ratio is r*b and the second's r/b, and their geometric
 * mean r; the pooled median of a two-humped distribution is not as steady. */
static void hook_halves(int t, const struct hook_phase *h, int lang, struct samples half[2])
{
	char key[64], label[128];
	double m0 = summarize(&half[0]).median, m1 = summarize(&half[1]).median;
	snprintf(key, sizeof key, "%s_ratio_halves_%s", h->prefix, lang_key[lang]);
	snprintf(label, sizeof label, "  ratio on / off: sqrt(half 1 x half 2) of the medians, %s",
		 lang_key[lang]);
	struct figure *f = fig(key, t, label, "x");
	f->kind = FK_VALUE;
	f->value = sqrt(m0 * m1);
	snprintf(f->note, sizeof f->note,
		 "half 1 (hook on the second opened) %.3f, half 2 (hook on the first) %.3f", m0, m1);
	samples_free(&half[0]);
	samples_free(&half[1]);
}

static int hook_pairs(int t, enum hook_kind kind)
{
	static const double tgt[2] = {0.5, 2}; /* the warm cell's, engine API (DESIGN.md) */
	const struct hook_phase *h = &hook_phases[kind];
	int per_half = (opt.p.warm_rounds + 1) / 2, rc = 0;
	struct samples half_ratio[2][2]; /* [lang][half] */
	memset(half_ratio, 0, sizeof half_ratio);
	say("%s: warm cell, %s against %s, %d pairs per language in two halves (the hook on the "
	    "second engine opened, then on the first)\n",
	    tier_label(t), h->on, h->off, 2 * per_half);
	for (int half = 0; half < 2 && rc == 0; half++) {
		struct worker w[2];
		memset(w, 0, sizeof w);
		int hooked = half == 0 ? 1 : 0; /* which of w[0] (opened first), w[1] carries the hook */
		char why[1024];
		for (int k = 0; k < 2 && rc == 0; k++) {
			struct worker_cfg c;
			hook_cfg(&c, t, kind, half, k, k == hooked);
			if (worker_start(&w[k], &c, why, sizeof why) < 0) {
				say("bulkhead-bench: %s\n", why);
				rc = -1;
			}
		}
		for (int r = 0; r < per_half + opt.p.warm_discard && rc == 0; r++)
			for (int lang = 0; lang < 2 && rc == 0; lang++) {
				struct worker_reply rep[2];
				for (int i = 0; i < 2 && rc == 0; i++) {
					int k = (i + r) % 2; /* who goes first alternates */
					rc = call(&w[k], OP_CELL, lang, 0, 0, &rep[k]);
				}
				if (rc < 0 || r < opt.p.warm_discard)
					continue;
				double first = rep[0].cell.client_us, second = rep[1].cell.client_us;
				double off = hooked ? second : first, on = hooked ? first : second;
				hook_figures(t, h, lang, on, off, first, second);
				samples_add(&half_ratio[lang][half], on / off);
			}
		/* One bh_engine_usage read (every live session's cgroup files and
		 * the host's): a sample pass plus the host's figures. */
		for (int i = 0; kind == HOOK_USAGE && half == 0 && i < opt.p.warm_rounds && rc == 0;
		     i++) {
			struct worker_reply rep;
			rc = call(&w[1 - hooked], OP_USAGE_READ, 0, 0, 0, &rep);
			if (rc == 0)
				samples_add(&fig("usage_read", t,
						 "one usage read: 1 session's cgroup files + the host's",
						 "ms")->raw,
					    rep.cell.client_us / 1000.0);
		}
		for (int k = 0; k < 2; k++)
			worker_stop(&w[k]);
	}
	for (int lang = 0; lang < 2; lang++) {
		if (rc == 0) {
			char key[64];
			snprintf(key, sizeof key, "%s_on_%s", h->prefix, lang_key[lang]);
			target(fig(key, t, "", "ms"), tgt[t], NULL);
		}
		hook_halves(t, h, lang, half_ratio[lang]);
	}
	return rc;
}

/* ---- 3: open -> first cell, cold ---- */

static int cold_open(int t)
{
	struct worker *w = &workers[t][W_NORMAL];
	int n = opt.p.cold_n[t];
	static const double tgt[2] = {80, 700};
	say("%s: open -> first cell answered, cold, %d x 2 (python only; python+javascript)\n",
	    tier_label(t), n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < 2; j++) {
			int both = (i + j) % 2;
			struct worker_reply r;
			uint32_t mask = both ? 3u : 1u;
			if (call(w, OP_COLD, (int)mask, 0, 0, &r) < 0)
				return -1;
			struct figure *f = fig(both ? "cold_both" : "cold_python", t,
					       both ? "open (python+javascript) -> first python cell answered, cold"
						    : "open (python) -> first python cell answered, cold",
					       "ms");
			samples_add(&f->raw, r.cold.answer_us / 1000.0);
			samples_add(&fig(both ? "cold_both_ready" : "cold_python_ready", t,
					 both ? "  of which open -> session ready (python+javascript)"
					      : "  of which open -> session ready (python)",
					 "ms")->raw,
				    r.cold.ready_us / 1000.0);
			samples_add(&fig("close", t, "close -> sandbox gone (not a target)", "ms")->raw,
				    r.cold.gone_us / 1000.0);
		}
	target(fig("cold_python", t, "", "ms"), tgt[t], "open -> first cell answered, cold (python)");
	target(fig("cold_both", t, "", "ms"), tgt[t],
	       "open -> first cell answered, cold (python+javascript started)");
	/* The warm pool: an engine of its own with one pooled sandbox, so the
	 * other phases run without a pool's memory beside them. */
	struct worker pw = {0};
	struct worker_cfg pc;
	engine_cfg(&pc, t, "pool", false, false, false);
	pc.pool_size = 1;
	char why[1024];
	if (worker_start(&pw, &pc, why, sizeof why) < 0) {
		say("bulkhead-bench: %s\n", why);
		return -1;
	}
	int pooled = 0;
	for (int i = 0; i < n * 2; i++) {
		struct worker_reply r;
		if (call(&pw, OP_POOL, 0, 0, 0, &r) < 0) {
			worker_stop(&pw);
			return -1;
		}
		samples_add(&fig("warm_pool", t, "open from a warm pool -> first cell", "ms")->raw,
			    r.pool.answer_us / 1000.0);
		pooled += r.pool.from_pool;
		samples_add(&fig("warm_pool_ready", t, "  of which open -> session ready (pooled)", "ms")->raw,
			    r.pool.ready_us / 1000.0);
		samples_add(&fig("warm_pool_inside", t, "  of which the first cell inside the sandbox", "ms")->raw,
			    r.pool.inside_us / 1000.0);
	}
	worker_stop(&pw);
	struct figure *pool = fig("warm_pool", t, "open from a warm pool -> first cell", "ms");
	target(pool, 5, "open from a warm pool -> first cell");
	snprintf(pool->note, sizeof pool->note, "%d of %d opens took a pooled sandbox", pooled, n * 2);
	return 0;
}

/* ---- 4: resume from pause, restore from hibernate ---- */

static int wake_figures(int t)
{
	struct worker *w = &workers[t][W_NORMAL];
	static const double tgt[2] = {10, 40};
	say("%s: pause -> cell, %d times\n", tier_label(t), opt.p.pause_n[t]);
	for (int i = 0; i < opt.p.pause_n[t]; i++) {
		struct worker_reply r;
		if (call(w, OP_PAUSE, 0, 0, 0, &r) < 0)
			return -1;
		samples_add(&fig("resume", t, "resume from pause -> answer (cell call to answer)", "ms")->raw,
			    r.wake.client_us / 1000.0);
		samples_add(&fig("resume_woke", t, "  of which the resume itself (woke_us)", "ms")->raw,
			    r.wake.woke_us / 1000.0);
		samples_add(&fig("pause", t, "pause (not a target)", "ms")->raw,
			    r.wake.slept_us / 1000.0);
	}
	target(fig("resume", t, "", "ms"), tgt[t], "resume from pause -> answer");
	if (t == 0) {
		struct figure *f = fig("restore", t, "restore from hibernate -> answer", "ms");
		f->kind = FK_NA;
		table_row(f, "restore from hibernate -> answer", NULL);
		snprintf(f->note, sizeof f->note, "no CRIU >= 4.1 here: the container tier cannot hibernate");
		return 0;
	}
	say("%s: hibernate -> cell, %d times\n", tier_label(t), opt.p.hibernate_n);
	for (int i = 0; i < opt.p.hibernate_n; i++) {
		struct worker_reply r;
		if (call(w, OP_HIBERNATE, 0, 0, 0, &r) < 0)
			return -1;
		samples_add(&fig("restore", t, "restore from hibernate -> answer (cell call to answer)",
				 "ms")->raw,
			    r.wake.client_us / 1000.0);
		samples_add(&fig("restore_woke", t, "  of which the restore itself (woke_us)", "ms")->raw,
			    r.wake.woke_us / 1000.0);
		samples_add(&fig("hibernate", t, "hibernate (checkpoint; not a target)", "ms")->raw,
			    r.wake.slept_us / 1000.0);
		samples_add(&fig("image_disk", t, "hibernated sandbox image on disk (du)", "MiB")->raw,
			    r.wake.image_disk_bytes / 1048576.0);
	}
	target(fig("restore", t, "", "ms"), 450, "restore from hibernate -> answer");
	table_row(fig("image_disk", t, "", "MiB"), "disk size of a hibernated sandbox", "reported");
	return 0;
}

/* ---- 5: memory ---- */

static int memory(int t)
{
	struct worker *w = &workers[t][W_NORMAL];
	int n = opt.p.memory_n[t];
	static const double tgt[2] = {20, 40};
	struct samples sys = {0}, pss = {0}, from_before = {0}, after = {0}, rss = {0}, procs = {0},
		       cg = {0};
	say("%s: memory, %d idle warm sandboxes (python+javascript) side by side, %d time(s)\n",
	    tier_label(t), n, opt.p.memory_reps);
	for (int i = 0; i < opt.p.memory_reps; i++) {
		struct worker_reply r;
		if (call(w, OP_MEMORY, n, 0, 0, &r) < 0)
			return -1;
		samples_add(&sys, r.memory.drop_kib / 1024.0);
		samples_add(&from_before, r.memory.drop_from_before_kib / 1024.0);
		samples_add(&after, r.memory.rise_after_close_kib / 1024.0);
		samples_add(&pss, r.memory.pss_kib / 1024.0);
		samples_add(&rss, r.memory.rss_kib / 1024.0);
		samples_add(&procs, r.memory.procs);
		samples_add(&cg, r.memory.cgroup_kib / 1024.0);
	}
	struct summary m = summarize(&sys);
	struct figure *f = fig("mem_system", t, "memory per idle warm sandbox: MemAvailable drop / N",
			       "MiB");
	f->kind = FK_VALUE;
	f->value = m.median;
	snprintf(f->note, sizeof f->note,
		 "N=%d, median of %d (%.1f-%.1f); baseline = mean of before and after; drop from "
		 "before %.1f, rise after close %.1f MiB each",
		 n, opt.p.memory_reps, m.min, m.max, summarize(&from_before).median,
		 summarize(&after).median);
	target(f, tgt[t], "memory per idle warm sandbox, py+js (MemAvailable drop / N)");
	m = summarize(&pss);
	f = fig("mem_pss", t, "memory per idle warm sandbox: PSS of its processes / N", "MiB");
	f->kind = FK_VALUE;
	f->value = m.median;
	snprintf(f->note, sizeof f->note,
		 "median of %d (%.1f-%.1f); %.1f processes each; RSS %.1f MiB; cgroup usage %.1f MiB",
		 opt.p.memory_reps, m.min, m.max, summarize(&procs).median, summarize(&rss).median,
		 summarize(&cg).median);
	target(f, tgt[t], "memory per idle warm sandbox, py+js (PSS / N)");
	samples_free(&sys);
	samples_free(&pss);
	samples_free(&from_before);
	samples_free(&after);
	samples_free(&rss);
	samples_free(&procs);
	samples_free(&cg);
	return 0;
}

/* ---- 6: throughput ---- */

static int throughput(void)
{
	struct worker tw;
	struct worker_cfg c;
	char why[1024];
	engine_cfg(&c, 0, "throughput", false, false, false);
	say("container: throughput, %d sessions opened, windows of %d ms with 1, 8 and 32 busy, %d round(s)\n",
	    opt.p.tp_sessions, opt.p.tp_window_ms, opt.p.tp_rounds);
	if (worker_start(&tw, &c, why, sizeof why) < 0) {
		say("bulkhead-bench: %s\n", why);
		return -1;
	}
	struct worker_reply r;
	int rc = call(&tw, OP_THROUGHPUT, opt.p.tp_sessions, opt.p.tp_window_ms, opt.p.tp_rounds, &r);
	worker_stop(&tw);
	if (rc < 0)
		return -1;
	const struct throughput_reply *tp = &r.throughput;
	for (int j = 0; j < THROUGHPUT_KS; j++) {
		char key[64], label[160], row[64];
		int k = tp->k[j].sessions;
		snprintf(key, sizeof key, "throughput_%d", k);
		snprintf(label, sizeof label, "throughput, %d concurrent session%s (engine API)", k,
			 k > 1 ? "s" : "");
		struct figure *f = fig(key, 0, label, "cells/s");
		f->kind = FK_VALUE;
		f->value = tp->k[j].cells_s_median;
		snprintf(f->note, sizeof f->note,
			 "min %.0f max %.0f over %d window(s); cell latency p50 %.2f ms, p95 %.2f ms",
			 tp->k[j].cells_s_min, tp->k[j].cells_s_max, tp->rounds,
			 tp->k[j].latency_p50_ms, tp->k[j].latency_p95_ms);
		snprintf(row, sizeof row, "throughput, %d concurrent session%s (cells/s)", k,
			 k > 1 ? "s" : "");
		table_row(f, row, "reported");
	}
	struct figure *f = fig("throughput_open", 0, "  opening the 32 sessions (python warmed)", "ms");
	f->kind = FK_VALUE;
	f->value = tp->open_ms;
	return 0;
}

/* ---- output ---- */

static void print_figure(FILE *o, const struct figure *f)
{
	const char *unit = f->unit;
	if (f->kind == FK_NA) {
		fprintf(o, "  %-72s  n/a  (%s)   target %s: %s\n", f->label, f->note,
			f->target_text[0] ? f->target_text : "-", met_text(f));
		return;
	}
	if (f->kind == FK_VALUE)
		fprintf(o, "  %-72s  %10.3f %-7s", f->label, f->value, unit);
	else
		fprintf(o, "  %-72s  %10.3f %-7s (min %.3f, p95 %.3f, max %.3f, n %zu)", f->label,
			f->s.median, unit, f->s.min, f->s.p95, f->s.max, f->s.n);
	if (f->has_target)
		fprintf(o, "  target %s: %s", f->target_text, met_text(f));
	if (f->note[0])
		fprintf(o, "  [%s]", f->note);
	fputc('\n', o);
}

static void cell_text(char *out, size_t n, const struct figure *f)
{
	if (!f) {
		snprintf(out, n, "-");
		return;
	}
	if (f->kind == FK_NA) {
		snprintf(out, n, "n/a (%.120s)", f->note);
		return;
	}
	double v = headline(f);
	const char *fmt = v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : v >= 1 ? "%.2f %s" : "%.3f %s";
	char num[64];
	snprintf(num, sizeof num, fmt, v, f->unit);
	if (f->has_target)
		snprintf(out, n, "%s (%s)", num, met_text(f));
	else
		snprintf(out, n, "%s", num);
}

static struct figure *find(const char *row, int tier)
{
	for (int i = 0; i < n_figs; i++)
		if (figs[i].in_table && figs[i].tier == tier && !strcmp(figs[i].row, row))
			return &figs[i];
	return NULL;
}

static void print_table(FILE *o)
{
	fprintf(o, "\n| figure | container (crun) | kernel (gVisor) | target (container / kernel) |\n");
	fprintf(o, "|---|---|---|---|\n");
	char seen[MAX_FIGURES][64];
	int n_seen = 0;
	for (int i = 0; i < n_figs; i++) {
		if (!figs[i].in_table)
			continue;
		bool dup = false;
		for (int j = 0; j < n_seen; j++)
			if (!strcmp(seen[j], figs[i].row))
				dup = true;
		if (dup)
			continue;
		snprintf(seen[n_seen++], 64, "%s", figs[i].row);
		struct figure *c = find(figs[i].row, 0), *k = find(figs[i].row, 1);
		char ct[160], kt[160], tt[160];
		cell_text(ct, sizeof ct, c);
		cell_text(kt, sizeof kt, k);
		snprintf(tt, sizeof tt, "%s / %s", c && c->target_text[0] ? c->target_text : "-",
			 k && k->target_text[0] ? k->target_text : "-");
		fprintf(o, "| %s | %s | %s | %s |\n", figs[i].row, ct, kt, tt);
	}
}

static void print_report(FILE *o)
{
	const char *sect[3] = {"container tier (crun)", "kernel tier (gVisor runsc)", "both / neither"};
	int order[3] = {0, 1, -1};
	for (int s = 0; s < 3; s++) {
		bool any = false;
		for (int i = 0; i < n_figs; i++)
			if (figs[i].tier == order[s])
				any = true;
		if (!any)
			continue;
		fprintf(o, "\n%s\n", sect[s]);
		for (int i = 0; i < n_figs; i++)
			if (figs[i].tier == order[s])
				print_figure(o, &figs[i]);
	}
	print_table(o);
}

static char *first_line(const char *cmd)
{
	static char buf[8][256];
	static int next;
	char *b = buf[next++ % 8];
	b[0] = '\0';
	FILE *f = popen(cmd, "r");
	if (f) {
		if (!fgets(b, 256, f))
			b[0] = '\0';
		pclose(f);
	}
	b[strcspn(b, "\n")] = '\0';
	return b;
}

static cJSON *summary_json(const struct summary *s)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "n", (double)s->n);
	cJSON_AddNumberToObject(j, "median", s->median);
	cJSON_AddNumberToObject(j, "min", s->min);
	cJSON_AddNumberToObject(j, "p95", s->p95);
	cJSON_AddNumberToObject(j, "max", s->max);
	return j;
}

static char load_start[256];

static void print_json(FILE *o, const char *started, double took_s)
{
	cJSON *root = cJSON_CreateObject();
	struct utsname u;
	uname(&u);
	cJSON *m = cJSON_AddObjectToObject(root, "machine");
	cJSON_AddNumberToObject(m, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddStringToObject(m, "kernel", u.release);
	cJSON_AddStringToObject(m, "crun", first_line("crun --version 2>/dev/null"));
	cJSON_AddStringToObject(m, "runsc", first_line("runsc --version 2>/dev/null"));
	cJSON_AddStringToObject(m, "loadavg_start", load_start);
	cJSON_AddStringToObject(m, "loadavg_end", first_line("cat /proc/loadavg"));
	cJSON_AddStringToObject(root, "command", opt.command);
	cJSON_AddStringToObject(root, "started", started);
	cJSON_AddNumberToObject(root, "seconds", took_s);
	cJSON_AddBoolToObject(root, "quick", opt.quick);
	cJSON *arr = cJSON_AddArrayToObject(root, "figures");
	for (int i = 0; i < n_figs; i++) {
		const struct figure *f = &figs[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "key", f->key);
		cJSON_AddStringToObject(j, "tier", f->tier == 0 ? "container" : f->tier == 1 ? "kernel" : "");
		cJSON_AddStringToObject(j, "label", f->label);
		cJSON_AddStringToObject(j, "unit", f->unit);
		if (f->kind == FK_SUMMARY) {
			cJSON_AddItemToObject(j, "summary", summary_json(&f->s));
			cJSON *raw = cJSON_AddArrayToObject(j, "samples");
			for (size_t k = 0; k < f->raw.n; k++)
				cJSON_AddItemToArray(raw, cJSON_CreateNumber(round(f->raw.v[k] * 1e4) / 1e4));
		} else if (f->kind == FK_VALUE) {
			cJSON_AddNumberToObject(j, "value", f->value);
		} else {
			cJSON_AddNullToObject(j, "value");
		}
		if (f->has_target)
			cJSON_AddNumberToObject(j, "target", f->target);
		if (f->target_text[0])
			cJSON_AddStringToObject(j, "target_text", f->target_text);
		cJSON_AddStringToObject(j, "met", met_text(f));
		if (f->in_table)
			cJSON_AddStringToObject(j, "row", f->row);
		if (f->note[0])
			cJSON_AddStringToObject(j, "note", f->note);
		cJSON_AddItemToArray(arr, j);
	}
	char *s = cJSON_Print(root);
	fprintf(o, "%s\n", s);
	free(s);
	cJSON_Delete(root);
}

/* ---- main ---- */

static void usage(FILE *o)
{
	fprintf(o, "usage: bulkhead-bench [--quick] [--tier container|kernel|all] [--json] [--root DIR] "
		   "[--verbose]\n"
		   "  --quick    fewer iterations, both tiers, under two minutes (CI)\n"
		   "  --json     the figures (with every sample) as JSON on stdout; the report goes to stderr\n"
		   "  --root     where state directories go (default /tmp/bh-bench)\n"
		   "  --rounds   warm-cell rounds (default 300, --quick 30)\n"
		   "  --compare-init PATH  also run cells on this bulkhead-init, interleaved (before/after)\n"
		   "  --compare-interp DIR  the same with other cell servers (data/interp)\n"
		   "  --only     a comma list of phases (warm,store,stream,fresh,cold,wake,memory,\n"
		   "             throughput,usage,aa); usage, stream and aa each open their own\n"
		   "             engines, aa the A/A control of the two (bench/RESULTS.md)\n"
		   "  --soak SECONDS  instead: one cell a second for SECONDS, the store's WAL sampled\n"
		   "             after every cell against its bound (bench/RESULTS.md, \"The WAL under a\n"
		   "             steady trickle\")\n"
		   "Run as root (crun and runsc need it). Performance is reported, never asserted:\n"
		   "the exit code is 0 when every measurement ran.\n");
}

/* Whether a phase runs (--only, for profiling one of them). */
static bool phase(const char *name)
{
	char key[64];
	snprintf(key, sizeof key, ",%s,", name);
	return !opt.only[0] || strstr(opt.only, key);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

int main(int argc, char **argv)
{
	int rounds = 0, soak_seconds = 0;
	opt.tiers[0] = opt.tiers[1] = true;
	snprintf(opt.root, sizeof opt.root, "/tmp/bh-bench");
	size_t used = 0;
	for (int i = 0; i < argc && used < sizeof opt.command - 2; i++)
		used += (size_t)snprintf(opt.command + used, sizeof opt.command - used, "%s%s",
					 i ? " " : "", argv[i]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--quick"))
			opt.quick = true;
		else if (!strcmp(a, "--json"))
			opt.json = true;
		else if (!strcmp(a, "--verbose"))
			opt.verbose = true;
		else if (!strcmp(a, "--tier") && i + 1 < argc) {
			const char *v = argv[++i];
			opt.tiers[0] = !strcmp(v, "container") || !strcmp(v, "all");
			opt.tiers[1] = !strcmp(v, "kernel") || !strcmp(v, "all");
			if (!opt.tiers[0] && !opt.tiers[1]) {
				usage(stderr);
				return 2;
			}
		} else if (!strcmp(a, "--only") && i + 1 < argc)
			snprintf(opt.only, sizeof opt.only, ",%.250s,", argv[++i]);
		else if (!strcmp(a, "--compare-init") && i + 1 < argc)
			opt.compare_init = argv[++i];
		else if (!strcmp(a, "--compare-interp") && i + 1 < argc)
			opt.compare_interp = argv[++i];
		else if (!strcmp(a, "--soak") && i + 1 < argc && atoi(argv[i + 1]) > 0)
			soak_seconds = atoi(argv[++i]);
		else if (!strcmp(a, "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(a, "--root") && i + 1 < argc)
			snprintf(opt.root, sizeof opt.root, "%s", argv[++i]);
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	opt.p = opt.quick ? quick_plan : full_plan;
	if (rounds > 0)
		opt.p.warm_rounds = rounds;
	opt.init = env_or("BULKHEAD_INIT", BENCH_INIT);
	opt.interp = env_or("BULKHEAD_INTERP", BENCH_INTERP);
	opt.cli = env_or("BULKHEAD_CLI", BENCH_CLI);
	if (geteuid() != 0) {
		fprintf(stderr, "bulkhead-bench: run as root (the runtimes need it)\n");
		return 2;
	}
	mkdir(opt.root, 0711);
	chmod(opt.root, 0711);
	snprintf(opt.evidence, sizeof opt.evidence, "%s/evidence", opt.root);
	snprintf(opt.run_dir, sizeof opt.run_dir, "%s/run-XXXXXX", opt.root);
	if (!mkdtemp(opt.run_dir)) {
		fprintf(stderr, "bulkhead-bench: mkdtemp %s: %s\n", opt.run_dir, strerror(errno));
		return 1;
	}
	chmod(opt.run_dir, 0711);

	struct sigaction sa = {.sa_handler = on_sigint};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (soak_seconds) {
		struct soak_opts so = {.seconds = soak_seconds, .run_dir = opt.run_dir,
				       .init = opt.init, .interp = opt.interp,
				       .evidence = opt.evidence};
		int r = bench_soak(&so, &interrupted);
		if (r == 0)
			rmdir(opt.run_dir);
		return r;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);

	char started[64];
	time_t now = time(NULL);
	strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	double t_start = now_us();
	snprintf(load_start, sizeof load_start, "%s", first_line("cat /proc/loadavg"));
	struct utsname u;
	uname(&u);
	say("bulkhead-bench %s: %s, %ld cores, kernel %s, %s, %s; state in %s\n",
	    opt.quick ? "--quick" : "(full)", started, sysconf(_SC_NPROCESSORS_ONLN), u.release,
	    first_line("crun --version 2>/dev/null"), first_line("runsc --version 2>/dev/null"),
	    opt.run_dir);

	int rc = 0;
	for (int t = 0; t < 2 && rc == 0; t++) {
		if (!opt.tiers[t])
			continue;
		/* ---- usage: --only usage,stream,aa start their own workers, no others ---- */
		if (!phase("warm") && !phase("fresh") && !phase("cold") && !phase("wake") &&
		    !phase("memory"))
			continue;
		say("starting the %s tier's workers\n", tier_label(t));
		if (start_tier(t) < 0)
			rc = -1;
	}
	if (rc == 0 && phase("warm"))
		rc = warm_rounds();
	if (rc == 0 && phase("store"))
		rc = store_share();
	for (int t = 0; t < 2 && rc == 0; t++) {
		if (!opt.tiers[t])
			continue;
		if ((phase("aa") && hook_pairs(t, HOOK_NONE) < 0) ||
		    (phase("stream") && hook_pairs(t, HOOK_STREAM) < 0) ||
		    (phase("fresh") && fresh_vs_warm(t) < 0) || (phase("cold") && cold_open(t) < 0) ||
		    (phase("wake") && wake_figures(t) < 0) || (phase("memory") && memory(t) < 0) ||
		    (phase("usage") && hook_pairs(t, HOOK_USAGE) < 0)) /* ---- usage ---- */
			rc = -1;
	}
	/* The tiers' workers go before throughput: 32 more sandboxes want
	 * the cores to themselves. */
	for (int t = 0; t < 2; t++)
		if (opt.tiers[t])
			stop_tier(t);
	if (rc == 0 && opt.tiers[0] && phase("throughput"))
		rc = throughput();

	check_cgroups();
	finish_figures();
	double took = (now_us() - t_start) / 1e6;
	print_report(stderr);
	say("\n%s in %.1f s; load average at the start %s, at the end %s; command: %s\n",
	    rc == 0 ? "done" : "FAILED", took, load_start, first_line("cat /proc/loadavg"), opt.command);
	if (opt.json)
		print_json(stdout, started, took);
	/* Every sandbox was closed by its engine or daemon; the state
	 * directories go too. */
	if (rc == 0) {
		char cmd[8400];
		snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", opt.run_dir);
		if (system(cmd) != 0)
			say("bulkhead-bench: could not remove %s\n", opt.run_dir);
	} else {
		say("bulkhead-bench: state kept in %s for a look\n", opt.run_dir);
	}
	curl_global_cleanup();
	for (int i = 0; i < n_figs; i++)
		samples_free(&figs[i].raw);
	return rc == 0 ? 0 : 1;
}
