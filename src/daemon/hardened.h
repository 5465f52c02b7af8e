/* serve --hardened: the daemon refuses to start in an unsafe shape, and
 * says every way in which it is unsafe at once (an operator fixes them all
 * in one go, not one per restart). What the settings show is checked before
 * anything opens; the kernel tier's proof needs the engine, so the verdict
 * comes after it opened and before any listener binds. */
#ifndef BH_DAEMON_HARDENED_H
#define BH_DAEMON_HARDENED_H

#include "bulkhead.h"
#include "daemon.h"

#include <stdbool.h>
#include <stddef.h>

#define HARDENED_MAX_VIOLATIONS 16
#define HARDENED_PROOF_DEADLINE_MS 180000 /* a first runsc proof takes seconds */

struct hardened {
	bool on; /* cfg->hardened */
	bool reported;
	size_t n;
	char *lines[HARDENED_MAX_VIOLATIONS];
};

/* Every violation the settings alone show. */
void hardened_check_settings(struct hardened *h, const struct bh_daemon_config *cfg);
/* A violation found on the way (the clients file did not load): takes *why. */
void hardened_take(struct hardened *h, char **why);
/* Waits (bounded, and no longer once sigfd holds SIGTERM or SIGINT) for
 * the tiers' proofs and notes a kernel tier that is not offered; then, when
 * anything was found, logs each violation on its own line and returns -1
 * with *why saying how many. */
int hardened_verdict(struct hardened *h, bh_engine *e, int sigfd, char **why);
/* For a cleanup attribute: logs what was found when setup stopped for
 * another reason before the verdict, then frees. */
void hardened_done(struct hardened *h);

#endif
