/* bulkhead.v1.OperatorService messages <-> plain C structs (docs/api.md's
 * table): what the console and an operator's tools see of sessions, history,
 * leaks and the tier evidence. Sessions are named by fingerprint, never by id.
 *
 * The JSON rules are plimsoll.v1's (wire.h): lowerCamelCase names, 64-bit
 * integers as decimal strings, zero values omitted, except that every list
 * an answer holds is written even when empty ({"sessions":[]}), as the daemon
 * always has. The daemon encodes answers with these functions; the client and
 * the console decode them with the same ones, so a malformed answer is refused
 * the same way everywhere: DATA_LOSS, unmarked, with the method and the field
 * named ("ListSessions: sessions[0].calls must be an integer ..."). Decoding
 * is as strict as plimsoll's answers: a field of the wrong type or given
 * twice, an integer that is not exact, a string that is not UTF-8, a record
 * row without its record or a leak of a kind this build does not know is
 * refused; unknown fields are ignored.
 *
 * Ownership is wire.h's: what a decoder (or a wire_operator_*_add
 * constructor) fills, it owns, and the matching _free releases it; what a
 * caller fills by hand for an encoder stays the caller's (a NULL string is
 * ""). Encoders return JSON text the caller frees with free().
 */
#ifndef BH_WIRE_OPERATOR_H
#define BH_WIRE_OPERATOR_H

#include "wire.h"

#define WIRE_OPERATOR_SERVICE "bulkhead.v1.OperatorService"

/* A history page's size: the daemon's default and its most. */
#define WIRE_OPERATOR_PAGE_DEFAULT 200
#define WIRE_OPERATOR_PAGE_MAX 1000
/* ReadFile's cap on the bytes answered: the default, and the bound a
 * maxBytes must stay under to be honoured. */
#define WIRE_OPERATOR_READ_DEFAULT (1u << 20)
#define WIRE_OPERATOR_READ_MAX (4u << 20)
/* The longest a ListEvents long poll waits. */
#define WIRE_OPERATOR_WAIT_MAX_MS 30000

/* ---- requests ------------------------------------------------------------ */

/* Every field any operator request carries; each method reads its own:
 *   ListSessions  state          GetSession, Pause, Resume, Hibernate, Close, Kill  session
 *   ListRecords   session after_id newest before_id sequence limit
 *   ListEvents    after_id newest before_id limit wait_ms
 *   Gc            dry_run        ListFiles  session path     ReadFile  session path max_bytes
 * Leaks and Evidence take none. */
struct wire_operator_request {
	const char *session;    /* a fingerprint; NULL: none sent (encoding writes even "") */
	bool has_session;       /* decoded: a "session" member was there, of whatever type */
	const char *state;      /* NULL or "": every session */
	int64_t after_id, before_id;
	bool newest;
	bool has_sequence;      /* ListRecords: that session's record by its sequence */
	uint64_t sequence;
	uint32_t limit;         /* encoding, 0: the daemon's page; decoded: the page in effect */
	uint32_t wait_ms;       /* decoded: at most WIRE_OPERATOR_WAIT_MAX_MS */
	bool dry_run;
	const char *path;       /* decoded: "" when absent (/work), NULL when not a string */
	uint32_t max_bytes;     /* encoding, 0: the default; decoded: the cap in effect */
	/* ---- stream: FollowCell  session sequence stdout_after stderr_after wait_ms;
	 *      ListCells  session before_sequence limit ---- */
	uint64_t stdout_after, stderr_after;
	uint64_t before_sequence;
	/* ---- density: Branch  session count (absent: 1; present but not a
	 * positive whole number: 0, which the engine refuses naming it) ---- */
	uint32_t count;
};

char *wire_operator_encode_request(const struct wire_operator_request *r);
/* The daemon's reading, as lenient as it has always been: a body that is not
 * a JSON object is refused (INVALID_ARGUMENT, marked REQUEST); otherwise every
 * field reads as its zero value when absent or of another type (ids as
 * numbers or strings, a limit outside 1..PAGE_MAX as the default or the
 * most), and the daemon judges what it needs (a session's fingerprint, a
 * path). */
