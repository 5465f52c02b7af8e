/* A store opened for reading is someone else's file (suite untrusted_store):
 * what a crafted one can make the reader do, and what it gets instead — a
 * clear error naming the store, never a hang or memory spent on a view.
 * Paging (suite history_paging): the newest rows of a long history, a
 * record by its sequence, the registry's newest sessions. The CLI's
 * readers (suite store_cli): `records --json` and `verify` over a large
 * store hold a row at a time, and a crafted one ends with an error. */
#include "gen_store.h"
#include "harness.h"
#include "store.h"
#include "store_untrusted.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char dir[4096];
static char db[4200];

static void setup(void)
{
	harness_scratch_dir("history", dir, sizeof dir, db, sizeof db);
}

static void teardown(void)
{
	harness_remove_dir(dir);
}

static void small_store(void)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 3, .records_per_session = 4,
					       .single_runs = 2, .events = 10});
}

static int count_event(void *arg, const struct bh_event *ev)
{
	(void)ev;
	(*(size_t *)arg)++;
	return 0;
}

/* Opening must fail, with a message naming the store and holding `says`. */
static void refused(const char *says)
{
	bh_history *h = NULL;
	bh_error *err = NULL;
	int rc = bh_history_open(db, &h, &err);
	if (rc == 0) {
		/* What today's reader then does with it: these are the reads
		 * the console and the CLI make. */
		size_t n = 0;
		int a = bh_history_events(h, 0, 1000, count_event, &n, &err);
		bh_history_close(h);
		cr_assert_fail("the crafted store opened (its events read: %d, %zu rows, %s); want it "
			       "refused: %s",
			       a, n, err ? err->msg : "no error", says);
	}
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err->msg, db), "the error does not name the store: %s", err->msg);
	cr_assert_not_null(strstr(err->msg, says), "the error does not say \"%s\": %s", says, err->msg);
	bh_error_free(err);
}

TestSuite(untrusted_store, .init = setup, .fini = teardown, .timeout = 60);

/* The audit's F13: without the check, the console's :events never returns. */
Test(untrusted_store, a_store_whose_events_are_a_recursive_view_is_refused_not_a_hang, .timeout = 20)
{
	small_store();
	gen_store_exec(db, "DROP TABLE events; CREATE VIEW events AS WITH RECURSIVE r(i) AS (SELECT 1 "
			   "UNION ALL SELECT i+1 FROM r) SELECT i AS id, 0 AS at_ms, '' AS kind, '' AS "
			   "session, '' AS sandbox, '' AS detail FROM r;");
	refused("events is a view, not a table");
}

Test(untrusted_store, a_records_view_is_refused_before_anything_reads_it)
{
	small_store();
	gen_store_exec(db, "ALTER TABLE records RENAME TO honest; CREATE VIEW records AS SELECT * FROM "
			   "honest;");
	refused("records is a view, not a table");
}

Test(untrusted_store, a_generated_column_cannot_stand_in_for_a_stored_one)
{
	small_store();
	gen_store_exec(db,
		       "ALTER TABLE sessions RENAME TO honest; CREATE TABLE sessions (fingerprint TEXT, "
		       "sandbox TEXT, runtime TEXT, tier TEXT, floor TEXT, principal TEXT, owner TEXT, "
		       "run_key TEXT, engine_pid INTEGER, lease_until_ms INTEGER, created_ms INTEGER, "
		       "expires_ms INTEGER, last_call_ms INTEGER, ended_ms INTEGER, end_reason TEXT, "
		       "end_detail TEXT, calls INTEGER, last_record_sha256 TEXT, awake_ms INTEGER, "
		       "hibernated_ms INTEGER, lifetime_ms INTEGER, state TEXT GENERATED ALWAYS AS "
		       "(hex(zeroblob(1000)))); INSERT INTO sessions (fingerprint) VALUES ('x');");
	refused("column sessions.state is computed, not stored");
}

