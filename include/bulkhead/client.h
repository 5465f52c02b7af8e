/* libbulkhead-client: a C client of a bulkhead daemon (plimsoll.v1 and
 * bulkhead.v1.OperatorService, Connect unary JSON over HTTP/1.1).
 *
 * The host owns the loop, as with the engine and libcurl's multi interface:
 * the client says which sockets it wants polled (bh_client_pollfds) and how
 * long the host may sleep (bh_client_timeout_ms); the host calls
 * bh_client_process() for each ready socket and bh_client_process_timeout()
 * when the time is up. Every call is asynchronous and answers through a
 * callback from inside those two functions. The blocking forms (for the CLI)
 * run the same machinery under poll() until their answer arrives.
 *
 * Every answer is checked the way plimsoll's own clients check it: the answer
 * must carry back the request id sent with it, every run record is recomputed
 * from what was sent and what was received, the tier must meet the floor, and
 * a session's records must continue the chain this client saw. An error says
 * whether anything ran: its message begins "Nothing ran (REASON): " only when
 * the daemon marked it not dispatched (or nothing left this process), and
 * "The code may have run, and there is no checked answer for it: " otherwise.
 *
 * Ownership: fallible functions return < 0 and fill *err (free it with
 * bh_client_error_free). What a callback receives is the library's and is
 * valid during the callback; a callback may keep an answer by moving it out
 * (copy the struct, then zero the original) and keep an error with
 * bh_client_error_dup(). One thread owns a client.
 */
#ifndef BH_CLIENT_H
#define BH_CLIENT_H

#include "bulkhead.h"
#include "record.h"
#include "wire.h"
#include "wire_operator.h"

#include <cjson/cJSON.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BH_CLIENT_MAX_ANSWER (32u << 20) /* bytes of one answer (plimsoll's clients' cap) */
#define BH_CLIENT_TOKEN_ENV "BULKHEAD_TOKEN"
#define BH_CLIENT_ATTACH_FILE "daemon.sock.path" /* in a state directory a daemon holds */

typedef struct bh_client bh_client;
typedef struct bh_client_session bh_client_session;

/* ---- errors ------------------------------------------------------------ */

struct bh_client_error {
	enum wire_code code;        /* the daemon's Connect code, or the client's own (data_loss ...) */
	bool not_dispatched;        /* nothing ran: the only errors that are safe to retry */
	enum wire_refusal reason;   /* why, when not_dispatched */
	bool session_ended;         /* the session has ended (end says why) */
	enum wire_session_end end;
	char *end_detail;           /* "" when none */
	bool unanswered;            /* a checked version-3 record: the call may have run and is
				       in the session's chain */
	struct bh_record record;    /* when unanswered (strings owned) */
	int http_status;            /* 0 when no answer arrived */
	char *message;              /* "Nothing ran (isolation): ..." or "The code may have run, ..." */
};

void bh_client_error_free(struct bh_client_error *err);
struct bh_client_error *bh_client_error_dup(const struct bh_client_error *err);

/* ---- the client and its loop ------------------------------------------- */

struct bh_client_options {
	/* "/path/to/bulkhead.sock", "unix:PATH", "http://127.0.0.1:PORT"
	 * (cleartext is accepted only to a loopback host) or
	 * "https://HOST:PORT" (any host; the certificate must verify). */
	const char *target;
	const char *token;          /* bearer token; NULL or "" for an open daemon */
	/* ---- service (issue 19): TLS. A certificate that does not verify is
	 * a transport error naming the host and the reason ---- */
	const char *cacert;         /* PEM: the CAs an https target is checked against; NULL: the system's */
	const char *client_cert;    /* PEM: a client certificate to present (serve --tls-client-ca); NULL: none */
	const char *client_key;     /* PEM: its key */
	uint32_t connect_timeout_ms;/* 0: 10 s */
	uint32_t call_timeout_ms;   /* one whole exchange; 0: 6 min, as plimsoll's clients */
};

int bh_client_new(const struct bh_client_options *opts, bh_client **out,
		  struct bh_client_error **err);
/* Abandons every call in flight without calling its callback. Sessions
 * must be freed first. */
void bh_client_free(bh_client *c);
const char *bh_client_target(const bh_client *c);