int wire_operator_decode_request(const char *body, size_t len, struct wire_operator_request *out,
				 struct wire_status *st);
void wire_operator_request_free(struct wire_operator_request *r);

/* ---- sessions ------------------------------------------------------------- */

/* A session as the operator sees it (docs/api.md's Session). */
struct wire_operator_session {
	const char *fingerprint; /* "session" */
	const char *sandbox, *state, *isolation;
	const char *floor;       /* "minimumIsolation"; "" for none */
	const char *principal, *owner, *run_key;
	uint64_t calls;
	const char *last_record_sha256;
	int64_t created_unix_ms, last_call_unix_ms, expires_unix_ms;
	uint64_t awake_ms;
	const char *end_reason;  /* "" while live */
	/* ---- truth: describe's fields (docs/api.md, Session) ---- */
	const char *call_code;     /* the cell in flight; GetSession only ("" in a list) */
	const char *call_language; /* "" when no cell is in flight */
	int64_t call_started_unix_ms;
	int64_t pauses_unix_ms, hibernates_unix_ms; /* the policy clocks; 0: not running */
	const char *evidence;      /* its tier's proof (bulkhead-sandbox:sha256:...) */
	const char *end_detail;
	/* ---- egress: its profile, brokered requests and the last one ---- */
	const char *egress_profile;
	uint64_t egress_requests;
	const char *egress_last;
	/* ---- replay: refused calls, for :live ---- */
	uint64_t refused;         /* "refusedCalls" */
	const char *last_refusal; /* "lastRefusal"; "" for none */
};

struct wire_operator_sessions { /* ListSessions */
	struct wire_operator_session *sessions;
	size_t n;
};

/* Close: the count and last digest its client must agree with. */
struct wire_operator_closed {
	const char *session;
	uint64_t calls;
	const char *last_record_sha256;
	const char *end_reason;
};

/* The engine's view of a session in the message's shape; the strings are
 * borrowed from i (a NULL one reads as ""). */
struct wire_operator_session wire_operator_session_of(const struct bh_session_info *i);

char *wire_operator_encode_session(const struct wire_operator_session *s); /* GetSession */
char *wire_operator_encode_sessions(const struct wire_operator_sessions *s);
char *wire_operator_encode_closed(const struct wire_operator_closed *c);
/* Pause, Resume, Hibernate and Kill answer {} once done. */
char *wire_operator_encode_done(void);

int wire_operator_decode_session(const char *body, size_t len, struct wire_operator_session *out,
				 struct wire_status *st);
int wire_operator_decode_sessions(const char *body, size_t len, struct wire_operator_sessions *out,
				  struct wire_status *st);
int wire_operator_decode_closed(const char *body, size_t len, struct wire_operator_closed *out,
				struct wire_status *st);
/* method names the action in a refusal ("Pause: ..."). */
int wire_operator_decode_done(const char *method, const char *body, size_t len,
			      struct wire_status *st);

void wire_operator_session_free(struct wire_operator_session *s);
void wire_operator_sessions_free(struct wire_operator_sessions *s);
void wire_operator_closed_free(struct wire_operator_closed *c);

/* ---- leaks and gc ---------------------------------------------------------- */

/* Which list an answer holds: Leaks' findings, or what Gc reaped (or, with
 * dryRun, would reap). */
enum wire_operator_leak_list {
	WIRE_LEAKS_FOUND,     /* {"leaks":[...]} */
	WIRE_LEAKS_REAPED,    /* {"reaped":[...]} */
	WIRE_LEAKS_WOULD_REAP /* {"wouldReap":[...]} */
};
const char *wire_operator_leak_list_name(enum wire_operator_leak_list l); /* "leaks" */

/* The engine's own struct: a decoded string that does not fit its slot is
 * refused, not cut. */
struct wire_operator_leaks {
	struct bh_leak *leaks;
	size_t n;
};

char *wire_operator_encode_leaks(enum wire_operator_leak_list l, const struct wire_operator_leaks *v);
int wire_operator_decode_leaks(const char *body, size_t len, enum wire_operator_leak_list l,
			       struct wire_operator_leaks *out, struct wire_status *st);
