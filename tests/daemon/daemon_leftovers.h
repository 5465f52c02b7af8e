/* inflight: a daemon killed (kill -9, its warden too) while it holds a
 * paused sandbox and a running cell, for the tests of what the next opener
 * of its state directory sees (tests/daemon/test_leftovers.c, the console's
 * screen test). */
#ifndef BH_TEST_DAEMON_LEFTOVERS_H
#define BH_TEST_DAEMON_LEFTOVERS_H

#include "daemon_harness.h"

/* The cell running when the daemon dies (one line: a screen shows it whole). */
#define DEAD_DAEMON_RUNNING_CODE \
	"import time; print('exfil chunk', 0, flush=True); time.sleep(600)"

struct dead_daemon {
	char state[4200];           /* the state directory, resolved */
	char paused_fp[65], paused_sandbox[64];
	char running_fp[65];
	char cgroup_parent[64];     /* "/bulkhead/<key>" */
};

/* Starts nothing: d is a started daemon. Opens and pauses one session, starts
 * the long cell in another, waits until its intent is committed, then
 * kill -9s the warden and the daemon by pid (d->pid is 0 after). */
void daemon_kill_with_leftovers(struct daemon *d, struct dead_daemon *out);
/* What the host holds of it now: the runtimes' lists with states, and the
 * engine's cgroups (caller frees). */
char *dead_daemon_host(const struct dead_daemon *dd);
/* Waits (20 s at most) until the host holds of it exactly want again: a
 * daemon restarted on the directory proves its tiers with sandboxes of its
 * own in the same runtimes and cgroup parent, gone once the proofs end. */
void dead_daemon_host_back_to(const struct dead_daemon *dd, const char *want);
/* Every file of the state directory with its size and modification time
 * (caller frees): equal before and after means nothing was written. */
char *dead_daemon_files(const struct dead_daemon *dd);
/* ---- report: one turn of a crash loop: d (started) opens and pauses one
 * session, then its warden and it are killed (kill -9); paused_fp and
 * paused_sandbox name the session, running_fp is "". ---- */
void daemon_kill_holding_a_paused_sandbox(struct daemon *d, struct dead_daemon *out);
/* `bulkhead ARGS` with its output (both streams; caller frees) and exit
 * status; env: assignments before it ("" or NULL for none). */
char *dead_daemon_cli(int *status, const char *env, const char *args);

#endif
