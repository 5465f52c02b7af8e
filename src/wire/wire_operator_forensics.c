/* remote: the forensics procedures' messages (wire_operator.h, "remote"):
 * Leftovers, ListIntents, Capture, Search and Reap. The daemon reads each
 * request strictly — only its own members, each of its type and within its
 * bounds — since what it does with them writes on its host (Capture's
 * folder) or removes things (Reap); the answers are read as strictly as
 * every operator answer. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* A request's reader: a refusal is the caller's mistake. */
#define REQUEST_READER(st) {st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST}

int op_only_members(const struct jr *r, const cJSON *root, const char *const *names, size_t n)
{
	for (const cJSON *m = root->child; m; m = m->next) {
		bool known = false;
		for (size_t i = 0; i < n && !known; i++)
			known = m->string && !strcmp(m->string, names[i]);
		if (!known) {
			char q[64];
			return jr_fail(r, "%s is not a member of this message",
				       wire_quote(q, m->string ? m->string : "",
						  m->string ? strlen(m->string) : 0));
		}
	}
	return 0;
}

static bool hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A request body parsed, and only names among its members; -1 with st. */
static int request_root(const char *body, size_t len, const char *const *names, size_t n,
			cJSON **root, struct wire_status *st)
{
	cleanup_free char *why = NULL;
	struct jr r = REQUEST_READER(st);
	if (wire_parse_body(body, len, root, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	if (op_only_members(&r, *root, names, n) < 0) {
		cJSON_Delete(*root);
		*root = NULL;
		return -1;
	}
	return 0;
}

int wire_operator_decode_empty_request(const char *method, const char *body, size_t len,
				       struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	if (request_root(body, len, NULL, 0, &root, st) < 0)
		return op_refused(method, st);
	return 0;
}

/* ---- Leftovers ---- */

#define LEFT(member) WIRE_AT(struct bh_leftovers, member)
static const struct wire_field leftovers_fields[] = {
	{"any", WIRE_F_BOOL, LEFT(any)},
	{"enginePid", WIRE_F_I64, LEFT(engine_pid)},
	{"lastSignUnixMs", WIRE_F_I64, LEFT(last_sign_ms)},
	{"paused", WIRE_F_U64, LEFT(paused)},
	{"reapedAtOpen", WIRE_F_BOOL, LEFT(reaped_at_open)},
};
#undef LEFT
_Static_assert(sizeof(size_t) == sizeof(uint64_t), "paused is read as a uint64");

char *wire_operator_encode_leftovers(const struct wire_operator_leftovers *v)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(leftovers_fields), &v->l);
	cJSON *kinds = jw_object();
	for (int k = 0; k < BH_LEAK_KIND_COUNT; k++)
		if (v->l.by_kind[k])
			jw_u64(kinds, bh_leak_kind_name((enum bh_leak_kind)k), v->l.by_kind[k]);
	jw_add(o, "byKind", kinds);
	return jw_print(o);
}

int wire_operator_decode_leftovers(const char *body, size_t len,
				   struct wire_operator_leftovers *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("Leftovers", body, len, &root, st) < 0)
		return -1;
	const cJSON *kinds = NULL;
	if (wire_fields_read(&r, root, "", WIRE_FIELDS(leftovers_fields), &out->l) < 0 ||
	    jr_object(&r, root, "", "byKind", &kinds) < 0)
		goto refused;
	for (const cJSON *m = kinds ? kinds->child : NULL; m; m = m->next) {
		int k = 0;
		while (k < BH_LEAK_KIND_COUNT && strcmp(m->string, bh_leak_kind_name((enum bh_leak_kind)k)))
			k++;
		char q[64];
		if (k == BH_LEAK_KIND_COUNT) {
			jr_fail(&r, "byKind.%s is not a kind of leak this build knows",
				wire_quote(q, m->string, strlen(m->string)));
			goto refused;
		}
		uint64_t n = 0;
		if (jr_u64(&r, kinds, "byKind", m->string, &n) < 0)
			goto refused;
		out->l.by_kind[k] = (size_t)n;
	}
	if (out->l.engine_pid < 0 || out->l.last_sign_ms < 0) {
		jr_fail(&r, "enginePid and lastSignUnixMs are 0 or more");
		goto refused;
	}
	return 0;
