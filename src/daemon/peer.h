/* Who is at the other end of an accepted connection, for the per-peer
 * connection limit: the uid of the process that made its socket. */
#ifndef BH_DAEMON_PEER_H
#define BH_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define PEER_UNKNOWN ((uid_t)-1) /* the lookup failed: such peers share one limit */

/* A unix socket says (SO_PEERCRED). A loopback TCP connection's other end
 * is a socket on this host, and the kernel's socket table
 * (NETLINK_SOCK_DIAG, the table `ss -e` reads) names its owner; a source
 * address would not do, every local user shares 127.0.0.1 and any of them
 * can bind another 127.x address. PEER_UNKNOWN when neither answers. */
uid_t peer_uid(int fd, bool tcp);

/* The per-peer limit's key. A peer on this machine is its uid (above); a
 * TCP peer off it has no uid here, so it is its address: an IPv4 address
 * whole, an IPv6 one by its /64 (one host is given a /64 and can pick any
 * address in it). Behind a reverse proxy every caller is the proxy's
 * address: the proxy bounds its own clients. */
struct peer_id {
	bool remote;
	uid_t uid;          /* !remote: the uid, or PEER_UNKNOWN */
	char addr[64];      /* remote: "192.0.2.7" or "2001:db8:1:2::/64" */
};
void peer_identify(int fd, bool tcp, struct peer_id *out);
/* sa off this machine: out->remote with its key, true; loopback (IPv4
 * 127/8, ::1, or either mapped into IPv6): false, out untouched. */
bool peer_remote_key(const struct sockaddr *sa, socklen_t len, struct peer_id *out);
bool peer_same(const struct peer_id *a, const struct peer_id *b);
/* For the refusal and the log: "your user (uid 0)", "your address 192.0.2.7". */
void peer_describe(const struct peer_id *p, char *buf, size_t n);

#endif
