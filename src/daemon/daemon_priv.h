/* What the daemon's files share. */
#ifndef BH_DAEMON_PRIV_H
#define BH_DAEMON_PRIV_H

#include "base.h"
#include "clients.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "ratelimit.h"
#include "wire.h"

#include <microhttpd.h>
#include <stdio.h>

#define DAEMON_MAX_BODY (8u << 20)         /* bytes of a request body */
#define DAEMON_MAX_HEADER (32u << 10)      /* bytes of a request's header */
#define DAEMON_HEADER_DEADLINE_MS 10000u   /* from connect (or the last answer) to a whole header */
#define DAEMON_BODY_DEADLINE_MS 30000u     /* from the header to the whole body */
#define DAEMON_IDLE_TIMEOUT_S 60u          /* libmicrohttpd's inactivity timeout */
#define DAEMON_OOM_SCORE_ADJ (-900)        /* ours; the OOM killer never picks -1000 */

/* Lowers our oom_score_adj to DAEMON_OOM_SCORE_ADJ, or as far as the host
 * lets us, warning on stderr when that is not all the way (oom.c). */
void daemon_keep_out_of_oom(void);

struct server;
struct tls_door; /* ---- tls ---- */
struct event_wait; /* a parked ListEvents call (operator_service.c) */

struct listener {
	struct server *srv;
	bool tcp;
	int fd;
	int port; /* tcp */
	struct MHD_Daemon *mhd;
	bool tls; /* ---- tls: the TCP listener speaks TLS ---- */
	struct tls_door *door; /* its accepts (tls_door.c); NULL without TLS */
};

/* A connection, for the deadlines libmicrohttpd's inactivity timeout does
 * not give: a client trickling a byte a second is never inactive. */
enum conn_phase { CONN_HEADER, CONN_BODY, CONN_WAITING };
struct conn_watch {
	int fd;
	enum conn_phase phase;
	uint64_t since_ms;
	struct listener *via;
	struct peer_id peer; /* who holds it (peer.h): a local uid, or a remote address */
	bool refused;       /* over its peer's limit: answered 503, being closed */
	struct conn_watch *prev, *next;
};

/* One HTTP request, from its header to its answer. */
struct call {
	struct server *srv;
	struct listener *via;
	struct MHD_Connection *conn;
	struct conn_watch *watch;
	char procedure[96];        /* "plimsoll.v1.SandboxService/Run", or the path */
	char request_id[65];       /* echoed when the client sent one */
	struct client_principal who;
	bool admitted;             /* holds a rate-limit slot */
	char *body;
	size_t body_len, body_cap;
	bool dispatched, suspended;
	bool gone;                 /* libmicrohttpd finished with it while the engine still works */
	bool engine_pending;
	/* the answer */
	bool answered;
	unsigned status;
	char *answer;
	size_t answer_len;
	const char *content_type;
	const char *not_dispatched; /* Plimsoll-Not-Dispatched header for refusals without details */
	enum wire_code code;
	char session_fp[65];        /* for the audit line: never the id */
	uint64_t t0_us;
	int64_t received_unix_ms;
	/* what a handler keeps while the engine works */
	void *ctx;
	void (*ctx_free)(void *ctx);
	struct call *prev, *next;
	/* ---- approvals ---- */
	bool approved; /* a person let it through: dispatched now, not held again */
	/* ---- ci: attribution ---- */
	bool request_id_minted; /* the client sent none: the daemon's own, for the audit line only */
	/* ---- profiles: the grant profile it named (as shown: printable ASCII) ---- */
	char grant_profile[65];
	/* ---- tls: over TCP, the client's address (a trusted proxy's
	 * X-Forwarded-For, else the peer's) and the proxy's X-Forwarded-Proto ---- */
	char client_addr[64];
	char forwarded_proto[8];
	/* ---- fleet (issue 20) ---- */
	/* A call another host forwarded here (fleet_serve.c): no HTTP
	 * connection; its headers are the message's, and its answer goes back
	 * through deliver (then the call is freed) instead of libmicrohttpd. */
	bool headless;
	size_t n_in_headers;
	const char *const *in_header_names, *const *in_header_values;
	void (*deliver)(struct call *c);
	void *deliver_arg;
	bool in_dispatch;  /* headless: dispatch has not returned yet */
	bool fleet_routed; /* routed once (forwarded, or adopted and handled here) */
	uint64_t fleet_first_ms; /* its first forward (retries end 5 s after it); 0: none */
	/* An answer the owner of the session made, relayed byte for byte:
	 * its headers replace the ones this daemon would add. */
	struct call_relay *relay;
};