void wire_operator_leaks_free(struct wire_operator_leaks *v);

/* ---- evidence ----------------------------------------------------------------- */

struct wire_operator_tier {
	const char *tier;
	bool offered, cached;
	const char *runtime, *runtime_version, *reason, *environment;
	const struct bh_evidence_line *evidence; /* {check, value, expect, ok} */
	size_t n_evidence;
};

struct wire_operator_evidence {
	const char *strongest;
	bool proving;            /* some tier's proof has not finished */
	const struct wire_operator_tier *tiers;
	size_t n_tiers;
};

char *wire_operator_encode_evidence(const struct wire_operator_evidence *e);
int wire_operator_decode_evidence(const char *body, size_t len, struct wire_operator_evidence *out,
				  struct wire_status *st);
void wire_operator_evidence_free(struct wire_operator_evidence *e);

/* ---- history: records and events ------------------------------------------------ */

struct wire_operator_record_row {
	int64_t id;                 /* commit order */
	struct bh_record record;    /* a RunRecord */
	const char *language, *flags; /* "" when none */
	int32_t exit_code;
	int64_t duration_us;
};

/* A page, in commit order. next_after_id is the page's last id (the cursor
 * to follow the tail with), next_before_id its first (for the page before). */
struct wire_operator_records {
	struct wire_operator_record_row *rows;
	size_t n, cap; /* cap: the rows allocated (wire_operator_records_add grows them) */
	int64_t next_after_id, next_before_id;
};

struct wire_operator_events {
	struct bh_event *events; /* strings owned */
	size_t n, cap;
	int64_t next_after_id, next_before_id;
};

/* Appends a copy of an engine row (owned strings). */
void wire_operator_records_add(struct wire_operator_records *page, const struct bh_record_row *row);
void wire_operator_events_add(struct wire_operator_events *page, const struct bh_event *ev);

char *wire_operator_encode_records(const struct wire_operator_records *page);
char *wire_operator_encode_events(const struct wire_operator_events *page);
int wire_operator_decode_records(const char *body, size_t len, struct wire_operator_records *out,
				 struct wire_status *st);
int wire_operator_decode_events(const char *body, size_t len, struct wire_operator_events *out,
				struct wire_status *st);
void wire_operator_records_free(struct wire_operator_records *page);
void wire_operator_events_free(struct wire_operator_events *page);

/* ---- files ------------------------------------------------------------------------ */

struct wire_operator_files { /* ListFiles */
	const struct bh_file_entry *entries; /* type: one character ("type" on the wire) */
	size_t n;
	bool more;
};

struct wire_operator_file { /* ReadFile */
	const uint8_t *content;
	size_t len;
	uint64_t size;
	bool truncated;
};

char *wire_operator_encode_files(const struct wire_operator_files *f);
char *wire_operator_encode_file(const struct wire_operator_file *f);
int wire_operator_decode_files(const char *body, size_t len, struct wire_operator_files *out,
			       struct wire_status *st);
int wire_operator_decode_file(const char *body, size_t len, struct wire_operator_file *out,
			      struct wire_status *st);
void wire_operator_files_free(struct wire_operator_files *f);
void wire_operator_file_free(struct wire_operator_file *f);

/* ---- density: Branch (session count) ------------------------------------------- */

struct wire_operator_branch_child {
	char session[65];    /* the child's fingerprint */
	char session_id[33]; /* the secret its caller names it by */
	char sandbox[40];
};
struct wire_operator_branched {
	struct wire_operator_branch_child *children;
	size_t n;                 /* decoded: 1..BH_BRANCH_MAX */
	uint64_t parent_paused_us; /* the parent's checkpoint: it answers again at its next call */
	uint64_t after;            /* the parent's record the children's chains go on from */
	char after_sha256[65];     /* its digest ("" when the parent had none) */
};
char *wire_operator_encode_branched(const struct wire_operator_branched *b);
int wire_operator_decode_branched(const char *body, size_t len, struct wire_operator_branched *out,
				  struct wire_status *st);
void wire_operator_branched_free(struct wire_operator_branched *b);

