/* bulkhead events [--session FP] [--json]: the engine's events (state
 * changes, reaps, approvals ...) oldest first, each with who acted (a
 * principal, "console", a policy clock, "engine") and the request id that
 * ties it to the daemon's audit log. Attached (--attach SOCKET|URL, or a
 * daemon holding the state directory and a token to send), the events the
 * daemon pages out with ListEvents; else the store itself, read-only and as
 * untrusted (bh_history), beside a running engine or daemon. What the store
 * or the daemon chose is escaped on a terminal (cli_out.h). */
#include "cli.h"
#include "cli_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 500u

struct events_out {
	const char *session; /* only this session's, or NULL */
	bool json;
	size_t n;
};

static void print_event(struct events_out *o, const struct bh_event *ev)
{
	if (o->session && strcmp(o->session, ev->session ? ev->session : ""))
		return;
	const char *actor = ev->actor ? ev->actor : "", *rid = ev->request_id ? ev->request_id : "";
	if (o->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "id", (double)ev->id);
		cJSON_AddNumberToObject(j, "atUnixMs", (double)ev->at_unix_ms);
		cJSON_AddStringToObject(j, "kind", ev->kind ? ev->kind : "");
		cJSON_AddStringToObject(j, "session", ev->session ? ev->session : "");
		cJSON_AddStringToObject(j, "sandbox", ev->sandbox ? ev->sandbox : "");
		cJSON_AddStringToObject(j, "detail", ev->detail ? ev->detail : "");
		cJSON_AddStringToObject(j, "actor", actor);
		cJSON_AddStringToObject(j, "requestId", rid);
		char *text = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
		if (!text)
			abort();
		fputs(o->n++ ? ",\n" : "\n", stdout);
		cli_out_json(stdout, text);
		cJSON_free(text);
		return;
	}
	char at[32];
	time_t t = (time_t)(ev->at_unix_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
	const char *who = ev->session && *ev->session ? ev->session : ev->sandbox;
	printf("%-6lld %-20s %-14s %-20s %-12.12s %-22s %s\n", (long long)ev->id, at,
	       cli_out_field(stdout, ev->kind ? ev->kind : ""), cli_out_field(stdout, *actor ? actor : "-"),
	       cli_out_field(stdout, who && *who ? who : "-"), cli_out_field(stdout, *rid ? rid : "-"),
	       cli_out_field(stdout, ev->detail ? ev->detail : ""));
	o->n++;
}

/* A page of the store's events, and where the next one starts. */
struct store_page {
	struct events_out *o;
	int64_t last;
	size_t n;
};

static int print_row(void *arg, const struct bh_event *ev)
{
	struct store_page *p = arg;
	print_event(p->o, ev);
	p->last = ev->id;
	p->n++;
	return 0;
}

/* Every page, in commit order. */
static int print_attached(bh_client *client, struct events_out *o)
{
	int64_t after = 0;
	for (;;) {
		struct wire_operator_events page;
		struct bh_client_error *err = NULL;
		if (bh_client_list_events(client, after, PAGE, 0, &page, &err) < 0) {
			cli_client_error(err);
			bh_client_error_free(err);
			return -1;
		}
		for (size_t i = 0; i < page.n; i++)
			print_event(o, &page.events[i]);
		bool more = page.n > 0 && page.next_after_id > after;
		after = page.next_after_id;
		wire_operator_events_free(&page);
		if (!more)
			return 0;
	}
}

static int print_store(bh_history *h, struct events_out *o)
{
	struct store_page p = {.o = o};
	do {
		bh_error *err = NULL;
		p.n = 0;
		if (bh_history_events(h, p.last, PAGE, print_row, &p, &err) < 0) {
			cli_error("%s", err->msg);
			bh_error_free(err);
			return -1;
		}
	} while (p.n == PAGE);
	return 0;
}

static bh_history *open_store(const struct cli_common *c)
{
	const char *dir = bh_state_dir_name(c->state_dir);
	char path[4200];
	snprintf(path, sizeof path, "%s/bulkhead.db", dir);
	bh_history *h = NULL;
	bh_error *err = NULL;
	if (bh_state_dir_check(dir, &err) < 0 || bh_history_open(path, &h, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return NULL;
	}
	return h;
}

static const char usage[] =
	"usage: bulkhead events [--session FP] [--json] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                       ")
	"\n"
	"The engine's events oldest first, each with who acted and the request id that\n"
	"ties it to the daemon's audit log: from the store (read-only), or attached\n"
	"(--attach, or a daemon holding the state directory and a token to send) the\n"
	"daemon's.\n"
	"  --session FP        only this session's events\n"
	"  --json              the events as one JSON array\n" CLI_HELP_COMMON CLI_HELP_ATTACH
	CLI_HELP_NO_ATTACH;

int cmd_events(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0};
	struct events_out o = {0};
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--session") && i + 1 < argc) {
			o.session = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			o.json = true;
		} else {
			return cli_usage_error(usage, "unknown argument \"%s\"", argv[i]);
		}
	}
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_IF_TOKEN, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	bh_history *h = client ? NULL : open_store(&c);
	if (!client && !h)
		return CLI_EXIT_BULKHEAD;
	if (o.json)
		fputs("[", stdout);
	else
		printf("%-6s %-20s %-14s %-20s %-12s %-22s %s\n", "ID", "AT (UTC)", "KIND", "BY",
		       "SESSION", "REQUEST", "DETAIL");
	int rc = client ? print_attached(client, &o) : print_store(h, &o);
	/* Closed even after an error: what was written stays one array. */
	if (o.json)
		fputs(o.n ? "\n]\n" : "]\n", stdout);
	bh_history_close(h);
	bh_client_free(client);
	return rc < 0 ? CLI_EXIT_BULKHEAD : 0;
}