/* The sockets the client wants polled, as pollfd entries (events set,
 * revents cleared). Returns how many there are; only the first max are
 * written, so a caller can size its array from the return value. */
size_t bh_client_pollfds(bh_client *c, struct pollfd *fds, size_t max);
/* How long the host may wait before calling bh_client_process_timeout():
 * -1 when nothing is pending, 0 when it is due now. */
int bh_client_timeout_ms(bh_client *c);
/* A socket from bh_client_pollfds is ready (revents as poll() set them). */
void bh_client_process(bh_client *c, int fd, short revents);
/* The timeout passed (calling it early is harmless). */
void bh_client_process_timeout(bh_client *c);
/* Both of the above for a whole pollfd array after poll() returned. */
void bh_client_process_pollfds(bh_client *c, const struct pollfd *fds, size_t n);
/* Calls in flight (sent or queued). */
size_t bh_client_pending(const bh_client *c);
/* Runs the loop with poll() until *done or timeout_ms passes (-1: none);
 * -1 on timeout. What the blocking calls below use. */
int bh_client_wait(bh_client *c, const bool *done, int timeout_ms);

/* ---- one raw call: the transport every other call uses ------------------- */

struct bh_client_http {
	long status;                /* the HTTP status; 0 when no answer arrived */
	const char *body;           /* NUL-terminated */
	size_t len;
	bool bound;                 /* exactly one Plimsoll-Request-Id came back, equal to ours */
	const char *request_id;     /* what was sent */
	const char *mark;           /* the Plimsoll-Not-Dispatched header, "" when none */
	bool unsent;                /* failed before a byte of the request left this process */
	bool too_large;             /* the answer passed BH_CLIENT_MAX_ANSWER */
	bool timed_out;
	const char *transport_error;/* libcurl's words when no answer arrived, else "" */
};
typedef void (*bh_client_http_cb)(void *arg, const struct bh_client_http *answer);

/* POSTs json to path ("plimsoll.v1.SandboxService/Describe") with the token,
 * Connect's headers and a fresh 32-hex Plimsoll-Request-Id. Redirects are
 * never followed. */
int bh_client_call_async(bh_client *c, const char *path, const char *json, bh_client_http_cb cb,
			 void *arg, struct bh_client_error **err);

/* The error an answer that is not a bound 200 stands for (NULL for one that
 * is): the binding rule (an unbound error keeps its code and loses every
 * mark), the Plimsoll-Not-Dispatched header, redirects, transport failures. */
struct bh_client_error *bh_client_error_of(const struct bh_client_http *answer);

/* How many calls of a procedure ("OpenSession", "SessionRun", "CloseSession",
 * ...) this client has started, answered or not. */
uint64_t bh_client_procedure_count(const bh_client *c, const char *procedure);

/* ---- hops: the wire as it was, for the recorder ---- */
/* Called once per finished exchange, before its callback: the procedure
 * ("SessionRun"), the request body as sent, the answer's status (0: no
 * answer) and body as received. Bodies hold session ids, which are
 * capabilities: whoever keeps them must redact them. NULL stops it. */
typedef void (*bh_client_tap_cb)(void *arg, const char *procedure, const char *request, long status,
				 const char *answer);
void bh_client_set_tap(bh_client *c, bh_client_tap_cb cb, void *arg);

/* ---- plimsoll.v1.SandboxService ---------------------------------------- */

typedef void (*bh_client_describe_cb)(void *arg, struct wire_describe_response *res,
				      const struct bh_client_error *err);
int bh_client_describe_async(bh_client *c, bh_client_describe_cb cb, void *arg,
			     struct bh_client_error **err);
int bh_client_describe(bh_client *c, struct wire_describe_response *out,
		       struct bh_client_error **err);

struct bh_client_run_opts {
	enum bh_tier floor;         /* BH_TIER_UNKNOWN (or NONE): none */
	int32_t timeout_ms;         /* 0: the daemon's default */
	/* ---- profiles ---- */
	const char *grant_profile;  /* an egress profile held for this run only (the request
				       digest covers it); NULL: none */
};

/* One JavaScript snippet in a fresh sandbox. The answer is checked: record
 * present and version 2, request and result digests, provider, tier,
 * environment, the record's own digest, no session fields, tier >= floor. */