/* ---- procs: ListProcesses (session) ------------------------------------------------ */

struct wire_operator_processes {
	const struct bh_process *procs; /* state: one character ("state" on the wire) */
	size_t n;                       /* decoded: at most BH_PROCESSES_MAX */
	bool more;
};

/* Commands are written as UTF-8, each byte that is not valid UTF-8 as U+FFFD. */
char *wire_operator_encode_processes(const struct wire_operator_processes *p);
int wire_operator_decode_processes(const char *body, size_t len,
				   struct wire_operator_processes *out, struct wire_status *st);
void wire_operator_processes_free(struct wire_operator_processes *p);
/* s (NUL-terminated bytes) as UTF-8: each byte outside a valid sequence
 * becomes U+FFFD. The caller frees it. */
char *wire_utf8_lossy(const char *s);
/* ---- approvals ------------------------------------------------------------------- */

/* ListApprovals answers the calls the daemon holds for a person's decision
 * (docs/api.md, Approvals); DecideApproval decides one. */
#define WIRE_APPROVAL_REASON_MAX 512 /* bytes of a decision's reason */
#define WIRE_APPROVAL_TEXT_MAX (64u << 10) /* a held file's bytes shown as text */
#define WIRE_APPROVAL_FILES_TEXT_MAX (256u << 10) /* all of one call's files' text */
/* The encoded code and text one ListApprovals answer carries (well under
 * BH_CLIENT_MAX_ANSWER); past it, later calls are listed without them. */
#define WIRE_APPROVAL_ANSWER_TEXT_MAX (16u << 20)

struct wire_operator_approval { /* one held call */
	const char *id;
	const char *procedure;   /* "SessionRun" or "Run" */
	const char *principal, *run_key, *owner;
	const char *session;     /* fingerprint; "" for a one-shot Run */
	const char *isolation;   /* the tier it would run on */
	const char *kind;        /* "cell" or "javascript" */
	const char *language;
	const char *code;
	char request_sha256[65]; /* the digest its record will carry */
	int64_t held_unix_ms, deadline_unix_ms;
	uint32_t n_files;
	uint64_t code_bytes;     /* the code's size */
	bool code_omitted;       /* this answer left the code out (see ListApprovals) */
};

struct wire_operator_approval_file { /* a file a held cell would write */
	const char *approval;    /* the held call's id */
	const char *name;
	uint64_t size;
	bool binary;             /* not UTF-8: text is "" */
	bool truncated;          /* text holds the first WIRE_APPROVAL_TEXT_MAX bytes */
	const char *text;
};

struct wire_operator_approvals { /* ListApprovals */
	struct wire_operator_approval *approvals;
	size_t n;
	struct wire_operator_approval_file *files;
	size_t n_files;
	uint32_t cap_total, cap_per_principal;
	uint32_t timeout_ms;     /* how long a call is held */
};

struct wire_operator_decision { /* DecideApproval's request and its answer */
	const char *id;
	const char *decision;    /* "approve" or "deny" */
	const char *reason;
	const char *by;          /* answered: the operator's principal */
	int64_t decided_unix_ms; /* answered */
};

char *wire_operator_encode_approvals(const struct wire_operator_approvals *a);
int wire_operator_decode_approvals(const char *body, size_t len, struct wire_operator_approvals *out,
				   struct wire_status *st);
void wire_operator_approvals_free(struct wire_operator_approvals *a);
char *wire_operator_encode_decision(const struct wire_operator_decision *d);
/* The daemon reads the request strictly (INVALID_ARGUMENT, marked REQUEST):
 * id and decision are required, decision is "approve" or "deny", a denial
 * needs a reason, a reason is at most WIRE_APPROVAL_REASON_MAX bytes. */
int wire_operator_decode_decision_request(const char *body, size_t len,
					  struct wire_operator_decision *out, struct wire_status *st);
/* The client reads the answer (DATA_LOSS, as every answer). */
int wire_operator_decode_decision(const char *body, size_t len, struct wire_operator_decision *out,
				  struct wire_status *st);
