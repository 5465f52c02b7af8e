/* The store: SQLite in WAL mode holding the registry of sandboxes (intent
 * rows first), every run record, and the engine's events. One connection,
 * owned by the engine's thread. A record is committed before its answer is
 * returned; checkpoints run from the engine's loop, never inside a commit. */
#ifndef BH_STORE_H
#define BH_STORE_H

#include "bulkhead.h"
#include "record.h"

#include <stdbool.h>
#include <stdint.h>

struct bh_store;

struct store_session_row {
	const char *fingerprint, *sandbox, *runtime, *tier, *floor, *principal, *owner, *run_key;
	enum bh_session_state state;
	int64_t engine_pid, lease_until_ms, created_ms, expires_ms;
};

/* What a record keeps besides its digest fields (forensics). */
struct store_record_extra {
	const char *language;
	int exit_code;
	const char *flags; /* "timed_out,interpreter_started" */
	uint64_t duration_us;
	const uint8_t *code;
	size_t code_len;
	const uint8_t *out, *err;
	size_t out_len, err_len;
};

int store_open(const char *path, bool readonly, bool sync_full, struct bh_store **out, bh_error **err);
void store_close(struct bh_store *s);

int store_session_intent(struct bh_store *s, const struct store_session_row *row, bh_error **err);
/* The store keeps the vocabulary's names (bh_session_state_name,
 * bh_end_reason_name); readers parse them back. */
int store_session_state(struct bh_store *s, const char *fingerprint, enum bh_session_state state,
			bh_error **err);
int store_session_end(struct bh_store *s, const char *fingerprint, enum bh_end_reason reason,
		      const char *detail, bh_error **err);
/* In one transaction: the record, and the session's call count and last digest. */
int store_record_commit(struct bh_store *s, const struct bh_record *rec,
			const struct store_record_extra *x, bool keep_content, bh_error **err);
int store_event(struct bh_store *s, const char *kind, const char *fingerprint, const char *sandbox,
		const char *detail);
/* ---- ci: attribution: the same, naming who acted (NULL or no name: the
 * engine of its own accord) and the request that asked ---- */
int store_event_by(struct bh_store *s, const char *kind, const char *fingerprint,
		   const char *sandbox, const char *detail, const struct bh_actor *who);

/* Rows not ended: their sandbox and fingerprint (for reconcile). */
typedef void (*store_live_fn)(void *arg, const char *fingerprint, const char *sandbox,
			      const char *runtime, const char *state, int64_t engine_pid);
int store_live_sessions(struct bh_store *s, store_live_fn fn, void *arg, bh_error **err);

/* Records, oldest first; session NULL for all. */
struct store_record_row {
	int64_t id;
	struct bh_record rec;
	const char *language, *flags;
	int exit_code;
	int64_t duration_us;
};
typedef int (*store_record_fn)(void *arg, const struct store_record_row *row);
int store_records(struct bh_store *s, const char *session, store_record_fn fn, void *arg,
		  bh_error **err);

/* Records in commit order after after_id, at most limit; session "" for all. */
int store_records_page(struct bh_store *s, const char *session, int64_t after_id, size_t limit,
		       store_record_fn fn, void *arg, bh_error **err);
/* The newest: at most limit records before before_id (0: the newest of
 * all), listed in commit order; session "" for all. */
int store_records_newest(struct bh_store *s, const char *session, int64_t before_id, size_t limit,
			 store_record_fn fn, void *arg, bh_error **err);
/* One session's record by its sequence (fn not called when there is none). */
int store_record_at(struct bh_store *s, const char *session, uint64_t sequence, store_record_fn fn,
		    void *arg, bh_error **err);
/* The same as the public rows (bh_engine_records, bh_history_records and
 * their _newest and _at forms). */
int store_record_rows(struct bh_store *s, const char *session, int64_t after_id, size_t limit,
		      bh_record_fn fn, void *arg, bh_error **err);
int store_record_rows_newest(struct bh_store *s, const char *session, int64_t before_id,
			     size_t limit, bh_record_fn fn, void *arg, bh_error **err);
