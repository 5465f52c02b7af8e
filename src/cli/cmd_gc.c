/* bulkhead leaks [--json] [--state DIR | --db FILE]: what is alive that nothing should
 * hold — orphans in the runtime, abandoned sandboxes of a dead engine, ghost
 * registry rows, images nothing will restore, stray cgroups.
 * bulkhead gc [--dry-run] [--state DIR]: the same findings, reaped (each
 * reap is an event in the store). Both take the state directory without
 * collecting anything at open, so what they report is what was there.
 * A daemon holding the state directory (or one named with --attach) is
 * asked instead, through the operator API: it holds the lock, and its
 * engine is the one that knows what it holds. --db FILE reads a copy of a
 * store read-only: its live rows whose engine is gone (bh_history_leaks). */
#include "cli.h"
#include "cli_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static void quiet(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	/* Warnings too: a link not followed in the state directory is one. */
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "bulkhead: %s\n", cli_out_field(stderr, msg));
}

static void print_findings(const struct bh_leak *v, size_t n, bool json, const char *verb)
{
	bool preview = verb && !strcmp(verb, "would be reaped"); /* inflight */
	if (json) {
		cJSON *list = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "kind", bh_leak_kind_name(v[i].kind));
			cJSON_AddStringToObject(o, "sandbox", v[i].sandbox);
			cJSON_AddStringToObject(o, "session", v[i].fingerprint);
			cJSON_AddStringToObject(o, "runtime", v[i].runtime);
			cJSON_AddStringToObject(o, "reason", v[i].reason);
			cJSON_AddStringToObject(o, "holder", v[i].holder);
			cJSON_AddNumberToObject(o, "firstSeenUnixMs", (double)v[i].first_seen_ms);
			if (preview) { /* inflight */
				char what[256];
				bh_leak_removal(&v[i], what, sizeof what);
				cJSON_AddStringToObject(o, "wouldRemove", what);
			}
			cJSON_AddItemToArray(list, o);
		}
		cli_print_json(list);
		return;
	}
	if (!n) {
		printf("no leaks: every sandbox, row, image and cgroup is accounted for\n");
		return;
	}
	printf("%-13s %-22s %-12s %s\n", "KIND", "SANDBOX", "SESSION", "REASON");
	/* Names, reasons and holders come from the runtime, the store or a
	 * daemon: escaped on a terminal (the session cut after escaping). */
	for (size_t i = 0; i < n; i++) {
		char fp[13];
		snprintf(fp, sizeof fp, "%s",
			 cli_out_field(stdout, v[i].fingerprint[0] ? v[i].fingerprint : "-"));
		printf("%-13s %-22s %-12.12s %s (%s)\n", bh_leak_kind_name(v[i].kind),
		       cli_out_field(stdout, v[i].sandbox), fp, cli_out_field(stdout, v[i].reason),
		       cli_out_field(stdout, v[i].holder));
		/* ---- inflight: the dry run's preview, as the console's ---- */
		if (preview) {
			char what[256];
			bh_leak_removal(&v[i], what, sizeof what);
			printf("%-13s would remove: %s\n", "", cli_out_field(stdout, what));
		}
	}
	if (verb)
		printf("%zu %s\n", n, verb);
}

/* The daemon's answer, printed as the embedded one would be. */
static int attached(bh_client *client, bool gc, bool dry, bool json)
{
	struct wire_operator_leaks v;
	struct bh_client_error *err = NULL;
	int rc = gc ? bh_client_gc(client, dry, &v, &err) : bh_client_leaks(client, &v, &err);
	if (rc < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	print_findings(v.leaks, v.n, json, gc ? (dry ? "would be reaped" : "reaped") : NULL);
	size_t n = v.n;
	wire_operator_leaks_free(&v);
	return !gc && n ? 1 : 0;
}

/* ---- light: leaks --db COPY, a store opened read-only (B24) ---- */
static int leaks_of_copy(const char *db, bool json)
{
	bh_history *h = NULL;
	bh_error *err = NULL;
	struct bh_leak *v = NULL;
	size_t n = 0;
	if (bh_history_open(db, &h, &err) < 0 || bh_history_leaks(h, &v, &n, &err) < 0) {
		cli_error("leaks: %s", err ? err->msg : "cannot read the store");
		bh_error_free(err);
		bh_history_close(h);
		return CLI_EXIT_BULKHEAD;
	}
	print_findings(v, n, json, NULL);
	free(v);
	bh_history_close(h);
	return n ? 1 : 0;
}

static const char gc_usage[] =
	"usage: bulkhead gc [--dry-run] [--json] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                   ")
	"\n"
	"Reaps what leaks finds: sandboxes, rows, images and cgroups nothing holds (a\n"
	"daemon's engine reaps when one holds the state directory).\n"
	"  --dry-run           only say what would be reaped\n"
	"  --json              the findings as JSON\n" CLI_HELP_COMMON CLI_HELP_ATTACH
	CLI_HELP_NO_ATTACH;

static const char leaks_usage[] =
	"usage: bulkhead leaks [--json] [--state DIR | --db FILE] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                      ")
	"\n"
	"Lists the sandboxes, rows, images and cgroups nothing should hold (read-only).\n"
	"  --json              the findings as JSON\n"
	"  --db FILE           a copy of a store instead (bulkhead backup): only its rows\n"
	CLI_HELP_COMMON CLI_HELP_ATTACH CLI_HELP_NO_ATTACH
	"Exit: 0 nothing leaked, 1 something did, 2 usage, 125 bulkhead failed.\n";

static int run(int argc, char **argv, bool gc)
{
	const char *usage = gc ? gc_usage : leaks_usage;
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	const char *db = NULL; /* ---- light ---- */
	struct cli_common c = {0};
	struct cli_attach at = {0};
	bool json = false, dry = !gc;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (gc && !strcmp(argv[i], "--dry-run"))
			dry = true;
		else if (!gc && !strcmp(argv[i], "--db") && i + 1 < argc) /* ---- light ---- */
			db = argv[++i];
		else {
			return cli_usage_error(usage, "%s: unknown argument \"%s\"", gc ? "gc" : "leaks",
					       argv[i]);
		}
	}
	if (db) /* ---- light: a copy of a store, nothing else looked at ---- */
		return leaks_of_copy(db, json);
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (client) {
		int rc = attached(client, gc, dry, json);
		bh_client_free(client);
		return rc;
	}
	/* Looking is read-only; reaping holds the lock. */
	bh_engine *e = dry ? cli_open_engine_inspect(&c, quiet) : cli_open_engine_collect(&c, quiet);
	if (!e)
		return CLI_EXIT_BULKHEAD;
	struct bh_leak *v = NULL;
	size_t n = dry ? bh_engine_leaks(e, &v) : bh_engine_gc(e, &v);
	print_findings(v, n, json, gc ? (dry ? "would be reaped" : "reaped") : NULL);
	free(v);
	bh_engine_close(e);
	/* leaks: a non-zero status when something leaked, for scripts. */
	return !gc && n ? 1 : 0;
}

int cmd_leaks(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_gc(int argc, char **argv)
{
	return run(argc, argv, true);
}