refused:
	memset(out, 0, sizeof *out);
	return op_refused("Leftovers", st);
}

/* ---- ListIntents ---- */

char *wire_operator_encode_intents_request(const struct wire_operator_intents_request *r)
{
	cJSON *o = jw_object();
	jw_string(o, "session", r->session ? r->session : "");
	return jw_print(o);
}

void wire_operator_intents_request_free(struct wire_operator_intents_request *r)
{
	if (!r)
		return;
	free((char *)r->session);
	memset(r, 0, sizeof *r);
}

int wire_operator_decode_intents_request(const char *body, size_t len,
					 struct wire_operator_intents_request *out,
					 struct wire_status *st)
{
	static const char *const names[] = {"session"};
	cleanup_cjson cJSON *root = NULL;
	struct jr r = REQUEST_READER(st);
	memset(out, 0, sizeof *out);
	if (request_root(body, len, names, ARRAY_SIZE(names), &root, st) < 0)
		return -1;
	char *session = NULL;
	if (jr_string(&r, root, "", "session", &session, NULL) < 0)
		return -1;
	out->session = session ? session : xstrdup("");
	if (*out->session && !hex64(out->session)) {
		wire_operator_intents_request_free(out);
		return jr_fail(&r, "session: give a session's fingerprint (64 hex digits), or none "
				   "for every session's");
	}
	return 0;
}

#define INTENT(member) WIRE_AT(struct wire_operator_intent, member)
static const struct wire_field intent_fields[] = {
	{"session", WIRE_F_STR, INTENT(session)},
	{"codeSha256", WIRE_F_STR, INTENT(code_sha256)},
	{"language", WIRE_F_STR, INTENT(language)},
	{"principal", WIRE_F_STR, INTENT(principal)},
	{"owner", WIRE_F_STR, INTENT(owner)},
	{"codeKept", WIRE_F_BOOL, INTENT(code_kept)},
	{"interrupted", WIRE_F_BOOL, INTENT(interrupted)},
	{"sequence", WIRE_F_U64, INTENT(sequence)},
	{"enginePid", WIRE_F_I64, INTENT(engine_pid)},
	{"startedUnixMs", WIRE_F_I64, INTENT(started_unix_ms)},
	{"reapedUnixMs", WIRE_F_I64, INTENT(reaped_unix_ms)},
};
#undef INTENT

bool wire_operator_intents_add(struct wire_operator_intents *v, const struct bh_inflight *row)
{
	if (v->n >= WIRE_OPERATOR_INTENTS_MAX)
		return false;
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 8;
		v->intents = wire_check_alloc(realloc(v->intents, v->cap * sizeof *v->intents));
	}
	struct wire_operator_intent *w = &v->intents[v->n++];
	uint8_t *code = xzalloc(row->code_len + 1);
	memcpy(code, row->code, row->code_len);
	*w = (struct wire_operator_intent){
		.session = xstrdup(row->session ? row->session : ""),
		.code_sha256 = xstrdup(row->code_sha256 ? row->code_sha256 : ""),
		.language = xstrdup(row->language ? row->language : ""),
		.principal = xstrdup(row->principal ? row->principal : ""),
		.owner = xstrdup(row->owner ? row->owner : ""),
		.code = code,
		.code_len = row->code_len,
		.code_kept = row->code_kept,
		.interrupted = row->interrupted,
		.sequence = row->sequence,
		.engine_pid = row->engine_pid,
		.started_unix_ms = row->started_ms,
		.reaped_unix_ms = row->reaped_ms,
	};
	return true;
}

