#include "faults.h"
#include "engine_internals.h"
#include "record.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static void quiet(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (getenv("BH_TEST_DEBUG") || (level >= BH_LOG_ERROR && getenv("BH_FAULTS_VERBOSE")))
		fprintf(stderr, "engine[%d]: %s\n", (int)level, msg);
}

bh_engine *faults_engine_open(const char *state_dir, const char *crash_at, char *why, size_t n)
{
	char evidence[4096];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	struct bh_config cfg = {
		.state_dir = state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = quiet,
		.evidence_dir = evidence,
	};
	bh_engine *e = NULL;
	bh_error *err = NULL;
	struct bh_test_hooks hooks = {.crash_at = crash_at};
	if (bh_engine_open_hooked(&cfg, &hooks, &e, &err) < 0) {
		snprintf(why, n, "engine open: %s", err ? err->msg : "?");
		bh_error_free(err);
		return NULL;
	}
	while (!bh_engine_proven(e) || bh_engine_live_sandboxes(e) > 0) {
		bool never = false;
		bh_error *e2 = NULL;
		bh_engine_wait(e, &never, 50, &e2);
		bh_error_free(e2);
	}
	return e;
}

static int wait_for(bh_engine *e, bool *done, int ms, char *why, size_t n)
{
	bh_error *err = NULL;
	if (bh_engine_wait(e, done, ms, &err) < 0 || !*done) {
		snprintf(why, n, "no answer within %d ms%s%s", ms, err ? ": " : "", err ? err->msg : "");
		bh_error_free(err);
		return -1;
	}
	return 0;
}

struct open_wait {
	bool done;
	char err[512];
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct open_wait *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
}

bh_session *faults_open(bh_engine *e, enum bh_tier tier, char *why, size_t n)
{
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON, .principal = FAULTS_PRINCIPAL};
	struct open_wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	if (bh_session_open(e, &o, on_open, &w, &s, &err) < 0) {
		snprintf(why, n, "open refused: %s", err ? err->msg : "?");
		bh_error_free(err);
		return NULL;
	}
	if (wait_for(e, &w.done, 120000, why, n) < 0)
		return NULL;
	if (w.err[0]) {
		snprintf(why, n, "open failed: %s", w.err);
		return NULL;
	}
	return s;
}

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct faults_cell *c = arg;
	c->done = true;
	if (r && r->record)
		snprintf(c->record, sizeof c->record, "%s", r->record->record_sha256);
	if (err) {
		snprintf(c->err, sizeof c->err, "%s", err->msg);
		c->session_end = err->session_end;
		c->refusal = err->refusal;
		c->code = err->code;
		return;
	}
	c->answered = true;
	c->exit_code = r->exit_code;
	c->session_end = r->ended;
	size_t len = r->out_len < sizeof c->out - 1 ? r->out_len : sizeof c->out - 1;
	memcpy(c->out, r->out, len);
	c->out[len] = '\0';
}

int faults_cell(bh_engine *e, bh_session *s, const char *code, uint32_t timeout_ms,
		struct faults_cell *c)
{
	memset(c, 0, sizeof *c);
	struct bh_cell cell = {.language = BH_LANG_PYTHON, .code = code, .code_len = strlen(code),
			       .timeout_ms = timeout_ms, .floor = BH_TIER_UNKNOWN};
	bh_error *err = NULL;
	if (bh_session_run(s, &cell, on_cell, c, &err) < 0) {
		on_cell(c, NULL, err);
		bh_error_free(err);
		return -1;
	}
	if (wait_for(e, &c->done, 120000, c->err, sizeof c->err) < 0)
		return -1;
	return c->answered ? 0 : -1;
}

struct act_wait {
	bool done;
	char err[512];
};

static void on_act(void *arg, const bh_error *err)
{
	struct act_wait *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
}

