/* `bulkhead record`'s project step (docs/scenarios.md, "project"): the
 * script's {"project": {"files", "steps", "artifacts"}} sent as plimsoll's
 * Run with a project payload by the worker's own client (a project is a run
 * of its own, in a fresh sandbox: no conversation's session, so the manager
 * has no part in it), recorded as a call step whose answer is the typed
 * outcome, each step's exit, the artifacts, and the record's digest; the
 * Run answer on the wire carries the record in plimsoll's project encoding.
 * Every word of the path is from what came back. */
#include "recorder.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 32

static size_t strings_of(const cJSON *arr, char **out)
{
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it) && n < MAX_ITEMS)
			out[n++] = it->valuestring;
	return n;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f)
			return false;
	return true;
}

/* The tool's answer as the model gets it: plimsoll's ProjectResult, its
 * streams as the lines each step printed. */
static cJSON *project_answer(const struct wire_run_response *res)
{
	const struct bh_result_fields *f = &res->result;
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "language", "project");
	int last = f->n_steps ? f->steps[f->n_steps - 1].exit_code : -1;
	cJSON_AddNumberToObject(a, "exitCode", last);
	cJSON_AddStringToObject(a, "outcome", bh_project_outcome_name((enum bh_project_outcome)f->outcome));
	cJSON_AddStringToObject(a, "detail", f->outcome_detail ? f->outcome_detail : "");
	bool timed_out = false;
	size_t cap = 1;
	for (size_t i = 0; i < f->n_steps; i++)
		cap += strlen(f->steps[i].command) + f->steps[i].out_len + f->steps[i].errout_len + 64;
	char *out = calloc(1, cap), *err = calloc(1, cap);
	cJSON *steps = cJSON_CreateArray();
	for (size_t i = 0; i < f->n_steps; i++) {
		const struct bh_project_step *s = &f->steps[i];
		timed_out |= s->timed_out;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "command", s->command);
		cJSON_AddNumberToObject(o, "exitCode", s->exit_code);
		cJSON_AddItemToArray(steps, o);
		size_t u = strlen(out);
		snprintf(out + u, cap - u, "$ %s\n%.*s", s->command, (int)s->out_len, (const char *)s->out);
		if (s->errout_len) {
			u = strlen(err);
			snprintf(err + u, cap - u, "$ %s\n%.*s", s->command, (int)s->errout_len,
				 (const char *)s->errout);
		}
	}
	cJSON_AddBoolToObject(a, "timedOut", timed_out);
	cJSON_AddItemToObject(a, "steps", steps);
	cJSON *arts = cJSON_CreateArray();
	for (size_t i = 0; i < f->n_artifacts; i++) {
		const struct bh_artifact *x = &f->artifacts[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", x->path);
		cJSON_AddNumberToObject(o, "bytes", (double)x->len);
		if (printable(x->content, x->len)) {
			char *text = strndup((const char *)x->content, x->len);
			cJSON_AddStringToObject(o, "content", text ? text : "");
			free(text);
		}
		cJSON_AddItemToArray(arts, o);
	}
	cJSON_AddItemToObject(a, "artifacts", arts);
	cJSON_AddStringToObject(a, "isolation", res->isolation ? res->isolation : "");
	cJSON_AddBoolToObject(a, "freshSandbox", true);
	cJSON_AddStringToObject(a, "recordSha256", res->record.record_sha256);
	cJSON_AddStringToObject(a, "stdout", out);
	cJSON_AddStringToObject(a, "stderr", err);
	free(out);
	free(err);
	return a;
}

