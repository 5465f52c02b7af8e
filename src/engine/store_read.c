/* The store's reads: records, events and the registry's rows, a row at a
 * time and in bounded pages, for the engine's history API and a store
 * opened for reading (history.c). A store opened for reading is untrusted
 * (store_untrusted.h): every value read back is checked or bounded. */
#include "internal.h"
#include "store_priv.h"

#include <string.h>

static int each_record(struct bh_store *s, sqlite3_stmt *st, store_record_fn fn, void *arg,
		       bh_error **err)
{
	int ret = 0, rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		struct store_record_row r = {.id = sqlite3_column_int64(st, 0)};
		r.rec.version = sqlite3_column_int(st, 1);
		store_copy_col(st, 2, r.rec.request_sha256, sizeof r.rec.request_sha256);
		store_copy_col(st, 3, r.rec.result_sha256, sizeof r.rec.result_sha256);
		/* Never NULL, even from a store whose columns allow it. */
		r.rec.unanswered = store_col_text(st, 4);
		r.rec.provider = store_col_text(st, 5);
		r.rec.isolation = store_col_text(st, 6);
		r.rec.environment = store_col_text(st, 7);
		r.rec.policy = store_col_text(st, 8);
		r.rec.software_identity = store_col_text(st, 9);
		r.rec.software_rule_id = store_col_text(st, 10);
		r.rec.started_unix_ms = sqlite3_column_int64(st, 11);
		r.rec.ended_unix_ms = sqlite3_column_int64(st, 12);
		store_copy_col(st, 13, r.rec.session, sizeof r.rec.session);
		r.rec.sequence = (uint64_t)sqlite3_column_int64(st, 14);
		store_copy_col(st, 15, r.rec.previous_sha256, sizeof r.rec.previous_sha256);
		store_copy_col(st, 16, r.rec.record_sha256, sizeof r.rec.record_sha256);
		r.language = store_col_text(st, 17);
		r.flags = store_col_text(st, 18);
		r.exit_code = sqlite3_column_int(st, 19);
		r.duration_us = sqlite3_column_int64(st, 20);
		ret = fn(arg, &r);
		if (ret)
			break;
	}
	if (store_read_end(s, st, rc, "read the records", err) < 0)
		return -1;
	return ret < 0 ? -1 : 0;
}

#define RECORD_COLUMNS                                                                          \
	"SELECT id, version, request_sha256, result_sha256, unanswered, provider, isolation, "  \
	"environment, policy, software_identity, software_rule_id, started_unix_ms, "           \
	"ended_unix_ms, session, sequence, previous_sha256, record_sha256, language, flags, "   \
	"exit_code, duration_us FROM records "

/* Whether a row callback asked to stop (store_records reads in two parts). */
struct stop_probe {
	store_record_fn fn;
	void *arg;
	int *stopped;
};

static int probe_row(void *arg, const struct store_record_row *r)
{
	struct stop_probe *p = arg;
	int ret = p->fn(p->arg, r);
	if (ret)
		*p->stopped = ret;
	return ret;
}

/* A session's records are found through records_chain (session, sequence),
 * a partial index WHERE session != '': a query may use it only when its
 * WHERE says so too, hence the `session != ''` beside `session = ?`. Every
 * read below walks an index or the rowid; none sorts a whole table. */
int store_records(struct bh_store *s, const char *session, store_record_fn fn, void *arg,
		  bh_error **err)
{
	if (session && *session) {
		sqlite3_stmt *st = store_prepare(
			s, RECORD_COLUMNS "WHERE session = ?1 AND session != '' ORDER BY sequence", err);
		if (!st)
			return -1;
		store_bind_text(st, 1, session);
		return each_record(s, st, fn, arg, err);
	}
	/* Single runs first (session '' sorts first), then each chain in
	 * order: the order "session, sequence, id" gives, row by row. */
	sqlite3_stmt *st = store_prepare(s, RECORD_COLUMNS "WHERE session = '' ORDER BY id", err);
	if (!st)
		return -1;
	int stopped = 0;
	struct stop_probe probe = {.fn = fn, .arg = arg, .stopped = &stopped};
	if (each_record(s, st, probe_row, &probe, err) < 0)
		return -1;
	if (stopped)
		return 0;
	st = store_prepare(s, RECORD_COLUMNS "WHERE session != '' ORDER BY session, sequence", err);
	if (!st)
		return -1;
	return each_record(s, st, fn, arg, err);
}

