/* report: a crash loop's leftovers are bounded. An engine killed again and
 * again on one state directory, each restart keeping what the one before
 * left (keep_leftovers: the console, `serve` without --reap-leftovers),
 * would pile up paused sandboxes, rows and intents without end. The rule:
 * the leftovers of the BH_LEFTOVERS_KEPT_ENGINES newest dead engines are
 * kept as they are (the crash being looked into, and the ones just before
 * it); each finding of an older dead engine is first captured — the host's
 * view, as `bulkhead capture` takes it — into STATE/captures/, and only
 * then reaped, with the reap's event. A finding whose capture fails is
 * kept. Orphans, images and cgroups name no engine and are left to the
 * operator. */
#include "engine_priv.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool older(const int64_t *pids, size_t n, int64_t pid)
{
	for (size_t i = BH_LEFTOVERS_KEPT_ENGINES; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* The host's view of the finding, into STATE/captures/engine-PID-NAME. */
static int capture_first(bh_engine *e, const struct bh_leak *l, int64_t pid, bh_error **err)
{
	const char *name = *l->sandbox && l->kind != BH_LEAK_INTERRUPTED ? l->sandbox : l->fingerprint;
	cleanup_free char *parent = xasprintf("%s/%s", e->state_dir, BH_LEFTOVERS_CAPTURES);
	if (mkdir(parent, 0700) < 0 && errno != EEXIST)
		return bh_fail(err, BH_E_SYSTEM, errno, "make %s", parent);
	char stamp[32];
	time_t now = (time_t)(now_real_ms() / 1000);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	cleanup_free char *dir = xasprintf("%s/engine-%lld-%.64s-%s%s", parent, (long long)pid, name,
					   stamp, l->kind == BH_LEAK_INTERRUPTED ? "-call" : "");
	struct bh_capture_target t;
	bh_capture *cap = NULL;
	if (bh_engine_capture_target(e, name, &t, err) < 0 ||
	    bh_capture_begin(e, &t, dir, &cap, err) < 0) {
		bh_capture_free(cap);
		return -1;
	}
	bh_capture_missing(cap, "processes-init.txt, work-listing.txt",
			   "captured by the engine at open, before reaping an older dead engine's "
			   "leftovers of a crash loop: no init of this engine to ask");
	char sha[65];
	int rc = bh_capture_finish(cap, sha, err);
	bh_capture_free(cap);
	return rc;
}

void leftovers_bound(bh_engine *e)
{
	if (!e->store)
		return;
	int64_t *pids = NULL;
	size_t n_pids = store_dead_engines(e->store, (int64_t)getpid(), &pids);
	if (n_pids <= BH_LEFTOVERS_KEPT_ENGINES) {
		free(pids);
		return;
	}
	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(e, &v);
	struct bh_leak *chosen = calloc(n ? n : 1, sizeof *chosen);
	if (!chosen)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind != BH_LEAK_ABANDONED && v[i].kind != BH_LEAK_GHOST &&
		    v[i].kind != BH_LEAK_INTERRUPTED)
			continue;
		int64_t pid = store_finding_engine(e->store, &v[i]);
		if (!pid || !older(pids, n_pids, pid))
			continue;
		bh_error *err = NULL;
		if (capture_first(e, &v[i], pid, &err) < 0) {
			bh_log(e, BH_LOG_WARN, "kept %s %s of dead engine %lld: its capture failed: %s",
			       bh_leak_kind_name(v[i].kind), *v[i].sandbox ? v[i].sandbox : v[i].fingerprint,
			       (long long)pid, err->msg);
			bh_error_free(err);
			continue;
		}
		chosen[k++] = v[i];
	}
	free(v);
	free(pids);
	if (k) {
		struct bh_leak *reaped = NULL;
		e->bounded_reaped += bh_engine_reap(e, chosen, k, &reaped);
		free(reaped);
		bh_log(e, BH_LOG_WARN,
		       "a crash loop: %zu finding%s of dead engines older than the %u newest captured "
		       "into %s/%s/ and reaped",
		       e->bounded_reaped, e->bounded_reaped == 1 ? "" : "s", BH_LEFTOVERS_KEPT_ENGINES,
		       e->state_dir, BH_LEFTOVERS_CAPTURES);
		leftovers_survey(e, false);
	}
	free(chosen);
}
