/* The host-side broker (src/broker/): carries a sandbox's HTTP to the
 * upstreams its profile allows, adds the credential on the host side and
 * implements struct bh_egress_ops for the engine (include/bulkhead/egress.h).
 *
 * The daemon and the CLI start one broker and hand the engine
 * bh_broker_ops() with the broker as its arg; the engine links none of this.
 * The broker runs a thread of its own (a poll loop over every session's
 * socket and idle connection) and a bounded pool of workers that carry one
 * request at a time; an idle session costs no thread.
 *
 * Nothing here prints: what the broker has to say goes to cfg->log, what it
 * carried to cfg->note (metadata only, never a body, a query value or a
 * credential). Fallible functions return < 0 and fill *err. */
#ifndef BULKHEAD_BROKER_H
#define BULKHEAD_BROKER_H

#include <stdint.h>
#include <sys/socket.h>

#include "bulkhead.h"
#include "egress.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bh_broker bh_broker;

/* The profile named `name` in the set current now, or NULL; *keep is what
 * keeps it alive (the daemon: a reference to the set), given back to
 * unkeep once the broker has copied the profile, before hold returns. A
 * hold goes on under the copy, whatever a reload does. Called on the
 * engine's thread (from hold). */
typedef const struct bh_egress_profile *(*bh_broker_lookup_fn)(void *arg, const char *name,
								void **keep);
typedef void (*bh_broker_unkeep_fn)(void *arg, void *keep);
/* One request ended (passed or refused); called on a broker thread. */
typedef void (*bh_broker_note_fn)(void *arg, const struct bh_egress_note *note);
/* The addresses `host` resolves to, at most max, into out (each a
 * sockaddr_in or sockaddr_in6 in a sockaddr_storage); the count, or < 0.
 * NULL in the config: getaddrinfo. Tests map their names to loopback
 * addresses with it, as curl's --resolve does. */
typedef int (*bh_broker_resolve_fn)(void *arg, const char *host, uint16_t port,
				    struct sockaddr_storage *out, int max);

struct bh_broker_config {
	/* Where the interception CA lives: ca.key (0600) and ca.pem, made at
	 * the first start and kept. The directory is made 0700 if missing. */
	const char *ca_dir;
	/* The CAs upstream certificates are verified against (PEM file);
	 * NULL: the system's store. */
	const char *upstream_ca_file;
	bh_broker_lookup_fn lookup;
	bh_broker_unkeep_fn unkeep; /* may be NULL */
	void *lookup_arg;
	bh_broker_note_fn note; /* may be NULL */
	void *note_arg;
	bh_log_fn log;          /* may be NULL */
	void *log_arg;
	bh_broker_resolve_fn resolve; /* NULL: getaddrinfo */
	void *resolve_arg;
	/* Workers carrying requests at once, over every session (0: 16). */
	unsigned workers;
	/* A client's whole request head, and then its whole body, must arrive
	 * within this (0: 10 s); a kept-alive connection idle this long is
	 * closed (0: 30 s). */
	uint32_t client_timeout_ms;
	uint32_t idle_timeout_ms;
};

int bh_broker_start(const struct bh_broker_config *cfg, bh_broker **out, bh_error **err);
/* The engine's view of the broker: pass the broker as bh_config.egress_arg. */
const struct bh_egress_ops *bh_broker_ops(void);
/* Cuts every session, joins the threads, frees the broker. NULL is fine. */
void bh_broker_stop(bh_broker *b);

#ifdef __cplusplus
}
#endif

#endif
