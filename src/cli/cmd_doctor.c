/* bulkhead doctor [--json]: prove every tier now (never from the cache) and
 * print each one's evidence, line by line, with what was expected. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static void interpreters(bh_engine *e, cJSON *json);

static void print_text(bh_engine *e)
{
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(e, &t);
	printf("bulkhead %s, state %s\n", BULKHEAD_VERSION, bh_engine_state_dir(e));
	for (size_t i = 0; i < n; i++) {
		printf("\n%-9s %s", bh_tier_name(t[i].tier), t[i].offered ? "offered" : "not offered");
		if (*t[i].runtime)
			printf("  (%s%s%s)", t[i].runtime, *t[i].version ? ": " : "", t[i].version);
		printf("\n");
		if (!t[i].offered && *t[i].reason)
			printf("  reason: %s\n", t[i].reason);
		for (size_t j = 0; j < t[i].n_lines; j++) {
			const struct bh_evidence_line *l = &t[i].lines[j];
			printf("  %-4s %-28s %s", l->ok ? "ok" : "FAIL", l->name, l->value);
			if (!l->ok || strcmp(l->value, l->expect))
				printf("   (expected %s)", l->expect);
			printf("\n");
		}
	}
	enum bh_tier best = bh_engine_best_tier(e);
	printf("\nstrongest tier offered: %s\n", bh_tier_name(best));
	const struct bh_policy *p = bh_engine_policy(e);
	printf("\nlifecycle (defaults; settings of the engine)\n");
	printf("  idle %u s -> paused (memory kept; both tiers)\n", p->idle_ms / 1000);
	printf("  paused %u s -> kernel: hibernated to disk (runsc checkpoint); container: closed "
	       "idle_closed (no working CRIU on this host)\n",
	       p->hibernate_after_ms / 1000);
	printf("  lifetime %u s of awake time -> expired; retention %llu s hibernated -> "
	       "retention_expired\n",
	       p->lifetime_ms / 1000, (unsigned long long)(p->retention_ms / 1000));
	printf("  hibernation images: %u MiB in all, the oldest deleted first past it "
	       "(retention_expired); %u MiB of files per session (disk_exceeded)\n",
	       p->images_budget_mb, p->disk_budget_mb);
	printf("  caps: %u sessions, %u per caller, %u per owner (least recently used idle one "
	       "replaced), %u MiB of sandbox memory\n",
	       p->max_sessions, p->max_per_principal, p->max_per_owner, p->memory_budget_mb);
	printf("  history: records of sessions ended more than %u days ago, and older events, are "
	       "pruned\n",
	       p->history_days);
	printf("  disk: a new session is refused while the state directory has less than %u MiB "
	       "free (open sessions go on)\n",
	       p->state_min_free_mb);
	if (p->pool_size)
		printf("  warm pool: %u never-used sandboxes per pooled tier, replaced after %u s unused\n",
		       p->pool_size, p->pool_max_age_ms / 1000);
	else
		printf("  warm pool: off (bulkhead serve --pool N keeps N sandboxes ready)\n");
	if (best != BH_TIER_UNKNOWN)
		interpreters(e, NULL);
}

static void print_json(bh_engine *e)
{
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(e, &t);
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "version", BULKHEAD_VERSION);
	cJSON_AddStringToObject(root, "stateDir", bh_engine_state_dir(e));
	cJSON_AddStringToObject(root, "strongestTier", bh_tier_name(bh_engine_best_tier(e)));
	cJSON *tiers = cJSON_AddArrayToObject(root, "tiers");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "tier", bh_tier_name(t[i].tier));
		cJSON_AddBoolToObject(o, "offered", t[i].offered);
		cJSON_AddStringToObject(o, "runtime", t[i].runtime);
		cJSON_AddStringToObject(o, "runtimeVersion", t[i].version);
		cJSON_AddStringToObject(o, "reason", t[i].reason);
		cJSON *lines = cJSON_AddArrayToObject(o, "evidence");
		for (size_t j = 0; j < t[i].n_lines; j++) {
			cJSON *l = cJSON_CreateObject();
			cJSON_AddStringToObject(l, "check", t[i].lines[j].name);
			cJSON_AddStringToObject(l, "value", t[i].lines[j].value);
			cJSON_AddStringToObject(l, "expect", t[i].lines[j].expect);
			cJSON_AddBoolToObject(l, "ok", t[i].lines[j].ok);
			cJSON_AddItemToArray(lines, l);
		}
		cJSON_AddItemToArray(tiers, o);
	}
	if (bh_engine_best_tier(e) != BH_TIER_UNKNOWN)
		interpreters(e, root);
	char *s = cJSON_Print(root);
	puts(s);
	cJSON_free(s);
	cJSON_Delete(root);
}

/* What cells can use: the interpreters and the analysis stack, as seen from
 * inside a sandbox of the strongest tier (the sandbox sees the host's /usr). */
