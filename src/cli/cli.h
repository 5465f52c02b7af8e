/* The bulkhead command: one file per subcommand, a table in main.c. */
#ifndef BH_CLI_H
#define BH_CLI_H

#include "bulkhead.h"

#include <stdbool.h>

/* Exit status when bulkhead itself refused or failed (docker run's choice). */
#define CLI_EXIT_BULKHEAD 125
#define CLI_EXIT_USAGE 2

struct cli_common {
	const char *state_dir;
	int verbose;
};

/* Parses --state DIR and -v wherever they appear; returns the index of the
 * first unparsed argument or -1 on a usage error (already reported). */
int cli_common_opt(struct cli_common *c, int argc, char **argv, int *i);
/* The engine configuration the common options and this binary's
 * surroundings give (the init and the cell servers found beside it). */
int cli_engine_config(const struct cli_common *c, struct bh_config *cfg);
/* Opens an engine on the common options; prints the error and returns NULL. */
bh_engine *cli_open_engine(const struct cli_common *c, bool reprove);
/* The same, choosing whether tiers are proven and where the log goes. */
bh_engine *cli_open_engine_with(const struct cli_common *c, bool reprove, bool skip_proofs,
				bh_log_fn log);
/* An engine that proves nothing and collects nothing at open: for leaks and gc. */
bh_engine *cli_open_engine_inspect(const struct cli_common *c, bh_log_fn log);
/* Runs the engine's loop until every tier's proof finished. */
int cli_wait_proven(bh_engine *e);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_doctor(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_records(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
