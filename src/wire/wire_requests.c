/* Requests: Run, SessionRun, OpenSession, CloseSession, Describe. Decoding is
 * the daemon's first line: the protocol gate, then the envelope, then the
 * payload, each refusal naming the field, each marked not dispatched because
 * nothing has run yet. The limits are plimsoll's request validation (wire.h),
 * applied to what bulkhead runs; what it does not run is refused as
 * unsupported without being read further. Encoding is the client's side of the same. */
#include "wire_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- releasing ---- */

static void rule_free(struct wire_rule *r)
{
	free(r->mode);
	wire_strings_free(r->identities, r->n_identities);
	memset(r, 0, sizeof *r);
}

static void envelope_free(struct wire_envelope *e)
{
	free(e->minimum_isolation);
	free(e->trace_id);
	rule_free(&e->rule);
	memset(e, 0, sizeof *e);
	e->floor = BH_TIER_UNKNOWN;
}

void wire_files_free(struct bh_file *files, size_t n)
{
	for (size_t i = 0; files && i < n; i++) {
		free((char *)files[i].path);
		free((uint8_t *)files[i].content);
	}
	free(files);
}

void wire_run_request_free(struct wire_run_request *r)
{
	if (!r)
		return;
	envelope_free(&r->env);
	free(r->javascript.code);
	free(r->javascript.grant_profile);
	free(r->cell.code);
	wire_files_free(r->cell.files, r->cell.n_files);
	wire_project_run_free(&r->project); /* ---- project ---- */
	memset(r, 0, sizeof *r);
	r->env.floor = BH_TIER_UNKNOWN;
}

void wire_session_run_request_free(struct wire_session_run_request *r)
{
	if (!r)
		return;
	wire_run_request_free(&r->call);
	free(r->session_id);
	r->session_id = NULL;
}

void wire_open_session_request_free(struct wire_open_session_request *r)
{
	if (!r)
		return;
	envelope_free(&r->env);
	free(r->owner);
	free(r->grant_profile); /* ---- profiles ---- */
	memset(r, 0, sizeof *r);
	r->env.floor = BH_TIER_UNKNOWN;
}

void wire_close_session_request_free(struct wire_close_session_request *r)
{
	if (!r)
		return;
	free(r->session_id);
	memset(r, 0, sizeof *r);
}

/* ---- the envelope ---- */

/* exact: one identity; approved: 1 to 32; each 1..256 bytes of
 * [A-Za-z0-9._:/@+-], none twice. An empty mode with no identities is no rule. */
static int read_rule(const struct jr *r, const cJSON *msg, struct wire_rule *out)
{
	const cJSON *obj;
	memset(out, 0, sizeof *out);
	if (jr_object(r, msg, "", "softwareRule", &obj) < 0)
		return -1;
	if (!obj)
		return 0;
	if (jr_string(r, obj, "softwareRule", "mode", &out->mode, NULL) < 0 ||
	    jr_strings(r, obj, "softwareRule", "identities", &out->identities, &out->n_identities) < 0)
		goto fail;
	if (!*out->mode && out->n_identities == 0) {
		rule_free(out);
		return 0;
	}
	char q[64];
	bool exact = !strcmp(out->mode, "exact"), approved = !strcmp(out->mode, "approved");
	if (!exact && !approved) {
		jr_fail(r, "softwareRule.mode must be exact or approved (got %s)",
			wire_quote(q, out->mode, strlen(out->mode)));
		goto fail;
	}
	if (exact && out->n_identities != 1) {
		jr_fail(r, "softwareRule.identities must hold exactly one identity for mode exact "
			   "(it holds %zu)", out->n_identities);
		goto fail;
	}
	if (approved && (out->n_identities < 1 || out->n_identities > WIRE_MAX_IDENTITIES)) {
		jr_fail(r, "softwareRule.identities must hold 1 to %d identities for mode approved "
			   "(it holds %zu)", WIRE_MAX_IDENTITIES, out->n_identities);
		goto fail;
	}
	for (size_t i = 0; i < out->n_identities; i++) {
		const char *problem = wire_identity_problem(out->identities[i]);
		if (problem) {
			jr_fail(r, "softwareRule.identities[%zu] %s", i, problem);
			goto fail;
		}
		for (size_t k = 0; k < i; k++) {
			if (!strcmp(out->identities[i], out->identities[k])) {
				jr_fail(r, "softwareRule.identities[%zu] repeats identities[%zu]", i, k);
				goto fail;
			}
		}
	}
	return 0;
fail:
	rule_free(out);
	return -1;
}

