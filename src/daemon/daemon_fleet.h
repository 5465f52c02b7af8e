/* What the daemon's fleet files share (serve --fleet, issue 20). */
#ifndef BH_DAEMON_FLEET_H
#define BH_DAEMON_FLEET_H

#include "fleet.h"

struct server;

/* An entry of this host's in the directory, as last put. */
struct published {
	char fp[65];
	bool put;        /* this host put it (and deletes it when the session ends) */
	bool hibernated; /* as HIBERNATED (else LIVE) */
	bool seen;       /* still held by the engine (this sync) */
};

struct known_host {
	char id[BH_FLEET_ID_MAX + 1];
	bool gone;
};

/* A session this host just placed elsewhere: its caller's next call may
 * come before the owner's directory entry reaches this host's copy. */
#define FLEET_RECENT_OPENS 64u
#define FLEET_RECENT_MS 30000u
struct recent_open {
	char fp[65];
	char host[BH_FLEET_ID_MAX + 1];
	uint64_t until_ms;
};

struct daemon_fleet {
	struct server *srv;
	bh_fleet *f;
	char self[BH_FLEET_ID_MAX + 1];
	char api[256];
	uint64_t next_tick_ms, next_publish_ms;
	/* the forwarding tally, a line a minute at most (audit lines name each call) */
	uint64_t next_tally_ms, tallied_forwarded, tallied_served;
	uint64_t restart_sweep_ms; /* 0: done */
	struct published *published;
	size_t n_published, cap_published;
	struct known_host *hosts;
	size_t n_hosts;
	bool draining;       /* an operator asked (drain.<self>) */
	char (*drained)[65]; /* sessions this drain asked to hibernate */
	size_t n_drained;
	struct recent_open recent[FLEET_RECENT_OPENS];
	/* The entries this host ended host_lost when it restarted: answered so
	 * here at once, before the bucket's copy here shows the tombstones. */
	struct lost_entry {
		char fp[65];
		char detail[256];
	} *lost;
	size_t n_lost;
	size_t next_recent;
	/* Forwards NATS had no responder for (nothing ran there): routed
	 * again shortly, the owner being between two NATS servers. */
	struct forward_retry {
		struct call *c;
		char method[32];
		uint64_t due_ms;
	} *retries;
	size_t n_retries;
};

/* Answers now the forwards whose host died while they were in flight. */
void daemon_fleet_forwards_check(struct server *s);
/* Routes again the forwards whose retry is due (fleet_route.c). */
void daemon_fleet_retry_due(struct server *s);

/* This host's figures for its next heartbeat (fleet_member.c). */
void daemon_fleet_publish(struct server *s);
/* bh_fleet_serve's handler (fleet_serve.c): arg is the struct server. */
void daemon_fleet_on_forwarded(void *arg, struct bh_fleet_request *r, const struct bh_fleet_msg *req);

#endif
