/* A session's cells, newest first (bh_engine_cells, bh_history_cells): the
 * records' forensic columns (code, the output up to BH_STORE_OUTPUT_CAP per
 * stream, flags, exit, timing), read a bounded page at a time through the
 * records_chain index, on a store the engine writes or one opened read-only
 * (untrusted: store_untrusted.h bounds every value). */
#include "internal.h"
#include "store_priv.h"

#include <assert.h>
#include <string.h>

#define CELLS_PAGE_DEFAULT 50u
#define CELLS_PAGE_MAX 1000u

static const uint8_t *blob_of(sqlite3_stmt *st, int i, size_t *n)
{
	const void *p = sqlite3_column_blob(st, i);
	*n = p ? (size_t)sqlite3_column_bytes(st, i) : 0;
	return p ? p : (const uint8_t *)"";
}

int store_cells(struct bh_store *s, const char *session, uint64_t before_sequence, size_t limit,
		bh_cell_row_fn fn, void *arg, bh_error **err)
{
	assert(err);
	if (!session || !*session)
		return bh_fail(err, BH_E_INVALID, 0, "cells: name a session (its fingerprint)");
	if (!limit)
		limit = CELLS_PAGE_DEFAULT;
	if (limit > CELLS_PAGE_MAX)
		limit = CELLS_PAGE_MAX;
	/* `session != ''` lets the partial index records_chain serve it. */
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT id, sequence, language, flags, unanswered, record_sha256, exit_code, "
		"duration_us, started_unix_ms, ended_unix_ms, code, stdout_prefix, stderr_prefix "
		"FROM records WHERE session = ?1 AND session != '' AND (?2 = 0 OR sequence < ?2) "
		"ORDER BY sequence DESC LIMIT ?3",
		err);
	if (!st)
		return -1;
	store_bind_text(st, 1, session);
	sqlite3_bind_int64(st, 2, (int64_t)before_sequence);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	int ret = 0, rc;
	while ((rc = store_step_row(s, st)) == SQLITE_ROW) {
		char digest[65];
		struct bh_cell_row r = {
			.id = sqlite3_column_int64(st, 0),
			.sequence = (uint64_t)sqlite3_column_int64(st, 1),
			.language = store_col_text(st, 2),
			.flags = store_col_text(st, 3),
			.unanswered = store_col_text(st, 4),
			.record_sha256 = digest,
			.exit_code = sqlite3_column_int(st, 6),
			.duration_us = sqlite3_column_int64(st, 7),
			.started_unix_ms = sqlite3_column_int64(st, 8),
			.ended_unix_ms = sqlite3_column_int64(st, 9),
		};
		store_copy_col(st, 5, digest, sizeof digest);
		r.code = blob_of(st, 10, &r.code_len);
		r.out = blob_of(st, 11, &r.out_len);
		r.err = blob_of(st, 12, &r.err_len);
		ret = fn(arg, &r);
		if (ret)
			break;
	}
	if (store_read_end(s, st, rc, "read the cells", err) < 0)
		return -1;
	return 0;
}
