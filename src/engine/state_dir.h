/* The checks a state directory passes before the engine uses anything in
 * it (state_dir.c; the public half is bh_state_dir_check in bulkhead.h). */
#ifndef BH_STATE_DIR_H
#define BH_STATE_DIR_H

#include "bulkhead.h"

#include <stdbool.h>

/* bh_state_dir_check's owner and mode rule, on a descriptor already open. */
int state_dir_check_fd(int fd, const char *path, bh_error **err);
/* ---- fleet (issue 20): bh_config.images_dir passes bh_state_dir_check's
 * rule (a directory, no link, root's or ours, not group/other-writable),
 * refused in a sentence naming it the images directory ---- */
int images_dir_check(const char *dir, bh_error **err);
/* Each entry the engine keeps (lock, the store and its -wal/-shm, rootfs,
 * bundles, images, run/crun, run/runsc, lib ...) must be absent or of the
 * type the engine makes: never a symbolic link. strict: the first that is
 * not fails the open. Otherwise each is logged as not followed (an
 * inspecting engine, which then never opens it). */
int state_dir_entries_check(bh_engine *e, int dirfd, const char *path, bool strict, bh_error **err);

#endif
