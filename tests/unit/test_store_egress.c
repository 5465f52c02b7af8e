/* ---- egress: migration 6 (data/migrations/006-egress-profile.sql): a
 * hibernated session's row names the egress profile it holds, so the next
 * engine holds it again at wake. A store from before it still lists its
 * hibernated sessions (naming no profile) when read as it is; once migrated
 * a hibernation keeps the profile's name. ---- */
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
	harness_scratch_dir("store-egress", dir, sizeof dir, db, sizeof db);
}

static void teardown(void)
{
	harness_remove_dir(dir);
}

/* A store as the build before migration 6 left it: version 5, one
 * hibernated session. */
static void version_5_store(void)
{
	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(db, &d), SQLITE_OK);
	const char *const steps[] = {bh_schema_sql, bh_migration_002, bh_migration_003,
				     bh_migration_004, bh_migration_005};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		cr_assert_eq(sqlite3_exec(d, steps[i], NULL, NULL, NULL), SQLITE_OK,
			     "migration %zu: %s", i + 1, sqlite3_errmsg(d));
	cr_assert_eq(
		sqlite3_exec(
			d,
			"PRAGMA user_version = 5; INSERT INTO sessions (fingerprint, sandbox, "
			"runtime, tier, state, engine_pid, lease_until_ms, created_ms, "
			"expires_ms, hibernated_ms) VALUES ('fp1', 'bh-s-1', 'runsc', 'kernel', "
			"'hibernated', 1, 0, 1, 2, 3)",
			NULL, NULL, NULL),
		SQLITE_OK, "%s", sqlite3_errmsg(d));
	sqlite3_close(d);
}

struct seen {
	size_t n;
	char fp[4][65], profile[4][80];
};

static void on_row(void *arg, const struct store_hibernated_row *r)
{
	struct seen *s = arg;
	if (s->n < 4) {
		snprintf(s->fp[s->n], sizeof s->fp[0], "%s", r->fingerprint);
		snprintf(s->profile[s->n], sizeof s->profile[0], "%s", r->egress_profile);
		s->n++;
	}
}

static void read_rows(bool readonly, struct seen *s)
{
	struct bh_store *st = NULL;
	bh_error *err = NULL;
	memset(s, 0, sizeof *s);
	cr_assert_eq(store_open(db, readonly, false, &st, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(store_hibernated_sessions(st, on_row, s, &err), 0, "%s", err ? err->msg : "");
	store_close(st);
}

Test(store_egress,
     a_store_from_before_migration_6_lists_its_hibernated_sessions_and_then_keeps_a_profile,
     .init = setup, .fini = teardown)
{
	version_5_store();
	struct seen s;
	read_rows(true, &s); /* read as it is: not migrated */
	cr_assert_eq(s.n, 1, "the hibernated session of a version 5 store is not listed");
	cr_assert_str_eq(s.fp[0], "fp1");
	cr_assert_str_eq(s.profile[0], "");

	struct bh_store *st = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(db, false, false, &st, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(store_session_hibernated(st, "fp1", 10, 20, "e2e", &err), 0, "%s",
		     err ? err->msg : "");
	store_close(st);
	read_rows(false, &s);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(s.profile[0], "e2e", "the hibernation did not keep the session's profile");
	read_rows(true, &s);
	cr_assert_str_eq(s.profile[0], "e2e");
}
