/* What every part of bulkhead uses, the static bulkhead-init included:
 * cleanup attributes (crun's pattern), allocation that aborts, clocks, hex
 * and randomness, a growable byte buffer. Nothing here knows about
 * sandboxes, and nothing needs more than libc, so the init can link it
 * statically. */
#ifndef BH_BASE_H
#define BH_BASE_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- cleanup attributes ---- */

/* The handlers keep errno intact: they run on error paths where the caller
 * still has to turn errno into a return value. */
static inline void bh_freep(void *p)
{
	int saved = errno;
	free(*(void **)p);
	errno = saved;
}

void bh_closep(int *fd);

static inline void bh_fclosep(FILE **f)
{
	if (*f) {
		int saved = errno;
		fclose(*f);
		errno = saved;
	}
}

static inline void bh_closedirp(DIR **d)
{
	if (*d) {
		int saved = errno;
		closedir(*d);
		errno = saved;
	}
}

#define cleanup_free __attribute__((cleanup(bh_freep)))
#define cleanup_close __attribute__((cleanup(bh_closep)))
#define cleanup_file __attribute__((cleanup(bh_fclosep)))
#define cleanup_dir __attribute__((cleanup(bh_closedirp)))

/* Closes now and marks the variable empty, so a later cleanup handler on
 * the same variable does not close a number that may have been reused. */
void bh_close_now(int *fd);

/* Hand ownership on: returns the value and leaves the old owner empty. */
#define steal_ptr(p) ({ __typeof__(p) _s = (p); (p) = NULL; _s; })
#define steal_fd(fd) ({ int _s = (fd); (fd) = -1; _s; })

/* ---- allocation that aborts: there is no sane recovery in a loop owner ---- */

void *xzalloc(size_t n);
char *xstrdup(const char *s); /* NULL -> "" */
char *xstrndup(const char *s, size_t n); /* exactly n bytes, a NUL among them kept */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- clocks ---- */

uint64_t now_mono_ns(void);
uint64_t now_mono_us(void);
uint64_t now_mono_ms(void);
uint64_t now_real_ms(void); /* Unix time */

/* ---- hex and randomness ---- */

/* n bytes as 2n lowercase hex digits and a NUL. */
void hex(const void *in, size_t n, char *out);
/* nbytes (at most 64) random bytes from getrandom(), as 2*nbytes hex
 * digits and a NUL. 0, or -1 with errno set. */
int random_hex(size_t nbytes, char *out);

/* ---- a growable byte buffer ---- */

struct buf {
	uint8_t *data;
	size_t len, cap;
};
/* Room for n more bytes without aborting: 0, or -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
/* Appends n bytes; aborts when memory runs out. */
void buf_append(struct buf *b, const void *data, size_t n);
/* Drops the first n bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

/* ---- procs: a file saved from a sandbox (src/base/save_file.c) ---- */

/* Writes len bytes to dest atomically: a temporary file beside it, written
 * and fsynced, then linked into place (overwrite false: -EEXIST when the
 * name exists, a symlink included) or renamed over it (overwrite true). 0,
 * or -errno; on failure dest is as it was. */
int bh_save_file(const char *dest, const void *data, size_t len, bool overwrite);

/* ---- egress: error text for the modules whose fallible functions take
 * `char **why` last (the daemon's small modules, the profiles file): on
 * failure they return -1 with *why set to a malloc'd sentence the caller
 * shows and frees (why may be NULL: nobody asked). ---- */
/* Replaces *why with the formatted text; always returns -1. */
int why_set(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like why_set, with ": strerror(err)" appended. */
int why_errno(char **why, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Puts "PREFIX: " in front of the text already in *why. */
void why_prefix(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
