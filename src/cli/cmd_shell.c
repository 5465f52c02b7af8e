/* bulkhead shell [--tier T] [--floor T] [--lang python|javascript] [--raw]:
 * a line REPL into one new session. On a terminal, whatever the sandbox
 * chose (cell output, file names, :read) is shown with its control bytes
 * escaped (cli_out.h); --raw writes cell output and :read as they are. Each line is a cell (end a line with \ to go
 * on to the next); :py and :js switch the language, :files [DIR] lists
 * /work, :read PATH prints a file, :close ends the session. Works from a
 * pipe, so scripts can drive it. With --attach SOCKET|URL (or a daemon
 * holding the state directory) the session is the daemon's, opened and
 * checked through the client (cmd_shell_attach.c). */
#include "cli.h"
#include "cli_out.h"
#include "record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wait_one {
	bool done;
	int status;
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	struct wait_one *w = arg;
	(void)s;
	w->done = true;
	if (err) {
		fprintf(stderr, "Nothing ran (%s): %s\n",
			err->code == BH_E_NOT_DISPATCHED ? bh_refusal_name(err->refusal) : "environment",
			cli_out_field(stderr, err->msg));
		w->status = CLI_EXIT_BULKHEAD;
	}
}

static void on_cell(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct wait_one *w = arg;
	w->done = true;
	if (err) {
		if (err->code == BH_E_NOT_DISPATCHED)
			printf("Nothing ran (%s): %s\n", bh_refusal_name(err->refusal),
			       cli_out_field(stdout, err->msg));
		else
			printf("The code may have run, and there is no checked answer for it: %s\n",
			       cli_out_field(stdout, err->msg));
		if (r && r->record)
			printf("[record %.12s, version 3]\n", r->record->record_sha256);
		w->status = 1;
		fflush(stdout);
		return;
	}
	cli_out_cell(stdout, r->out, r->out_len);
	cli_out_cell(stdout, r->errout, r->errout_len);
	printf("[exit %d%s%s%s%s%s%s · %.1f ms · record %.12s #%llu]\n", r->exit_code,
	       r->interpreter_started ? " · interpreter_started" : "",
	       r->interpreter_ended ? " · interpreter_ended" : "", r->timed_out ? " · timed_out" : "",
	       r->stdout_truncated ? " · stdout_truncated" : "",
	       r->stderr_truncated ? " · stderr_truncated" : "", r->oom ? " · oom" : "",
	       r->wall_us / 1000.0, r->record->record_sha256,
	       (unsigned long long)r->record->sequence);
	fflush(stdout);
	w->status = r->exit_code;
}

static void on_list(void *arg, const struct bh_file_entry *e, size_t n, bool more, const bh_error *err)
{
	struct wait_one *w = arg;
	w->done = true;
	if (err) {
		printf("cannot list: %s\n", cli_out_field(stdout, err->msg));
		return;
	}
	/* Names and targets are the sandbox's: escaped on a terminal. */
	for (size_t i = 0; i < n; i++) {
		char type[2] = {e[i].type, '\0'};
		printf("%s %10llu  %s", cli_out_field(stdout, type), (unsigned long long)e[i].size,
		       cli_out_field(stdout, e[i].name));
		if (e[i].type == 'l')
			printf(" -> %s", cli_out_field(stdout, e[i].target));
		printf("\n");
	}
	if (more)
		printf("(more entries not shown)\n");
	fflush(stdout);
}

static void on_read(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct wait_one *w = arg;
	w->done = true;
	if (err) {
		printf("cannot read: %s\n", cli_out_field(stdout, err->msg));
		return;
	}
	cli_out_cell(stdout, data, len);
	if (truncated)
		printf("\n(first %zu of %llu bytes)\n", len, (unsigned long long)size);
	fflush(stdout);
}

static void on_close(void *arg, const struct bh_close_result *r, const bh_error *err)
{
	struct wait_one *w = arg;
	w->done = true;
	if (err) {
		printf("close failed: %s\n", cli_out_field(stdout, err->msg));
		return;
	}
	printf("[closed %.12s: %llu calls, last record %.12s, %s]\n", r->fingerprint,
	       (unsigned long long)r->calls, r->last_record_sha256,
	       cli_out_field(stdout, bh_end_reason_name(r->end_reason)));
	fflush(stdout);
}

static int wait_for(bh_engine *e, struct wait_one *w)
{
	bh_error *err = NULL;
	if (bh_engine_wait(e, &w->done, -1, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return -1;
	}
	return 0;
}

char *cli_read_cell(FILE *in)
{
	char *line = NULL, *cell = NULL;
	size_t cap = 0, len = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, in)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		bool more = n > 0 && line[n - 1] == '\\';
		if (more)
			line[--n] = '\0';
		cell = realloc(cell, len + (size_t)n + 2);
		memcpy(cell + len, line, (size_t)n);
		len += (size_t)n;
		cell[len] = '\0';
		if (!more)
			break;
		cell[len++] = '\n';
		cell[len] = '\0';
	}
	free(line);
	return cell;
}

