/* A live store's WAL index stays the engine's: SQLite marks the -shm file in
 * use with a POSIX lock, and a POSIX lock is dropped when the process closes
 * any fd of that file. An engine that opened the -shm itself (to set its
 * mode) lost the mark, and the next process to open the store — `sqlite3`,
 * `bulkhead leaks --db`, a console reading it — took itself for the first,
 * reset the index under the engine's mapping, and the engine died of SIGBUS
 * in sqlite3WalFindFrame (the whole suite caught it once). */
#include "bulkhead.h"
#include "harness.h"
#include "store.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[4096], db[4200];

static void setup(void)
{
	harness_scratch_dir("store-locks", dir, sizeof dir, db, sizeof db);
}

static void teardown(void)
{
	harness_remove_dir(dir);
}

/* Whether another process would find some lock on path's bytes. */
static bool locked_for_another_process(const char *path)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int fd = open(path, O_RDWR | O_CLOEXEC);
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
		if (fd < 0)
			_exit(2);
		if (fcntl(fd, F_GETLK, &fl) < 0)
			_exit(3);
		_exit(fl.l_type == F_UNLCK ? 1 : 0);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 2, "could not look at %s (status 0x%x)", path,
		  st);
	return WEXITSTATUS(st) == 0;
}

Test(store_locks, an_open_store_keeps_its_wal_index_marked_in_use_for_other_processes,
     .init = setup, .fini = teardown)
{
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(db, false, false, &s, &err), 0, "%s", err ? err->msg : "");
	char shm[4300];
	snprintf(shm, sizeof shm, "%s-shm", db);
	cr_assert_eq(access(shm, F_OK), 0, "no %s after the open", shm);
	cr_assert(locked_for_another_process(shm),
		  "the engine holds no lock on its store's -shm: another process opening the store "
		  "would reset the WAL index under it");
	store_close(s);
}
