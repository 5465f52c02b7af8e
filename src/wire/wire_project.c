/* ---- project: ProjectRun and ProjectResult in proto3 JSON ----
 * The request is held to plimsoll's validation (files as a cell's; 1 to 20
 * steps of at most 16 KiB; at most 100 artifact paths, strict, none twice),
 * each refusal naming the field. The result is written as plimsoll's
 * ProjectResult (steps, outcome by its enum name, artifacts, outcomeDetail,
 * artifactsTruncated) and read back by the client as strictly: a daemon's
 * answer that breaks those limits is DATA_LOSS. */
#include "wire_internal.h"
#include "project.h"

#include <stdio.h>
#include <string.h>

/* ---- the request ---- */

void wire_project_run_free(struct wire_project_run *p)
{
	wire_files_free(p->files, p->n_files);
	wire_strings_free(p->steps, p->n_steps);
	wire_strings_free(p->artifacts, p->n_artifacts);
	free(p->grant_profile);
	memset(p, 0, sizeof *p);
}

int wire_read_project(const struct jr *r, const cJSON *obj, struct wire_project_run *out)
{
	char q[64];
	if (wire_read_files(r, obj, "project", &out->files, &out->n_files) < 0 ||
	    jr_strings(r, obj, "project", "steps", &out->steps, &out->n_steps) < 0 ||
	    jr_strings(r, obj, "project", "artifacts", &out->artifacts, &out->n_artifacts) < 0 ||
	    jr_string(r, obj, "project", "grantProfile", &out->grant_profile, NULL) < 0)
		return -1;
	if (out->n_steps < 1 || out->n_steps > BH_PROJECT_MAX_STEPS)
		return jr_fail(r, "project.steps must hold 1 to %u commands (it holds %zu)",
			       BH_PROJECT_MAX_STEPS, out->n_steps);
	for (size_t i = 0; i < out->n_steps; i++) {
		size_t n = strlen(out->steps[i]);
		if (n == 0)
			return jr_fail(r, "project.steps[%zu] is empty", i);
		if (n > BH_PROJECT_MAX_STEP_BYTES)
			return jr_fail(r, "project.steps[%zu] is %zu bytes, more than the %u allowed", i,
				       n, BH_PROJECT_MAX_STEP_BYTES);
	}
	if (out->n_artifacts > BH_PROJECT_MAX_ARTIFACTS)
		return jr_fail(r, "project.artifacts holds %zu paths, more than the %u allowed",
			       out->n_artifacts, BH_PROJECT_MAX_ARTIFACTS);
	for (size_t i = 0; i < out->n_artifacts; i++) {
		const char *a = out->artifacts[i];
		const char *problem = wire_path_problem(a, strlen(a));
		if (problem)
			return jr_fail(r, "project.artifacts[%zu] %s %s", i,
				       wire_quote(q, a, strlen(a)), problem);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(out->artifacts[k], a))
				return jr_fail(r, "project.artifacts[%zu] %s repeats artifacts[%zu]", i,
					       wire_quote(q, a, strlen(a)), k);
	}
	/* ---- pgrant: a grant's name is measured as javascript.grantProfile's
	 * is (plimsoll refuses a longer one as a request error); whether it
	 * exists and is this caller's is the daemon's to say ---- */
	size_t g = out->grant_profile ? strlen(out->grant_profile) : 0;
	if (g > WIRE_MAX_NAME_BYTES)
		return jr_fail(r, "project.grantProfile is %zu bytes, more than the %u a profile's "
				  "name may have",
			       g, WIRE_MAX_NAME_BYTES);
	return 0;
}

cJSON *wire_project_run_json(const struct wire_project_run *p)
{
	cJSON *o = jw_object();
	if (p->n_files) {
		cJSON *files = wire_check_alloc(cJSON_CreateArray());
		for (size_t i = 0; i < p->n_files; i++) {
			cJSON *f = jw_object();
			jw_string(f, "path", p->files[i].path);
			jw_string_n(f, "content", (const char *)p->files[i].content, p->files[i].len);
			cJSON_AddItemToArray(files, f);
		}
		cJSON_AddItemToObject(o, "files", files);
	}
	jw_strings(o, "steps", (const char *const *)p->steps, p->n_steps);
	jw_strings(o, "artifacts", (const char *const *)p->artifacts, p->n_artifacts);
	jw_string(o, "grantProfile", p->grant_profile);
	return o;
}

