/* The scenario model's hop by hop path and the check of a recording's
 * claims against its answers (scenario.h: "path", scenario_contradictions),
 * with no binary and no runtime: the loader's rules for a path (a scenario
 * file is hostile input), the contradictions named, and every shipped
 * scenario free of them. The screens of the path are in test_replay.c. */
#include "scenario.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIPPED BH_SOURCE_DIR "/data/scenarios"

#define HEAD_TIER(tier, floor)                                                                                  \
	"{\"format\":\"bulkhead-scenario/1\",\"name\":\"t\",\"title\":\"T\",\"teaches\":\"x\",\"tier\":\"" tier \
	"\",\"floor\":\"" floor                                                                                 \
	"\",\"source\":{\"recorder\":\"r\",\"recorded_at\":\"2026-12-01T19:00:00Z\"},\"steps\":["
#define HEAD HEAD_TIER("container", "container")

/* A refused call's step, its hops and path given. */
#define REFUSED(hops, stopped, path)                                                                     \
	"{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[" hops                              \
	"],\"stopped_at\":\"" stopped "\","                                                              \
	"\"daemon_calls\":{},\"call\":{\"language\":\"python\",\"code\":\"1\"},\"outcome\":\"refused\"," \
	"\"error\":\"Nothing ran (isolation): x\",\"path\":[" path "]}"
#define REFUSED_NOPATH(hops, stopped)                                                                    \
	"{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[" hops                              \
	"],\"stopped_at\":\"" stopped "\","                                                              \
	"\"daemon_calls\":{},\"call\":{\"language\":\"python\",\"code\":\"1\"},\"outcome\":\"refused\"," \
	"\"error\":\"Nothing ran (isolation): x\"}"
#define V(hop, leg, words) "{\"hop\":\"" hop "\",\"leg\":\"" leg "\",\"narration\":\"" words "\"}"
#define DOWN_TO_DAEMON                                                                        \
	V("model", "down", "asks")                                                            \
	"," V("agent", "down", "runs") "," V("execute_code", "down",                          \
					     "checks") "," V("manager", "down",               \
							     "opens") "," V("daemon", "down", \
									    "refuses")
#define UP_FROM_DAEMON                     \
	V("manager", "up", "refusal back") \
	"," V("execute_code", "up",        \
	      "returns it") "," V("agent", "up", "hands it") "," V("model", "up", "reads it")
#define FIVE "\"model\",\"agent\",\"execute_code\",\"manager\",\"daemon\""

static struct scenario *parsed(const char *json)
{
	struct scenario *s = NULL;
	char err[512];
	cr_assert_eq(scenario_parse(json, strlen(json), &s, err, sizeof err), 0,
		     "refused: %s\nin %s", err, json);
	return s;
}

/* test_replay.c's: the loader refuses json with exactly the message want. */
void refused_with(const char *json, const char *want);

TestSuite(hops, .timeout = 120);

Test(hops, a_refused_calls_path_goes_down_to_the_refusing_hop_and_back_up_with_its_wire)
{
	struct scenario *s = parsed(HEAD REFUSED(
		FIVE, "daemon",
		DOWN_TO_DAEMON
		",{\"hop\":\"manager\",\"leg\":\"up\",\"narration\":\"the refusal\","
		"\"wire\":{\"what\":\"OpenSession answer (HTTP 400)\",\"text\":\"{\\\"code\\\":1}\"}}," V(
			"execute_code", "up",
			"returns it") "," V("agent", "up", "hands it") "," V("model", "up",
									     "reads it")) "]}");
	const struct scenario_step *st = &s->steps[0];
	cr_assert_eq(st->n_path, 9);
	cr_assert_eq(st->path[4].hop, SCENARIO_HOP_DAEMON);
	cr_assert_eq(st->path[4].leg, SCENARIO_LEG_DOWN);
	cr_assert_str_eq(st->path[4].narration, "refuses");
	cr_assert_null(st->path[4].wire);
	cr_assert_eq(st->path[5].leg, SCENARIO_LEG_UP);
	cr_assert_str_eq(st->path[5].wire->what, "OpenSession answer (HTTP 400)");
	cr_assert_str_eq(st->path[5].wire->text, "{\"code\":1}");
	cr_assert_eq(st->path[8].hop, SCENARIO_HOP_MODEL);
	scenario_free(s);
}

Test(hops, a_recording_without_a_path_still_loads)
{
	struct scenario *s = parsed(
		HEAD
		"{\"kind\":\"wait\",\"turn\":1,\"narration\":\"n\",\"hops\":[],\"daemon_calls\":{},"
		"\"ms\":5}]}");
	cr_assert_eq(s->steps[0].n_path, 0);
	cr_assert_null(s->steps[0].path);
	scenario_free(s);
}

