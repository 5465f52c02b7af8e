/* bulkhead report [--state DIR | --db FILE] [SUSPECT] [--format md|json] [--out PATH]
 *                 [--capture DIR]...
 *
 * The incident report — the one the console's `e` in :leaks writes
 * (report.h: one definition) — of every suspect the leak finder lists, or
 * of those SUSPECT names, from a state directory through an engine that
 * only reads (it reaps nothing, and cannot open beside the live engine
 * that holds the directory), or from a copy of a store (--db: its live rows
 * whose engine is gone, the store alone; nothing on the host is looked at,
 * nothing is written beside the copy). Captures made with `bulkhead
 * capture` are joined to their suspects with --capture (their MANIFEST
 * names the target, and is verified again). To stdout (escaped on a
 * terminal), or to a new file (--out; never over a file or through a
 * link), whose absolute path is printed. */
#include "cli.h"
#include "cli_out.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAPTURES_MAX 64

static const char usage[] =
	"usage: bulkhead report [--state DIR | --db FILE] [SUSPECT] [--format md|json]\n"
	"                       [--out PATH] [--capture DIR]...\n"
	"\n"
	"The incident report of what a dead engine left (the console's `e` in :leaks):\n"
	"per suspect its timeline (events, records, the call that was running), each\n"
	"record's code and output and its digest and chain link checked, the host, the\n"
	"versions and the evidence captured of it. Read-only: nothing is reaped.\n"
	"\n"
	"  SUSPECT         a sandbox name or a session fingerprint (8 characters or more\n"
	"                  of it); every finding when left out\n"
	"  --state DIR     the state directory, read by an engine that only reads (not\n"
	"                  beside the live engine holding it: stop it, or use --db)\n"
	"  --db FILE       a copy of a store instead (bulkhead backup): its live rows\n"
	"                  whose engine is gone, from the store alone\n"
	"  --format F      md (Markdown, the default) or json (docs/report.schema.json)\n"
	"  --out PATH      a new file (never over one, never through a link); its\n"
	"                  absolute path is printed. Default: standard output\n"
	"  --capture DIR   an evidence folder from bulkhead capture, joined to the\n"
	"                  suspect its MANIFEST names and verified again (repeatable)\n"
	"\n"
	"Exit status: 0 written, 1 SUSPECT names no finding, 2 a usage error, 125 the\n"
	"state, the store, a capture or the output could not be read or written.\n";

static void quiet(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "bulkhead: %s\n", cli_out_field(stderr, msg));
}

static bool names_finding(const char *name, const struct bh_leak *l)
{
	size_t n = strlen(name);
	return !strcmp(name, l->sandbox) ||
	       (n >= 8 && *l->fingerprint && !strncmp(name, l->fingerprint, n));
}

static char *absolute(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return NULL;
	return xasprintf("%s/%s", cwd, path);
}

/* The report in memory first: to a terminal it is escaped as every CLI
 * output is; to a file it is written whole or not at all. */