void wire_operator_intent_as_inflight(const struct wire_operator_intent *w,
				      struct bh_inflight *out)
{
	*out = (struct bh_inflight){
		.session = w->session,
		.code_sha256 = w->code_sha256,
		.language = w->language,
		.principal = w->principal,
		.owner = w->owner,
		.code = (const char *)w->code,
		.code_len = w->code_len,
		.code_kept = w->code_kept,
		.sequence = w->sequence,
		.engine_pid = w->engine_pid,
		.started_ms = w->started_unix_ms,
		.reaped_ms = w->reaped_unix_ms,
		.interrupted = w->interrupted,
	};
}

static void intent_clear(struct wire_operator_intent *w)
{
	wire_fields_free(WIRE_FIELDS(intent_fields), w);
	free((uint8_t *)w->code);
	memset(w, 0, sizeof *w);
}

void wire_operator_intents_free(struct wire_operator_intents *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++)
		intent_clear(&v->intents[i]);
	free(v->intents);
	memset(v, 0, sizeof *v);
}

char *wire_operator_encode_intents(const struct wire_operator_intents *v)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "intents");
	for (size_t i = 0; i < v->n; i++) {
		cJSON *x = jw_object();
		wire_fields_json(x, WIRE_FIELDS(intent_fields), &v->intents[i]);
		jw_bytes(x, "code", v->intents[i].code, v->intents[i].code_len);
		cJSON_AddItemToArray(list, x);
	}
	return jw_print(o);
}

static int read_intent(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct wire_operator_intent *w = item;
	memset(w, 0, sizeof *w);
	uint8_t *code = NULL;
	size_t code_len = 0;
	if (wire_fields_read(r, o, path, WIRE_FIELDS(intent_fields), w) < 0 ||
	    jr_bytes(r, o, path, "code", &code, &code_len) < 0) {
		free(code);
		intent_clear(w);
		return -1;
	}
	w->code = code;
	w->code_len = code_len;
	const char *bad = !hex64(w->session)		 ? "session is not a fingerprint"
			  : !hex64(w->code_sha256)	 ? "codeSha256 is not a SHA-256 hex digest"
			  : !w->sequence		 ? "sequence must be positive"
			  : strlen(w->language) > 15	 ? "language is longer than any language's name"
			  : strlen(w->principal) > 64	 ? "principal is longer than a principal's name"
			  : strlen(w->owner) > 64	 ? "owner is longer than an owner's key"
			  : w->started_unix_ms < 0 || w->reaped_unix_ms < 0 || w->engine_pid < 0
				  ? "a time or a pid is negative"
				  : NULL;
	if (bad) {
		intent_clear(w);
		return jr_fail(r, "%s: %s", path, bad);
	}
	return 0;
}

int wire_operator_decode_intents(const char *body, size_t len, struct wire_operator_intents *out,
				 struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	struct op_items list = {.name = "intents", .size = sizeof *out->intents, .read = read_intent};
	int rc = op_decode_list("ListIntents", body, len, &list, &items, &out->n, NULL, NULL, st);
	out->intents = items;
	out->cap = out->n;
	if (rc == 0 && out->n > WIRE_OPERATOR_INTENTS_MAX) {
		wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
			  "ListIntents: %zu intents, more than an answer holds (%u)", out->n,
			  WIRE_OPERATOR_INTENTS_MAX);
		rc = -1;
	}
	if (rc < 0)
		wire_operator_intents_free(out);
	return rc;
}

/* ---- Capture ---- */

/* An absolute path with no "." or ".." part, no doubled or trailing slash
 * and no control byte: the folder the daemon makes is the one named. */