Test(hops, a_path_that_disagrees_with_the_steps_hops_is_refused_naming_the_hop)
{
	refused_with(HEAD REFUSED(FIVE, "daemon",
				  V("model", "down", "a") "," V("sandbox", "down", "b")) "]}",
		     "step 1: \"path[1]\" goes down to \"sandbox\", not the step's hop 2 (agent)");
	refused_with(
		HEAD REFUSED("\"model\",\"agent\"", "agent",
			     V("model", "down", "a") "," V("agent", "down",
							   "b") "," V("sandbox", "down", "c")) "]}",
		"step 1: \"path[2]\" goes down to \"sandbox\", not the step's hop 3 (none: it lit fewer)");
	refused_with(HEAD REFUSED(FIVE, "daemon",
				  V("model", "down", "a") "," V("agent", "down", "b")) "]}",
		     "step 1: \"path\" goes down through 2 hops but the step lit 5");
	refused_with(HEAD REFUSED("\"model\",\"agent\"", "agent",
				  V("model", "down", "a") "," V("agent", "down",
								"b") "," V("agent", "up",
									   "c")) "]}",
		     "step 1: \"path[2]\" comes back up to \"agent\", not above \"agent\"");
	refused_with(
		HEAD REFUSED("\"model\",\"daemon\"", "daemon",
			     V("model", "down", "a") "," V("daemon", "down",
							   "b") "," V("manager", "up", "c")) "]}",
		"step 1: \"path[2]\" comes back up through \"manager\", which the call never passed");
	refused_with(HEAD REFUSED("\"model\",\"agent\",\"daemon\"", "daemon",
				  V("model", "down",
				    "a") "," V("agent", "down",
					       "b") "," V("model", "up",
							  "c") "," V("daemon", "down", "d")) "]}",
		     "step 1: \"path[3]\" goes down after the path came back up");
	refused_with(HEAD REFUSED("\"model\"", "model", V("model", "sideways", "a")) "]}",
		     "step 1: unknown leg \"sideways\"");
	refused_with(HEAD REFUSED("\"model\"", "model", V("model", "down", "")) "]}",
		     "step 1: \"path[0].narration\" is empty");
	refused_with(
		HEAD REFUSED(
			"\"model\"", "model",
			"{\"hop\":\"model\",\"leg\":\"down\",\"narration\":\"a\",\"wire\":7}") "]}",
		"step 1: \"path[0].wire\" is not an object");
	refused_with(HEAD REFUSED("\"model\"", "model",
				  "{\"hop\":\"model\",\"leg\":\"down\",\"narration\":\"a\","
				  "\"wire\":{\"what\":\"x\"}}") "]}",
		     "step 1: missing \"path[0].wire.text\"");
	refused_with(HEAD REFUSED("\"model\"", "model", "\"model\"") "]}",
		     "step 1: \"path[0]\" is not an object");
	refused_with(
		HEAD
		"{\"kind\":\"wait\",\"turn\":1,\"narration\":\"n\",\"hops\":[],\"daemon_calls\":{},\"ms\":5,"
		"\"path\":{}}]}",
		"step 1: \"path\" is not an array");
}

/* ---- a recording's hops against its answers ---- */

static size_t contradictions(const char *json, char *why, size_t n)
{
	struct scenario *s = parsed(json);
	size_t found = scenario_contradictions(s, why, n);
	scenario_free(s);
	return found;
}

static void contradicts(const char *json, const char *want)
{
	char why[1024];
	cr_assert_gt(contradictions(json, why, sizeof why), 0, "no contradiction found in %s",
		     json);
	cr_assert_not_null(strstr(why, want), "found \"%s\", not \"%s\"", why, want);
}

#define TURN_START(hops, opens)                                                                         \
	"{\"kind\":\"hook\",\"hook\":\"turn_start\",\"turn\":1,\"narration\":\"warms\",\"hops\":[" hops \
	"],"                                                                                            \
	"\"daemon_calls\":{\"OpenSession\":" opens "}}"
#define ANSWERED(hops)                                                      \
	"{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[" hops \
	"],\"daemon_calls\":{\"OpenSession\":1},"                           \
	"\"call\":{\"language\":\"python\",\"code\":\"1\"},\"outcome\":\"answered\",\"answer\":{\"exitCode\":0}}"
#define OPERATOR(action, hops, words)                                                        \
	"{\"kind\":\"operator\",\"action\":\"" action "\",\"turn\":0,\"narration\":\"" words \
	"\",\"hops\":[" hops "],\"daemon_calls\":{\"OpenSession\":1},\"output\":\"o\"}"
#define SIX FIVE ",\"sandbox\""

Test(hops, a_sound_recording_has_no_contradiction)
{
	char why[512];
	cr_assert_eq(
		contradictions(
			HEAD TURN_START("\"agent\",\"manager\",\"daemon\",\"sandbox\"",
					"1") "," ANSWERED(SIX) "," REFUSED(FIVE, "daemon",
									   DOWN_TO_DAEMON
									   "," UP_FROM_DAEMON) "]}",
			why, sizeof why),
		0, "%s", why);
}

