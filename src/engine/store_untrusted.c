/* Reading a store nobody vouches for. SQLite's own advice for databases
 * from an untrusted source (https://sqlite.org/security.html): defensive
 * mode, trusted_schema off, limits on lengths, and a progress handler
 * bounding the work. On top: the tables bulkhead reads are checked against
 * the schema this build would create, so a view (a recursive CTE that never
 * ends, a zeroblob that fills memory) or a virtual table cannot stand in
 * for one. */
#include "store_untrusted.h"
#include "internal.h"

#include <string.h>

/* SQLite calls this every PROGRESS_EVERY steps of a statement. */
#define PROGRESS_EVERY 10000

static int over_bound(void *arg)
{
	struct store_work *w = arg;
	w->used += PROGRESS_EVERY;
	if (w->bound && w->used > w->bound) {
		w->tripped = true;
		return 1; /* SQLITE_INTERRUPT */
	}
	return 0;
}

static int config(sqlite3 *db, int op, int on)
{
	int now = -1;
	if (sqlite3_db_config(db, op, on, &now) != SQLITE_OK || now != on)
		return -1;
	return 0;
}

/* The reference: the schema this build creates, in a private in-memory
 * database (one definition: the migrations themselves). */
static sqlite3 *reference_schema(size_t upto, bh_error **err)
{
	sqlite3 *ref = NULL;
	if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		sqlite3_close_v2(ref);
		bh_fail(err, BH_E_SYSTEM, 0, "store: cannot open an in-memory database");
		return NULL;
	}
	size_t n = 0;
	const char *const *m = store_migrations(&n);
	for (size_t i = 0; i < n && i < upto; i++) {
		char *msg = NULL;
		if (sqlite3_exec(ref, m[i], NULL, NULL, &msg) != SQLITE_OK) {
			bh_fail(err, BH_E_SYSTEM, 0, "store: the built-in schema: %s", msg ? msg : "?");
			sqlite3_free(msg);
			sqlite3_close_v2(ref);
			return NULL;
		}
	}
	return ref;
}

static const char *text_or_empty(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? t : "";
}

/* What kind of object `name` is in the store's main schema: "table",
 * "view", "virtual", "shadow", or "" when there is none. */
