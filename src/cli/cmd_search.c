/* bulkhead search [--state DIR | --db FILE | --attach SOCKET|URL] [--limit N] [--json]
 *                 [code:|stdout:|stderr:]TEXT
 *
 * Which cell read /etc/passwd? Every stored cell's code, stdout and stderr,
 * across all sessions, searched in the store (read-only, untrusted: a copy
 * from another machine is fine) for TEXT; a prefix keeps to one stream.
 * Each hit is one line — session, sequence, stream and the match with its
 * context — its bytes escaped whatever the output is (a snippet is anyone's
 * bytes, and one hit is one line); the match is marked >>like this<<.
 * ---- remote: attached (--attach, or a daemon holding the state directory
 * and a token to send, as `bulkhead events`), the daemon's engine searches
 * its store (Search) and the hits are printed the same way. ---- */
#include "cli.h"
#include "cli_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct printing {
	bool json;
	cJSON *list;
	size_t n;
};

static void escaped(char *out, size_t cap, const uint8_t *p, size_t n)
{
	cli_escape(out, cap, p, n, CLI_OUT_FIELD);
}

static int print_hit(void *arg, const struct bh_search_hit *h)
{
	struct printing *p = arg;
	p->n++;
	char before[4 * BH_SEARCH_CONTEXT + 8], match[4 * BH_SEARCH_TEXT_MAX + 8],
		after[4 * BH_SEARCH_CONTEXT + 8];
	escaped(before, sizeof before, h->snippet, h->match_at);
	escaped(match, sizeof match, h->snippet + h->match_at, h->match_len);
	escaped(after, sizeof after, h->snippet + h->match_at + h->match_len,
		h->snippet_len - h->match_at - h->match_len);
	if (p->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)h->id);
		cJSON_AddStringToObject(o, "session", h->session);
		cJSON_AddNumberToObject(o, "sequence", (double)h->sequence);
		cJSON_AddStringToObject(o, "stream", h->stream);
		cJSON_AddStringToObject(o, "before", before);
		cJSON_AddStringToObject(o, "match", match);
		cJSON_AddStringToObject(o, "after", after);
		cJSON_AddNumberToObject(o, "startedUnixMs", (double)h->started_unix_ms);
		cJSON_AddItemToArray(p->list, o);
		return 0;
	}
	if (p->n == 1)
		printf("%-12s %5s %-6s %s\n", "SESSION", "SEQ", "STREAM", "MATCH");
	char fp[13];
	snprintf(fp, sizeof fp, "%.12s", *h->session ? h->session : "-");
	printf("%-12s %5llu %-6s %s%s>>%s<<%s%s\n", cli_out_field(stdout, fp),
	       (unsigned long long)h->sequence, h->stream, h->cut_before ? "..." : "", before, match,
	       after, h->cut_after ? "..." : "");
	return 0;
}

/* What to say when nothing matched, or that the list was cut. */
static int summary(const struct printing *p, enum bh_search_stream stream, size_t limit)
{
	if (!p->n)
		printf("no stored cell's %s holds that text\n",
		       stream == BH_SEARCH_CODE	    ? "code"
		       : stream == BH_SEARCH_STDOUT ? "stdout"
		       : stream == BH_SEARCH_STDERR ? "stderr"
						    : "code or output");
	else if (p->n >= (limit && limit <= BH_SEARCH_MAX ? limit : BH_SEARCH_MAX))
		printf("(the first %zu hits, newest first: --limit N for more, at most %u)\n", p->n,
		       BH_SEARCH_MAX);
	/* grep's convention: 1 when nothing matched. */
	return p->n ? 0 : 1;
}

/* ---- remote: the daemon's engine searches ---- */
static int search_attached(bh_client *client, const char *query, size_t limit,
			   struct printing *p)
{
	struct wire_operator_hits hits;
	struct bh_client_error *err = NULL;
	if (bh_client_search(client, query, (uint32_t)(limit < UINT32_MAX ? limit : UINT32_MAX),
			     &hits, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		cJSON_Delete(p->list);
		return CLI_EXIT_BULKHEAD;
	}
	for (size_t i = 0; i < hits.n; i++)
		print_hit(p, &hits.hits[i]);
	wire_operator_hits_free(&hits);
	if (p->json) {
		cli_print_json(p->list);
		return p->n ? 0 : 1;
	}
	const char *text = NULL;
	return summary(p, bh_search_parse(query, &text), limit);
}

static const char usage[] =
	"usage: bulkhead search [--state DIR | --db FILE] [--limit N] [--json] [-v]\n"
	"                       [--no-attach] [code:|stdout:|stderr:]TEXT\n"
	CLI_ATTACH_SYNOPSIS("                       ")
	"\n"
	"Every stored cell's code, stdout and stderr, across all sessions, searched for\n"
	"TEXT (a prefix keeps to one stream); attached (--attach, or a daemon holding the\n"
	"state directory and a token to send), the daemon's store. -- before a TEXT that\n"
	"starts with -.\n"
	"  --db FILE           a copy of a store instead, read here (bulkhead backup)\n"
	"  --limit N           at most N hits (default 50)\n"
	"  --json              the hits as JSON\n" CLI_HELP_COMMON CLI_HELP_ATTACH
	CLI_HELP_NO_ATTACH
	"Exit: 0 a hit, 1 none, 2 usage, 125 bulkhead failed.\n";

int cmd_search(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0}; /* ---- remote ---- */
	const char *db = NULL, *query = NULL;
	size_t limit = 50;
	struct printing p = {0};
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--db") && i + 1 < argc)
			db = argv[++i];
		else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
			limit = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--json"))
			p.json = true;
		else if (!query && (argv[i][0] != '-' || !strcmp(argv[i], "--")))
			query = !strcmp(argv[i], "--") && i + 1 < argc ? argv[++i] : argv[i];
		else {
			return cli_usage_error(usage, "search: unknown argument \"%s\"", argv[i]);
		}
	}
	if (!query) {
		cli_error("search: what text? (bulkhead search code:/etc/passwd)");
		return CLI_EXIT_USAGE;
	}
	if (db && at.target) {
		cli_error("search: --db reads a copy here; --attach asks a daemon: give one of them");
		return CLI_EXIT_USAGE;
	}
	if (p.json)
		p.list = cJSON_CreateArray();
	/* ---- remote: a copy (--db) is always read here ---- */
	bh_client *client = NULL;
	if (!db && cli_attach(&at, &c, CLI_ATTACH_IF_TOKEN, &client) < 0) {
		cJSON_Delete(p.list);
		return CLI_EXIT_BULKHEAD;
	}
	if (client) {
		int arc = search_attached(client, query, limit, &p);
		bh_client_free(client);
		return arc;
	}
	char path[4200];
	const char *dir = bh_state_dir_name(c.state_dir);
	snprintf(path, sizeof path, "%s/bulkhead.db", dir);
	bh_history *h = NULL;
	bh_error *err = NULL;
	if ((!db && bh_state_dir_check(dir, &err) < 0) || bh_history_open(db ? db : path, &h, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		cJSON_Delete(p.list);
		return CLI_EXIT_BULKHEAD;
	}
	const char *text = NULL;
	enum bh_search_stream stream = bh_search_parse(query, &text);
	int rc = bh_history_search(h, stream, text, limit, print_hit, &p, &err);
	bh_history_close(h);
	if (rc < 0) {
		cJSON_Delete(p.list);
		cli_error("%s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	if (p.json) {
		cli_print_json(p.list);
		return p.n ? 0 : 1;
	}
	return summary(&p, stream, limit);
}
