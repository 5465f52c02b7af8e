/* ---- project: bulkhead run --project DIR --step CMD [--step CMD]...
 *                  [--artifact PATH]... [--save-artifacts DIR]
 *                  [--tier T] [--floor T] [--timeout-ms N] [--raw]
 * A project run (plimsoll's ProjectRun) in a fresh sandbox: every regular
 * file under DIR is written into /work at its relative path, the steps run
 * in order by /bin/sh and stop at the first failure, the artifacts come
 * back (and with --save-artifacts are saved under that directory, never
 * over a file that is there). Each step's output is shown as `run` shows a
 * program's; a line per step and one for the outcome go to stderr. Exit:
 * the last step's status when the run completed, 124 when it timed out,
 * 125 when it could not set up or bulkhead failed. ---- */
#include "channel.h"
#include "cli.h"
#include "cli_out.h"
#include "run_grant.h" /* ---- egress ---- */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LIST 256
/* One more than a project may hold, so the engine says how many is too many. */
#define MAX_DIR_FILES (BH_MAX_FILES + 1)

struct project_args {
	struct bh_project req;
	const char *dir;
	const char *save_dir;
	const char *steps[MAX_LIST];
	const char *artifacts[MAX_LIST];
	struct bh_file files[MAX_DIR_FILES];
	struct cli_grant_opts grant; /* ---- egress: --grant ---- */
};

/* The files found under --project, for nftw's callback. */
static struct {
	const char *root;
	size_t root_len;
	struct bh_file *files;
	size_t n, cap;
	int error;
} walk;

static int take_file(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		return 0;
	if (type != FTW_F || !S_ISREG(sb->st_mode)) {
		fprintf(stderr, "bulkhead: %s is not a regular file; it is left out\n", path);
		return 0;
	}
	if (walk.n == walk.cap) {
		walk.error = E2BIG;
		return 1;
	}
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		walk.error = errno;
		return 1;
	}
	uint8_t *data = malloc((size_t)sb->st_size + 1);
	ssize_t got = data ? read(fd, data, (size_t)sb->st_size) : -1;
	close(fd);
	if (got != sb->st_size) {
		free(data);
		walk.error = got < 0 ? errno : EIO;
		return 1;
	}
	walk.files[walk.n++] = (struct bh_file){strdup(path + walk.root_len + 1), data, (size_t)got};
	return 0;
}

static int read_project_dir(struct project_args *a)
{
	walk.root = a->dir;
	walk.root_len = strlen(a->dir);
	while (walk.root_len > 1 && a->dir[walk.root_len - 1] == '/')
		walk.root_len--;
	walk.files = a->files;
	walk.cap = MAX_DIR_FILES;
	if (nftw(a->dir, take_file, 16, FTW_PHYS) != 0 || walk.error) {
		cli_error("--project %s: %s", a->dir,
			  walk.error == E2BIG ? "more files than a project may hold"
					      : strerror(walk.error ? walk.error : errno));
		return -1;
	}
	a->req.files = a->files;
	a->req.n_files = walk.n;
	return 0;
}

static void files_free(struct project_args *a)
{
	for (size_t i = 0; i < walk.n; i++) {
		free((char *)a->files[i].path);
		free((uint8_t *)a->files[i].content);
	}
}

/* DIR/PATH, its directories made first; an existing file is left alone. */
static void save_artifact(const char *dir, const struct bh_artifact *art)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, art->path);
	mkdir(dir, 0755);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	int r = bh_save_file(path, art->content, art->len, false);
	if (r < 0)
		fprintf(stderr, "bulkhead: could not save %s: %s\n", path, strerror(-r));
}

struct project_outcome {
	bool done;
	int status;
	const char *save_dir;
};

static void on_project(void *arg, const struct bh_project_result *res, const bh_error *err)
{
	struct project_outcome *o = arg;
	o->done = true;
	if (err) {
		if (err->code == BH_E_NOT_DISPATCHED)
			fprintf(stderr, "Nothing ran (%s): %s\n", bh_refusal_name(err->refusal),
				cli_out_field(stderr, err->msg));
		else
			fprintf(stderr, "The project may have run, and there is no checked answer for "
					"it: %s\n", cli_out_field(stderr, err->msg));
		o->status = CLI_EXIT_BULKHEAD;
		return;
	}
	for (size_t i = 0; i < res->n_steps; i++) {
		const struct bh_project_step *st = &res->steps[i];
		fprintf(stderr, "$ %s\n", cli_out_field(stderr, st->command));
		cli_out_cell(stdout, st->out, st->out_len);
		fflush(stdout);
		cli_out_cell(stderr, st->errout, st->errout_len);
		fprintf(stderr,
			"bulkhead: step %zu exit=%d timed_out=%s stdout_truncated=%s "
			"stderr_truncated=%s ran_ms=%.1f\n",
			i + 1, st->exit_code, st->timed_out ? "yes" : "no",
			st->stdout_truncated ? "yes" : "no", st->stderr_truncated ? "yes" : "no",
			st->duration_us / 1000.0);
	}
	for (size_t i = 0; i < res->n_artifacts; i++) {
		fprintf(stderr, "bulkhead: artifact %s (%zu bytes)\n",
			cli_out_field(stderr, res->artifacts[i].path), res->artifacts[i].len);
		if (o->save_dir)
			save_artifact(o->save_dir, &res->artifacts[i]);
	}
	fprintf(stderr, "bulkhead: outcome=%s%s%s artifacts_truncated=%s tier=%s record=%.12s\n",
		bh_project_outcome_name(res->outcome), *res->detail ? " detail=" : "",
		*res->detail ? cli_out_field(stderr, res->detail) : "",
		res->artifacts_truncated ? "yes" : "no", bh_tier_name(res->tier),
		res->record ? res->record->record_sha256 : "");
	switch (res->outcome) {
	case BH_PROJECT_COMPLETED:
		o->status = res->n_steps ? res->steps[res->n_steps - 1].exit_code & 0xff : 0;
		break;
	case BH_PROJECT_TIMED_OUT:
		o->status = 124;
		break;
	default:
		o->status = CLI_EXIT_BULKHEAD;
		break;
	}
}

