/* ---- project: the C client's project run against a real daemon, its
 * answer checked as plimsoll's clients check one; and a spoiled answer
 * (one byte of a step's stdout changed on the way) caught as data_loss. ---- */
#include "client.h"
#include "daemon_harness.h"
#include "project.h"
#include "tamper_proxy.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static struct daemon d;
static struct tamper_proxy px;
static bh_client *cl;

static void stop(void)
{
	bh_client_free(cl);
	cl = NULL;
	proxy_stop(&px);
	daemon_stop(&d);
}

static bh_client *client_for(const char *target)
{
	bh_client *c = NULL;
	struct bh_client_error *err = NULL;
	struct bh_client_options o = {.target = target, .token = d.run_token};
	cr_assert_eq(bh_client_new(&o, &c, &err), 0, "%s", err ? err->message : "");
	return c;
}

static void start(void)
{
	daemon_start(&d, NULL);
	cl = client_for(d.sock);
}

/* The first Run passes the proxy untouched, the second is spoiled. */
static void start_flip(void)
{
	daemon_start(&d, NULL);
	char sock[4300];
	snprintf(sock, sizeof sock, "%s/proxy.sock", d.dir);
	proxy_start(&px, d.sock, sock, TAMPER_FLIP_STDOUT, "Run", 1);
	cl = client_for(px.sock);
}

static struct wire_project_run sample(void)
{
	static struct bh_file files[] = {{"greet.sh", (const uint8_t *)"echo hello from $1\n", 19}};
	static char *steps[] = {"sh greet.sh bulkhead > out.txt", "cat out.txt"};
	static char *artifacts[] = {"out.txt"};
	return (struct wire_project_run){.files = files, .n_files = 1, .steps = steps, .n_steps = 2,
					 .artifacts = artifacts, .n_artifacts = 1};
}

Test(client, a_project_run_comes_back_checked_with_its_artifact, .init = start, .fini = stop)
{
	struct wire_project_run p = sample();
	struct bh_client_run_opts ro = {.floor = BH_TIER_CONTAINER, .timeout_ms = 20000};
	struct wire_run_response run;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_run_project(cl, &p, &ro, &run, &err), 0, "%s",
		     err ? err->message : "");
	cr_assert_str_eq(run.result.kind, "project");
	cr_assert_eq(run.result.outcome, BH_PROJECT_COMPLETED);
	cr_assert_eq(run.result.n_steps, 2);
	cr_assert_eq(run.result.steps[1].out_len, strlen("hello from bulkhead\n"));
	cr_assert_eq(run.result.n_artifacts, 1);
	cr_assert_eq(memcmp(run.result.artifacts[0].content, "hello from bulkhead\n", 20), 0);
	cr_assert_str_empty(run.record.session);
	wire_run_response_free(&run);
}

Test(client, a_spoiled_project_answer_is_data_loss_not_a_result, .init = start_flip, .fini = stop)
{
	struct wire_project_run p = sample();
	struct wire_run_response run;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_run_project(cl, &p, NULL, &run, &err), 0, "%s",
		     err ? err->message : "");
	wire_run_response_free(&run);
	cr_assert_eq(bh_client_run_project(cl, &p, NULL, &run, &err), -1);
	cr_assert_eq(err->code, WIRE_DATA_LOSS, "%s", err->message);
	cr_assert_not(err->not_dispatched);
	cr_assert(strstr(err->message, "result digest"), "%s", err->message);
	bh_client_error_free(err);
}
