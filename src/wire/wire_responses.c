/* Answers: RunResponse, SessionRunResponse, OpenSessionResponse,
 * CloseSessionResponse, DescribeResponse. The daemon encodes them; the client
 * decodes them into the same structs and checks the record against what it
 * received (the result is a bh_result_fields, ready for bh_result_digest). A
 * decoded answer that does not keep the schema is DATA_LOSS, unmarked: the
 * call may have run, and nothing in the answer can be believed. */
#include "wire_internal.h"

#include <stdio.h>
#include <string.h>

static struct jr answer_reader(struct wire_status *st)
{
	return (struct jr){st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED};
}

static int parse_answer(const char *body, size_t len, const char *what, cJSON **root,
			struct wire_status *st)
{
	cleanup_free char *why = NULL;
	if (wire_parse_body(body, len, root, &why) < 0)
		return wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "the %s: %s", what, why);
	return 0;
}

/* A string field, owned ("" when absent), into a const slot. */
static int read_str(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		    const char **dst)
{
	char *s = NULL;
	if (jr_string(r, obj, path, name, &s, NULL) < 0)
		return -1;
	*dst = s;
	return 0;
}

/* ---- SessionEnd by name or number ---- */

static void put_end(cJSON *o, const char *name, enum wire_session_end e)
{
	if (e == WIRE_END_OPEN)
		return;
	if (e > WIRE_END_OPEN && e <= WIRE_END_UNCLAIMED)
		wire_check_alloc(cJSON_AddStringToObject(o, name, wire_session_end_enum_name(e)));
	else
		wire_check_alloc(cJSON_AddNumberToObject(o, name, e));
}

/* A name or number this build does not know still says the session ended:
 * it reads as WIRE_END_UNKNOWN, never as open (no digest covers it, so a
 * newer daemon's value is read, not refused). */
static int read_end(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		    enum wire_session_end *out)
{
	const cJSON *v;
	*out = WIRE_END_OPEN;
	if (jr_field(r, obj, path, name, &v) < 0)
		return -1;
	if (!v)
		return 0;
	if (cJSON_IsString(v)) {
		*out = WIRE_END_UNKNOWN;
		for (int e = WIRE_END_OPEN; e <= WIRE_END_UNCLAIMED; e++)
			if (!strcmp(v->valuestring, wire_session_end_enum_name(e)))
				*out = (enum wire_session_end)e;
		return 0;
	}
	int32_t n;
	if (jr_i32(r, obj, path, name, &n) < 0)
		return -1;
	*out = n >= WIRE_END_OPEN && n <= WIRE_END_UNCLAIMED ? (enum wire_session_end)n
							     : WIRE_END_UNKNOWN;
	return 0;
}

/* ---- RunResponse ---- */

static cJSON *result_json(const struct bh_result_fields *res)
{
	cJSON *o = jw_object();
	bool cell = !strcmp(res->kind, "cell");
	jw_bytes(o, "stdout", res->out, res->out_len);
	jw_bytes(o, "stderr", res->err, res->err_len);
	jw_i32(o, "exitCode", res->exit_code);
	jw_bool(o, "timedOut", res->timed_out);
	jw_bool(o, "stdoutTruncated", res->stdout_truncated);
	jw_bool(o, "stderrTruncated", res->stderr_truncated);
	if (cell) {
		jw_bool(o, "interpreterStarted", res->interpreter_started);
		jw_bool(o, "interpreterEnded", res->interpreter_ended);
	}
	return o;
}

static cJSON *run_response_json(const struct wire_run_response *r)
{
	cJSON *o = jw_object();
	jw_string(o, "sandbox", r->sandbox);
	jw_string(o, "isolation", r->isolation);
	jw_i64(o, "durationMs", r->duration_ms);
	if (r->has_record)
		jw_add(o, "record", wire_record_json(&r->record));
	jw_string(o, "softwareIdentity", r->software_identity);
	jw_string(o, "environment", r->environment);
	const char *kind = r->result.kind;
	if (kind && (!strcmp(kind, "javascript") || !strcmp(kind, "cell")))
		jw_add(o, kind, result_json(&r->result));
	else if (kind && !strcmp(kind, "project")) /* ---- project ---- */
		jw_add(o, kind, wire_project_result_json(&r->result));
	return o;
}

char *wire_encode_run_response(const struct wire_run_response *r)
{
	return jw_print(run_response_json(r));
}