/* minimum_isolation is "" or process|container|kernel|vm. "none" is a tier
 * but not a floor: asking for no boundary is a likely mistake, so it is
 * refused rather than met by anything. */
static int read_floor(const struct jr *r, const cJSON *msg, struct wire_envelope *out)
{
	size_t n = 0;
	if (jr_string(r, msg, "", "minimumIsolation", &out->minimum_isolation, &n) < 0)
		return -1;
	out->floor = BH_TIER_UNKNOWN;
	if (n == 0)
		return 0;
	enum bh_tier t;
	if (bh_tier_parse(out->minimum_isolation, &t) < 0 || t < BH_TIER_PROCESS) {
		char q[64];
		return jr_fail(r, "minimumIsolation must be empty or one of process, container, "
				  "kernel, vm (got %s)",
			       wire_quote(q, out->minimum_isolation, n));
	}
	out->floor = t;
	return 0;
}

static int read_envelope(const struct jr *r, const cJSON *msg, bool has_timeout,
			 struct wire_envelope *out)
{
	memset(out, 0, sizeof *out);
	out->floor = BH_TIER_UNKNOWN;
	if (jr_u32(r, msg, "", "protocol", &out->protocol) < 0 || read_floor(r, msg, out) < 0 ||
	    jr_string(r, msg, "", "traceId", &out->trace_id, NULL) < 0 ||
	    (has_timeout && jr_i32(r, msg, "", "timeoutMs", &out->timeout_ms) < 0) ||
	    read_rule(r, msg, &out->rule) < 0) {
		envelope_free(out);
		return -1;
	}
	/* A trace id is an opaque join key for the caller's own logs. One that
	 * is not [A-Za-z0-9._:-]{1,64} could smuggle a path or a name into ours,
	 * so it is dropped, not refused; the caller logs that it was. */
	if (!*out->trace_id) {
		free(steal_ptr(out->trace_id));
	} else if (!wire_name_ok(out->trace_id)) {
		free(steal_ptr(out->trace_id));
		out->trace_id_rejected = true;
	}
	return 0;
}

/* ---- payloads ---- */

static int check_code(const struct jr *r, const char *field, const char *code, size_t len)
{
	if (len == 0)
		return jr_fail(r, "%s is required (it is empty)", field);
	if (memchr(code, '\0', len))
		return jr_fail(r, "%s contains a NUL character", field);
	if (len > BH_MAX_CODE_BYTES)
		return jr_fail(r, "%s is %zu bytes, more than the %u allowed", field, len,
			       BH_MAX_CODE_BYTES);
	return 0;
}

/* ---- profiles ---- */
/* A profile name is at most WIRE_MAX_NAME_BYTES (plimsoll refuses a longer one
 * as a request error); whether a profile of that name exists, and whether this
 * caller may hold it, is the daemon's to say, with one answer for both. An
 * empty name is no grant. */
static int check_grant_name(const struct jr *r, const char *field, char **name)
{
	size_t n = *name ? strlen(*name) : 0;
	if (n > WIRE_MAX_NAME_BYTES)
		return jr_fail(r, "%s is %zu bytes, more than the %u a profile's name may have", field,
			       n, WIRE_MAX_NAME_BYTES);
	return 0;
}

