/* Egress inside a sandbox (issue 18), the part the engine and the init
 * share: where the broker's socket is mounted and the loopback address the
 * init relays to it. The engine mounts the socket only in sandboxes that may
 * use a profile; the init relays only when it finds the socket there, so a
 * sandbox without one has neither the socket nor the listener.
 * include/bulkhead/egress.h names the same two (the engine checks they
 * agree); the init may include only this folder. */
#ifndef BH_PROTO_EGRESS_RELAY_H
#define BH_PROTO_EGRESS_RELAY_H

/* The directory the engine binds read-only at /run: the socket the broker
 * listens on and the CA bundle the sandbox trusts (the system's and the
 * broker's interception CA). */
#define BH_PROTO_EGRESS_DIR "/run"
#define BH_PROTO_EGRESS_SOCKET "/run/host-api.sock"
#define BH_PROTO_EGRESS_CA_FILE "/run/host-api-ca.pem"
/* 127.0.0.1:BH_PROTO_EGRESS_RELAY_PORT, on the sandbox's own loopback. */
#define BH_PROTO_EGRESS_RELAY_PORT 3128
#define BH_PROTO_EGRESS_PROXY_URL "http://127.0.0.1:3128"
/* Connections the init relays at once (the broker serves 16 in flight per
 * hold; a few more are kept for ones closing). */
#define BH_PROTO_EGRESS_RELAY_MAX 24

#endif
