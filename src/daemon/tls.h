/* The daemon's TLS (serve --tls-cert/--tls-key/--tls-client-ca), through
 * libmicrohttpd's GnuTLS: TLS 1.2 or newer only; the pair handed to each
 * handshake by a certificate callback, so SIGHUP can swap in a new pair
 * without closing the listener; client certificates asked for (never
 * required: a token alone still works) and verified here, per request. */
#ifndef BH_DAEMON_TLS_H
#define BH_DAEMON_TLS_H

#include "daemon.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#define DAEMON_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define DAEMON_TLS_FILE_MAX (1u << 20) /* bytes of a PEM file we read */
#define DAEMON_TLS_SUBJECT_MAX 512     /* bytes of a client certificate's subject */

struct daemon_tls;

/* Reads and checks cfg's pair (the key must be the certificate's) and the
 * client CA file. -1 with *why naming the file and what is wrong. */
int daemon_tls_load(const struct bh_daemon_tls *cfg, struct daemon_tls **out, char **why);
/* SIGHUP: reads the pair again. On any error the pair in use stays and
 * *why says what is wrong with the new files. */
int daemon_tls_reload(struct daemon_tls *t, char **why);
void daemon_tls_free(struct daemon_tls *t);

/* The flags and options a TLS listener's MHD_start_daemon takes (after its
 * own, before MHD_OPTION_END): MHD_USE_TLS and an MHD_OPTION_ARRAY of these. */
size_t daemon_tls_mhd_options(struct daemon_tls *t, struct MHD_OptionItem *ops, size_t max);

/* What the connection's client certificate says. */
enum daemon_peer_cert {
	DAEMON_PEER_NO_CERT = 0, /* none presented (or no client CA configured) */
	DAEMON_PEER_VERIFIED,    /* signed by the client CA, in its validity: *subject filled */
	DAEMON_PEER_INVALID,     /* presented but does not verify: *subject says why */
};
enum daemon_peer_cert daemon_tls_peer(const struct daemon_tls *t, struct MHD_Connection *conn,
				      char *subject, size_t n);

/* Whether host is a loopback address or name (the cleartext rule). */
bool daemon_listen_is_loopback(const char *listen);

#endif
