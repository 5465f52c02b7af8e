/* Small helpers shared by the engine: cleanup attributes (crun's pattern),
 * files, hashing, randomness. Nothing here knows about sandboxes. */
#ifndef BH_UTIL_H
#define BH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>

#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline void bh_freep(void *p) { free(*(void **)p); }
static inline void bh_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void bh_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void bh_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define cleanup_free __attribute__((cleanup(bh_freep)))
#define cleanup_close __attribute__((cleanup(bh_closep)))
#define cleanup_file __attribute__((cleanup(bh_fclosep)))
#define cleanup_dir __attribute__((cleanup(bh_closedirp)))

/* Hand ownership on: returns the value and leaves the old owner empty. */
#define steal_ptr(p) ({ __typeof__(p) _s = (p); (p) = NULL; _s; })
#define steal_fd(fd) ({ int _s = (fd); (fd) = -1; _s; })

void *xzalloc(size_t n); /* aborts on OOM: there is no sane recovery in a loop owner */
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads a whole file (at most max bytes); returns NULL with errno set. */
char *read_file(const char *path, size_t max, size_t *len);
/* Paths with no symbolic link followed at any component (nofollow.c): a
 * link fails with ELOOP. open_nofollow's path stays beneath dirfd unless
 * dirfd is AT_FDCWD. */
int open_nofollow(int dirfd, const char *path, int flags, mode_t mode);
/* An O_PATH descriptor of path's directory; *base (caller frees) its last
 * component. */
int open_parent_nofollow(const char *path, char **base);
DIR *opendir_nofollow(const char *path);

/* These follow no symbolic link at any component of path (ELOOP): */
/* Writes data to path atomically (temp file + rename) with the given mode;
 * a link at path itself is replaced, never written through. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
int mkdir_p(const char *path, mode_t mode);
/* Removes a directory tree; a link at any depth is removed, not followed. */
int rm_rf(const char *path);
/* mkdir -p of a directory the operator names (a state directory, the
 * evidence cache): its ancestors are followed as the path names them. */
int mkdir_p_named(const char *path, mode_t mode);
/* Bytes a tree takes on disk (allocated blocks; symlinks not followed). */
uint64_t disk_usage(const char *path);

/* SHA-256 of a buffer or a file, as 64 lowercase hex characters + NUL. */
void sha256_hex(const void *data, size_t len, char out[65]);
int sha256_file_hex(const char *path, char out[65]);
/* n random bytes from getrandom(), as 2n hex characters. */
int random_hex(size_t nbytes, char *out);

uint64_t now_mono_us(void);
uint64_t now_real_ms(void);

/* Trims trailing whitespace in place; returns s. */
char *rtrim(char *s);

/* A growable byte buffer. */
struct buf {
	uint8_t *data;
	size_t len, cap;
};
void buf_append(struct buf *b, const void *data, size_t n);
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

#endif
