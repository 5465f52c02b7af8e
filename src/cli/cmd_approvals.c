/* bulkhead approvals: the calls a daemon holds for a person's decision
 * (serve --approval, or approval=required in the clients file), and the
 * decision from a script:
 *
 *     bulkhead approvals [--json]              the held calls
 *     bulkhead approvals show ID               one call's code and files
 *     bulkhead approvals approve ID [--reason TEXT]
 *     bulkhead approvals deny ID --reason TEXT
 *
 * Held calls live in the daemon, so this always attaches (--attach, or the
 * daemon holding the state directory). Exit 0 when listed or decided, 1
 * when no held call has that id (decided already, timed out, or never
 * held), 2 on a usage error, 125 otherwise. */
#include "cli.h"
#include "cli_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define EXIT_NO_SUCH_CALL 1

static const char usage_text[] =
	"usage: bulkhead approvals [--json] [--state DIR] [-v]\n"
	CLI_ATTACH_SYNOPSIS("                          ")
	"       bulkhead approvals show ID\n"
	"       bulkhead approvals approve ID [--reason TEXT]\n"
	"       bulkhead approvals deny ID --reason TEXT\n"
	"\n"
	"The calls a daemon holds for approval (serve --approval), one held call, or its\n"
	"decision; show, approve and deny take the options of the first line too.\n"
	"  --json              the answer as JSON\n"
	"  --reason TEXT       why (the agent is told it); deny needs one\n" CLI_HELP_COMMON
	CLI_HELP_ATTACH
	"exit: 0 done, 1 no held call has that id (decided, timed out or never held),\n"
	"2 usage\n";

/* The first line of the code, for a one-line row. */
static void first_line(const char *code, char *out, size_t n)
{
	size_t len = strcspn(code, "\n");
	snprintf(out, n, "%.*s%s", (int)len, code, code[len] ? " …" : "");
}

static void print_list(const struct wire_operator_approvals *a, bool json)
{
	if (json) {
		cJSON *list = cJSON_CreateArray();
		for (size_t i = 0; i < a->n; i++) {
			const struct wire_operator_approval *h = &a->approvals[i];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "id", h->id);
			cJSON_AddStringToObject(o, "procedure", h->procedure);
			cJSON_AddStringToObject(o, "principal", h->principal);
			cJSON_AddStringToObject(o, "runKey", h->run_key);
			cJSON_AddStringToObject(o, "owner", h->owner);
			cJSON_AddStringToObject(o, "session", h->session);
			cJSON_AddStringToObject(o, "isolation", h->isolation);
			cJSON_AddStringToObject(o, "language", h->language);
			cJSON_AddStringToObject(o, "code", h->code);
			cJSON_AddStringToObject(o, "requestSha256", h->request_sha256);
			cJSON_AddNumberToObject(o, "heldUnixMs", (double)h->held_unix_ms);
			cJSON_AddNumberToObject(o, "deadlineUnixMs", (double)h->deadline_unix_ms);
			cJSON_AddNumberToObject(o, "files", h->n_files);
			cJSON_AddItemToArray(list, o);
		}
		cli_print_json(list);
		return;
	}
	if (!a->n) {
		printf("no call waits for approval\n");
		return;
	}
	printf("%-12s  %-12s  %-10s  %-12s  %-9s  %7s  %8s  %s\n", "ID", "PRINCIPAL", "PROCEDURE",
	       "SESSION", "TIER", "WAITING", "DEADLINE", "CODE");
	int64_t now = (int64_t)now_real_ms();
	for (size_t i = 0; i < a->n; i++) {
		const struct wire_operator_approval *h = &a->approvals[i];
		char code[96], session[13], principal[13];
		/* Every string is the daemon's: escaped on a terminal, then cut. */
		first_line(h->code, code, sizeof code);
		snprintf(session, sizeof session, "%s",
			 *h->session ? cli_out_field(stdout, h->session) : "-");
		snprintf(principal, sizeof principal, "%s", cli_out_field(stdout, h->principal));
		long long waiting = (now - h->held_unix_ms) / 1000,
			  left = (h->deadline_unix_ms - now) / 1000;
		printf("%-12.12s  %-12.12s  %-10.10s  %-12.12s  %-9.9s  %6llds  %7llds  %s\n",
		       cli_out_field(stdout, h->id), principal, cli_out_field(stdout, h->procedure),
		       session, cli_out_field(stdout, h->isolation), waiting < 0 ? 0 : waiting,
		       left < 0 ? 0 : left, cli_out_field(stdout, code));
	}
}