static const char *dir_problem(const char *d)
{
	size_t n = strlen(d);
	if (!n || d[0] != '/')
		return "dir must be an absolute path (the folder is made on the daemon's host)";
	if (n > WIRE_OPERATOR_DIR_MAX)
		return "dir is longer than 1024 bytes";
	if (n == 1 || d[n - 1] == '/')
		return "dir names a new folder: not / and no trailing slash";
	if (!wire_utf8_valid(d, n))
		return "dir is not valid UTF-8";
	for (const char *p = d; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "dir contains a control character";
	for (const char *part = d + 1; part && *part;) {
		const char *end = strchr(part, '/');
		size_t len = end ? (size_t)(end - part) : strlen(part);
		if (!len)
			return "dir has an empty part (a doubled slash)";
		if ((len == 1 && part[0] == '.') || (len == 2 && !strncmp(part, "..", 2)))
			return "dir has a '.' or '..' part";
		part = end ? end + 1 : NULL;
	}
	return NULL;
}

/* A finding's or a session's name: what bh_engine_capture_target reads. */
static const char *target_problem(const char *t)
{
	size_t n = strlen(t);
	if (!n)
		return "target: name a finding's sandbox or a session's fingerprint";
	if (n > 64)
		return "target is longer than a sandbox's name or a fingerprint";
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e)
			return "target holds a byte no sandbox name or fingerprint has";
	return NULL;
}

char *wire_operator_encode_capture_request(const struct wire_operator_capture_request *r)
{
	cJSON *o = jw_object();
	jw_string(o, "target", r->target ? r->target : "");
	jw_string(o, "dir", r->dir ? r->dir : "");
	jw_strings(o, "files", r->files, r->n_files);
	return jw_print(o);
}

void wire_operator_capture_request_free(struct wire_operator_capture_request *r)
{
	if (!r)
		return;
	free((char *)r->target);
	free((char *)r->dir);
	wire_strings_free((char **)r->files, r->n_files);
	memset(r, 0, sizeof *r);
}

int wire_operator_decode_capture_request(const char *body, size_t len,
					 struct wire_operator_capture_request *out,
					 struct wire_status *st)
{
	static const char *const names[] = {"target", "dir", "files"};
	cleanup_cjson cJSON *root = NULL;
	struct jr r = REQUEST_READER(st);
	memset(out, 0, sizeof *out);
	if (request_root(body, len, names, ARRAY_SIZE(names), &root, st) < 0)
		return -1;
	char *target = NULL, *dir = NULL, **files = NULL;
	size_t tlen = 0, dlen = 0, n_files = 0;
	int rc = jr_string(&r, root, "", "target", &target, &tlen);
	if (rc == 0)
		rc = jr_string(&r, root, "", "dir", &dir, &dlen);
	if (rc == 0)
		rc = jr_strings(&r, root, "", "files", &files, &n_files);
	out->target = target ? target : xstrdup("");
	out->dir = dir ? dir : xstrdup("");
	out->files = (const char *const *)files;
	out->n_files = n_files;
	if (rc < 0) {
		wire_operator_capture_request_free(out);
		return -1;
	}
	const char *bad = strlen(out->target) != tlen || strlen(out->dir) != dlen
				  ? "a string holds a NUL"
			  : target_problem(out->target) ? target_problem(out->target)
							: dir_problem(out->dir);
	char why[160];
	if (!bad && n_files > BH_CAPTURE_PICKED_MAX) {
		snprintf(why, sizeof why, "files: %zu picked, at most %u", n_files,
			 BH_CAPTURE_PICKED_MAX);
		bad = why;
	}
	for (size_t i = 0; !bad && i < n_files; i++) {
		const char *p = wire_path_problem(files[i], strlen(files[i]));
		if (p) {
			snprintf(why, sizeof why, "files[%zu] %s (a path below /work)", i, p);
			bad = why;
		}
	}
	if (bad) {
		int fail = jr_fail(&r, "%s", bad);
		wire_operator_capture_request_free(out);
		return fail;
	}
	return 0;
}

#define CAPTURED(member) WIRE_AT(struct wire_operator_captured, member)
#define TARGET(member) offsetof(struct wire_operator_captured, target.member), \
	sizeof(((struct bh_capture_target *)0)->member)
