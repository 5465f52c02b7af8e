/* `bulkhead record`'s script and scenario files: the script read and its
 * steps checked before any daemon starts, the recording set up from it, and
 * the scenario written once every step has played (docs/scenarios.md). */
#include "recorder.h"
#include "scenario.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *rec_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : dflt;
}

double rec_num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static char *version_of(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return strdup("");
	char line[256] = "";
	if (!fgets(line, sizeof line, p))
		line[0] = '\0';
	pclose(p);
	line[strcspn(line, "\n")] = '\0';
	return strdup(line);
}

static cJSON *source_block(struct recording *r)
{
	cJSON *src = cJSON_CreateObject();
	cJSON_AddStringToObject(src, "recorder", "bulkhead record");
	char when[32];
	time_t now = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	cJSON_AddStringToObject(src, "recorded_at", when);
	cJSON_AddStringToObject(src, "script", r->script_path);
	char *crun = version_of("crun --version 2>/dev/null | head -1");
	char *runsc = version_of("runsc --version 2>/dev/null | head -1");
	char daemon[512];
	snprintf(daemon, sizeof daemon, "bulkhead serve %s on a unix socket, tier %s (%s)",
		 BULKHEAD_VERSION, r->d.isolation, !strcmp(r->d.isolation, "kernel") ? runsc : crun);
	cJSON_AddStringToObject(src, "daemon", daemon);
	const cJSON *fx = cJSON_GetObjectItemCaseSensitive(r->script, "fixtures");
	cJSON_AddItemToObject(src, "fixtures", fx ? cJSON_Duplicate(fx, 1) : cJSON_CreateArray());
	cJSON *v = cJSON_AddObjectToObject(src, "versions");
	cJSON_AddStringToObject(v, "bulkhead", BULKHEAD_VERSION);
	cJSON_AddStringToObject(v, "crun", crun);
	cJSON_AddStringToObject(v, "runsc", runsc);
	free(crun);
	free(runsc);
	/* ---- egress and projects: a script says what else played its part ---- */
	char how[2048];
	snprintf(how, sizeof how, "%s%s%s",
		 "bulkhead record played the agent's hooks and the scripted model's "
		 "executeCode calls through the C conversation manager (src/client) "
		 "against a real bulkhead serve it started for the recording; every "
		 "answer is the tool's answer as returned.",
		 rec_str(r->script, "how", NULL) ? " " : "", rec_str(r->script, "how", ""));
	cJSON_AddStringToObject(src, "how", how);
	return src;
}

int rec_write_scenario(struct recording *r, const char *out_path)
{
	cJSON *sc = cJSON_CreateObject();
	cJSON_AddStringToObject(sc, "format", SCENARIO_FORMAT);
	static const char *const copied[] = {"name", "title", "teaches"};
	for (size_t i = 0; i < 3; i++)
		cJSON_AddStringToObject(sc, copied[i], rec_str(r->script, copied[i], ""));
	cJSON_AddStringToObject(sc, "tier", r->d.isolation);
	cJSON_AddStringToObject(sc, "floor", r->floor);
	cJSON_AddNumberToObject(sc, "idle_window_ms", rec_num(r->script, "idle_window_ms", 0));
	cJSON_AddItemToObject(sc, "source", source_block(r));
	cJSON_AddItemToObject(sc, "steps", r->steps);
	r->steps = NULL;
	char *text = cJSON_Print(sc);
	cJSON_Delete(sc);
	/* Round-tripped through the loader before the file exists: a recording
	 * the player would refuse is never written. */
	char err[1024];
	/* ---- hops ---- nor one whose hops contradict its answers */
	struct scenario *check = NULL;
	if (scenario_parse(text, strlen(text), &check, err, sizeof err) == 0) {
		char why[1024];
		size_t bad = scenario_contradictions(check, why, sizeof why);
		scenario_free(check);
		if (bad) {
			cli_error("%s: the recording contradicts itself (%zu): %s; not written", out_path, bad, why);
			free(text);
			return -1;
		}
	}
	/* ---- egress ---- a credential never enters a scenario */
	if (rec_egress_leaks(r, text)) {
		cli_error("%s: the recording holds the profile's credential; not written", out_path);
		free(text);
		return -1;
	}
	int rc = scenario_save(out_path, text, err, sizeof err);
	free(text);
	if (rc < 0)
		cli_error("%s", err);
	return rc;
}