int store_records_page(struct bh_store *s, const char *session, int64_t after_id, size_t limit,
		       store_record_fn fn, void *arg, bh_error **err)
{
	bool one = session && *session;
	sqlite3_stmt *st = store_prepare(
		s,
		one ? RECORD_COLUMNS "WHERE session = ?1 AND session != '' AND id > ?2 ORDER BY id LIMIT ?3"
		    : RECORD_COLUMNS "WHERE ?1 = '' AND id > ?2 ORDER BY id LIMIT ?3",
		err);
	if (!st)
		return -1;
	store_bind_text(st, 1, session);
	sqlite3_bind_int64(st, 2, after_id);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	return each_record(s, st, fn, arg, err);
}

int store_records_newest(struct bh_store *s, const char *session, int64_t before_id, size_t limit,
			 store_record_fn fn, void *arg, bh_error **err)
{
	bool one = session && *session;
	/* The newest `limit` before the cursor, then listed oldest first. */
	sqlite3_stmt *st = store_prepare(
		s,
		one ? "SELECT * FROM (" RECORD_COLUMNS "WHERE session = ?1 AND session != '' AND id < ?2 "
		      "ORDER BY id DESC LIMIT ?3) ORDER BY id"
		    : "SELECT * FROM (" RECORD_COLUMNS "WHERE ?1 = '' AND id < ?2 "
		      "ORDER BY id DESC LIMIT ?3) ORDER BY id",
		err);
	if (!st)
		return -1;
	store_bind_text(st, 1, session);
	sqlite3_bind_int64(st, 2, before_id > 0 ? before_id : INT64_MAX);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	return each_record(s, st, fn, arg, err);
}

int store_record_at(struct bh_store *s, const char *session, uint64_t sequence, store_record_fn fn,
		    void *arg, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(
		s, RECORD_COLUMNS "WHERE session = ?1 AND session != '' AND sequence = ?2 LIMIT 1", err);
	if (!st)
		return -1;
	store_bind_text(st, 1, session);
	sqlite3_bind_int64(st, 2, (int64_t)sequence);
	return each_record(s, st, fn, arg, err);
}

struct public_page {
	bh_record_fn fn;
	void *arg;
};

static int public_row(void *arg, const struct store_record_row *r)
{
	struct public_page *p = arg;
	struct bh_record_row row = {
		.id = r->id,
		.record = &r->rec,
		.language = r->language ? r->language : "",
		.flags = r->flags ? r->flags : "",
		.exit_code = r->exit_code,
		.duration_us = r->duration_us,
		.chain_after_sha256 = "",
		.chain_origin = "",
	};
	return p->fn(p->arg, &row);
}

/* ---- fleet (issue 20): a chain adopted from another store, as its row
 * says (migration 7), looked up once per session of the walk. The row is
 * input like the records: a digest that is not one is no start. ---- */
struct chained_page {
	struct bh_store *s;
	bh_record_fn fn;
	void *arg;
	char session[65];
	uint64_t after;
	char after_sha256[65];
	char origin[257];
	char parent[65]; /* ---- density: a branch's parent (migration 8) ---- */
};

