#include "harness.h"
#include "engine_internals.h"
#include "record.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <fcntl.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static void remember(void *arg, enum bh_log_level level, const char *msg)
{
	struct harness *h = arg;
	/* BH_TEST_DEBUG=1 shows the engine's whole log on stderr. */
	if (getenv("BH_TEST_DEBUG"))
		fprintf(stderr, "engine: %s\n", msg);
	if (level < BH_LOG_WARN)
		return;
	size_t used = strlen(h->log);
	snprintf(h->log + used, sizeof h->log - used, "%s\n", msg);
}

static void open_engine(struct harness *h, const char *drop_wall, const char *crash_at);

/* A new state directory below the test root, for h. */
static void fresh_state_dir(struct harness *h)
{
	char path[4096];
	snprintf(path, sizeof path, "%s", test_root());
	mkdir(path, 0711);
	snprintf(path, sizeof path, "%s/state-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(path), "mkdtemp %s: %s", path, strerror(errno));
	h->state_dir = strdup(path);
}

void harness_open(struct harness *h, const char *drop_wall)
{
	memset(h, 0, sizeof *h);
	fresh_state_dir(h);
	open_engine(h, drop_wall, NULL);
}

void harness_open_policy(struct harness *h, const struct bh_policy *policy)
{
	memset(h, 0, sizeof *h);
	h->policy = *policy;
	fresh_state_dir(h);
	open_engine(h, NULL, NULL);
}

/* ---- fleet ---- */
void harness_open_images(struct harness *h, const struct bh_policy *policy, const char *images_dir)
{
	memset(h, 0, sizeof *h);
	h->policy = policy ? *policy : (struct bh_policy){0};
	h->images_dir = images_dir;
	fresh_state_dir(h);
	open_engine(h, NULL, NULL);
}

/* ---- density ---- */
void harness_open_uid_regions(struct harness *h, const char *dir)
{
	memset(h, 0, sizeof *h);
	h->uid_region_dir = dir;
	fresh_state_dir(h);
	open_engine(h, NULL, NULL);
}

/* ---- egress ---- */
void harness_open_egress(struct harness *h, const struct bh_egress_ops *ops, void *arg)
{
	memset(h, 0, sizeof *h);
	h->egress = ops;
	h->egress_arg = arg;
	fresh_state_dir(h);
	open_engine(h, NULL, NULL);
}

void harness_open_at(struct harness *h, const char *state_dir, const char *crash_at)
{
	/* The caller may have set a policy before; everything else starts empty
	 * (an earlier directory name is freed: the caller passes its own copy). */
	struct bh_policy policy = h->policy;
	bool keep = h->keep_leftovers; /* inflight */
	const struct bh_egress_ops *egress = h->egress; /* ---- egress ---- */
	void *egress_arg = h->egress_arg;
	const char *images_dir = h->images_dir; /* ---- fleet ---- */
	const char *uid_region_dir = h->uid_region_dir; /* ---- density ---- */
	char *dir = strdup(state_dir);
	free(h->state_dir);
	memset(h, 0, sizeof *h);
	h->uid_region_dir = uid_region_dir;
	h->policy = policy;
	h->keep_leftovers = keep;
	h->egress = egress;
	h->egress_arg = egress_arg;
	h->images_dir = images_dir;
	h->state_dir = dir;
	open_engine(h, NULL, crash_at);
}

static void open_engine(struct harness *h, const char *drop_wall, const char *crash_at)
{
	char evidence[4096];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	struct bh_config cfg = {
		.state_dir = h->state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = remember,
		.log_arg = h,
		.policy = h->policy,
		.evidence_dir = drop_wall ? NULL : evidence,
		.keep_leftovers = h->keep_leftovers, /* inflight */
		.egress = h->egress, /* ---- egress ---- */
		.egress_arg = h->egress_arg,
		.images_dir = h->images_dir, /* ---- fleet ---- */
	};
	bh_error *err = NULL;
	struct bh_test_hooks hooks = {
		.drop_wall = drop_wall, .crash_at = crash_at, .uid_region_dir = h->uid_region_dir};
	int r = bh_engine_open_hooked(&cfg, &hooks, &h->e, &err);
	cr_assert_eq(r, 0, "engine open: %s", err ? err->msg : "?");
	/* Proven, and the proofs' throwaway sandboxes deleted: tests compare
	 * the host before and after their own calls. */
	/* With a warm pool, until the pool is full and nothing else is open. */
	while (!bh_engine_proven(h->e) ||
	       bh_engine_live_sandboxes(h->e) > bh_engine_pool_ready(h->e, BH_TIER_CONTAINER) +
							bh_engine_pool_ready(h->e, BH_TIER_KERNEL) ||
	       (h->policy.pool_size &&
		bh_engine_pool_ready(h->e, BH_TIER_CONTAINER) + bh_engine_pool_ready(h->e, BH_TIER_KERNEL) <
			h->policy.pool_size)) {
		bool never = false;
		bh_error *e2 = NULL;
		bh_engine_wait(h->e, &never, 50, &e2);
		bh_error_free(e2);
	}
}

static void rm_tree(const char *path)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", path);
}

