/* bulkhead run [--tier T] [--floor T] [--lang python|javascript]
 *              [--timeout-ms N] [--output-cap N] [--raw]
 *              [--grant PROFILE --profiles FILE [--upstream-ca PEM]] CODE|-
 * One fresh sandbox runs the code, prints its output, and is deleted. On a
 * terminal the output's control bytes are shown escaped (cli_out.h);
 * --raw writes them as the code did. With --grant (javascript only, as
 * plimsoll's grantProfile) the run is a snippet holding the profile. */
#include "cli.h"
#include "cli_out.h"
#include "run_grant.h" /* ---- egress ---- */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct run_outcome {
	bool done;
	int status;
};

static void on_result(void *arg, const struct bh_exec_result *res, const bh_error *err)
{
	struct run_outcome *o = arg;
	o->done = true;
	if (err) {
		if (err->code == BH_E_NOT_DISPATCHED)
			fprintf(stderr, "Nothing ran (%s): %s\n", bh_refusal_name(err->refusal),
				cli_out_field(stderr, err->msg));
		else
			fprintf(stderr, "The code may have run, and there is no checked answer for it: %s\n",
				cli_out_field(stderr, err->msg));
		o->status = CLI_EXIT_BULKHEAD;
		return;
	}
	/* Each stream escaped when it is a terminal (--raw: as written). */
	cli_out_cell(stdout, res->out, res->out_len);
	fflush(stdout);
	cli_out_cell(stderr, res->errout, res->errout_len);
	fprintf(stderr,
		"bulkhead: exit=%d timed_out=%s stdout_truncated=%s stderr_truncated=%s oom=%s "
		"tier=%s ran_ms=%.1f wall_ms=%.1f\n",
		res->exit_code, res->timed_out ? "yes" : "no", res->stdout_truncated ? "yes" : "no",
		res->stderr_truncated ? "yes" : "no", res->oom ? "yes" : "no", bh_tier_name(res->tier),
		res->duration_us / 1000.0, res->wall_us / 1000.0);
	o->status = res->exit_code & 0xff;
}

/* ---- egress: a granted javascript run's answer (a snippet: its record) ---- */
static void on_snippet(void *arg, const struct bh_snippet_result *res, const bh_error *err)
{
	struct run_outcome *o = arg;
	if (err) {
		on_result(arg, NULL, err);
		return;
	}
	o->done = true;
	cli_out_cell(stdout, res->out, res->out_len);
	fflush(stdout);
	cli_out_cell(stderr, res->errout, res->errout_len);
	fprintf(stderr,
		"bulkhead: exit=%d timed_out=%s stdout_truncated=%s stderr_truncated=%s tier=%s "
		"ran_ms=%.1f wall_ms=%.1f record=%.12s\n",
		res->exit_code, res->timed_out ? "yes" : "no", res->stdout_truncated ? "yes" : "no",
		res->stderr_truncated ? "yes" : "no", bh_tier_name(res->tier),
		res->duration_us / 1000.0, res->wall_us / 1000.0,
		res->record ? res->record->record_sha256 : "");
	o->status = res->exit_code & 0xff;
}

#define RUN_USAGE                                                                       \
	"usage: bulkhead run [--tier T] [--floor T] [--lang python|javascript]\n"      \
	"                    [--timeout-ms N] [--output-cap N] [--raw]\n"              \
	"                    " CLI_GRANT_USAGE " CODE|-\n"                             \
	"       bulkhead run --project DIR --step CMD [--step CMD]... [--artifact P]...\n" \
	"                    [--save-artifacts DIR] [--tier T] [--floor T]\n"          \
	"                    [--timeout-ms N] [--raw]\n"                               \
	"                    " CLI_GRANT_USAGE "\n"

static const char run_help[] = RUN_USAGE
	"Runs code once in a fresh sandbox (deleted after), or a project: DIR's files in\n"
	"/work, the steps in order by /bin/sh, stopping at the first that fails.\n"
	"  --tier T, --floor T the tier to run on / the weakest one acceptable\n"
	"  --lang L            python (default) or javascript\n"
	"  --timeout-ms N      the run's budget\n"
	"  --output-cap N      bytes kept per stream\n"
	"  --raw               write output's control bytes as they came\n" CLI_GRANT_HELP
	CLI_HELP_COMMON
	"Exit: the code's (or the last step's) status; 124 at the deadline; 125 when\n"
	"bulkhead refused or failed.\n";