static void adoption_of(struct chained_page *p, const char *session)
{
	snprintf(p->session, sizeof p->session, "%s", session);
	p->after = 0;
	p->after_sha256[0] = p->origin[0] = p->parent[0] = '\0';
	if (!*session || !p->s->sessions_adopted)
		return;
	sqlite3_stmt *st = store_prepare(p->s,
					 p->s->sessions_branched
						 ? "SELECT adopted_after, adopted_after_sha256, origin_host, "
						   "branched_from FROM sessions WHERE fingerprint = ?"
						 : "SELECT adopted_after, adopted_after_sha256, origin_host, '' "
						   "FROM sessions WHERE fingerprint = ?",
					 NULL);
	if (!st)
		return;
	store_bind_text(st, 1, session);
	if (store_step_row(p->s, st) == SQLITE_ROW) {
		int64_t after = sqlite3_column_int64(st, 0);
		const char *sha = store_col_text(st, 1);
		bool hex = strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64;
		if (after > 0 && hex) {
			p->after = (uint64_t)after;
			snprintf(p->after_sha256, sizeof p->after_sha256, "%s", sha);
			store_copy_col(st, 2, p->origin, sizeof p->origin);
		}
		const char *parent = store_col_text(st, 3);
		if (strlen(parent) == 64 && strspn(parent, "0123456789abcdef") == 64)
			snprintf(p->parent, sizeof p->parent, "%s", parent);
	}
	store_release(p->s, st);
}

static int chained_row(void *arg, const struct store_record_row *r)
{
	struct chained_page *p = arg;
	if (strcmp(p->session, r->rec.session))
		adoption_of(p, r->rec.session);
	struct bh_record_row row = {
		.id = r->id,
		.record = &r->rec,
		.language = r->language ? r->language : "",
		.flags = r->flags ? r->flags : "",
		.exit_code = r->exit_code,
		.duration_us = r->duration_us,
		.chain_after = p->after,
		.chain_after_sha256 = p->after_sha256,
		.chain_origin = p->origin,
		.chain_branched_from = p->parent,
	};
	return p->fn(p->arg, &row);
}

int store_record_rows(struct bh_store *s, const char *session, int64_t after_id, size_t limit,
		      bh_record_fn fn, void *arg, bh_error **err)
{
	struct public_page p = {.fn = fn, .arg = arg};
	return store_records_page(s, session ? session : "", after_id, limit ? limit : 1000, public_row,
				  &p, err);
}

int store_record_rows_newest(struct bh_store *s, const char *session, int64_t before_id,
			     size_t limit, bh_record_fn fn, void *arg, bh_error **err)
{
	struct public_page p = {.fn = fn, .arg = arg};
	return store_records_newest(s, session ? session : "", before_id, limit ? limit : 1000,
				    public_row, &p, err);
}

int store_record_rows_chained(struct bh_store *s, const char *session, bh_record_fn fn, void *arg,
			      bh_error **err)
{
	struct chained_page *p = xzalloc(sizeof *p);
	p->s = s;
	p->fn = fn;
	p->arg = arg;
	p->session[0] = '\x01'; /* no session's: the first record looks its row up */
	int rc = store_records(s, session, chained_row, p, err);
	free(p);
	return rc;
}

int store_record_row_at(struct bh_store *s, const char *session, uint64_t sequence,
			bh_record_fn fn, void *arg, bh_error **err)
{
	struct public_page p = {.fn = fn, .arg = arg};
	return store_record_at(s, session ? session : "", sequence, public_row, &p, err);
}

static int each_event(struct bh_store *s, sqlite3_stmt *st, store_event_fn fn, void *arg,
		      bh_error **err)
{
	int ret = 0, rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		struct bh_event ev = {
			.id = sqlite3_column_int64(st, 0),
			.at_unix_ms = sqlite3_column_int64(st, 1),
			.kind = store_col_text(st, 2),
			.session = store_col_text(st, 3),
			.sandbox = store_col_text(st, 4),
			.detail = store_col_text(st, 5),
			.actor = store_col_text(st, 6),      /* ---- ci: attribution ---- */
			.request_id = store_col_text(st, 7),
		};
		ret = fn(arg, &ev);
		if (ret)
			break;
	}
	if (store_read_end(s, st, rc, "read the events", err) < 0)
		return -1;
	return ret < 0 ? -1 : 0;
}