/* A test that failed between killing an engine and opening the next one
 * leaves no engine to close: one opened here reaps what the dead one left
 * (its registered sandboxes at open, anything else by gc), so a failure
 * does not leak containers, cgroups or processes onto the host. */
static void sweep_without_engine(struct harness *h)
{
	char lock[4200];
	snprintf(lock, sizeof lock, "%s/lock", h->state_dir);
	if (access(lock, F_OK) != 0)
		return;
	char evidence[4096];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	struct bh_config cfg = {
		.evidence_dir = evidence,
		.state_dir = h->state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = remember,
		.log_arg = h,
		.images_dir = h->images_dir, /* ---- fleet ---- */
	};
	bh_engine *e = NULL;
	bh_error *err = NULL;
	if (bh_engine_open(&cfg, &e, &err) < 0) {
		fprintf(stderr, "teardown: cannot open an engine on %s to reap: %s\n", h->state_dir,
			err ? err->msg : "?");
		bh_error_free(err);
		return;
	}
	struct bh_leak *reaped = NULL;
	bh_engine_gc(e, &reaped);
	free(reaped);
	bh_engine_close(e);
}

void harness_close(struct harness *h)
{
	if (h->e)
		bh_engine_close(h->e);
	else if (h->state_dir)
		sweep_without_engine(h);
	h->e = NULL;
	if (h->state_dir)
		rm_tree(h->state_dir);
	free(h->state_dir);
	h->state_dir = NULL;
}

void harness_require_tier(struct harness *h, enum bh_tier tier)
{
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(h->e, &t);
	for (size_t i = 0; i < n; i++)
		if (t[i].tier == tier)
			cr_assert(t[i].offered, "the %s tier is not offered: %s", bh_tier_name(tier),
				  t[i].reason);
}

struct waiter {
	bool done;
	struct run_result *res;
};

static char *copy(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void on_result(void *arg, const struct bh_exec_result *res, const bh_error *err)
{
	struct waiter *w = arg;
	struct run_result *r = w->res;
	w->done = true;
	if (err) {
		r->err_code = err->code;
		r->refusal = err->refusal;
		r->err_msg = strdup(err->msg);
		return;
	}
	r->answered = true;
	r->r = *res;
	r->out = copy(res->out, res->out_len);
	r->errout = copy(res->errout, res->errout_len);
	r->r.out = (const uint8_t *)r->out;
	r->r.errout = (const uint8_t *)r->errout;
}

struct run_result *harness_exec(struct harness *h, enum bh_tier tier, enum bh_tier floor,
				const char *const *argv, const char *input, uint32_t timeout_ms,
				uint32_t output_cap)
{
	struct run_result *r = calloc(1, sizeof *r);
	struct waiter w = {.res = r};
	struct bh_exec_request req = {
		.tier = tier,
		.floor = floor,
		.argv = argv,
		.input = input,
		.input_len = input ? strlen(input) : 0,
		.timeout_ms = timeout_ms,
		.output_cap = output_cap,
	};
	bh_error *err = NULL;
	if (bh_exec(h->e, &req, on_result, &w, &err) < 0) {
		on_result(&w, NULL, err);
		bh_error_free(err);
		return r;
	}
	cr_assert_eq(bh_engine_wait(h->e, &w.done, 600000, &err), 0, "wait: %s",
		     err ? err->msg : "?");
	return r;
}

struct run_result *harness_python(struct harness *h, enum bh_tier tier, const char *code,
				  uint32_t timeout_ms)
{
	static const char *const argv[] = {"/usr/bin/python3", "-I", "-", NULL};
	return harness_exec(h, tier, BH_TIER_UNKNOWN, argv, code, timeout_ms, 0);
}

struct run_result *harness_node(struct harness *h, enum bh_tier tier, const char *code,
				uint32_t timeout_ms)
{
	static const char *const argv[] = {"/usr/bin/node", "-", NULL};
	return harness_exec(h, tier, BH_TIER_UNKNOWN, argv, code, timeout_ms, 0);
}

void run_result_free(struct run_result *r)
{
	if (!r)
		return;
	free(r->err_msg);
	free(r->out);
	free(r->errout);
	free(r);
}

static char *capture(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f, "popen %s", cmd);
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (cap - n < 2)
			buf = realloc(buf, cap *= 2);
	}
	buf[n] = '\0';
	pclose(f);
	return buf;
}

