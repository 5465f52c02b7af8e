/* bulkhead [console] [--attach SOCKET|URL] [--db FILE] [--readonly]:
 * the operator console. With no source named it attaches to the daemon
 * holding the state directory when one answers, else it opens the engine
 * itself. --script FILE (headless, for tests) feeds keys and :commands. */
#include "cli.h"
#include "console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: bulkhead console [--state DIR] [-v] [--attach SOCKET|URL] [--db FILE]\n"
	"                        [--readonly] [--view NAME] [--script FILE [--display]]\n"
	"                        [--cacert FILE] [--cert FILE --key FILE]\n"
	"                        [--fleet URLS [--token-file FILE] [--images-dir DIR]]\n"
	"       bulkhead [OPTION...]  (the same: the console is the default command)\n"
	"\n"
	"The operator console: of the daemon named with --attach, else of the one holding\n"
	"the state directory, else of an engine it opens itself; the daemon's token\n"
	"comes from $BULKHEAD_TOKEN.\n" CLI_HELP_COMMON CLI_HELP_ATTACH_TO CLI_HELP_TLS
	"  --db FILE           a store (a copy: bulkhead backup) instead of an engine\n"
	"  --fleet URLS        a fleet on NATS (nats://HOST:PORT,...; --fleet - reads\n"
	"                      $BULKHEAD_FLEET): every host (:hosts) and every host's\n"
	"                      sandboxes, through the operator API each host publishes\n"
	"  --token-file FILE   with --fleet: the hosts' token (else $BULKHEAD_TOKEN)\n"
	"  --images-dir DIR    with --fleet: the fleet's shared images directory, for\n"
	"                      :leaks to find an image no host's entry names\n"
	"  --readonly          change nothing: no lock, no store write, no sandbox\n"
	"  --view NAME         the view to start in\n"
	"  --script FILE       feed keys and :commands from FILE, headless (for tests)\n"
	"  --display           with --script: draw the screen too\n";

int cmd_console(int argc, char **argv)
{
	struct cli_common common = {0};
	struct ui_options o = {0};
	const char *attach = NULL, *db = NULL;
	const char *fleet = NULL, *token_file = NULL, *images_dir = NULL; /* ---- fleet ---- */
	bool display = false;
	struct bh_client_options tls = {0}; /* ---- tls ---- */
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&common, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
		if (!strcmp(a, "--readonly"))
			o.readonly = true;
		else if (!strcmp(a, "--display"))
			display = true;
		else if (!strcmp(a, "--attach") && i + 1 < argc)
			attach = argv[++i];
		/* ---- tls: an https daemon's CA, a client certificate ---- */
		else if (!strcmp(a, "--cacert") && i + 1 < argc)
			tls.cacert = argv[++i];
		else if (!strcmp(a, "--cert") && i + 1 < argc)
			tls.client_cert = argv[++i];
		else if (!strcmp(a, "--key") && i + 1 < argc)
			tls.client_key = argv[++i];
		else if (!strcmp(a, "--fleet") && i + 1 < argc) /* ---- fleet ---- */
			fleet = argv[++i];
		else if (!strcmp(a, "--token-file") && i + 1 < argc)
			token_file = argv[++i];
		else if (!strcmp(a, "--images-dir") && i + 1 < argc)
			images_dir = argv[++i];
		else if (!strcmp(a, "--db") && i + 1 < argc)
			db = argv[++i];
		else if (!strcmp(a, "--script") && i + 1 < argc)
			o.script = argv[++i];
		else if (!strcmp(a, "--view") && i + 1 < argc)
			o.start_view = argv[++i];
		else
			return cli_usage_error(usage, "console: unexpected \"%s\"", a);
	}
	if (attach && db) {
		cli_error("console: --attach and --db name two different sources; pick one");
		return CLI_EXIT_USAGE;
	}
	/* ---- fleet ---- */
	if (fleet && !strcmp(fleet, "-"))
		fleet = getenv("BULKHEAD_FLEET");
	if (fleet && (!*fleet || attach || db)) {
		cli_error("console: %s", !*fleet ? "--fleet -: $BULKHEAD_FLEET is not set"
					       : "--fleet and --attach/--db name two different sources; pick one");
		return CLI_EXIT_USAGE;
	}
	if (!fleet && (token_file || images_dir))
		return cli_usage_error(usage, "console: --token-file and --images-dir go with --fleet");
	o.no_display = o.script && !display;
	if (!o.script && !isatty(STDIN_FILENO)) {
		cli_error("console: needs a terminal (or --script FILE for a headless run)");
		return CLI_EXIT_USAGE;
	}
	cleanup_free char *sock = !attach && !db && !fleet ? cli_discover_daemon(&common) : NULL;
	if (sock)
		attach = sock;
	struct ui_source *src = NULL;
	char *why = NULL;
	if (fleet) { /* ---- fleet ---- */
		char *token = NULL;
		struct bh_client_error *terr = NULL;
		if (bh_client_token(token_file, &token, &terr) < 0) {
			cli_error("console: %s", terr && terr->message ? terr->message : "the token file");
			bh_client_error_free(terr);
			return CLI_EXIT_USAGE;
		}
		tls.token = token;
		src = ui_source_fleet(fleet, &tls, images_dir, &why);
		if (token) {
			explicit_bzero(token, strlen(token));
			free(token);
		}
	} else if (db) {
		src = ui_source_store(db, &why);
	} else if (attach) {
		tls.target = attach; /* ---- tls ---- */
		tls.token = getenv("BULKHEAD_TOKEN");
		src = ui_source_attached_with(&tls, &why);
	} else {
		struct bh_config cfg;
		if (cli_engine_config(&common, &cfg) < 0)
			return CLI_EXIT_BULKHEAD;
		/* The screen is the console's: the engine's log must not scribble on it. */
		cfg.log = NULL;
		/* ---- inflight: never destroy on open (B1). What a dead engine
		 * left is evidence: kept and summed up in the header, reaped only
		 * from :leaks (space marks, ctrl-d after a preview). --readonly
		 * changes nothing at all: no lock, no store write, no sandbox. ---- */
		cfg.keep_leftovers = true;
		cfg.read_only = o.readonly;
		src = ui_source_embedded(&cfg, &why);
	}
	if (!src) {
		cli_error("console: %s", why ? why : "cannot open the source");
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	return ui_console_run(src, &o) == 0 ? 0 : CLI_EXIT_BULKHEAD;
}
