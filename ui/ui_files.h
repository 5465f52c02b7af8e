/* Files the console writes for a person: the leak report and `:save-display`.
 * They go to the current directory under predictable names, often a shared
 * one (an evidence folder, /tmp), by an operator who may be root: each is
 * created new (O_EXCL), never through a symlink (O_NOFOLLOW), mode 0600, so
 * a name planted in advance cannot aim the write at another file. No
 * curses here: the unit tests link this file alone. */
#ifndef BH_UI_FILES_H
#define BH_UI_FILES_H

#include <stddef.h>
#include <stdio.h>

/* A new file at path, for writing; NULL with errno (EEXIST when the name
 * is taken, a symlink included). */
FILE *ui_create_new(const char *path);
/* The first free one of STEM.EXT, STEM-1.EXT ... STEM-99.EXT for each
 * extension in exts (the same stem for all: a report and its JSON side by
 * side); files[i] opened, names[i] (size n) what was used. -1 with errno
 * when none is free. */
int ui_create_set(const char *stem, const char *const *exts, size_t count, FILE **files,
		  char (*names)[256]);

#endif
