/* libbulkhead-fleet: the hosts of a bulkhead fleet on NATS (issue 20).
 *
 * NATS (Debian's nats-server with JetStream; its C client libnats) is the
 * distributed engine; bulkhead grows no cluster manager of its own. One
 * replicated JetStream key-value bucket holds the fleet's state:
 *
 *   host.<id>        what a host publishes with every heartbeat (bh_fleet_host)
 *   session.<fp>     the session directory: which host holds a session, and
 *                    for a hibernated one what another host needs to adopt it
 *   drain.<id>       present: an operator asked that host to drain
 *
 * and request-reply on `bulkhead.fleet.call.<id>` carries a call forwarded
 * to the host that holds its session, answered byte for byte.
 *
 * The library is used by the daemon (a member: host_id set) and by the
 * console and the CLI (observers: host_id NULL). It never blocks its
 * caller's loop on the network: writes are queued to its own thread, reads
 * come from a local copy kept current by a watch of the bucket, and every
 * callback runs on the caller's thread inside bh_fleet_process(), which the
 * caller runs when bh_fleet_fd() is readable (the engine's model). The
 * engine knows nothing of it: the daemon joins the two.
 *
 * Everything read from the bucket or a forwarded message is another
 * machine's word and is checked for form before it is used (a value that
 * does not check is skipped, and counted in bh_fleet_status.rejected).
 */
#ifndef BH_FLEET_H
#define BH_FLEET_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bh_fleet bh_fleet;

#define BH_FLEET_ID_MAX 64u          /* a host id: [A-Za-z0-9._-]{1,64} */
#define BH_FLEET_BUCKET "bulkhead_fleet"
#define BH_FLEET_HEARTBEAT_MS 1000u  /* the default heartbeat */
#define BH_FLEET_GONE_MS 5000u       /* the default: no heartbeat this long, the host is gone */

struct bh_fleet_config {
	const char *servers;   /* "nats://a:4222,nats://b:4222" (commas; a bare host:port is nats://) */
	const char *host_id;   /* this member's id; NULL: an observer (no heartbeat, no calls served) */
	const char *bucket;    /* NULL: BH_FLEET_BUCKET */
	uint32_t replicas;     /* the bucket's replicas when this open creates it; 0: 3, or fewer
				  when the cluster has fewer servers */
	uint32_t heartbeat_ms; /* 0: BH_FLEET_HEARTBEAT_MS */
	uint32_t gone_ms;      /* 0: BH_FLEET_GONE_MS; at least 3 heartbeats */
	uint32_t connect_timeout_ms; /* the first connection and the bucket; 0: 5 s */
	bh_log_fn log;         /* NULL: discard */
	void *log_arg;
};

/* Connects (to any of the servers; it reconnects to any other after a
 * loss, for ever), opens the bucket (creating it when absent), starts the
 * watch, and for a member the heartbeat and its call subject. A member
 * whose id another live host heartbeats under is refused: two hosts never
 * share an id (a host restarting with its own id waits for its old
 * heartbeat to go stale or finds it its own: the heartbeat carries a
 * random incarnation). -1 with *why (the caller frees) naming the server,
 * the bucket or the id. */
int bh_fleet_open(const struct bh_fleet_config *cfg, bh_fleet **out, char **why);
/* Stops the heartbeat and deletes this member's host key (a clean leave:
 * the others see it gone at once), drains its subscriptions and closes. */
void bh_fleet_close(bh_fleet *f);

int bh_fleet_fd(bh_fleet *f);            /* readable when callbacks are due */
int bh_fleet_timeout_ms(bh_fleet *f);    /* -1: no timer of the caller's */
void bh_fleet_process(bh_fleet *f);      /* runs what is due; never blocks */
const char *bh_fleet_host_id(const bh_fleet *f); /* NULL for an observer */

/* ---- hosts ------------------------------------------------------------ */

