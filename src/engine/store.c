#include "store.h"
#include "store_priv.h"
#include "internal.h"
#include "store_files.h"
#include "store_untrusted.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

/* Migrations are numbered; each runs once, in order, inside a transaction,
 * and PRAGMA user_version records how far a store has come. */
static const char *const migrations[] = {
	bh_schema_sql,    /* data/schema.sql */
	bh_migration_002, /* data/migrations/002-hibernation.sql */
	bh_migration_003, /* data/migrations/003-cells.sql (stream) */
	bh_migration_004, /* data/migrations/004-inflight.sql (inflight) */
	bh_migration_005, /* data/migrations/005-attribution.sql (ci) */
	bh_migration_006, /* data/migrations/006-egress-profile.sql (egress) */
	bh_migration_007, /* data/migrations/007-adoption.sql (fleet) */
	bh_migration_008, /* data/migrations/008-branch.sql (density: branch) */
};
#define N_MIGRATIONS (sizeof migrations / sizeof migrations[0])

const char *const *store_migrations(size_t *n)
{
	*n = N_MIGRATIONS;
	return migrations;
}

static int db_fail(bh_error **err, sqlite3 *db, const char *what)
{
	int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
	/* A full disk or a read-only store is the environment, not the request. */
	return bh_fail(err, BH_E_SYSTEM,
		       code == SQLITE_FULL ? ENOSPC : 0, "store: %s: %s", what,
		       db ? sqlite3_errmsg(db) : "no database");
}