static int read_javascript(const struct jr *r, const cJSON *obj, struct wire_javascript_run *out)
{
	if (jr_string(r, obj, "javascript", "code", &out->code, &out->code_len) < 0 ||
	    check_code(r, "javascript.code", out->code, out->code_len) < 0 ||
	    jr_string(r, obj, "javascript", "grantProfile", &out->grant_profile, NULL) < 0)
		return -1;
	/* ---- profiles: a grant is checked by the daemon (its profiles and
	 * this caller); here only its size, as plimsoll does ---- */
	return check_grant_name(r, "javascript.grantProfile", &out->grant_profile);
}

/* Files are written into /work before the code runs: at most 200, 4 MiB in
 * all, each path relative and clean, none twice. Content is a proto string,
 * so text (UTF-8), as plimsoll's clients send it. */
/* ---- project: a project's files are read by the same rules ---- */
int wire_read_files(const struct jr *r, const cJSON *obj, const char *owner, struct bh_file **files,
		    size_t *n_files)
{
	const cJSON *arr;
	struct {
		struct bh_file *files;
		size_t n_files;
	} o = {0}, *out = &o;
	if (jr_array(r, obj, owner, "files", &arr) < 0)
		return -1;
	int count = arr ? cJSON_GetArraySize(arr) : 0;
	if (count > (int)BH_MAX_FILES)
		return jr_fail(r, "%s.files holds %d files, more than the %u allowed", owner, count,
			       BH_MAX_FILES);
	out->files = *files = xzalloc(((size_t)count + 1) * sizeof *out->files);
	size_t total = 0;
	char path[48];
	for (const cJSON *f = arr ? arr->child : NULL; f; f = f->next) {
		size_t i = out->n_files;
		snprintf(path, sizeof path, "%s.files[%zu]", owner, i);
		if (!cJSON_IsObject(f))
			return jr_fail(r, "%s must be a JSON object", path);
		char *p = NULL, *content = NULL;
		size_t plen = 0, clen = 0;
		if (jr_string(r, f, path, "path", &p, &plen) < 0)
			return -1;
		if (jr_string(r, f, path, "content", &content, &clen) < 0) {
			free(p);
			return -1;
		}
		out->files[i] = (struct bh_file){.path = p, .content = (uint8_t *)content, .len = clen};
		*n_files = ++out->n_files;
		const char *problem = wire_path_problem(p, plen);
		char q[64];
		if (problem)
			return jr_fail(r, "%s.path %s %s", path, wire_quote(q, p, plen), problem);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(out->files[k].path, p))
				return jr_fail(r, "%s.path %s repeats %s.files[%zu].path", path,
					       wire_quote(q, p, plen), owner, k);
		if (clen > BH_MAX_FILES_BYTES - total)
			return jr_fail(r, "%s.files hold more than %u bytes of content (at %s)", owner,
				       BH_MAX_FILES_BYTES, path);
		total += clen;
	}
	return 0;
}

static int read_cell(const struct jr *r, const cJSON *obj, struct wire_cell_run *out)
{
	cleanup_free char *language = NULL;
	size_t n = 0;
	if (jr_string(r, obj, "cell", "language", &language, &n) < 0)
		return -1;
	if (n == 0)
		return jr_fail(r, "cell.language is required (javascript or python)");
	enum bh_language l;
	if (bh_language_parse(language, &l) < 0) {
		char q[64];
		return jr_fail(r, "cell.language must be javascript or python (got %s)",
			       wire_quote(q, language, n));
	}
	out->language = l;
	if (jr_string(r, obj, "cell", "code", &out->code, &out->code_len) < 0 ||
	    check_code(r, "cell.code", out->code, out->code_len) < 0)
		return -1;
	/* ---- profiles: plimsoll's CellRun has no grant; one sent here would be
	 * dropped unheld by a daemon that ignored it, so it is refused ---- */
	cleanup_free char *grant = NULL;
	if (jr_string(r, obj, "cell", "grantProfile", &grant, NULL) < 0)
		return -1;
	if (*grant)
		return jr_fail(r, "cell.grantProfile: a cell carries no grant; open the session with "
				  "grantProfile, or send a javascript payload with one");
	return wire_read_files(r, obj, "cell", &out->files, &out->n_files);
}