static const struct wire_field captured_fields[] = {
	{"dir", WIRE_F_STR, CAPTURED(dir)},
	{"manifestSha256", WIRE_F_DIGEST, CAPTURED(manifest_sha256)},
	{"sandbox", WIRE_F_FIXED, TARGET(sandbox)},
	{"session", WIRE_F_FIXED, TARGET(fingerprint)},
	{"runtime", WIRE_F_FIXED, TARGET(runtime)},
	{"held", WIRE_F_BOOL, TARGET(held)},
};
#undef TARGET
#undef CAPTURED

char *wire_operator_encode_captured(const struct wire_operator_captured *c)
{
	return wire_fields_print(WIRE_FIELDS(captured_fields), c);
}

void wire_operator_captured_free(struct wire_operator_captured *c)
{
	wire_fields_clear(WIRE_FIELDS(captured_fields), c, sizeof *c);
}

int wire_operator_decode_captured(const char *body, size_t len, struct wire_operator_captured *out,
				  struct wire_status *st)
{
	if (op_decode_fields("Capture", body, len, WIRE_FIELDS(captured_fields), out, sizeof *out,
			     st) < 0)
		return -1;
	const char *bad = dir_problem(out->dir)		    ? "dir is not the absolute folder asked for"
			  : !hex64(out->manifest_sha256) ? "manifestSha256 is not a SHA-256 hex digest"
			  : out->target.fingerprint[0] && !hex64(out->target.fingerprint)
				  ? "session is not a fingerprint"
				  : NULL;
	if (bad) {
		wire_operator_captured_free(out);
		return wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, "Capture: %s", bad);
	}
	return 0;
}

/* ---- Search ---- */

char *wire_operator_encode_search_request(const struct wire_operator_search_request *r)
{
	cJSON *o = jw_object();
	jw_string(o, "query", r->query ? r->query : "");
	jw_u32(o, "limit", r->limit);
	return jw_print(o);
}

void wire_operator_search_request_free(struct wire_operator_search_request *r)
{
	if (!r)
		return;
	free((char *)r->query);
	memset(r, 0, sizeof *r);
}

int wire_operator_decode_search_request(const char *body, size_t len,
					struct wire_operator_search_request *out,
					struct wire_status *st)
{
	static const char *const names[] = {"query", "limit"};
	cleanup_cjson cJSON *root = NULL;
	struct jr r = REQUEST_READER(st);
	memset(out, 0, sizeof *out);
	if (request_root(body, len, names, ARRAY_SIZE(names), &root, st) < 0)
		return -1;
	char *query = NULL;
	size_t qlen = 0;
	double limit = 0;
	if (jr_string(&r, root, "", "query", &query, &qlen) < 0 ||
	    jr_double(&r, root, "", "limit", &limit) < 0) {
		free(query);
		return -1;
	}
	out->query = query ? query : xstrdup("");
	const char *text = NULL;
	bh_search_parse(out->query, &text);
	const char *bad = strlen(out->query) != qlen ? "query holds a NUL"
			  : !*text			 ? "query: what text? (e.g. code:/etc/passwd)"
			  : strlen(text) > BH_SEARCH_TEXT_MAX
				  ? "query's text is longer than 256 bytes"
			  : !(limit >= 0) ? "limit must be a number of hits, 0 or more"
					  : NULL;
	if (bad) {
		wire_operator_search_request_free(out);
		return jr_fail(&r, "%s", bad);
	}
	/* More than the engine answers is shortened, not refused. */
	out->limit = limit >= BH_SEARCH_MAX ? BH_SEARCH_MAX : (uint32_t)limit;
	return 0;
}

/* A hit as the wire carries it: its strings and snippet owned. */
struct wire_hit {
	int64_t id;
	const char *session, *stream;
	uint64_t sequence;
	uint32_t match_at, match_len;
	bool cut_before, cut_after;
	int64_t started_unix_ms;
};
#define HIT(member) WIRE_AT(struct wire_hit, member)
static const struct wire_field hit_fields[] = {
	{"id", WIRE_F_I64, HIT(id)},
	{"session", WIRE_F_STR, HIT(session)},
	{"sequence", WIRE_F_U64, HIT(sequence)},
	{"stream", WIRE_F_STR, HIT(stream)},
	{"matchAt", WIRE_F_U32, HIT(match_at)},
	{"matchLen", WIRE_F_U32, HIT(match_len)},
	{"cutBefore", WIRE_F_BOOL, HIT(cut_before)},
	{"cutAfter", WIRE_F_BOOL, HIT(cut_after)},
	{"startedUnixMs", WIRE_F_I64, HIT(started_unix_ms)},
};
#undef HIT

