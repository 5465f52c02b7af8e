/* Where the console's data comes from: one asynchronous interface, shaped
 * like the operator API's messages, with three implementations — the
 * embedded engine (source_embedded.c), a daemon through src/client
 * (source_attached.c), and a store opened read-only (source_store.c). No
 * view talks to the engine, SQLite or libcurl: only to this.
 *
 * Every request answers through its callback exactly once, possibly before
 * the request function returns (the embedded and store sources often do).
 * Rows handed to a callback are valid only during it. */
#ifndef BH_UI_SOURCE_H
#define BH_UI_SOURCE_H

#include "bulkhead.h"
#include "console.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ui_session {
	char fp[65], sandbox[64], state[16], tier[12], floor[12];
	char principal[65], owner[65], run_key[65], last_record[65], end_reason[32];
	uint64_t calls, awake_ms;
	int64_t created_ms, last_call_ms, expires_ms;
	bool mine; /* opened by this console: it may run cells in it */
	/* ---- truth: describe's fields (the operator API's Session) ---- */
	char call_language[16];  /* "" when no cell is in flight */
	int64_t call_started_ms; /* 0: none */
	int64_t pauses_ms, hibernates_ms; /* the policy clocks; 0: not running */
	char evidence[96];       /* its tier's proof */
	char end_detail[256];
	/* ---- egress: its profile ("" none), brokered requests, the last one ---- */
	char egress_profile[72];
	uint64_t egress_requests;
	char egress_last[256];
	/* ---- replay: calls refused before they ran, for :live ---- */
	uint64_t refused;
	char last_refusal[300];
	/* ---- fleet: the host that holds it (a fleet source only; "" else),
	 * and whether that host did not answer the last ask (its row is the
	 * last it said, drawn dim) ---- */
	char host[65];
	bool host_stale;
};

struct ui_record {
	int64_t id;
	int version;
	char request[65], result[65], unanswered[32], provider[32], isolation[16];
	char environment[96], policy[64], software_identity[96], software_rule_id[96];
	char session[65], previous[65], record[65];
	int64_t started_ms, ended_ms;
	uint64_t sequence;
	char language[16], flags[96];
	int exit_code;
	int64_t duration_us;
};

struct ui_event {
	int64_t id, at_ms;
	char kind[24], session[65], sandbox[64], detail[200];
	/* ---- ci: attribution: who acted, the request that asked ---- */
	char actor[65], request_id[65];
};

#define UI_TIER_LINES 32
struct ui_tier {
	char tier[12], runtime[16], version[96], reason[256], environment[96];
	bool offered, cached;
	size_t n_lines;
	struct {
		char name[48], value[128], expect[128];
		bool ok;
	} lines[UI_TIER_LINES];
};

struct ui_cell_answer {
	int exit_code;
	bool timed_out, interpreter_started, interpreter_ended, stdout_truncated, stderr_truncated;
	const char *out, *err;
	uint64_t wall_us, duration_us;
	char record[65];
	uint64_t sequence;
	char ended[32];
};

/* Which rows of a history list (records, events): the `limit` after
 * `after`, oldest first; or, with `newest`, the last `limit` before `before`
 * (0: the newest of all) — a view pages back from the end with it. Either
 * way the rows arrive oldest first. limit 0: 1000. */
struct ui_page {
	int64_t after, before;
	bool newest;
	size_t limit;
};

/* ---- stream: cells, stored and running ---- */
/* A stored cell (its record's forensic columns): the bytes are the store's
 * (whole up to BH_STORE_OUTPUT_CAP per stream; flags say when cut). */
struct ui_cell {
	uint64_t sequence;
	char language[16], flags[200], unanswered[32], record[65];
	int exit_code;
	int64_t duration_us, started_ms, ended_ms;
	const char *code, *out, *err;
	size_t code_len, out_len, err_len;
};
/* The latest cell's news past a cursor (the engine's bh_cell_output, or
 * FollowCell's answer): no news is sequence 0 or the cursor's own with
 * nothing past it. */
struct ui_follow {
	uint64_t sequence;
	bool running, done, answered;
	char language[16], record[65];
	int64_t started_ms;
	uint64_t out_offset, err_offset;
	const char *code, *out, *err;
	size_t code_len, out_len, err_len;
	int exit_code;
	bool timed_out, stdout_truncated, stderr_truncated;
	uint64_t duration_us;
};
typedef void (*ui_cells_fn)(void *arg, const struct ui_cell *rows, size_t n, const char *error);
typedef void (*ui_follow_fn)(void *arg, const struct ui_follow *f, const char *error);
/* ---- inflight ---- */
typedef void (*ui_inflight_fn)(void *arg, const struct bh_inflight *rows, size_t n,
			       const char *error);

