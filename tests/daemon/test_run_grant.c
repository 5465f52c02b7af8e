/* ---- egress: `bulkhead run --grant PROFILE` as an operator types it: a
 * javascript run and a project reach the profile's upstream through a
 * broker of the command's own, the upstream sees the credential, the run's
 * output does not; what cannot hold a grant is refused in words. The TLS
 * upstream and its CA are the broker harness's (tests/broker). ---- */
#include "broker_harness.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct fixture f;
static char profiles[400], dir[512];

static void start(void)
{
	fixture_init(&f); /* the credential is in our environment: the command inherits it */
	snprintf(profiles, sizeof profiles, "%s/profiles", f.dir);
	FILE *p = fopen(profiles, "w");
	cr_assert_not_null(p);
	fprintf(p,
		"profile e2e\n"
		"  origin       https://127.0.0.2:%u\n"
		"  route        GET /v1/items\n"
		"  credential   env " TEST_CRED_ENV "\n"
		"  header       Authorization Bearer {credential}\n"
		"  principals   someone-else\n",
		f.api.port);
	fclose(p);
	cr_assert_eq(chmod(profiles, 0600), 0);
	snprintf(dir, sizeof dir, "%s/cli", f.dir);
	cr_assert_eq(mkdir(dir, 0711), 0);
	chmod(f.dir, 0711); /* sandboxes pass through to their state below it */
}

static void stop(void)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "BULKHEAD_INTERP='%s' %s gc --state '%s/state' >/dev/null 2>&1",
		 BH_TEST_INTERP, BH_TEST_CLI, dir);
	if (system(cmd) != 0) {
		/* the leftovers check at the end of the run names what stayed */
	}
	fixture_fini(&f);
}

Test(run_grant,
     a_granted_javascript_run_and_project_reach_the_upstream_and_never_print_the_credential,
     .init = start, .fini = stop, .timeout = 180)
{
	char out[16384], line[1024], headers[16384], want[256];
	snprintf(want, sizeof want, "Authorization: Bearer %s", TEST_CREDENTIAL);
	/* A javascript run: Node's fetch through the broker. */
	int rc = harness_sh_into(
		out, sizeof out,
		"%s run --state '%s/state' --tier container --lang javascript --grant e2e "
		"--profiles '%s' --upstream-ca '%s' "
		"\"fetch('https://127.0.0.2:%u/v1/items').then(async r => console.log(r.status, "
		"await r.text()))\" 2>&1",
		BH_TEST_CLI, dir, profiles, f.ca_pem, f.api.port);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "200 hello from upstream\n"), "%s", out);
	cr_assert(strstr(out, "bulkhead: exit=0 "), "%s", out);
	cr_assert_null(strstr(out, TEST_CREDENTIAL), "%s", out);
	upstream_last(&f.api, line, sizeof line, headers, sizeof headers);
	cr_assert_str_eq(line, "GET /v1/items HTTP/1.1");
	cr_assert(strcasestr(headers, want), "the upstream saw no credential:\n%s", headers);
	int hits = upstream_hits(&f.api);

	/* A project: a step's Python reaches it the same way. */
	char src[600];
	snprintf(src, sizeof src, "%s/src", dir);
	cr_assert_eq(mkdir(src, 0755), 0);
	rc = harness_sh_into(
		out, sizeof out,
		"printf 'import urllib.request\\nr = urllib.request.urlopen(\"https://127.0.0.2:%u/v1/items\", "
		"timeout=20)\\nprint(r.status, r.read().decode())\\n' > '%s/get.py' && "
		"%s run --state '%s/state' --tier container --project '%s' --step 'python3 get.py' "
		"--grant e2e --profiles '%s' --upstream-ca '%s' 2>&1",
		f.api.port, src, BH_TEST_CLI, dir, src, profiles, f.ca_pem);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "200 hello from upstream\n"), "%s", out);
	cr_assert(strstr(out, "outcome=completed"), "%s", out);
	cr_assert_null(strstr(out, TEST_CREDENTIAL), "%s", out);
	cr_assert_eq(upstream_hits(&f.api), hits + 1);

	/* Without the grant the same project reaches nothing. */
	rc = harness_sh_into(out, sizeof out,
			     "%s run --state '%s/state' --tier container --project '%s' "
			     "--step 'python3 get.py' 2>&1",
			     BH_TEST_CLI, dir, src);
	cr_assert_neq(rc, 0, "%s", out);
	cr_assert_eq(upstream_hits(&f.api), hits + 1, "an ungranted run reached the upstream");

	/* What cannot hold a grant says so, and nothing runs. */
	rc = harness_sh_into(
		out, sizeof out,
		"%s run --state '%s/state' --grant e2e --profiles '%s' 'print(1)' 2>&1",
		BH_TEST_CLI, dir, profiles);
	cr_assert_eq(rc, 2, "%s", out);
	cr_assert(strstr(out, "--grant holds a profile for a javascript run or a project"), "%s",
		  out);
	rc = harness_sh_into(
		out, sizeof out,
		"%s run --state '%s/state' --lang javascript --grant nope --profiles '%s' "
		"'1' 2>&1",
		BH_TEST_CLI, dir, profiles);
	cr_assert_eq(rc, 125, "%s", out);
	cr_assert(strstr(out, "--grant nope: "), "%s", out);
	cr_assert(strstr(out, " names no such profile"), "%s", out);
	rc = harness_sh_into(out, sizeof out, "%s run --lang javascript --grant e2e '1' 2>&1",
			     BH_TEST_CLI);
	cr_assert_eq(rc, 125, "%s", out);
	cr_assert(strstr(out, "--grant e2e needs --profiles FILE"), "%s", out);
	rc = harness_sh_into(out, sizeof out, "%s run --help", BH_TEST_CLI);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "--grant PROFILE     hold this egress profile for the run"), "%s",
		  out);
}