static const struct {
	const char *name;
	enum wire_payload bit;
} payload_names[] = {
	{"javascript", WIRE_PAYLOAD_JAVASCRIPT},
	{"project", WIRE_PAYLOAD_PROJECT},
	{"module", WIRE_PAYLOAD_MODULE},
	{"cell", WIRE_PAYLOAD_CELL},
};

/* in_session: SessionRun's oneof has javascript, project, cell; Run's has
 * module too. A key the message does not have is an unknown field: ignored. */
static int read_payload(const struct jr *r, const cJSON *msg, bool in_session,
			struct wire_run_request *out)
{
	const cJSON *obj[4] = {0};
	char names[64] = "";
	int present = 0;
	for (size_t i = 0; i < 4; i++) {
		if (in_session && payload_names[i].bit == WIRE_PAYLOAD_MODULE)
			continue;
		if (jr_object(r, msg, "", payload_names[i].name, &obj[i]) < 0)
			return -1;
		if (!obj[i])
			continue;
		out->payloads |= payload_names[i].bit;
		out->kind = payload_names[i].bit;
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
			 present++ ? " and " : "", payload_names[i].name);
	}
	const char *oneof = in_session ? "javascript, project or cell"
				       : "javascript, project, module or cell";
	if (present == 0)
		return jr_fail(r, "the request has no payload: send exactly one of %s", oneof);
	if (present > 1) {
		out->kind = 0;
		return jr_fail(r, "the request carries %s: send exactly one payload", names);
	}
	switch (out->kind) {
	case WIRE_PAYLOAD_JAVASCRIPT:
		return read_javascript(r, obj[0], &out->javascript);
	case WIRE_PAYLOAD_CELL:
		if (!in_session)
			return jr_fail(r, "cell: a cell runs only in a session; send it with SessionRun");
		return read_cell(r, obj[3], &out->cell);
	case WIRE_PAYLOAD_PROJECT: /* ---- project ---- */
		return wire_read_project(r, obj[1], &out->project);
	case WIRE_PAYLOAD_MODULE:
		return wire_fail(r->st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_UNSUPPORTED,
			   "module: bulkhead runs no module payloads (Describe says supportsModule "
			   "false)");
	}
	return 0;
}

/* ---- decoders ---- */

