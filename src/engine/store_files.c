/* The files SQLite opens for a store (the database, its -wal log and its
 * -shm index), checked before it opens them: SQLite opens each by name, so
 * none may be a symbolic link; and a store opened to read is opened so that
 * nothing is created or written beside it.
 *
 * Reading, by what is there:
 *   no -wal (a store closed cleanly, or a copy of one): immutable=1, so
 *     SQLite opens the database alone and creates neither a -wal nor a
 *     -shm (a read-only connection otherwise creates both, and leaves them);
 *   a -wal and a -shm (a live daemon, or a copy of a crashed one):
 *     mode=ro&readonly_shm=1, so the log's frames are read and the index is
 *     opened read-only: a live writer's index is used and never written,
 *     and a stale one is rebuilt in our memory, not in the file;
 *   a log with frames but no index (a partial copy): refused, since SQLite
 *     can read that log only by writing an index beside it.
 * A daemon that opens the store after an immutable reader did is not seen
 * by that reader (it reads the database file as it was): the console's
 * --db view of a store a daemon starts writing later shows no new rows. */
#include "internal.h"
#include "store_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const sides[] = {"-wal", "-shm"};

static const char *kind(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a fifo"
	       : S_ISSOCK(m) ? "a socket" : "a device";
}

/* 0: a regular file; 1: absent; -1: something else (*err says what). */
static int regular_or_absent(const char *path, struct stat *st, bh_error **err)
{
	if (lstat(path, st) < 0) {
		if (errno == ENOENT)
			return 1;
		return bh_fail(err, BH_E_SYSTEM, errno, "store: %s", path);
	}
	if (S_ISREG(st->st_mode))
		return 0;
	char to[PATH_MAX] = "", link[PATH_MAX + 8] = "";
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(path, to, sizeof to - 1);
		to[n > 0 ? n : 0] = '\0';
		snprintf(link, sizeof link, " (to %s)", to);
	}
	return bh_fail(err, BH_E_INVALID, 0,
		       "store: %s is %s%s, not a regular file: SQLite would open it by name, and "
		       "bulkhead follows no link in a store (a tampered copy?); remove it",
		       path, kind(st->st_mode), link);
}

/* The whole path, with no link at any component (SQLITE_OPEN_NOFOLLOW
 * refuses one anyway, with a message that names nothing). */
static int reached_without_links(const char *path, bh_error **err)
{
	int fd = open_nofollow(AT_FDCWD, path, O_PATH, 0);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != ELOOP)
		return bh_fail(err, BH_E_SYSTEM, errno, "store: %s", path);
	char real[PATH_MAX];
	return bh_fail(err, BH_E_INVALID, 0,
		       "store: %s is reached through a symbolic link: bulkhead follows no link to a "
		       "store; name the real path%s%s",
		       path, realpath(path, real) ? " " : "", realpath(path, real) ? real : "");
}

int store_files_check(const char *path, bh_error **err)
{
	struct stat st;
	int r = regular_or_absent(path, &st, err);
	if (r < 0)
		return -1;
	for (size_t i = 0; i < 2; i++) {
		cleanup_free char *side = xasprintf("%s%s", path, sides[i]);
		if (regular_or_absent(side, &st, err) < 0)
			return -1;
	}
	return r == 0 ? reached_without_links(path, err) : 0;
}

/* A file: URI for path: '%', '?' and '#' escaped, and an empty authority
 * so that a path starting with // stays a path. */
static char *uri_of(const char *path, const char *query)
{
	struct buf b = {0};
	const char *start = path[0] == '/' ? "file://" : "file:";
	buf_append(&b, start, strlen(start));
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if (*c == '%' || *c == '?' || *c == '#' || *c < 0x20 || *c == 0x7f) {
			char esc[4];
			snprintf(esc, sizeof esc, "%%%02X", *c);
			buf_append(&b, esc, 3);
		} else {
			buf_append(&b, c, 1);
		}
	}
	buf_append(&b, query, strlen(query) + 1);
	return (char *)b.data;
}

int store_files_for_reading(const char *path, char **uri, bh_error **err)
{
	*uri = NULL;
	struct stat db, wal, shm;
	int r = regular_or_absent(path, &db, err);
	if (r < 0)
		return -1;
	if (r > 0)
		return bh_fail(err, BH_E_SYSTEM, ENOENT, "store: %s does not exist", path);
	cleanup_free char *wal_path = xasprintf("%s-wal", path);
	cleanup_free char *shm_path = xasprintf("%s-shm", path);
	int has_wal = regular_or_absent(wal_path, &wal, err);
	if (has_wal < 0)
		return -1;
	int has_shm = regular_or_absent(shm_path, &shm, err);
	if (has_shm < 0 || reached_without_links(path, err) < 0)
		return -1;
	has_wal = !has_wal;
	has_shm = !has_shm;
	if (has_wal && has_shm)
		*uri = uri_of(path, "?mode=ro&readonly_shm=1");
	else if (!has_wal || wal.st_size == 0)
		*uri = uri_of(path, "?immutable=1");
	else
		return bh_fail(err, BH_E_INVALID, 0,
			       "store: %s has a write-ahead log (%s, %lld bytes) but no %s index: "
			       "SQLite can read that log only by creating the index beside it, and "
			       "reading writes nothing; copy the store's directory to scratch space "
			       "and open the copy",
			       path, wal_path, (long long)wal.st_size, shm_path);
	return 0;
}

void store_files_private(const char *path)
{
	for (size_t i = 0; i < 2; i++) {
		cleanup_free char *side = xasprintf("%s%s", path, sides[i]);
		/* O_PATH, never an fd opened for reading: closing any such fd of the
		 * -shm file drops every POSIX lock this process holds on it —
		 * SQLite's own, among them the one that tells another process's
		 * connection the WAL index is in use; that connection would then
		 * reset (truncate) the index under our mapping: SIGBUS, or a
		 * corrupt index. An O_PATH fd's close releases no lock. */
		cleanup_close int fd = open_nofollow(AT_FDCWD, side, O_PATH, 0);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		char via[64];
		snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
		if (chmod(via, 0600) < 0) {
			/* Best effort: SQLite made them with the database's 0600. */
		}
	}
}
