/* bulkhead records [--session FP] [--json]: the run records in the store,
 * or, attached (--attach SOCKET|URL, or a daemon holding the state directory
 * and a token to send), the records the daemon pages out of its store with
 * ListRecords, printed the same way. --no-attach reads the store itself.
 * bulkhead verify [--session FP]: recompute every record digest and chain
 * link, and name the first row that does not match.
 * bulkhead backup FILE: a consistent online copy of the store.
 * All three read the store directly (read-only): no engine, no lock, so
 * they work beside a running engine or daemon. The store is read as
 * untrusted through the public history API (bh_history) and a row at a time:
 * --json streams its array, so a 30-day store is never held in memory.
 * On a terminal, what the store or daemon chose is escaped (cli_out.h). */
#include "cli.h"
#include "cli_out.h"
#include "record.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store_args {
	struct cli_common c;
	struct cli_attach at;
	bool attachable; /* records takes --attach */
	const char *session;
	bool json;
	const char *file;
	const char *db; /* ---- light: verify --db FILE, a copy of a store ---- */
};

static const char records_usage[] =
	"usage: bulkhead records [--session FP] [--json] [--state DIR] [-v] [--no-attach]\n"
	CLI_ATTACH_SYNOPSIS("                        ")
	"\n"
	"The run records in the store, or attached (--attach, or a daemon holding the\n"
	"state directory and a token to send) the daemon's.\n"
	"  --session FP        only this session's records\n"
	"  --json              the records as one JSON array\n" CLI_HELP_COMMON CLI_HELP_ATTACH
	CLI_HELP_NO_ATTACH;

static const char verify_usage[] =
	"usage: bulkhead verify [--session FP] [--state DIR | --db FILE] [-v]\n"
	"\n"
	"Recomputes every record digest and chain link and names the first row that\n"
	"does not match (read-only, beside a running engine too).\n"
	"  --session FP        only this session's chain\n"
	"  --db FILE           a copy of a store instead (bulkhead backup)\n" CLI_HELP_COMMON
	"Exit: 0 every digest and link matches, 1 one does not, 125 the store could not\n"
	"be read.\n";

static const char backup_usage[] =
	"usage: bulkhead backup FILE [--state DIR] [-v]\n"
	"\n"
	"Copies the store into FILE consistently while it is in use.\n" CLI_HELP_COMMON;

/* 0 parsed, 1 the usage was asked for (and printed), -1 a usage error. */
static int parse(int argc, char **argv, struct store_args *a, const char *usage, bool want_file)
{
	if (cli_wants_help(argc, argv)) {
		cli_help(usage);
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&a->c, a->attachable ? &a->at : NULL, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--session") && i + 1 < argc) {
			a->session = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--db") && i + 1 < argc) { /* ---- light ---- */
			a->db = argv[++i];
		} else if (want_file && !a->file && argv[i][0] != '-') {
			a->file = argv[i];
		} else {
			cli_usage_error(usage, "unknown argument \"%s\"", argv[i]);
			return -1;
		}
	}
	if (want_file && !a->file) {
		fputs(usage, stderr);
		return -1;
	}
	return 0;
}