int store_record_row_at(struct bh_store *s, const char *session, uint64_t sequence,
			bh_record_fn fn, void *arg, bh_error **err);
/* store_records' order (bh_history_chains), as the public rows. */
int store_record_rows_chained(struct bh_store *s, const char *session, bh_record_fn fn, void *arg,
			      bh_error **err);
typedef int (*store_event_fn)(void *arg, const struct bh_event *ev);
int store_events(struct bh_store *s, int64_t after_id, size_t limit, store_event_fn fn, void *arg,
		 bh_error **err);
/* The newest events before before_id (0: of all), listed oldest first. */
int store_events_newest(struct bh_store *s, int64_t before_id, size_t limit, store_event_fn fn,
			void *arg, bh_error **err);

/* The registry's rows, newest first, at most limit (0: every one). */
int store_session_rows(struct bh_store *s, size_t limit, bh_history_session_fn fn, void *arg,
		       bh_error **err);

/* The live row naming this container (its fingerprint, creation, expiry). */
bool store_live_row(struct bh_store *s, const char *sandbox, char fp[65], int64_t *created_ms,
		    int64_t *engine_pid);
/* Whether any registry row names this container. */
bool store_knows_sandbox(struct bh_store *s, const char *sandbox);
/* Deletes the records of sessions that ended before cutoff_ms (whole
 * chains, so what stays still verifies), single runs and events older than
 * it, and the ended sessions' rows. Returns the number of records deleted. */
long long store_prune(struct bh_store *s, int64_t cutoff_ms, bh_error **err);
/* A cheap read that proves the store answers (readiness). */
int store_ping(struct bh_store *s, bh_error **err);
int store_backup(struct bh_store *s, const char *dest, bh_error **err);
/* The WAL under load. With autocheckpoint off (no commit pays for one),
 * the engine's loop checkpoints: store_watch_wal notes every commit and
 * calls full_fn (from inside the commit: it may only schedule) once one
 * leaves full_pages frames in the WAL. store_checkpoint then copies the
 * WAL into the database: PASSIVE (never waits for a reader) while commits
 * keep coming, TRUNCATE (the file back to zero bytes; given up at once
 * when a reader holds it) once none came for idle_us. Nothing to do, it
 * does nothing. */
void store_watch_wal(struct bh_store *s, int full_pages, void (*full_fn)(void *arg), void *arg);
void store_checkpoint(struct bh_store *s, uint64_t idle_us);
/* Test hook: the raw connection (sqlite3 *), for tampering in tests. */
void *store_db(struct bh_store *s);
/* Test hook: the work bound of a store opened for reading (in SQLite
 * steps; store_untrusted.h), lowered to meet it without a huge store. */
void store_set_work_bound(struct bh_store *s, uint64_t steps);
extern const char bh_migration_005[]; /* ---- ci: attribution ---- */
extern const char bh_migration_006[]; /* ---- egress: a session's profile ---- */
extern const char bh_migration_007[]; /* ---- fleet: where an adopted chain began ---- */
extern const char bh_migration_008[]; /* ---- density: the parent a branch names ---- */

extern const char bh_schema_sql[]; /* data/schema.sql, embedded */
extern const char bh_migration_002[];
extern const char bh_migration_003[]; /* stream */
/* stream: a session's cells, newest first (store_cells.c; bh_engine_cells). */
int store_cells(struct bh_store *s, const char *session, uint64_t before_sequence, size_t limit,
		bh_cell_row_fn fn, void *arg, bh_error **err);
/* ---- capture: search (store_search.c) ---- */
int store_search(struct bh_store *s, enum bh_search_stream stream, const char *text, size_t limit,
		 bh_search_fn fn, void *arg, bh_error **err);

/* A session gone to disk: enough for the next engine to re-adopt it. */
/* egress_profile: the profile the session holds for its life (NULL or "":
 * none), held again when the next engine wakes it (migration 006). */
int store_session_hibernated(struct bh_store *s, const char *fingerprint, int64_t awake_ms,
			     int64_t lifetime_ms, const char *egress_profile, bh_error **err);