static int read_result(const struct jr *r, const cJSON *obj, const char *path,
		       struct bh_result_fields *out)
{
	int32_t exit_code = 0;
	bool cell = !strcmp(out->kind, "cell");
	if (jr_bytes(r, obj, path, "stdout", (uint8_t **)&out->out, &out->out_len) < 0 ||
	    jr_bytes(r, obj, path, "stderr", (uint8_t **)&out->err, &out->err_len) < 0 ||
	    jr_i32(r, obj, path, "exitCode", &exit_code) < 0 ||
	    jr_bool(r, obj, path, "timedOut", &out->timed_out) < 0 ||
	    jr_bool(r, obj, path, "stdoutTruncated", &out->stdout_truncated) < 0 ||
	    jr_bool(r, obj, path, "stderrTruncated", &out->stderr_truncated) < 0)
		return -1;
	out->exit_code = exit_code;
	if (cell && (jr_bool(r, obj, path, "interpreterStarted", &out->interpreter_started) < 0 ||
		     jr_bool(r, obj, path, "interpreterEnded", &out->interpreter_ended) < 0))
		return -1;
	return 0;
}

static void result_free(struct bh_result_fields *res)
{
	free((uint8_t *)res->out);
	free((uint8_t *)res->err);
	wire_project_result_free(res); /* ---- project ---- */
	memset(res, 0, sizeof *res);
}

void wire_run_response_free(struct wire_run_response *r)
{
	if (!r)
		return;
	free((char *)r->sandbox);
	free((char *)r->isolation);
	free((char *)r->software_identity);
	free((char *)r->environment);
	if (r->has_record)
		wire_record_free(&r->record);
	result_free(&r->result);
	memset(r, 0, sizeof *r);
}

static int read_run_response(const struct jr *r, const cJSON *obj, const char *path,
			     struct wire_run_response *out)
{
	static const char *const kinds[] = {"javascript", "project", "module", "cell"};
	const cJSON *rec, *res = NULL;
	char sub[32];
	memset(out, 0, sizeof *out);
	if (read_str(r, obj, path, "sandbox", &out->sandbox) < 0 ||
	    read_str(r, obj, path, "isolation", &out->isolation) < 0 ||
	    jr_i64(r, obj, path, "durationMs", &out->duration_ms) < 0 ||
	    read_str(r, obj, path, "softwareIdentity", &out->software_identity) < 0 ||
	    read_str(r, obj, path, "environment", &out->environment) < 0 ||
	    jr_object(r, obj, path, "record", &rec) < 0)
		return -1;
	snprintf(sub, sizeof sub, "%s%srecord", path, *path ? "." : "");
	if (rec) {
		if (wire_record_read(r, rec, sub, &out->record) < 0)
			return -1;
		out->has_record = true;
	}
	for (size_t i = 0; i < 4; i++) {
		const cJSON *v;
		if (jr_object(r, obj, path, kinds[i], &v) < 0)
			return -1;
		if (!v)
			continue;
		if (res)
			return jr_fail(r, "%s%sthe answer carries more than one result (%s and %s)", path,
				       *path ? ": " : "", out->result.kind, kinds[i]);
		res = v;
		out->result.kind = kinds[i];
	}
	if (!res)
		return 0;
	snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", out->result.kind);
	if (!strcmp(out->result.kind, "project")) /* ---- project ---- */
		return wire_read_project_result(r, res, sub, &out->result);
	if (strcmp(out->result.kind, "javascript") && strcmp(out->result.kind, "cell"))
		return 0;
	return read_result(r, res, sub, &out->result);
}

int wire_decode_run_response(const char *body, size_t len, struct wire_run_response *out,
			     struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = answer_reader(st);
	memset(out, 0, sizeof *out);
	if (parse_answer(body, len, "RunResponse", &root, st) < 0)
		return -1;
	if (read_run_response(&r, root, "", out) < 0) {
		wire_run_response_free(out);
		return -1;
	}
	return 0;
}

/* ---- SessionRunResponse ---- */

char *wire_encode_session_run_response(const struct wire_session_run_response *r)
{
	cJSON *o = jw_object();
	if (r->has_run)
		jw_add(o, "run", run_response_json(&r->run));
	put_end(o, "ended", r->ended);
	jw_string(o, "endDetail", r->end_detail);
	return jw_print(o);
}

