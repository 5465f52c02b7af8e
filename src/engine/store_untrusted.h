/* A store opened for reading is someone else's file (a copy handed to an
 * operator, a `--db` from an incident): its schema, its values and the
 * work its queries cost are all chosen by whoever made it. */
#ifndef BH_STORE_UNTRUSTED_H
#define BH_STORE_UNTRUSTED_H

#include "bulkhead.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* The work bound: SQLite's progress handler counts virtual-machine steps
 * since the statement's last row (store.c resets `used` before each step);
 * past `bound` the step is interrupted and the read fails naming the store.
 * An honest 30-day store's heaviest read (the newest sessions, a top-N sort
 * over the registry) costs a few steps per row scanned, far below it. */
struct store_work {
	uint64_t used, bound; /* in steps; bound 0: no bound (a store the engine owns) */
	bool tripped;
};
#define STORE_READ_WORK_BOUND 200000000ull /* a few seconds of SQLite's VM */
/* The longest value a read may load (a text or blob column): nothing
 * bulkhead stores and reads back comes near it. */
#define STORE_READ_VALUE_MAX (1 << 20)

/* Defensive mode, trusted_schema off, no views or triggers, a bound on one
 * value's length and on one query's work, and every table bulkhead reads
 * checked against the schema this build would create: each a real table
 * (not a view or a virtual table) with each of its columns a stored one. */
int store_harden_for_reading(sqlite3 *db, const char *path, struct store_work *w,
			     bh_error **err);

/* The migrations a store is made of, in order (store.c). */
const char *const *store_migrations(size_t *n);

#endif