/* ---- fleet: a request's header, from libmicrohttpd or a forwarded message ---- */
const char *call_header(const struct call *c, const char *name);
/* The owner's answer as this call's, byte for byte (copied). */
void call_answer_relayed(struct call *c, unsigned status, size_t n_headers,
			 const char *const *names, const char *const *values, const uint8_t *body,
			 size_t body_len);
/* A call with no connection (fleet_serve.c): checked, authenticated,
 * admitted and dispatched as one from a listener (path is
 * "/plimsoll.v1.SandboxService/..."); deliver is called once with its
 * answer, after which the call is freed. The headers and body must stay
 * valid until then (the body is copied). */
void call_run_headless(struct server *s, const char *path, size_t n_headers,
		       const char *const *names, const char *const *values, const uint8_t *body,
		       size_t body_len, void (*deliver)(struct call *c), void *arg);

/* ---- ci: attribution: who a call acts as, for the engine's events (the
 * principal its token names and the request id its audit line carries) ---- */
static inline struct bh_actor call_actor(const struct call *c)
{
	return (struct bh_actor){.name = c->who.name[0] ? c->who.name : NULL,
				 .request_id = c->request_id};
}

struct server {
	const struct bh_daemon_config *cfg;
	bh_engine *e;
	struct clients *clients; /* NULL in open mode */
	struct ratelimit *rl;
	struct listener ls[2];
	size_t n_ls;
	struct call *calls;
	struct conn_watch *conns;
	struct metrics metrics;
	FILE *audit;
	char *socket_path;
	char *attach_file; /* STATE/daemon.sock.path */
	int64_t audited_event; /* the last engine event written to the audit log */
	unsigned per_peer;     /* connections one peer may hold on a listener */
	uint64_t peer_refusal_logged_ms, peer_refusals_unlogged;
	/* /readyz answers from this verdict for a second: a flood of probes
	 * does not run a preflight (a store read) each. */
	struct {
		uint64_t at_ms;
		bool ok;
		char *text;
	} ready;
	struct event_wait *waiters; /* ListEvents calls parked in a long poll */
	int sigfd;
	bool draining;
	bool stop;
	/* ---- truth: reads that succeed are tallied, not a line each ---- */
	struct audit_read *reads; /* audit.c */
	size_t n_reads;
	/* ---- approvals ---- */
	struct approvals *approvals; /* the calls held for a person's decision */
	/* ---- profiles: the operator's egress profiles (egress_profiles.c) ---- */
	struct bh_egress_profiles *profiles; /* NULL: none (no --profiles) */
	bool egress_broker;                  /* a broker runs: grants can be held */
	struct bh_broker *broker;            /* egress_broker.c; NULL: none */
	/* ---- tls: the pair and client CA (tls.c); NULL: no TLS ---- */
	struct daemon_tls *tls;
	/* ---- fleet (issue 20): this host's membership (fleet_member.c); NULL: alone ---- */
	struct daemon_fleet *fleet;
};

/* ---- answers (call.c) ---- */
void call_answer_json(struct call *c, char *json);           /* 200, takes json */
void call_answer_text(struct call *c, unsigned status, const char *content_type, char *text);
void call_answer_error(struct call *c, const struct wire_error *err);
/* A refusal without details (unknown procedure, bad framing): the
 * Plimsoll-Not-Dispatched header carries the mark. */
void call_refuse_early(struct call *c, unsigned status, enum wire_code code, const char *mark,
		       const char *msg);