static char *read_all_stdin(size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

static int parse_u32(const char *opt, const char *v, uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long x = v ? strtoul(v, &end, 10) : 0;
	if (!v || !*v || *end || errno || x > UINT32_MAX) {
		cli_error("%s needs a whole number, not \"%s\"", opt, v ? v : "");
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) /* ---- egress: --help ---- */
		return cli_help(run_help);
	if (cli_run_is_project(argc, argv)) /* ---- project ---- */
		return cmd_run_project(argc, argv);
	struct cli_common c = {0};
	struct cli_grant_opts grant = {0}; /* ---- egress ---- */
	struct bh_exec_request req = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN};
	const char *lang = "python", *code = NULL;
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&c, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		r = cli_grant_opt(&grant, argc, argv, &i); /* ---- egress ---- */
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--tier") || !strcmp(a, "--floor")) {
			enum bh_tier t;
			if (!v || bh_tier_parse(v, &t) < 0) {
				cli_error("%s needs one of none, process, container, kernel, vm (got \"%s\")", a,
					  v ? v : "");
				return CLI_EXIT_USAGE;
			}
			*(!strcmp(a, "--tier") ? &req.tier : &req.floor) = t;
			i++;
		} else if (!strcmp(a, "--lang")) {
			if (!v || (strcmp(v, "python") && strcmp(v, "javascript"))) {
				cli_error("--lang needs python or javascript (got \"%s\")", v ? v : "");
				return CLI_EXIT_USAGE;
			}
			lang = v;
			i++;
		} else if (!strcmp(a, "--timeout-ms")) {
			if (parse_u32(a, v, &req.timeout_ms) < 0)
				return CLI_EXIT_USAGE;
			i++;
		} else if (!strcmp(a, "--raw")) {
			cli_out_set_raw(true);
		} else if (!strcmp(a, "--output-cap")) {
			if (parse_u32(a, v, &req.output_cap) < 0)
				return CLI_EXIT_USAGE;
			i++;
		} else if (a[0] == '-' && a[1] != '\0') {
			cli_error("run: unknown option \"%s\"", a);
			return CLI_EXIT_USAGE;
		} else if (!code) {
			code = a;
		} else {
			cli_error("run: give the code as one argument (or - to read it from stdin)");
			return CLI_EXIT_USAGE;
		}
	}
	if (!code) {
		fputs(RUN_USAGE, stderr);
		return CLI_EXIT_USAGE;
	}
	/* ---- egress: plimsoll's grants are on javascript and project runs ---- */
	if (grant.profile && strcmp(lang, "javascript")) {
		cli_error("--grant holds a profile for a javascript run or a project (plimsoll's "
			  "grantProfile), not a %s one: add --lang javascript, or use --project",
			  lang);
		return CLI_EXIT_USAGE;
	}
	size_t len = 0;
	char *input = !strcmp(code, "-") ? read_all_stdin(&len) : strdup(code);
	if (strcmp(code, "-"))
		len = strlen(input);
	/* The code goes in on stdin, so its size is not bound by argv limits. */
	static const char *const py[] = {"/usr/bin/python3", "-I", "-", NULL};
	static const char *const js[] = {"/usr/bin/node", "-", NULL};
	req.argv = !strcmp(lang, "python") ? py : js;
	req.input = input;
	req.input_len = len;

	if (req.tier != BH_TIER_UNKNOWN)
		c.prove_tiers = 1u << req.tier;
	struct cli_grant *broker = NULL; /* ---- egress ---- */
	if (cli_grant_start(&grant, &c, &broker) < 0) {
		free(input);
		return CLI_EXIT_BULKHEAD;
	}
	bh_engine *e = cli_open_engine(&c, false);
	if (!e) {
		cli_grant_stop(broker);
		free(input);
		return CLI_EXIT_BULKHEAD;
	}
	cli_grant_engine(broker, e);
	struct run_outcome o = {0};
	bh_error *err = NULL;
	int started;
	if (grant.profile) { /* ---- egress: a snippet holding the profile ---- */
		struct bh_snippet sn = {
			.tier = req.tier,
			.floor = req.floor,
			.code = input,
			.code_len = len,
			.timeout_ms = req.timeout_ms,
			.output_cap = req.output_cap,
			.grant_profile = grant.profile,
		};
		started = bh_run_javascript(e, &sn, on_snippet, &o, &err);
	} else {
		started = bh_exec(e, &req, on_result, &o, &err);
	}
	if (started < 0) {
		on_result(&o, NULL, err);
		bh_error_free(err);
	} else if (bh_engine_wait(e, &o.done, -1, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		o.status = CLI_EXIT_BULKHEAD;
	}
	cli_grant_engine(broker, NULL);
	bh_engine_close(e);
	cli_grant_stop(broker);
	free(input);
	return o.status;
}