typedef void (*bh_client_run_cb)(void *arg, struct wire_run_response *res,
				 const struct bh_client_error *err);
int bh_client_run_async(bh_client *c, const char *code, const struct bh_client_run_opts *opts,
			bh_client_run_cb cb, void *arg, struct bh_client_error **err);
int bh_client_run(bh_client *c, const char *code, const struct bh_client_run_opts *opts,
		  struct wire_run_response *out, struct bh_client_error **err);
/* ---- project: a project in a fresh sandbox (plimsoll's ProjectRun; p is
 * copied), its answer checked as a snippet's is, the result of kind
 * "project". ---- */
int bh_client_run_project_async(bh_client *c, const struct wire_project_run *p,
				const struct bh_client_run_opts *opts, bh_client_run_cb cb,
				void *arg, struct bh_client_error **err);
int bh_client_run_project(bh_client *c, const struct wire_project_run *p,
			  const struct bh_client_run_opts *opts, struct wire_run_response *out,
			  struct bh_client_error **err);

struct bh_client_open_opts {
	enum bh_tier floor;         /* also every call's floor unless the call asks for more */
	uint32_t languages;         /* 1 << bh_language: interpreters to start at open */
	uint32_t lifetime_ms;       /* 0: the daemon's */
	const char *owner;          /* a keyed digest of the end user; NULL: none */
	/* ---- truth ---- */
	const char *trace_id;       /* plimsoll's traceId: the daemon's run key for the session
				       ([A-Za-z0-9._:-]{1,64}, else the daemon drops it); NULL: none */
	/* ---- profiles ---- */
	const char *grant_profile;  /* bulkhead's OpenSession extension: the egress profile the
				       session holds from open to close (Describe lists the
				       caller's); NULL: none. A plimsoll daemon ignores it */
};

/* Opens a session. The fingerprint must be SHA-256 of the id and the tier
 * must meet the floor; otherwise the session is closed and the call fails
 * data_loss. On success s is the caller's (bh_client_session_free). */
typedef void (*bh_client_open_cb)(void *arg, bh_client_session *s,
				  const struct bh_client_error *err);
int bh_client_open_async(bh_client *c, const struct bh_client_open_opts *opts,
			 bh_client_open_cb cb, void *arg, struct bh_client_error **err);
int bh_client_open(bh_client *c, const struct bh_client_open_opts *opts, bh_client_session **out,
		   struct bh_client_error **err);

/* A handle on a session opened elsewhere (another process of the same
 * principal), continuing the chain its caller vouches for: calls and the
 * last record digest ("" and 0 for a fresh one). The evidence is learnt from
 * its first answer. */
int bh_client_session_adopt(bh_client *c, const char *session_id, uint64_t calls,
			    const char *last_record_sha256, enum bh_tier floor,
			    bh_client_session **out, struct bh_client_error **err);
/* Abandons the session's calls (no callbacks) and forgets it; it stays open
 * on the daemon until closed or its lifetime ends. */
void bh_client_session_free(bh_client_session *s);

struct bh_client_session_view {
	const char *fingerprint;    /* SHA-256 of the id: what records and the operator API name */
	const char *sandbox;        /* the provider stated at open */
	const char *isolation;      /* the tier stated at open */
	int64_t expires_unix_ms;
	uint32_t idle_timeout_ms;
	uint64_t calls;             /* the chain as this client saw it */
	const char *last_record_sha256;
	enum wire_session_end end;  /* WIRE_END_OPEN until an answer said otherwise */
	const char *end_detail;
	const char *stopped;        /* set once a call ended without a checkable answer: nothing
				       more is sent on the session */
};
void bh_client_session_get(const bh_client_session *s, struct bh_client_session_view *out);

struct bh_client_cell {
	enum bh_language language;
	const char *code;
	size_t code_len;            /* 0: strlen(code) */
	const struct bh_file *files;/* written into /work first; content is UTF-8 text */
	size_t n_files;
	int32_t timeout_ms;         /* 0: the daemon's default */
	enum bh_tier floor;         /* raises the session's floor for this call */
};

/* One cell. Calls on a session are sent one at a time, in order (later ones
 * wait here), so the chain this client checks follows the daemon's. */
