/* The store's insides, shared by store.c (opening, migrations, the
 * statement cache, the writes, the WAL) and store_read.c (the reads a row
 * at a time, in pages). */
#ifndef BH_STORE_PRIV_H
#define BH_STORE_PRIV_H

#include "store.h"
#include "store_untrusted.h"

#include <sqlite3.h>

/* How long a statement waits for another process's lock (a backup, gc). */
#define STORE_BUSY_TIMEOUT_MS 5000

/* Statements are prepared once per store and kept: preparing is a third
 * of a record's commit otherwise. Keyed by the SQL text; one in use (a
 * callback of an iteration may come back in) is prepared afresh. */
#define STMT_CACHE 32
struct cached_stmt {
	char *sql;
	sqlite3_stmt *st;
	bool busy;
};

/* What the WAL hook saw: checkpoints are scheduled by the engine's loop
 * from these, never run inside a commit. */
struct wal_watch {
	int pages;               /* frames in the WAL after the last commit */
	bool since_checkpoint;   /* a commit came after the last complete checkpoint */
	bool truncated;          /* the file is empty: nothing for an idle TRUNCATE */
	uint64_t last_commit_us;
	int full_pages;          /* tell full_fn once a commit leaves this many */
	void (*full_fn)(void *arg);
	void *full_arg;
};

struct bh_store {
	sqlite3 *db;
	bool readonly;
	char *path;             /* named in a read's errors */
	struct store_work work; /* opened for reading: the bound on one query's work */
	struct cached_stmt cache[STMT_CACHE];
	size_t n_cache;
	struct wal_watch wal;
	bool events_attributed; /* ---- ci: its events have actor and request_id (migration 5) ---- */
	bool sessions_egress; /* ---- egress: its sessions name their profile (migration 6) ---- */
	bool sessions_adopted; /* ---- fleet: its sessions say where an adopted chain began (7) ---- */
	bool sessions_branched; /* ---- density: and the parent a branch names (8) ---- */
};

/* A kept statement, or a fresh one-off when it is in use (release hands
 * either back). */
sqlite3_stmt *store_prepare(struct bh_store *s, const char *sql, bh_error **err);
void store_release(struct bh_store *s, sqlite3_stmt *st);
void store_bind_text(sqlite3_stmt *st, int i, const char *v);
void store_copy_col(sqlite3_stmt *st, int i, char *dst, size_t n);
/* Never NULL: "" for a NULL column. */
const char *store_col_text(sqlite3_stmt *st, int i);
/* One step of a read, with a fresh allowance of work. */
int store_step_row(struct bh_store *s, sqlite3_stmt *st);
/* How a read loop ended; the statement goes back. */
int store_read_end(struct bh_store *s, sqlite3_stmt *st, int rc, const char *what, bh_error **err);

/* A session row its engine still owes an end: neither ended nor hibernated
 * (a hibernated one is an image the next engine re-adopts). Whose engine is
 * gone, it is what that engine left (leftovers.c, history_leaks.c). */
#define STORE_ROW_LIVE "state NOT IN ('ended', 'hibernated')"

#endif