void wire_session_run_response_free(struct wire_session_run_response *r)
{
	if (!r)
		return;
	wire_run_response_free(&r->run);
	free((char *)r->end_detail);
	memset(r, 0, sizeof *r);
}

int wire_decode_session_run_response(const char *body, size_t len,
				     struct wire_session_run_response *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = answer_reader(st);
	const cJSON *run;
	memset(out, 0, sizeof *out);
	if (parse_answer(body, len, "SessionRunResponse", &root, st) < 0)
		return -1;
	if (jr_object(&r, root, "", "run", &run) < 0 ||
	    (run && read_run_response(&r, run, "run", &out->run) < 0) ||
	    read_end(&r, root, "", "ended", &out->ended) < 0 ||
	    read_str(&r, root, "", "endDetail", &out->end_detail) < 0) {
		wire_session_run_response_free(out);
		return -1;
	}
	out->has_run = run != NULL;
	return 0;
}

/* ---- OpenSessionResponse ---- */

#define OPENED(member) WIRE_AT(struct wire_open_session_response, member)
static const struct wire_field open_fields[] = {
	{"sessionId", WIRE_F_STR, OPENED(session_id)}, /* the secret that names it in calls */
	{"session", WIRE_F_STR, OPENED(session)},
	{"sandbox", WIRE_F_STR, OPENED(sandbox)},
	{"isolation", WIRE_F_STR, OPENED(isolation)},
	{"expiresUnixMs", WIRE_F_I64, OPENED(expires_unix_ms)},
	{"idleTimeoutMs", WIRE_F_U32, OPENED(idle_timeout_ms)},
	{"softwareIdentity", WIRE_F_STR, OPENED(software_identity)},
};
#undef OPENED

char *wire_encode_open_session_response(const struct wire_open_session_response *r)
{
	return wire_fields_print(WIRE_FIELDS(open_fields), r);
}

void wire_open_session_response_free(struct wire_open_session_response *r)
{
	wire_fields_clear(WIRE_FIELDS(open_fields), r, sizeof *r);
}

int wire_decode_open_session_response(const char *body, size_t len,
				      struct wire_open_session_response *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = answer_reader(st);
	memset(out, 0, sizeof *out);
	if (parse_answer(body, len, "OpenSessionResponse", &root, st) < 0)
		return -1;
	if (wire_fields_read(&r, root, "", WIRE_FIELDS(open_fields), out) < 0) {
		wire_open_session_response_free(out);
		return -1;
	}
	return 0;
}

/* ---- CloseSessionResponse ---- */

/* Its fields before "ended", a SessionEnd by name or number (put_end). */
#define CLOSED(member) WIRE_AT(struct wire_close_session_response, member)
static const struct wire_field close_fields[] = {
	{"session", WIRE_F_STR, CLOSED(session)},
	{"calls", WIRE_F_U64, CLOSED(calls)},
	{"lastRecordSha256", WIRE_F_STR, CLOSED(last_record_sha256)},
};
#undef CLOSED

char *wire_encode_close_session_response(const struct wire_close_session_response *r)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(close_fields), r);
	put_end(o, "ended", r->ended);
	return jw_print(o);
}

void wire_close_session_response_free(struct wire_close_session_response *r)
{
	wire_fields_clear(WIRE_FIELDS(close_fields), r, sizeof *r);
}

int wire_decode_close_session_response(const char *body, size_t len,
				       struct wire_close_session_response *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = answer_reader(st);
	memset(out, 0, sizeof *out);
	if (parse_answer(body, len, "CloseSessionResponse", &root, st) < 0)
		return -1;
	if (wire_fields_read(&r, root, "", WIRE_FIELDS(close_fields), out) < 0 ||
	    read_end(&r, root, "", "ended", &out->ended) < 0) {
		wire_close_session_response_free(out);
		return -1;
	}
	return 0;
}

/* ---- DescribeResponse ---- */

static void put_environment(cJSON *o, const char *name, const struct wire_environment *env)
{
	if (!env->present)
		return;
	cJSON *e = jw_object();
	jw_string(e, "identity", env->identity);
	jw_u32(e, "maxTimeoutMs", env->max_timeout_ms);
	jw_string(e, "softwareIdentity", env->software_identity);
	jw_strings(e, "languages", env->languages, env->n_languages);
	jw_add(o, name, e);
}