static int emit(bh_report *r, enum bh_report_format format, const char *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	if (!mem)
		abort();
	bh_error *err = NULL;
	int rc = bh_report_write(r, format, mem, &err);
	fclose(mem);
	if (rc < 0) {
		cli_error("report: %s", err->msg);
		bh_error_free(err);
		free(text);
		return CLI_EXIT_BULKHEAD;
	}
	if (!out) {
		if (format == BH_REPORT_JSON)
			cli_out_json(stdout, text);
		else
			cli_out_cell(stdout, text, len);
		free(text);
		return fflush(stdout) == 0 ? 0 : CLI_EXIT_BULKHEAD;
	}
	cleanup_free char *abs = absolute(out);
	int fd = abs ? open(abs, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	if (fd < 0) {
		cli_error("report: cannot create %s: %s%s", cli_out_field(stderr, abs ? abs : out),
			  strerror(errno), errno == EEXIST ? " (a report is never written over a file)" : "");
		free(text);
		return CLI_EXIT_BULKHEAD;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	bool ok = done == len && fsync(fd) == 0;
	int saved = errno;
	close(fd);
	free(text);
	if (!ok) {
		unlink(abs);
		cli_error("report: write %s: %s", cli_out_field(stderr, abs), strerror(saved));
		return CLI_EXIT_BULKHEAD;
	}
	printf("wrote %s (%zu suspect%s, %s)\n", cli_out_field(stdout, abs), bh_report_suspects(r),
	       bh_report_suspects(r) == 1 ? "" : "s", format == BH_REPORT_JSON ? "JSON" : "Markdown");
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct cli_common c = {0};
	const char *db = NULL, *suspect = NULL, *out = NULL;
	const char *captures[CAPTURES_MAX];
	size_t n_captures = 0;
	enum bh_report_format format = BH_REPORT_MARKDOWN;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, NULL, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(a, "--db") && i + 1 < argc)
			db = argv[++i];
		else if (!strcmp(a, "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(a, "--format") && i + 1 < argc) {
			const char *f = argv[++i];
			if (!strcmp(f, "md") || !strcmp(f, "markdown"))
				format = BH_REPORT_MARKDOWN;
			else if (!strcmp(f, "json"))
				format = BH_REPORT_JSON;
			else {
				cli_error("report: --format is md or json, not \"%s\"", cli_out_field(stderr, f));
				return CLI_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--capture") && i + 1 < argc) {
			if (n_captures == CAPTURES_MAX) {
				cli_error("report: at most %d --capture", CAPTURES_MAX);
				return CLI_EXIT_USAGE;
			}
			captures[n_captures++] = argv[++i];
		} else if (a[0] != '-' && !suspect)
			suspect = a;
		else {
			cli_error("report: unexpected \"%s\"\n%s", cli_out_field(stderr, a), usage);
			return CLI_EXIT_USAGE;
		}
	}
	bh_engine *e = NULL;
	bh_history *h = NULL;
	bh_error *err = NULL;
	struct bh_leak *found = NULL;
	size_t n = 0;
	char where[4400];
	if (db) {
		if (bh_history_open(db, &h, &err) < 0 || bh_history_leaks(h, &found, &n, &err) < 0) {
			cli_error("report: %s", err->msg);
			bh_error_free(err);
			bh_history_close(h);
			return CLI_EXIT_BULKHEAD;
		}
		snprintf(where, sizeof where, "store copy %s (read-only)", db);
	} else {
		e = cli_open_engine_inspect(&c, quiet);
		if (!e) {
			fprintf(stderr, "bulkhead: report reads a directory no live engine holds (a dead "
					"engine's, or a stopped daemon's that kept its leftovers); beside a "
					"live one, report on a copy of its store (bulkhead backup, then --db)\n");
			return CLI_EXIT_BULKHEAD;
		}
		n = bh_engine_leaks(e, &found);
		snprintf(where, sizeof where, "state directory %s (read-only)",
			 bh_state_dir_name(c.state_dir));
	}
	bh_report *r = bh_report_new(where, db ? "store" : "state", 0);
	for (size_t i = 0; i < n; i++)
		if (!suspect || names_finding(suspect, &found[i]))
			bh_report_add_suspect(r, &found[i]);
	free(found);
	int rc = 0;
	if (suspect && !bh_report_suspects(r)) {
		cli_error("report: no finding is named \"%s\" (bulkhead leaks%s%s lists them)",
			  cli_out_field(stderr, suspect), db ? " --db " : "", db ? cli_out_field(stderr, db) : "");
		rc = 1;
		goto done;
	}
	for (size_t i = 0; i < n_captures; i++)
		if (bh_report_attach_capture(r, captures[i], &err) < 0) {
			cli_error("report: %s", err->msg);
			bh_error_free(err);
			rc = CLI_EXIT_BULKHEAD;
			goto done;
		}
	bh_report_collect(r, e, h, NULL);
	rc = emit(r, format, out);
done:
	bh_report_free(r);
	bh_history_close(h);
	if (e)
		bh_engine_close(e);
	return rc;
}
