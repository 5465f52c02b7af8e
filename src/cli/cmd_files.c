/* bulkhead files SESSION [PATH] [--attach SOCKET|URL] [--token-file FILE]
 * [--no-attach] [--state DIR]: a directory of a session's /work (PATH
 * relative to it; none: /work itself), as its sandbox's init lists it,
 * like `ls -l`: type, size, modification time (UTC), name, and a symlink's
 * target (never followed). Names are the sandbox's: escaped on a terminal
 * (cli_out.h). */
#include "cli.h"
#include "cli_out.h"
#include "sandbox_files.h"

#include <string.h>
#include <time.h>

/* ls -l's first letter for the init's type. */
static char ls_type(char t)
{
	return t == 'f' ? '-' : strchr("dlpscb", t) && t ? t : '?';
}

static void print_listing(const struct wire_operator_files *f, const char *path)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct bh_file_entry *e = &f->entries[i];
		char when[32];
		time_t t = (time_t)(e->mtime_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
		printf("%c %12llu %s  %s%s%s\n", ls_type(e->type), (unsigned long long)e->size, when,
		       cli_out_field(stdout, e->name), e->type == 'l' ? " -> " : "",
		       e->type == 'l' ? cli_out_field(stdout, e->target) : "");
	}
	if (f->more)
		printf("(more entries in /work%s%s than these %zu)\n", *path ? "/" : "",
		       cli_out_field(stdout, path), f->n);
}

static const char usage[] =
	"usage: bulkhead files SESSION [PATH] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                      ")
	"\n"
	"A directory of a session's /work (PATH relative to it; none: /work itself) as\n"
	"its sandbox's init lists it, like ls -l. SESSION is a fingerprint or the start\n"
	"of one (bulkhead ls).\n" CLI_HELP_COMMON CLI_HELP_ATTACH CLI_HELP_NO_ATTACH;

int cmd_files(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0};
	const char *session = NULL, *path = "";
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (argv[i][0] == '-' || positional == 2) {
			return cli_usage_error(usage, "files: unexpected argument \"%s\"", argv[i]);
		}
		if (positional++ == 0)
			session = argv[i];
		else
			path = argv[i];
	}
	if (!session) {
		return cli_usage_error(usage, "files: which session?");
	}
	/* "/work/x" and "x" name the same directory; "/work" is "". */
	if (!strncmp(path, "/work", 5) && (path[5] == '/' || !path[5]))
		path += path[5] ? 6 : 5;
	struct sandbox_files x;
	int rc = sandbox_files_open(&x, &c, &at, session, "files");
	if (rc == 0) {
		struct wire_operator_files list;
		char *why = NULL;
		if (sandbox_files_list(&x, path, &list, &why) < 0) {
			cli_error("files: %s", cli_out_field(stderr, why));
			free(why);
			rc = CLI_EXIT_BULKHEAD;
		} else {
			print_listing(&list, path);
			wire_operator_files_free(&list);
		}
	}
	sandbox_files_close(&x);
	return rc;
}
