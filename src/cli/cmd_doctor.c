/* bulkhead doctor [--json]: prove every tier now (never from the cache) and
 * print each one's evidence, line by line, with what was expected. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

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
	char *s = cJSON_Print(root);
	puts(s);
	cJSON_free(s);
	cJSON_Delete(root);
}

int cmd_doctor(int argc, char **argv)
{
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
		cli_error("doctor: unknown argument \"%s\" (usage: bulkhead doctor [--json] [--state DIR])",
			  argv[i]);
		return CLI_EXIT_USAGE;
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