typedef void (*bh_client_cell_cb)(void *arg, struct wire_session_run_response *res,
				  const struct bh_client_error *err);
int bh_client_session_run_async(bh_client_session *s, const struct bh_client_cell *cell,
				bh_client_cell_cb cb, void *arg, struct bh_client_error **err);
int bh_client_session_run(bh_client_session *s, const struct bh_client_cell *cell,
			  struct wire_session_run_response *out, struct bh_client_error **err);

/* Ends the session (or collects one that ended by itself); the daemon's
 * count and last digest must equal the chain this client saw. */
typedef void (*bh_client_close_cb)(void *arg, struct wire_close_session_response *res,
				   const struct bh_client_error *err);
int bh_client_session_close_async(bh_client_session *s, bh_client_close_cb cb, void *arg,
				  struct bh_client_error **err);
int bh_client_session_close(bh_client_session *s, struct wire_close_session_response *out,
			    struct bh_client_error **err);

/* ---- bulkhead.v1.OperatorService --------------------------------------- */

/* The generic call: json_out is the answer's body, valid during the callback,
 * when the call succeeded. The blocking form hands a copy the caller frees. */
typedef void (*bh_client_operator_cb)(void *arg, const char *json_out,
				      const struct bh_client_error *err);
int bh_client_operator_call_async(bh_client *c, const char *method, const char *json_in,
				  bh_client_operator_cb cb, void *arg, struct bh_client_error **err);
int bh_client_operator_call(bh_client *c, const char *method, const char *json_in,
			    char **json_out, struct bh_client_error **err);

/* The typed calls: the generic call with a request wire encoded and an
 * answer wire decoded (wire_operator.h), so the CLI and the console read
 * every answer the same way. An answer that does not keep its shape is
 * data_loss. Sessions are named by fingerprint (64 hex digits), checked
 * before anything is sent. What a callback receives is the library's; a
 * callback keeps it by moving it out (copy the struct, zero the original),
 * and the blocking forms hand it over: free it with its wire_operator_*_free. */
typedef void (*bh_client_done_cb)(void *arg, const struct bh_client_error *err);
typedef void (*bh_client_sessions_cb)(void *arg, struct wire_operator_sessions *res,
				      const struct bh_client_error *err);
typedef void (*bh_client_closed_cb)(void *arg, struct wire_operator_closed *res,
				    const struct bh_client_error *err);
typedef void (*bh_client_leaks_cb)(void *arg, struct wire_operator_leaks *res,
				   const struct bh_client_error *err);
typedef void (*bh_client_evidence_cb)(void *arg, struct wire_operator_evidence *res,
				      const struct bh_client_error *err);
typedef void (*bh_client_records_cb)(void *arg, struct wire_operator_records *res,
				     const struct bh_client_error *err);
typedef void (*bh_client_events_cb)(void *arg, struct wire_operator_events *res,
				    const struct bh_client_error *err);

/* state: NULL or "" for every session. */
int bh_client_list_sessions_async(bh_client *c, const char *state, bh_client_sessions_cb cb,
				  void *arg, struct bh_client_error **err);
int bh_client_list_sessions(bh_client *c, const char *state, struct wire_operator_sessions *out,
			    struct bh_client_error **err);
int bh_client_get_session(bh_client *c, const char *fingerprint, struct wire_operator_session *out,
			  struct bh_client_error **err);
/* ---- truth ---- */
typedef void (*bh_client_session_cb)(void *arg, struct wire_operator_session *res,
				     const struct bh_client_error *err);
int bh_client_get_session_async(bh_client *c, const char *fingerprint, bh_client_session_cb cb,
				void *arg, struct bh_client_error **err);

enum bh_client_action { BH_CLIENT_PAUSE, BH_CLIENT_RESUME, BH_CLIENT_HIBERNATE, BH_CLIENT_KILL };
int bh_client_act_async(bh_client *c, enum bh_client_action action, const char *fingerprint,
			bh_client_done_cb cb, void *arg, struct bh_client_error **err);
int bh_client_pause(bh_client *c, const char *fingerprint, struct bh_client_error **err);
int bh_client_resume(bh_client *c, const char *fingerprint, struct bh_client_error **err);
int bh_client_hibernate(bh_client *c, const char *fingerprint, struct bh_client_error **err);
/* ---- density (issue 21): Branch: count (1..16) children of an idle
 * kernel-tier session, each hibernated on its checkpoint, their ids in *out
 * (free with wire_operator_branched_free); bulkhead.h's bh_session_branch
 * says what a branch is ---- */
