/* bulkhead: the command. Each subcommand is a function in its own file. */
#include "cli.h"
#include "recorder.h"

#include <stdio.h>
#include <string.h>

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"console", cmd_console, "the operator console (also: bulkhead with no command)"},
	{"replay", cmd_replay, "replay a recorded scenario in the console (executes nothing)"},
	{"doctor", cmd_doctor, "prove every isolation tier now and print the evidence"},
	{"run", cmd_run, "run code once in a fresh sandbox"},
	{"shell", cmd_shell, "a line REPL into a new warm session"},
	{"ls", cmd_ls, "list the sessions a daemon holds"},
	{"records", cmd_records, "list the run records in the store"},
	{"fleet", cmd_fleet, "a fleet on NATS: status, hosts, drain HOST, leaks, records"},
	{"verify", cmd_verify, "recompute every record digest and chain link"},
	{"backup", cmd_backup, "copy the store consistently while it is in use"},
	{"leaks", cmd_leaks, "list sandboxes, rows, images and cgroups nothing should hold"},
	{"gc", cmd_gc, "reap what leaks finds (--dry-run: only say what)"},
	{"serve", cmd_serve, "serve the engine over HTTP (plimsoll.v1 and the operator API)"},
	{"record", cmd_record, "record a scripted conversation as a scenario the console replays"},
	{"token", cmd_token, "create, list or revoke the daemon's client tokens"},
	/* ---- procs ---- */
	{"files", cmd_files, "list a directory of a session's /work, through its sandbox's init"},
	{"cp", cmd_cp, "copy a file of a session's /work here (SESSION:PATH DEST)"},
	/* ---- approvals ---- */
	{"approvals", cmd_approvals, "list the calls a daemon holds for approval; approve or deny"},
	{"usage", cmd_usage, "what each live sandbox of a daemon uses: CPU, memory, pids, disk"},
	/* ---- stream ---- */
	{"follow", cmd_follow, "print a session's running cell's output as it arrives"},
	/* ---- capture ---- */
	{"capture", cmd_capture, "capture a finding's or a session's evidence into a folder (--verify DIR)"},
	{"search", cmd_search, "search every stored cell's code and output (code:TEXT, stdout:, stderr:)"},
	/* ---- ci: attribution ---- */
	{"events", cmd_events, "list the engine's events: what happened, who acted, which request"},
	/* ---- profiles ---- */
	{"profiles", cmd_profiles, "check an egress profiles file as serve --profiles reads it"},
	/* ---- report ---- */
	{"report", cmd_report, "write the incident report of what a dead engine left (md or json)"},
};

static void usage(FILE *to)
{
	fprintf(to, "usage: bulkhead COMMAND [--state DIR] [-v] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(to, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(to, "  %-8s %s\n", "version", "print the version");
	fprintf(to, "\nThe state directory is --state, else $BULKHEAD_STATE, else /var/lib/bulkhead.\n");
	fprintf(to, "ls, records, leaks, gc and shell talk to a daemon with --attach SOCKET|URL, or by\n"
		    "themselves to the daemon holding the state directory (--no-attach: never);\n"
		    "its token comes from --token-file FILE, else $BULKHEAD_TOKEN.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "-h") && strcmp(argv[1], "--help") &&
			 strcmp(argv[1], "--version")))
		return cmd_console(argc, argv); /* bulkhead [--attach X] [--db F] ... */
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "version") && cli_wants_help(argc - 1, argv + 1))
		return cli_help("usage: bulkhead version\n\nPrints bulkhead's version (as bulkhead "
				"--version does).\n");
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("bulkhead %s\n", BULKHEAD_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	cli_error("unknown command \"%s\" (try bulkhead --help)", argv[1]);
	return CLI_EXIT_USAGE;
}
