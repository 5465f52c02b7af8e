/* ---- pgrant: a real `bulkhead serve --profiles FILE --upstream-ca PEM` (the
 * daemon starts the real broker) in front of the broker harness's TLS
 * upstream on 127.0.0.2 (tests/broker/broker_harness.h: its test CA, the
 * credential in our environment, which the forked daemon inherits), with two
 * profiles for it: "proj" (allowed in sessions) and "per-call" (not), both
 * GET /v1/items and /v1/items/ *, the credential as Authorization, for every
 * principal. Shared by the daemon's and the client's project-grant tests.
 * ---- */
#ifndef BH_TEST_GRANT_DAEMON_H
#define BH_TEST_GRANT_DAEMON_H

#include "broker_harness.h"
#include "daemon_harness.h"

/* fixture_init(f), the profiles file in f->dir, daemon_start(d) on tier. */
void grant_daemon_start(struct daemon *d, struct fixture *f, const char *tier);
void grant_daemon_stop(struct daemon *d, struct fixture *f);
/* fetch.py: prints the status and body of GET /v1/items (caller frees). */
char *grant_fetch_py(const struct fixture *f);

#endif