static void environment_free(struct wire_environment *env)
{
	free((char *)env->identity);
	free((char *)env->software_identity);
	wire_strings_free((char **)env->languages, env->n_languages);
	memset(env, 0, sizeof *env);
}

static int read_environment(const struct jr *r, const cJSON *root, const char *name,
			    struct wire_environment *out)
{
	const cJSON *obj;
	memset(out, 0, sizeof *out);
	if (jr_object(r, root, "", name, &obj) < 0)
		return -1;
	char **languages = NULL;
	size_t n = 0;
	if (read_str(r, obj, name, "identity", &out->identity) < 0 ||
	    jr_u32(r, obj, name, "maxTimeoutMs", &out->max_timeout_ms) < 0 ||
	    read_str(r, obj, name, "softwareIdentity", &out->software_identity) < 0 ||
	    jr_strings(r, obj, name, "languages", &languages, &n) < 0)
		return -1;
	out->languages = (const char *const *)languages;
	out->n_languages = n;
	out->present = obj != NULL;
	return 0;
}

/* ---- profiles ---- */
static void put_grant_profiles(cJSON *o, const struct wire_describe_response *r)
{
	if (!r->n_grant_profiles)
		return;
	cJSON *arr = wire_check_alloc(cJSON_CreateArray());
	for (size_t i = 0; i < r->n_grant_profiles; i++) {
		const struct wire_grant_profile *g = &r->grant_profiles[i];
		cJSON *p = jw_object();
		jw_string(p, "name", g->name);
		jw_string(p, "description", g->description);
		jw_bool(p, "allowInSessions", g->allow_in_sessions);
		jw_strings(p, "origins", g->origins, g->n_origins);
		cJSON_AddItemToArray(arr, p);
	}
	cJSON_AddItemToObject(o, "grantProfiles", arr);
}

static void grant_profiles_free(struct wire_describe_response *r)
{
	struct wire_grant_profile *v = (struct wire_grant_profile *)r->grant_profiles;
	for (size_t i = 0; v && i < r->n_grant_profiles; i++) {
		free((char *)v[i].name);
		free((char *)v[i].description);
		wire_strings_free((char **)v[i].origins, v[i].n_origins);
	}
	free(v);
	r->grant_profiles = NULL;
	r->n_grant_profiles = 0;
}

/* Each entry an object with a name; at most as many as a daemon may define. */
static int read_grant_profiles(const struct jr *r, const cJSON *root,
			       struct wire_describe_response *out)
{
	const cJSON *arr;
	if (jr_array(r, root, "", "grantProfiles", &arr) < 0)
		return -1;
	int n = arr ? cJSON_GetArraySize(arr) : 0;
	if (n > 256)
		return jr_fail(r, "grantProfiles lists %d profiles, more than the 256 a daemon may have",
			       n);
	if (n == 0)
		return 0;
	struct wire_grant_profile *v = xzalloc((size_t)n * sizeof *v);
	out->grant_profiles = v;
	char path[40];
	for (const cJSON *e = arr->child; e; e = e->next) {
		struct wire_grant_profile *g = &v[out->n_grant_profiles];
		snprintf(path, sizeof path, "grantProfiles[%zu]", out->n_grant_profiles);
		out->n_grant_profiles++;
		if (!cJSON_IsObject(e))
			return jr_fail(r, "%s must be a JSON object", path);
		char **origins = NULL;
		size_t n_origins = 0;
		if (read_str(r, e, path, "name", &g->name) < 0 ||
		    read_str(r, e, path, "description", &g->description) < 0 ||
		    jr_bool(r, e, path, "allowInSessions", &g->allow_in_sessions) < 0 ||
		    jr_strings(r, e, path, "origins", &origins, &n_origins) < 0)
			return -1;
		g->origins = (const char *const *)origins;
		g->n_origins = n_origins;
		if (!*g->name)
			return jr_fail(r, "%s.name is empty", path);
	}
	return 0;
}