char *harness_runtime_list(struct harness *h)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
		 "{ crun --root '%s' list -q 2>/dev/null; runsc --root '%s' list --quiet 2>/dev/null; } | sort",
		 bh_engine_runtime_root(h->e, BH_TIER_CONTAINER),
		 bh_engine_runtime_root(h->e, BH_TIER_KERNEL));
	return capture(cmd);
}

char *harness_runtime_list_settled(struct harness *h, int ms)
{
	char *left = harness_runtime_list(h);
	for (int waited = 0; waited < ms && left[0]; waited += 100) {
		bool never = false;
		bh_error *err = NULL;
		bh_engine_wait(h->e, &never, 100, &err);
		bh_error_free(err);
		free(left);
		left = harness_runtime_list(h);
	}
	return left;
}

char *harness_cgroup_list(struct harness *h)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "find /sys/fs/cgroup/*%s -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort",
		 bh_engine_cgroup_parent(h->e));
	return capture(cmd);
}

long harness_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

void harness_child_signals_default(void)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
}

int harness_oom_score_adj(const char *pid)
{
	char path[300], buf[16] = "";
	snprintf(path, sizeof path, "/proc/%s/oom_score_adj", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -10000;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	return atoi(buf);
}

void harness_set_oom_score_adj(int adj)
{
	FILE *f = fopen("/proc/self/oom_score_adj", "w");
	cr_assert_not_null(f);
	fprintf(f, "%d", adj);
	cr_assert_eq(fclose(f), 0, "cannot set our oom_score_adj to %d", adj);
}

/* ---- sessions ---- */

struct open_wait {
	bool done;
	char *err;
};

static void on_session_open(void *arg, bh_session *s, const bh_error *err)
{
	struct open_wait *w = arg;
	(void)s;
	w->done = true;
	if (err)
		w->err = strdup(err->msg);
}

bh_session *harness_session(struct harness *h, enum bh_tier tier, uint32_t languages)
{
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN, .languages = languages};
	return harness_session_opts(h, &o);
}

bh_session *harness_session_opts(struct harness *h, const struct bh_session_opts *opts)
{
	struct bh_session_opts o = *opts;
	if (!o.principal)
		o.principal = "test";
	struct open_wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h->e, &o, on_session_open, &w, &s, &err), 0, "open: %s",
		     err ? err->msg : "?");
	cr_assert_eq(bh_engine_wait(h->e, &w.done, 120000, &err), 0, "open wait: %s",
		     err ? err->msg : "?");
	cr_assert_null(w.err, "the session did not open: %s\n%s", w.err, h->log);
	return s;
}

struct cell_wait {
	bool *done;
	struct cell_outcome *o;
};

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct cell_wait *w = arg;
	struct cell_outcome *o = w->o;
	*w->done = true;
	if (r && r->record) {
		snprintf(o->record_sha256, sizeof o->record_sha256, "%s", r->record->record_sha256);
		o->sequence = r->record->sequence;
		o->record_version = r->record->version;
	}
	if (err) {
		o->err_code = err->code;
		o->refusal = err->refusal;
		o->err_msg = strdup(err->msg);
		o->session_end = err->session_end;
		free(w);
		return;
	}
	o->answered = true;
	o->r = *r;
	o->out = copy(r->out, r->out_len);
	o->errout = copy(r->errout, r->errout_len);
	o->r.out = (const uint8_t *)o->out;
	o->r.errout = (const uint8_t *)o->errout;
	o->r.record = NULL;
	free(w);
}

static int start_cell(struct harness *h, bh_session *s, enum bh_language lang, const char *code,
		      const struct bh_file *files, size_t n, uint32_t timeout_ms, bool *done,
		      struct cell_outcome **out, bh_error **err)
{
	(void)h;
	struct cell_outcome *o = calloc(1, sizeof *o);
	struct cell_wait *w = calloc(1, sizeof *w);
	w->done = done;
	w->o = o;
	*out = o;
	struct bh_cell c = {.language = lang, .code = code, .code_len = strlen(code), .files = files,
			    .n_files = n, .timeout_ms = timeout_ms, .floor = BH_TIER_UNKNOWN};
	int r = bh_session_run(s, &c, on_cell, w, err);
	if (r < 0) {
		free(w);
		o->err_code = (*err)->code;
		o->refusal = (*err)->refusal;
		o->err_msg = strdup((*err)->msg);
		o->session_end = (*err)->session_end;
		*done = true;
	}
	return r;
}

