/* libbulkhead-fleet's insides. Threads:
 *   - the caller's: every public function; callbacks run only in
 *     bh_fleet_process(), on it;
 *   - the writer (fleet_writer.c): the bucket writes, in order, and the
 *     heartbeat;
 *   - the sender (fleet_forward.c): publishes forwarded calls and answers
 *     (a large body must never stall the caller's loop on a socket);
 *   - the watcher (fleet_watch.c): kvWatcher_Next, keeping the local copy
 *     of the bucket;
 *   - libnats's own (message callbacks, connection events): they only
 *     queue, under f->lock, and wake the caller through the eventfd.
 * f->lock guards everything below it in struct bh_fleet. */
#ifndef BH_FLEET_PRIV_H
#define BH_FLEET_PRIV_H

#include "fleet.h"
#include "fleet_values.h"

#include "base.h"

#include <nats/nats.h>
#include <pthread.h>

/* What the servers must allow: bulkhead's bodies go to 8 MiB, and NATS's
 * default max_payload is 1 MiB; run nats-server with max_payload of at least
 * this (docs/fleet.md). */
#define FLEET_MAX_PAYLOAD_NEEDED (9u << 20)
#define FLEET_DEFAULT_TIMEOUT_MS 30000u
#define FLEET_CLAIM_WINDOW_MS 30000u /* claims older than this before mine do not count */
#define FLEET_CLOSE_WRITES_MS 3000u /* at close, queued writes are tried this long */
#define FLEET_RESYNC_MS 2000u /* how often the watch is checked against the bucket's last sequence */
#define FLEET_CLAIMS_TTL_NS (3600ll * 1000000000ll) /* a claim is decided in seconds: kept an hour (libnats: ns) */
#define FLEET_NO_RESPONDER_RETRY_MS 600u /* a live host's call interest may still be crossing routes */
#define FLEET_CALL_SUBJECT "bulkhead.fleet.call."
#define FLEET_WRITE_RETRY_MS 10000u /* a bucket write is retried this long (a leader election) */

/* A callback due on the caller's thread. */
enum fleet_event_kind { EV_DONE, EV_CLAIM, EV_ANSWER, EV_REQUEST, EV_LOG };
struct fleet_event {
	struct fleet_event *next;
	enum fleet_event_kind kind;
	void *arg;
	bh_fleet_done_cb done;
	bh_fleet_claim_cb claim;
	bh_fleet_answer_cb answer;
	bool won;
	char *why;                     /* NULL: done / won */
	natsMsg *msg;                  /* EV_ANSWER: the answer; EV_REQUEST: the request */
	char host[BH_FLEET_ID_MAX + 1]; /* EV_ANSWER: who was asked */
	enum bh_log_level level;       /* EV_LOG: why is the line */
};

/* A bucket write the writer does. */
enum fleet_job_kind { JOB_PUT, JOB_DELETE, JOB_CLAIM };
struct fleet_job {
	struct fleet_job *next;
	enum fleet_job_kind kind;
	char key[160];
	char *value;
	uint64_t last;                 /* JOB_CLAIM: the revision seen */
	bh_fleet_done_cb done;
	bh_fleet_claim_cb claim;
	void *arg;
};

/* A message the sender publishes; token set: a forward whose failure
 * answers its pending call. */
struct fleet_send {
	struct fleet_send *next;
	natsMsg *msg;
	uint64_t token;
};

/* A forwarded call waiting for its answer. */
struct fleet_pending {
	struct fleet_pending *next;
	uint64_t token;
	char host[BH_FLEET_ID_MAX + 1];
	uint64_t deadline_mono_ms;
	uint64_t first_sent_mono_ms;   /* when it was queued */
	uint64_t resend_mono_ms;       /* no responder yet for a live host: sent again then (0: no) */
	natsMsg *msg;                  /* the request, once the sender handed it back (a resend's) */
	bh_fleet_answer_cb cb;
	void *arg;
};

/* A host as this reader knows it. */
struct fleet_host_rec {
	struct bh_fleet_host h;        /* seen_mono_ms is this reader's */
	uint32_t heartbeat_ms;
	uint64_t beat;
	uint64_t revision;
	bool left;                     /* its key was deleted (a clean close) */
};

struct bh_fleet_request {
	struct bh_fleet_request *next, *prev; /* f->requests: not yet answered */
	natsMsg *msg;
	char reply[256];
	char from[BH_FLEET_ID_MAX + 1];
	const char *names[BH_FLEET_MAX_HEADERS], *values[BH_FLEET_MAX_HEADERS];
	char *header_text;             /* the "name: value" copies names/values point into */
	char path[FLEET_PATH_MAX + 1];
	struct bh_fleet_msg req;
};

struct bh_fleet {
	/* set at open, read-only after */
	char *servers;
	char host_id[BH_FLEET_ID_MAX + 1];
	bool member;
	char bucket[64];
	uint32_t heartbeat_ms, gone_ms;
	bh_log_fn log;
	void *log_arg;
	uint64_t incarnation;
	int64_t started_unix_ms;
	char inbox[128];
	int efd;

