/* bulkhead token create NAME --scope SCOPE[,SCOPE] [--clients FILE]
 * bulkhead token list [--clients FILE] [--json]
 * bulkhead token revoke NAME [--clients FILE]
 *
 * The daemon's clients file (default /etc/bulkhead/clients) holds one line
 * per client with the SHA-256 of its token. `create` prints the new token
 * once, on stdout and alone, so `TOKEN=$(bulkhead token create ...)` works;
 * nothing else ever shows it. Edits are atomic and serialised by a lock file
 * (src/daemon/clients_edit.c); a running daemon reads the file on SIGHUP. */
#include "cli.h"
#include "clients.h"
#include "clients_edit.h"

#include <cjson/cJSON.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: bulkhead token create NAME --scope code:run[,operator] [--clients FILE]\n"
	"                             [--approval required|none]\n"
	"       bulkhead token list [--clients FILE] [--json]\n"
	"       bulkhead token revoke NAME [--clients FILE]\n"
	"\n"
	"Creates (printing the token once, alone on stdout), lists or revokes the\n"
	"daemon's clients; a running daemon reads the file again on SIGHUP.\n"
	"  --scope S           code:run (sessions and runs), operator, or both\n"
	"  --approval P        required: hold the client's runs for approval; none: never\n"
	"                      (default: the daemon's serve --approval)\n"
	"  --clients FILE      the clients file (default " CLIENTS_DEFAULT_PATH ")\n"
	"  --json              the list as JSON\n";

struct token_args {
	const char *verb;
	const char *name;
	const char *file;
	unsigned scopes;
	bool scope_given;
	bool json;
	enum client_approval approval; /* ---- approvals ---- */
};

/* The value of --opt VALUE or --opt=VALUE at argv[*i], or NULL when argv[*i]
 * is not that option. *bad is set when the option has no value. */
static const char *opt_value(const char *opt, int argc, char **argv, int *i, bool *bad)
{
	size_t n = strlen(opt);
	if (strncmp(argv[*i], opt, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n])
		return NULL;
	if (*i + 1 >= argc) {
		*bad = true;
		return NULL;
	}
	return argv[++*i];
}

static int parse(int argc, char **argv, struct token_args *a)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return -1;
	}
	a->verb = argv[1];
	bool is_create = !strcmp(a->verb, "create"), is_list = !strcmp(a->verb, "list");
	if (!is_create && !is_list && strcmp(a->verb, "revoke")) {
		cli_usage_error(usage, "token: unknown action \"%s\"", a->verb);
		return -1;
	}
	for (int i = 2; i < argc; i++) {
		bool bad = false;
		const char *v;
		if ((v = opt_value("--clients", argc, argv, &i, &bad))) {
			a->file = v;
		} else if (is_create && (v = opt_value("--scope", argc, argv, &i, &bad))) {
			char *why = NULL;
			unsigned bits = 0;
			if (clients_scopes_parse(v, &bits, &why) < 0) {
				cli_error("token create: %s", why);
				free(why);
				return -1;
			}
			a->scopes |= bits;
			a->scope_given = true;
		} else if (is_create && (v = opt_value("--approval", argc, argv, &i, &bad))) {
			/* ---- approvals: the line's policy (clients.h) ---- */
			if (!strcmp(v, "required")) {
				a->approval = CLIENT_APPROVAL_REQUIRED;
			} else if (!strcmp(v, "none")) {
				a->approval = CLIENT_APPROVAL_NONE;
			} else {
				cli_error("token create: --approval is required or none, not \"%s\"", v);
				return -1;
			}
		} else if (bad) {
			cli_usage_error(usage, "token %s: %s needs a value", a->verb, argv[i]);
			return -1;
		} else if (is_list && !strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!is_list && !a->name && argv[i][0] != '-') {
			a->name = argv[i];
		} else {
			cli_usage_error(usage, "token %s: unknown argument \"%s\"", a->verb, argv[i]);
			return -1;
		}
	}
	if (!is_list && !a->name) {
		cli_usage_error(usage, "token %s: which client? (a NAME is needed)", a->verb);
		return -1;
	}
	if (is_create && !a->scope_given) {
		cli_error("token create: --scope is needed (code:run, operator, or both: "
			  "--scope code:run,operator)");
		return -1;
	}
	if (a->name) {
		char *why = NULL;
		if (clients_check_name(a->name, &why) < 0) {
			cli_error("token %s: %s", a->verb, why);
			free(why);
			return -1;
		}
	}
	if (!a->file || !*a->file)
		a->file = CLIENTS_DEFAULT_PATH;
	return 0;
}

