/* The real broker (src/broker) for the tests of the sandbox side of egress
 * (tests/runtime/test_egress.c, tests/hostile), with a real TLS upstream and
 * a test CA (tests/broker/broker_harness.c: api.test on 127.0.0.2, the
 * credential added as Authorization). The engine is handed tb_ops, which
 * record every call the engine makes (open, hold, release, close) and pass
 * it on to the real broker; every request the broker carried or refused is
 * logged from its note ("request FP [PROFILE] METHOD ORIGIN ROUTE -> STATUS
 * REFUSAL") and, once tb_engine() named one, becomes an event of that
 * engine as the daemon's notes do. Profiles: "weather" and "maps", both the
 * harness's (every route of api.test), allowed in sessions. */
#ifndef BH_TEST_BROKER_H
#define BH_TEST_BROKER_H

#include "broker_harness.h"
#include "egress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_SESSIONS 16
#define TB_LOG 256

struct tb_session {
	char fp[65];
	char path[4200];
	bool live;
};

struct test_broker {
	pthread_mutex_t mu;
	char ca_path[4200]; /* the broker's interception CA (host side) */
	char origin[64];    /* "https://api.test:PORT" */
	struct fixture f;   /* the broker, the upstreams, the test CA */
	struct bh_egress_profile weather, maps;
	bh_engine *engine;  /* notes become its events when set */
	struct tb_session s[TB_SESSIONS];
	char log[TB_LOG][600];
	size_t n_log;
};

extern const struct bh_egress_ops tb_ops;
/* Starts the upstreams and the real broker (files below dir's test root);
 * tb_fini stops them and removes the files. */
void tb_init(struct test_broker *b, const char *dir);
void tb_fini(struct test_broker *b);
/* Notes become events of e from now on (NULL: no longer; before it closes). */
void tb_engine(struct test_broker *b, bh_engine *e);
/* How many log lines start with prefix (and hold needle, when given). */
size_t tb_count(struct test_broker *b, const char *prefix, const char *needle);
/* The log, one line each (a buffer the next call reuses). */
char *tb_dump(struct test_broker *b);
/* The host path of the socket of the session fp ("" when none is open). */
const char *tb_socket_of(struct test_broker *b, const char *fp);

#endif
