#include "cli.h"
#include "cli_out.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
	/* Errors carry what a daemon or a store said: escaped on a terminal. */
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	fprintf(stderr, "bulkhead: %s\n", cli_out_field(stderr, msg ? msg : fmt));
	free(msg);
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

int cli_help(const char *usage)
{
	fputs(usage, stdout);
	return 0;
}

int cli_usage_error(const char *usage, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	cli_error("%s", msg ? msg : fmt);
	free(msg);
	/* The usage is ours, not anyone's bytes: written as it is. */
	fputs(usage, stderr);
	return CLI_EXIT_USAGE;
}

static void log_to_stderr(void *arg, enum bh_log_level level, const char *msg)
{
	const struct cli_common *c = arg;
	static const char *const names[] = {"debug", "info", "warning", "error"};
	int min = c->verbose >= 2 ? BH_LOG_DEBUG : c->verbose == 1 ? BH_LOG_INFO : BH_LOG_WARN;
	if ((int)level >= min)
		fprintf(stderr, "bulkhead: %s: %s\n", names[level], cli_out_field(stderr, msg));
}

int cli_common_opt(struct cli_common *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
		c->verbose++;
		return 1;
	}
	if (!strcmp(a, "--state")) {
		if (*i + 1 >= argc) {
			cli_error("--state needs a directory");
			return -1;
		}
		c->state_dir = argv[++*i];
		return 1;
	}
	if (!strncmp(a, "--state=", 8)) {
		c->state_dir = a + 8;
		return 1;
	}
	return 0;
}

/* The first of `tries` (printf patterns taking the binary's directory)
 * where `probe` exists, unless the environment variable names it. */
static const char *find_beside_binary(const char *env_name, const char *const *tries, size_t n,
				      const char *probe, char *path, size_t pathlen)
{
	const char *env = getenv(env_name);
	if (env && *env)
		return env;
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return NULL;
	self[len] = '\0';
	const char *dir = dirname(self);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, pathlen, tries[i], dir);
		char check[PATH_MAX + 32];
		snprintf(check, sizeof check, "%s%s", path, probe);
		if (access(check, R_OK) == 0)
			return path;
	}
	return NULL;
}

/* The init ships next to the binary (build tree) or in lib/bulkhead. */
static const char *find_init(void)
{
	static const char *const tries[] = {"%s/bulkhead-init", "%s/../lib/bulkhead/bulkhead-init"};
	static char path[PATH_MAX];
	return find_beside_binary("BULKHEAD_INIT", tries, 2, "", path, sizeof path);
}

/* The cell servers: the source tree's data/interp next to a build
 * directory, or an installed share/bulkhead/interp. */
static const char *find_interp(void)
{
	static const char *const tries[] = {"%s/../data/interp", "%s/../share/bulkhead/interp",
					    "%s/../../data/interp"};
	static char path[PATH_MAX];
	return find_beside_binary("BULKHEAD_INTERP", tries, 3, "/python/cell.py", path, sizeof path);
}

bh_engine *cli_open_engine(const struct cli_common *c, bool reprove)
{
	return cli_open_engine_with(c, reprove, false, NULL);
}

enum open_mode { OPEN_FULL, OPEN_COLLECT, OPEN_READ };
static bh_engine *open_engine(const struct cli_common *c, bool reprove, bool skip_proofs,
			      enum open_mode mode, bh_log_fn log);

bh_engine *cli_open_engine_with(const struct cli_common *c, bool reprove, bool skip_proofs,
				bh_log_fn log)
{
	return open_engine(c, reprove, skip_proofs, OPEN_FULL, log);
}

bh_engine *cli_open_engine_inspect(const struct cli_common *c, bh_log_fn log)
{
	return open_engine(c, false, true, OPEN_READ, log);
}

bh_engine *cli_open_engine_collect(const struct cli_common *c, bh_log_fn log)
{
	return open_engine(c, false, true, OPEN_COLLECT, log);
}

int cli_engine_config(const struct cli_common *c, struct bh_config *cfg)
{
	const char *init = find_init();
	if (!init) {
		cli_error("cannot find bulkhead-init next to this binary; set BULKHEAD_INIT");
		return -1;
	}
	const char *interp = find_interp();
	if (!interp) {
		cli_error("cannot find the cell servers (data/interp); set BULKHEAD_INTERP");
		return -1;
	}
	*cfg = (struct bh_config){
		.state_dir = c->state_dir,
		.init_path = init,
		.interp_dir = interp,
		.log = log_to_stderr,
		.log_arg = (void *)c,
		/* Proven evidence can be shared between state directories. */
		.evidence_dir = getenv("BULKHEAD_EVIDENCE"),
	};
	return 0;
}

static bh_engine *open_engine(const struct cli_common *c, bool reprove, bool skip_proofs,
			      enum open_mode mode, bh_log_fn log)
{
	struct bh_config cfg;
	if (cli_engine_config(c, &cfg) < 0)
		return NULL;
	if (log)
		cfg.log = log;
	cfg.reprove = reprove;
	cfg.prove_tiers = c->prove_tiers;
	cfg.skip_proofs = skip_proofs;
	cfg.inspect_only = mode != OPEN_FULL;
	cfg.read_only = mode == OPEN_READ;
	/* ---- egress: run --grant's broker ---- */
	cfg.egress = c->egress;
	cfg.egress_arg = c->egress_arg;
	bh_engine *e = NULL;
	bh_error *err = NULL;
	if (bh_engine_open(&cfg, &e, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return NULL;
	}
	return e;
}

int cli_wait_proven(bh_engine *e)
{
	while (!bh_engine_proven(e)) {
		bh_error *err = NULL;
		bool never = false;
		/* Waits in short slices so the proven flag is checked often. */
		if (bh_engine_wait(e, &never, 50, &err) < 0 && err->code != BH_E_TIMEOUT) {
			cli_error("%s", err->msg);
			bh_error_free(err);
			return -1;
		}
		bh_error_free(err);
	}
	return 0;
}

void cli_print_json(cJSON *doc)
{
	char *text = cJSON_Print(doc);
	if (!text)
		abort();
	cli_out_json(stdout, text);
	putchar('\n');
	cJSON_free(text);
	cJSON_Delete(doc);
}
