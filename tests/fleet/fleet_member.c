/* A fleet member in a process of its own, for the tests that kill a host
 * (kill -9: its fleet is never closed) or need another process's host.
 *
 *   fleet_member --servers URLS --id ID [--heartbeat-ms N] [--gone-ms N] [--echo]
 *
 * Prints "ready <incarnation hex>" once it is a member (or "refused: why"
 * and exits 2), then serves until its stdin closes (a clean close: exit 0)
 * or it is killed. With --echo it answers every forwarded call with status
 * 200, the request's headers and its body unchanged. */
#include "fleet.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void echo(void *arg, struct bh_fleet_request *r, const struct bh_fleet_msg *req)
{
	bh_fleet *f = arg;
	struct bh_fleet_msg ans = *req;
	ans.path = NULL;
	ans.status = 200;
	bh_fleet_reply(f, r, &ans);
}

int main(int argc, char **argv)
{
	struct bh_fleet_config cfg = {0};
	bool do_echo = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--servers") && i + 1 < argc)
			cfg.servers = argv[++i];
		else if (!strcmp(argv[i], "--id") && i + 1 < argc)
			cfg.host_id = argv[++i];
		else if (!strcmp(argv[i], "--heartbeat-ms") && i + 1 < argc)
			cfg.heartbeat_ms = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gone-ms") && i + 1 < argc)
			cfg.gone_ms = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--echo"))
			do_echo = true;
		else {
			fprintf(stderr, "fleet_member: unknown argument %s\n", argv[i]);
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	bh_fleet *f = NULL;
	char *why = NULL;
	if (bh_fleet_open(&cfg, &f, &why) < 0) {
		printf("refused: %s\n", why);
		fflush(stdout);
		free(why);
		return 2;
	}
	struct bh_fleet_host me = {0};
	me.tiers = 1u << BH_TIER_CONTAINER;
	me.best_tier = BH_TIER_CONTAINER;
	me.memory_budget_mb = 1024;
	snprintf(me.version, sizeof me.version, "fleet_member");
	bh_fleet_set_host(f, &me);
	if (do_echo)
		bh_fleet_serve(f, echo, f);
	struct bh_fleet_host h;
	printf("ready %016llx\n", bh_fleet_host(f, cfg.host_id, &h) == 0 ? (unsigned long long)h.incarnation : 0ull);
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = {{.fd = bh_fleet_fd(f), .events = POLLIN}, {.fd = 0, .events = POLLIN}};
		int t = bh_fleet_timeout_ms(f);
		poll(p, 2, t < 0 || t > 200 ? 200 : t);
		if (p[1].revents) {
			char buf[64];
			if (read(0, buf, sizeof buf) <= 0)
				break;
		}
		bh_fleet_process(f);
	}
	bh_fleet_close(f);
	return 0;
}