void wire_project_request_fields(const struct wire_project_run *p, struct bh_request_fields *out)
{
	out->kind = "project";
	out->grant_profile = p->grant_profile ? p->grant_profile : "";
	out->files = p->files;
	out->n_files = p->n_files;
	out->steps = (const char *const *)p->steps;
	out->n_steps = p->n_steps;
	out->artifacts = (const char *const *)p->artifacts;
	out->n_artifacts = p->n_artifacts;
}

/* ---- the result ---- */

static const char *const outcome_names[] = {
	"PROJECT_OUTCOME_UNSPECIFIED", "PROJECT_OUTCOME_COMPLETED", "PROJECT_OUTCOME_SETUP_FAILED",
	"PROJECT_OUTCOME_TIMED_OUT", "PROJECT_OUTCOME_PROTOCOL_ERROR",
};

cJSON *wire_project_result_json(const struct bh_result_fields *res)
{
	cJSON *o = jw_object();
	if (res->n_steps) {
		cJSON *steps = wire_check_alloc(cJSON_CreateArray());
		for (size_t i = 0; i < res->n_steps; i++) {
			const struct bh_project_step *st = &res->steps[i];
			cJSON *s = jw_object();
			jw_string(s, "command", st->command);
			jw_bytes(s, "stdout", st->out, st->out_len);
			jw_bytes(s, "stderr", st->errout, st->errout_len);
			jw_i32(s, "exitCode", st->exit_code);
			jw_bool(s, "timedOut", st->timed_out);
			jw_i64(s, "durationMs", (int64_t)(st->duration_us / 1000u));
			jw_bool(s, "stdoutTruncated", st->stdout_truncated);
			jw_bool(s, "stderrTruncated", st->stderr_truncated);
			cJSON_AddItemToArray(steps, s);
		}
		cJSON_AddItemToObject(o, "steps", steps);
	}
	/* proto3 JSON writes an enum by name and omits the zero value. */
	if (res->outcome > 0 && res->outcome < (int)ARRAY_SIZE(outcome_names))
		jw_string(o, "outcome", outcome_names[res->outcome]);
	if (res->n_artifacts) {
		cJSON *arts = wire_check_alloc(cJSON_CreateArray());
		for (size_t i = 0; i < res->n_artifacts; i++) {
			cJSON *a = jw_object();
			jw_string(a, "path", res->artifacts[i].path);
			jw_bytes(a, "content", res->artifacts[i].content, res->artifacts[i].len);
			cJSON_AddItemToArray(arts, a);
		}
		cJSON_AddItemToObject(o, "artifacts", arts);
	}
	jw_string(o, "outcomeDetail", res->outcome_detail);
	jw_bool(o, "artifactsTruncated", res->artifacts_truncated);
	return o;
}

void wire_project_result_free(struct bh_result_fields *res)
{
	for (size_t i = 0; res->steps && i < res->n_steps; i++) {
		free((char *)res->steps[i].command);
		free((uint8_t *)res->steps[i].out);
		free((uint8_t *)res->steps[i].errout);
	}
	free((struct bh_project_step *)res->steps);
	for (size_t i = 0; res->artifacts && i < res->n_artifacts; i++) {
		free((char *)res->artifacts[i].path);
		free((uint8_t *)res->artifacts[i].content);
	}
	free((struct bh_artifact *)res->artifacts);
	free((char *)res->outcome_detail);
	res->steps = NULL;
	res->artifacts = NULL;
	res->outcome_detail = NULL;
	res->n_steps = res->n_artifacts = 0;
}

/* An enum is read by name or by number (proto3 JSON accepts both); a
 * number this build does not know is refused: the record holds the number,
 * and a guess would not verify anyway. */