struct ui_source;
typedef void (*ui_done_fn)(void *arg, const char *error);
typedef void (*ui_sessions_fn)(void *arg, const struct ui_session *rows, size_t n, const char *error);
typedef void (*ui_records_fn)(void *arg, const struct ui_record *rows, size_t n, const char *error);
typedef void (*ui_events_fn)(void *arg, const struct ui_event *rows, size_t n, const char *error);
typedef void (*ui_leaks_fn)(void *arg, const struct bh_leak *rows, size_t n, const char *error);
typedef void (*ui_tiers_fn)(void *arg, const struct ui_tier *rows, size_t n, const char *error);
typedef void (*ui_opened_fn)(void *arg, const char *fp, const char *error);
typedef void (*ui_answer_fn)(void *arg, const struct ui_cell_answer *a, const char *error);
/* ---- truth ---- */
/* One session and the code of its cell in flight ("" when none). */
typedef void (*ui_detail_fn)(void *arg, const struct ui_session *row, const char *code,
			     const char *error);
/* ---- procs ---- */
typedef void (*ui_processes_fn)(void *arg, const struct bh_process *rows, size_t n, bool more,
				const char *error);
typedef void (*ui_files_fn)(void *arg, const struct bh_file_entry *rows, size_t n, bool more,
			    const char *error);
typedef void (*ui_file_fn)(void *arg, const uint8_t *data, size_t len, uint64_t size,
			   bool truncated, const char *error);
/* What a source without an engine answers them (source_procs.c): "needs a
 * live engine; this is a store opened read-only" (or "a replay opens none"). */
void ui_source_no_processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg);
void ui_source_no_list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
			     void *arg);
void ui_source_no_read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
			    ui_file_fn cb, void *arg);
/* ---- approvals ---- */
/* A call a daemon holds for a person's decision (docs/api.md, Approvals). */
struct ui_approval_file {
	char name[256];
	uint64_t size;
	bool binary, truncated;
	const char *text; /* valid during the callback */
};
struct ui_approval {
	char id[16], procedure[16], principal[65], run_key[65], owner[65], session[65];
	char tier[12], kind[16], language[16], request[65];
	const char *code; /* valid during the callback */
	uint64_t code_bytes;
	bool code_omitted; /* the daemon's answer left it out (too much held to list) */
	int64_t held_ms, deadline_ms;
	const struct ui_approval_file *files;
	size_t n_files;
};
typedef void (*ui_approvals_fn)(void *arg, const struct ui_approval *rows, size_t n,
				const char *error);
/* Sources without a daemon say why in the error (the view shows it). */
#define UI_APPROVALS_DAEMONS                                                                       \
	"approvals are a daemon's: held calls wait in `bulkhead serve --approval required`; "     \
	"attach to it (bulkhead console --attach SOCK)"
/* ---- usage ---- */
/* Every live session's usage and the host's and daemon's figures (the
 * engine's bh_engine_usage, a daemon's Usage). */
struct ui_usage {
	char version[32]; /* the daemon's; embedded: this build's */
	struct bh_host_usage host;
	const struct bh_session_usage *sessions;
	size_t n;
};
typedef void (*ui_usage_fn)(void *arg, const struct ui_usage *u, const char *error);
/* ---- capture ---- */
/* The evidence folder (absolute) and its MANIFEST's SHA-256, or why not. */
typedef void (*ui_captured_fn)(void *arg, const char *dir, const char *manifest_sha256,
			       const char *error);
struct ui_source;
/* The answer of a source with no engine to capture with (store, none; an
 * attached console asks the daemon's engine: Capture, remote). */
void ui_source_no_capture(struct ui_source *s, const char *target, const char *dir,
			  ui_captured_fn cb, void *arg);
/* A stored cell whose code or output holds the searched text. */
struct ui_search_hit {
	int64_t id; /* the record's row: the record view's argument */
	char session[65], stream[8];
	uint64_t sequence;
	int64_t started_ms;
	uint8_t snippet[2 * BH_SEARCH_CONTEXT + BH_SEARCH_TEXT_MAX];
	size_t snippet_len, match_at, match_len;
	bool cut_before, cut_after;
};
typedef void (*ui_search_fn)(void *arg, const struct ui_search_hit *rows, size_t n,
			     const char *error);
#define UI_NO_SEARCH "search reads the store: open the console on the state directory or a " \
	"copy of its store (--db FILE), or run bulkhead search"
/* The answer of a source that cannot search (none; attached asks the
 * daemon: Search, remote). */
void ui_source_no_search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg);
/* The engine's hits as the console's rows (embedded, store). */
struct ui_search_rows {
	struct ui_search_hit *r;
	size_t n, cap;
};
int ui_collect_search_hit(void *arg, const struct bh_search_hit *h);
/* A console record as the engine's, to check its digest and chain (the
 * record view's check, the records' ✓/✗ and the report's). */