void wire_operator_decision_free(struct wire_operator_decision *d);
/* What the daemon keeps of a held call: owned copies, and a file's bytes
 * as the text shown (the first WIRE_APPROVAL_TEXT_MAX bytes, whole UTF-8
 * characters; "" and binary when it is not UTF-8). */
void wire_operator_approval_copy(struct wire_operator_approval *dst,
				 const struct wire_operator_approval *src);
void wire_operator_approval_clear(struct wire_operator_approval *a);
void wire_operator_approval_file_of(struct wire_operator_approval_file *f, const char *approval,
				    const char *name, const uint8_t *content, size_t len);
void wire_operator_approval_file_clear(struct wire_operator_approval_file *f);
/* The bytes s takes as a JSON string (escapes counted), for the budget. */
size_t wire_operator_json_string_cost(const char *s);
/* ---- usage ------------------------------------------------------------------------- */

/* Usage: every live session's sample (by fingerprint) and the host's and the
 * daemon's figures, in one answer (docs/api.md). A session's isolation and
 * state are read by their names (one this build does not know is refused),
 * its history holds at most BH_USAGE_HISTORY points. */
struct wire_operator_usage {
	const char *version;               /* the daemon's (BULKHEAD_VERSION) */
	struct bh_host_usage host;         /* started_unix_ms: the daemon's engine's start */
	struct bh_session_usage *sessions;
	size_t n;
};

char *wire_operator_encode_usage(const struct wire_operator_usage *u);
int wire_operator_decode_usage(const char *body, size_t len, struct wire_operator_usage *out,
			       struct wire_status *st);
void wire_operator_usage_free(struct wire_operator_usage *u);

/* ---- stream: cells (wire_operator_cells.c) ------------------------------------------ */

/* A FollowCell answer holds at most this many bytes of each stream; the
 * follower asks again from where it ended. */
#define WIRE_OPERATOR_FOLLOW_MAX (256u * 1024u)

/* FollowCell: the session's latest cell, its output after the cursor
 * (stdout from stdout_offset, stderr from stderr_offset), and once it
 * ended, how (done; answered: its exit and its record's digest). */
struct wire_operator_follow {
	uint64_t sequence;       /* 0: no cell yet */
	bool running, done, answered;
	const char *language;
	int64_t started_unix_ms;
	uint64_t stdout_offset, stderr_offset;
	int32_t exit_code;
	bool timed_out, stdout_truncated, stderr_truncated;
	uint64_t duration_us;
	const char *record_sha256; /* "" unless answered */
	const uint8_t *code, *out, *err; /* bytes (base64 on the wire) */
	size_t code_len, out_len, err_len;
};

/* ListCells: one stored cell (docs/api.md's Cell). */
struct wire_operator_cell {
	uint64_t sequence;
	const char *language, *flags, *unanswered, *record_sha256;
	int32_t exit_code;
	int64_t duration_us, started_unix_ms, ended_unix_ms;
	const uint8_t *code, *out, *err;
	size_t code_len, out_len, err_len;
};

struct wire_operator_cells {
	struct wire_operator_cell *cells; /* newest first */
	size_t n, cap;
	uint64_t next_before_sequence;   /* the last cell's sequence; 0: no more */
};

/* Appends an owned copy of an engine row. */
void wire_operator_cells_add(struct wire_operator_cells *page, const struct bh_cell_row *row);
/* The engine's view in the message's shape (borrowed bytes). */
struct wire_operator_follow wire_operator_follow_of(const struct bh_cell_output *o);

char *wire_operator_encode_follow(const struct wire_operator_follow *f);
char *wire_operator_encode_cells(const struct wire_operator_cells *page);
int wire_operator_decode_follow(const char *body, size_t len, struct wire_operator_follow *out,
				struct wire_status *st);
int wire_operator_decode_cells(const char *body, size_t len, struct wire_operator_cells *out,
			       struct wire_status *st);
void wire_operator_follow_free(struct wire_operator_follow *f);
void wire_operator_cells_free(struct wire_operator_cells *page);

/* ---- light: Overview, the console's one request a refresh (B27) ------------- */