static int show(const struct wire_operator_approvals *a, const char *id)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct wire_operator_approval *h = &a->approvals[i];
		if (strcmp(h->id, id))
			continue;
		printf("call %s: %s of %s", cli_out_field(stdout, h->id),
		       cli_out_field(stdout, h->procedure), cli_out_field(stdout, h->principal));
		if (*h->session)
			printf(" in session %s", cli_out_field(stdout, h->session));
		/* ---- egress: a project names its steps, in no one language ---- */
		bool project = !strcmp(h->kind, "project");
		printf(" (%s, %s)\nrequest %s\n--- %s (%llu bytes) ---\n%s\n",
		       cli_out_field(stdout, h->isolation),
		       cli_out_field(stdout, project ? "project" : h->language), h->request_sha256,
		       project ? "steps" : "code", (unsigned long long)h->code_bytes,
		       h->code_omitted
			       ? "(not in this listing: more is held than one answer carries; "
				 "decide the older calls first, or deny)"
			       : cli_out_field(stdout, h->code));
		for (size_t k = 0; k < a->n_files; k++) {
			const struct wire_operator_approval_file *f = &a->files[k];
			if (strcmp(f->approval, h->id))
				continue;
			printf("--- file %s (%llu bytes%s) ---\n", cli_out_field(stdout, f->name),
			       (unsigned long long)f->size,
			       f->binary      ? ", binary: not shown"
			       : f->truncated ? ", cut: not all shown"
					      : "");
			if (!f->binary)
				printf("%s\n", cli_out_field(stdout, f->text));
		}
		return 0;
	}
	cli_error("approvals: no call with id %s waits for approval", id);
	return EXIT_NO_SUCH_CALL;
}

static int failed(struct bh_client_error *err)
{
	cli_client_error(err);
	int rc = err->code == WIRE_NOT_FOUND ? EXIT_NO_SUCH_CALL : CLI_EXIT_BULKHEAD;
	bh_client_error_free(err);
	return rc;
}

static int decide(bh_client *c, const char *id, bool approve, const char *reason)
{
	struct wire_operator_decision out;
	struct bh_client_error *err = NULL;
	if (bh_client_decide_approval(c, id, approve, reason, &out, &err) < 0)
		return failed(err);
	printf("%s %s by %s%s%s\n", cli_out_field(stdout, out.id), approve ? "approved" : "denied",
	       cli_out_field(stdout, out.by), *out.reason ? ": " : "",
	       cli_out_field(stdout, out.reason));
	wire_operator_decision_free(&out);
	return 0;
}

int cmd_approvals(int argc, char **argv)
{
	struct cli_common common = {0};
	struct cli_attach at = {0};
	bool json = false;
	const char *verb = NULL, *id = NULL, *reason = NULL;
	if (cli_wants_help(argc, argv))
		return cli_help(usage_text);
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&common, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--reason") && i + 1 < argc) {
			reason = argv[++i];
		} else if (!verb &&
			   (!strcmp(a, "approve") || !strcmp(a, "deny") || !strcmp(a, "show"))) {
			verb = a;
		} else if (verb && !id && a[0] != '-') {
			id = a;
		} else {
			return cli_usage_error(usage_text, "approvals: unexpected \"%s\"", a);
		}
	}
	if (verb && !id)
		return cli_usage_error(
			usage_text, "approvals %s: name the held call's ID (bulkhead approvals lists them)",
			verb);
	if (verb && !strcmp(verb, "deny") && (!reason || !*reason))
		return cli_usage_error(usage_text,
				       "approvals deny: give a --reason (the agent is told it)");
	if (reason && (!verb || !strcmp(verb, "show")))
		return cli_usage_error(usage_text, "approvals: --reason goes with approve or deny");
	bh_client *client = NULL;
	if (cli_attach(&at, &common, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (!client) {
		cli_error(
			"approvals: held calls live in a daemon (serve --approval); attach to it with "
			"--attach SOCKET");
		return CLI_EXIT_BULKHEAD;
	}
	int rc;
	if (verb && strcmp(verb, "show")) {
		rc = decide(client, id, !strcmp(verb, "approve"), reason);
	} else {
		struct wire_operator_approvals list;
		struct bh_client_error *err = NULL;
		if (bh_client_list_approvals(client, &list, &err) < 0) {
			rc = failed(err);
		} else {
			rc = verb ? show(&list, id) : (print_list(&list, json), 0);
			wire_operator_approvals_free(&list);
		}
	}
	bh_client_free(client);
	return rc;
}