int bh_client_branch(bh_client *c, const char *fingerprint, unsigned count,
		     struct wire_operator_branched *out, struct bh_client_error **err);
int bh_client_kill(bh_client *c, const char *fingerprint, struct bh_client_error **err);
int bh_client_close_async(bh_client *c, const char *fingerprint, bh_client_closed_cb cb, void *arg,
			  struct bh_client_error **err);
int bh_client_close(bh_client *c, const char *fingerprint, struct wire_operator_closed *out,
		    struct bh_client_error **err);

/* Leaks, and what gc reaped (or would reap, dry_run). */
int bh_client_leaks_async(bh_client *c, bh_client_leaks_cb cb, void *arg,
			  struct bh_client_error **err);
int bh_client_gc_async(bh_client *c, bool dry_run, bh_client_leaks_cb cb, void *arg,
		       struct bh_client_error **err);
int bh_client_leaks(bh_client *c, struct wire_operator_leaks *out, struct bh_client_error **err);
int bh_client_gc(bh_client *c, bool dry_run, struct wire_operator_leaks *out,
		 struct bh_client_error **err);

/* The tier evidence as the daemon states it. */
int bh_client_evidence_async(bh_client *c, bh_client_evidence_cb cb, void *arg,
			     struct bh_client_error **err);
int bh_client_evidence(bh_client *c, struct wire_operator_evidence *out,
		       struct bh_client_error **err);

/* A page of records: req's session (NULL: all), after_id, or newest and
 * before_id, and limit (0: the daemon's page); with has_sequence, that
 * session's one record, checked to be the one asked for. */
int bh_client_list_records_async(bh_client *c, const struct wire_operator_request *req,
				 bh_client_records_cb cb, void *arg, struct bh_client_error **err);
/* after_id 0 from the first; limit 0: the daemon's page size. */
int bh_client_list_records(bh_client *c, const char *session, int64_t after_id, uint32_t limit,
			   struct wire_operator_records *out, struct bh_client_error **err);
/* Paging from the newest: the last `limit` records before before_id (0: the
 * newest of all), listed in commit order; next_before_id pages further back. */
int bh_client_list_records_newest(bh_client *c, const char *session, int64_t before_id,
				  uint32_t limit, struct wire_operator_records *out,
				  struct bh_client_error **err);
/* One session's record by its sequence: out->n is 1, or 0 when it has none. */
int bh_client_record_at(bh_client *c, const char *session, uint64_t sequence,
			struct wire_operator_records *out, struct bh_client_error **err);

/* A page of events as for records (no session); wait_ms > 0: a long poll that
 * answers once an event exists or the wait ends. */
int bh_client_list_events_async(bh_client *c, const struct wire_operator_request *req,
				bh_client_events_cb cb, void *arg, struct bh_client_error **err);
int bh_client_list_events(bh_client *c, int64_t after_id, uint32_t limit, uint32_t wait_ms,
			  struct wire_operator_events *out, struct bh_client_error **err);
/* The newest events before before_id (0: of all), listed oldest first. */
int bh_client_list_events_newest(bh_client *c, int64_t before_id, uint32_t limit,
				 struct wire_operator_events *out, struct bh_client_error **err);

/* A session's files below /work (path "" for /work itself), and one file's
 * first max_bytes (0: the daemon's default). */
int bh_client_list_files(bh_client *c, const char *fingerprint, const char *path,
			 struct wire_operator_files *out, struct bh_client_error **err);
int bh_client_read_file(bh_client *c, const char *fingerprint, const char *path,
			uint32_t max_bytes, struct wire_operator_file *out,
			struct bh_client_error **err);

/* ---- procs ---- */
/* The processes in a session's sandbox (ListProcesses), read by its init
 * while a call may be running. */
int bh_client_list_processes(bh_client *c, const char *fingerprint,
			     struct wire_operator_processes *out, struct bh_client_error **err);
/* The asynchronous forms of ListProcesses, ListFiles and ReadFile (the
 * console's): res is the callback's during the call. */
