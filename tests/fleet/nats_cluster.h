/* A real nats-server cluster on loopback for the fleet tests (the fleet
 * library's, the daemon's and the console's).
 *
 *   struct nats_cluster *c = nats_cluster_start(3);   // 3 nodes, JetStream ready
 *   nats_cluster_urls(c)        "nats://127.0.0.1:p0,nats://127.0.0.1:p1,..."
 *   nats_cluster_url(c, i)      one node's client URL
 *   nats_cluster_kill(c, i)     SIGKILL node i (and reap it)
 *   nats_cluster_restart(c, i)  start node i again: same name, ports, store
 *   nats_cluster_cut(c, i)      node i cut off from its routes (a partition)
 *   nats_cluster_heal(c, i)     its routes let through again
 *   nats_cluster_stop(c)        every node stopped (by pid), everything removed
 *
 * Every port is chosen at run time (nothing fixed: tests run side by side).
 * The nodes' configs, JetStream stores and logs live in a directory
 * nats-XXXXXX under $BULKHEAD_TEST_ROOT. Each node runs with max_payload
 * 9 MiB (bulkhead's bodies go to 8 MiB; NATS's default is 1 MiB).
 *
 * Routes go through small TCP relays this process owns, one per ordered
 * pair of nodes (node j's route to node i is j's own relay to i); cutting
 * node i closes every relayed connection to or from it and refuses new ones,
 * a real partition on loopback. The nodes advertise a route address that
 * refuses connections, so no gossiped (implicit) route can go around the
 * relays, and no client URL is advertised (clients use the URLs named).
 *
 * Clean-up on a failing test too: a cluster not stopped is stopped at exit
 * (atexit), and each node dies with the process that started it
 * (PR_SET_PDEATHSIG: start and restart nodes from the test's own thread,
 * the one whose end kills them), so a crashed test leaves no nats-server
 * behind. The functions fail the test (criterion) when they cannot do what
 * they say. */
#ifndef BH_NATS_CLUSTER_H
#define BH_NATS_CLUSTER_H

#include <stdbool.h>
#include <sys/types.h>

#define NATS_CLUSTER_MAX 5

struct nats_cluster;

struct nats_cluster *nats_cluster_start(unsigned n);
/* The same with the nodes' max_payload given (0: 9 MiB), e.g. NATS's own
 * default of 1 MiB to see what a fleet on a server run without it says. */
struct nats_cluster *nats_cluster_start_with(unsigned n, unsigned max_payload);
const char *nats_cluster_urls(const struct nats_cluster *c);
const char *nats_cluster_url(const struct nats_cluster *c, unsigned i);
unsigned nats_cluster_size(const struct nats_cluster *c);
pid_t nats_cluster_pid(const struct nats_cluster *c, unsigned i); /* 0: not running */
const char *nats_cluster_dir(const struct nats_cluster *c);
void nats_cluster_kill(struct nats_cluster *c, unsigned i);
void nats_cluster_restart(struct nats_cluster *c, unsigned i);
void nats_cluster_cut(struct nats_cluster *c, unsigned i);
void nats_cluster_heal(struct nats_cluster *c, unsigned i);
/* How many route connections the relays carry now to or from node i. */
unsigned nats_cluster_routes(struct nats_cluster *c, unsigned i);
/* Waits (bounded by timeout_ms) until JetStream answers through the URLs of
 * the running nodes: a probe bucket is created and deleted. true when it did. */
bool nats_cluster_wait_jetstream(struct nats_cluster *c, unsigned timeout_ms);
void nats_cluster_stop(struct nats_cluster *c);

#endif