Test(untrusted_store, a_file_without_the_tables_is_not_a_bulkhead_store)
{
	gen_store_exec(db, "CREATE TABLE unrelated (x);");
	refused("not a bulkhead store");
}

Test(untrusted_store, a_store_opened_for_reading_runs_sqlite_defensive_with_an_untrusted_schema)
{
	small_store();
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(db, true, false, &s, &err), 0, "%s", err ? err->msg : "?");
	sqlite3 *raw = store_db(s);
	int defensive = -1, trusted = -1, views = -1, triggers = -1;
	sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, -1, &defensive);
	sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, -1, &trusted);
	sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_VIEW, -1, &views);
	sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_TRIGGER, -1, &triggers);
	cr_expect_eq(defensive, 1, "defensive mode is off");
	cr_expect_eq(trusted, 0, "the schema is trusted");
	cr_expect_eq(views, 0, "views are enabled");
	cr_expect_eq(triggers, 0, "triggers are enabled");
	cr_expect_leq(sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, -1), 1 << 20,
		      "one value may be as long as %d bytes", sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, -1));
	store_close(s);
}

static int count_record(void *arg, const struct store_record_row *r)
{
	(void)r;
	(*(size_t *)arg)++;
	return 0;
}

/* A crafted store need not hold a view to make a read expensive: without
 * its index every lookup scans the table. The bound stops such a read with
 * an error naming the store (lowered here to meet it with a small store;
 * the real bound, STORE_READ_WORK_BOUND, is a few seconds of SQLite). */
Test(untrusted_store, a_read_past_the_work_bound_fails_naming_the_store)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 20, .records_per_session = 500});
	gen_store_exec(db, "DROP INDEX records_chain;");
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(db, true, false, &s, &err), 0, "%s", err ? err->msg : "?");
	char fp[65];
	gen_store_session(19, fp);
	size_t n = 0;
	/* The full bound: the scan of 10,000 rows is well within it. */
	cr_assert_eq(store_record_at(s, fp, 500, count_record, &n, &err), 0, "%s", err ? err->msg : "?");
	cr_assert_eq(n, 1);
	store_set_work_bound(s, 20000);
	n = 0;
	cr_assert_eq(store_record_at(s, fp, 400, count_record, &n, &err), -1, "the read ran past its bound");
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err->msg, db), "the error does not name the store: %s", err->msg);
	cr_assert_not_null(strstr(err->msg, "steps of work without a row"), "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	/* The next read starts afresh (a cheap one goes through). */
	store_set_work_bound(s, STORE_READ_WORK_BOUND);
	cr_assert_eq(store_records_page(s, "", 0, 5, count_record, &n, &err), 0, "%s",
		     err ? err->msg : "?");
	store_close(s);
}

static int count_session(void *arg, const struct bh_history_session *r)
{
	(void)r;
	(*(size_t *)arg)++;
	return 0;
}

/* The registry's state and end reason are text; read back as the engine's
 * enums, a name it never writes is a bad row (the read fails naming the
 * store), never a value out of range handed to the console. */
static void a_bad_session_row_fails_the_read(const char *sql, const char *says)
{
	small_store();
	gen_store_exec(db, sql);
	bh_history *h = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "?");
	size_t n = 0;
	cr_assert_eq(bh_history_sessions(h, 0, count_session, &n, &err), -1,
		     "a row with a state or end reason bulkhead never writes was read (%zu rows)",
		     n);
	cr_assert_not_null(err);
	cr_assert_not_null(strstr(err->msg, db), "the error does not name the store: %s", err->msg);
	cr_assert_not_null(strstr(err->msg, says), "the error does not say \"%s\": %s", says,
			   err->msg);
	cr_assert_null(strstr(err->msg, "grue"), "the store's text is copied into the error: %s",
		       err->msg);
	bh_error_free(err);
	bh_history_close(h);
}

Test(untrusted_store, a_session_row_with_a_state_bulkhead_never_writes_is_a_bad_row)
{
	a_bad_session_row_fails_the_read(
		"UPDATE sessions SET state = 'eaten_by_a_grue' WHERE rowid = 2;",
		"has a state that is no name bulkhead writes");
}