static cJSON *project_path(struct recording *r, const cJSON *project, const struct wire_run_response *res,
			   const struct bh_client_error *err, size_t n_files, size_t n_steps, size_t n_arts)
{
	cJSON *path = cJSON_CreateArray();
	const struct rec_exchange *x = rec_tap_last(&r->tap, "Run");
	const char *tool = rec_str(project, "tool", "runProject");
	cJSON *call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "type", "tool-call");
	cJSON_AddStringToObject(call, "toolName", tool);
	cJSON *input = cJSON_Duplicate(project, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(input, "tool");
	cJSON_AddItemToObject(call, "input", input);
	char *call_json = cJSON_PrintUnformatted(call);
	cJSON_Delete(call);
	rec_visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_DOWN, "the model's tool call", call_json,
		  "The model calls %s with a project: %zu file%s, %zu step%s to run in order, %zu artifact%s to "
		  "bring back.",
		  tool, n_files, n_files == 1 ? "" : "s", n_steps, n_steps == 1 ? "" : "s", n_arts,
		  n_arts == 1 ? "" : "s");
	free(call_json);
	rec_visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
		  "The agent runs the tool. A project is a run of its own in a fresh sandbox, not a call in the "
		  "conversation's session: the manager has no part in it.");
	rec_visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_DOWN, NULL, NULL,
		  "The tool sends plimsoll.v1 Run with a project payload straight to the daemon (floor %s): the "
		  "files for /work, the steps, the artifacts.",
		  r->floor);
	if (err) {
		char words[1024];
		snprintf(words, sizeof words, "The daemon refused Run: %s", err->message);
		rec_exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
		rec_exchange_up(path, SCENARIO_HOP_EXECUTE_CODE, NULL, "The tool returns the refusal, not an answer.");
		rec_visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
			  "The agent hands the refusal to the model as the tool's error.");
		rec_visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_UP, NULL, NULL, "The model reads: %s", err->message);
		return path;
	}
	char words[2048];
	snprintf(words, sizeof words,
		 "The daemon took Run: a project, held to plimsoll's limits, in a sandbox of its own at the %s tier "
		 "(the floor is %s); the init writes the files and runs the plan.",
		 res->isolation, r->floor);
	rec_exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
	const struct bh_result_fields *f = &res->result;
	char ran[1024] = "";
	for (size_t i = 0; i < f->n_steps; i++) {
		size_t u = strlen(ran);
		snprintf(ran + u, sizeof ran - u, "%s`%.60s` exit %d%s", i ? ", " : "", f->steps[i].command,
			 f->steps[i].exit_code, f->steps[i].timed_out ? " (timed out)" : "");
	}
	char arts[512] = "";
	for (size_t i = 0; i < f->n_artifacts; i++) {
		size_t u = strlen(arts);
		snprintf(arts + u, sizeof arts - u, "%s%s (%zu bytes)", i ? ", " : "", f->artifacts[i].path,
			 f->artifacts[i].len);
	}
	rec_visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		  "The init wrote %zu file%s into /work and ran %zu of the %zu steps in order, by /bin/sh, stopping at "
		  "the first that fails: %s. It brought back %s.",
		  n_files, n_files == 1 ? "" : "s", f->n_steps, n_steps, *ran ? ran : "none", *arts ? arts : "no artifact");
	const char *outcome = bh_project_outcome_name((enum bh_project_outcome)f->outcome);
	snprintf(words, sizeof words,
		 "The daemon answers Run with the typed outcome %s%s%s and the run record, its result digest in "
		 "plimsoll's project encoding (outcome, steps, artifacts): the receipt (enter opens it, verified).",
		 outcome, f->outcome_detail && *f->outcome_detail ? ": " : "",
		 f->outcome_detail ? f->outcome_detail : "");
	rec_exchange_up(path, SCENARIO_HOP_DAEMON, x, words);
	rec_visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_UP, NULL, NULL,
		  "The tool checked the answer (record version 2, digests, tier at or above the floor) and returns "
		  "the outcome, each step's exit and output, and the artifacts.");
	rec_visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		  "The agent hands the tool's result to the model's next step.");
	rec_visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_UP, NULL, NULL, "The model reads the outcome: %s%s%s.",
		  outcome, *arts ? "; the artifact " : "", arts);
	return path;
}

static cJSON *lit(bool answered)
{
	cJSON *a = cJSON_CreateArray();
	enum scenario_hop h[] = {SCENARIO_HOP_MODEL, SCENARIO_HOP_AGENT, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_HOP_DAEMON,
				 SCENARIO_HOP_SANDBOX};
	for (size_t i = 0; i < (answered ? 5u : 4u); i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(scenario_hop_name(h[i])));
	return a;
}

