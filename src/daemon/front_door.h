/* What a TCP call's front door says before anything is dispatched: whether
 * its Host names this daemon (DNS rebinding), who its client is when a
 * trusted proxy forwarded it, and which client its certificate names. */
#ifndef BH_DAEMON_FRONT_DOOR_H
#define BH_DAEMON_FRONT_DOOR_H

#include <stdbool.h>
#include <stddef.h>

struct bh_daemon_config;
struct call;
struct client_principal;

/* At start: every --trusted-proxy is an IP address, every --allowed-host a
 * host name or address (no port, no path). */
int front_door_check_config(const struct bh_daemon_config *cfg, char **why);
/* NULL when the Host (or a trusted proxy's X-Forwarded-Host) names this
 * daemon and no Origin came; else the refusal's text. Fills c's client
 * address and forwarded proto as a side effect (the peer's own address
 * unless a trusted proxy said otherwise). */
const char *front_door_refusal(struct call *c);
/* The client certificate's say on who c is, once a clients table exists.
 * 0: it says nothing (none presented, no --tls-client-ca); 1: *who is its
 * client; -1: refused, *msg the refusal's text (not verified, or no
 * clients line names its subject). */
int front_door_certificate(struct call *c, struct client_principal *who, char *msg, size_t n);

#endif
