/* ---- egress: `bulkhead run --grant PROFILE` (a javascript run or a
 * project, as plimsoll's grantProfile): the profiles file read, a broker of
 * this process's own started for the run, the engine given its ops. The CLI
 * runs as the host's operator, who owns the profiles file: every profile in
 * it may be named. ---- */
#ifndef BH_CLI_RUN_GRANT_H
#define BH_CLI_RUN_GRANT_H

#include "cli.h"

struct cli_grant_opts {
	const char *profile;     /* --grant; NULL: none */
	const char *profiles;    /* --profiles FILE */
	const char *upstream_ca; /* --upstream-ca PEM; NULL: the system's store */
};

/* One of --grant, --profiles, --upstream-ca at argv[*i] (its value taken):
 * 1; 0 when argv[*i] is none of them; -1 on a usage error (reported). */
int cli_grant_opt(struct cli_grant_opts *g, int argc, char **argv, int *i);

struct cli_grant;
/* With a profile named: loads the file, checks the profile is in it, starts
 * the broker and sets c's egress ops; *out NULL when none was named. -1 with
 * the error printed. */
int cli_grant_start(const struct cli_grant_opts *o, struct cli_common *c, struct cli_grant **out);
/* The engine the broker's notes become events of (NULL before it closes). */
void cli_grant_engine(struct cli_grant *g, bh_engine *e);
void cli_grant_stop(struct cli_grant *g);

#define CLI_GRANT_USAGE "[--grant PROFILE --profiles FILE [--upstream-ca PEM]]"
#define CLI_GRANT_HELP                                                                        \
	"  --grant PROFILE     hold this egress profile for the run (a javascript run or\n"     \
	"                      a project; plimsoll's grantProfile): the code reaches its\n"    \
	"                      origins through bulkhead's broker, which adds the\n"            \
	"                      credential on the host; the sandbox never sees it\n"            \
	"  --profiles FILE     the egress profiles file naming it (as serve --profiles)\n"    \
	"  --upstream-ca PEM   the CAs the upstreams' certificates are checked against\n"     \
	"                      (default: the system's)\n"

#endif
