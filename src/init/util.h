/* Small ownership helpers shared by the init's translation units. */
#ifndef BH_INIT_UTIL_H
#define BH_INIT_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Cleanup handlers keep errno intact: they run on error paths where the
 * caller still has to turn errno into a return value. */
static inline void bh_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void bh_freep(void *p)
{
	int saved = errno;
	free(*(void **)p);
	errno = saved;
}

static inline void bh_closedirp(DIR **d)
{
	if (*d) {
		int saved = errno;
		closedir(*d);
		errno = saved;
	}
}

static inline void bh_fclosep(FILE **f)
{
	if (*f) {
		int saved = errno;
		fclose(*f);
		errno = saved;
	}
}

#define bh_autoclose __attribute__((cleanup(bh_closep)))
#define bh_autofree __attribute__((cleanup(bh_freep)))
#define bh_autoclosedir __attribute__((cleanup(bh_closedirp)))
#define bh_autofclose __attribute__((cleanup(bh_fclosep)))

/* Closes now and marks the variable empty, so a later cleanup handler on
 * the same variable does not close a number that may have been reused. */
static inline void bh_close_now(int *fd)
{
	bh_closep(fd);
	*fd = -1;
}

/* Hand a descriptor out of a cleanup-guarded variable. */
static inline int bh_steal_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

#define BH_STEAL_PTR(p)                      \
	({                                   \
		__typeof__(p) bh_tmp_ = (p); \
		(p) = NULL;                  \
		bh_tmp_;                     \
	})

#define BH_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