cJSON *rec_load_script(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		cli_error("cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t cap = 0, len = 0, n;
	do {
		if (cap - len < 4096)
			buf = realloc(buf, cap = cap ? cap * 2 : 8192);
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	cJSON *j = cJSON_Parse(buf);
	if (!j)
		cli_error("%s: not JSON (near byte %td)", path,
			  cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - buf : (ptrdiff_t)0);
	free(buf);
	return j;
}

/* Every step is checked before a daemon starts: a typo costs no sandbox. */
static int validate(const struct recording *r)
{
	static const char *const hooks[] = {"turn_start", "suspend", "complete"};
	static const char *const ops[] = {"pause", "resume", "hibernate", "inspect", "kill_daemon",
					  "leaks", "gc", "restart_daemon"};
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(r->script, "steps");
	if (!cJSON_IsArray(steps) || !cJSON_GetArraySize(steps)) {
		cli_error("%s: \"steps\" must be a non-empty array", r->script_path);
		return -1;
	}
	const cJSON *st;
	int index = 0;
	cJSON_ArrayForEach(st, steps) {
		index++;
		const char *hook = rec_str(st, "hook", NULL), *op = rec_str(st, "operator", NULL);
		bool known = false;
		for (size_t i = 0; hook && i < sizeof hooks / sizeof hooks[0]; i++)
			known = known || !strcmp(hook, hooks[i]);
		for (size_t i = 0; op && i < sizeof ops / sizeof ops[0]; i++)
			known = known || !strcmp(op, ops[i]);
		if (cJSON_GetObjectItemCaseSensitive(st, "call") ||
		    cJSON_GetObjectItemCaseSensitive(st, "concurrent") ||
		    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(st, "project")) || /* ---- project ---- */
		    cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(st, "wait_ms")))
			known = !hook && !op;
		/* ---- approvals: a call's operator decision ---- */
		const cJSON *ap = cJSON_GetObjectItemCaseSensitive(st, "approval");
		if (ap) {
			const char *dec = rec_str(ap, "decision", "");
			if (!cJSON_GetObjectItemCaseSensitive(st, "call") ||
			    (strcmp(dec, "approve") && strcmp(dec, "deny")) ||
			    (!strcmp(dec, "deny") && !*rec_str(ap, "reason", ""))) {
				cli_error("%s: step %d: \"approval\" goes on a call: {\"decision\": "
					  "\"approve\"|\"deny\", \"reason\"} (a denial needs a reason)",
					  r->script_path, index);
				return -1;
			}
		}
		if (!known) {
			cli_error("%s: step %d: %s", r->script_path, index,
				  hook ? "unknown hook (turn_start, suspend, complete)"
				  : op ? "unknown operator action (pause, resume, hibernate, inspect, "
					 "kill_daemon, leaks, gc, restart_daemon)"
				       : "none of call, hook, operator, concurrent, project, wait_ms");
			return -1;
		}
	}
	return 0;
}

int rec_setup(struct recording *r)
{
	const char *name = rec_str(r->script, "name", NULL);
	if (!name || !*name || strchr(name, '/')) {
		cli_error("%s: \"name\" must be a file name", r->script_path);
		return -1;
	}
	r->floor = rec_str(r->script, "floor", "container");
	enum bh_tier floor, tier;
	const char *tier_name = rec_str(r->script, "tier", "container");
	if (bh_tier_parse(r->floor, &floor) < 0 || bh_tier_parse(tier_name, &tier) < 0) {
		cli_error("%s: \"tier\" and \"floor\" are container, kernel or vm", r->script_path);
		return -1;
	}
	snprintf(r->d.tier, sizeof r->d.tier, "%s", tier_name);
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(r->script, "daemon_args");
	const cJSON *a;
	cJSON_ArrayForEach(a, args) {
		if (cJSON_IsString(a) && r->d.n_args < sizeof r->d.args / sizeof r->d.args[0])
			r->d.args[r->d.n_args++] = a->valuestring;
	}
	bh_manager_defaults(&r->mo);
	r->mo.floor = floor;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(r->script, "manager");
	r->mo.max_per_owner = (uint32_t)rec_num(m, "max_per_owner", r->mo.max_per_owner);
	r->mo.idle_close_ms = (uint32_t)rec_num(m, "idle_close_ms", 0);
	r->mo.max_sessions = (uint32_t)rec_num(m, "max_sessions", 0);
	/* ---- egress ---- the profile each conversation's sandbox holds */
	if (cJSON_GetObjectItemCaseSensitive(m, "grant_profile") ||
	    cJSON_GetObjectItemCaseSensitive(m, "grant_profiles")) {
		r->mo.grant_profile_for = rec_grant_profile_for;
		r->mo.grant_profile_arg = r;
	}
	r->steps = cJSON_CreateArray();
	return validate(r);
}