struct bh_record;
void ui_record_to_bh(const struct ui_record *u, struct bh_record *r);
#define UI_NO_CAPTURE "capture reads the sandbox from this host's engine: open the console on " \
	"the state directory (bulkhead --state DIR), or run bulkhead capture"
/* ---- light ---- */
typedef void (*ui_count_fn)(void *arg, size_t n, const char *error);
/* ---- fleet: the hosts of a fleet (source_fleet.c) ---- */
#include "fleet.h"
struct ui_host {
	struct bh_fleet_host h;  /* what it heartbeats (gone: the reader's verdict) */
	bool left;               /* the bucket no longer holds it (a clean leave) */
	bool answering;          /* its operator API answered the last ask */
	char why[256];           /* why it is not answering ("" when it is) */
	size_t rows;             /* sandboxes it listed at the last answer */
};
typedef void (*ui_hosts_fn)(void *arg, const struct ui_host *rows, size_t n, const char *error);

struct ui_source_ops {
	const char *kind; /* "embedded", "attached", "store" */
	bool has_engine;  /* a store opened read-only has none: nothing can act */
	/* One line for the header: where the data comes from. */
	void (*describe)(struct ui_source *s, char *buf, size_t n);
	/* Strongest tier offered and the tiers' names, for the header. */
	void (*tier_summary)(struct ui_source *s, char *buf, size_t n);
	/* The loop: descriptors to poll, how long at most, and the work. */
	int (*poll_fds)(struct ui_source *s, struct pollfd *fds, int max);
	int (*timeout_ms)(struct ui_source *s);
	void (*process)(struct ui_source *s);
	/* Requests still unanswered (scripted input waits for none). */
	int (*pending)(struct ui_source *s);

	void (*sessions)(struct ui_source *s, ui_sessions_fn cb, void *arg);
	void (*records)(struct ui_source *s, const char *session, const struct ui_page *page,
			ui_records_fn cb, void *arg);
	/* One session's record by its sequence: one row, or none. */
	void (*record_at)(struct ui_source *s, const char *session, uint64_t sequence,
			  ui_records_fn cb, void *arg);
	void (*events)(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg);
	void (*leaks)(struct ui_source *s, ui_leaks_fn cb, void *arg);
	void (*reap)(struct ui_source *s, ui_leaks_fn cb, void *arg);
	void (*tiers)(struct ui_source *s, ui_tiers_fn cb, void *arg);
	/* verb: pause resume hibernate close kill */
	void (*action)(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg);
	/* The console's own sandboxes. tier/floor "" for the defaults. */
	void (*open)(struct ui_source *s, const char *tier, const char *floor, const char *owner,
		     ui_opened_fn cb, void *arg);
	void (*run)(struct ui_source *s, const char *fp, const char *language, const char *code,
		    ui_answer_fn cb, void *arg);
	void (*free)(struct ui_source *s);
	/* ---- truth ---- */
	/* One session, with the code of the cell in flight (describe). */
	void (*session_detail)(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg);
	/* The link to the data: true while it is down (a daemon that stopped
	 * answering), with since when (HH:MM:SS UTC) and why. NULL: never down. */
	bool (*link_down)(struct ui_source *s, char *since, size_t since_n, char *why, size_t why_n);
	/* ---- procs: inside a live sandbox, through its init ---- */
	/* Its processes now (answered while a call runs). */
	void (*processes)(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg);
	/* A directory below /work ("" for /work), and one file's first max bytes. */
	void (*list_files)(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
			   void *arg);
	void (*read_file)(struct ui_source *s, const char *fp, const char *path, uint32_t max,
			  ui_file_fn cb, void *arg);
	/* ---- approvals ---- */
	void (*approvals)(struct ui_source *s, ui_approvals_fn cb, void *arg);
	void (*decide)(struct ui_source *s, const char *id, bool approve, const char *reason,
		       ui_done_fn cb, void *arg);
	/* ---- usage ---- */
	/* One request for every session's usage (a refresh asks once, not
	 * once per row). */
	void (*usage)(struct ui_source *s, ui_usage_fn cb, void *arg);
	/* ---- stream ---- */
	/* A session's stored cells, newest first: at most limit with a sequence
	 * below before_sequence (0: from the newest). */
	void (*cells)(struct ui_source *s, const char *fp, uint64_t before_sequence, size_t limit,
		      ui_cells_fn cb, void *arg);
	/* The latest cell's news past the cursor (sequence, out_after,
	 * err_after). Embedded: at once. Attached: FollowCell's long poll of up
	 * to wait_ms, driven by the source's loop (never blocking the UI, and
	 * not pending: a follower may wait as long as it likes). A store has
	 * no running cell: an error. */
	void (*follow)(struct ui_source *s, const char *fp, uint64_t sequence, uint64_t out_after,
		       uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg);
	/* ---- capture ---- */
	/* A finding's or a session's evidence (a sandbox name or a
	 * fingerprint) into dir (absolute; new, or empty): what the host sees,
	 * and what the sandbox's init answers when this engine holds it. */
	void (*capture)(struct ui_source *s, const char *target, const char *dir,
			ui_captured_fn cb, void *arg);
	/* Every stored cell's code and output holding the query's text
	 * (bh_search_parse's prefixes), newest first, at most BH_SEARCH_MAX. */
	void (*search)(struct ui_source *s, const char *query, ui_search_fn cb, void *arg);
	/* ---- light ---- */
	/* How many calls wait for a person's decision, for the header (NULL:
	 * the source holds none). Attached: from the one Overview the header's
	 * sessions and usage come from, not a ListApprovals of its own. */
	void (*approvals_waiting)(struct ui_source *s, ui_count_fn cb, void *arg);
	/* ctrl-r: the operator asked, so nothing kept vouches for the next
	 * refresh (NULL: the source keeps nothing between refreshes). */
	void (*forget_kept)(struct ui_source *s);
	/* ---- inflight ---- */
	/* What a dead engine left, as the engine found it at open (one line, ""
	 * for nothing; NULL: the source has no engine of its own to say). */
	void (*leftovers)(struct ui_source *s, char *buf, size_t n);
	/* The one reap of the findings the operator chose (bh_engine_reap):
	 * each found again and asked again whether something holds it. The
	 * capture of evidence goes in front of this call. NULL: the source
	 * reaps every finding at once (reap). Attached: the daemon's Reap, in
	 * the token's principal's name (remote). */
	void (*reap_chosen)(struct ui_source *s, const struct bh_leak *chosen, size_t n,
			    ui_leaks_fn cb, void *arg);
	/* The calls' intents of a session (fp; "" for all): a call running
	 * now, or one that was running when its engine died. */
	void (*inflight)(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg);
	/* ---- fleet: NULL on every source but a fleet's ---- */
	/* Every host the fleet's bucket holds, gone ones too, by id. */
	void (*hosts)(struct ui_source *s, ui_hosts_fn cb, void *arg);
	/* drain.<host>: set or deleted (bh_fleet_set_drain); cb once it is written. */
	void (*drain)(struct ui_source *s, const char *host, bool drain, ui_done_fn cb, void *arg);
};

