/* Shipped scenarios are recordings, not hand-written files: re-recording
 * two of them with `bulkhead record` against a real daemon gives the same
 * scenario, step for step, except for times and digests (which are new on
 * every run). */
#include "harness.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path)
{
	char *b = harness_slurp(path);
	cr_assert_not_null(b, "cannot read %s", path);
	return b;
}

/* Drops what differs between two honest recordings: times and digests
 * (---- hops ---- and a path's wire bodies, which hold both, and digests of
 * the daemon's token; a call's sent and answered times, the lanes'). */
static void drop_volatile(cJSON *j)
{
	static const char *const keys[] = {"t_ms", "recorded_at", "recordSha256", "text", "sent_ms",
					   "answered_ms"};
	if (cJSON_IsObject(j))
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			cJSON_DeleteItemFromObjectCaseSensitive(j, keys[i]);
	cJSON *c;
	cJSON_ArrayForEach(c, j)
		drop_volatile(c);
}

static void rerecord_matches(const char *name, const char *secret);

/* ---- egress ---- the script's test credential (egress.credential.value). */
static char *script_credential(const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/data/scenarios/scripts/%s.json", BH_SOURCE_DIR, name);
	char *text = slurp(path);
	cJSON *j = cJSON_Parse(text);
	free(text);
	cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "egress"), "credential"), "value");
	cr_assert(cJSON_IsString(v), "%s has no egress.credential.value", path);
	char *out = strdup(v->valuestring);
	cJSON_Delete(j);
	return out;
}

static void rerecord_matches(const char *name, const char *secret)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	char out[4096], cmd[16384], shipped[4096];
	snprintf(out, sizeof out, "%s/rerecord-%s-%d.json", root ? root : "/tmp", name, (int)getpid());
	snprintf(shipped, sizeof shipped, "%s/data/scenarios/%s.json", BH_SOURCE_DIR, name);
	/* The script path is recorded as given: give it as the shipped one was. */
	snprintf(cmd, sizeof cmd, "cd '%s' && '%s' record data/scenarios/scripts/%s.json -o '%s' 2>&1",
		 BH_SOURCE_DIR, BH_TEST_CLI, name, out);
	FILE *p = popen(cmd, "r");
	char log[8192] = "";
	size_t n = fread(log, 1, sizeof log - 1, p);
	log[n] = '\0';
	cr_assert_eq(pclose(p), 0, "bulkhead record %s failed:\n%s", name, log);
	char *a_text = slurp(shipped), *b_text = slurp(out);
	unlink(out);
	if (secret) /* ---- egress ---- a fresh recording never holds it */
		cr_assert_null(strstr(b_text, secret), "the new recording of %s holds its credential", name);
	cJSON *a = cJSON_Parse(a_text), *b = cJSON_Parse(b_text);
	cr_assert_not_null(a, "%s does not parse", shipped);
	cr_assert_not_null(b, "the new recording does not parse");
	drop_volatile(a);
	drop_volatile(b);
	char *as = cJSON_Print(a), *bs = cJSON_Print(b);
	cr_assert(cJSON_Compare(a, b, true), "re-recording %s differs:\n--- shipped\n%s\n--- new\n%s",
		  name, as, bs);
	free(as);
	free(bs);
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(a_text);
	free(b_text);
}

Test(scenarios, re_recording_next_turn_gives_the_shipped_scenario)
{
	rerecord_matches("next_turn", NULL);
}

Test(scenarios, re_recording_owner_cap_gives_the_shipped_scenario)
{
	rerecord_matches("owner_cap", NULL);
}

/* ---- approvals ---- */
Test(scenarios, re_recording_approval_denied_gives_the_shipped_scenario)
{
	rerecord_matches("approval_denied", NULL);
}

/* ---- egress ---- against a real broker and a TLS upstream of the
 * recording's: the same steps, hops, events and narration, and no trace of
 * the credential the broker added. */
Test(scenarios, re_recording_brokered_call_gives_the_shipped_scenario_and_never_its_credential)
{
	char *secret = script_credential("brokered_call");
	rerecord_matches("brokered_call", secret);
	free(secret);
}

/* ---- project ---- a Run with a project payload: the same typed outcome,
 * steps, artifact and narration. */
Test(scenarios, re_recording_project_run_gives_the_shipped_scenario)
{
	rerecord_matches("project_run", NULL);
}

/* ---- egress ---- the recorder's own guard: a recording that holds the
 * profile's credential (here a title that quotes it) is not written, and
 * says why. */
Test(scenarios, a_recording_that_would_hold_its_credential_is_not_written)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	char dir[4096], cmd[16384], script[4200], out[4200];
	snprintf(dir, sizeof dir, "%s/leak-XXXXXX", root ? root : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof cmd, "cp '%s/data/scenarios/scripts/upstream.py' '%s/'", BH_SOURCE_DIR, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(script, sizeof script, "%s/leaky.json", dir);
	snprintf(out, sizeof out, "%s/leaky.out.json", dir);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs("{\"name\": \"leaky\", \"title\": \"quotes leak-test-t0ken-91ab2c\", \"teaches\": \"nothing\",\n"
	      " \"egress\": {\"upstream\": {\"addr\": \"127.0.0.2\", \"port\": 9444},\n"
	      "   \"credential\": {\"env\": \"BH_LEAK_TEST_TOKEN\", \"value\": \"leak-test-t0ken-91ab2c\"},\n"
	      "   \"profiles\": [\"profile p\", \"  origin https://127.0.0.2:9444\", \"  route GET /v1/*\",\n"
	      "     \"  credential env BH_LEAK_TEST_TOKEN\", \"  header Authorization Bearer {credential}\",\n"
	      "     \"  principals *\", \"  allow-in-sessions yes\"]},\n"
	      " \"steps\": [{\"wait_ms\": 1, \"narration\": \"time passes\"}]}\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "'%s' record '%s' -o '%s' 2>&1", BH_TEST_CLI, script, out);
	FILE *p = popen(cmd, "r");
	char log[8192] = "";
	size_t n = fread(log, 1, sizeof log - 1, p);
	log[n] = '\0';
	cr_assert_neq(pclose(p), 0, "bulkhead record wrote a recording holding its credential:\n%s", log);
	cr_assert_not_null(strstr(log, "the recording holds the profile's credential; not written"), "%s", log);
	cr_assert_neq(access(out, F_OK), 0, "%s was written", out);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
