/* Who is at the other end of an accepted connection, for the per-peer
 * connection limit: the uid of the process that made its socket. */
#ifndef BH_DAEMON_PEER_H
#define BH_DAEMON_PEER_H

#include <stdbool.h>
#include <sys/types.h>

#define PEER_UNKNOWN ((uid_t)-1) /* the lookup failed: such peers share one limit */

/* A unix socket says (SO_PEERCRED). A loopback TCP connection's other end
 * is a socket on this host, and the kernel's socket table
 * (NETLINK_SOCK_DIAG, the table `ss -e` reads) names its owner; a source
 * address would not do, every local user shares 127.0.0.1 and any of them
 * can bind another 127.x address. PEER_UNKNOWN when neither answers. */
uid_t peer_uid(int fd, bool tcp);

#endif