/* Overview answers what the console's header and sandboxes view show — the
 * sessions (as ListSessions), the usage (as Usage) and how many calls wait
 * for a decision — in one answer, with a change token: the engine's
 * generation (bumped whenever a session is opened, changes state, takes a
 * call or is forgotten), the newest usage sample's time, and the held
 * calls'. A request that sends the token it last saw is a long poll: it is
 * answered as soon as the token differs, or after waitMs (capped at
 * WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS) with changed false and nothing else.
 * The poll is parked with FollowCell's and ListEvents' (no thread of its
 * own). */
#define WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS 5000u
#define WIRE_OPERATOR_TOKEN_MAX 80 /* bytes of a change token */

struct wire_operator_overview_request {
	const char *token; /* "" : answer at once */
	uint32_t wait_ms;  /* decoded: at most WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS */
};

struct wire_operator_overview {
	const char *token;
	bool changed; /* false: only the token; the rest is as last answered */
	struct wire_operator_sessions sessions;
	struct wire_operator_usage usage;
	uint32_t approvals_waiting;
};

char *wire_operator_encode_overview_request(const struct wire_operator_overview_request *r);
/* The daemon's strict reading: only token (a string of at most
 * WIRE_OPERATOR_TOKEN_MAX printable bytes) and waitMs (a number >= 0). */
int wire_operator_decode_overview_request(const char *body, size_t len,
					  struct wire_operator_overview_request *out,
					  struct wire_status *st);
void wire_operator_overview_request_free(struct wire_operator_overview_request *r);
char *wire_operator_encode_overview(const struct wire_operator_overview *o);
int wire_operator_decode_overview(const char *body, size_t len, struct wire_operator_overview *out,
				  struct wire_status *st);
void wire_operator_overview_free(struct wire_operator_overview *o);

/* ---- remote: forensics over the operator API (wire_operator_forensics.c) ----
 *
 * What an embedded console reads and does in :leaks, the timeline and the
 * searches, asked of a live daemon's engine instead (docs/api.md,
 * Forensics). Every request is read strictly by the daemon (only its own
 * members, each of its type and bounds: INVALID_ARGUMENT, marked REQUEST),
 * every answer by the client and the console as strictly as the others
 * (DATA_LOSS).
 *   Leftovers    {}                          what a dead engine left at open
 *   ListIntents  {session}                   the calls' intents ("" : all)
 *   Capture      {target, dir, files}        a finding's evidence, written by
 *                                            the daemon on its host
 *   Search       {query, limit}              stored code and output
 *   Reap         {findings, dryRun}          the chosen findings (bh_engine_reap) */

/* Leftovers: the daemon engine's bh_leftovers (bulkhead.h). */
struct wire_operator_leftovers {
	struct bh_leftovers l;
};
char *wire_operator_encode_leftovers(const struct wire_operator_leftovers *v);
int wire_operator_decode_leftovers(const char *body, size_t len,
				   struct wire_operator_leftovers *out, struct wire_status *st);
/* The requests that carry nothing ({}, Leftovers'): any member is refused. */
int wire_operator_decode_empty_request(const char *method, const char *body, size_t len,
				       struct wire_status *st);

/* ListIntents. */
struct wire_operator_intents_request {
	const char *session; /* "": every session's; else a fingerprint (64 hex digits) */
};
struct wire_operator_intent { /* bh_inflight, as the wire carries it */
	const char *session, *code_sha256, *language, *principal, *owner;
	const uint8_t *code; /* bytes (base64 on the wire) */
	size_t code_len;
	bool code_kept, interrupted;
	uint64_t sequence;
	int64_t engine_pid, started_unix_ms, reaped_unix_ms;
};
struct wire_operator_intents {
	struct wire_operator_intent *intents;
	size_t n, cap;
};
#define WIRE_OPERATOR_INTENTS_MAX 1000u /* an answer's; the store keeps a handful */
char *wire_operator_encode_intents_request(const struct wire_operator_intents_request *r);
int wire_operator_decode_intents_request(const char *body, size_t len,
					 struct wire_operator_intents_request *out,
					 struct wire_status *st);
void wire_operator_intents_request_free(struct wire_operator_intents_request *r);
/* Appends an owned copy of an engine row (at most WIRE_OPERATOR_INTENTS_MAX;
 * false past it). */