void call_refuse(struct call *c, enum wire_code code, enum wire_refusal reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* An engine error as the answer (with the version-3 record of a call that
 * may have run, or NULL). */
void call_answer_bh(struct call *c, const bh_error *err, const struct bh_record *unanswered);
/* The engine refused to start what call_pending announced: answer its
 * error now (and free it). */
void call_not_started(struct call *c, bh_error *err);
/* From an engine callback: the answer is ready; wake the connection. */
void call_wake(struct call *c);
/* A handler that will answer later keeps ctx until then. */
void call_pending(struct call *c, void *ctx, void (*ctx_free)(void *));

/* ---- libmicrohttpd's side (call.c), registered and driven by server.c ---- */
/* Its access handler: every request, again for each piece of the body, and
 * once more when a suspended call's answer is ready. */
enum MHD_Result daemon_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls);
/* A request's end, however it ended: its call is freed. */
void daemon_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe);
/* A connection's start and close: it is watched for its phases' deadlines. */
void daemon_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe);
/* Every second: a connection past its phase's deadline is shut down. */
void daemon_enforce_deadlines(struct server *s);

/* ---- the services ---- */
void sandbox_service(struct call *c, const char *method);
void operator_service(struct call *c, const char *method);
void health_endpoint(struct call *c, const char *path);
/* Long-polling ListEvents calls: answered once events exist or their wait ends. */
void operator_poll_waiters(struct server *s, bool closing);
bool operator_waiting(const struct server *s);

/* ---- audit (audit.c): one JSON line per call and per session event ---- */
/* ---- ci: attribution: "bh-" and 16 random hex digits (call.c); -1 when
 * the random source fails (the call then has none) ---- */
int call_mint_request_id(char *out, size_t n);
void audit_call(struct server *s, const struct call *c);
void audit_event(struct server *s, const char *kind, const char *fingerprint, const char *detail);
/* Writes the engine's events since the last call (first: only remember where they end). */
void audit_engine_events(struct server *s, bool first);
/* ---- truth ---- */
/* Writes the tallies of reads (audit.c) a minute old, or all of them. */
void audit_reads_flush(struct server *s, bool all);
/* The tier this daemon gives its sessions and runs: the one it is pinned to
 * (serve --tier), else the strongest offered (operator_service.c). */
enum bh_tier daemon_served_tier(const struct server *s);

/* ---- approvals (approvals.c): calls held for a person's decision ---- */
/* What a held call would run, as the handler decoded it. */
struct approval_subject {
	const char *procedure;     /* "SessionRun" or "Run": dispatched again by that name */
	bh_session *session;       /* NULL for a one-shot Run */
	enum bh_tier tier;
	const char *kind;          /* "cell" or "javascript" */
	enum bh_language language;
	const char *code;
	size_t code_len;
	const struct bh_file *files;
	size_t n_files;
	const char *request_sha256; /* what the call's record will carry */
	const char *grant_profile;  /* ---- profiles: NULL or "" for none ---- */
};
struct wire_operator_approvals;
struct wire_operator_decision;
struct approvals *approvals_new(const struct bh_daemon_config *cfg);
void approvals_free(struct approvals *a);
/* Whether this caller's code calls wait: its clients line, else the daemon's. */
bool approvals_wanted(const struct server *s, const struct call *c);
/* Holds c (nothing of it runs) or, past a cap, refuses it; either way the
 * handler returns without answering further. */
void approvals_hold(struct call *c, const struct approval_subject *what);
/* Every second: a call past its deadline is refused (permission), one whose
 * client went away is dropped. */
void approvals_tick(struct server *s);
/* Draining: every held call is refused (nothing ran). */
void approvals_refuse_all(struct server *s, const char *why);
bool approvals_waiting(const struct server *s);
/* ListApprovals' answer; the strings stay the table's. */
void approvals_list(const struct server *s, struct wire_operator_approvals *out);
/* Approves (dispatching the call as if it had just arrived) or denies it. -1
 * with *code and why[] when no held call has that id. decider is the
 * operator's call (its principal and request id: the event's BY). */
int approvals_decide(struct server *s, const struct wire_operator_decision *d,
		     const struct bh_actor *decider, enum wire_code *code, char *why,
		     size_t why_len);
/* ListApprovals and DecideApproval (operator_approvals.c); false when
 * method is neither. */
bool operator_approvals(struct call *c, const char *method);

/* ---- light: Overview, the console's one light request (operator_overview.c) ---- */
/* A long poll's look: answers c and returns true, or returns false when it
 * has nothing to say yet (final: it must answer now). */