	natsConnection *nc;
	jsCtx *js;
	kvStore *kv;
	kvStore *claims;                /* <bucket>_claims: the claims' order (fleet_writer.c) */
	kvWatcher *watcher;
	natsSubscription *inbox_sub, *call_sub;
	pthread_t writer_thread, sender_thread, watch_thread;
	bool writer_started, sender_started, watch_started;

	pthread_mutex_t lock;
	pthread_cond_t writer_cond, sender_cond, watch_cond;
	bool stopping;
	/* the caller's queue */
	struct fleet_event *ev_head, **ev_tail;
	bool woken;
	/* the writer's */
	struct fleet_job *job_head, **job_tail;
	size_t jobs_queued;
	struct bh_fleet_host me;       /* what the heartbeat publishes */
	uint64_t beat;
	/* the sender's */
	struct fleet_send *send_head, **send_tail;
	/* forwards waiting */
	struct fleet_pending *pending;
	uint64_t next_token;
	/* serving */
	bh_fleet_request_fn serve_fn;
	void *serve_arg;
	/* the local copy */
	struct fleet_host_rec *hosts;  /* sorted by id */
	size_t n_hosts, cap_hosts;
	struct bh_fleet_entry *entries; /* sorted by fingerprint */
	size_t n_entries, cap_entries;
	char (*drains)[BH_FLEET_ID_MAX + 1]; /* sorted */
	size_t n_drains, cap_drains;
	bool initial_done;
	uint64_t highest_rev;          /* the highest stream sequence the watch delivered */
	char **keys;                   /* every key the watch delivered (a set: open addressing) */
	size_t n_keys, cap_keys;
	bool watch_suspect;            /* libnats said the watch's server heartbeats were missed */
	bool write_outage;             /* a member: its heartbeats are not being taken */
	bool resync;                   /* ... and now are again: the watch is read afresh */
	uint64_t fresh_mono_ms;        /* the watch was last found up to date with the bucket */
	struct bh_fleet_request *requests; /* forwarded to us, not yet answered (freed at close) */
	uint64_t own_written_mono_ms;  /* a member: its last heartbeat the bucket acknowledged */
	uint64_t remake_logged_mono_ms; /* the watch's remakes are logged at most every 10 s */
	uint64_t own_seen_mono_ms;     /* a member: when the watch last showed its own heartbeat */
	unsigned subs_open;            /* subscriptions whose last callback may still run */
	bool closed_cb_done;             /* the watch delivered what the bucket held */
	/* status */
	uint64_t rejected;
	char last_error[256];
};

/* fleet.c */
void fleet_log(bh_fleet *f, enum bh_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fleet_set_error(bh_fleet *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queues ev for the caller (f->lock held) and wakes it. */
void fleet_queue_event_locked(bh_fleet *f, struct fleet_event *ev);
void fleet_wake_locked(bh_fleet *f);
/* natsStatus and libnats's last error text, as one phrase (a static buffer per thread). */
const char *fleet_nats_why(natsStatus s);
/* The bucket key of a kind and name. */
void fleet_key(char *out, size_t outlen, const char *prefix, const char *name);

/* fleet_writer.c */
int fleet_writer_start(bh_fleet *f, char **why);
void fleet_writer_stop(bh_fleet *f); /* finishes what is queued (bounded), then stops */
void fleet_queue_job(bh_fleet *f, struct fleet_job *job);
char *fleet_my_host_value(bh_fleet *f); /* f->lock held: the heartbeat's value, the beat counted */
/* A bucket write with its retries (a leader being elected): NATS_OK or the last status. */
natsStatus fleet_put(bh_fleet *f, const char *key, const char *value, uint64_t *rev);
/* The first claim under prefix in the claims bucket (fleet_writer.c). */
uint64_t fleet_first_claim(bh_fleet *f, const char *prefix, uint64_t mine, char first[BH_FLEET_ID_MAX + 1]);
natsStatus fleet_put_in(bh_fleet *f, kvStore *kv, const char *key, const char *value, uint64_t *rev);

/* fleet_watch.c */
int fleet_watch_start(bh_fleet *f, uint32_t timeout_ms, char **why);
void fleet_watch_stop(bh_fleet *f);
void fleet_keys_free(bh_fleet *f);
/* f->lock held: the record of host id, NULL when none. */
struct fleet_host_rec *fleet_host_find_locked(bh_fleet *f, const char *id);
bool fleet_host_gone_locked(bh_fleet *f, const struct fleet_host_rec *r, uint64_t now_ms);

/* fleet_forward.c */
int fleet_forward_start(bh_fleet *f, char **why);
void fleet_forward_stop(bh_fleet *f);
int fleet_serve_start(bh_fleet *f, char **why);
void fleet_run_answer(bh_fleet *f, struct fleet_event *ev);
void fleet_run_request(bh_fleet *f, struct fleet_event *ev);
void fleet_requests_free(bh_fleet *f); /* at close: the requests never answered */
/* Expired forwards answered (f->lock held); the nearest deadline, 0 none. */
uint64_t fleet_expire_locked(bh_fleet *f, uint64_t now_ms);
/* Forwards due to be sent again (f->lock held). */
void fleet_resend_locked(bh_fleet *f, uint64_t now_ms);

#endif