#define SNIPPET_MAX (2 * BH_SEARCH_CONTEXT + BH_SEARCH_TEXT_MAX)

void wire_operator_hits_add(struct wire_operator_hits *v, const struct bh_search_hit *h)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 16;
		v->hits = wire_check_alloc(realloc(v->hits, v->cap * sizeof *v->hits));
	}
	struct bh_search_hit *c = &v->hits[v->n++];
	*c = *h;
	c->session = xstrdup(h->session ? h->session : "");
	c->stream = xstrdup(h->stream ? h->stream : "");
	uint8_t *snip = xzalloc(h->snippet_len + 1);
	memcpy(snip, h->snippet, h->snippet_len);
	c->snippet = snip;
}

void wire_operator_hits_free(struct wire_operator_hits *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		free((char *)v->hits[i].session);
		free((char *)v->hits[i].stream);
		free((uint8_t *)v->hits[i].snippet);
	}
	free(v->hits);
	memset(v, 0, sizeof *v);
}

char *wire_operator_encode_hits(const struct wire_operator_hits *v)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "hits");
	for (size_t i = 0; i < v->n; i++) {
		const struct bh_search_hit *h = &v->hits[i];
		struct wire_hit w = {
			.id = h->id, .session = h->session, .stream = h->stream,
			.sequence = h->sequence, .match_at = (uint32_t)h->match_at,
			.match_len = (uint32_t)h->match_len, .cut_before = h->cut_before,
			.cut_after = h->cut_after, .started_unix_ms = h->started_unix_ms,
		};
		cJSON *x = jw_object();
		wire_fields_json(x, WIRE_FIELDS(hit_fields), &w);
		jw_bytes(x, "snippet", h->snippet, h->snippet_len);
		cJSON_AddItemToArray(list, x);
	}
	return jw_print(o);
}

static int read_hit(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_search_hit *h = item;
	memset(h, 0, sizeof *h);
	struct wire_hit w = {0};
	uint8_t *snip = NULL;
	size_t snip_len = 0;
	if (wire_fields_read(r, o, path, WIRE_FIELDS(hit_fields), &w) < 0 ||
	    jr_bytes(r, o, path, "snippet", &snip, &snip_len) < 0) {
		wire_fields_free(WIRE_FIELDS(hit_fields), &w);
		free(snip);
		return -1;
	}
	const char *bad = strcmp(w.stream, "code") && strcmp(w.stream, "stdout") &&
					  strcmp(w.stream, "stderr")
				  ? "stream is none of code, stdout, stderr"
			  : *w.session && !hex64(w.session) ? "session is not a fingerprint"
			  : snip_len > SNIPPET_MAX	      ? "snippet is longer than a match and its context"
			  : !w.match_len || (uint64_t)w.match_at + w.match_len > snip_len
				  ? "the match is not inside its snippet"
				  : NULL;
	if (bad) {
		wire_fields_free(WIRE_FIELDS(hit_fields), &w);
		free(snip);
		return jr_fail(r, "%s: %s", path, bad);
	}
	*h = (struct bh_search_hit){
		.id = w.id, .session = w.session, .sequence = w.sequence, .stream = w.stream,
		.snippet = snip, .snippet_len = snip_len, .match_at = w.match_at,
		.match_len = w.match_len, .cut_before = w.cut_before, .cut_after = w.cut_after,
		.started_unix_ms = w.started_unix_ms,
	};
	return 0;
}

