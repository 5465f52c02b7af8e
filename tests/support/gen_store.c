#include "gen_store.h"
#include "record.h"
#include "store.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gen_store_session(size_t i, char fp[65])
{
	char id[64];
	snprintf(id, sizeof id, "gen-store-session-%zu", i);
	bh_fingerprint_of(id, fp);
}

static void must(sqlite3 *db, int rc, const char *what)
{
	cr_assert(rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW, "%s: %s", what,
		  sqlite3_errmsg(db));
}

static void insert_record(sqlite3 *db, sqlite3_stmt *st, struct bh_record *r)
{
	bh_record_seal(r);
	sqlite3_reset(st);
	sqlite3_bind_int(st, 1, r->version);
	sqlite3_bind_text(st, 2, r->request_sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->result_sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->provider, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, r->isolation, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, r->environment, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, r->started_unix_ms);
	sqlite3_bind_int64(st, 8, r->ended_unix_ms);
	sqlite3_bind_text(st, 9, r->session, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 10, (int64_t)r->sequence);
	sqlite3_bind_text(st, 11, r->previous_sha256, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 12, r->record_sha256, -1, SQLITE_STATIC);
	must(db, sqlite3_step(st), "insert a record");
}

void gen_store(const char *path, const struct gen_store_spec *spec)
{
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(path, false, false, &s, &err), 0, "store_open %s: %s", path,
		     err ? err->msg : "?");
	sqlite3 *db = store_db(s);
	must(db, sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), "begin");
	sqlite3_stmt *rec = NULL, *ses = NULL, *ev = NULL;
	must(db,
	     sqlite3_prepare_v2(db,
				"INSERT INTO records (version, request_sha256, result_sha256, provider, "
				"isolation, environment, started_unix_ms, ended_unix_ms, session, sequence, "
				"previous_sha256, record_sha256, language, exit_code, flags, duration_us) "
				"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'python',0,'interpreter_started',1000)",
				-1, &rec, NULL),
	     "prepare");
	must(db,
	     sqlite3_prepare_v2(db,
				"INSERT INTO sessions (fingerprint, sandbox, runtime, tier, state, engine_pid, "
				"lease_until_ms, created_ms, expires_ms, ended_ms, end_reason, calls, "
				"last_record_sha256) VALUES (?1, ?2, 'crun', 'container', 'ended', 1, 0, ?3, "
				"?3 + 600000, ?3 + 1000, 'closed', ?4, ?5)",
				-1, &ses, NULL),
	     "prepare");
	must(db,
	     sqlite3_prepare_v2(db,
				"INSERT INTO events (at_ms, kind, session, sandbox, detail) VALUES "
				"(?1, 'state', ?2, ?3, ?4)",
				-1, &ev, NULL),
	     "prepare");
	/* Recent, so an engine opening the store keeps it (history_days). */
	size_t rows = spec->single_runs + spec->sessions * (spec->records_per_session + 1) + spec->events;
	int64_t at = (int64_t)time(NULL) * 1000 - (int64_t)rows * 10 - 60000;
	for (size_t i = 0; i < spec->single_runs; i++, at += 10) {
		struct bh_record r = {.version = 2, .provider = "bulkhead", .isolation = "container",
				      .environment = "gen-store", .policy = "", .software_identity = "",
				      .software_rule_id = "", .unanswered = "",
				      .started_unix_ms = at, .ended_unix_ms = at + 5};
		snprintf(r.request_sha256, sizeof r.request_sha256, "%064zx", i + 1);
		snprintf(r.result_sha256, sizeof r.result_sha256, "%064zx", i + 7);
		insert_record(db, rec, &r);
	}
	for (size_t i = 0; i < spec->sessions; i++) {
		char fp[65], sandbox[32], last[65] = "";
		gen_store_session(i, fp);
		snprintf(sandbox, sizeof sandbox, "bh-%.16s", fp);
		int64_t created = at;
		for (size_t q = 1; q <= spec->records_per_session; q++, at += 10) {
			struct bh_record r = {.version = 2, .provider = "bulkhead", .isolation = "container",
					      .environment = "gen-store", .policy = "", .software_identity = "",
					      .software_rule_id = "", .unanswered = "",
					      .started_unix_ms = at, .ended_unix_ms = at + 5, .sequence = q};
			snprintf(r.request_sha256, sizeof r.request_sha256, "%064zx", i * 100000 + q);
			snprintf(r.result_sha256, sizeof r.result_sha256, "%064zx", i * 100000 + q + 3);
			snprintf(r.session, sizeof r.session, "%s", fp);
			snprintf(r.previous_sha256, sizeof r.previous_sha256, "%s", last);
			insert_record(db, rec, &r);
			snprintf(last, sizeof last, "%s", r.record_sha256);
		}
		sqlite3_reset(ses);
		sqlite3_bind_text(ses, 1, fp, -1, SQLITE_STATIC);
		sqlite3_bind_text(ses, 2, sandbox, -1, SQLITE_STATIC);
		sqlite3_bind_int64(ses, 3, created);
		sqlite3_bind_int64(ses, 4, (int64_t)spec->records_per_session);
		sqlite3_bind_text(ses, 5, last, -1, SQLITE_STATIC);
		must(db, sqlite3_step(ses), "insert a session");
	}
	size_t dlen = spec->detail_bytes > 32 ? spec->detail_bytes : 32;
	char *detail = malloc(dlen + 1);
	cr_assert_not_null(detail);
	for (size_t i = 0; i < spec->events; i++, at += 10) {
		char fp[65];
		gen_store_session(spec->sessions ? i % spec->sessions : 0, fp);
		size_t k = (size_t)snprintf(detail, dlen + 1, "event %zu", i + 1);
		if (k < dlen)
			memset(detail + k, '.', dlen - k);
		detail[dlen] = '\0';
		sqlite3_reset(ev);
		sqlite3_bind_int64(ev, 1, at);
		sqlite3_bind_text(ev, 2, spec->sessions ? fp : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(ev, 3, "bh-gen", -1, SQLITE_STATIC);
		sqlite3_bind_text(ev, 4, detail, -1, SQLITE_STATIC);
		must(db, sqlite3_step(ev), "insert an event");
	}
	free(detail);
	sqlite3_finalize(rec);
	sqlite3_finalize(ses);
	sqlite3_finalize(ev);
	must(db, sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
	store_close(s);
}

void gen_store_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK, "%s", path);
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
	sqlite3_close_v2(db);
}
