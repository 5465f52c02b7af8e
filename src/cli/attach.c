/* Attach mode: a command that can be served by a daemon talks to it through
 * the client instead of opening the state directory itself. --attach names
 * the daemon (a socket or a loopback URL); without it, a daemon that holds
 * the state directory is found through STATE/daemon.sock.path, which it
 * writes at start and removes at stop, as far as that note can be trusted
 * (bh_client_discover). The token comes from --token-file, else
 * $BULKHEAD_TOKEN. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_attach_opt(struct cli_attach *a, int argc, char **argv, int *i)
{
	const char *arg = argv[*i];
	if (!strcmp(arg, "--no-attach")) {
		a->no_attach = true;
		return 1;
	}
	/* ---- tls: --cacert, --cert, --key ---- */
	const char *names[] = {"--attach", "--token-file", "--cacert", "--cert", "--key"};
	const char **slots[] = {&a->target, &a->token_file, &a->cacert, &a->client_cert,
				&a->client_key};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		size_t n = strlen(names[k]);
		if (!strncmp(arg, names[k], n) && arg[n] == '=') {
			*slots[k] = arg + n + 1;
			return 1;
		}
		if (!strcmp(arg, names[k])) {
			if (*i + 1 >= argc) {
				cli_error("%s needs a value", names[k]);
				return -1;
			}
			*slots[k] = argv[++*i];
			return 1;
		}
	}
	return 0;
}

void cli_client_error(const struct bh_client_error *err)
{
	cli_error("%s", err->message);
	if (err->code == WIRE_UNAUTHENTICATED)
		fprintf(stderr, "bulkhead: give the daemon's token in $%s or with --token-file FILE\n",
			BH_CLIENT_TOKEN_ENV);
	else if (err->code == WIRE_PERMISSION_DENIED)
		fprintf(stderr, "bulkhead: this command needs a token with the scope it names\n");
	/* ---- tls ---- */
	else if (strstr(err->message, "the TLS certificate of ") && strstr(err->message, "does not verify"))
		fprintf(stderr, "bulkhead: give the CA that signed the daemon's certificate with --cacert FILE\n");
}

char *cli_discover_daemon(const struct cli_common *c)
{
	char *sock = NULL, *why = NULL;
	int r = bh_client_discover(c->state_dir, &sock, &why);
	/* A note that cannot be trusted is said out loud: it is evidence. A
	 * stale one (its daemon died) only with -v. */
	if (r < 0)
		fprintf(stderr, "bulkhead: not attaching through %s/%s: %s; no token was sent\n",
			bh_state_dir_name(c->state_dir), BH_CLIENT_ATTACH_FILE, why);
	else if (r == 0 && why && c->verbose)
		fprintf(stderr, "bulkhead: %s: running embedded\n", why);
	free(why);
	return sock;
}

int cli_attach(const struct cli_attach *a, const struct cli_common *c, enum cli_attach_mode mode,
	       bh_client **out)
{
	*out = NULL;
	cleanup_free char *found = NULL;
	const char *target = a->target;
	if (!target && !a->no_attach && mode != CLI_ATTACH_EXPLICIT)
		target = found = cli_discover_daemon(c);
	if (!target)
		return 0;
	char *token = NULL;
	struct bh_client_error *err = NULL;
	if (bh_client_token(a->token_file, &token, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return -1;
	}
	/* Only worth attaching without a token when the daemon was named. */
	if (!token && !a->target && mode == CLI_ATTACH_IF_TOKEN)
		return 0;
	struct bh_client_options o = {.target = target, .token = token,
				      /* ---- tls ---- */
				      .cacert = a->cacert, .client_cert = a->client_cert,
				      .client_key = a->client_key};
	int rc = bh_client_new(&o, out, &err);
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	if (rc < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return -1;
	}
	if (c->verbose && !a->target)
		fprintf(stderr, "bulkhead: attached to the daemon holding the state directory (%s)\n",
			target);
	return 0;
}

int cli_shared_opt(struct cli_common *c, struct cli_attach *a, int argc, char **argv, int *i)
{
	int r = cli_common_opt(c, argc, argv, i);
	if (r == 0 && a)
		r = cli_attach_opt(a, argc, argv, i);
	return r;
}