int rec_do_project(struct recording *r, const cJSON *src, const cJSON *project)
{
	struct worker *w = rec_worker(r, rec_str(src, "worker", "A"));
	if (!w)
		return -1;
	struct bh_file files[MAX_ITEMS];
	char *steps[MAX_ITEMS], *arts[MAX_ITEMS];
	size_t n_files = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(project, "files")) {
		const char *p = rec_str(f, "path", NULL), *c = rec_str(f, "content", NULL);
		if (!p || !c || n_files == MAX_ITEMS) {
			cli_error("%s: a project's files are [{\"path\", \"content\"}] (at most %d)", r->script_path,
				  MAX_ITEMS);
			return -1;
		}
		files[n_files++] = (struct bh_file){.path = p, .content = (const uint8_t *)c, .len = strlen(c)};
	}
	size_t n_steps = strings_of(cJSON_GetObjectItemCaseSensitive(project, "steps"), steps);
	size_t n_arts = strings_of(cJSON_GetObjectItemCaseSensitive(project, "artifacts"), arts);
	if (!n_steps) {
		cli_error("%s: a project needs \"steps\" (shell commands, in order)", r->script_path);
		return -1;
	}
	cJSON *s = rec_step_new(r, src, SCENARIO_CALL);
	/* The call as the player shows it: the plan, one step a line. */
	size_t len = 1;
	for (size_t i = 0; i < n_steps; i++)
		len += strlen(steps[i]) + 3;
	char *plan = calloc(1, len);
	for (size_t i = 0; i < n_steps; i++) {
		strcat(plan, "$ ");
		strcat(plan, steps[i]);
		strcat(plan, "\n");
	}
	cJSON *in = cJSON_CreateObject();
	cJSON_AddStringToObject(in, "language", "project");
	cJSON_AddStringToObject(in, "code", plan);
	free(plan);
	cJSON *sent = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(project, "files"), 1);
	if (sent)
		cJSON_AddItemToObject(in, "files", sent);
	cJSON_AddItemToObject(in, "artifacts", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(project, "artifacts"), 1));
	cJSON_AddItemToObject(s, "call", in);
	struct wire_project_run p = {.files = files, .n_files = n_files, .steps = steps, .n_steps = n_steps,
				     .artifacts = arts, .n_artifacts = n_arts};
	enum bh_tier floor;
	struct bh_client_run_opts opts = {.floor = bh_tier_parse(r->floor, &floor) == 0 ? floor : BH_TIER_UNKNOWN};
	struct wire_run_response res;
	memset(&res, 0, sizeof res);
	struct bh_client_error *err = NULL;
	int rc = bh_client_run_project(w->c, &p, &opts, &res, &err);
	if (rc == 0) {
		cJSON_AddStringToObject(s, "outcome", scenario_outcome_name(SCENARIO_ANSWERED));
		cJSON_AddItemToObject(s, "answer", project_answer(&res));
		cJSON_AddNullToObject(s, "error");
		cJSON_AddBoolToObject(s, "retried", false);
		cJSON_AddItemToObject(s, "path", project_path(r, project, &res, NULL, n_files, n_steps, n_arts));
		wire_run_response_free(&res);
	} else {
		bool refused = err && err->not_dispatched;
		cJSON_AddStringToObject(s, "outcome",
					scenario_outcome_name(refused ? SCENARIO_REFUSED : SCENARIO_MAY_HAVE_RUN));
		cJSON_AddNullToObject(s, "answer");
		cJSON_AddStringToObject(s, "error", err ? err->message : "not sent");
		cJSON_AddBoolToObject(s, "retried", false);
		if (!refused) {
			cli_error("%s: the project run failed: %s", r->script_path, err ? err->message : "?");
			bh_client_error_free(err);
			cJSON_Delete(s);
			return -1;
		}
		cJSON_AddItemToObject(s, "path", project_path(r, project, NULL, err, n_files, n_steps, n_arts));
	}
	bool answered = rc == 0;
	bh_client_error_free(err);
	rec_step_finish(r, s, lit(answered), answered ? SCENARIO_HOP_NONE : SCENARIO_HOP_DAEMON);
	/* Run is not one of the session procedures counted: this step says it. */
	cJSON *last = cJSON_GetArrayItem(r->steps, cJSON_GetArraySize(r->steps) - 1);
	cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(last, "daemon_calls"), "Run",
				(double)bh_client_procedure_count(w->c, "Run"));
	return 0;
}