typedef void (*bh_client_processes_cb)(void *arg, struct wire_operator_processes *res,
				       const struct bh_client_error *err);
typedef void (*bh_client_files_cb)(void *arg, struct wire_operator_files *res,
				   const struct bh_client_error *err);
typedef void (*bh_client_file_cb)(void *arg, struct wire_operator_file *res,
				  const struct bh_client_error *err);
int bh_client_list_processes_async(bh_client *c, const char *fingerprint,
				   bh_client_processes_cb cb, void *arg,
				   struct bh_client_error **err);
int bh_client_list_files_async(bh_client *c, const char *fingerprint, const char *path,
			       bh_client_files_cb cb, void *arg, struct bh_client_error **err);
int bh_client_read_file_async(bh_client *c, const char *fingerprint, const char *path,
			      uint32_t max_bytes, bh_client_file_cb cb, void *arg,
			      struct bh_client_error **err);
/* ---- approvals ---- */
/* The calls the daemon holds for a person's decision (ListApprovals), and
 * a decision (DecideApproval: approve, or deny with a reason). The daemon
 * says who decided (this client's principal). */
int bh_client_list_approvals(bh_client *c, struct wire_operator_approvals *out,
			     struct bh_client_error **err);
int bh_client_decide_approval(bh_client *c, const char *id, bool approve, const char *reason,
			      struct wire_operator_decision *out, struct bh_client_error **err);
/* The console's forms: the callback gets the decoded answer (the library's,
 * valid during the callback) or the error. */
typedef void (*bh_client_approvals_cb)(void *arg, const struct wire_operator_approvals *a,
				       const struct bh_client_error *err);
int bh_client_list_approvals_async(bh_client *c, bh_client_approvals_cb cb, void *arg,
				   struct bh_client_error **err);
int bh_client_decide_approval_async(bh_client *c, const char *id, bool approve,
				    const char *reason, bh_client_done_cb cb, void *arg,
				    struct bh_client_error **err);

/* ---- stream: the running cell's output, and a session's stored cells ---- */

/* Where a follower is: the cell (its sequence) and the bytes of each stream
 * it has. {0} follows whatever cell is latest. */
struct bh_client_follow_cursor {
	uint64_t sequence;
	uint64_t stdout_after, stderr_after;
};
typedef void (*bh_client_follow_cb)(void *arg, struct wire_operator_follow *res,
				    const struct bh_client_error *err);
/* FollowCell: a long poll of up to wait_ms (at most WIRE_OPERATOR_WAIT_MAX_MS)
 * that answers once there is news past the cursor (bytes, a newer cell, its
 * end), or with nothing when the wait ends. */
int bh_client_follow_cell_async(bh_client *c, const char *fingerprint,
				const struct bh_client_follow_cursor *cur, uint32_t wait_ms,
				bh_client_follow_cb cb, void *arg, struct bh_client_error **err);
int bh_client_follow_cell(bh_client *c, const char *fingerprint,
			  const struct bh_client_follow_cursor *cur, uint32_t wait_ms,
			  struct wire_operator_follow *out, struct bh_client_error **err);
/* Moves the cursor past an answer: past its bytes, and once its cell is
 * done, to the cell after it. */
void bh_client_follow_advance(struct bh_client_follow_cursor *cur,
			      const struct wire_operator_follow *f);
/* ListCells: at most limit (0: the daemon's; at most 50) cells with a
 * sequence below before_sequence (0: from the newest), newest first. */
int bh_client_list_cells(bh_client *c, const char *fingerprint, uint64_t before_sequence,
			 uint32_t limit, struct wire_operator_cells *out,
			 struct bh_client_error **err);

/* ---- finding a daemon ----------------------------------------------------- */

/* The socket of the daemon holding state_dir (NULL: bh_state_dir_name's),
 * from STATE/daemon.sock.path, trusted only as far as it can be checked
 * (discover.c): the state directory passes bh_state_dir_check, the note is
 * its owner's (or root's) regular file naming the absolute path of a unix
 * socket that uid or root owns, in a directory only they can change, and
 * the process answering on it runs as that uid or root.
 * 1: *sock (caller frees) is that daemon. 0: none (no note, or its socket
 * answers nobody; then *why may say so). -1: the note is not trusted (*why
 * says why, caller frees): nothing may be sent to what it names. */
