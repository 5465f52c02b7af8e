/* A store opened read-only with no engine: forensics on a copy of a
 * production store (the console's --db), or reading beside a running
 * engine or daemon (SQLite's WAL lets readers in while it writes). */
#include "engine_priv.h"
#include "store.h"

#include <sqlite3.h>
#include <string.h>

struct bh_history {
	struct bh_store *store;
};

int bh_history_open(const char *path, bh_history **out, bh_error **err)
{
	*out = NULL;
	struct bh_store *s = NULL;
	if (store_open(path, true, false, &s, err) < 0)
		return -1;
	bh_history *h = xzalloc(sizeof *h);
	h->store = s;
	*out = h;
	return 0;
}

void bh_history_close(bh_history *h)
{
	if (!h)
		return;
	store_close(h->store);
	free(h);
}

int bh_history_records(bh_history *h, const char *session, int64_t after_id, size_t limit,
		       bh_record_fn fn, void *arg, bh_error **err)
{
	return store_record_rows(h->store, session, after_id, limit, fn, arg, err);
}

int bh_history_records_newest(bh_history *h, const char *session, int64_t before_id, size_t limit,
			      bh_record_fn fn, void *arg, bh_error **err)
{
	return store_record_rows_newest(h->store, session, before_id, limit, fn, arg, err);
}

int bh_history_record_at(bh_history *h, const char *session, uint64_t sequence, bh_record_fn fn,
			 void *arg, bh_error **err)
{
	return store_record_row_at(h->store, session, sequence, fn, arg, err);
}

int bh_history_chains(bh_history *h, const char *session, bh_record_fn fn, void *arg,
		      bh_error **err)
{
	return store_record_rows_chained(h->store, session, fn, arg, err);
}

int bh_history_backup(bh_history *h, const char *dest, bh_error **err)
{
	return store_backup(h->store, dest, err);
}

int bh_history_events(bh_history *h, int64_t after_id, size_t limit, bh_event_fn fn, void *arg,
		      bh_error **err)
{
	return store_events(h->store, after_id, limit ? limit : 1000, fn, arg, err);
}

int bh_history_events_newest(bh_history *h, int64_t before_id, size_t limit, bh_event_fn fn,
			     void *arg, bh_error **err)
{
	return store_events_newest(h->store, before_id, limit ? limit : 1000, fn, arg, err);
}

int bh_history_sessions(bh_history *h, size_t limit, bh_history_session_fn fn, void *arg,
			bh_error **err)
{
	return store_session_rows(h->store, limit ? limit : 1000, fn, arg, err);
}

/* ---- stream ---- */
int bh_history_cells(bh_history *h, const char *session, uint64_t before_sequence, size_t limit,
		     bh_cell_row_fn fn, void *arg, bh_error **err)
{
	bh_error *local = NULL;
	int rc = store_cells(h->store, session, before_sequence, limit, fn, arg, err ? err : &local);
	bh_error_free(local);
	return rc;
}

/* ---- capture ---- */
int bh_history_search(bh_history *h, enum bh_search_stream stream, const char *text, size_t limit,
		      bh_search_fn fn, void *arg, bh_error **err)
{
	bh_error *local = NULL;
	int rc = store_search(h->store, stream, text, limit, fn, arg, err ? err : &local);
	bh_error_free(local);
	return rc;
}

/* ---- light ---- */
struct bh_store *history_store(bh_history *h)
{
	return h->store;
}
