/* The store's files, checked before SQLite opens them by name (store_files.c). */
#ifndef BH_STORE_FILES_H
#define BH_STORE_FILES_H

#include "bulkhead.h"

/* For a store the engine writes: the database, its -wal and its -shm are
 * each absent or a regular file (never a link), and the database is
 * reached with no link at any component. */
int store_files_check(const char *path, bh_error **err);
/* For a store opened to read: the same checks, and in *uri (caller frees)
 * the file: URI that opens it without creating or writing anything beside
 * it (immutable, or a read-only index); -1 when that cannot be done. */
int store_files_for_reading(const char *path, char **uri, bh_error **err);
/* The -wal and -shm get the database's privacy (0600), through descriptors
 * opened with no link followed. */
void store_files_private(const char *path);

#endif
