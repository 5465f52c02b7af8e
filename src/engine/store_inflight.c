/* The intents of calls in flight (migration 004) and what the store says of
 * the engine that left a state directory: the reads and writes of the
 * inflight table, and the one definition of "a dead engine's row" the
 * leftovers summary (leftovers.c) and the leaks on a store copy both use.
 * A store opened read-only may be one migration 004 never reached: its
 * reads then find no intent, never fail. */
#include "internal.h"
#include "store_priv.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

int store_inflight_begin(struct bh_store *s, const struct store_inflight_row *row,
			 bool keep_content, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(
		s,
		"INSERT OR REPLACE INTO inflight (session, sequence, code_sha256, code, language, "
		"principal, engine_pid, started_ms, owner) VALUES (?,?,?,?,?,?,?,?,?)",
		err);
	if (!st)
		return -1;
	store_bind_text(st, 1, row->session);
	sqlite3_bind_int64(st, 2, (int64_t)row->sequence);
	store_bind_text(st, 3, row->code_sha256);
	if (keep_content)
		sqlite3_bind_blob(st, 4, row->code ? (const void *)row->code : "", (int)row->code_len,
				  SQLITE_STATIC);
	store_bind_text(st, 5, row->language);
	store_bind_text(st, 6, row->principal);
	sqlite3_bind_int64(st, 7, row->engine_pid);
	sqlite3_bind_int64(st, 8, row->started_ms);
	store_bind_text(st, 9, row->owner);
	int rc = sqlite3_step(st);
	store_release(s, st);
	if (rc != SQLITE_DONE) /* a full disk is the environment's, as for a record */
		return bh_fail(err, BH_E_SYSTEM,
			       sqlite3_extended_errcode(s->db) == SQLITE_FULL ? ENOSPC : 0,
			       "store: commit a call's intent: %s", sqlite3_errmsg(s->db));
	return 0;
}

void store_inflight_settle(struct bh_store *s, const char *session, uint64_t sequence)
{
	sqlite3_stmt *st = store_prepare(
		s, "DELETE FROM inflight WHERE session = ? AND sequence = ? AND reaped_ms IS NULL", NULL);
	if (!st)
		return;
	store_bind_text(st, 1, session);
	sqlite3_bind_int64(st, 2, (int64_t)sequence);
	sqlite3_step(st);
	store_release(s, st);
}

void store_inflight_reaped(struct bh_store *s, const char *session, uint64_t sequence, int64_t at_ms)
{
	sqlite3_stmt *st = store_prepare(
		s, "UPDATE inflight SET reaped_ms = ? WHERE session = ? AND sequence = ?", NULL);
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, at_ms);
	store_bind_text(st, 2, session);
	sqlite3_bind_int64(st, 3, (int64_t)sequence);
	sqlite3_step(st);
	store_release(s, st);
}

