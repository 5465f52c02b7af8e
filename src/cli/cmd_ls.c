/* bulkhead ls [--json] [--attach SOCKET|URL] [--token-file FILE] [--no-attach]:
 * the sessions a daemon holds — fingerprint prefix, state, tier, owner,
 * calls, age. Live sessions belong to the process that runs them, so ls
 * asks that daemon (named with --attach, or found holding the state
 * directory). Without one it opens the state directory itself, and an
 * engine of its own has no live session of anyone else's: it says so. */
#include "cli.h"
#include "cli_out.h"

#include <cjson/cJSON.h>
#include <string.h>
#include <time.h>

/* "45s", "12m", "3h", "2d". */
static void age(int64_t since_ms, char *out, size_t len)
{
	int64_t s = since_ms > 0 ? ((int64_t)now_real_ms() - since_ms) / 1000 : 0;
	if (since_ms <= 0)
		snprintf(out, len, "-");
	else if (s < 120)
		snprintf(out, len, "%llds", (long long)(s < 0 ? 0 : s));
	else if (s < 7200)
		snprintf(out, len, "%lldm", (long long)s / 60);
	else if (s < 172800)
		snprintf(out, len, "%lldh", (long long)s / 3600);
	else
		snprintf(out, len, "%lldd", (long long)s / 86400);
}

static void print_sessions(const struct wire_operator_session *v, size_t n, bool json)
{
	if (json) {
		cJSON *list = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "session", v[i].fingerprint);
			cJSON_AddStringToObject(o, "state", v[i].state);
			cJSON_AddStringToObject(o, "isolation", v[i].isolation);
			cJSON_AddStringToObject(o, "minimumIsolation", v[i].floor);
			cJSON_AddStringToObject(o, "owner", v[i].owner);
			cJSON_AddStringToObject(o, "principal", v[i].principal);
			cJSON_AddStringToObject(o, "sandbox", v[i].sandbox);
			cJSON_AddNumberToObject(o, "calls", (double)v[i].calls);
			cJSON_AddStringToObject(o, "lastRecordSha256", v[i].last_record_sha256);
			cJSON_AddNumberToObject(o, "createdUnixMs", (double)v[i].created_unix_ms);
			cJSON_AddNumberToObject(o, "expiresUnixMs", (double)v[i].expires_unix_ms);
			cJSON_AddStringToObject(o, "endReason", v[i].end_reason);
			cJSON_AddItemToArray(list, o);
		}
		cli_print_json(list);
		return;
	}
	printf("%-12s  %-11s  %-9s  %-12s  %5s  %s\n", "SESSION", "STATE", "TIER", "OWNER", "CALLS",
	       "AGE");
	for (size_t i = 0; i < n; i++) {
		char a[16];
		age(v[i].created_unix_ms, a, sizeof a);
		/* Every string is the daemon's (or the store's): escaped on a
		 * terminal, then cut to its column. */
		char fp[13], owner[13];
		snprintf(fp, sizeof fp, "%s", cli_out_field(stdout, v[i].fingerprint));
		snprintf(owner, sizeof owner, "%s", cli_out_field(stdout, *v[i].owner ? v[i].owner : "-"));
		printf("%-12.12s  %-11s  %-9s  %-12.12s  %5llu  %s\n", fp, cli_out_field(stdout, v[i].state),
		       cli_out_field(stdout, v[i].isolation), owner, (unsigned long long)v[i].calls, a);
	}
}

static int attached(bh_client *c, bool json)
{
	struct wire_operator_sessions list;
	struct bh_client_error *err = NULL;
	if (bh_client_list_sessions(c, NULL, &list, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	print_sessions(list.sessions, list.n, json);
	wire_operator_sessions_free(&list);
	return 0;
}

static void quiet(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	/* Warnings too: a link not followed in the state directory is one. */
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "bulkhead: %s\n", cli_out_field(stderr, msg));
}

/* The engine's own sessions, in the operator API's shape. */
static int embedded(const struct cli_common *c, bool json)
{
	bh_engine *e = cli_open_engine_inspect(c, quiet);
	if (!e) {
		cli_error("ls: if a daemon holds the state directory, attach to it with --attach SOCKET");
		return CLI_EXIT_BULKHEAD;
	}
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(e, &list);
	struct bh_session_info *info = calloc(n ? n : 1, sizeof *info);
	struct wire_operator_session *v = calloc(n ? n : 1, sizeof *v);
	if (!info || !v)
		abort();
	for (size_t i = 0; i < n; i++) {
		bh_session_get_info(list[i], &info[i]);
		v[i] = wire_operator_session_of(&info[i]);
	}
	free(list);
	print_sessions(v, n, json);
	/* With --json the note goes to stderr, so the output stays JSON. */
	fprintf(json ? stderr : stdout,
		"%sno daemon holds %s: an engine of this process sees only its own sessions, so no "
		"live session is listed; a daemon's sessions show with --attach SOCKET%s\n",
		json ? "bulkhead: " : "(", bh_engine_state_dir(e), json ? "" : ")");
	free(v); /* its strings are the engine's */
	free(info);
	bh_engine_close(e);
	return 0;
}

static const char usage[] =
	"usage: bulkhead ls [--json] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                   ")
	"\n"
	"The sessions a daemon holds (the one named with --attach, else the one holding\n"
	"the state directory); with none, what an engine of this process sees.\n"
	"  --json              the list as JSON\n" CLI_HELP_COMMON CLI_HELP_ATTACH CLI_HELP_NO_ATTACH;

int cmd_ls(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0};
	bool json = false;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else {
			return cli_usage_error(usage, "ls: unknown argument \"%s\"", argv[i]);
		}
	}
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (!client)
		return embedded(&c, json);
	int rc = attached(client, json);
	bh_client_free(client);
	return rc;
}