static int read_outcome(const struct jr *r, const cJSON *obj, const char *path, int *out)
{
	const cJSON *v;
	if (jr_field(r, obj, path, "outcome", &v) < 0)
		return -1;
	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsString(v)) {
		for (size_t i = 0; i < ARRAY_SIZE(outcome_names); i++)
			if (!strcmp(v->valuestring, outcome_names[i])) {
				*out = (int)i;
				return 0;
			}
		return jr_fail(r, "%s.outcome is no ProjectOutcome this client knows", path);
	}
	int32_t n;
	if (jr_i32(r, obj, path, "outcome", &n) < 0)
		return -1;
	if (n < 0 || n >= (int32_t)ARRAY_SIZE(outcome_names))
		return jr_fail(r, "%s.outcome %d is no ProjectOutcome this client knows", path, n);
	*out = n;
	return 0;
}

static int read_step(const struct jr *r, const cJSON *s, const char *path,
		     struct bh_project_step *st)
{
	int32_t exit_code = 0;
	int64_t ms = 0;
	size_t n = 0;
	if (jr_string(r, s, path, "command", (char **)&st->command, &n) < 0 ||
	    jr_bytes(r, s, path, "stdout", (uint8_t **)&st->out, &st->out_len) < 0 ||
	    jr_bytes(r, s, path, "stderr", (uint8_t **)&st->errout, &st->errout_len) < 0 ||
	    jr_i32(r, s, path, "exitCode", &exit_code) < 0 ||
	    jr_bool(r, s, path, "timedOut", &st->timed_out) < 0 ||
	    jr_i64(r, s, path, "durationMs", &ms) < 0 ||
	    jr_bool(r, s, path, "stdoutTruncated", &st->stdout_truncated) < 0 ||
	    jr_bool(r, s, path, "stderrTruncated", &st->stderr_truncated) < 0)
		return -1;
	st->exit_code = exit_code;
	st->duration_us = ms > 0 ? (uint64_t)ms * 1000u : 0;
	return 0;
}

int wire_read_project_result(const struct jr *r, const cJSON *obj, const char *path,
			     struct bh_result_fields *out)
{
	const cJSON *steps, *arts;
	char sub[64];
	size_t n = 0;
	if (read_outcome(r, obj, path, &out->outcome) < 0 ||
	    jr_string(r, obj, path, "outcomeDetail", (char **)&out->outcome_detail, &n) < 0 ||
	    jr_bool(r, obj, path, "artifactsTruncated", &out->artifacts_truncated) < 0 ||
	    jr_array(r, obj, path, "steps", &steps) < 0 ||
	    jr_array(r, obj, path, "artifacts", &arts) < 0)
		return -1;
	int ns = steps ? cJSON_GetArraySize(steps) : 0, na = arts ? cJSON_GetArraySize(arts) : 0;
	if (ns > (int)BH_PROJECT_MAX_STEPS)
		return jr_fail(r, "%s.steps holds %d steps; a project has at most %u", path, ns,
			       BH_PROJECT_MAX_STEPS);
	if (na > (int)BH_PROJECT_MAX_ARTIFACTS)
		return jr_fail(r, "%s.artifacts holds %d; a project asks at most %u", path, na,
			       BH_PROJECT_MAX_ARTIFACTS);
	struct bh_project_step *st = xzalloc(((size_t)ns + 1) * sizeof *st);
	out->steps = st;
	for (const cJSON *s = steps ? steps->child : NULL; s; s = s->next) {
		snprintf(sub, sizeof sub, "%s.steps[%zu]", path, out->n_steps);
		if (!cJSON_IsObject(s))
			return jr_fail(r, "%s must be a JSON object", sub);
		out->n_steps++;
		if (read_step(r, s, sub, &st[out->n_steps - 1]) < 0)
			return -1;
	}
	struct bh_artifact *a = xzalloc(((size_t)na + 1) * sizeof *a);
	out->artifacts = a;
	for (const cJSON *v = arts ? arts->child : NULL; v; v = v->next) {
		snprintf(sub, sizeof sub, "%s.artifacts[%zu]", path, out->n_artifacts);
		if (!cJSON_IsObject(v))
			return jr_fail(r, "%s must be a JSON object", sub);
		struct bh_artifact *x = &a[out->n_artifacts++];
		if (jr_string(r, v, sub, "path", (char **)&x->path, &n) < 0 ||
		    jr_bytes(r, v, sub, "content", (uint8_t **)&x->content, &x->len) < 0)
			return -1;
	}
	return 0;
}
