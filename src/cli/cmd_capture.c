/* bulkhead capture [--state DIR] FINDING|SESSION --out DIR [--file PATH]...
 * bulkhead capture --verify DIR
 *
 * Evidence of a finding (what `bulkhead leaks` lists) or a session, into a
 * new folder, before anything reaps it: the host's view through an engine
 * that only reads (processes from the sandbox's cgroup, its usage, its
 * sockets, the bundle's config.json, the store's rows). The engine that
 * spoke to the sandbox's init is gone (or holds the directory, and this
 * command cannot open beside it): what only the init can answer (its
 * processes, /work, the files named with --file) is written into the
 * MANIFEST as not captured, and why — the console on the directory
 * captures those of the sessions its engine holds. The engine writes every
 * file and the MANIFEST; --verify checks a folder against its MANIFEST.
 *
 * ---- remote: beside a live daemon — named with --attach, or the one that
 * holds the state directory (its STATE/daemon.sock.path note, as every
 * attaching command finds it; --no-attach never looks) — the daemon's
 * engine captures instead (Capture), on the daemon's host and below its
 * serve --capture-root, and what its init answers (processes, /work, the
 * --file files of a session it holds) is captured too. ---- */
#include "cli.h"
#include "cli_out.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quiet(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "bulkhead: %s\n", cli_out_field(stderr, msg));
}

static int verify(const char *dir)
{
	size_t n = 0;
	char sha[65];
	char *problems = NULL;
	bh_error *err = NULL;
	if (bh_capture_verify(dir, &n, sha, &problems, &err) < 0) {
		cli_error("capture --verify: %s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	if (problems) {
		/* Names in the folder are anyone's: escaped on a terminal. */
		for (char *save = NULL, *l = strtok_r(problems, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save))
			printf("FAILED %s\n", cli_out_field(stdout, l));
		free(problems);
		printf("%s does not verify against its MANIFEST (sha256 %s)\n",
		       cli_out_field(stdout, dir), sha);
		return 1;
	}
	printf("%s verifies: %zu files match their MANIFEST (sha256 %s)\n",
	       cli_out_field(stdout, dir), n, sha);
	return 0;
}

static const char usage[] =
	"usage: bulkhead capture FINDING|SESSION --out DIR [--file PATH]...\n"
	"                        [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                        ")
	"       bulkhead capture --verify DIR\n"
	"\n"
	"Evidence of a finding (what bulkhead leaks lists) or a session into a new\n"
	"folder, before anything reaps it; beside a live daemon (--attach, or the one\n"
	"holding the state directory) the daemon's engine captures.\n"
	"  --out DIR           the new folder\n"
	"  --file PATH         a file of the session's /work to capture too (repeatable)\n"
	"  --verify DIR        check a folder against its MANIFEST instead\n" CLI_HELP_COMMON
	CLI_HELP_ATTACH CLI_HELP_NO_ATTACH;

static int usage_error(const char *why)
{
	return cli_usage_error(usage, "capture: %s", why);
}

/* ---- remote: the daemon's engine captures ---- */
static int capture_attached(bh_client *client, const char *target, const char *dir,
			    const char *const *files, size_t n_files)
{
	struct wire_operator_capture_request req = {.target = target, .dir = dir, .files = files,
						    .n_files = n_files};
	struct wire_operator_captured out;
	struct bh_client_error *err = NULL;
	if (bh_client_capture(client, &req, &out, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	printf("captured %s%s%s into %s (MANIFEST sha256 %s) by the daemon\n",
	       cli_out_field(stdout, out.target.sandbox[0] ? out.target.sandbox : "-"),
	       out.target.fingerprint[0] ? " session " : "", out.target.fingerprint,
	       cli_out_field(stdout, out.dir), out.manifest_sha256);
	wire_operator_captured_free(&out);
	return 0;
}

int cmd_capture(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0}; /* ---- remote ---- */
	const char *target = NULL, *out = NULL, *verify_dir = NULL;
	const char *files[BH_CAPTURE_FILES_MAX];
	size_t n_files = 0;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--verify") && i + 1 < argc)
			verify_dir = argv[++i];
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			if (n_files == BH_CAPTURE_FILES_MAX - 16)
				return usage_error("too many --file");
			files[n_files++] = argv[++i];
		} else if (argv[i][0] != '-' && !target)
			target = argv[i];
		else
			return usage_error("unknown argument");
	}
	if (verify_dir)
		return target || out ? usage_error("--verify takes only a folder") : verify(verify_dir);
	if (!target || !out)
		return usage_error("name a finding or a session, and --out DIR");
	/* The folder is shown and kept absolute: a relative name means the
	 * directory this command runs in. */
	cleanup_free char *abs = NULL;
	if (out[0] == '/')
		abs = xstrdup(out);
	else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			cli_error("capture: where am I? %s", strerror(errno));
			return CLI_EXIT_BULKHEAD;
		}
		abs = xasprintf("%s/%s", cwd, out);
	}
	/* ---- remote ---- */
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (client) {
		int arc = capture_attached(client, target, abs, files, n_files);
		bh_client_free(client);
		return arc;
	}
	/* The host's view: an engine that only reads (a shared lock, so not
	 * beside a live one, whose sandboxes are its own). */
	bh_engine *e = cli_open_engine_inspect(&c, quiet);
	if (!e) {
		fprintf(stderr, "bulkhead: capture reads a directory no live engine holds (a dead "
				"engine's, or a stopped daemon's that kept its leftovers); beside a "
				"live daemon, name it with --attach SOCKET\n");
		return CLI_EXIT_BULKHEAD;
	}
	int rc = CLI_EXIT_BULKHEAD;
	bh_error *err = NULL;
	struct bh_capture_target t;
	bh_capture *cap = NULL;
	char sha[65];
	if (bh_engine_capture_target(e, target, &t, &err) < 0 ||
	    bh_capture_begin(e, &t, abs, &cap, &err) < 0) {
		cli_error("capture: %s", err->msg);
		goto done;
	}
	{
		const char *why = t.fingerprint[0]
			? "no engine of this command holds the session, so nothing can ask the "
			  "sandbox's init (the engine that spoke to it is gone)"
			: "no session names this sandbox: no init to ask";
		bh_capture_missing(cap, "processes-init.txt, work-listing.txt", why);
		for (size_t i = 0; i < n_files; i++) {
			cleanup_free char *what = xasprintf("/work/%s", files[i]);
			bh_capture_missing(cap, what, why);
		}
	}
	if (bh_capture_finish(cap, sha, &err) < 0) {
		cli_error("capture: %s", err->msg);
		goto done;
	}
	printf("captured %s%s%s into %s (MANIFEST sha256 %s)\n",
	       cli_out_field(stdout, t.sandbox[0] ? t.sandbox : "-"), t.fingerprint[0] ? " session " : "",
	       t.fingerprint[0] ? t.fingerprint : "", cli_out_field(stdout, bh_capture_dir(cap)), sha);
	rc = 0;
done:
	bh_error_free(err);
	bh_capture_free(cap);
	bh_engine_close(e);
	return rc;
}