struct ui_source {
	const struct ui_source_ops *ops;
};

/* The four sources the console is opened on are made by console.h's
 * constructors. */

/* Growing arrays the engine-side sources fill from the engine's row
 * callbacks (bh_engine_records / bh_history_records and the event forms). */
struct ui_record_rows {
	struct ui_record *r;
	size_t n, cap;
};
struct ui_event_rows {
	struct ui_event *r;
	size_t n, cap;
};
/* The loop hooks of a source with nothing to wait on (a store, no source):
 * no descriptors, no timer, nothing pending. */
int ui_source_no_fds(struct ui_source *s, struct pollfd *fds, int max);
int ui_source_no_timeout(struct ui_source *s);
void ui_source_no_process(struct ui_source *s);
int ui_source_no_pending(struct ui_source *s);

int ui_collect_record(void *arg, const struct bh_record_row *row);
int ui_collect_event(void *arg, const struct bh_event *ev);
/* Hands what an engine-side read collected to the view's callback (the
 * error's message when rc < 0), then frees the rows and the error. */
void ui_answer_records(ui_records_fn cb, void *arg, int rc, struct ui_record_rows *x, bh_error *err);
void ui_answer_events(ui_events_fn cb, void *arg, int rc, struct ui_event_rows *x, bh_error *err);

/* A session in the operator API's shape (a daemon's answer, or the
 * embedded engine's through wire_operator_session_of) as the console's row;
 * "mine" is the source's to set. */
struct wire_operator_session;
void ui_session_from(struct ui_session *out, const struct wire_operator_session *o);

/* ---- stream (source_common.c) ---- */
/* The engine's rows as the console's, for the engine-side sources. */
struct ui_cell_rows {
	struct ui_cell *r;
	size_t n, cap;
};
int ui_collect_cell(void *arg, const struct bh_cell_row *row); /* copies the bytes */
void ui_answer_cells(ui_cells_fn cb, void *arg, int rc, struct ui_cell_rows *x, bh_error *err);
void ui_follow_from(struct ui_follow *out, const struct bh_cell_output *o);
#define UI_NO_FOLLOW "following a running cell needs a live engine; this is a store opened read-only"

/* Copies a record into the console's form (shared by the sources). */
void ui_record_from(struct ui_record *out, int64_t id, const struct bh_record *r, const char *language,
		    const char *flags, int exit_code, int64_t duration_us);

#endif
