/* Leaks on a copy of a store (light, B24): what a store opened read-only
 * says was left live by an engine that is gone — no runtime asked, no host
 * cgroup read, nothing written. A live row (neither ended nor hibernated: a
 * hibernated one is an image the next engine re-adopts) is a leak when the
 * engine pid it records does not run, or runs as something that is not a
 * bulkhead engine (the pid was reused). Each names the engine's pid and its
 * last sign of life: the newest time its rows and their events carry (the
 * definition the engine's own survey of a dead engine uses). */
#include "engine_priv.h"
#include "store_priv.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Whether pid runs as a bulkhead engine (its command's name): a pid that
 * does not run, or runs something else, holds no row. */
static bool engine_runs(int64_t pid, char *what, size_t n)
{
	if (pid <= 0 || pid > INT32_MAX) {
		snprintf(what, n, "no engine pid");
		return false;
	}
	if (kill((pid_t)pid, 0) < 0 && errno != EPERM) {
		snprintf(what, n, "not running");
		return false;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%lld/comm", (long long)pid);
	cleanup_free char *comm = read_file(path, 256, NULL);
	if (comm)
		comm[strcspn(comm, "\n")] = '\0';
	if (comm && !strncmp(comm, "bulkhead", 8))
		return true;
	snprintf(what, n, "now running %.32s, not an engine", comm && *comm ? comm : "something else");
	return false;
}

static void utc(char *buf, size_t n, int64_t ms)
{
	if (ms <= 0) {
		snprintf(buf, n, "never");
		return;
	}
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

struct found {
	struct bh_leak *v;
	size_t n, cap;
};

int bh_history_leaks(bh_history *h, struct bh_leak **out, size_t *n_out, bh_error **err)
{
	*out = NULL;
	*n_out = 0;
	struct bh_store *s = history_store(h);
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT fingerprint, sandbox, runtime, state, engine_pid, created_ms FROM sessions "
		"WHERE " STORE_ROW_LIVE " ORDER BY created_ms DESC LIMIT 1000",
		err);
	if (!st)
		return -1;
	struct found f = {0};
	int rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 4);
		char what[96];
		if (engine_runs(pid, what, sizeof what))
			continue; /* a live engine holds it: not this copy's to call a leak */
		if (f.n == f.cap) {
			f.cap = f.cap ? 2 * f.cap : 8;
			struct bh_leak *grown = realloc(f.v, f.cap * sizeof *f.v);
			if (!grown)
				abort();
			f.v = grown;
		}
		struct bh_leak *l = &f.v[f.n++];
		memset(l, 0, sizeof *l);
		l->kind = BH_LEAK_ABANDONED;
		store_copy_col(st, 0, l->fingerprint, sizeof l->fingerprint);
		store_copy_col(st, 1, l->sandbox, sizeof l->sandbox);
		store_copy_col(st, 2, l->runtime, sizeof l->runtime);
		l->first_seen_ms = sqlite3_column_int64(st, 5);
		char state[16];
		store_copy_col(st, 3, state, sizeof state);
		/* Filled after the loop: a second statement mid-step is a
		 * one-off, and the pid is kept in holder until then. */
		snprintf(l->holder, sizeof l->holder, "%lld", (long long)pid);
		snprintf(l->reason, sizeof l->reason, "%s under engine %lld, %s", state,
			 (long long)pid, what);
	}
	if (store_read_end(s, st, rc, "read the sessions", err) < 0) {
		free(f.v);
		return -1;
	}
	for (size_t i = 0; i < f.n; i++) {
		struct bh_leak *l = &f.v[i];
		long long pid = strtoll(l->holder, NULL, 10);
		char when[40];
		utc(when, sizeof when, store_engine_last_sign(s, pid));
		snprintf(l->holder, sizeof l->holder, "engine pid %lld", pid);
		size_t len = strlen(l->reason);
		snprintf(l->reason + len, sizeof l->reason - len,
			 "; its last sign of life %s (from the store alone: the copy's host is not "
			 "looked at)",
			 when);
	}
	*out = f.v;
	*n_out = f.n;
	return 0;
}