static const char usage[] =
	"usage: bulkhead shell [--tier T] [--floor T] [--lang python|javascript] [--raw]\n"
	"                      [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                      ")
	"\n"
	"A line REPL into one new warm session (a daemon's, attached). Each line is a\n"
	"cell (end it with \\ to go on); :py and :js switch the language, :files [DIR]\n"
	"lists /work, :read PATH prints a file, :close ends the session.\n"
	"  --tier T, --floor T the tier to run on / the weakest one acceptable (none,\n"
	"                      process, container, kernel, vm); attached, only --floor\n"
	"  --lang L            python (default) or javascript\n"
	"  --raw               write output's control bytes as they came\n" CLI_HELP_COMMON
	CLI_HELP_ATTACH CLI_HELP_NO_ATTACH;

int cmd_shell(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct bh_session_opts opts = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN};
	enum bh_language lang = BH_LANG_PYTHON;
	struct cli_attach at = {0};
	bool tier_given = false;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--tier") || !strcmp(a, "--floor")) {
			enum bh_tier t;
			if (!v || bh_tier_parse(v, &t) < 0) {
				cli_error("%s needs one of none, process, container, kernel, vm", a);
				return CLI_EXIT_USAGE;
			}
			*(!strcmp(a, "--tier") ? &opts.tier : &opts.floor) = t;
			tier_given |= !strcmp(a, "--tier");
			i++;
		} else if (!strcmp(a, "--raw")) {
			cli_out_set_raw(true);
		} else if (!strcmp(a, "--lang")) {
			if (!v || bh_language_parse(v, &lang) < 0) {
				cli_error("--lang needs python or javascript (got \"%s\")", v ? v : "");
				return CLI_EXIT_USAGE;
			}
			i++;
		} else {
			return cli_usage_error(usage, "shell: unknown argument \"%s\"", a);
		}
	}
	opts.languages = 1u << lang;
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (client) {
		if (tier_given) {
			cli_error("shell: a daemon gives its sessions its own tier; ask for a minimum "
				  "with --floor");
			bh_client_free(client);
			return CLI_EXIT_USAGE;
		}
		int rc = cli_shell_attached(client, opts.floor, lang);
		bh_client_free(client);
		return rc;
	}
	if (opts.tier != BH_TIER_UNKNOWN)
		c.prove_tiers = 1u << opts.tier;
	bh_engine *e = cli_open_engine(&c, false);
	if (!e)
		return CLI_EXIT_BULKHEAD;
	bh_session *s = NULL;
	struct wait_one w = {0};
	bh_error *err = NULL;
	int status = 0;
	/* ---- ci: attribution: the embedded shell's events name it ---- */
	static const struct bh_actor me = {.name = "shell"};
	opts.actor = me;
	if (bh_session_open(e, &opts, on_open, &w, &s, &err) < 0) {
		fprintf(stderr, "Nothing ran (%s): %s\n", bh_refusal_name(err->refusal),
			cli_out_field(stderr, err->msg));
		bh_error_free(err);
		bh_engine_close(e);
		return CLI_EXIT_BULKHEAD;
	}
	if (wait_for(e, &w) < 0 || w.status) {
		bh_engine_close(e);
		return CLI_EXIT_BULKHEAD;
	}
	printf("[session %.12s · %s tier · %s · :py :js :files :read PATH :close]\n",
	       bh_session_fingerprint(s), bh_tier_name(bh_session_tier(s)), bh_language_name(lang));
	fflush(stdout);
	char *cell;
	bool closed = false;
	while (!closed && (cell = cli_read_cell(stdin))) {
		struct wait_one one = {0};
		int r = 1; /* 1: nothing was started */
		if (!strcmp(cell, ":py") || !strcmp(cell, ":python")) {
			lang = BH_LANG_PYTHON;
		} else if (!strcmp(cell, ":js") || !strcmp(cell, ":javascript")) {
			lang = BH_LANG_JAVASCRIPT;
		} else if (!strcmp(cell, ":files") || !strncmp(cell, ":files ", 7)) {
			r = bh_session_list_files(s, cell[6] ? cell + 7 : "", on_list, &one, &err);
		} else if (!strncmp(cell, ":read ", 6)) {
			r = bh_session_read_file(s, cell + 6, 1u << 20, on_read, &one, &err);
		} else if (!strcmp(cell, ":close")) {
			r = bh_session_close_as(s, &me, on_close, &one, &err);
			closed = true;
		} else if (cell[0] == ':') {
			printf("unknown command %s (:py :js :files [DIR] :read PATH :close)\n",
			       cli_out_field(stdout, cell));
		} else if (*cell) {
			struct bh_cell bc = {.language = lang, .code = cell, .code_len = strlen(cell),
					     .floor = BH_TIER_UNKNOWN};
			r = bh_session_run(s, &bc, on_cell, &one, &err);
		}
		free(cell);
		if (r < 0) {
			if (err->code == BH_E_NOT_DISPATCHED)
				printf("Nothing ran (%s): %s\n", bh_refusal_name(err->refusal),
				       cli_out_field(stdout, err->msg));
			else
				printf("refused: %s\n", cli_out_field(stdout, err->msg));
			bh_error_free(err);
			err = NULL;
			status = 1;
		} else if (r == 0) {
			if (wait_for(e, &one) < 0)
				break;
			status = one.status;
		}
		fflush(stdout);
	}
	if (!closed) {
		struct wait_one one = {0};
		if (bh_session_close_as(s, &me, on_close, &one, &err) == 0)
			wait_for(e, &one);
	}
	bh_engine_close(e);
	return status;
}
