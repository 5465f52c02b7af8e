/* bulkhead profiles check [FILE]
 *
 * Reads an egress profiles file exactly as `serve --profiles` does (its
 * owner and mode, every key, what each credential names) and says what each
 * profile allows, or the one problem with the file and its line: an
 * operator checks an edit before sending the daemon SIGHUP, which keeps the
 * old set when the new file is bad. Prints no credential. */
#include "cli.h"
#include "egress.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_PROFILES "/etc/bulkhead/profiles"
static const char usage[] =
	"usage: bulkhead profiles check [FILE]\n"
	"\n"
	"Reads an egress profiles file exactly as serve --profiles does and says what\n"
	"each profile allows, or the one problem with the file and its line (check an\n"
	"edit before sending the daemon SIGHUP). Prints no credential.\n"
	"  FILE                the profiles file (default " DEFAULT_PROFILES ")\n";

static const char *credential_name(enum bh_egress_credential_source s)
{
	switch (s) {
	case BH_EGRESS_CREDENTIAL_FILE:
		return "a file";
	case BH_EGRESS_CREDENTIAL_ENV:
		return "an environment variable";
	case BH_EGRESS_CREDENTIAL_COMMAND:
		return "a command";
	default:
		return "none";
	}
}

static void show(const struct bh_egress_profile *p)
{
	printf("%s\n", p->name);
	if (*p->description)
		printf("  %s\n", p->description);
	if (!p->n_origins)
		printf("  reaches nothing: every request is refused and recorded\n");
	for (size_t i = 0; i < p->n_origins; i++)
		printf("  origin %s\n", p->origins[i]);
	for (size_t i = 0; i < p->n_routes; i++)
		printf("  route  %s %s\n", p->routes[i].method, p->routes[i].pattern);
	printf("  credential %s", credential_name(p->credential.source));
	for (size_t i = 0; i < p->n_headers; i++)
		printf("%s%s", i ? ", " : "; headers ", p->headers[i].name);
	printf("\n  budgets: %u calls, %u in flight, %u ms per upstream call\n", p->budgets.max_calls,
	       p->budgets.max_in_flight, p->budgets.upstream_timeout_ms);
	printf("  principals");
	for (size_t i = 0; i < p->n_principals; i++)
		printf(" %s", p->principals[i]);
	printf("; sessions %s\n", p->allow_in_sessions ? "yes" : "no");
}

int cmd_profiles(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	if (argc < 2 || strcmp(argv[1], "check") || argc > 3) {
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	const char *path = argc == 3 ? argv[2] : DEFAULT_PROFILES;
	bh_egress_profiles *set = NULL;
	bh_error *err = NULL;
	if (bh_egress_profiles_load(path, &set, &err) < 0) {
		cli_error("profiles: %s", err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	size_t n = bh_egress_profiles_count(set);
	printf("%s: %zu profile%s, valid\n", path, n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		show(bh_egress_profiles_at(set, i));
	bh_egress_profiles_unref(set);
	return 0;
}