typedef bool (*operator_park_fn)(struct call *c, void *arg, bool final);
/* Answers c at once when answer says so (or wait_ms is 0); else parks it
 * with the ListEvents and FollowCell waiters, looked at every 100 ms by the
 * same poll until it answers or wait_ms ends (operator_service.c). arg is
 * freed with arg_free either way. */
void operator_park(struct call *c, uint32_t wait_ms, operator_park_fn answer, void *arg,
		   void (*arg_free)(void *arg));
/* Overview; false when method is not it. */
bool operator_overview(struct call *c, const char *method);

/* ---- profiles: the egress profiles (egress_profiles.c) ---- */
/* serve --profiles FILE: loaded at start (a bad file stops the daemon). */
int daemon_egress_load(struct server *s, char **why);
/* Says whether a broker runs (ec.egress was set before the engine opened). */
void daemon_egress_started(struct server *s, bool broker);
/* SIGHUP: a new set, or (a bad file) the old one kept with a loud line. */
void daemon_egress_reload(struct server *s);
void daemon_egress_free(struct server *s);
/* For the broker's thread: a new reference to the set current now (NULL:
 * none); the caller unrefs it. arg is the struct server. */
struct bh_egress_profiles *daemon_egress_current(void *arg);
/* The check before dispatch: true when it answered c with a refusal
 * (unknown or not this caller's: one text; not for sessions; no broker). */
bool daemon_egress_refuse(struct call *c, const char *profile, bool in_session);
/* ---- egress: the session's own profile, still the caller's to hold ---- */
bool daemon_egress_session_refuse(struct call *c, bh_session *session);
/* Fills Describe's grant fields for this caller; returns the list to free
 * once the answer is encoded (its strings are the set's). */
struct wire_grant_profile *daemon_egress_describe(const struct call *c,
						  struct wire_describe_response *d);
/* The broker (egress_broker.c, where the broker's library is built; else
 * none runs): started when profiles are loaded, filling ec->egress before
 * the engine opens; told the engine its notes go to (NULL: before it
 * closes); stopped after the engine closed. */
int daemon_broker_start(struct server *s, struct bh_config *ec, char **why);
void daemon_broker_engine(struct server *s, bh_engine *e);
void daemon_broker_stop(struct server *s);
/* ---- project: Run and SessionRun with a project payload (sandbox_project.c).
 * Each takes the decoded request over (it is left empty) and answers c. ---- */
struct wire_run_request;
struct wire_session_run_request;
const char *sandbox_provider_of(enum bh_tier t);
void sandbox_project_run(struct call *c, struct wire_run_request *req);
void sandbox_project_session(struct call *c, bh_session *s, struct wire_session_run_request *req);
/* ---- remote: Leftovers, ListIntents, Capture, Search, Reap
 * (operator_forensics.c); false when method is none of them ---- */
bool operator_forensics(struct call *c, const char *method);

/* ---- fleet (issue 20): serve --fleet (fleet_member.c, fleet_route.c,
 * fleet_serve.c) ---- */
/* Joins after the listeners are up (so the host's api is known); -1 with
 * *why when it cannot: the daemon then refuses to start. */
int daemon_fleet_start(struct server *s, char **why);
/* After the engine closed: leaves the fleet (the others see it gone). */
void daemon_fleet_stop(struct server *s);
int daemon_fleet_fd(struct server *s);          /* -1: none */
int daemon_fleet_timeout_ms(struct server *s);  /* -1: none */
void daemon_fleet_process(struct server *s);
/* Each pass of the loop: capacity, the directory, a drain (throttled). */
void daemon_fleet_tick(struct server *s);
/* At a stop, before the engine closes: hibernates what shutdown =
 * hibernate would (so the directory says so before this host leaves),
 * turning the loop with run_once until until_ms at most. */
void daemon_fleet_before_close(struct server *s, void (*run_once)(struct server *s, int ms),
			       uint64_t until_ms);
/* A session opened, changed or ended here: the directory follows now. */
void daemon_fleet_session_changed(struct server *s);
/* Before a plimsoll.v1 procedure is handled here: true when the fleet took
 * it (forwarded to its owner, refused host_lost, or adopting first). */
bool daemon_fleet_route(struct call *c, const char *method);

#endif
