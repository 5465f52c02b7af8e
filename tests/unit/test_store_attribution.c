/* Migration 5 (data/migrations/005-attribution.sql, ci): events name who
 * acted and the request that asked. A store from before it still reads
 * (its events say "" for both: not known), and once migrated an event keeps
 * what the engine was told, a name cut to the bytes a principal's may hold. */
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
	harness_scratch_dir("attribution", dir, sizeof dir, db, sizeof db);
}

static void teardown(void)
{
	harness_remove_dir(dir);
}

/* A store as the build before attribution left it: version 3, one event. */
static void version_3_store(void)
{
	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(db, &d), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, bh_schema_sql, NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, bh_migration_002, NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, bh_migration_003, NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d, "PRAGMA user_version = 3; INSERT INTO events (at_ms, kind, "
				     "session, sandbox, detail) VALUES (1, 'state', 'fp', 'bh-x', "
				     "'ready -> pausing')",
				  NULL, NULL, NULL),
		     SQLITE_OK, "%s", sqlite3_errmsg(d));
	sqlite3_close(d);
}

struct seen {
	size_t n;
	char detail[4][64], actor[4][80], rid[4][80];
};

static int on_event(void *arg, const struct bh_event *ev)
{
	struct seen *s = arg;
	if (s->n < 4) {
		snprintf(s->detail[s->n], sizeof s->detail[0], "%s", ev->detail);
		snprintf(s->actor[s->n], sizeof s->actor[0], "%s", ev->actor);
		snprintf(s->rid[s->n], sizeof s->rid[0], "%s", ev->request_id);
		s->n++;
	}
	return 0;
}

static void read_events(struct seen *s)
{
	bh_history *h = NULL;
	bh_error *err = NULL;
	memset(s, 0, sizeof *s);
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_history_events(h, 0, 0, on_event, s, &err), 0, "%s", err ? err->msg : "");
	bh_history_close(h);
}

Test(store_attribution, a_store_from_before_attribution_reads_and_its_old_events_name_no_one,
     .init = setup, .fini = teardown)
{
	version_3_store();
	struct seen s;
	read_events(&s);
	cr_assert_eq(s.n, 1, "a version 3 store's events read as they are");
	cr_assert_str_eq(s.detail[0], "ready -> pausing");
	cr_assert_str_eq(s.actor[0], "");
	cr_assert_str_eq(s.rid[0], "");

	struct bh_store *st = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(db, false, false, &st, &err), 0, "%s", err ? err->msg : "");
	struct bh_actor who = {.name = "watcher", .request_id = "0123abcd"};
	cr_assert_eq(store_event_by(st, "state", "fp", "bh-x", "pausing -> paused", &who), 0);
	cr_assert_eq(store_event(st, "orphan_reaped", "", "bh-y", "left by a dead engine"), 0);
	store_close(st);
	read_events(&s);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.actor[0], "", "an event from before the migration names no one");
	cr_assert_str_eq(s.actor[1], "watcher");
	cr_assert_str_eq(s.rid[1], "0123abcd");
	cr_assert_str_eq(s.actor[2], BH_ACTOR_ENGINE, "what the engine did of its own accord");
	cr_assert_str_eq(s.rid[2], "");
}
