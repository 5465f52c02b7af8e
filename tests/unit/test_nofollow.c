/* A state directory is evidence, opened as hostile: the engine's file helpers
 * follow no symbolic link at any component of a path, and reading a store
 * writes nothing, beside it or through it. */
#include "engine_priv.h"
#include "store.h"
#include "util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char root[512];

static void setup(void)
{
	const char *base = getenv("BULKHEAD_TEST_ROOT");
	snprintf(root, sizeof root, "%s/nofollow-XXXXXX", base && *base ? base : "/tmp");
	cr_assert_not_null(mkdtemp(root), "mkdtemp %s: %s", root, strerror(errno));
}

static void teardown(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

static char *at(const char *rel)
{
	static char bufs[8][1024];
	static int next;
	char *b = bufs[next++ % 8];
	snprintf(b, sizeof bufs[0], "%s/%s", root, rel);
	return b;
}

static void put(const char *rel, const char *text)
{
	FILE *f = fopen(at(rel), "w");
	cr_assert_not_null(f, "create %s", at(rel));
	fputs(text, f);
	fclose(f);
}

static bool exists(const char *rel)
{
	struct stat st;
	return lstat(at(rel), &st) == 0;
}

/* root/victim holds what must survive; root/dir/link points at it. */
static void victim_behind_a_link(void)
{
	cr_assert_eq(mkdir(at("victim"), 0755), 0);
	put("victim/keep", "precious\n");
	cr_assert_eq(mkdir(at("dir"), 0755), 0);
	cr_assert_eq(symlink(at("victim"), at("dir/link")), 0);
}

TestSuite(nofollow, .init = setup, .fini = teardown);

Test(nofollow, rm_rf_deletes_nothing_through_a_linked_directory_in_the_path)
{
	victim_behind_a_link();
	errno = 0;
	cr_assert_lt(rm_rf(at("dir/link/keep")), 0, "rm_rf went through dir/link");
	cr_assert_eq(errno, ELOOP, "errno %d (%s)", errno, strerror(errno));
	cr_assert(exists("victim/keep"), "the file behind the link was deleted");
	/* The link itself is an entry of ours: it goes, its target stays. */
	cr_assert_eq(rm_rf(at("dir")), 0);
	cr_assert(!exists("dir"));
	cr_assert(exists("victim/keep"));
}

Test(nofollow, write_file_atomic_writes_nothing_through_a_linked_directory)
{
	victim_behind_a_link();
	errno = 0;
	cr_assert_lt(write_file_atomic(at("dir/link/passwd"), "root::0:0\n", 10, 0644), 0,
		     "a file was written through dir/link");
	cr_assert_eq(errno, ELOOP, "errno %d (%s)", errno, strerror(errno));
	cr_assert(!exists("victim/passwd"));
	/* A link as the file itself is replaced, never written through. */
	cr_assert_eq(symlink(at("victim/keep"), at("dir/file")), 0);
	cr_assert_eq(write_file_atomic(at("dir/file"), "new\n", 4, 0644), 0);
	struct stat st;
	cr_assert_eq(lstat(at("dir/file"), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	size_t n = 0;
	cleanup_free char *kept = read_file(at("victim/keep"), 100, &n);
	cr_assert_str_eq(kept, "precious\n");
}

Test(nofollow, mkdir_p_creates_nothing_through_a_linked_directory)
{
	victim_behind_a_link();
	errno = 0;
	cr_assert_lt(mkdir_p(at("dir/link/new/deeper"), 0755), 0, "mkdir_p went through dir/link");
	cr_assert_eq(errno, ELOOP, "errno %d (%s)", errno, strerror(errno));
	cr_assert(!exists("victim/new"));
	cr_assert_eq(mkdir_p(at("dir/real/deeper"), 0755), 0);
	cr_assert(exists("dir/real/deeper"));
}

/* ---- the store, read ---- */

static struct bh_store *store_at(const char *rel, bool readonly, bh_error **err)
{
	struct bh_store *s = NULL;
	if (store_open(at(rel), readonly, false, &s, err) < 0)
		return NULL;
	return s;
}

/* A closed store: the last connection checkpointed and removed its WAL. */
static void clean_store(const char *rel)
{
	bh_error *err = NULL;
	struct bh_store *s = store_at(rel, false, &err);
	cr_assert_not_null(s, "%s", err ? err->msg : "?");
	store_event(s, "evidence", "", "", "the test's own event");
	store_close(s);
}

/* Names, types, sizes, modes and times of a directory's entries. */
static char *listing_of(const char *rel, bool wal_ctime);
static char *listing(const char *rel)
{
	return listing_of(rel, true);
}

static char *listing_of(const char *rel, bool wal_ctime)
{
	static char out[8192];
	out[0] = '\0';
	cleanup_dir DIR *d = opendir(at(rel));
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[1200];
		snprintf(p, sizeof p, "%s/%s", at(rel), de->d_name);
		struct stat st;
		cr_assert_eq(lstat(p, &st), 0);
		if (!wal_ctime && strstr(de->d_name, "-wal"))
			st.st_ctim = (struct timespec){0};
		size_t used = strlen(out);
		snprintf(out + used, sizeof out - used, "%s %o %lld %lld.%09ld %lld.%09ld\n", de->d_name,
			 (unsigned)st.st_mode, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	}
	return out;
}

static int count_events(void *arg, const struct bh_event *ev)
{
	(void)ev;
	(*(int *)arg)++;
	return 0;
}

Test(nofollow, reading_a_closed_store_creates_no_file_beside_it)
{
	cr_assert_eq(mkdir(at("s"), 0700), 0);
	clean_store("s/bulkhead.db");
	char before[8192];
	snprintf(before, sizeof before, "%s", listing("s"));
	cr_assert_null(strstr(before, "-wal"), "%s", before);
	bh_error *err = NULL;
	struct bh_store *s = store_at("s/bulkhead.db", true, &err);
	cr_assert_not_null(s, "%s", err ? err->msg : "?");
	int n = 0;
	cr_assert_eq(store_events(s, 0, 100, count_events, &n, &err), 0, "%s", err ? err->msg : "?");
	cr_assert_eq(n, 1);
	store_close(s);
	cr_assert_str_eq(listing("s"), before, "reading the store changed its directory");
}

Test(nofollow, reading_a_live_store_sees_its_log_and_writes_nothing)
{
	cr_assert_eq(mkdir(at("s"), 0700), 0);
	clean_store("s/bulkhead.db");
	bh_error *err = NULL;
	/* A daemon holding it: its last event only in the WAL, not checkpointed. */
	struct bh_store *w = store_at("s/bulkhead.db", false, &err);
	cr_assert_not_null(w, "%s", err ? err->msg : "?");
	store_event(w, "live", "", "", "written by the live writer");
	/* Run as root, SQLite gives a -wal it opens the database's owner
	 * (fchown, here to the owner it has): only the -wal's ctime moves. */
	char before[8192];
	snprintf(before, sizeof before, "%s", listing_of("s", false));
	cr_assert_not_null(strstr(before, "bulkhead.db-shm"), "%s", before);
	struct bh_store *r = store_at("s/bulkhead.db", true, &err);
	cr_assert_not_null(r, "%s", err ? err->msg : "?");
	int n = 0;
	cr_assert_eq(store_events(r, 0, 100, count_events, &n, &err), 0, "%s", err ? err->msg : "?");
	cr_assert_eq(n, 2, "the reader saw %d events: the WAL's frame was not read", n);
	store_close(r);
	cr_assert_str_eq(listing_of("s", false), before, "reading the live store wrote beside it:\n%s\nafter:\n%s", before, listing_of("s", false));
	store_close(w);
}

Test(nofollow, a_log_without_its_index_is_refused_rather_than_an_index_written)
{
	cr_assert_eq(mkdir(at("s"), 0700), 0);
	clean_store("s/bulkhead.db");
	bh_error *err = NULL;
	struct bh_store *w = store_at("s/bulkhead.db", false, &err);
	cr_assert_not_null(w);
	store_event(w, "live", "", "", "only in the WAL");
	/* A partial copy: the database and its log, not the shared-memory index. */
	cr_assert_eq(mkdir(at("copy"), 0700), 0);
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' '%s/'", at("s/bulkhead.db"), at("s/bulkhead.db-wal"),
		 at("copy"));
	cr_assert_eq(system(cmd), 0);
	store_close(w);
	char before[8192];
	snprintf(before, sizeof before, "%s", listing("copy"));
	struct bh_store *r = store_at("copy/bulkhead.db", true, &err);
	cr_assert_null(r, "the copy was opened (SQLite writes an index beside it to read its log)");
	cr_assert_not_null(strstr(err->msg, "bulkhead.db-shm"), "%s", err->msg);
	bh_error_free(err);
	cr_assert_str_eq(listing("copy"), before);
}

Test(nofollow, a_store_whose_log_or_index_is_a_link_is_refused_and_the_target_untouched)
{
	static const char *const sides[] = {"bulkhead.db-wal", "bulkhead.db-shm"};
	for (int i = 0; i < 2; i++) {
		char dir[16];
		snprintf(dir, sizeof dir, "s%d", i);
		cr_assert_eq(mkdir(at(dir), 0700), 0);
		char db[64], side[64], target[64];
		snprintf(db, sizeof db, "%s/bulkhead.db", dir);
		snprintf(side, sizeof side, "%s/%s", dir, sides[i]);
		snprintf(target, sizeof target, "target%d", i);
		clean_store(db);
		put(target, "precious\n");
		cr_assert_eq(chmod(at(target), 0644), 0);
		cr_assert_eq(symlink(at(target), at(side)), 0);
		for (int ro = 0; ro < 2; ro++) {
			bh_error *err = NULL;
			struct bh_store *s = store_at(db, ro, &err);
			cr_assert_null(s, "%s opened with %s a link", ro ? "read-only" : "read-write",
				       sides[i]);
			cr_assert_not_null(strstr(err->msg, sides[i]), "%s", err->msg);
			cr_assert_not_null(strstr(err->msg, "symbolic link"), "%s", err->msg);
			bh_error_free(err);
		}
		struct stat st;
		cr_assert_eq(stat(at(target), &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0644, "the target's mode became %o",
			     st.st_mode & 07777);
		size_t n = 0;
		cleanup_free char *kept = read_file(at(target), 100, &n);
		cr_assert_str_eq(kept, "precious\n");
	}
}

/* ---- names read from a store ---- */

Test(nofollow, a_sandbox_name_is_valid_only_as_the_generator_makes_it)
{
	for (int i = 0; i < 64; i++) {
		char name[40];
		cr_assert_eq(sandbox_new_name(name), 0);
		cr_assert(sandbox_name_valid(name), "the generator's %s refused", name);
	}
	static const char *const bad[] = {
		"", "bh-", "home/alice", "../../victim", "bh-0123456789abcde", "bh-0123456789abcdef0",
		"bh-0123456789ABCDEF", "bh-0123456789abcde/", "bh-../../../etc/x", "xx-0123456789abcdef",
		"bh-0123456789abcdeg", "bh-0123456789abcde\n", "/bh-0123456789abcdef",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert(!sandbox_name_valid(bad[i]), "\"%s\" accepted", bad[i]);
	cr_assert(!sandbox_name_valid(NULL));
}