Test(untrusted_store, a_session_row_with_an_end_reason_bulkhead_never_writes_is_a_bad_row)
{
	a_bad_session_row_fails_the_read(
		"UPDATE sessions SET end_reason = 'grue' WHERE rowid = 1;",
		"has an end reason that is no name bulkhead writes");
}

Test(untrusted_store, an_honest_stores_sessions_read_back_as_the_engines_words)
{
	small_store();
	bh_history *h = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "?");
	size_t n = 0;
	cr_assert_eq(bh_history_sessions(h, 0, count_session, &n, &err), 0, "%s",
		     err ? err->msg : "?");
	cr_assert_eq(n, 3);
	bh_history_close(h);
}

Test(untrusted_store, an_honest_store_opens_and_every_read_answers)
{
	small_store();
	bh_history *h = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "?");
	size_t n = 0;
	cr_assert_eq(bh_history_events(h, 0, 0, count_event, &n, &err), 0, "%s", err ? err->msg : "?");
	cr_assert_eq(n, 10);
	bh_history_close(h);
}

/* ---- paging ---- */

struct ids {
	int64_t id[4096];
	uint64_t seq[4096];
	size_t n;
};

static int take_event(void *arg, const struct bh_event *ev)
{
	struct ids *x = arg;
	x->id[x->n++] = ev->id;
	return 0;
}

static int take_record(void *arg, const struct bh_record_row *r)
{
	struct ids *x = arg;
	x->seq[x->n] = r->record->sequence;
	x->id[x->n++] = r->id;
	return 0;
}

static int take_session(void *arg, const struct bh_history_session *s)
{
	struct ids *x = arg;
	x->id[x->n++] = s->created_ms;
	return 0;
}

static bh_history *open_history(void)
{
	bh_history *h = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_history_open(db, &h, &err), 0, "%s", err ? err->msg : "?");
	return h;
}

TestSuite(history_paging, .init = setup, .fini = teardown, .timeout = 60);

Test(history_paging, the_newest_events_come_first_and_page_back_to_the_oldest)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = 1, .events = 2500});
	bh_history *h = open_history();
	bh_error *err = NULL;
	struct ids x = {0};
	cr_assert_eq(bh_history_events_newest(h, 0, 1000, take_event, &x, &err), 0, "%s",
		     err ? err->msg : "?");
	cr_assert_eq(x.n, 1000);
	cr_assert_eq(x.id[0], 1501, "the newest page starts at %lld", (long long)x.id[0]);
	cr_assert_eq(x.id[999], 2500, "the newest page ends at %lld", (long long)x.id[999]);
	for (size_t i = 1; i < x.n; i++)
		cr_assert_lt(x.id[i - 1], x.id[i], "a page is listed oldest first");
	int64_t before = x.id[0];
	x.n = 0;
	cr_assert_eq(bh_history_events_newest(h, before, 1000, take_event, &x, &err), 0);
	cr_assert_eq(x.n, 1000);
	cr_assert_eq(x.id[0], 501);
	cr_assert_eq(x.id[999], 1500);
	before = x.id[0];
	x.n = 0;
	cr_assert_eq(bh_history_events_newest(h, before, 1000, take_event, &x, &err), 0);
	cr_assert_eq(x.n, 500, "the oldest page is short: %zu", x.n);
	cr_assert_eq(x.id[0], 1);
	bh_history_close(h);
}