int harness_cell_start(struct harness *h, bh_session *s, enum bh_language lang, const char *code,
		       bool *done, struct cell_outcome **out, bh_error **err)
{
	return start_cell(h, s, lang, code, NULL, 0, 0, done, out, err);
}

static struct cell_outcome *run_cell(struct harness *h, bh_session *s, enum bh_language lang,
				     const char *code, const struct bh_file *files, size_t n,
				     uint32_t timeout_ms)
{
	bool done = false;
	struct cell_outcome *o = NULL;
	bh_error *err = NULL;
	if (start_cell(h, s, lang, code, files, n, timeout_ms, &done, &o, &err) < 0) {
		bh_error_free(err);
		return o;
	}
	cr_assert_eq(bh_engine_wait(h->e, &done, 600000, &err), 0, "cell wait: %s",
		     err ? err->msg : "?");
	return o;
}

struct cell_outcome *harness_cell(struct harness *h, bh_session *s, enum bh_language lang,
				  const char *code, uint32_t timeout_ms)
{
	return run_cell(h, s, lang, code, NULL, 0, timeout_ms);
}

struct cell_outcome *harness_cell_files(struct harness *h, bh_session *s, enum bh_language lang,
					const char *code, const struct bh_file *files, size_t n)
{
	return run_cell(h, s, lang, code, files, n, 0);
}

void cell_outcome_free(struct cell_outcome *o)
{
	if (!o)
		return;
	free(o->err_msg);
	free(o->out);
	free(o->errout);
	free(o);
}

struct close_wait {
	bool done;
	unsigned long long calls;
	char last[65], reason[32];
};

static void on_close(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	struct close_wait *w = arg;
	w->done = true;
	cr_assert_null(err, "close: %s", err ? err->msg : "");
	w->calls = r->calls;
	snprintf(w->last, sizeof w->last, "%s", r->last_record_sha256);
	snprintf(w->reason, sizeof w->reason, "%s", bh_end_reason_name(r->end_reason));
}

unsigned long long harness_close_session(struct harness *h, bh_session *s, char last[65],
					 char reason[32])
{
	struct close_wait w = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_close(s, on_close, &w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h->e, &w.done, 60000, &err), 0);
	if (last)
		memcpy(last, w.last, 65);
	if (reason)
		memcpy(reason, w.reason, 32);
	return w.calls;
}

int harness_cli(struct harness *h, char *out, size_t outlen, const char *args)
{
	return harness_sh_into(out, outlen, "BULKHEAD_INTERP='%s' %s %s --state '%s' 2>&1",
			       BH_TEST_INTERP, BH_TEST_CLI, args, h->state_dir);
}

int harness_sh_into(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f, "popen %s", cmd);
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void harness_wait_for_warden(const char *state_dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/lock", state_dir);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0, "no lock file in %s", state_dir);
	/* The warden writes its name once it holds the lock; only then does a
	 * free lock mean it is done (before, it means it has not started). */
	bool named = false, freed = false;
	for (int i = 0; i < 250 && !freed; i++) {
		char holder[16] = "";
		ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
		named = named || (n >= 6 && !strncmp(holder, "warden", 6));
		if (named && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			flock(fd, LOCK_UN);
			freed = true;
		} else {
			usleep(20 * 1000);
		}
	}
	close(fd);
	cr_assert(freed, "the dead engine's warden on %s %s within 5 s", state_dir,
		  named ? "did not finish" : "never took the lock");
}

char *harness_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	static char out[8192];
	FILE *f = popen(cmd, "r");
	size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
	out[n] = '\0';
	if (f)
		pclose(f);
	return out;
}

void harness_scratch_dir(const char *name, char *dir, size_t dirlen, char *db, size_t dblen)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(dir, dirlen, "%s/%s-XXXXXX", root && *root ? root : "/tmp", name);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	if (db)
		snprintf(db, dblen, "%s/bulkhead.db", dir);
}

void harness_remove_dir(const char *dir)
{
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

char *harness_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *b = malloc(n > 0 ? (size_t)n + 1 : 1);
	size_t got = n > 0 ? fread(b, 1, (size_t)n, f) : 0;
	b[got] = '\0';
	fclose(f);
	return b;
}
