#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static void remember(void *arg, enum bh_log_level level, const char *msg)
{
	struct harness *h = arg;
	if (level < BH_LOG_WARN)
		return;
	size_t used = strlen(h->log);
	snprintf(h->log + used, sizeof h->log - used, "%s\n", msg);
}

void harness_open(struct harness *h, const char *drop_wall)
{
	memset(h, 0, sizeof *h);
	char path[4096];
	snprintf(path, sizeof path, "%s", test_root());
	mkdir(path, 0711);
	snprintf(path, sizeof path, "%s/state-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(path), "mkdtemp %s: %s", path, strerror(errno));
	h->state_dir = strdup(path);
	char evidence[4096];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	struct bh_config cfg = {
		.state_dir = h->state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = remember,
		.log_arg = h,
		.drop_wall = drop_wall,
		.evidence_dir = drop_wall ? NULL : evidence,
	};
	bh_error *err = NULL;
	int r = bh_engine_open(&cfg, &h->e, &err);
	cr_assert_eq(r, 0, "engine open: %s", err ? err->msg : "?");
	/* Proven, and the proofs' throwaway sandboxes deleted: tests compare
	 * the host before and after their own calls. */
	while (!bh_engine_proven(h->e) || bh_engine_live_sandboxes(h->e) > 0) {
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

void harness_close(struct harness *h)
{
	if (h->e)
		bh_engine_close(h->e);
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
		 "{ crun --root '%s' list -q 2>/dev/null; runsc --root '%s' list -q 2>/dev/null; } | sort",
		 bh_engine_runtime_root(h->e, BH_TIER_CONTAINER),
		 bh_engine_runtime_root(h->e, BH_TIER_KERNEL));
	return capture(cmd);
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
