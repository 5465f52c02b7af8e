/* ---- pgrant: grant_daemon.h says what this is. ---- */
#include "grant_daemon.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

void grant_daemon_start(struct daemon *d, struct fixture *f, const char *tier)
{
	fixture_init(f);
	char path[400];
	snprintf(path, sizeof path, "%s/profiles", f->dir);
	FILE *p = fopen(path, "w");
	cr_assert_not_null(p);
	for (int i = 0; i < 2; i++)
		fprintf(p,
			"profile %s\n"
			"  description  the test's TLS upstream\n"
			"  origin       https://127.0.0.2:%u\n"
			"  route        GET /v1/items\n"
			"  route        GET /v1/items/*\n"
			"  credential   env " TEST_CRED_ENV "\n"
			"  header       Authorization Bearer {credential}\n"
			"  principals   *\n"
			"%s",
			i ? "per-call" : "proj", f->api.port, i ? "" : "  allow-in-sessions yes\n");
	fclose(p);
	cr_assert_eq(chmod(path, 0600), 0);
	char extra[2048];
	snprintf(extra, sizeof extra, "--tier %s --profiles '%s' --upstream-ca '%s'", tier, path,
		 f->ca_pem);
	daemon_start(d, extra);
}

void grant_daemon_stop(struct daemon *d, struct fixture *f)
{
	daemon_stop(d);
	fixture_fini(f);
}

char *grant_fetch_py(const struct fixture *f)
{
	char *s = NULL;
	cr_assert(asprintf(&s,
			   "import urllib.request\n"
			   "r = urllib.request.urlopen('https://127.0.0.2:%u/v1/items', timeout=20)\n"
			   "print(r.status, r.read().decode())\n",
			   f->api.port) > 0);
	return s;
}