Test(history_paging, a_long_sessions_newest_records_and_any_record_by_its_sequence)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 3, .records_per_session = 1200,
					       .single_runs = 10});
	bh_history *h = open_history();
	bh_error *err = NULL;
	char fp[65];
	gen_store_session(1, fp);
	struct ids x = {0};
	cr_assert_eq(bh_history_records_newest(h, fp, 0, 1000, take_record, &x, &err), 0, "%s",
		     err ? err->msg : "?");
	cr_assert_eq(x.n, 1000);
	cr_assert_eq(x.seq[0], 201, "the session's newest page starts at #%llu",
		     (unsigned long long)x.seq[0]);
	cr_assert_eq(x.seq[999], 1200);
	x.n = 0;
	cr_assert_eq(bh_history_record_at(h, fp, 1002, take_record, &x, &err), 0, "%s",
		     err ? err->msg : "?");
	cr_assert_eq(x.n, 1, "record #1002 of the session: %zu rows", x.n);
	cr_assert_eq(x.seq[0], 1002);
	x.n = 0;
	cr_assert_eq(bh_history_record_at(h, fp, 1201, take_record, &x, &err), 0);
	cr_assert_eq(x.n, 0, "a sequence past the session's end is no record");
	/* All sessions: the newest of the whole store, then the page before. */
	x.n = 0;
	cr_assert_eq(bh_history_records_newest(h, NULL, 0, 1000, take_record, &x, &err), 0);
	cr_assert_eq(x.n, 1000);
	cr_assert_eq(x.id[999], 10 + 3 * 1200);
	int64_t before = x.id[0];
	x.n = 0;
	cr_assert_eq(bh_history_records_newest(h, NULL, before, 1000, take_record, &x, &err), 0);
	cr_assert_eq(x.id[999], before - 1);
	bh_history_close(h);
}

Test(history_paging, the_registry_read_is_its_newest_sessions_not_all_of_it)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 3000, .records_per_session = 1});
	bh_history *h = open_history();
	bh_error *err = NULL;
	struct ids x = {0};
	cr_assert_eq(bh_history_sessions(h, 1000, take_session, &x, &err), 0, "%s", err ? err->msg : "?");
	cr_assert_eq(x.n, 1000, "%zu sessions read", x.n);
	for (size_t i = 1; i < x.n; i++)
		cr_assert_gt(x.id[i - 1], x.id[i], "newest first");
	bh_history_close(h);
}

/* ---- the CLI's readers ---- */

#define CLI_TIMEOUT_S 20

/* Runs `bulkhead ARGS...` with stdout to OUT and stderr to ERR (paths);
 * its exit status, and its peak resident memory in KiB. */
