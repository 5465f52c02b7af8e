/* Egress: the operator's named profiles, and the broker that carries a
 * sandbox's HTTP to the upstreams a profile allows, the credential added on
 * the host side, never inside the sandbox.
 *
 * The one contract between four parts (issue 18):
 *  - the profiles file (src/egress/profiles*.c): parsed strictly, immutable
 *    once loaded; a reload (SIGHUP) makes a new set and swaps the pointer,
 *    calls in flight keep the set they started with (reference counted);
 *  - the broker (src/broker/): a thread of its own that listens on one unix
 *    socket per session, speaks HTTP/1.1 (a forward proxy: absolute-form
 *    requests for http:// and https:// URLs, and CONNECT host:port which it
 *    terminates with a leaf certificate its own CA signs), enforces the
 *    profile on every request, makes its own TLS connection upstream and adds
 *    the credential;
 *  - the engine, which mounts the session's socket at /run/host-api.sock in
 *    the sandbox, has the init relay a loopback address to it, and sets the
 *    proxy and CA variables only in sessions that may use a profile; it
 *    reaches the broker only through struct bh_egress_ops (so it links no
 *    TLS or HTTP code of the broker's);
 *  - the daemon (and the embedded console), which load the file, check the
 *    caller may use a profile, start the broker and hand the engine its ops.
 *
 * Nothing here prints. Fallible functions return < 0 and fill *err.
 */
#ifndef BULKHEAD_EGRESS_H
#define BULKHEAD_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bulkhead.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- profiles ----------------------------------------------------------- */

/* Where the sandbox reaches the broker (plimsoll's path), and the loopback
 * address inside the sandbox the init relays to it for ordinary HTTP clients
 * (HTTP_PROXY=http://127.0.0.1:BH_EGRESS_RELAY_PORT). */
#define BH_EGRESS_SOCKET_IN_SANDBOX "/run/host-api.sock"
#define BH_EGRESS_RELAY_PORT 3128

/* The one refusal text for a profile that is unknown and one this caller may
 * not use (plimsoll: the same text for both, so a caller cannot probe the
 * names); %s is the name the caller sent. Reason: permission. */
#define BH_EGRESS_REFUSED_FMT "grant profile %s is unknown or not available to this caller"
/* A session call naming a profile that does not allow sessions. */
#define BH_EGRESS_NOT_FOR_SESSIONS_FMT "grant profile %s may not be used in sessions"

struct bh_egress_route {
	char *method;  /* "GET", "POST", … or "*" for any */
	char *pattern; /* "/v1/items/ * /detail" without spaces: "*" matches one
			  whole segment, never a part of one and never "/" */
};

struct bh_egress_header {
	char *name;     /* e.g. "Authorization" */
	char *template; /* e.g. "Bearer {credential}"; {credential} is replaced */
};

enum bh_egress_credential_source {
	BH_EGRESS_CREDENTIAL_NONE = 0, /* headers carry only fixed text */
	BH_EGRESS_CREDENTIAL_FILE,     /* read from a file (root-owned, not group/world readable) */
	BH_EGRESS_CREDENTIAL_ENV,      /* an environment variable of the daemon */
	BH_EGRESS_CREDENTIAL_COMMAND,  /* minted by a command; its stdout, trimmed */
};

struct bh_egress_credential {
	enum bh_egress_credential_source source;
	char *file;       /* FILE */
	char *env;        /* ENV */
	char **argv;      /* COMMAND: argv[0] an absolute path; NULL-terminated */
	uint32_t lifetime_s; /* COMMAND: minted again after this long (0: per hold) */
};

struct bh_egress_budgets {
	uint32_t max_calls;           /* requests per hold (plimsoll: 256 default, <= 100000) */
	uint64_t max_request_bytes;   /* one request's body (1 MiB) */
	uint64_t max_response_bytes;  /* one response's body (4 MiB) */
	uint64_t max_bytes_out;       /* all request bodies of one hold (0: no cap) */
	uint64_t max_bytes_in;        /* all response bodies of one hold (0: no cap) */
	uint32_t max_in_flight;       /* requests at once (16) */
	uint32_t upstream_timeout_ms; /* one upstream call (60 s) */
};

