/* bulkhead records [--session FP] [--json]: the run records in the store.
 * bulkhead verify [--session FP]: recompute every record digest and chain
 * link, and name the first row that does not match.
 * bulkhead backup FILE: a consistent online copy of the store.
 * All three read the store directly (read-only): no engine, no lock, so
 * they work beside a running engine or daemon. */
#include "cli.h"
#include "record.h"
#include "store.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store_args {
	struct cli_common c;
	const char *session;
	bool json;
	const char *file;
};

static int parse(int argc, char **argv, struct store_args *a, const char *usage, bool want_file)
{
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&a->c, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--session") && i + 1 < argc) {
			a->session = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (want_file && !a->file && argv[i][0] != '-') {
			a->file = argv[i];
		} else {
			cli_error("unknown argument \"%s\" (usage: %s)", argv[i], usage);
			return -1;
		}
	}
	if (want_file && !a->file) {
		cli_error("usage: %s", usage);
		return -1;
	}
	return 0;
}

static struct bh_store *open_store(const struct cli_common *c)
{
	const char *dir = c->state_dir;
	if (!dir || !*dir)
		dir = getenv("BULKHEAD_STATE");
	if (!dir || !*dir)
		dir = "/var/lib/bulkhead";
	char path[4200];
	snprintf(path, sizeof path, "%s/bulkhead.db", dir);
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	if (store_open(path, true, false, &s, &err) < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return NULL;
	}
	return s;
}

static int print_row(void *arg, const struct store_record_row *r)
{
	cJSON *list = arg;
	if (list) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)r->id);
		cJSON_AddNumberToObject(o, "version", r->rec.version);
		cJSON_AddStringToObject(o, "session", r->rec.session);
		cJSON_AddNumberToObject(o, "sequence", (double)r->rec.sequence);
		cJSON_AddStringToObject(o, "requestSha256", r->rec.request_sha256);
		cJSON_AddStringToObject(o, "resultSha256", r->rec.result_sha256);
		cJSON_AddStringToObject(o, "unanswered", r->rec.unanswered ? r->rec.unanswered : "");
		cJSON_AddStringToObject(o, "provider", r->rec.provider);
		cJSON_AddStringToObject(o, "isolation", r->rec.isolation);
		cJSON_AddStringToObject(o, "environment", r->rec.environment);
		cJSON_AddNumberToObject(o, "startedUnixMs", (double)r->rec.started_unix_ms);
		cJSON_AddNumberToObject(o, "endedUnixMs", (double)r->rec.ended_unix_ms);
		cJSON_AddStringToObject(o, "previousSha256", r->rec.previous_sha256);
		cJSON_AddStringToObject(o, "recordSha256", r->rec.record_sha256);
		cJSON_AddStringToObject(o, "language", r->language ? r->language : "");
		cJSON_AddNumberToObject(o, "exitCode", r->exit_code);
		cJSON_AddStringToObject(o, "flags", r->flags ? r->flags : "");
		cJSON_AddItemToArray(list, o);
		return 0;
	}
	printf("%-6lld %-12.12s %5llu  v%d  %-10s %-9s exit %-3d %-40s %.16s\n", (long long)r->id,
	       r->rec.session[0] ? r->rec.session : "-", (unsigned long long)r->rec.sequence,
	       r->rec.version, r->language ? r->language : "", r->rec.isolation, r->exit_code,
	       r->flags && *r->flags ? r->flags : "-", r->rec.record_sha256);
	return 0;
}

int cmd_records(int argc, char **argv)
{
	struct store_args a = {0};
	if (parse(argc, argv, &a, "bulkhead records [--session FP] [--json] [--state DIR]", false) < 0)
		return CLI_EXIT_USAGE;
	struct bh_store *s = open_store(&a.c);
	if (!s)
		return CLI_EXIT_BULKHEAD;
	cJSON *list = a.json ? cJSON_CreateArray() : NULL;
	if (!a.json)
		printf("%-6s %-12s %5s  %-2s  %-10s %-9s %-8s %-40s %s\n", "ID", "SESSION", "SEQ", "V",
		       "LANGUAGE", "TIER", "EXIT", "FLAGS", "RECORD");
	bh_error *err = NULL;
	int rc = store_records(s, a.session, print_row, list, &err);
	if (rc < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
	}
	if (list) {
		char *text = cJSON_Print(list);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(list);
	}
	store_close(s);
	return rc < 0 ? CLI_EXIT_BULKHEAD : 0;
}

struct verify_state {
	char session[65];
	uint64_t sequence;
	char previous[65];
	long long rows;
	bool broken;
};

static int verify_row(void *arg, const struct store_record_row *r)
{
	struct verify_state *v = arg;
	v->rows++;
	if (!bh_record_verify(&r->rec)) {
		printf("record %lld (session %.12s, sequence %llu): its digest does not match its fields\n",
		       (long long)r->id, r->rec.session, (unsigned long long)r->rec.sequence);
		v->broken = true;
		return 1;
	}
	if (!r->rec.session[0])
		return 0;
	if (strcmp(v->session, r->rec.session)) {
		snprintf(v->session, sizeof v->session, "%s", r->rec.session);
		v->sequence = 0;
		v->previous[0] = '\0';
	}
	if (r->rec.sequence != v->sequence + 1 || strcmp(r->rec.previous_sha256, v->previous)) {
		printf("record %lld (session %.12s, sequence %llu): the chain breaks here (expected "
		       "sequence %llu after %.16s)\n",
		       (long long)r->id, r->rec.session, (unsigned long long)r->rec.sequence,
		       (unsigned long long)v->sequence + 1, v->previous[0] ? v->previous : "the start");
		v->broken = true;
		return 1;
	}
	v->sequence = r->rec.sequence;
	snprintf(v->previous, sizeof v->previous, "%s", r->rec.record_sha256);
	return 0;
}

int cmd_verify(int argc, char **argv)
{
	struct store_args a = {0};
	if (parse(argc, argv, &a, "bulkhead verify [--session FP] [--state DIR]", false) < 0)
		return CLI_EXIT_USAGE;
	struct bh_store *s = open_store(&a.c);
	if (!s)
		return CLI_EXIT_BULKHEAD;
	struct verify_state v = {0};
	bh_error *err = NULL;
	int rc = store_records(s, a.session, verify_row, &v, &err);
	store_close(s);
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
	if (parse(argc, argv, &a, "bulkhead backup FILE [--state DIR]", true) < 0)
		return CLI_EXIT_USAGE;
	struct bh_store *s = open_store(&a.c);
	if (!s)
		return CLI_EXIT_BULKHEAD;
	bh_error *err = NULL;
	int rc = store_backup(s, a.file, &err);
	store_close(s);
	if (rc < 0) {
		cli_error("%s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	printf("backed up the store to %s\n", a.file);
	return 0;
}