int store_events(struct bh_store *s, int64_t after_id, size_t limit, store_event_fn fn, void *arg,
		 bh_error **err)
{
	sqlite3_stmt *st = store_prepare(s,
					 s->events_attributed
						 ? "SELECT id, at_ms, kind, session, sandbox, detail, "
						   "actor, request_id FROM events WHERE id > ? ORDER BY id "
						   "LIMIT ?"
						 : "SELECT id, at_ms, kind, session, sandbox, detail, '', '' "
						   "FROM events WHERE id > ? ORDER BY id LIMIT ?",
					 err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, (int64_t)limit);
	return each_event(s, st, fn, arg, err);
}

int store_events_newest(struct bh_store *s, int64_t before_id, size_t limit, store_event_fn fn,
			void *arg, bh_error **err)
{
	sqlite3_stmt *st = store_prepare(
		s,
		s->events_attributed
			? "SELECT * FROM (SELECT id, at_ms, kind, session, sandbox, detail, actor, "
			  "request_id FROM events WHERE id < ? ORDER BY id DESC LIMIT ?) ORDER BY id"
			: "SELECT * FROM (SELECT id, at_ms, kind, session, sandbox, detail, '', '' FROM "
			  "events WHERE id < ? ORDER BY id DESC LIMIT ?) ORDER BY id",
		err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, before_id > 0 ? before_id : INT64_MAX);
	sqlite3_bind_int64(st, 2, (int64_t)limit);
	return each_event(s, st, fn, arg, err);
}

/* Names neither value: a crafted store's text is not copied into the
 * message that reports it. */
static int bad_session_row(struct bh_store *s, sqlite3_stmt *st, bh_error **err)
{
	bool state_ok = bh_session_state_parse(store_col_text(st, 8), &(enum bh_session_state){0}) == 0;
	return bh_fail(err, BH_E_INVALID, 0,
		       "store %s: read the sessions: the row created at %lld ms has %s that is no "
		       "name bulkhead writes: a crafted or damaged store",
		       s->path, (long long)sqlite3_column_int64(st, 12),
		       state_ok ? "an end reason" : "a state");
}

int store_session_rows(struct bh_store *s, size_t limit, bh_history_session_fn fn, void *arg,
		       bh_error **err)
{
	/* LIMIT keeps SQLite's sort to the newest `limit` rows (a top-N
	 * sorter), never the whole registry in memory. */
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT fingerprint, sandbox, runtime, tier, floor, principal, owner, run_key, state, "
		"end_reason, end_detail, last_record_sha256, created_ms, expires_ms, last_call_ms, "
		"ended_ms, awake_ms, calls FROM sessions ORDER BY created_ms DESC LIMIT ?",
		err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, limit ? (int64_t)limit : -1);
	int ret = 0, rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		struct bh_history_session r = {
			.fingerprint = store_col_text(st, 0), .sandbox = store_col_text(st, 1),
			.runtime = store_col_text(st, 2), .tier = store_col_text(st, 3), .floor = store_col_text(st, 4),
			.principal = store_col_text(st, 5), .owner = store_col_text(st, 6), .run_key = store_col_text(st, 7),
			.end_detail = store_col_text(st, 10), .last_record_sha256 = store_col_text(st, 11),
			.created_ms = sqlite3_column_int64(st, 12), .expires_ms = sqlite3_column_int64(st, 13),
			.last_call_ms = sqlite3_column_int64(st, 14), .ended_ms = sqlite3_column_int64(st, 15),
			.awake_ms = sqlite3_column_int64(st, 16),
			.calls = (uint64_t)sqlite3_column_int64(st, 17),
		};
		/* The columns hold names (the schema is text); a name this
		 * build does not write is a bad row, not a state. */
		if (bh_session_state_parse(store_col_text(st, 8), &r.state) < 0 ||
		    bh_end_reason_parse(store_col_text(st, 9), &r.end_reason) < 0) {
			ret = bad_session_row(s, st, err);
			break;
		}
		ret = fn(arg, &r);
		if (ret)
			break;
	}
	if (store_read_end(s, st, rc, "read the sessions", err) < 0)
		return -1;
	return ret < 0 ? -1 : 0;
}