static bh_history *open_store(const struct cli_common *c)
{
	const char *dir = bh_state_dir_name(c->state_dir);
	char path[4200];
	snprintf(path, sizeof path, "%s/bulkhead.db", dir);
	bh_history *s = NULL;
	bh_error *err = NULL;
	if (bh_state_dir_check(dir, &err) < 0 || bh_history_open(path, &s, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return NULL;
	}
	return s;
}

/* ---- light: a copy of a store, opened read-only as --db names it ---- */
static bh_history *open_copy(const char *db)
{
	bh_history *s = NULL;
	bh_error *err = NULL;
	if (bh_history_open(db, &s, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return NULL;
	}
	return s;
}

/* --json: one array, written an element at a time. */
struct json_out {
	bool on;
	size_t n;
};

static void json_begin(struct json_out *j)
{
	if (j->on)
		fputs("[", stdout);
}

static void json_end(struct json_out *j)
{
	if (j->on)
		fputs(j->n ? "\n]\n" : "]\n", stdout);
}

/* One record as a row or a JSON object: the same whether it came from the
 * store or from a daemon. */
static void print_record(struct json_out *j, int64_t id, const struct bh_record *rec,
			 const char *language, int exit_code, const char *flags)
{
	language = language ? language : "";
	flags = flags ? flags : "";
	if (j->on) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)id);
		cJSON_AddNumberToObject(o, "version", rec->version);
		cJSON_AddStringToObject(o, "session", rec->session);
		cJSON_AddNumberToObject(o, "sequence", (double)rec->sequence);
		cJSON_AddStringToObject(o, "requestSha256", rec->request_sha256);
		cJSON_AddStringToObject(o, "resultSha256", rec->result_sha256);
		cJSON_AddStringToObject(o, "unanswered", rec->unanswered ? rec->unanswered : "");
		cJSON_AddStringToObject(o, "provider", rec->provider);
		cJSON_AddStringToObject(o, "isolation", rec->isolation);
		cJSON_AddStringToObject(o, "environment", rec->environment);
		cJSON_AddNumberToObject(o, "startedUnixMs", (double)rec->started_unix_ms);
		cJSON_AddNumberToObject(o, "endedUnixMs", (double)rec->ended_unix_ms);
		cJSON_AddStringToObject(o, "previousSha256", rec->previous_sha256);
		cJSON_AddStringToObject(o, "recordSha256", rec->record_sha256);
		cJSON_AddStringToObject(o, "language", language);
		cJSON_AddNumberToObject(o, "exitCode", exit_code);
		cJSON_AddStringToObject(o, "flags", flags);
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		if (!text)
			abort();
		fputs(j->n++ ? ",\n" : "\n", stdout);
		cli_out_json(stdout, text);
		cJSON_free(text);
		return;
	}
	/* The fields are the store's or the daemon's: escaped on a terminal,
	 * then cut to their columns. */
	char session[13], digest[17];
	snprintf(session, sizeof session, "%s", cli_out_field(stdout, rec->session[0] ? rec->session : "-"));
	snprintf(digest, sizeof digest, "%s", cli_out_field(stdout, rec->record_sha256));
	printf("%-6lld %-12.12s %5llu  v%d  %-10s %-9s exit %-3d %-40s %.16s\n", (long long)id,
	       session, (unsigned long long)rec->sequence, rec->version,
	       cli_out_field(stdout, language), cli_out_field(stdout, rec->isolation), exit_code,
	       cli_out_field(stdout, *flags ? flags : "-"), digest);
}

static int print_row(void *arg, const struct bh_record_row *r)
{
	print_record(arg, r->id, r->record, r->language, r->exit_code, r->flags);
	return 0;
}

/* Every page of ListRecords, in commit order. */
static int print_attached(bh_client *client, const char *session, struct json_out *list)
{
	int64_t after = 0;
	for (;;) {
		struct wire_operator_records page;
		struct bh_client_error *err = NULL;
		if (bh_client_list_records(client, session, after, 500, &page, &err) < 0) {
			cli_client_error(err);
			bh_client_error_free(err);
			return -1;
		}
		for (size_t i = 0; i < page.n; i++)
			print_record(list, page.rows[i].id, &page.rows[i].record, page.rows[i].language,
				     page.rows[i].exit_code, page.rows[i].flags);
		bool more = page.n > 0 && page.next_after_id > after;
		after = page.next_after_id;
		wire_operator_records_free(&page);
		if (!more)
			return 0;
	}
}