struct probe_run {
	bool done;
	char out[1024];
};

static void on_interp(void *arg, const struct bh_exec_result *res, const bh_error *err)
{
	struct probe_run *p = arg;
	p->done = true;
	if (err)
		snprintf(p->out, sizeof p->out, "unavailable: %s", err->msg);
	else
		snprintf(p->out, sizeof p->out, "%.*s", (int)res->out_len, (const char *)res->out);
}

static void interpreters(bh_engine *e, cJSON *json)
{
	static const char *const py[] = {
		"/usr/bin/python3", "-I", "-c",
		"import sys, importlib\n"
		"print('python', sys.version.split()[0])\n"
		"for m in ('numpy', 'pandas', 'matplotlib'):\n"
		"    try:\n"
		"        print(m, importlib.import_module(m).__version__)\n"
		"    except Exception as x:\n"
		"        print(m, 'missing (%s)' % type(x).__name__)\n",
		NULL};
	static const char *const js[] = {"/usr/bin/node", "-e", "console.log('node', process.version)",
					 NULL};
	const char *const *progs[] = {py, js};
	cJSON *list = json ? cJSON_AddArrayToObject(json, "interpreters") : NULL;
	if (!json)
		printf("\ninterpreters (inside a %s sandbox)\n", bh_tier_name(bh_engine_best_tier(e)));
	for (size_t i = 0; i < 2; i++) {
		struct probe_run p = {0};
		struct bh_exec_request req = {.tier = BH_TIER_UNKNOWN, .floor = BH_TIER_UNKNOWN,
					      .argv = progs[i], .timeout_ms = 60000};
		bh_error *err = NULL;
		if (bh_exec(e, &req, on_interp, &p, &err) < 0) {
			on_interp(&p, NULL, err);
			bh_error_free(err);
		} else if (bh_engine_wait(e, &p.done, 120000, &err) < 0) {
			snprintf(p.out, sizeof p.out, "unavailable: %s", err->msg);
			bh_error_free(err);
		}
		for (char *save = NULL, *l = strtok_r(p.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			if (list)
				cJSON_AddItemToArray(list, cJSON_CreateString(l));
			else
				printf("  %s\n", l);
		}
	}
}

static const char usage[] =
	"usage: bulkhead doctor [--json] [--state DIR] [-v]\n"
	"\n"
	"Proves every isolation tier now (reproving what was proven before) and prints\n"
	"each one's evidence.\n"
	"  --json              the evidence as JSON\n" CLI_HELP_COMMON
	"Exit: 0 proven, 1 no tier is available on this host, 125 bulkhead failed.\n";

int cmd_doctor(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	bool json = false;
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&c, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		return cli_usage_error(usage, "doctor: unknown argument \"%s\"", argv[i]);
	}
	bh_engine *e = cli_open_engine(&c, true);
	if (!e)
		return CLI_EXIT_BULKHEAD;
	int rc = 0;
	if (cli_wait_proven(e) < 0)
		rc = CLI_EXIT_BULKHEAD;
	else if (json)
		print_json(e);
	else
		print_text(e);
	/* A host that offers no tier at all cannot serve: say so in the status. */
	if (rc == 0 && bh_engine_best_tier(e) == BH_TIER_UNKNOWN)
		rc = 1;
	bh_engine_close(e);
	return rc;
}
