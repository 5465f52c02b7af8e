/* Migration 3 (data/migrations/003-cells.sql, stream): a store written
 * before it kept a 4 KiB output prefix; once migrated, a row cut there says
 * so (stored_stdout_truncated) beside the cell's own flags, and every row
 * still reads, through the engine's store and a store opened read-only. */
#include "bulkhead.h"
#include "harness.h"
#include "store.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096], db[4200];

static void setup(void)
{
	harness_scratch_dir("cells", dir, sizeof dir, db, sizeof db);
}

static void teardown(void)
{
	harness_remove_dir(dir);
}

#define FP "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* A store as the build before migration 3 left it: version 2, one row whose
 * stdout was cut at 4096 bytes and one that was not. */
static void version_2_store(void)
{
	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(db, &d), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, bh_schema_sql, NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, bh_migration_002, NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, "PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
	for (int i = 1; i <= 2; i++) {
		char sql[1024];
		snprintf(sql, sizeof sql,
			 "INSERT INTO records (version, request_sha256, result_sha256, provider, "
			 "isolation, environment, started_unix_ms, ended_unix_ms, session, sequence, "
			 "record_sha256, language, exit_code, flags, duration_us, code, stdout_prefix, "
			 "stderr_prefix) VALUES (2, 'r', 's', 'p', 'container', 'e', %d, %d, '%s', %d, "
			 "'%064d', 'python', 0, '%s', 5, CAST('print(1)' AS BLOB), zeroblob(%d), "
			 "CAST('' AS BLOB))",
			 i, i + 1, FP, i, i, i == 1 ? "interpreter_started" : "", i == 1 ? 4096 : 10);
		cr_assert_eq(sqlite3_exec(d, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(d));
	}
	sqlite3_close(d);
}

struct seen {
	size_t n;
	char flags[4][128];
	size_t out_len[4];
};

static int on_row(void *arg, const struct bh_cell_row *row)
{
	struct seen *s = arg;
	if (s->n < 4) {
		snprintf(s->flags[s->n], sizeof s->flags[0], "%s", row->flags);
		s->out_len[s->n] = row->out_len;
		s->n++;
	}
	return 0;
}

Test(store_cells, a_version_2_store_reads_before_migration_and_flags_its_cut_rows_after,
     .init = setup, .fini = teardown)
{
	version_2_store();
	bh_history *h = NULL;
	bh_error *err = NULL;
	struct seen before = {0};
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_history_cells(h, FP, 0, 0, on_row, &before, &err), 0, "%s",
		     err ? err->msg : "");
	bh_history_close(h);
	cr_assert_eq(before.n, 2, "a store no migration 3 reached still reads");
	cr_assert_str_eq(before.flags[1], "interpreter_started");

	struct bh_store *st = NULL;
	cr_assert_eq(store_open(db, false, false, &st, &err), 0, "%s", err ? err->msg : "");
	store_close(st);
	struct seen after = {0};
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_history_cells(h, FP, 0, 0, on_row, &after, &err), 0, "%s",
		     err ? err->msg : "");
	bh_history_close(h);
	cr_assert_eq(after.n, 2);
	cr_assert_str_eq(after.flags[0], "", "a row under the old prefix was not cut");
	cr_assert_eq(after.out_len[0], 10);
	cr_assert_str_eq(after.flags[1], "interpreter_started,stored_stdout_truncated");
	cr_assert_eq(after.out_len[1], 4096);
}

Test(store_cells, cells_need_a_session, .init = setup, .fini = teardown)
{
	version_2_store();
	bh_history *h = NULL;
	bh_error *err = NULL;
	struct seen s = {0};
	cr_assert_eq(bh_history_open(db, &h, &err), 0);
	cr_assert_lt(bh_history_cells(h, "", 0, 0, on_row, &s, &err), 0);
	cr_assert_not_null(strstr(err->msg, "name a session"), "%s", err->msg);
	bh_error_free(err);
	bh_history_close(h);
}