struct bh_egress_profile {
	char *name;        /* [a-z0-9][a-z0-9._-]{0,63} */
	char *description;
	char **origins;    /* canonical "https://host:port" (lowercase host, port explicit) */
	size_t n_origins;
	struct bh_egress_route *routes;
	size_t n_routes;
	struct bh_egress_credential credential;
	struct bh_egress_header *headers;
	size_t n_headers;
	struct bh_egress_budgets budgets;
	char **principals; /* who may use it; "*" any authenticated principal */
	size_t n_principals;
	bool allow_in_sessions; /* may a session hold it (plimsoll's allow_in_sessions) */
};

typedef struct bh_egress_profiles bh_egress_profiles;

/* Reads and checks the whole file (unknown keys refused with their line, the
 * file and the credential files owned by root and not writable by others);
 * on any error nothing is returned. */
int bh_egress_profiles_load(const char *path, bh_egress_profiles **out, bh_error **err);
bh_egress_profiles *bh_egress_profiles_ref(bh_egress_profiles *set);
void bh_egress_profiles_unref(bh_egress_profiles *set);
size_t bh_egress_profiles_count(const bh_egress_profiles *set);
const struct bh_egress_profile *bh_egress_profiles_at(const bh_egress_profiles *set, size_t i);
const struct bh_egress_profile *bh_egress_profiles_find(const bh_egress_profiles *set,
							 const char *name);
/* May this principal use the profile? */
bool bh_egress_profile_allows(const struct bh_egress_profile *p, const char *principal);

/* ---- what the broker saw ------------------------------------------------ */

/* One brokered request, reported when it ends (passed or refused). Metadata
 * only: never a body, a query value or a credential. */
struct bh_egress_note {
	const char *session_fp; /* the session's fingerprint (bh_session_fingerprint) */
	const char *profile;    /* the profile held, "" when none was */
	const char *method;
	const char *origin;     /* "https://host:port" the sandbox asked for */
	const char *route;      /* the pattern matched; "" when refused before matching */
	int status;             /* the upstream's status; the broker's own when it refused */
	const char *refusal;    /* NULL: passed; else why (e.g. "origin not allowed") */
	uint64_t bytes_out;     /* request body bytes sent upstream */
	uint64_t bytes_in;      /* response body bytes returned to the sandbox */
	uint32_t ms;            /* from the request's last byte to the response's last */
};

/* ---- what the engine asks of the broker --------------------------------- */

/* The engine calls these on its own thread; the broker answers at once (it
 * does its work on its own thread). A session's socket exists from open to
 * close; the broker serves requests on it only while a hold is active (503
 * otherwise), so a process left behind after a call that held a profile gets
 * nothing. */
struct bh_egress_ops {
	/* Listen on socket_path (the engine made its directory; the sandbox's
	 * uid must be able to connect) for the session. */
	int (*open_session)(void *arg, const char *session_fp, const char *socket_path,
			    bh_error **err);
	/* From now on serve the session's requests under this profile (by name,
	 * looked up in the set current now) until released. A session holding a
	 * profile for its life holds it from open to close; a call's grant, for
	 * the call. hold is an id the engine chooses, unique per session. */
	int (*hold)(void *arg, const char *session_fp, uint64_t hold, const char *profile,
		    bh_error **err);
	void (*release)(void *arg, const char *session_fp, uint64_t hold);
	/* Stop listening, cut what is in flight, unlink the socket. */
	void (*close_session)(void *arg, const char *session_fp);
	/* The PEM certificate of the broker's interception CA, which the sandbox
	 * trusts beside the system's (SSL_CERT_FILE and friends); host-side path. */
	const char *(*ca_cert_path)(void *arg);
};

/* The engine records a note as an event of the session (kind "egress") and
 * counts it for /metrics. Safe to call from any thread (the broker's): it
 * queues the note and wakes the engine's fd. */
int bh_engine_note_egress(bh_engine *e, const struct bh_egress_note *note, bh_error **err);

/* ---- plumb: what /metrics counts (bulkhead_egress_requests_total and the
 * bytes), per profile and status, since the engine opened. fn is called
 * for each, from the caller's thread, outside the engine's lock. ---- */
struct bh_egress_count {
	const char *profile; /* "" for requests made with no hold */
	int status;
	uint64_t requests, bytes_out, bytes_in;
};
typedef void (*bh_egress_count_fn)(void *arg, const struct bh_egress_count *c);
void bh_engine_egress_counts(bh_engine *e, bh_egress_count_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