Test(hops, a_refused_call_lit_past_the_hop_that_refused_it_contradicts)
{
	contradicts(HEAD REFUSED_NOPATH("\"model\",\"manager\",\"sandbox\"", "manager") "]}",
		    "step 1: lights \"sandbox\", past \"manager\" where it stopped");
}

Test(hops, an_answered_call_that_never_reached_the_sandbox_contradicts)
{
	contradicts(HEAD ANSWERED(FIVE) "]}",
		    "step 1: answered, but never lit the sandbox that answered");
}

/* trigger_floor_refused as it was shipped (B22 a): the warm-up lit a sandbox
 * a vm floor on a kernel daemon can never open. */
Test(hops, a_sandbox_lit_under_a_floor_above_the_tier_contradicts)
{
	contradicts(
		HEAD_TIER("kernel", "vm")
			TURN_START("\"agent\",\"manager\",\"daemon\",\"sandbox\"", "1") "]}",
		"step 1: lights the sandbox, but the floor vm is above the kernel tier: no session could open");
	char why[512];
	cr_assert_eq(
		contradictions(
			HEAD_TIER(
				"kernel",
				"vm") "{\"kind\":\"hook\",\"hook\":\"turn_start\",\"turn\":1,"
				      "\"narration\":\"refused\",\"hops\":[\"agent\",\"manager\",\"daemon\"],"
				      "\"stopped_at\":\"daemon\",\"daemon_calls\":{\"OpenSession\":1}}]}",
			why, sizeof why),
		0, "%s", why);
}

Test(hops, a_hook_that_opened_and_closed_nothing_lighting_the_sandbox_contradicts)
{
	contradicts(
		HEAD TURN_START("\"agent\",\"manager\"",
				"1") "," TURN_START("\"agent\",\"manager\",\"daemon\",\"sandbox\"",
						    "1") "]}",
		"step 2: the turn_start hook lights the sandbox, but opened and closed nothing");
}

/* leak_gc as it was shipped (B22 b): after the kill, its operator steps lit
 * the dead daemon, and the caption kept the sandbox. */
Test(hops, after_a_kill_the_daemon_lit_or_a_kept_sandbox_contradicts)
{
	contradicts(HEAD ANSWERED(SIX) "," OPERATOR("kill_daemon", "",
						    "killed") "," OPERATOR("leaks",
									   "\"daemon\",\"sandbox\"",
									   "found") "]}",
		    "step 3: lights the daemon, which was killed and not restarted");
	contradicts(HEAD ANSWERED(SIX) "," OPERATOR("kill_daemon", "", "killed") "," OPERATOR(
			    "leaks", "\"sandbox\"",
			    "the run's sandbox: interpreters and files kept between calls") "]}",
		    "step 3: says the sandbox is kept, after the daemon was killed");
	char why[512];
	cr_assert_eq(contradictions(
			     HEAD ANSWERED(SIX) "," OPERATOR(
				     "kill_daemon", "",
				     "killed") "," OPERATOR("restart_daemon", "\"daemon\"",
							    "started again") "," ANSWERED(SIX) "]}",
			     why, sizeof why),
		     0, "a restarted daemon may be lit again: %s", why);
}

Test(hops, a_calls_path_that_does_not_come_back_to_the_model_contradicts)
{
	contradicts(HEAD REFUSED(FIVE, "daemon",
				 DOWN_TO_DAEMON "," V("manager", "up", "back")) "]}",
		    "step 1: the call's path ends at \"manager\", not back at the model");
}

/* Acceptance 1: no shipped scenario claims a hop it never reached, and
 * every one `bulkhead record` wrote says, hop by hop, what each did. */
Test(hops, every_shipped_scenarios_hops_agree_with_its_answers)
{
	struct scenario_entry *list = NULL;
	size_t n = 0;
	char err[512];
	cr_assert_eq(scenario_list(SHIPPED, &list, &n, err, sizeof err), 0, "%s", err);
	cr_assert_gt(n, 10, "only %zu scenarios in %s", n, SHIPPED);
	for (size_t i = 0; i < n; i++) {
		const struct scenario *s = list[i].s;
		cr_assert_not_null(s, "%s does not load: %s", list[i].name, list[i].err);
		char why[2048];
		size_t bad = scenario_contradictions(s, why, sizeof why);
		cr_assert_eq(bad, 0, "%s contradicts itself %zu times: %s", list[i].name, bad, why);
		/* Both recorders (bulkhead record and the TypeScript add-on's)
		 * write a path for every step that lights a hop, and a time for
		 * every call: none was corrected by hand. */
		for (size_t k = 0; k < s->n_steps; k++) {
			const struct scenario_step *st = &s->steps[k];
			cr_assert(!st->n_hops || st->n_path, "%s step %zu lights %zu hops with no path",
				  list[i].name, k + 1, st->n_hops);
			if (st->kind == SCENARIO_CALL)
				cr_assert(st->sent_ms >= 0 && st->answered_ms >= st->sent_ms,
					  "%s step %zu: a call with no recorded times", list[i].name,
					  k + 1);
		}
	}
	scenario_list_free(list, n);
}