static int exec(struct bh_store *s, const char *sql, bh_error **err)
{
	char *msg = NULL;
	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		bh_fail(err, BH_E_SYSTEM, 0, "store: %s", msg ? msg : sqlite3_errmsg(s->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static int user_version(struct bh_store *s)
{
	sqlite3_stmt *st = NULL;
	int v = -1;
	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int migrate(struct bh_store *s, bh_error **err)
{
	int have = user_version(s);
	if (have < 0)
		return db_fail(err, s->db, "read schema version");
	if ((size_t)have > N_MIGRATIONS)
		return bh_fail(err, BH_E_INVALID, 0,
			       "store: schema version %d is newer than this bulkhead knows (%zu)", have,
			       N_MIGRATIONS);
	for (size_t i = (size_t)have; i < N_MIGRATIONS; i++) {
		char bump[64];
		snprintf(bump, sizeof bump, "PRAGMA user_version = %zu;", i + 1);
		if (exec(s, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		if (exec(s, migrations[i], err) < 0 || exec(s, bump, err) < 0) {
			exec(s, "ROLLBACK", NULL);
			bh_error_wrap(err ? *err : NULL, "migration %zu", i + 1);
			return -1;
		}
		if (exec(s, "COMMIT", err) < 0)
			return -1;
	}
	return 0;
}

static int quick_check(struct bh_store *s, bh_error **err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	if (sqlite3_prepare_v2(s->db, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK)
		return db_fail(err, s->db, "quick_check");
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		if (!r || strcmp(r, "ok"))
			ret = bh_fail(err, BH_E_SYSTEM, 0, "store: quick_check failed: %s", r ? r : "?");
	}
	sqlite3_finalize(st);
	return ret;
}

int store_open(const char *path, bool readonly, bool sync_full, struct bh_store **out,
	       bh_error **err)
{
	*out = NULL;
	/* SQLite opens the store's files by name: none may be a link, and a
	 * store opened to read is opened writing nothing (store_files.c). */
	cleanup_free char *uri = NULL;
	if (readonly ? store_files_for_reading(path, &uri, err) < 0 : store_files_check(path, err) < 0)
		return -1;
	if (!readonly) {
		/* 0600 from the first byte: create it ourselves before SQLite does. */
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "store: open %s", path);
		fchmod(fd, 0600);
		close(fd);
	}
	struct bh_store *s = xzalloc(sizeof *s);
	s->readonly = readonly;
	s->path = xstrdup(path);
	int flags = readonly ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE;
	if (sqlite3_open_v2(readonly ? uri : path, &s->db,
			    flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
		db_fail(err, s->db, path);
		store_close(s);
		return -1;
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	sqlite3_extended_result_codes(s->db, 1);
	if (readonly && store_harden_for_reading(s->db, path, &s->work, err) < 0) {
		store_close(s);
		return -1;
	}
	if (!readonly) {
		if (exec(s, "PRAGMA journal_mode=WAL", err) < 0 ||
		    exec(s, sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", err) < 0 ||
		    exec(s, "PRAGMA foreign_keys=ON", err) < 0 ||
		    /* Checkpoints are ours to schedule (an idle timer), never a commit's. */
		    exec(s, "PRAGMA wal_autocheckpoint=0", err) < 0 || migrate(s, err) < 0 ||
		    quick_check(s, err) < 0) {
			store_close(s);
			return -1;
		}
		/* The WAL and shared-memory files get the same privacy. */
		store_files_private(path);
	}
	/* ---- ci: attribution: a store read as it is, from before migration 5,
	 * has events without who acted ---- */
	sqlite3_stmt *col = NULL;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT 1 FROM pragma_table_xinfo('events') WHERE name = 'request_id'",
			       -1, &col, NULL) == SQLITE_OK)
		s->events_attributed = sqlite3_step(col) == SQLITE_ROW;
	sqlite3_finalize(col);
	/* ---- egress: and, from before migration 6, sessions without a profile ---- */
	col = NULL;
	if (sqlite3_prepare_v2(
		    s->db,
		    "SELECT 1 FROM pragma_table_xinfo('sessions') WHERE name = 'egress_profile'",
		    -1, &col, NULL) == SQLITE_OK)
		s->sessions_egress = sqlite3_step(col) == SQLITE_ROW;
	sqlite3_finalize(col);
	/* ---- fleet: and, from before migration 7, no session adopted ---- */
	col = NULL;
	if (sqlite3_prepare_v2(
		    s->db,
		    "SELECT 1 FROM pragma_table_xinfo('sessions') WHERE name = 'adopted_after'",
		    -1, &col, NULL) == SQLITE_OK)
		s->sessions_adopted = sqlite3_step(col) == SQLITE_ROW;
	sqlite3_finalize(col);
	/* ---- density: and, from before migration 8, none branched ---- */
	col = NULL;
	if (sqlite3_prepare_v2(
		    s->db,
		    "SELECT 1 FROM pragma_table_xinfo('sessions') WHERE name = 'branched_from'",
		    -1, &col, NULL) == SQLITE_OK)
		s->sessions_branched = sqlite3_step(col) == SQLITE_ROW;
	sqlite3_finalize(col);
	*out = s;
	return 0;
}

void store_close(struct bh_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_cache; i++) {
		sqlite3_finalize(s->cache[i].st);
		free(s->cache[i].sql);
	}
	if (s->db && !s->readonly)
		sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_close_v2(s->db);
	free(s->path);
	free(s);
}

sqlite3_stmt *store_prepare(struct bh_store *s, const char *sql, bh_error **err)
{
	struct cached_stmt *slot = NULL;
	/* Each statement starts with a fresh allowance (a trip a loop that
	 * reads no error left behind is not this statement's). */
	s->work.used = 0;
	s->work.tripped = false;
	for (size_t i = 0; i < s->n_cache; i++) {
		if (strcmp(s->cache[i].sql, sql))
			continue;
		if (!s->cache[i].busy) {
			s->cache[i].busy = true;
			return s->cache[i].st;
		}
		break; /* in use: a one-off below */
	}
	if (s->n_cache < STMT_CACHE) {
		bool known = false;
		for (size_t i = 0; i < s->n_cache; i++)
			known = known || !strcmp(s->cache[i].sql, sql);
		if (!known)
			slot = &s->cache[s->n_cache];
	}
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v3(s->db, sql, -1, slot ? SQLITE_PREPARE_PERSISTENT : 0, &st, NULL) !=
	    SQLITE_OK) {
		db_fail(err, s->db, "prepare");
		return NULL;
	}
	if (slot) {
		*slot = (struct cached_stmt){.sql = xstrdup(sql), .st = st, .busy = true};
		s->n_cache++;
	}
	return st;
}

/* Hands a statement back: a kept one is reset for its next use (which
 * also ends the read a SELECT holds), a one-off is finalized. */
void store_release(struct bh_store *s, sqlite3_stmt *st)
{
	for (size_t i = 0; i < s->n_cache; i++) {
		if (s->cache[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			s->cache[i].busy = false;
			return;
		}
	}
	sqlite3_finalize(st);
}

void store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

void store_copy_col(sqlite3_stmt *st, int i, char *dst, size_t n)
{
	const char *v = (const char *)sqlite3_column_text(st, i);
	snprintf(dst, n, "%s", v ? v : "");
}

const char *store_col_text(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "";
}

/* One step of a read: each row gets a fresh allowance of work (bounded
 * for a store opened for reading, unbounded for the engine's own). */
int store_step_row(struct bh_store *s, sqlite3_stmt *st)
{
	s->work.used = 0;
	return sqlite3_step(st);
}

/* How a read loop ended (rc its last step): done, or stopped by its
 * callback (a row), or an error naming the store; the statement goes back. */
int store_read_end(struct bh_store *s, sqlite3_stmt *st, int rc, const char *what, bh_error **err)
{
	int ret = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		if (s->work.tripped)
			ret = bh_fail(err, BH_E_INVALID, 0,
				      "store %s: %s: stopped after %llu steps of work without a row (the "
				      "bound on one query of a store opened for reading): a crafted or "
				      "damaged store",
				      s->path, what, (unsigned long long)s->work.bound);
		else
			ret = bh_fail(err, BH_E_SYSTEM, rc == SQLITE_FULL ? ENOSPC : 0, "store %s: %s: %s",
				      s->path, what, sqlite3_errmsg(s->db));
		s->work.tripped = false;
	}
	store_release(s, st);
	return ret;
}

static int step_done(struct bh_store *s, sqlite3_stmt *st, const char *what, bh_error **err)
{
	int rc = sqlite3_step(st);
	store_release(s, st);
	if (rc != SQLITE_DONE)
		return db_fail(err, s->db, what);
	return 0;
}

/* One statement without results, through the kept statements (BEGIN and
 * COMMIT run on every record). */
static int exec1(struct bh_store *s, const char *sql, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(s, sql, err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	store_release(s, st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return db_fail(err, s->db, sql);
	return 0;
}

int store_session_intent(struct bh_store *s, const struct store_session_row *r, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(s,
				   "INSERT INTO sessions (fingerprint, sandbox, runtime, tier, floor, principal, "
				   "owner, run_key, state, engine_pid, lease_until_ms, created_ms, expires_ms) "
				   "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
				   err);
	if (!st)
		return -1;
	store_bind_text(st, 1, r->fingerprint);
	store_bind_text(st, 2, r->sandbox);
	store_bind_text(st, 3, r->runtime);
	store_bind_text(st, 4, r->tier);
	store_bind_text(st, 5, r->floor);
	store_bind_text(st, 6, r->principal);
	store_bind_text(st, 7, r->owner);
	store_bind_text(st, 8, r->run_key);
	store_bind_text(st, 9, bh_session_state_name(r->state));
	sqlite3_bind_int64(st, 10, r->engine_pid);
	sqlite3_bind_int64(st, 11, r->lease_until_ms);
	sqlite3_bind_int64(st, 12, r->created_ms);
	sqlite3_bind_int64(st, 13, r->expires_ms);
	return step_done(s, st, "record the sandbox's intent row", err);
}

int store_session_state(struct bh_store *s, const char *fingerprint, enum bh_session_state state,
			bh_error **err)
{
	sqlite3_stmt *st = store_prepare(s, "UPDATE sessions SET state = ? WHERE fingerprint = ?", err);
	if (!st)
		return -1;
	store_bind_text(st, 1, bh_session_state_name(state));
	store_bind_text(st, 2, fingerprint);
	return step_done(s, st, "update a session's state", err);
}

int store_session_end(struct bh_store *s, const char *fingerprint, enum bh_end_reason reason,
		      const char *detail, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(s,
				   "UPDATE sessions SET state = 'ended', end_reason = ?, end_detail = ?, "
				   "ended_ms = ? WHERE fingerprint = ? AND state != 'ended'",
				   err);
	if (!st)
		return -1;
	store_bind_text(st, 1, bh_end_reason_name(reason));
	store_bind_text(st, 2, detail);
	sqlite3_bind_int64(st, 3, (int64_t)now_real_ms());
	store_bind_text(st, 4, fingerprint);
	return step_done(s, st, "end a session", err);
}


int store_record_commit(struct bh_store *s, const struct bh_record *rec,
			const struct store_record_extra *x, bool keep_content, bh_error **err)
{
	if (exec1(s, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	sqlite3_stmt *st = store_prepare(
		s,
		"INSERT INTO records (version, request_sha256, result_sha256, unanswered, provider, "
		"isolation, environment, policy, software_identity, software_rule_id, started_unix_ms, "
		"ended_unix_ms, session, sequence, previous_sha256, record_sha256, language, exit_code, "
		"flags, duration_us, code, stdout_prefix, stderr_prefix) "
		"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		err);
	if (!st)
		goto rollback;
	sqlite3_bind_int(st, 1, rec->version);
	store_bind_text(st, 2, rec->request_sha256);
	store_bind_text(st, 3, rec->result_sha256);
	store_bind_text(st, 4, rec->unanswered);
	store_bind_text(st, 5, rec->provider);
	store_bind_text(st, 6, rec->isolation);
	store_bind_text(st, 7, rec->environment);
	store_bind_text(st, 8, rec->policy);
	store_bind_text(st, 9, rec->software_identity);
	store_bind_text(st, 10, rec->software_rule_id);
	sqlite3_bind_int64(st, 11, rec->started_unix_ms);
	sqlite3_bind_int64(st, 12, rec->ended_unix_ms);
	store_bind_text(st, 13, rec->session);
	sqlite3_bind_int64(st, 14, (int64_t)rec->sequence);
	store_bind_text(st, 15, rec->previous_sha256);
	store_bind_text(st, 16, rec->record_sha256);
	store_bind_text(st, 17, x ? x->language : "");
	if (x)
		sqlite3_bind_int(st, 18, x->exit_code);
	store_bind_text(st, 19, x ? x->flags : "");
	if (x)
		sqlite3_bind_int64(st, 20, (int64_t)x->duration_us);
	if (x && keep_content) {
		sqlite3_bind_blob(st, 21, x->code ? (const void *)x->code : "", (int)x->code_len,
				  SQLITE_STATIC);
		sqlite3_bind_blob(st, 22, x->out ? (const void *)x->out : "",
				  (int)(x->out_len < BH_STORE_OUTPUT_CAP ? x->out_len : BH_STORE_OUTPUT_CAP),
				  SQLITE_STATIC);
		sqlite3_bind_blob(st, 23, x->err ? (const void *)x->err : "",
				  (int)(x->err_len < BH_STORE_OUTPUT_CAP ? x->err_len : BH_STORE_OUTPUT_CAP),
				  SQLITE_STATIC);
	}
	if (step_done(s, st, "insert a record", err) < 0)
		goto rollback;
	if (rec->session[0]) {
		st = store_prepare(s,
			     "UPDATE sessions SET calls = ?, last_record_sha256 = ?, last_call_ms = ? "
			     "WHERE fingerprint = ?",
			     err);
		if (!st)
			goto rollback;
		sqlite3_bind_int64(st, 1, (int64_t)rec->sequence);
		store_bind_text(st, 2, rec->record_sha256);
		sqlite3_bind_int64(st, 3, rec->ended_unix_ms);
		store_bind_text(st, 4, rec->session);
		if (step_done(s, st, "update the session's chain", err) < 0)
			goto rollback;
		/* ---- inflight: the record replaces the call's intent ---- */
		st = store_prepare(s, "DELETE FROM inflight WHERE session = ? AND sequence = ?", err);
		if (!st)
			goto rollback;
		store_bind_text(st, 1, rec->session);
		sqlite3_bind_int64(st, 2, (int64_t)rec->sequence);
		if (step_done(s, st, "settle the call's intent", err) < 0)
			goto rollback;
	}
	if (exec1(s, "COMMIT", err) < 0)
		goto rollback;
	return 0;
rollback:
	exec1(s, "ROLLBACK", NULL);
	return -1;
}

int store_event(struct bh_store *s, const char *kind, const char *fingerprint, const char *sandbox,
		const char *detail)
{
	return store_event_by(s, kind, fingerprint, sandbox, detail, NULL);
}

/* ---- ci: attribution ---- */
int store_event_by(struct bh_store *s, const char *kind, const char *fingerprint,
		   const char *sandbox, const char *detail, const struct bh_actor *who)
{
	sqlite3_stmt *st = store_prepare(s,
					 "INSERT INTO events (at_ms, kind, session, sandbox, detail, actor, "
					 "request_id) VALUES (?,?,?,?,?,?,?)",
					 NULL);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (int64_t)now_real_ms());
	store_bind_text(st, 2, kind);
	store_bind_text(st, 3, fingerprint);
	store_bind_text(st, 4, sandbox);
	store_bind_text(st, 5, detail);
	store_bind_text(st, 6, who && who->name && *who->name ? who->name : BH_ACTOR_ENGINE);
	store_bind_text(st, 7, who && who->request_id ? who->request_id : "");
	return step_done(s, st, "insert an event", NULL);
}

int store_live_sessions(struct bh_store *s, store_live_fn fn, void *arg, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(
		s, "SELECT fingerprint, sandbox, runtime, state, engine_pid FROM sessions WHERE state != 'ended'",
		err);
	if (!st)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW)
		fn(arg, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
		   (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
		   sqlite3_column_int64(st, 4));
	store_release(s, st);
	return 0;
}

bool store_live_row(struct bh_store *s, const char *sandbox, char fp[65], int64_t *created_ms,
		    int64_t *engine_pid)
{
	sqlite3_stmt *st = store_prepare(
		s, "SELECT fingerprint, created_ms, engine_pid FROM sessions WHERE sandbox = ? AND state != 'ended'",
		NULL);
	if (!st)
		return false;
	store_bind_text(st, 1, sandbox);
	bool live = sqlite3_step(st) == SQLITE_ROW;
	if (live) {
		store_copy_col(st, 0, fp, 65);
		*created_ms = sqlite3_column_int64(st, 1);
		*engine_pid = sqlite3_column_int64(st, 2);
	}
	store_release(s, st);
	return live;
}

bool store_knows_sandbox(struct bh_store *s, const char *sandbox)
{
	sqlite3_stmt *st = store_prepare(s, "SELECT 1 FROM sessions WHERE sandbox = ?", NULL);
	if (!st)
		return false;
	store_bind_text(st, 1, sandbox);
	bool known = sqlite3_step(st) == SQLITE_ROW;
	store_release(s, st);
	return known;
}

int store_ping(struct bh_store *s, bh_error **err)
{
	return exec(s, "SELECT count(*) FROM sessions", err);
}

int store_backup(struct bh_store *s, const char *dest, bh_error **err)
{
	/* The backup API copies a consistent snapshot, WAL included. */
	int fd = open(dest, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "backup: create %s", dest);
	close(fd);
	sqlite3 *to = NULL;
	if (sqlite3_open_v2(dest, &to, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		db_fail(err, to, dest);
		sqlite3_close_v2(to);
		unlink(dest);
		return -1;
	}
	sqlite3_backup *b = sqlite3_backup_init(to, "main", s->db, "main");
	int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		db_fail(err, to, "backup");
		sqlite3_close_v2(to);
		unlink(dest);
		return -1;
	}
	sqlite3_close_v2(to);
	return 0;
}

/* Runs after every write transaction's commit, inside it: only notes. */
static int on_wal_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
	(void)db, (void)name;
	struct wal_watch *w = arg;
	w->pages = pages;
	w->since_checkpoint = true;
	w->truncated = false;
	w->last_commit_us = now_mono_us();
	if (w->full_fn && pages >= w->full_pages)
		w->full_fn(w->full_arg);
	return SQLITE_OK;
}

void store_watch_wal(struct bh_store *s, int full_pages, void (*full_fn)(void *arg), void *arg)
{
	if (!s || !s->db || s->readonly)
		return;
	s->wal = (struct wal_watch){.full_pages = full_pages, .full_fn = full_fn, .full_arg = arg,
				    .last_commit_us = now_mono_us()};
	sqlite3_wal_hook(s->db, on_wal_commit, &s->wal);
}

void store_checkpoint(struct bh_store *s, uint64_t idle_us)
{
	if (!s || !s->db || s->readonly)
		return;
	struct wal_watch *w = &s->wal;
	bool idle = now_mono_us() - w->last_commit_us >= idle_us;
	if (!(idle ? !w->truncated : w->since_checkpoint))
		return;
	int log = -1, done = -1, rc;
	if (idle) {
		/* TRUNCATE waits for readers (a console on --db) through the busy
		 * handler; the loop must not: give up at once, retry next time. */
		sqlite3_busy_timeout(s->db, 0);
		rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
		sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	} else {
		rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
	}
	if (rc != SQLITE_OK || log != done)
		return; /* a reader holds part of it: the next one copies the rest */
	/* Everything is in the database: the next commit starts the WAL over
	 * from its first frame, so its file grows no further. */
	w->pages = 0;
	w->since_checkpoint = false;
	w->truncated = idle;
}

void *store_db(struct bh_store *s)
{
	return s->db;
}

void store_set_work_bound(struct bh_store *s, uint64_t steps)
{
	if (s->work.bound)
		s->work.bound = steps;
}

int store_session_hibernated(struct bh_store *s, const char *fingerprint, int64_t awake_ms,
			     int64_t lifetime_ms, const char *egress_profile, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(
		s,
		"UPDATE sessions SET state = 'hibernated', awake_ms = ?, lifetime_ms = ?, "
		"hibernated_ms = ?, egress_profile = ? WHERE fingerprint = ?",
		err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, awake_ms);
	sqlite3_bind_int64(st, 2, lifetime_ms);
	sqlite3_bind_int64(st, 3, (int64_t)now_real_ms());
	store_bind_text(st, 4, egress_profile ? egress_profile : "");
	store_bind_text(st, 5, fingerprint);
	return step_done(s, st, "record a hibernation", err);
}

/* ---- fleet (issue 20): a hibernated session adopted from another engine ---- */
bool store_knows_fingerprint(struct bh_store *s, const char *fingerprint)
{
	sqlite3_stmt *st = store_prepare(s, "SELECT 1 FROM sessions WHERE fingerprint = ?", NULL);
	if (!st)
		return true; /* a store that cannot say is taken to hold it: nothing is adopted */
	store_bind_text(st, 1, fingerprint);
	bool known = sqlite3_step(st) == SQLITE_ROW;
	store_release(s, st);
	return known;
}

/* The row of a hibernated session this engine did not hibernate itself (an
 * adopted one, a branch's child) and its event, in one transaction. */
static int insert_hibernated(struct bh_store *s, const struct store_hibernated_row *r,
			     const char *origin_host, int64_t engine_pid, const char *event,
			     const char *detail, bh_error **err)
{
	if (exec1(s, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	bool branched = r->branched_from && *r->branched_from;
	if (branched && !s->sessions_branched) {
		exec1(s, "ROLLBACK", NULL);
		return bh_fail(err, BH_E_SYSTEM, 0, "this store predates branches (migration 8)");
	}
	sqlite3_stmt *st = store_prepare(
		s,
		branched ? "INSERT INTO sessions (fingerprint, sandbox, runtime, tier, floor, principal, "
			   "owner, run_key, state, engine_pid, lease_until_ms, created_ms, expires_ms, "
			   "last_call_ms, calls, last_record_sha256, awake_ms, lifetime_ms, hibernated_ms, "
			   "egress_profile, origin_host, adopted_after, adopted_after_sha256, "
			   "branched_from) "
			   "VALUES (?,?,?,?,?,?,?,?,'hibernated',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
			 : "INSERT INTO sessions (fingerprint, sandbox, runtime, tier, floor, principal, "
			   "owner, run_key, state, engine_pid, lease_until_ms, created_ms, expires_ms, "
			   "last_call_ms, calls, last_record_sha256, awake_ms, lifetime_ms, hibernated_ms, "
			   "egress_profile, origin_host, adopted_after, adopted_after_sha256) "
			   "VALUES (?,?,?,?,?,?,?,?,'hibernated',?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		err);
	if (!st) {
		exec1(s, "ROLLBACK", NULL);
		return -1;
	}
	store_bind_text(st, 1, r->fingerprint);
	store_bind_text(st, 2, r->sandbox);
	store_bind_text(st, 3, r->runtime);
	store_bind_text(st, 4, r->tier);
	store_bind_text(st, 5, r->floor);
	store_bind_text(st, 6, r->principal);
	store_bind_text(st, 7, r->owner);
	store_bind_text(st, 8, r->run_key);
	sqlite3_bind_int64(st, 9, engine_pid);
	sqlite3_bind_int64(st, 10, r->created_ms);
	sqlite3_bind_int64(st, 11, r->created_ms);
	sqlite3_bind_int64(st, 12, r->created_ms + r->lifetime_ms);
	if (r->last_call_ms)
		sqlite3_bind_int64(st, 13, r->last_call_ms);
	else
		sqlite3_bind_null(st, 13);
	sqlite3_bind_int64(st, 14, (int64_t)r->calls);
	store_bind_text(st, 15, r->last_record_sha256);
	sqlite3_bind_int64(st, 16, r->awake_ms);
	sqlite3_bind_int64(st, 17, r->lifetime_ms);
	sqlite3_bind_int64(st, 18, r->hibernated_ms);
	store_bind_text(st, 19, r->egress_profile);
	store_bind_text(st, 20, origin_host);
	sqlite3_bind_int64(st, 21, (int64_t)r->calls);
	store_bind_text(st, 22, r->last_record_sha256);
	if (branched)
		store_bind_text(st, 23, r->branched_from);
	if (step_done(s, st, "record a hibernated session", err) < 0 ||
	    store_event(s, event, r->fingerprint, r->sandbox, detail) < 0) {
		if (err && !*err)
			db_fail(err, s->db, "record the session's event");
		exec1(s, "ROLLBACK", NULL);
		return -1;
	}
	return exec1(s, "COMMIT", err);
}

int store_session_adopted(struct bh_store *s, const struct store_hibernated_row *r,
			  const char *origin_host, int64_t engine_pid, const char *detail,
			  bh_error **err)
{
	return insert_hibernated(s, r, origin_host, engine_pid, "adopted", detail, err);
}

/* ---- density ---- */
int store_session_branched(struct bh_store *s, const struct store_hibernated_row *r,
			   int64_t engine_pid, const char *detail, bh_error **err)
{
	return insert_hibernated(s, r, "", engine_pid, "branched", detail, err);
}

int store_hibernated_sessions(struct bh_store *s, store_hibernated_fn fn, void *arg, bh_error **err)
{
#define HIBERNATED_COLUMNS                                                                           \
	"SELECT fingerprint, sandbox, runtime, tier, floor, principal, owner, run_key, created_ms, " \
	"coalesce(last_call_ms, 0), awake_ms, lifetime_ms, coalesce(hibernated_ms, 0), calls, "      \
	"last_record_sha256, "
	/* ---- egress: a store read as it is, from before migration 6, names no profile ---- */
	sqlite3_stmt *st =
		store_prepare(s,
			      s->sessions_egress ? HIBERNATED_COLUMNS
				      "egress_profile FROM sessions WHERE state = 'hibernated'"
						 : HIBERNATED_COLUMNS
				      "'' FROM sessions WHERE state = 'hibernated'",
			      err);
#undef HIBERNATED_COLUMNS
	if (!st)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct store_hibernated_row r = {
			.fingerprint = (const char *)sqlite3_column_text(st, 0),
			.sandbox = (const char *)sqlite3_column_text(st, 1),
			.runtime = (const char *)sqlite3_column_text(st, 2),
			.tier = (const char *)sqlite3_column_text(st, 3),
			.floor = (const char *)sqlite3_column_text(st, 4),
			.principal = (const char *)sqlite3_column_text(st, 5),
			.owner = (const char *)sqlite3_column_text(st, 6),
			.run_key = (const char *)sqlite3_column_text(st, 7),
			.created_ms = sqlite3_column_int64(st, 8),
			.last_call_ms = sqlite3_column_int64(st, 9),
			.awake_ms = sqlite3_column_int64(st, 10),
			.lifetime_ms = sqlite3_column_int64(st, 11),
			.hibernated_ms = sqlite3_column_int64(st, 12),
			.calls = (uint64_t)sqlite3_column_int64(st, 13),
			.last_record_sha256 = (const char *)sqlite3_column_text(st, 14),
			.egress_profile = (const char *)sqlite3_column_text(st, 15),
		};
		fn(arg, &r);
	}
	store_release(s, st);
	return 0;
}

long long store_prune(struct bh_store *s, int64_t cutoff_ms, bh_error **err)
{
	static const char *const steps[] = {
		("DELETE FROM records WHERE session IN (SELECT fingerprint FROM sessions "
		 "WHERE state = 'ended' AND ended_ms < ?1)"), /* one statement, two lines */
		"DELETE FROM records WHERE session = '' AND ended_unix_ms < ?1",
		"DELETE FROM sessions WHERE state = 'ended' AND ended_ms < ?1",
		"DELETE FROM events WHERE at_ms < ?1",
	};
	if (exec1(s, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	long long records = 0;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		sqlite3_stmt *st = store_prepare(s, steps[i], err);
		if (!st) {
			exec1(s, "ROLLBACK", NULL);
			return -1;
		}
		sqlite3_bind_int64(st, 1, cutoff_ms);
		int rc = sqlite3_step(st);
		if (i < 2)
			records += sqlite3_changes(s->db);
		store_release(s, st);
		if (rc != SQLITE_DONE) {
			db_fail(err, s->db, "prune the history");
			exec1(s, "ROLLBACK", NULL);
			return -1;
		}
	}
	/* A COMMIT that failed (SQLITE_FULL) may leave the transaction open,
	 * and every later BEGIN would fail with it. */
	if (exec1(s, "COMMIT", err) < 0) {
		exec1(s, "ROLLBACK", NULL);
		return -1;
	}
	return records;
}