int wire_operator_decode_hits(const char *body, size_t len, struct wire_operator_hits *out,
			      struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	struct op_items list = {.name = "hits", .size = sizeof *out->hits, .read = read_hit};
	int rc = op_decode_list("Search", body, len, &list, &items, &out->n, NULL, NULL, st);
	out->hits = items;
	out->cap = out->n;
	if (rc == 0 && out->n > BH_SEARCH_MAX) {
		wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
			  "Search: %zu hits, more than the engine answers (%u)", out->n,
			  BH_SEARCH_MAX);
		rc = -1;
	}
	if (rc < 0)
		wire_operator_hits_free(out);
	return rc;
}

/* ---- Reap ---- */

/* A list of findings as Leaks' (its one definition, wire_operator.c): the
 * member name of the list in root, re-read by that decoder; its refusal
 * with the decoder's method taken off (the caller names its own). */
static int read_leak_list(const struct jr *r, const cJSON *root, const char *member,
			  enum wire_operator_leak_list as, struct wire_operator_leaks *out)
{
	memset(out, 0, sizeof *out);
	const cJSON *list = NULL;
	if (jr_array(r, root, "", member, &list) < 0)
		return -1;
	if (!list)
		return jr_fail(r, "%s: the list is missing", member);
	cJSON *wrap = jw_object();
	jw_add(wrap, wire_operator_leak_list_name(as),
	       wire_check_alloc(cJSON_Duplicate(list, true)));
	cleanup_free char *text = jw_print(wrap);
	struct wire_status inner;
	if (wire_operator_decode_leaks(text, strlen(text), as, out, &inner) < 0) {
		const char *msg = strchr(inner.msg, ':');
		return jr_fail(r, "%s", msg && msg[1] == ' ' ? msg + 2 : inner.msg);
	}
	return 0;
}

char *wire_operator_encode_reap_request(const struct wire_operator_reap_request *r)
{
	struct wire_operator_leaks v = {.leaks = r->findings, .n = r->n};
	char *leaks = wire_operator_encode_leaks(WIRE_LEAKS_FOUND, &v);
	cJSON *o = wire_check_alloc(cJSON_Parse(leaks));
	free(leaks);
	cJSON *list = cJSON_DetachItemFromObjectCaseSensitive(o, "leaks");
	jw_add(o, "findings", list);
	jw_bool(o, "dryRun", r->dry_run);
	return jw_print(o);
}

void wire_operator_reap_request_free(struct wire_operator_reap_request *r)
{
	if (!r)
		return;
	free(r->findings);
	memset(r, 0, sizeof *r);
}

int wire_operator_decode_reap_request(const char *body, size_t len,
				      struct wire_operator_reap_request *out,
				      struct wire_status *st)
{
	static const char *const names[] = {"findings", "dryRun"};
	cleanup_cjson cJSON *root = NULL;
	struct jr r = REQUEST_READER(st);
	memset(out, 0, sizeof *out);
	if (request_root(body, len, names, ARRAY_SIZE(names), &root, st) < 0)
		return -1;
	struct wire_operator_leaks v;
	if (jr_bool(&r, root, "", "dryRun", &out->dry_run) < 0 ||
	    read_leak_list(&r, root, "findings", WIRE_LEAKS_FOUND, &v) < 0)
		return -1;
	out->findings = v.leaks;
	out->n = v.n;
	if (!out->n || out->n > WIRE_OPERATOR_REAP_MAX) {
		wire_operator_reap_request_free(out);
		return jr_fail(&r, out->n ? "findings: at most 1000 in one reap"
					  : "findings: name at least one (Gc reaps every finding)");
	}
	return 0;
}

int wire_operator_decode_reap(const char *body, size_t len, bool dry_run,
			      struct wire_operator_leaks *out, struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("Reap", body, len, &root, st) < 0)
		return -1;
	enum wire_operator_leak_list as = dry_run ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED;
	const char *member = wire_operator_leak_list_name(as);
	const char *const names[] = {member};
	if (op_only_members(&r, root, names, 1) < 0 || read_leak_list(&r, root, member, as, out) < 0)
		return op_refused("Reap", st);
	return 0;
}
