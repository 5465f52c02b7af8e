/* Small helpers of the engine's own: files with no link followed, hashing.
 * Nothing here knows about sandboxes; what every part of bulkhead uses
 * (cleanup attributes, allocation, clocks, hex, randomness, a byte buffer)
 * is base.h's. */
#ifndef BH_UTIL_H
#define BH_UTIL_H

#include "base.h"

#include <sys/types.h>
#include <unistd.h>

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
/* The same of what is left to read of fd; *size gets how many bytes. */
int sha256_fd_hex(int fd, char out[65], uint64_t *size);

/* Trims trailing whitespace in place; returns s. */
char *rtrim(char *s);

#endif