struct store_hibernated_row {
	const char *fingerprint, *sandbox, *runtime, *tier, *floor, *principal, *owner, *run_key;
	int64_t created_ms, last_call_ms, awake_ms, lifetime_ms, hibernated_ms;
	uint64_t calls;
	const char *last_record_sha256;
	const char *egress_profile; /* "" for none */
	const char *branched_from;  /* ---- density: the parent's fingerprint (NULL: none) ---- */
};
/* ---- fleet (issue 20) ---- */
/* Whether any row (live or ended) has this fingerprint (true when the
 * store cannot say). */
bool store_knows_fingerprint(struct bh_store *s, const char *fingerprint);
/* In one transaction: the row of a hibernated session adopted from
 * another engine (its chain head and counts as they were there), and its
 * "adopted" event with detail. Its chain began at origin_host: the row
 * keeps where (migration 7: origin_host, adopted_after = r->calls,
 * adopted_after_sha256 = r->last_record_sha256). */
int store_session_adopted(struct bh_store *s, const struct store_hibernated_row *r,
			  const char *origin_host, int64_t engine_pid, const char *detail,
			  bh_error **err);
/* ---- density (issue 21) ---- */
/* Like store_session_adopted, for a branch's child: its row (chain head
 * the parent's, branched_from the parent) and a "branched" event, in one
 * transaction. */
int store_session_branched(struct bh_store *s, const struct store_hibernated_row *r,
			   int64_t engine_pid, const char *detail, bh_error **err);
typedef void (*store_hibernated_fn)(void *arg, const struct store_hibernated_row *row);
int store_hibernated_sessions(struct bh_store *s, store_hibernated_fn fn, void *arg, bh_error **err);

/* ---- inflight: calls in flight (store_inflight.c, migration 004) ---- */
extern const char bh_migration_004[];
struct store_inflight_row {
	const char *session;
	uint64_t sequence;
	const char *code_sha256, *language, *principal, *owner;
	const uint8_t *code;
	size_t code_len;
	int64_t engine_pid, started_ms;
};
/* Committed before the cell is sent to the init; the record that answers
 * it deletes it in its own transaction (store_record_commit). */
int store_inflight_begin(struct bh_store *s, const struct store_inflight_row *row,
			 bool keep_content, bh_error **err);
/* A call that ends with no record (refused by the init): its intent goes. */
void store_inflight_settle(struct bh_store *s, const char *session, uint64_t sequence);
/* A finding reaped: the intent stays, for the timeline, marked. */
void store_inflight_reaped(struct bh_store *s, const char *session, uint64_t sequence, int64_t at_ms);
/* Intents, oldest first, of one session ("" or NULL: all); open_only: not reaped. */
int store_inflight_rows(struct bh_store *s, const char *session, bool open_only,
			bh_inflight_fn fn, void *arg, bh_error **err);
/* The engine that left dead rows (not self_pid's) and its last sign of
 * life; 1 when there is one, 0 when none, -1 on a store that cannot say. */
int store_previous_engine(struct bh_store *s, int64_t self_pid, int64_t *pid, int64_t *last_ms);
/* An engine's last sign of life: the newest time its rows (created, last
 * call), their events and its intents carry; 0 when none. The one
 * definition (the survey at open, and the leaks on a store copy). */
int64_t store_engine_last_sign(struct bh_store *s, int64_t pid);
/* The registry state of the live row naming this container. */
bool store_live_state(struct bh_store *s, const char *sandbox, char *state, size_t n);
/* ---- report: a crash loop's leftovers (store_engines.c) ---- */
/* The dead engines (not self_pid) whose live rows or unsettled intents the
 * store holds, newest first by their rows' times; *pids freed with free(). */
size_t store_dead_engines(struct bh_store *s, int64_t self_pid, int64_t **pids);
/* The engine pid a finding's row or intent names (0: none names one). */
int64_t store_finding_engine(struct bh_store *s, const struct bh_leak *l);

#endif
