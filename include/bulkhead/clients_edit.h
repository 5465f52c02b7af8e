/* Changing the clients file safely while a daemon may be reading it and
 * another `bulkhead token` may be changing it too.
 *
 * Every edit holds an exclusive flock on "FILE.lock" (created beside the
 * file, never removed) from reading the old text until the new one is in
 * place, so two concurrent edits cannot lose one. The new text is written to
 * a temporary file in the same directory (mode 0600; an existing file keeps
 * its mode without write bits for group and others, and, when we are root,
 * its owner), fsync'd, renamed over the file, and the directory is fsync'd:
 * a reader sees the old file or the new one, never a part. Lines the edit does
 * not touch (comments included) are kept as they were. A file that would not
 * load (malformed, group/world-writable, foreign owner) is not edited. */
#ifndef BH_DAEMON_CLIENTS_EDIT_H
#define BH_DAEMON_CLIENTS_EDIT_H

#include "clients.h"

/* Adds client `name` with `scopes` and a fresh token, which is written to
 * token (and nowhere else) for the caller to show once. Creates the file, and
 * its directory if only the last level is missing. Refuses a name already in
 * the file. */
int clients_edit_create(const char *path, const char *name, unsigned scopes,
			char token[CLIENTS_TOKEN_LEN + 1], char **why);
/* ---- approvals ---- */
/* The same, with the line's approval option (CLIENT_APPROVAL_DEFAULT: none
 * written, the daemon's default applies). */
int clients_edit_create_approval(const char *path, const char *name, unsigned scopes,
				 enum client_approval approval, char token[CLIENTS_TOKEN_LEN + 1],
				 char **why);
/* "approval=required", "approval=none", or "" for the default. */
const char *clients_approval_field(enum client_approval approval);
/* Removes client `name`; refuses a name not in the file. */
int clients_edit_revoke(const char *path, const char *name, char **why);

#endif
