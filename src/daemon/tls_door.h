/* The TLS listener's own accept: every connection's first byte is looked at
 * before libmicrohttpd gets it. A TLS handshake (0x16) goes on to
 * libmicrohttpd; anything else is a cleartext request to a TLS port, answered
 * in cleartext with a Connect error that says to use https:// (GnuTLS
 * would only drop it, and the caller would see an empty reply). */
#ifndef BH_DAEMON_TLS_DOOR_H
#define BH_DAEMON_TLS_DOOR_H

#include <microhttpd.h>
#include <poll.h>
#include <stddef.h>

#define TLS_DOOR_MAX 64            /* connections waiting for their first byte */
#define TLS_DOOR_WAIT_MS 10000u    /* as the header deadline */

struct tls_door;

struct tls_door *tls_door_new(int listen_fd, struct MHD_Daemon *mhd);
void tls_door_free(struct tls_door *t);
/* The listening socket and the waiting connections, to poll for POLLIN. */
size_t tls_door_pollfds(const struct tls_door *t, struct pollfd *p, size_t max);
/* After the poll: accepts, hands over or answers, drops the expired. */
void tls_door_process(struct tls_door *t);

#endif
