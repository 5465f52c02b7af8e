/* What the broker's tests share: a test CA made with the openssl CLI, real
 * TLS upstreams on loopback addresses (127.0.0.2, 127.0.0.3) that record
 * what they saw, a broker with a session and a profile built in memory, and
 * clients that speak to the session's unix socket (raw bytes for the
 * hostile cases, TLS through CONNECT, curl and Python for the real ones). */
#ifndef BH_BROKER_HARNESS_H
#define BH_BROKER_HARNESS_H

#include "broker.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define TEST_CREDENTIAL "s3cr3t-token-7f1d2c"
#define TEST_CRED_ENV "BH_BROKER_TEST_CREDENTIAL"

/* One upstream: a TLS server on addr with a certificate for cert_name. */
struct upstream {
	char addr[32];
	uint16_t port;
	int listen_fd, stop_fd;
	void *ctx; /* SSL_CTX */
	pthread_t thread;
	pthread_mutex_t mu;
	int hits;               /* requests it read */
	char last_line[1024];   /* the last request line */
	char last_headers[16384];
	size_t last_body_len;
	unsigned slow_ms;       /* /v1/slow waits this long */
	char index_dir[300];    /* /simple/ and /files/ are served from here */
};

struct fixture {
	char dir[256];       /* everything of this test */
	char ca_pem[300];    /* the test CA the upstreams' certs chain to */
	struct upstream api;    /* api.test on 127.0.0.2 */
	struct upstream other;  /* cert for other.test on 127.0.0.3 (rebind.test points here) */
	struct bh_egress_profile profile;
	struct bh_broker_config cfg;
	bh_broker *broker;
	const struct bh_egress_ops *ops;
	char sock[300];
	pthread_mutex_t mu;
	char notes[32768];   /* one line per note: status refusal|- method origin route out in */
	int n_notes;
	char logs[32768];
};

/* Builds the CA, the upstreams and the profile (budgets roomy; a test may
 * change f->profile before fixture_start). */
void fixture_init(struct fixture *f);
/* Starts the broker, opens session "sess-1" on f->sock. */
void fixture_start(struct fixture *f);
void fixture_hold(struct fixture *f, uint64_t hold);
void fixture_release(struct fixture *f, uint64_t hold);
void fixture_fini(struct fixture *f);
int upstream_hits(struct upstream *u);
/* The last request the upstream saw (copies). */
void upstream_last(struct upstream *u, char *line, size_t ln, char *headers, size_t hn);

/* Waits (stated slack 5 s) until n notes came: the broker notes a request
 * once its answer is written, so a client can see the answer first. */
bool fixture_wait_notes(struct fixture *f, int n);
/* A connection to the session's socket. */
int client_connect(struct fixture *f);
/* Sends raw bytes and reads one whole answer (Content-Length framed, or to
 * the close) into a malloc'd string; *status its status (0: none came). */
char *client_exchange(int fd, const void *req, size_t len, int *status, int timeout_ms);
/* One request on a fresh connection. */
char *client_request(struct fixture *f, const char *req, int *status);
/* CONNECT target, then TLS with sni (verified against the broker's CA for
 * that name; NULL: no SNI, the target's address verified), then inner. NULL with *status -1 when the handshake failed;
 * *status the CONNECT's when it was refused. */
char *client_connect_tls(struct fixture *f, const char *target, const char *sni,
			 const char *inner, int *status);
/* A shell command's stdout (malloc'd), its exit status in *rc. */
char *run_cmd(const char *cmd, int *rc);

/* ---- egress: the forms an upstream's echo of a header value takes (the
 * upstream's /v1/echoenc answers with each, in a header X-Echo-K and a body
 * field formK): 0 every byte %xx, 1 every byte %XX, 2 some bytes encoded in
 * mixed case and a space as '+', 3 hex, 4 HEX, 5 base64 of what follows
 * the value's first space (the credential of "Bearer X"), 6 the same in
 * unpadded base64url. ---- */
#define ECHO_FORMS 7
#define ECHO_FORM_MAX 800
void echo_encodings(const char *v, char forms[ECHO_FORMS][ECHO_FORM_MAX]);

#endif
