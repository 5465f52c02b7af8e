/* report: the dead engines whose leftovers a state directory holds, newest
 * first, and which of them a finding is (leftovers_bound.c). Live rows and
 * unsettled intents are the leftovers (STORE_ROW_LIVE, the one definition
 * of a row its engine still owes an end). */
#include "internal.h"
#include "store.h"
#include "store_priv.h"

#include <stdlib.h>
#include <string.h>

size_t store_dead_engines(struct bh_store *s, int64_t self_pid, int64_t **pids)
{
	*pids = NULL;
	sqlite3_stmt *st = store_prepare(
		s,
		"SELECT engine_pid, max(t) AS newest FROM (SELECT engine_pid, created_ms AS t FROM "
		"sessions WHERE " STORE_ROW_LIVE " AND engine_pid != ?1 UNION ALL SELECT engine_pid, "
		"started_ms FROM inflight WHERE reaped_ms IS NULL AND engine_pid != ?1) "
		"GROUP BY engine_pid ORDER BY newest DESC, engine_pid DESC LIMIT 10000",
		NULL);
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, self_pid);
	size_t n = 0;
	while (store_step_row(s, st) == SQLITE_ROW) {
		int64_t *grown = realloc(*pids, (n + 1) * sizeof **pids);
		if (!grown)
			abort();
		*pids = grown;
		(*pids)[n++] = sqlite3_column_int64(st, 0);
	}
	store_release(s, st);
	return n;
}

int64_t store_finding_engine(struct bh_store *s, const struct bh_leak *l)
{
	if (!*l->fingerprint)
		return 0;
	bool intent = l->kind == BH_LEAK_INTERRUPTED;
	sqlite3_stmt *st = store_prepare(
		s,
		intent ? "SELECT engine_pid FROM inflight WHERE session = ? AND sequence = ?"
		       : "SELECT engine_pid FROM sessions WHERE fingerprint = ?",
		NULL);
	if (!st)
		return 0;
	store_bind_text(st, 1, l->fingerprint);
	if (intent)
		sqlite3_bind_int64(st, 2, (sqlite3_int64)strtoull(l->sandbox + (l->sandbox[0] == '#'), NULL, 10));
	int64_t pid = store_step_row(s, st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	store_release(s, st);
	return pid;
}