struct bh_fleet_host {
	char id[BH_FLEET_ID_MAX + 1];
	uint64_t incarnation;      /* random per start of the host */
	uint32_t tiers;            /* 1 << bh_tier: the tiers proven and offered */
	enum bh_tier best_tier;
	uint32_t sessions;         /* live (not hibernated, not ended) */
	uint32_t hibernated;
	uint32_t max_sessions;
	uint32_t memory_budget_mb, memory_used_mb; /* admission's budget and what it holds */
	uint32_t pool_ready;       /* pooled sandboxes ready */
	double load1;              /* the host's 1-minute load average */
	bool draining;             /* it places nothing new (bulkhead fleet drain) */
	char api[256];             /* where its operator API is reached: a unix socket path,
				      http://… or https://… ("" none) */
	char version[32];
	int64_t started_unix_ms;
	int64_t heartbeat_unix_ms; /* the host's clock at its last heartbeat */
	/* The reader's, not the host's: */
	int64_t seen_mono_ms;      /* when this reader last saw its heartbeat (monotonic) */
	bool gone;                 /* no heartbeat seen for gone_ms (or it left); this reader's
				      view: see bh_fleet_status.fresh before acting on it */
};

/* This member's figures, published with every heartbeat from now on (the
 * daemon calls it on each engine tick; the id, incarnation and clocks are
 * the library's). */
void bh_fleet_set_host(bh_fleet *f, const struct bh_fleet_host *me);
/* Every host the bucket holds, gone ones included (gone set), sorted by id,
 * into *out (the caller frees). Returns how many. Never blocks. */
size_t bh_fleet_hosts(bh_fleet *f, struct bh_fleet_host **out);
/* One host by id: 0 and *out, or -1 when the bucket has no such host. */
int bh_fleet_host(bh_fleet *f, const char *id, struct bh_fleet_host *out);
/* Where an OpenSession with this floor goes: the live, undrained host that
 * proves the floor with the most room (memory left, then fewest sessions),
 * preferring this member when it is as good. 0 and the id in out, or -1
 * when no host meets the floor. */
int bh_fleet_place(bh_fleet *f, enum bh_tier floor, char out[BH_FLEET_ID_MAX + 1]);

/* drain.<id>: set (on true) or deleted. A member reads its own with
 * bh_fleet_draining. Queued: cb (may be NULL) says how it went. */
typedef void (*bh_fleet_done_cb)(void *arg, const char *why); /* why NULL: done */
int bh_fleet_set_drain(bh_fleet *f, const char *host, bool drain, bh_fleet_done_cb cb, void *arg);
bool bh_fleet_draining(bh_fleet *f, const char *host);

/* ---- the session directory ------------------------------------------- */

enum bh_fleet_entry_state {
	BH_FLEET_LIVE = 0,       /* its host holds it awake (opening, ready, busy, paused) */
	BH_FLEET_HIBERNATED,     /* an image in the shared images directory: adoptable */
	BH_FLEET_ENDED,          /* a tombstone: end_reason says why (host_lost) */
};
const char *bh_fleet_entry_state_name(enum bh_fleet_entry_state s);

struct bh_fleet_entry {
	char fingerprint[65];
	char host[BH_FLEET_ID_MAX + 1];   /* who holds it */
	enum bh_fleet_entry_state state;
	enum bh_end_reason end_reason;    /* ENDED: why */
	char end_detail[256];
	int64_t updated_unix_ms;
	struct bh_hibernated hib;         /* HIBERNATED: what adopting it takes */
	uint64_t revision;                /* the bucket's revision of this value (claims) */
};