int faults_action(bh_engine *e, bh_session *s,
		  int (*act)(bh_session *, bh_action_cb, void *, bh_error **), char *why, size_t n)
{
	struct act_wait w = {0};
	bh_error *err = NULL;
	if (act(s, on_act, &w, &err) < 0) {
		snprintf(why, n, "refused: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	if (wait_for(e, &w.done, 120000, why, n) < 0)
		return -1;
	if (w.err[0]) {
		snprintf(why, n, "%s", w.err);
		return -1;
	}
	return 0;
}

static void on_close(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	struct act_wait *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
	else if (r->end_reason != BH_END_CLOSED)
		snprintf(w->err, sizeof w->err, "closed as %s", bh_end_reason_name(r->end_reason));
}

int faults_close(bh_engine *e, bh_session *s, char *why, size_t n)
{
	struct act_wait w = {0};
	bh_error *err = NULL;
	if (bh_session_close(s, on_close, &w, &err) < 0) {
		snprintf(why, n, "close refused: %s", err ? err->msg : "?");
		bh_error_free(err);
		return -1;
	}
	if (wait_for(e, &w.done, 60000, why, n) < 0)
		return -1;
	if (w.err[0]) {
		snprintf(why, n, "%s", w.err);
		return -1;
	}
	return 0;
}

int faults_sh(char *out, size_t n, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	if (!f) {
		out[0] = '\0';
		return -1;
	}
	size_t got = fread(out, 1, n - 1, f);
	out[got] = '\0';
	return pclose(f);
}

static void note(char *report, size_t n, int *count, const char *what, const char *detail)
{
	(*count)++;
	if (!report)
		return;
	size_t used = strlen(report);
	snprintf(report + used, n - used, "  %s: %.300s\n", what, detail);
}

int faults_leaks(bh_engine *e, const char *state_dir, char *report, size_t n)
{
	int count = 0;
	char out[16384];
	faults_sh(out, sizeof out,
		  /* With runsc's view of each (status, pid): what the next
		   * reader needs to tell a container the sweep missed from one
		   * it could not delete. */
		  "{ crun --root '%s' list -q 2>/dev/null; r='%s'; for c in $(runsc --root \"$r\" list "
		  "--quiet 2>/dev/null); do echo \"$c ($(runsc --root \"$r\" state \"$c\" 2>&1 | "
		  "grep -E '\\\"(status|pid)\\\"' | tr -d ' \\n'))\"; done; }",
		  bh_engine_runtime_root(e, BH_TIER_CONTAINER), bh_engine_runtime_root(e, BH_TIER_KERNEL));
	if (out[0])
		note(report, n, &count, "containers", out);
	faults_sh(out, sizeof out, "find /sys/fs/cgroup/*%s -mindepth 1 -maxdepth 1 -type d 2>/dev/null",
		  bh_engine_cgroup_parent(e));
	if (out[0])
		note(report, n, &count, "cgroups", out);
	/* "[/]tmp/…" matches the path but not this shell's own command line. */
	faults_sh(out, sizeof out, "grep -l -s -E -- '[%c]%s/' /proc/[0-9]*/cmdline || true", state_dir[0],
		  state_dir + 1);
	if (out[0])
		note(report, n, &count, "processes naming the state directory", out);
	faults_sh(out, sizeof out, "cat /sys/fs/cgroup/pids%s/*/cgroup.procs 2>/dev/null",
		  bh_engine_cgroup_parent(e));
	if (out[0])
		note(report, n, &count, "processes in the engine's cgroups", out);
	/* Bundles: only hibernated sessions keep theirs (the next call restores
	 * from bundle and image). */
	char rows[8192];
	faults_sh(rows, sizeof rows, "sqlite3 '%s' \"SELECT sandbox FROM sessions WHERE state = 'hibernated'\"",
		  bh_engine_store_path(e));
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/bundles", state_dir);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char needle[300];
		snprintf(needle, sizeof needle, "%s\n", de->d_name);
		if (!strstr(rows, needle))
			note(report, n, &count, "a bundle no hibernated session keeps", de->d_name);
	}
	if (d)
		closedir(d);
	struct bh_leak *leaks = NULL;
	size_t nl = bh_engine_leaks(e, &leaks);
	for (size_t i = 0; i < nl; i++) {
		char line[1024];
		snprintf(line, sizeof line, "%s %s: %s (%s)", bh_leak_kind_name(leaks[i].kind),
			 leaks[i].sandbox, leaks[i].reason, leaks[i].holder);
		note(report, n, &count, "engine leak report", line);
	}
	free(leaks);
	return count;
}