static int create(const struct token_args *a)
{
	char token[CLIENTS_TOKEN_LEN + 1];
	char *why = NULL;
	if (clients_edit_create_approval(a->file, a->name, a->scopes, a->approval, token, &why) < 0) {
		cli_error("token create: %s", why);
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	char scopes[64];
	clients_scopes_format(a->scopes, scopes, sizeof scopes);
	bool shown = printf("%s\n", token) > 0 && fflush(stdout) == 0;
	OPENSSL_cleanse(token, sizeof token);
	if (!shown) {
		cli_error("token create: client \"%s\" was added to %s but its token could not be "
			  "written to stdout; revoke it and create it again",
			  a->name, a->file);
		return CLI_EXIT_BULKHEAD;
	}
	fprintf(stderr,
		"bulkhead: added client \"%s\" (%s) to %s.\n"
		"bulkhead: the token above is shown only this once and is stored nowhere; keep it now.\n"
		"bulkhead: a running daemon picks the change up on SIGHUP.\n",
		a->name, scopes, a->file);
	return 0;
}

static int revoke(const struct token_args *a)
{
	char *why = NULL;
	if (clients_edit_revoke(a->file, a->name, &why) < 0) {
		cli_error("token revoke: %s", why);
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	fprintf(stderr,
		"bulkhead: revoked client \"%s\" in %s; a running daemon stops accepting its token "
		"on SIGHUP.\n",
		a->name, a->file);
	return 0;
}

static int list(const struct token_args *a)
{
	char *why = NULL, *text = NULL;
	size_t len = 0, n = 0;
	struct client_entry *v = NULL;
	if (clients_read_file(a->file, &text, &len, NULL, &why) < 0 ||
	    clients_parse(text, len, &v, &n, &why) < 0) {
		cli_error("token list: %s%s%s", text ? a->file : "", text ? ": " : "", why);
		free(why);
		free(text);
		return CLI_EXIT_BULKHEAD;
	}
	free(text);
	if (a->json) {
		cJSON *all = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			char hex[65], prefix[20];
			clients_digest_hex(v[i].digest, hex);
			snprintf(prefix, sizeof prefix, "sha256:%.12s", hex);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", v[i].name);
			cJSON *scopes = cJSON_AddArrayToObject(o, "scopes");
			if (v[i].scopes & CLIENT_SCOPE_CODE_RUN)
				cJSON_AddItemToArray(scopes, cJSON_CreateString("code:run"));
			if (v[i].scopes & CLIENT_SCOPE_OPERATOR)
				cJSON_AddItemToArray(scopes, cJSON_CreateString("operator"));
			cJSON_AddStringToObject(o, "digestPrefix", prefix);
			cJSON_AddNumberToObject(o, "line", v[i].line);
			if (v[i].approval != CLIENT_APPROVAL_DEFAULT) /* ---- approvals ---- */
				cJSON_AddStringToObject(o, "approval",
							v[i].approval == CLIENT_APPROVAL_REQUIRED ? "required"
												  : "none");
			cJSON_AddItemToArray(all, o);
		}
		char *out = cJSON_Print(all);
		puts(out);
		cJSON_free(out);
		cJSON_Delete(all);
	} else if (!n) {
		printf("no clients in %s (add one: bulkhead token create NAME --scope code:run)\n",
		       a->file);
	} else {
		printf("%-24s %-18s %s\n", "NAME", "SCOPES", "DIGEST");
		for (size_t i = 0; i < n; i++) {
			char hex[65], scopes[64];
			clients_digest_hex(v[i].digest, hex);
			clients_scopes_format(v[i].scopes, scopes, sizeof scopes);
			printf("%-24s %-18s sha256:%.12s%s%s\n", v[i].name, scopes, hex,
			       v[i].approval ? "  " : "", clients_approval_field(v[i].approval));
		}
	}
	free(v);
	return 0;
}

int cmd_token(int argc, char **argv)
{
	struct token_args a = {0};
	if (cli_wants_help(argc, argv) || (argc >= 2 && !strcmp(argv[1], "help")))
		return cli_help(usage);
	if (parse(argc, argv, &a) < 0)
		return CLI_EXIT_USAGE;
	if (!strcmp(a.verb, "create"))
		return create(&a);
	if (!strcmp(a.verb, "revoke"))
		return revoke(&a);
	return list(&a);
}