char *wire_encode_describe_response(const struct wire_describe_response *r)
{
	cJSON *o = jw_object();
	jw_string(o, "sandbox", r->sandbox);
	jw_string(o, "isolation", r->isolation);
	jw_bool(o, "supportsProject", r->supports_project);
	jw_bool(o, "supportsJavascriptGrants", r->supports_javascript_grants);
	jw_bool(o, "supportsProjectGrants", r->supports_project_grants);
	jw_bool(o, "supportsModule", r->supports_module);
	jw_u32(o, "protocol", r->protocol);
	put_environment(o, "javascriptEnvironment", &r->javascript_environment);
	put_environment(o, "projectEnvironment", &r->project_environment);
	put_environment(o, "moduleEnvironment", &r->module_environment);
	if (r->resources.present) {
		cJSON *res = jw_object();
		jw_u32(res, "memoryMb", r->resources.memory_mb);
		jw_double(res, "cpus", r->resources.cpus);
		jw_u32(res, "pids", r->resources.pids);
		jw_u32(res, "diskMb", r->resources.disk_mb);
		jw_add(o, "resources", res);
	}
	jw_string(o, "policy", r->policy);
	jw_bool(o, "supportsSessions", r->supports_sessions);
	jw_u32(o, "sessionLifetimeMs", r->session_lifetime_ms);
	jw_u32(o, "sessionIdleTimeoutMs", r->session_idle_timeout_ms);
	put_environment(o, "sessionEnvironment", &r->session_environment);
	jw_u32(o, "maxSessionsPerCaller", r->max_sessions_per_caller);
	jw_u32(o, "maxSessionsPerOwner", r->max_sessions_per_owner);
	put_grant_profiles(o, r); /* ---- profiles ---- */
	return jw_print(o);
}

void wire_describe_response_free(struct wire_describe_response *r)
{
	if (!r)
		return;
	free((char *)r->sandbox);
	free((char *)r->isolation);
	free((char *)r->policy);
	environment_free(&r->javascript_environment);
	environment_free(&r->project_environment);
	environment_free(&r->module_environment);
	environment_free(&r->session_environment);
	grant_profiles_free(r); /* ---- profiles ---- */
	memset(r, 0, sizeof *r);
}

int wire_decode_describe_response(const char *body, size_t len, struct wire_describe_response *out,
				  struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = answer_reader(st);
	const cJSON *res;
	memset(out, 0, sizeof *out);
	if (parse_answer(body, len, "DescribeResponse", &root, st) < 0)
		return -1;
	if (read_str(&r, root, "", "sandbox", &out->sandbox) < 0 ||
	    read_str(&r, root, "", "isolation", &out->isolation) < 0 ||
	    jr_bool(&r, root, "", "supportsProject", &out->supports_project) < 0 ||
	    jr_bool(&r, root, "", "supportsJavascriptGrants", &out->supports_javascript_grants) < 0 ||
	    jr_bool(&r, root, "", "supportsProjectGrants", &out->supports_project_grants) < 0 ||
	    jr_bool(&r, root, "", "supportsModule", &out->supports_module) < 0 ||
	    jr_u32(&r, root, "", "protocol", &out->protocol) < 0 ||
	    read_environment(&r, root, "javascriptEnvironment", &out->javascript_environment) < 0 ||
	    read_environment(&r, root, "projectEnvironment", &out->project_environment) < 0 ||
	    read_environment(&r, root, "moduleEnvironment", &out->module_environment) < 0 ||
	    jr_object(&r, root, "", "resources", &res) < 0 ||
	    jr_u32(&r, res, "resources", "memoryMb", &out->resources.memory_mb) < 0 ||
	    jr_double(&r, res, "resources", "cpus", &out->resources.cpus) < 0 ||
	    jr_u32(&r, res, "resources", "pids", &out->resources.pids) < 0 ||
	    jr_u32(&r, res, "resources", "diskMb", &out->resources.disk_mb) < 0 ||
	    read_str(&r, root, "", "policy", &out->policy) < 0 ||
	    jr_bool(&r, root, "", "supportsSessions", &out->supports_sessions) < 0 ||
	    jr_u32(&r, root, "", "sessionLifetimeMs", &out->session_lifetime_ms) < 0 ||
	    jr_u32(&r, root, "", "sessionIdleTimeoutMs", &out->session_idle_timeout_ms) < 0 ||
	    read_environment(&r, root, "sessionEnvironment", &out->session_environment) < 0 ||
	    jr_u32(&r, root, "", "maxSessionsPerCaller", &out->max_sessions_per_caller) < 0 ||
	    jr_u32(&r, root, "", "maxSessionsPerOwner", &out->max_sessions_per_owner) < 0 ||
	    read_grant_profiles(&r, root, out) < 0) { /* ---- profiles ---- */
		wire_describe_response_free(out);
		return -1;
	}
	out->resources.present = res != NULL;
	return 0;
}