/* The body, then the protocol gate before any other field is looked at. */
static int begin(const char *body, size_t len, cJSON **root, struct wire_status *st)
{
	cleanup_free char *why = NULL;
	if (wire_parse_body(body, len, root, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	return wire_check_protocol(*root, st);
}

static struct jr request_reader(struct wire_status *st)
{
	return (struct jr){st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST};
}

static int decode_call(const cJSON *root, bool in_session, struct wire_run_request *out,
		       struct wire_status *st)
{
	struct jr r = request_reader(st);
	if (read_envelope(&r, root, true, &out->env) < 0 || read_payload(&r, root, in_session, out) < 0)
		return -1;
	return 0;
}

int wire_decode_run_request(const char *body, size_t len, struct wire_run_request *out,
			    struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	memset(out, 0, sizeof *out);
	out->env.floor = BH_TIER_UNKNOWN;
	if (begin(body, len, &root, st) < 0 || decode_call(root, false, out, st) < 0) {
		wire_run_request_free(out);
		return -1;
	}
	return 0;
}

int wire_decode_session_run_request(const char *body, size_t len,
				    struct wire_session_run_request *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = request_reader(st);
	memset(out, 0, sizeof *out);
	out->call.env.floor = BH_TIER_UNKNOWN;
	/* The id is looked up, not validated: an id that is no session's is
	 * NotFound, the same answer as a foreign one. */
	if (begin(body, len, &root, st) < 0 ||
	    jr_string(&r, root, "", "sessionId", &out->session_id, NULL) < 0 ||
	    decode_call(root, true, &out->call, st) < 0) {
		wire_session_run_request_free(out);
		return -1;
	}
	return 0;
}

int wire_decode_open_session_request(const char *body, size_t len,
				     struct wire_open_session_request *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = request_reader(st);
	char **languages = NULL;
	size_t n_languages = 0, owner_len = 0;
	memset(out, 0, sizeof *out);
	out->env.floor = BH_TIER_UNKNOWN;
	if (begin(body, len, &root, st) < 0 || read_envelope(&r, root, false, &out->env) < 0 ||
	    jr_u32(&r, root, "", "lifetimeMs", &out->lifetime_ms) < 0 ||
	    jr_u32(&r, root, "", "idleTimeoutMs", &out->idle_timeout_ms) < 0 ||
	    jr_strings(&r, root, "", "languages", &languages, &n_languages) < 0 ||
	    jr_string(&r, root, "", "owner", &out->owner, &owner_len) < 0 ||
	    /* ---- profiles: bulkhead's extension, the session's profile ---- */
	    jr_string(&r, root, "", "grantProfile", &out->grant_profile, NULL) < 0 ||
	    check_grant_name(&r, "grantProfile", &out->grant_profile) < 0)
		goto fail;
	/* A language bulkhead does not know is refused; the hint only changes
	 * which interpreters start at open. */
	for (size_t i = 0; i < n_languages; i++) {
		enum bh_language l;
		if (bh_language_parse(languages[i], &l) < 0) {
			char q[64];
			jr_fail(&r, "languages[%zu] must be javascript or python (got %s)", i,
				wire_quote(q, languages[i], strlen(languages[i])));
			goto fail;
		}
		out->languages |= 1u << l;
	}
	if (out->grant_profile && !*out->grant_profile) /* ---- profiles ---- */
		free(steal_ptr(out->grant_profile));
	/* An owner that is not [A-Za-z0-9._:-]{1,64} is refused, not dropped:
	 * dropping it would lift the per-owner cap without a word. */
	if (owner_len == 0) {
		free(steal_ptr(out->owner));
	} else if (!wire_name_ok(out->owner)) {
		jr_fail(&r, "owner must be 1 to 64 characters of A-Z a-z 0-9 . _ : - (a keyed digest "
			    "of the user, never the user's name)");
		goto fail;
	}
	wire_strings_free(languages, n_languages);
	return 0;
fail:
	wire_strings_free(languages, n_languages);
	wire_open_session_request_free(out);
	return -1;
}

int wire_decode_close_session_request(const char *body, size_t len,
				      struct wire_close_session_request *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = request_reader(st);
	memset(out, 0, sizeof *out);
	if (begin(body, len, &root, st) < 0 || jr_u32(&r, root, "", "protocol", &out->protocol) < 0 ||
	    jr_string(&r, root, "", "sessionId", &out->session_id, NULL) < 0) {
		wire_close_session_request_free(out);
		return -1;
	}
	return 0;
}

/* DescribeRequest has no fields (not even protocol): any object will do. */
int wire_decode_describe_request(const char *body, size_t len, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	cleanup_free char *why = NULL;
	if (wire_parse_body(body, len, &root, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	return 0;
}

/* ---- encoders ---- */

static void put_rule(cJSON *o, const struct wire_rule *rule)
{
	if (!rule->mode || (!*rule->mode && rule->n_identities == 0))
		return;
	cJSON *r = jw_object();
	jw_string(r, "mode", rule->mode);
	jw_strings(r, "identities", (const char *const *)rule->identities, rule->n_identities);
	jw_add(o, "softwareRule", r);
}

static void put_envelope(cJSON *o, const struct wire_envelope *e, bool has_timeout)
{
	jw_u32(o, "protocol", e->protocol);
	jw_string(o, "minimumIsolation", e->minimum_isolation);
	jw_string(o, "traceId", e->trace_id);
	if (has_timeout)
		jw_i32(o, "timeoutMs", e->timeout_ms);
}

/* A set oneof member is written even when all its fields are zero. */
static void put_payload(cJSON *o, const struct wire_run_request *r)
{
	if (r->kind == WIRE_PAYLOAD_JAVASCRIPT) {
		cJSON *js = jw_object();
		jw_string_n(js, "code", r->javascript.code, r->javascript.code_len);
		jw_string(js, "grantProfile", r->javascript.grant_profile);
		jw_add(o, "javascript", js);
	} else if (r->kind == WIRE_PAYLOAD_CELL) {
		cJSON *cell = jw_object();
		jw_string(cell, "language", bh_language_name(r->cell.language));
		jw_string_n(cell, "code", r->cell.code, r->cell.code_len);
		if (r->cell.n_files) {
			cJSON *files = wire_check_alloc(cJSON_CreateArray());
			for (size_t i = 0; i < r->cell.n_files; i++) {
				cJSON *f = jw_object();
				jw_string(f, "path", r->cell.files[i].path);
				jw_string_n(f, "content", (const char *)r->cell.files[i].content,
					    r->cell.files[i].len);
				cJSON_AddItemToArray(files, f);
			}
			cJSON_AddItemToObject(cell, "files", files);
		}
		jw_add(o, "cell", cell);
	} else if (r->kind == WIRE_PAYLOAD_PROJECT) { /* ---- project ---- */
		jw_add(o, "project", wire_project_run_json(&r->project));
	}
}

char *wire_encode_run_request(const struct wire_run_request *r)
{
	cJSON *o = jw_object();
	put_envelope(o, &r->env, true);
	put_rule(o, &r->env.rule);
	put_payload(o, r);
	return jw_print(o);
}

char *wire_encode_session_run_request(const struct wire_session_run_request *r)
{
	cJSON *o = jw_object();
	put_envelope(o, &r->call.env, true);
	jw_string(o, "sessionId", r->session_id);
	put_rule(o, &r->call.env.rule);
	put_payload(o, &r->call);
	return jw_print(o);
}

char *wire_encode_open_session_request(const struct wire_open_session_request *r)
{
	cJSON *o = jw_object();
	put_envelope(o, &r->env, false);
	jw_u32(o, "lifetimeMs", r->lifetime_ms);
	jw_u32(o, "idleTimeoutMs", r->idle_timeout_ms);
	put_rule(o, &r->env.rule);
	const char *names[BH_LANG_COUNT];
	size_t n = 0;
	for (int l = 0; l < BH_LANG_COUNT; l++)
		if (r->languages & 1u << l)
			names[n++] = bh_language_name((enum bh_language)l);
	jw_strings(o, "languages", names, n);
	jw_string(o, "owner", r->owner);
	jw_string(o, "grantProfile", r->grant_profile); /* ---- profiles ---- */
	return jw_print(o);
}

char *wire_encode_close_session_request(const struct wire_close_session_request *r)
{
	cJSON *o = jw_object();
	jw_u32(o, "protocol", r->protocol);
	jw_string(o, "sessionId", r->session_id);
	return jw_print(o);
}

void wire_request_fields(const struct wire_run_request *r, struct bh_request_fields *out)
{
	memset(out, 0, sizeof *out);
	out->protocol = r->env.protocol;
	out->minimum_isolation = r->env.minimum_isolation ? r->env.minimum_isolation : "";
	out->timeout_ms = r->env.timeout_ms;
	out->software_mode = r->env.rule.mode ? r->env.rule.mode : "";
	out->software_identities = (const char *const *)r->env.rule.identities;
	out->n_identities = r->env.rule.n_identities;
	switch (r->kind) {
	case WIRE_PAYLOAD_JAVASCRIPT:
		out->kind = "javascript";
		out->code = (const uint8_t *)r->javascript.code;
		out->code_len = r->javascript.code_len;
		out->grant_profile = r->javascript.grant_profile ? r->javascript.grant_profile : "";
		break;
	case WIRE_PAYLOAD_CELL:
		out->kind = "cell";
		out->language = bh_language_name(r->cell.language);
		out->code = (const uint8_t *)r->cell.code;
		out->code_len = r->cell.code_len;
		out->files = r->cell.files;
		out->n_files = r->cell.n_files;
		break;
	case WIRE_PAYLOAD_PROJECT: /* ---- project ---- */
		wire_project_request_fields(&r->project, out);
		break;
	default:
		out->kind = "";
		break;
	}
}
