/* `bulkhead serve`: the engine behind HTTP (libmicrohttpd), speaking
 * plimsoll.v1.SandboxService and bulkhead.v1.OperatorService as Connect
 * unary JSON, on a unix socket and optionally on loopback TCP. One thread:
 * the engine's loop, libmicrohttpd's epoll set and the signals share one
 * poll; a call that waits on the engine suspends its connection. */
#ifndef BH_DAEMON_H
#define BH_DAEMON_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stdint.h>

#define DAEMON_DEFAULT_SOCKET "/run/bulkhead/bulkhead.sock"
#define DAEMON_DEFAULT_PORT 8746
#define DAEMON_MAX_NAMES 16 /* --allowed-host, --trusted-proxy: each at most */

struct bh_daemon_config {
	struct bh_config engine;   /* state directory, policy, init and cell servers */
	const char *socket_path;   /* NULL: DAEMON_DEFAULT_SOCKET */
	const char *listen;        /* "HOST:PORT" or "HOST" (port 8746) on loopback; NULL: none */
	const char *clients_path;  /* NULL: /etc/bulkhead/clients */
	bool open;                 /* no auth (unix socket only) */
	const char *audit_path;    /* NULL: audit lines go to stderr */
	uint32_t drain_ms;         /* SIGTERM: how long in-flight calls may finish; 0: 30 s */
	unsigned rate_per_minute;  /* per principal; 0: 600 */
	unsigned max_connections;  /* per listener; 0: 256 */
	/* Connections one peer (a local uid: SO_PEERCRED on the unix socket,
	 * the socket's owner on TCP) may hold on each listener; more are
	 * answered 503 and closed. 0: a quarter of max_connections. */
	unsigned max_per_peer;
	/* /metrics without a token. By default it wants the operator scope
	 * (it tells how busy every tenant is); serve --metrics-open. */
	bool metrics_open;
	/* The tier sessions and runs get (a request's floor only refuses);
	 * BH_TIER_UNKNOWN (or 0) : the strongest offered. */
	enum bh_tier tier;
	/* ---- approvals ---- */
	/* Code calls (SessionRun, Run) wait for a person's decision unless the
	 * caller's line in the clients file says approval=none (and one that says
	 * approval=required waits without it): serve --approval required. */
	bool approval_required;
	uint32_t approval_timeout_ms; /* how long a call is held; 0: 60 s */
	unsigned approval_cap;        /* held calls in all; 0: 64 */
	unsigned approval_cap_per_principal; /* 0: 8 */
	/* ---- profiles: the operator's egress profiles file (serve --profiles;
	 * include/bulkhead/egress.h), reloaded on SIGHUP. NULL: none, and every
	 * grant is refused permission ---- */
	const char *profiles_path;
	/* The CAs the broker verifies upstreams against (PEM file; serve
	 * --upstream-ca); NULL: the system's store. */
	const char *broker_upstream_ca;
	/* ---- remote: Capture writes evidence only below this folder of the
	 * daemon's host (serve --capture-root); NULL: Capture is refused ---- */
	const char *capture_root;
	/* ---- service (issue 19): listening off the machine, hardened, logs ---- */
	/* With tls.cert_path and tls.key_path, every TCP listener speaks TLS 1.2
	 * or newer (libmicrohttpd's GnuTLS), and `listen` may be any address;
	 * both files are read again on SIGHUP (a file that does not load keeps
	 * the old pair, loudly). client_ca_path: ask for a client certificate
	 * signed by these CAs; a verified certificate whose subject a clients
	 * line names is that principal (with or instead of its token). */
	struct bh_daemon_tls {
		const char *cert_path;      /* PEM: the certificate and its chain */
		const char *key_path;       /* PEM: its private key */
		const char *client_ca_path; /* PEM; NULL: no client certificates */
	} tls;
	/* A listener off loopback without TLS: refused at start unless the
	 * operator said so in so many words (serve --insecure-cleartext); then
	 * logged as an error at start. */
	bool insecure_cleartext;
	/* Names the Host check accepts besides loopback names and the listen
	 * address itself (serve --allowed-host NAME, repeated). */
	const char *allowed_hosts[DAEMON_MAX_NAMES];
	unsigned n_allowed_hosts;
	/* Peers whose X-Forwarded-For / -Proto / -Host are believed (serve
	 * --trusted-proxy ADDR, repeated; IPv4/IPv6 literals). From any other
	 * peer those headers are ignored. */
	const char *trusted_proxies[DAEMON_MAX_NAMES];
	unsigned n_trusted_proxies;
	/* serve --hardened: bh_daemon_serve refuses to start, naming every
	 * violation at once (daemon_hardened_violations), unless the kernel tier
	 * is proven and is the floor, every TCP listener off loopback has TLS,
	 * callers authenticate per principal (no --open, a clients file), and
	 * the caps (max_sessions, max_per_principal, max_per_owner,
	 * memory_budget_mb) and rate_per_minute are set (non-zero) explicitly. */
	bool hardened;
	/* serve --log-format text|json: the daemon's own lines (src/daemon/log.h) */
	enum daemon_log_format { DAEMON_LOG_TEXT, DAEMON_LOG_JSON } log_format;
	/* ---- fleet (issue 20): this daemon as one host of a fleet on NATS
	 * (include/bulkhead/fleet.h). Any host answers any plimsoll.v1 call: an
	 * OpenSession is placed on the host with the most room that proves its
	 * floor (this one when it is as good) and a call for a session another
	 * host holds is forwarded to it over NATS, its answer returned byte for
	 * byte (the owner authenticates it and makes its records); a session
	 * whose host is gone answers host_lost while it was live and is adopted
	 * here from the shared images directory (engine.images_dir) while it was
	 * hibernated. Every host of a fleet has the same clients file. ---- */
	struct bh_daemon_fleet {
		const char *servers;       /* serve --fleet URLS; NULL: no fleet */
		const char *host_id;       /* serve --host-id; NULL: the machine's hostname */
		const char *advertise;     /* serve --advertise: where consoles reach this host's
					      API; NULL: the TCP listener, else the socket */
		uint32_t heartbeat_ms;     /* --fleet-heartbeat-ms; 0: BH_FLEET_HEARTBEAT_MS */
		uint32_t gone_ms;          /* --fleet-gone-ms; 0: BH_FLEET_GONE_MS */
	} fleet;
	/* Called once the listeners accept (tests and the CLI print "ready"). */
	void (*on_ready)(void *arg, const char *socket_path, int tcp_port);
	void *on_ready_arg;
};

/* Serves until SIGTERM or SIGINT (then drains and closes per the engine's
 * shutdown policy). Returns 0 after a clean stop, -1 with *why set when it
 * could not start. */
int bh_daemon_serve(const struct bh_daemon_config *cfg, char **why);

/* ---- config: serve's own lines outside bh_daemon_serve (a setting
 * refused, the engine's lines it passes on) in the daemon's log format, so
 * that under --log-format json every line on stderr is one JSON object
 * (src/daemon/log.h). component may be NULL. ---- */
void bh_daemon_log_line(enum daemon_log_format format, enum bh_log_level level,
			const char *component, const char *msg);

#endif