static int kind_of(sqlite3 *db, const char *name, char *kind, size_t n)
{
	sqlite3_stmt *st = NULL;
	kind[0] = '\0';
	if (sqlite3_prepare_v2(db, "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		snprintf(kind, n, "%s", text_or_empty(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* A column of `table` in the store: -1 when it has none, else its
 * table_xinfo "hidden" (0 a stored column, 2 and 3 generated). */
static int column_hidden(sqlite3 *db, const char *table, const char *column, bool *failed)
{
	sqlite3_stmt *st = NULL;
	*failed = false;
	if (sqlite3_prepare_v2(db, "SELECT hidden FROM pragma_table_xinfo(?1) WHERE name = ?2", -1, &st,
			       NULL) != SQLITE_OK) {
		*failed = true;
		return -1;
	}
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	int hidden = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
	*failed = rc != SQLITE_ROW && rc != SQLITE_DONE;
	sqlite3_finalize(st);
	return hidden;
}

static int check_table(sqlite3 *db, sqlite3 *ref, const char *path, const char *table,
		       bh_error **err)
{
	char kind[16];
	if (kind_of(db, table, kind, sizeof kind) < 0)
		return bh_fail(err, BH_E_INVALID, 0, "store %s: cannot read its schema: %s", path,
			       sqlite3_errmsg(db));
	/* ---- inflight: a store migration 004 never reached has no intents
	 * (its reads find none); present, it is checked as every table is. */
	if (!*kind && !strcmp(table, "inflight"))
		return 0;
	if (!*kind)
		return bh_fail(err, BH_E_INVALID, 0,
			       "store %s: it has no table %s: not a bulkhead store", path, table);
	if (strcmp(kind, "table"))
		return bh_fail(err, BH_E_INVALID, 0,
			       "store %s: %s is a %s, not a table: refused (a bulkhead store's %s is "
			       "a plain table; this one was made to run code when read)",
			       path, table, kind, table);
	sqlite3_stmt *cols = NULL;
	if (sqlite3_prepare_v2(ref, "SELECT name FROM pragma_table_xinfo(?1)", -1, &cols, NULL) !=
	    SQLITE_OK)
		return bh_fail(err, BH_E_SYSTEM, 0, "store: the built-in schema: %s", sqlite3_errmsg(ref));
	sqlite3_bind_text(cols, 1, table, -1, SQLITE_STATIC);
	int ret = 0;
	while (ret == 0 && sqlite3_step(cols) == SQLITE_ROW) {
		const char *column = text_or_empty(cols, 0);
		bool failed;
		int hidden = column_hidden(db, table, column, &failed);
		if (failed)
			ret = bh_fail(err, BH_E_INVALID, 0, "store %s: cannot read table %s: %s", path,
				      table, sqlite3_errmsg(db));
		else if (hidden < 0)
			ret = bh_fail(err, BH_E_INVALID, 0,
				      "store %s: table %s has no column %s (a store from another "
				      "version of bulkhead, or not a bulkhead store)",
				      path, table, column);
		else if (hidden != 0)
			ret = bh_fail(err, BH_E_INVALID, 0,
				      "store %s: column %s.%s is computed, not stored: refused (a "
				      "bulkhead store computes nothing when read)",
				      path, table, column);
	}
	sqlite3_finalize(cols);
	return ret;
}

int store_harden_for_reading(sqlite3 *db, const char *path, struct store_work *w,
			     bh_error **err)
{
	/* Before anything reads the schema: no writes to it, no functions it
	 * names that are not innocuous, no views, no triggers. */
	if (config(db, SQLITE_DBCONFIG_DEFENSIVE, 1) < 0 ||
	    config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0) < 0 ||
	    config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0) < 0 ||
	    config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0) < 0 ||
	    sqlite3_exec(db, "PRAGMA trusted_schema=OFF", NULL, NULL, NULL) != SQLITE_OK)
		return bh_fail(err, BH_E_SYSTEM, 0,
			       "store %s: cannot put SQLite in defensive mode: %s", path,
			       sqlite3_errmsg(db));
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, STORE_READ_VALUE_MAX);
	w->used = 0;
	w->bound = STORE_READ_WORK_BOUND;
	w->tripped = false;
	sqlite3_progress_handler(db, PROGRESS_EVERY, over_bound, w);

	/* ---- ci: attribution: a store from an older bulkhead is checked
	 * against the schema of its own version (PRAGMA user_version, which
	 * reads no table), so a copy made before a migration added a column
	 * still opens; one claiming no version, or a newer one, against all. */
	size_t n_migrations = 0, upto;
	store_migrations(&n_migrations);
	sqlite3_stmt *v = NULL;
	int version = 0;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
	    sqlite3_step(v) == SQLITE_ROW)
		version = sqlite3_column_int(v, 0);
	sqlite3_finalize(v);
	upto = version >= 1 && (size_t)version <= n_migrations ? (size_t)version : n_migrations;
	sqlite3 *ref = reference_schema(upto, err);
	if (!ref)
		return -1;
	sqlite3_stmt *tables = NULL;
	int ret = 0;
	if (sqlite3_prepare_v2(ref, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
			       -1, &tables, NULL) != SQLITE_OK)
		ret = bh_fail(err, BH_E_SYSTEM, 0, "store: the built-in schema: %s", sqlite3_errmsg(ref));
	while (ret == 0 && sqlite3_step(tables) == SQLITE_ROW) {
		/* The schema checks are work too: a fresh allowance for each. */
		w->used = 0;
		ret = check_table(db, ref, path, text_or_empty(tables, 0), err);
	}
	if (ret == 0 && w->tripped)
		ret = bh_fail(err, BH_E_INVALID, 0, "store %s: reading its schema ran past the work bound",
			      path);
	sqlite3_finalize(tables);
	sqlite3_close_v2(ref);
	w->used = 0;
	return ret;
}