static int cli(const char *out, const char *errpath, long *maxrss_kb, const char *const *args)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	const char *argv[16] = {BH_TEST_CLI};
	size_t n = 1;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid;
	cr_assert_eq(posix_spawn(&pid, BH_TEST_CLI, &fa, NULL, (char *const *)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	/* A reader that hangs is killed (and the test fails), never left spinning. */
	int st = 0;
	struct rusage ru;
	pid_t got = 0;
	for (int i = 0; i < CLI_TIMEOUT_S * 20 && got == 0; i++) {
		got = wait4(pid, &st, WNOHANG, &ru);
		if (got == 0)
			usleep(50 * 1000);
	}
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		cr_assert_fail("bulkhead %s did not finish within %d s", args[0], CLI_TIMEOUT_S);
	}
	cr_assert_eq(got, pid);
	*maxrss_kb = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *s = malloc((size_t)n + 1);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return s;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* A long history, as 30 days of a busy daemon make: the output is the
 * size of the store, the memory is not. */
#define BIG_PER_SESSION 250
#define BIG_RSS_KB (48 * 1024)
#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer's shadow and quarantine make RSS say nothing about the
 * reader, and everything ten times slower: the sanitized build checks the
 * same reads for memory errors over a smaller store, and not the figure. */
#define BIG_SESSIONS 20
#define RSS_MEANS_SOMETHING 0
#else
#define BIG_SESSIONS 400
#define RSS_MEANS_SOMETHING 1
#endif

TestSuite(store_cli, .init = setup, .fini = teardown, .timeout = 120);

Test(store_cli, records_json_streams_a_large_store_a_row_at_a_time)
{
	gen_store(db, &(struct gen_store_spec){.sessions = BIG_SESSIONS,
					       .records_per_session = BIG_PER_SESSION,
					       .single_runs = 100});
	char out[4300], err[4300];
	snprintf(out, sizeof out, "%s/records.json", dir);
	snprintf(err, sizeof err, "%s/records.err", dir);
	long rss = 0;
	int st = cli(out, err, &rss,
		     (const char *[]){"records", "--json", "--no-attach", "--state", dir, NULL});
	char *said = slurp(err, NULL);
	cr_assert_eq(st, 0, "records --json exited %d: %s", st, said);
	free(said);
	size_t len = 0;
	char *json = slurp(out, &len);
	cr_assert_eq(count(json, "\"recordSha256\""), BIG_SESSIONS * BIG_PER_SESSION + 100);
	cJSON *parsed = cJSON_Parse(json);
	cr_assert(cJSON_IsArray(parsed), "the output is not one JSON array");
	cr_assert_eq(cJSON_GetArraySize(parsed), BIG_SESSIONS * BIG_PER_SESSION + 100);
	cJSON_Delete(parsed);
	free(json);
	cr_log_info("records --json: %zu bytes out, peak RSS %ld KiB", len, rss);
	if (RSS_MEANS_SOMETHING)
		cr_assert_lt(rss, BIG_RSS_KB, "records --json held %ld KiB for a %zu-byte answer: the "
					      "whole table in memory, not a row at a time",
			     rss, len);
}

Test(store_cli, verify_reads_a_large_store_a_row_at_a_time)
{
	gen_store(db, &(struct gen_store_spec){.sessions = BIG_SESSIONS,
					       .records_per_session = BIG_PER_SESSION,
					       .single_runs = 100});
	char out[4300], err[4300];
	snprintf(out, sizeof out, "%s/verify.out", dir);
	snprintf(err, sizeof err, "%s/verify.err", dir);
	long rss = 0;
	int st = cli(out, err, &rss, (const char *[]){"verify", "--state", dir, NULL});
	char *said = slurp(out, NULL);
	cr_assert_eq(st, 0, "verify exited %d: %s", st, said);
	char want[128];
	snprintf(want, sizeof want, "%d records verified", BIG_SESSIONS * BIG_PER_SESSION + 100);
	cr_assert_not_null(strstr(said, want), "%s", said);
	free(said);
	cr_log_info("verify: peak RSS %ld KiB", rss);
	if (RSS_MEANS_SOMETHING)
		cr_assert_lt(rss, BIG_RSS_KB, "verify held %ld KiB", rss);
}

/* verify over the audit's view (on records): an error naming the store. */
Test(store_cli, verify_of_a_crafted_store_ends_with_an_error_naming_it, .timeout = 30)
{
	small_store();
	gen_store_exec(db, "DROP TABLE records; CREATE VIEW records AS WITH RECURSIVE r(i) AS (SELECT 1 "
			   "UNION ALL SELECT i+1 FROM r) SELECT i AS id, 2 AS version, '' AS "
			   "request_sha256, '' AS result_sha256, '' AS unanswered, '' AS provider, '' AS "
			   "isolation, '' AS environment, '' AS policy, '' AS software_identity, '' AS "
			   "software_rule_id, 0 AS started_unix_ms, 0 AS ended_unix_ms, 'x' AS session, i "
			   "AS sequence, '' AS previous_sha256, '' AS record_sha256, '' AS language, '' AS "
			   "flags, 0 AS exit_code, 0 AS duration_us FROM r;");
	char out[4300], err[4300];
	snprintf(out, sizeof out, "%s/verify.out", dir);
	snprintf(err, sizeof err, "%s/verify.err", dir);
	long rss = 0;
	int st = cli(out, err, &rss, (const char *[]){"verify", "--state", dir, NULL});
	char *said = slurp(err, NULL);
	cr_assert_neq(st, 0, "verify of a crafted store succeeded");
	cr_assert_not_null(strstr(said, "records is a view, not a table"), "verify said: %s", said);
	cr_assert_not_null(strstr(said, db), "the error does not name the store: %s", said);
	free(said);
}
