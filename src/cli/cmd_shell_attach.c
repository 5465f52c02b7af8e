/* bulkhead shell --attach: the same REPL on a session of a daemon. The
 * session is opened and every answer checked through the client (request
 * id, digests, chain), so what it prints is what a plimsoll client would
 * believe. :files and :read go through the operator API by the session's
 * fingerprint, so they need a token with the operator scope too. */
#include "cli.h"
#include "cli_out.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void print_error(const struct bh_client_error *err)
{
	printf("%s\n", cli_out_field(stdout, err->message));
	if (err->unanswered)
		printf("[record %.12s, version 3]\n", err->record.record_sha256);
}

static int run_cell(bh_client_session *s, enum bh_language lang, const char *code)
{
	struct bh_client_cell cell = {.language = lang, .code = code};
	struct wire_session_run_response r;
	struct bh_client_error *err = NULL;
	double t0 = now_ms();
	if (bh_client_session_run(s, &cell, &r, &err) < 0) {
		print_error(err);
		bh_client_error_free(err);
		return 1;
	}
	const struct bh_result_fields *x = &r.run.result;
	cli_out_cell(stdout, x->out, x->out_len);
	cli_out_cell(stdout, x->err, x->err_len);
	printf("[exit %d%s%s%s%s%s · %.1f ms · record %.12s #%llu%s%s]\n", x->exit_code,
	       x->interpreter_started ? " · interpreter_started" : "",
	       x->interpreter_ended ? " · interpreter_ended" : "", x->timed_out ? " · timed_out" : "",
	       x->stdout_truncated ? " · stdout_truncated" : "",
	       x->stderr_truncated ? " · stderr_truncated" : "", now_ms() - t0,
	       r.run.record.record_sha256, (unsigned long long)r.run.record.sequence,
	       r.ended != WIRE_END_OPEN ? " · session ended " : "",
	       r.ended != WIRE_END_OPEN ? wire_session_end_name(r.ended) : "");
	int status = x->exit_code;
	wire_session_run_response_free(&r);
	return status;
}

static void list_files(bh_client *c, const char *fp, const char *path)
{
	struct wire_operator_files f;
	struct bh_client_error *err = NULL;
	if (bh_client_list_files(c, fp, path, &f, &err) < 0) {
		print_error(err);
		bh_client_error_free(err);
		return;
	}
	for (size_t i = 0; i < f.n; i++) {
		const struct bh_file_entry *e = &f.entries[i];
		/* Names and targets are the sandbox's, the rest the daemon's. */
		char t[2] = {e->type ? e->type : '?', '\0'}, size[24];
		snprintf(size, sizeof size, "%llu", (unsigned long long)e->size);
		printf("%s %10s  %s", cli_out_field(stdout, t), size, cli_out_field(stdout, e->name));
		if (*e->target)
			printf(" -> %s", cli_out_field(stdout, e->target));
		printf("\n");
	}
	if (f.more)
		printf("(more entries not shown)\n");
	wire_operator_files_free(&f);
}

static void read_file(bh_client *c, const char *fp, const char *path)
{
	struct wire_operator_file f;
	struct bh_client_error *err = NULL;
	if (bh_client_read_file(c, fp, path, 0, &f, &err) < 0) {
		print_error(err);
		bh_client_error_free(err);
		return;
	}
	cli_out_cell(stdout, f.content, f.len);
	if (f.truncated) {
		char size[24] = "?";
		if (f.size)
			snprintf(size, sizeof size, "%llu", (unsigned long long)f.size);
		printf("\n(first %zu of %s bytes)\n", f.len, size);
	}
	wire_operator_file_free(&f);
}

static void close_session(bh_client_session *s)
{
	struct wire_close_session_response r;
	struct bh_client_error *err = NULL;
	if (bh_client_session_close(s, &r, &err) < 0) {
		printf("close: %s\n", cli_out_field(stdout, err->message));
		bh_client_error_free(err);
		return;
	}
	printf("[closed %.12s: %llu calls, last record %.12s, %s]\n", cli_out_field(stdout, r.session),
	       (unsigned long long)r.calls, cli_out_field(stdout, r.last_record_sha256),
	       wire_session_end_name(r.ended));
	wire_close_session_response_free(&r);
}

int cli_shell_attached(bh_client *client, enum bh_tier floor, enum bh_language lang)
{
	struct bh_client_open_opts o = {.floor = floor, .languages = 1u << lang};
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	if (bh_client_open(client, &o, &s, &err) < 0) {
		fprintf(stderr, "%s\n", cli_out_field(stderr, err->message));
		if (err->code == WIRE_UNAUTHENTICATED)
			fprintf(stderr, "bulkhead: give the daemon's token in $%s or with "
					"--token-file FILE\n", BH_CLIENT_TOKEN_ENV);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	struct bh_client_session_view v;
	bh_client_session_get(s, &v);
	char fp[65];
	snprintf(fp, sizeof fp, "%s", v.fingerprint);
	printf("[session %.12s · %s tier · %s · attached to %s · :py :js :files :read PATH :close]\n",
	       cli_out_field(stdout, fp), cli_out_field(stdout, v.isolation), bh_language_name(lang),
	       cli_out_field(stdout, bh_client_target(client)));
	fflush(stdout);
	char *cell;
	bool closed = false;
	int status = 0;
	while (!closed && (cell = cli_read_cell(stdin))) {
		if (!strcmp(cell, ":py") || !strcmp(cell, ":python"))
			lang = BH_LANG_PYTHON;
		else if (!strcmp(cell, ":js") || !strcmp(cell, ":javascript"))
			lang = BH_LANG_JAVASCRIPT;
		else if (!strcmp(cell, ":files") || !strncmp(cell, ":files ", 7))
			list_files(client, fp, cell[6] ? cell + 7 : "");
		else if (!strncmp(cell, ":read ", 6))
			read_file(client, fp, cell + 6);
		else if (!strcmp(cell, ":close"))
			closed = true;
		else if (cell[0] == ':')
			printf("unknown command %s (:py :js :files [DIR] :read PATH :close)\n",
			       cli_out_field(stdout, cell));
		else if (*cell)
			status = run_cell(s, lang, cell);
		free(cell);
		fflush(stdout);
	}
	close_session(s);
	fflush(stdout);
	bh_client_session_free(s);
	return status;
}
