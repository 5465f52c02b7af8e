/* A real small HTTP server on the host side of the egress socket, for the
 * tests of the sandbox side of egress (tests/runtime/test_egress.c,
 * tests/hostile): it implements struct bh_egress_ops, listens on the socket
 * the engine names for each session, records every call the engine makes
 * of it and every request that reaches it (with the profile held then),
 * and answers 200 while a hold is active, 503 otherwise, as the broker's
 * contract says. The broker itself (TLS, routes, credentials) is tested in
 * its own suite; this one is no mock of the engine. */
#ifndef BH_TEST_BROKER_H
#define BH_TEST_BROKER_H

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
	int fd, stop[2];
	pthread_t th;
	bool live;
	uint64_t holds[8]; /* active hold ids (0: free) */
	char profile[8][72];
	struct test_broker *b;
};

struct test_broker {
	pthread_mutex_t mu;
	char ca_path[4200];
	struct tb_session s[TB_SESSIONS];
	char log[TB_LOG][600];
	size_t n_log;
};

extern const struct bh_egress_ops tb_ops;
/* Empties b and makes its CA (a real certificate, openssl) in a directory
 * below dir; tb_fini removes it. */
void tb_init(struct test_broker *b, const char *dir);
void tb_fini(struct test_broker *b);
/* How many log lines start with prefix (and hold needle, when given). */
size_t tb_count(struct test_broker *b, const char *prefix, const char *needle);
/* The log, one line each (a buffer the next call reuses). */
char *tb_dump(struct test_broker *b);
/* The host path of the socket of the session fp ("" when none is open). */
const char *tb_socket_of(struct test_broker *b, const char *fp);

#endif