int cmd_records(int argc, char **argv)
{
	struct store_args a = {.attachable = true};
	int parsed = parse(argc, argv, &a, records_usage, false);
	if (parsed)
		return parsed < 0 ? CLI_EXIT_USAGE : 0;
	bh_client *client = NULL;
	if (cli_attach(&a.at, &a.c, CLI_ATTACH_IF_TOKEN, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	bh_history *s = client ? NULL : open_store(&a.c);
	if (!client && !s)
		return CLI_EXIT_BULKHEAD;
	struct json_out list = {.on = a.json};
	json_begin(&list);
	if (!a.json)
		printf("%-6s %-12s %5s  %-2s  %-10s %-9s %-8s %-40s %s\n", "ID", "SESSION", "SEQ", "V",
		       "LANGUAGE", "TIER", "EXIT", "FLAGS", "RECORD");
	int rc = 0;
	if (client) {
		rc = print_attached(client, a.session, &list);
	} else {
		bh_error *err = NULL;
		rc = bh_history_chains(s, a.session, print_row, &list, &err);
		if (rc < 0) {
			cli_error("%s", err->msg);
			bh_error_free(err);
		}
	}
	/* Closed even after an error: what was written stays one array. */
	json_end(&list);
	bh_history_close(s);
	bh_client_free(client);
	return rc < 0 ? CLI_EXIT_BULKHEAD : 0;
}

struct verify_state {
	struct bh_chain_walk walk;
	long long rows;
	bool broken;
};

static int verify_row(void *arg, const struct bh_record_row *row)
{
	struct verify_state *v = arg;
	const struct bh_record *rec = row->record;
	v->rows++;
	/* ---- fleet (issue 20): a chain adopted from another host goes on
	 * here from its record there, which that host's store holds: said,
	 * and walked on from ---- */
	bool branched = row->chain_branched_from && *row->chain_branched_from;
	if (row->chain_after && strcmp(v->walk.session, rec->session)) {
		bh_chain_begin_after(&v->walk, rec->session, row->chain_after, row->chain_after_sha256);
		if (branched) /* ---- density: a branch's child goes on from its parent ---- */
			printf("session %.12s was branched from session %.12s: its chain goes on from "
			       "the parent's record %llu (%.16s)\n",
			       cli_out_field(stdout, rec->session),
			       cli_out_field(stdout, row->chain_branched_from),
			       (unsigned long long)row->chain_after,
			       cli_out_field(stdout, row->chain_after_sha256));
		else
			printf("session %.12s was adopted from host %s: its chain goes on here from "
			       "record %llu (%.16s), which is in that host's store\n",
			       cli_out_field(stdout, rec->session), cli_out_field(stdout, row->chain_origin),
			       (unsigned long long)row->chain_after,
			       cli_out_field(stdout, row->chain_after_sha256));
	}
	/* What the walk expected, before the step moves it on. */
	bool same = !strcmp(v->walk.session, rec->session);
	unsigned long long expected = same ? v->walk.sequence + 1 : 1;
	char after[65];
	snprintf(after, sizeof after, "%s", same ? v->walk.previous : "");
	switch (bh_chain_step(&v->walk, rec)) {
	case BH_CHAIN_OK:
		return 0;
	case BH_CHAIN_DIGEST:
		printf("record %lld (session %.12s, sequence %llu): its digest does not match its fields\n",
		       (long long)row->id, cli_out_field(stdout, rec->session),
		       (unsigned long long)rec->sequence);
		break;
	case BH_CHAIN_LINK:
		printf("record %lld (session %.12s, sequence %llu): the chain breaks here (expected "
		       "sequence %llu after %.16s)\n",
		       (long long)row->id, cli_out_field(stdout, rec->session),
		       (unsigned long long)rec->sequence, expected,
		       after[0] ? cli_out_field(stdout, after) : "the start");
		break;
	}
	v->broken = true;
	return 1;
}

int cmd_verify(int argc, char **argv)
{
	struct store_args a = {0};
	int parsed = parse(argc, argv, &a, verify_usage, false);
	if (parsed)
		return parsed < 0 ? CLI_EXIT_USAGE : 0;
	bh_history *s = a.db ? open_copy(a.db) : open_store(&a.c); /* ---- light ---- */
	if (!s)
		return CLI_EXIT_BULKHEAD;
	struct verify_state v = {0};
	bh_error *err = NULL;
	int rc = bh_history_chains(s, a.session, verify_row, &v, &err);
	bh_history_close(s);
	if (rc < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	if (v.broken)
		return 1;
	printf("%lld records verified: every digest and chain link matches\n", v.rows);
	return 0;
}

int cmd_backup(int argc, char **argv)
{
	struct store_args a = {0};
	int parsed = parse(argc, argv, &a, backup_usage, true);
	if (parsed)
		return parsed < 0 ? CLI_EXIT_USAGE : 0;
	bh_history *s = open_store(&a.c);
	if (!s)
		return CLI_EXIT_BULKHEAD;
	bh_error *err = NULL;
	int rc = bh_history_backup(s, a.file, &err);
	bh_history_close(s);
	if (rc < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	printf("backed up the store to %s\n", a.file);
	return 0;
}
