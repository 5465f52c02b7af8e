/* `bulkhead files` and `bulkhead cp`: a session's /work, read through its
 * sandbox's init, from a daemon (attached) or from an engine of this
 * process on --state (embedded: the sessions it holds are the hibernated
 * ones a previous engine left, restored for the read). Either way the
 * answers come in the operator API's shape. */
#ifndef BH_CLI_SANDBOX_FILES_H
#define BH_CLI_SANDBOX_FILES_H

#include "cli.h"
#include "wire_operator.h"

struct sandbox_files {
	bh_client *client; /* attached, or */
	bh_engine *e;      /* embedded */
	bh_session *s;
	char fp[65];
};

/* Finds the session (a fingerprint or a unique prefix of one, as ls shows
 * it); `cmd` names the command in errors. 0, or an exit status after
 * saying why. */
int sandbox_files_open(struct sandbox_files *x, const struct cli_common *c,
		       const struct cli_attach *at, const char *session, const char *cmd);
/* 0, or -1 with *why (caller frees). */
int sandbox_files_list(struct sandbox_files *x, const char *path, struct wire_operator_files *out,
		       char **why);
int sandbox_files_read(struct sandbox_files *x, const char *path, uint32_t max,
		       struct wire_operator_file *out, char **why);
void sandbox_files_close(struct sandbox_files *x);

#endif
