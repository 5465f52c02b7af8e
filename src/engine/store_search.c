/* Search across the stored code and output (bh_engine_search,
 * bh_history_search): "which cell read /etc/passwd?". One query over the
 * records' forensic columns, the text bound as a BLOB so instr() compares
 * bytes (a cell's output is any bytes), newest first, bounded; on a store
 * opened read-only the untrusted store's bounds hold (a query whose work
 * passes them fails, naming the store). */
#include "engine_priv.h"
#include "store.h"
#include "store_priv.h"

#include <assert.h>
#include <string.h>

enum bh_search_stream bh_search_parse(const char *query, const char **text)
{
	static const struct {
		const char *prefix;
		enum bh_search_stream stream;
	} prefixes[] = {{"code:", BH_SEARCH_CODE},     {"stdout:", BH_SEARCH_STDOUT},
			{"out:", BH_SEARCH_STDOUT},    {"stderr:", BH_SEARCH_STDERR},
			{"err:", BH_SEARCH_STDERR},    {"cell:", BH_SEARCH_ANY}};
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t n = strlen(prefixes[i].prefix);
		if (!strncmp(query, prefixes[i].prefix, n)) {
			*text = query + n;
			return prefixes[i].stream;
		}
	}
	*text = query;
	return BH_SEARCH_ANY;
}

static const uint8_t *blob_of(sqlite3_stmt *st, int i, size_t *n)
{
	const void *p = sqlite3_column_blob(st, i);
	*n = p ? (size_t)sqlite3_column_bytes(st, i) : 0;
	return p ? p : (const uint8_t *)"";
}

int store_search(struct bh_store *s, enum bh_search_stream stream, const char *text, size_t limit,
		 bh_search_fn fn, void *arg, bh_error **err)
{
	assert(err);
	size_t tl = text ? strlen(text) : 0;
	if (!tl)
		return bh_fail(err, BH_E_INVALID, 0, "search: give the text to look for");
	if (tl > BH_SEARCH_TEXT_MAX)
		return bh_fail(err, BH_E_INVALID, 0, "search: the text is longer than %u bytes",
			       BH_SEARCH_TEXT_MAX);
	if (!limit || limit > BH_SEARCH_MAX)
		limit = BH_SEARCH_MAX;
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT id, session, sequence, started_unix_ms, code, stdout_prefix, stderr_prefix, "
		"instr(CAST(code AS BLOB), ?1), instr(CAST(stdout_prefix AS BLOB), ?1), "
		"instr(CAST(stderr_prefix AS BLOB), ?1) FROM records "
		"WHERE (?2 IN (0, 1) AND instr(CAST(code AS BLOB), ?1) > 0) "
		"OR (?2 IN (0, 2) AND instr(CAST(stdout_prefix AS BLOB), ?1) > 0) "
		"OR (?2 IN (0, 3) AND instr(CAST(stderr_prefix AS BLOB), ?1) > 0) "
		"ORDER BY id DESC LIMIT ?3",
		err);
	if (!st)
		return -1;
	sqlite3_bind_blob(st, 1, text, (int)tl, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 2, (int)stream);
	sqlite3_bind_int64(st, 3, (int64_t)limit);
	static const char *const names[] = {"code", "stdout", "stderr"};
	size_t hits = 0;
	int rc = SQLITE_DONE, stop = 0;
	while (!stop && hits < limit && (rc = store_step_row(s, st)) == SQLITE_ROW) {
		for (int k = 0; k < 3 && !stop && hits < limit; k++) {
			int64_t at = sqlite3_column_int64(st, 7 + k);
			if (at <= 0 || (stream != BH_SEARCH_ANY && (int)stream != k + 1))
				continue;
			size_t len = 0;
			const uint8_t *cell = blob_of(st, 4 + k, &len);
			size_t m = (size_t)at - 1;
			if (m + tl > len)
				continue; /* a TEXT column instr() counted in characters: not a byte match */
			size_t from = m > BH_SEARCH_CONTEXT ? m - BH_SEARCH_CONTEXT : 0;
			size_t to = m + tl + BH_SEARCH_CONTEXT < len ? m + tl + BH_SEARCH_CONTEXT : len;
			struct bh_search_hit h = {
				.id = sqlite3_column_int64(st, 0),
				.session = store_col_text(st, 1),
				.sequence = (uint64_t)sqlite3_column_int64(st, 2),
				.started_unix_ms = sqlite3_column_int64(st, 3),
				.stream = names[k],
				.snippet = cell + from,
				.snippet_len = to - from,
				.match_at = m - from,
				.match_len = tl,
				.cut_before = from > 0,
				.cut_after = to < len,
			};
			if (memcmp(cell + m, text, tl))
				continue;
			hits++;
			stop = fn(arg, &h);
		}
	}
	return store_read_end(s, st, rc, "search the cells", err);
}

int bh_engine_search(bh_engine *e, enum bh_search_stream stream, const char *text, size_t limit,
		     bh_search_fn fn, void *arg, bh_error **err)
{
	bh_error *local = NULL;
	if (!e->store)
		return bh_fail(err, BH_E_INVALID, 0, "search: this engine keeps no store");
	int rc = store_search(e->store, stream, text, limit, fn, arg, err ? err : &local);
	bh_error_free(local);
	return rc;
}