int bh_client_discover(const char *state_dir, char **sock, char **why);
/* The token a command should send: the first line of token_file when given,
 * else $BULKHEAD_TOKEN, else NULL (an open daemon). -1 with *err when the
 * file cannot be read. Caller frees *out. */
int bh_client_token(const char *token_file, char **out, struct bh_client_error **err);

/* ---- usage ---- */
/* Every live session's usage and the host's and daemon's figures, in one
 * call (bulkhead.v1.OperatorService/Usage). */
typedef void (*bh_client_usage_cb)(void *arg, struct wire_operator_usage *res,
				   const struct bh_client_error *err);
int bh_client_usage_async(bh_client *c, bh_client_usage_cb cb, void *arg,
			  struct bh_client_error **err);
int bh_client_usage(bh_client *c, struct wire_operator_usage *out, struct bh_client_error **err);

/* ---- light: Overview, the console's one request a refresh ---- */
/* The sessions, the usage and how many calls wait, in one answer (valid
 * during the callback). token: the last answer's ("" or NULL: answer at
 * once); with one, the daemon answers when something changed or after
 * wait_ms (at most WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS) with changed false. */
typedef void (*bh_client_overview_cb)(void *arg, const struct wire_operator_overview *o,
				      const struct bh_client_error *err);
/* *handle (when not NULL): the call, until its callback runs, for
 * bh_client_overview_abandon (the call ends unanswered, its callback never
 * called: a poll still out when its owner goes). */
int bh_client_overview_async(bh_client *c, const char *token, uint32_t wait_ms,
			     bh_client_overview_cb cb, void *arg, void **handle,
			     struct bh_client_error **err);
void bh_client_overview_abandon(bh_client *c, void *handle);

/* ---- remote: forensics, done by the daemon's engine (docs/api.md,
 * Forensics). Each answer is valid during its callback; the blocking forms
 * hand it over (free it with its wire_operator_*_free). ---- */
typedef void (*bh_client_leftovers_cb)(void *arg, const struct wire_operator_leftovers *res,
				       const struct bh_client_error *err);
int bh_client_leftovers_async(bh_client *c, bh_client_leftovers_cb cb, void *arg,
			      struct bh_client_error **err);
/* fingerprint: NULL or "" for every session's intents. */
typedef void (*bh_client_intents_cb)(void *arg, const struct wire_operator_intents *res,
				     const struct bh_client_error *err);
int bh_client_intents_async(bh_client *c, const char *fingerprint, bh_client_intents_cb cb,
			    void *arg, struct bh_client_error **err);
int bh_client_intents(bh_client *c, const char *fingerprint, struct wire_operator_intents *out,
		      struct bh_client_error **err);
/* dir is a folder on the daemon's host, below its --capture-root. */
typedef void (*bh_client_captured_cb)(void *arg, const struct wire_operator_captured *res,
				      const struct bh_client_error *err);
int bh_client_capture_async(bh_client *c, const struct wire_operator_capture_request *req,
			    bh_client_captured_cb cb, void *arg, struct bh_client_error **err);
int bh_client_capture(bh_client *c, const struct wire_operator_capture_request *req,
		      struct wire_operator_captured *out, struct bh_client_error **err);
typedef void (*bh_client_hits_cb)(void *arg, const struct wire_operator_hits *res,
				  const struct bh_client_error *err);
int bh_client_search_async(bh_client *c, const char *query, uint32_t limit,
			   bh_client_hits_cb cb, void *arg, struct bh_client_error **err);
int bh_client_search(bh_client *c, const char *query, uint32_t limit,
		     struct wire_operator_hits *out, struct bh_client_error **err);
/* The chosen findings reaped (or, dry_run, what would be): the answer's
 * list is what the daemon found again and unheld. */
int bh_client_reap_async(bh_client *c, const struct bh_leak *chosen, size_t n, bool dry_run,
			 bh_client_leaks_cb cb, void *arg, struct bh_client_error **err);
int bh_client_reap(bh_client *c, const struct bh_leak *chosen, size_t n, bool dry_run,
		   struct wire_operator_leaks *out, struct bh_client_error **err);

#endif
