/* What the client's files share: the transport's state, the error makers
 * and the record checks. */
#ifndef BH_CLIENT_PRIV_H
#define BH_CLIENT_PRIV_H

#include "base.h"
#include "client.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdlib.h>

/* Memory: base.h's cleanup and allocation, wire.h's cleanup_cjson. */

/* ---- transport (transport.c) ---- */

#define CLIENT_REQUEST_ID_LEN 32

struct xfer;

/* One socket libcurl asked to watch. */
struct watch {
	curl_socket_t fd;
	short events;
};

struct bh_client {
	CURLM *multi;
	char *target;              /* as given, for messages */
	char *base;                /* "http://localhost" or "http://127.0.0.1:PORT" */
	char *unix_path;           /* NULL over TCP */
	char *auth;                /* "Authorization: Bearer ..." or NULL */
	uint32_t connect_timeout_ms, call_timeout_ms;
	struct watch *watch;
	size_t n_watch, cap_watch;
	long timer_ms;             /* libcurl's last wish: -1 none */
	uint64_t timer_set_at_ms;
	struct xfer *xfers;        /* in flight */
	size_t queued;             /* session calls waiting their turn */
	struct procedure_count {   /* calls started, by procedure (teaching, tests) */
		char name[40];
		uint64_t n;
	} counts[24];
	size_t n_counts;
	/* ---- hops ---- */
	bh_client_tap_cb tap;
	void *tap_arg;
	/* ---- tls: PEM files (NULL: the system's CAs, no client certificate) ---- */
	char *cacert, *client_cert, *client_key;
};

/* Starts one exchange; its callback runs from bh_client_process*. Returns
 * the transfer (so a session can abandon it) or NULL with *err. */
struct xfer *xfer_start(bh_client *c, const char *path, const char *json, bh_client_http_cb cb,
			void *arg, struct bh_client_error **err);
/* Drops a transfer without calling its callback. */
void xfer_abandon(bh_client *c, struct xfer *x);

/* ---- errors (errors.c) ---- */

/* An error the client makes itself: marked (reason != UNSPECIFIED) reads
 * "Nothing ran (reason): ", unmarked "The code may have run, ...". */
struct bh_client_error *client_error(enum wire_code code, enum wire_refusal reason,
				     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct bh_client_error *client_verror(enum wire_code code, enum wire_refusal reason,
				      const char *fmt, va_list ap);
/* The same for an answer that does not check: data_loss, unmarked. */
struct bh_client_error *client_data_loss(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets the message from the fields (after a caller changed the mark). */
void client_error_reword(struct bh_client_error *e, const char *words);
/* The plain words of an error, without the prefix its message starts with. */
const char *client_error_words(const struct bh_client_error *e);
/* Hands err to *out when out is not NULL, else frees it; returns -1. */
int client_fail(struct bh_client_error **out, struct bh_client_error *err);

/* ---- checks (check.c) ---- */

/* What a call sent, for the request digest. */
struct sent {
	struct wire_run_request req; /* borrowed strings: never freed with wire_*_free */
	char floor_name[16];
	char digest[65];
};
void sent_init(struct sent *s, const char *kind, enum bh_tier floor, int32_t timeout_ms);

/* Why an answered record does not check against what was sent and what was
 * received, or NULL. */
const char *check_answered(const struct sent *s, const struct wire_run_response *run,
			   char *why, size_t len);
/* Why an unanswered call's version-3 record does not check, or NULL. */
const char *check_unanswered(const struct sent *s, const struct bh_record *rec, char *why,
			     size_t len);
bool client_tier_meets(const char *isolation, enum bh_tier floor);
/* The floor a call sends: the session's unless the call asks for more. */
enum bh_tier client_floor(enum bh_tier session, enum bh_tier call);

/* ---- sessions (session.c) ---- */

/* A session as OpenSession stated it; NULL r for one adopted by id. */
bh_client_session *session_new(bh_client *c, const char *id,
			       const struct wire_open_session_response *r, enum bh_tier floor);

/* ---- blocking forms (wait.c) ---- */

/* What a blocking wrapper waits for: the answer moved out of the callback. */
struct waiter {
	bool done;
	void *out;               /* where the answer goes */
	size_t size;
	struct bh_client_error *err;
};
/* Moves res (size bytes) into w->out, or keeps a copy of err. */
void waiter_settle(struct waiter *w, void *res, const struct bh_client_error *err);
/* Runs the loop until the answer; returns 0 or -1 with *err. */
int waiter_wait(bh_client *c, struct waiter *w, struct bh_client_error **err);

#endif