/* 0 and *out from the local copy, or -1 when the directory has no entry. */
int bh_fleet_lookup(bh_fleet *f, const char *fingerprint, struct bh_fleet_entry *out);
/* Every entry, sorted by fingerprint (the caller frees); how many. */
size_t bh_fleet_entries(bh_fleet *f, struct bh_fleet_entry **out);
/* Queued writes of this member's own entries (host is set to this member). */
int bh_fleet_put_entry(bh_fleet *f, const struct bh_fleet_entry *e);
int bh_fleet_delete_entry(bh_fleet *f, const char *fingerprint);
/* Replaces `seen` (its revision) with `mine` only if nobody changed it
 * since: of two hosts claiming one entry exactly one wins. cb: won true, or
 * why not (another host's claim came first: why says whose). */
typedef void (*bh_fleet_claim_cb)(void *arg, bool won, const char *why);
int bh_fleet_claim(bh_fleet *f, const struct bh_fleet_entry *seen,
		   const struct bh_fleet_entry *mine, bh_fleet_claim_cb cb, void *arg);

/* ---- forwarding: a call to the host that holds its session ------------- */

#define BH_FLEET_MAX_HEADERS 16u
/* The largest body forwarded: the daemon's body limit. NATS's default
 * max_payload is 1 MiB; the servers must be run with max_payload of at
 * least 9 MiB (docs/fleet.md), or larger messages are refused with a why
 * naming it. */
#define BH_FLEET_BODY_MAX (8u << 20)
struct bh_fleet_msg {
	/* requests: the URL path ("/plimsoll.v1.SandboxService/SessionRun");
	 * answers: NULL */
	const char *path;
	unsigned status;               /* answers: the HTTP status; requests: 0 */
	size_t n_headers;              /* the HTTP headers that matter, as sent */
	const char *header_names[BH_FLEET_MAX_HEADERS];
	const char *header_values[BH_FLEET_MAX_HEADERS];
	const uint8_t *body;
	size_t body_len;               /* at most the daemon's body limit (8 MiB) */
};

/* Sends req to host's call subject and calls cb once with its answer, or
 * with why (no host answered in timeout_ms, the host is gone, NATS is
 * down): then ans is NULL. Both valid only during cb. -1 with *why at
 * once for a request that cannot be sent (too large, no such host). */
typedef void (*bh_fleet_answer_cb)(void *arg, const struct bh_fleet_msg *ans, const char *why);
int bh_fleet_forward(bh_fleet *f, const char *host, const struct bh_fleet_msg *req,
		     uint32_t timeout_ms, bh_fleet_answer_cb cb, void *arg, char **why);

/* A member's side: fn is called for each call another host forwarded here;
 * the handler answers it, now or later, with bh_fleet_reply exactly once
 * (which frees r; one never answered is freed at close). req is valid
 * until then. bh_fleet_serve is the one call that waits on the network,
 * once: a round trip, so the servers know this host serves when it returns
 * (a forward right after is not answered "no responder"). */
struct bh_fleet_request;
typedef void (*bh_fleet_request_fn)(void *arg, struct bh_fleet_request *r,
				    const struct bh_fleet_msg *req);
void bh_fleet_serve(bh_fleet *f, bh_fleet_request_fn fn, void *arg);
int bh_fleet_reply(bh_fleet *f, struct bh_fleet_request *r, const struct bh_fleet_msg *ans);
/* The host that forwarded it ("" when it did not say). */
const char *bh_fleet_request_from(const struct bh_fleet_request *r);

/* ---- status ----------------------------------------------------------- */

struct bh_fleet_status {
	bool connected;
	char server[256];       /* the NATS server connected to ("" none) */
	uint64_t reconnects;
	uint64_t rejected;      /* bucket values and messages refused as malformed */
	uint64_t queued;        /* writes waiting for the bucket */
	/* The local copy is current: the watch delivered what the bucket held
	 * a moment ago (or, for a member, its own heartbeats come back), and
	 * for a member the bucket still takes its heartbeats. A reader cut off
	 * from NATS sees every other host go gone: one that is not fresh must
	 * not judge another host lost. */
	bool fresh;
	char last_error[256];   /* the latest write or watch failure ("" none) */
};
void bh_fleet_get_status(bh_fleet *f, struct bh_fleet_status *out);

#endif
