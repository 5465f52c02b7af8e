/* The broker's insides, shared by its files (never installed). */
#ifndef BH_BROKER_PRIV_H
#define BH_BROKER_PRIV_H

#include "broker.h"

#include "base.h"
#include "http.h"
#include "target.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdarg.h>

/* ---- errors and logs (broker_error.c): the engine's convention, without
 * its private header ---- */
int broker_fail(bh_error **err, enum bh_error_code code, int sys_errno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
struct bh_broker;
void broker_log(struct bh_broker *b, enum bh_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- profiles copied at hold time (profile_copy.c) ---- */
struct bh_egress_profile *profile_copy(const struct bh_egress_profile *p);
void profile_free(struct bh_egress_profile *p);
bool profile_has_origin(const struct bh_egress_profile *p, const char *origin);

/* ---- the credential (credential.c) ---- */
/* Mints the credential as its source says: a file's contents, an
 * environment variable, a command's stdout (each trimmed of its trailing
 * newline). 0 and *out (NONE gives ""), or -1 and *why (never the secret). */
int credential_mint(const struct bh_egress_credential *c, char **out, const char **why);

/* ---- the interception CA (ca.c) ---- */
struct ca_leaf;
struct ca {
	EVP_PKEY *key;
	X509 *cert;
	EVP_PKEY *leaf_key; /* one key for every leaf, made at start */
	char *pem_path;
	pthread_mutex_t mu;
	struct ca_leaf *leaves; /* minted leaves by host, kept */
};
int ca_open(struct ca *ca, const char *dir, bh_error **err);
void ca_close(struct ca *ca);
/* The leaf certificate for host (a new reference), or NULL. */
X509 *ca_leaf(struct ca *ca, const char *host);

/* ---- byte streams with deadlines (stream.c): fds are non-blocking ---- */
struct stream {
	int fd;
	SSL *ssl; /* NULL: plain */
};
enum { STREAM_EOF = 0, STREAM_ERROR = -1, STREAM_TIMEOUT = -2 };
/* > 0 bytes read, STREAM_EOF, STREAM_ERROR or STREAM_TIMEOUT (deadline in
 * now_mono_ms terms). */
ssize_t stream_read(struct stream *s, void *buf, size_t n, uint64_t deadline_ms);
int stream_write(struct stream *s, const void *buf, size_t n, uint64_t deadline_ms);
/* TLS handshakes under a deadline: 0, or STREAM_ERROR / STREAM_TIMEOUT. */
int stream_accept(struct stream *s, uint64_t deadline_ms);
int stream_connect(struct stream *s, uint64_t deadline_ms);
bool stream_pending(const struct stream *s);

/* ---- sessions, holds, connections (broker.c) ---- */
struct hold {
	uint64_t id;
	struct bh_egress_profile *profile; /* a copy, ours */
	uint32_t calls, in_flight;
	uint64_t bytes_out, bytes_in;
	bool released;
	unsigned refs; /* requests carrying it, and the session's list */
	pthread_mutex_t mint_mu; /* a command mints outside the broker's lock */
	char *credential;        /* NULL until the first request mints it */
	uint64_t minted_ms;
	/* plimsoll's circuit breaker: an upstream that answered 429 or 503 is
	 * not called again under this hold until its Retry-After (at most
	 * 30 s) has passed. Under the broker's lock. */
	struct {
		char *origin;
		uint64_t until_ms;
	} backoff[8];
};

struct conn;
struct session {
	char *fp;
	char *path;
	int listen_fd;
	struct hold **holds; /* the newest is the one served */
	size_t n_holds;
	struct conn *conns;
	size_t n_conns, n_busy;
	bool closing;
	struct session *next;
};

struct conn {
	struct session *s;
	struct stream st;
	struct buf in;          /* read, not yet consumed */
	bool tunneled;          /* after CONNECT: TLS to the sandbox */
	struct target tunnel;   /* the CONNECT target */
	bool busy;              /* with a worker (else idle in the poll set) */
	bool cut;               /* close_session or release cut it */
	int up_fd;              /* the upstream socket in flight, or -1 */
	uint64_t hold_id;       /* the hold of the request in flight, or 0 */
	uint64_t idle_since_ms;
	struct conn *next, *next_ready;
};

struct bh_broker {
	struct bh_broker_config cfg;
	char *ca_dir, *upstream_ca_file;
	struct ca ca;
	SSL_CTX *server_ctx;   /* toward the sandbox, after CONNECT */
	SSL_CTX *upstream_ctx; /* toward the upstream, verified */
	pthread_mutex_t mu;
	pthread_cond_t ready_cv;
	struct session *sessions;
	struct conn *ready, *ready_tail; /* for the workers */
	int wake_fd;                      /* eventfd: the poll thread looks again */
	bool stopping;
	pthread_t poller;
	pthread_t *workers;
	unsigned n_workers;
};

void broker_wake(struct bh_broker *b);
/* The hold a request is served under, a reference taken; NULL: none. */
struct hold *session_hold_get(struct bh_broker *b, struct session *s);
void hold_put(struct bh_broker *b, struct hold *h);
/* Marks the conn's in-flight upstream socket (so a cut can reach it). */
void conn_set_upstream(struct bh_broker *b, struct conn *c, int fd, uint64_t hold_id);

/* ---- one request, on a worker (request.c) ---- */
/* Serves what the conn has to say: true to keep the connection for more. */
bool request_serve(struct bh_broker *b, struct conn *c);

/* ---- the upstream call (upstream.c) ---- */
struct upstream_answer {
	struct http_head head;
	struct buf body;
	int status;         /* the broker's own when it failed */
	const char *failure; /* NULL: the upstream answered */
};
/* Sends `req` (the whole request, head and body) to host:port over TLS
 * verified for host, and reads the whole answer (its body capped). */
void upstream_call(struct bh_broker *b, struct conn *c, uint64_t hold_id, const char *host,
		   uint16_t port, const struct buf *req, bool head_only, uint64_t body_cap,
		   uint32_t timeout_ms, struct upstream_answer *out);
void upstream_answer_free(struct upstream_answer *a);

#endif
