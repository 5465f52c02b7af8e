/* Paths under /work, walked one component at a time from a descriptor of
 * /work with O_NOFOLLOW, so a symlink planted anywhere by user code is
 * never followed: it is refused with ELOOP. Used only in forked helpers
 * that already run as the sandbox user. What a path may be is the one rule
 * both sides share (path_rule.h). */
#ifndef BH_INIT_WALK_H
#define BH_INIT_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "path_rule.h"

/* The path with control characters escaped, for messages. */
void path_printable(const uint8_t *p, size_t n, char *out, size_t cap);

int open_work(void);

/* Called for each directory the walk creates, with its path (a prefix of
 * the walked one, NUL-terminated). */
typedef void (*walk_created_fn)(const char *path, void *arg);

/* Opens the directory `dir` (n bytes; n == 0: /work itself) component by
 * component. With `created`, missing directories are made (0755) and
 * reported. Returns an O_PATH descriptor (good as the dirfd of *at()
 * calls; openat(fd, ".", O_RDONLY) to read the directory) or -errno:
 * -ELOOP for a symlink on the way, -ENOTDIR for something that is not a
 * directory. */
int walk_dir(int work, const char *dir, size_t n, walk_created_fn created, void *arg);

/* Splits a checked, non-empty path into its directory part (length
 * *dir_len, possibly 0) and its last component (*base). */
void path_split(const char *path, size_t n, size_t *dir_len, const char **base);

#endif