static int parse_args(int argc, char **argv, struct cli_common *c, struct project_args *a)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(c, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		r = cli_grant_opt(&a->grant, argc, argv, &i); /* ---- egress ---- */
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = strcmp(o, "--raw") != 0;
		if (takes && !v) {
			cli_error("%s needs a value", o);
			return -1;
		}
		if (!strcmp(o, "--project")) {
			a->dir = v;
		} else if (!strcmp(o, "--step") || !strcmp(o, "--artifact")) {
			bool step = !strcmp(o, "--step");
			size_t *n = step ? &a->req.n_steps : &a->req.n_artifacts;
			if (*n == MAX_LIST) {
				cli_error("too many %s options", o);
				return -1;
			}
			(step ? a->steps : a->artifacts)[(*n)++] = v;
		} else if (!strcmp(o, "--save-artifacts")) {
			a->save_dir = v;
		} else if (!strcmp(o, "--tier") || !strcmp(o, "--floor")) {
			enum bh_tier t;
			if (bh_tier_parse(v, &t) < 0) {
				cli_error("%s needs one of none, process, container, kernel, vm (got \"%s\")", o, v);
				return -1;
			}
			*(!strcmp(o, "--tier") ? &a->req.tier : &a->req.floor) = t;
		} else if (!strcmp(o, "--timeout-ms")) {
			char *end = NULL;
			unsigned long x = strtoul(v, &end, 10);
			if (!*v || *end || x > UINT32_MAX) {
				cli_error("--timeout-ms needs a whole number, not \"%s\"", v);
				return -1;
			}
			a->req.timeout_ms = (uint32_t)x;
		} else if (!strcmp(o, "--raw")) {
			cli_out_set_raw(true);
		} else {
			cli_error("run --project: unknown option \"%s\"", o);
			return -1;
		}
		if (takes)
			i++;
	}
	if (!a->dir || !a->req.n_steps) {
		cli_error("usage: bulkhead run --project DIR --step CMD [--step CMD]... "
			  "[--artifact PATH]... [--save-artifacts DIR] [--tier T] [--floor T] "
			  "[--timeout-ms N] [--raw] " CLI_GRANT_USAGE);
		return -1;
	}
	a->req.steps = a->steps;
	a->req.artifacts = a->artifacts;
	a->req.grant_profile = a->grant.profile; /* ---- egress ---- */
	return 0;
}

bool cli_run_is_project(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--project"))
			return true;
	return false;
}

int cmd_run_project(int argc, char **argv)
{
	struct cli_common c = {0};
	static struct project_args a;
	memset(&a, 0, sizeof a);
	a.req.tier = a.req.floor = BH_TIER_UNKNOWN;
	if (parse_args(argc, argv, &c, &a) < 0)
		return CLI_EXIT_USAGE;
	if (read_project_dir(&a) < 0)
		return CLI_EXIT_BULKHEAD;
	if (a.req.tier != BH_TIER_UNKNOWN)
		c.prove_tiers = 1u << a.req.tier;
	struct cli_grant *broker = NULL; /* ---- egress ---- */
	if (cli_grant_start(&a.grant, &c, &broker) < 0) {
		files_free(&a);
		return CLI_EXIT_BULKHEAD;
	}
	bh_engine *e = cli_open_engine(&c, false);
	if (!e) {
		cli_grant_stop(broker);
		files_free(&a);
		return CLI_EXIT_BULKHEAD;
	}
	cli_grant_engine(broker, e);
	struct project_outcome o = {.save_dir = a.save_dir};
	bh_error *err = NULL;
	if (bh_run_project(e, &a.req, on_project, &o, &err) < 0) {
		on_project(&o, NULL, err);
		bh_error_free(err);
	} else if (bh_engine_wait(e, &o.done, -1, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		o.status = CLI_EXIT_BULKHEAD;
	}
	cli_grant_engine(broker, NULL);
	bh_engine_close(e);
	cli_grant_stop(broker);
	files_free(&a);
	return o.status;
}
