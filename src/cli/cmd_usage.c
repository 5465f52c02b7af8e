/* bulkhead usage [--json]: what each live sandbox of a daemon uses now (CPU,
 * memory used / limit / peak, pids, disk, calls a minute) and the host's
 * figures, from one bulkhead.v1.OperatorService/Usage call. Only a daemon
 * holds live sessions, so a state directory no daemon holds is refused. */
#include "cli.h"
#include "cli_out.h"
#include "wire_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mib(char *buf, size_t n, uint64_t b)
{
	if (b >= (1ull << 50)) /* cgroup v1's "no limit" */
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.1f", (double)b / (1 << 20));
}

static void print_usage(const struct wire_operator_usage *u)
{
	const struct bh_host_usage *h = &u->host;
	printf("daemon %s, up %.0f s; load %.2f %.2f %.2f; memory %.1f of %.1f GiB available\n",
	       cli_out_field(stdout, u->version),
	       (double)(h->now_unix_ms - h->started_unix_ms) / 1000, h->load_milli[0] / 1000.0,
	       h->load_milli[1] / 1000.0, h->load_milli[2] / 1000.0,
	       (double)h->mem_available_bytes / (1 << 30), (double)h->mem_total_bytes / (1 << 30));
	printf("sandboxes' memory budget: %.0f of %.0f MiB held (%.0f MiB used); images %.0f of %.0f "
	       "MiB\n",
	       (double)h->budget_held_bytes / (1 << 20), (double)h->budget_bytes / (1 << 20),
	       (double)h->sandboxes_used_bytes / (1 << 20), (double)h->images_bytes / (1 << 20),
	       (double)h->images_budget_bytes / (1 << 20));
	if (!u->n) {
		printf("no live sessions\n");
		return;
	}
	printf("%-12s %-11s %-9s %6s %9s %9s %9s %5s %9s %6s\n", "SESSION", "STATE", "TIER", "CPU%",
	       "MEM MiB", "LIMIT", "PEAK", "PIDS", "DISK MiB", "CALL/M");
	for (size_t i = 0; i < u->n; i++) {
		const struct bh_session_usage *s = &u->sessions[i];
		char mem[24] = "-", limit[24] = "-", peak[24] = "-", disk[24] = "-", pids[16] = "-",
		     cpu[16] = "-";
		if (s->measured) {
			mib(mem, sizeof mem, s->memory_bytes);
			mib(limit, sizeof limit, s->memory_limit_bytes);
			mib(peak, sizeof peak, s->memory_peak_bytes);
			snprintf(pids, sizeof pids, "%u", s->pids);
			snprintf(cpu, sizeof cpu, "%.1f", s->cpu_millicores / 10.0);
		}
		if (s->disk_unix_ms)
			mib(disk, sizeof disk, s->disk_bytes);
		printf("%-12.12s %-11s %-9s %6s %9s %9s %9s %5s %9s %6u\n", s->fingerprint,
		       bh_session_state_name(s->state), bh_tier_name(s->tier), cpu, mem, limit,
		       peak, pids, disk, s->calls_last_minute);
	}
}

static const char usage_text[] =
	"usage: bulkhead usage [--json] [--state DIR] [-v]\n"
	CLI_ATTACH_SYNOPSIS("                      ")
	"\n"
	"What each live sandbox of a daemon uses now (CPU, memory, pids, disk, calls a\n"
	"minute) and the host's figures. Live sessions are a daemon's: the one named\n"
	"with --attach, else the one holding the state directory.\n"
	"  --json              the answer as JSON\n" CLI_HELP_COMMON CLI_HELP_ATTACH;

int cmd_usage(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage_text);
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
			continue;
		}
		return cli_usage_error(usage_text, "usage: unknown argument \"%s\"", argv[i]);
	}
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (!client) {
		cli_error(
			"usage: no daemon holds the state directory: live sessions are a daemon's "
			"(start `bulkhead serve`, or name one with --attach SOCKET|URL)");
		return CLI_EXIT_BULKHEAD;
	}
	struct wire_operator_usage u;
	struct bh_client_error *err = NULL;
	int rc = bh_client_usage(client, &u, &err);
	bh_client_free(client);
	if (rc < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	if (json) {
		char *text = wire_operator_encode_usage(&u);
		printf("%s\n", text);
		free(text);
	} else {
		print_usage(&u);
	}
	wire_operator_usage_free(&u);
	return 0;
}