static bool has_inflight_table(struct bh_store *s)
{
	sqlite3_stmt *st = store_prepare(
		s, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inflight'", NULL);
	if (!st)
		return false;
	bool yes = store_step_row(s, st) == SQLITE_ROW;
	store_release(s, st);
	return yes;
}

int store_inflight_rows(struct bh_store *s, const char *session, bool open_only,
			bh_inflight_fn fn, void *arg, bh_error **err)
{
	assert(err);
	if (!has_inflight_table(s))
		return 0;
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT session, sequence, code_sha256, code, language, principal, engine_pid, "
		"started_ms, reaped_ms, owner FROM inflight WHERE (?1 = '' OR session = ?1) "
		"AND (?2 = 0 OR reaped_ms IS NULL) ORDER BY started_ms, session, sequence LIMIT 1000",
		err);
	if (!st)
		return -1;
	store_bind_text(st, 1, session ? session : "");
	sqlite3_bind_int(st, 2, open_only);
	int ret = 0, rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		char fp[65], digest[65], language[16], principal[128], owner[128];
		store_copy_col(st, 0, fp, sizeof fp);
		store_copy_col(st, 2, digest, sizeof digest);
		store_copy_col(st, 4, language, sizeof language);
		store_copy_col(st, 5, principal, sizeof principal);
		store_copy_col(st, 9, owner, sizeof owner);
		const void *code = sqlite3_column_blob(st, 3);
		struct bh_inflight r = {
			.session = fp,
			.sequence = (uint64_t)sqlite3_column_int64(st, 1),
			.code_sha256 = digest,
			.code = code ? code : "",
			.code_len = code ? (size_t)sqlite3_column_bytes(st, 3) : 0,
			.code_kept = code != NULL,
			.language = language,
			.principal = principal,
			.owner = owner,
			.engine_pid = sqlite3_column_int64(st, 6),
			.started_ms = sqlite3_column_int64(st, 7),
			.reaped_ms = sqlite3_column_type(st, 8) == SQLITE_NULL ? 0
									  : sqlite3_column_int64(st, 8),
		};
		if (fn(arg, &r)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	ret = store_read_end(s, st, rc, "read the calls in flight", err);
	return ret;
}

int64_t store_engine_last_sign(struct bh_store *s, int64_t pid)
{
	bool intents = has_inflight_table(s);
	sqlite3_stmt *st = store_prepare(
		s,
		intents ? "SELECT max(coalesce((SELECT max(max(created_ms, coalesce(last_call_ms, 0))) "
			  "FROM sessions WHERE engine_pid = ?1), 0), "
			  "coalesce((SELECT max(e.at_ms) FROM events e JOIN sessions x ON "
			  "e.session = x.fingerprint WHERE x.engine_pid = ?1), 0), "
			  "coalesce((SELECT max(started_ms) FROM inflight WHERE engine_pid = ?1), 0))"
			: "SELECT max(coalesce((SELECT max(max(created_ms, coalesce(last_call_ms, 0))) "
			  "FROM sessions WHERE engine_pid = ?1), 0), "
			  "coalesce((SELECT max(e.at_ms) FROM events e JOIN sessions x ON "
			  "e.session = x.fingerprint WHERE x.engine_pid = ?1), 0))",
		NULL);
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, pid);
	int64_t ms = store_step_row(s, st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	store_release(s, st);
	return ms;
}

/* A dead engine's row: a session row neither ended nor hibernated (a
 * hibernated one is an image the next engine re-adopts, not a leftover)
 * whose engine is not the one asking (self_pid; 0 on a store copy, where
 * every such row's engine is gone), or an intent never settled. The
 * previous engine is the one that wrote the newest of them. */
int store_previous_engine(struct bh_store *s, int64_t self_pid, int64_t *pid, int64_t *last_ms)
{
	*pid = 0;
	*last_ms = 0;
	bool intents = has_inflight_table(s);
	sqlite3_stmt *st = store_prepare(
		s,
		intents ? "SELECT engine_pid FROM (SELECT engine_pid, created_ms AS t FROM sessions "
			  "WHERE " STORE_ROW_LIVE " AND engine_pid != ?1 "
			  "UNION ALL SELECT engine_pid, started_ms FROM inflight "
			  "WHERE reaped_ms IS NULL AND engine_pid != ?1) ORDER BY t DESC LIMIT 1"
			: "SELECT engine_pid FROM sessions WHERE " STORE_ROW_LIVE " "
			  "AND engine_pid != ?1 ORDER BY created_ms DESC LIMIT 1",
		NULL);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, self_pid);
	if (store_step_row(s, st) == SQLITE_ROW)
		*pid = sqlite3_column_int64(st, 0);
	store_release(s, st);
	if (!*pid)
		return 0;
	*last_ms = store_engine_last_sign(s, *pid);
	return 1;
}

bool store_live_state(struct bh_store *s, const char *sandbox, char *state, size_t n)
{
	sqlite3_stmt *st = store_prepare(
		s, "SELECT state FROM sessions WHERE sandbox = ? AND state != 'ended'", NULL);
	if (!st)
		return false;
	store_bind_text(st, 1, sandbox);
	bool live = store_step_row(s, st) == SQLITE_ROW;
	if (live)
		store_copy_col(st, 0, state, n);
	store_release(s, st);
	return live;
}