bool wire_operator_intents_add(struct wire_operator_intents *v, const struct bh_inflight *row);
/* The engine's struct over a decoded intent (borrowed strings; code is not
 * NUL-terminated). */
void wire_operator_intent_as_inflight(const struct wire_operator_intent *w,
				      struct bh_inflight *out);
char *wire_operator_encode_intents(const struct wire_operator_intents *v);
int wire_operator_decode_intents(const char *body, size_t len, struct wire_operator_intents *out,
				 struct wire_status *st);
void wire_operator_intents_free(struct wire_operator_intents *v);

/* Capture: target names a finding or a session (a fingerprint, 8 or more of
 * its first hex digits, or a sandbox name: bh_engine_capture_target), dir
 * the folder the daemon makes on its own host (absolute, clean: no "." or
 * ".." part, no doubled or trailing slash; the daemon's --capture-root
 * decides where), files the /work paths to keep (at most
 * BH_CAPTURE_PICKED_MAX, each a clean relative path). */
#define WIRE_OPERATOR_DIR_MAX 1024u
struct wire_operator_capture_request {
	const char *target, *dir;
	const char *const *files;
	size_t n_files;
};
struct wire_operator_captured {
	const char *dir;            /* absolute, on the daemon's host */
	char manifest_sha256[65];
	struct bh_capture_target target;
};
char *wire_operator_encode_capture_request(const struct wire_operator_capture_request *r);
int wire_operator_decode_capture_request(const char *body, size_t len,
					 struct wire_operator_capture_request *out,
					 struct wire_status *st);
void wire_operator_capture_request_free(struct wire_operator_capture_request *r);
char *wire_operator_encode_captured(const struct wire_operator_captured *c);
int wire_operator_decode_captured(const char *body, size_t len, struct wire_operator_captured *out,
				  struct wire_status *st);
void wire_operator_captured_free(struct wire_operator_captured *c);

/* Search: query as bh_search_parse reads it (a prefix, then at most
 * BH_SEARCH_TEXT_MAX bytes of text, not empty); limit 0: BH_SEARCH_MAX, more
 * is shortened to it. A hit's snippet is the cell's bytes (base64). */
struct wire_operator_search_request {
	const char *query;
	uint32_t limit;
};
struct wire_operator_hits {
	struct bh_search_hit *hits; /* owned session, stream and snippet */
	size_t n, cap;
};
char *wire_operator_encode_search_request(const struct wire_operator_search_request *r);
int wire_operator_decode_search_request(const char *body, size_t len,
					struct wire_operator_search_request *out,
					struct wire_status *st);
void wire_operator_search_request_free(struct wire_operator_search_request *r);
void wire_operator_hits_add(struct wire_operator_hits *v, const struct bh_search_hit *h);
char *wire_operator_encode_hits(const struct wire_operator_hits *v);
int wire_operator_decode_hits(const char *body, size_t len, struct wire_operator_hits *out,
			      struct wire_status *st);
void wire_operator_hits_free(struct wire_operator_hits *v);

/* Reap: the findings as Leaks listed them (kind, sandbox and session are
 * what the reap matches; at least one, at most WIRE_OPERATOR_REAP_MAX: the
 * whole list is Gc's), and whether only to say what would go. The answer is
 * Gc's: {"reaped":[...]} or, dry, {"wouldReap":[...]}. */
#define WIRE_OPERATOR_REAP_MAX 1000u
struct wire_operator_reap_request {
	struct bh_leak *findings;
	size_t n;
	bool dry_run;
};
char *wire_operator_encode_reap_request(const struct wire_operator_reap_request *r);
int wire_operator_decode_reap_request(const char *body, size_t len,
				      struct wire_operator_reap_request *out,
				      struct wire_status *st);
void wire_operator_reap_request_free(struct wire_operator_reap_request *r);
/* The answer, named "Reap" in a refusal (the list as Gc's). */
int wire_operator_decode_reap(const char *body, size_t len, bool dry_run,
			      struct wire_operator_leaks *out, struct wire_status *st);

#endif
