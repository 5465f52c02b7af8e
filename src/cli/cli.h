/* The bulkhead command: one file per subcommand, a table in main.c. */
#ifndef BH_CLI_H
#define BH_CLI_H

#include "base.h"
#include "bulkhead.h"
#include "client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Exit status when bulkhead itself refused or failed (docker run's choice). */
#define CLI_EXIT_BULKHEAD 125
#define CLI_EXIT_USAGE 2

struct cli_common {
	const char *state_dir;
	int verbose;
	uint32_t prove_tiers; /* bh_config's: a command pinned to one tier proves only it */
	/* ---- egress: a broker's ops for the engine (run --grant; NULL: none) ---- */
	const struct bh_egress_ops *egress;
	void *egress_arg;
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
/* An engine that only reads (ls, leaks, gc --dry-run): no lock taken
 * exclusively, nothing created, prepared, migrated or written. */
bh_engine *cli_open_engine_inspect(const struct cli_common *c, bh_log_fn log);
/* An engine that proves nothing and collects nothing at open, holding the
 * lock: for gc, which reaps. */
bh_engine *cli_open_engine_collect(const struct cli_common *c, bh_log_fn log);
/* Runs the engine's loop until every tier's proof finished. */
int cli_wait_proven(bh_engine *e);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- help: each command has one usage string (its synopsis, then a line
 * per option), printed on stdout for -h/--help and quoted by its refusals,
 * so what --help says (and the man page made from it) is what a refusal
 * says. The shared options' lines are written once, here. ---- */
#define CLI_HELP_STATE                                                                              \
	"  --state DIR         the state directory (else $BULKHEAD_STATE, else\n"                   \
	"                      /var/lib/bulkhead)\n"
#define CLI_HELP_VERBOSE "  -v, --verbose       say more on stderr (twice: debug)\n"
#define CLI_HELP_COMMON CLI_HELP_STATE CLI_HELP_VERBOSE
/* The options cli_attach_opt parses, for a command that can ask a daemon:
 * two synopsis lines, each starting with indent. */
#define CLI_ATTACH_SYNOPSIS(indent)                                                                 \
	indent "[--attach SOCKET|URL] [--token-file FILE]\n" indent                                  \
	       "[--cacert FILE] [--cert FILE --key FILE]\n"
#define CLI_HELP_ATTACH_TO                                                                          \
	"  --attach SOCKET|URL ask this daemon: its unix socket, or http(s)://HOST:PORT\n"
#define CLI_HELP_TOKEN_FILE                                                                         \
	"  --token-file FILE   the daemon's client token (else $BULKHEAD_TOKEN)\n"
#define CLI_HELP_TLS                                                                                \
	"  --cacert FILE       with https: the CA that signed the daemon's certificate\n"           \
	"                      (default: the system's)\n"                                           \
	"  --cert FILE, --key FILE\n"                                                               \
	"                      with https: a client certificate and its key (serve\n"               \
	"                      --tls-client-ca)\n"
#define CLI_HELP_ATTACH CLI_HELP_ATTACH_TO CLI_HELP_TOKEN_FILE CLI_HELP_TLS
/* Only where a daemon holding the state directory is looked for by itself. */
#define CLI_HELP_NO_ATTACH "  --no-attach         never look for a daemon holding the state directory\n"
/* -h or --help among argv[1..] (before a "--"): the command answers with
 * its usage whatever else it was given. */
bool cli_wants_help(int argc, char **argv);
/* The usage on stdout; returns 0, the status to exit with. */
int cli_help(const char *usage);
/* A refusal: "bulkhead: WHY" and then the command's usage, on stderr;
 * returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));


/* ---- attach mode (attach.c) ---- */

struct cli_attach {
	const char *target;     /* --attach SOCKET|URL */
	const char *token_file; /* --token-file FILE; else $BULKHEAD_TOKEN */
	bool no_attach;         /* --no-attach: never look for a daemon */
	/* ---- tls: with --attach https://...: --cacert FILE (the daemon's CA;
	 * default the system's), --cert FILE and --key FILE (a client
	 * certificate, serve --tls-client-ca) ---- */
	const char *cacert, *client_cert, *client_key;
};
enum cli_attach_mode {
	CLI_ATTACH_EXPLICIT, /* only with --attach */
	CLI_ATTACH_AUTO,     /* --attach, else a daemon holding the state directory */
	CLI_ATTACH_IF_TOKEN, /* the same, but auto-attach only with a token to send (the
				command works embedded beside a daemon too) */
};
/* Parses --attach, --token-file and --no-attach: 1 consumed, 0 not ours,
 * -1 a usage error (reported). */
int cli_attach_opt(struct cli_attach *a, int argc, char **argv, int *i);
/* cli_common_opt, then (a not NULL) cli_attach_opt: 1 consumed, 0 not
 * theirs, -1 a usage error (reported). */
int cli_shared_opt(struct cli_common *c, struct cli_attach *a, int argc, char **argv, int *i);
/* A --json answer: doc printed (escaped on a terminal, cli_out_json) with
 * a newline, then freed. */
void cli_print_json(cJSON *doc);
/* The socket of a daemon holding the state directory, when its note can be
 * trusted (bh_client_discover); NULL otherwise, after saying why a note was
 * refused. Caller frees. */
char *cli_discover_daemon(const struct cli_common *c);
/* *out: a client of the daemon to use, or NULL to run embedded. -1 after
 * reporting why it could not be made. */
int cli_attach(const struct cli_attach *a, const struct cli_common *c, enum cli_attach_mode mode,
	       bh_client **out);
/* Prints a client error, with a hint for a missing token or scope. */
void cli_client_error(const struct bh_client_error *err);
/* One cell from a REPL's input: lines ending in \ go on; NULL at the end. */
char *cli_read_cell(FILE *in);
/* The shell's REPL on a daemon's session, through the client. */
int cli_shell_attached(bh_client *client, enum bh_tier floor, enum bh_language lang);

int cmd_doctor(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* ---- project: `run --project` (cmd_run_project.c) ---- */
bool cli_run_is_project(int argc, char **argv);
int cmd_run_project(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_approvals(int argc, char **argv); /* ---- approvals ---- */
int cmd_leaks(int argc, char **argv);
int cmd_capture(int argc, char **argv); /* ---- capture ---- */
int cmd_search(int argc, char **argv);  /* ---- capture ---- */
int cmd_usage(int argc, char **argv); /* ---- usage ---- */
int cmd_shell(int argc, char **argv);
int cmd_events(int argc, char **argv); /* ---- ci: attribution ---- */
int cmd_report(int argc, char **argv); /* ---- report ---- */
int cmd_records(int argc, char **argv);
int cmd_fleet(int argc, char **argv); /* ---- fleet (issue 20) ---- */
int cmd_verify(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_profiles(int argc, char **argv); /* ---- profiles ---- */
int cmd_serve(int argc, char **argv);
int cmd_console(int argc, char **argv);
int cmd_replay(int argc, char **argv);
/* ---- procs ---- */
int cmd_files(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_follow(int argc, char **argv); /* stream */

#endif
