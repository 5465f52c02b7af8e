/* bulkhead cp SESSION:PATH DEST [--force] [--attach ...] [--state DIR]: one
 * file of a session's /work onto this machine, byte for byte, as its
 * sandbox's init reads it (a symlink is refused, never followed; so is a
 * FIFO or a device). At most WIRE_OPERATOR_READ_MAX bytes: a larger file is
 * refused, not cut. DEST (a directory: DEST/NAME) is never overwritten
 * without --force, and is written whole under a temporary name before it
 * takes its name (bh_save_file): it is absent, as it was, or the file. */
#include "cli.h"
#include "cli_out.h"
#include "sandbox_files.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: bulkhead cp SESSION:PATH DEST [--force] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                   ")
	"\n"
	"Copies one file of a session's /work here, byte for byte (a symlink, a FIFO or\n"
	"a device is refused). DEST, or DEST/NAME when DEST is a directory.\n"
	"  -f, --force         replace DEST when it exists\n" CLI_HELP_COMMON CLI_HELP_ATTACH
	CLI_HELP_NO_ATTACH;

static int usage(const char *what)
{
	return cli_usage_error(usage_text, "cp: %s", what);
}

/* DEST, or DEST/NAME when DEST is a directory. Caller frees. */
static char *destination(const char *dest, const char *path)
{
	struct stat sb;
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (stat(dest, &sb) == 0 && S_ISDIR(sb.st_mode))
		return xasprintf("%s%s%s", dest, dest[strlen(dest) - 1] == '/' ? "" : "/", name);
	return xstrdup(dest);
}

static int copy(struct sandbox_files *x, const char *path, const char *dest, bool force)
{
	struct wire_operator_file f;
	char *why = NULL;
	if (sandbox_files_read(x, path, WIRE_OPERATOR_READ_MAX, &f, &why) < 0) {
		cli_error("cp: /work/%s: %s", cli_out_field(stderr, path), cli_out_field(stderr, why));
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	int rc = 0;
	if (f.truncated || f.size > WIRE_OPERATOR_READ_MAX || f.len != f.size) {
		cli_error("cp: /work/%s is %llu bytes; cp copies at most %u (nothing written)",
			  cli_out_field(stderr, path), (unsigned long long)f.size,
			  WIRE_OPERATOR_READ_MAX);
		rc = CLI_EXIT_BULKHEAD;
	} else {
		cleanup_free char *to = destination(dest, path);
		int w = bh_save_file(to, f.content, f.len, force);
		if (w == -EEXIST) {
			cli_error("cp: %s exists: not overwritten (--force replaces it)", to);
			rc = CLI_EXIT_BULKHEAD;
		} else if (w < 0) {
			cli_error("cp: %s: %s (nothing written)", to, strerror(-w));
			rc = CLI_EXIT_BULKHEAD;
		}
	}
	wire_operator_file_free(&f);
	return rc;
}

int cmd_cp(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage_text);
	struct cli_common c = {0};
	struct cli_attach at = {0};
	const char *from = NULL, *dest = NULL;
	bool force = false;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return usage("unknown option");
		else if (!from)
			from = argv[i];
		else if (!dest)
			dest = argv[i];
		else
			return usage("one file at a time");
	}
	if (!from || !dest)
		return usage("a source and a destination are needed");
	const char *colon = strchr(from, ':');
	if (!colon || colon == from || !colon[1])
		return usage("the source is SESSION:PATH (a path below /work)");
	char session[65];
	snprintf(session, sizeof session, "%.*s", (int)(colon - from < 64 ? colon - from : 64),
		 from);
	const char *path = colon + 1;
	if (!strncmp(path, "/work/", 6))
		path += 6;
	struct sandbox_files x;
	int rc = sandbox_files_open(&x, &c, &at, session, "cp");
	if (rc == 0)
		rc = copy(&x, path, dest, force);
	sandbox_files_close(&x);
	return rc;
}
