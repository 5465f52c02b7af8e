/* ---- pgrant: the C client's project run with a grant against a real
 * `serve --profiles` and the real broker (grant_daemon.h): the step reaches
 * the allowed route, and the answer passes the client's own checks, which
 * recompute the request digest from what it sent (the grant among it) as
 * plimsoll's clients do; a profile not for sessions is the client's
 * permission error. ---- */
#include "client.h"
#include "grant_daemon.h"
#include "project.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct daemon d;
static struct fixture f;
static bh_client *cl;

static void start(void)
{
	grant_daemon_start(&d, &f, "container");
	struct bh_client_error *err = NULL;
	struct bh_client_options o = {.target = d.sock, .token = d.run_token};
	cr_assert_eq(bh_client_new(&o, &cl, &err), 0, "%s", err ? err->message : "");
}

static void stop(void)
{
	bh_client_free(cl);
	cl = NULL;
	grant_daemon_stop(&d, &f);
}

Test(client_project_grants, a_granted_project_run_passes_the_clients_record_checks, .init = start,
     .fini = stop, .timeout = 300)
{
	char *py = grant_fetch_py(&f);
	struct bh_file files[] = {{"fetch.py", (const uint8_t *)py, strlen(py)}};
	char *steps[] = {"python3 fetch.py"};
	struct wire_project_run p = {.files = files, .n_files = 1, .steps = steps, .n_steps = 1,
				     .grant_profile = "proj"};
	struct bh_client_run_opts ro = {.floor = BH_TIER_CONTAINER, .timeout_ms = 60000};
	struct wire_run_response run;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_run_project(cl, &p, &ro, &run, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_eq(run.result.outcome, BH_PROJECT_COMPLETED);
	cr_assert_eq(run.result.n_steps, 1);
	const struct bh_project_step *st = &run.result.steps[0];
	cr_assert(st->out_len == 24 && !memcmp(st->out, "200 hello from upstream\n", 24), "%.*s|%.*s",
		  (int)st->out_len, (const char *)st->out, (int)st->errout_len,
		  (const char *)st->errout);
	cr_assert_eq(upstream_hits(&f.api), 1);
	wire_run_response_free(&run);

	/* The same project, its grant one the client may not use: refused
	 * before dispatch, with the daemon's words. */
	p.grant_profile = "never-defined";
	cr_assert_lt(bh_client_run_project(cl, &p, &ro, &run, &err), 0);
	cr_assert_eq(err->code, WIRE_PERMISSION_DENIED, "%s", err->message);
	cr_assert(err->not_dispatched);
	cr_assert(strstr(err->message, "grant profile never-defined is unknown or not available to "
				       "this caller"), "%s", err->message);
	bh_client_error_free(err);
	cr_assert_eq(upstream_hits(&f.api), 1);
	free(py);
}
