/* ListApprovals and DecideApproval: the calls a daemon holds for a person's
 * decision, and the decision (docs/api.md, Approvals). Each message is a
 * table of fields; the held calls' files are a list beside the calls, each
 * naming its call, so no item nests another. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

#define HELD(member) WIRE_AT(struct wire_operator_approval, member)
static const struct wire_field approval_fields[] = {
	{"id", WIRE_F_STR, HELD(id)},
	{"procedure", WIRE_F_STR, HELD(procedure)},
	{"principal", WIRE_F_STR, HELD(principal)},
	{"runKey", WIRE_F_STR, HELD(run_key)},
	{"owner", WIRE_F_STR, HELD(owner)},
	{"session", WIRE_F_STR, HELD(session)},
	{"isolation", WIRE_F_STR, HELD(isolation)},
	{"kind", WIRE_F_STR, HELD(kind)},
	{"language", WIRE_F_STR, HELD(language)},
	{"code", WIRE_F_STR, HELD(code)},
	{"requestSha256", WIRE_F_DIGEST, HELD(request_sha256)},
	{"heldUnixMs", WIRE_F_I64, HELD(held_unix_ms)},
	{"deadlineUnixMs", WIRE_F_I64, HELD(deadline_unix_ms)},
	{"files", WIRE_F_U32, HELD(n_files)},
	{"codeBytes", WIRE_F_U64, HELD(code_bytes)},
	{"codeOmitted", WIRE_F_BOOL, HELD(code_omitted)},
};
#undef HELD

#define FILE_OF(member) WIRE_AT(struct wire_operator_approval_file, member)
static const struct wire_field file_fields[] = {
	{"approval", WIRE_F_STR, FILE_OF(approval)},
	{"name", WIRE_F_STR, FILE_OF(name)},
	{"size", WIRE_F_U64, FILE_OF(size)},
	{"binary", WIRE_F_BOOL, FILE_OF(binary)},
	{"truncated", WIRE_F_BOOL, FILE_OF(truncated)},
	{"text", WIRE_F_STR, FILE_OF(text)},
};
#undef FILE_OF

#define LIST(member) WIRE_AT(struct wire_operator_approvals, member)
static const struct wire_field list_fields[] = {
	{"capTotal", WIRE_F_U32, LIST(cap_total)},
	{"capPerPrincipal", WIRE_F_U32, LIST(cap_per_principal)},
	{"timeoutMs", WIRE_F_U32, LIST(timeout_ms)},
};
#undef LIST

#define DECIDED(member) WIRE_AT(struct wire_operator_decision, member)
static const struct wire_field decision_fields[] = {
	{"id", WIRE_F_STR, DECIDED(id)},
	{"decision", WIRE_F_STR, DECIDED(decision)},
	{"reason", WIRE_F_STR, DECIDED(reason)},
	{"by", WIRE_F_STR, DECIDED(by)},
	{"decidedUnixMs", WIRE_F_I64, DECIDED(decided_unix_ms)},
};
#undef DECIDED

static const struct op_items approval_list =
	OP_FIELD_ITEMS("approvals", struct wire_operator_approval, approval_fields);
static const struct op_items file_list =
	OP_FIELD_ITEMS("files", struct wire_operator_approval_file, file_fields);

char *wire_operator_encode_approvals(const struct wire_operator_approvals *a)
{
	cJSON *o = jw_object();
	op_items_json(o, &approval_list, a->approvals, a->n);
	op_items_json(o, &file_list, a->files, a->n_files);
	wire_fields_json(o, WIRE_FIELDS(list_fields), a);
	return jw_print(o);
}

void wire_operator_approvals_free(struct wire_operator_approvals *a)
{
	if (!a)
		return;
	op_items_free(&approval_list, a->approvals, a->n);
	op_items_free(&file_list, a->files, a->n_files);
	memset(a, 0, sizeof *a);
}

/* The files' list and the figures beside the held calls. */
static int read_rest(const struct jr *r, const cJSON *root, void *out)
{
	struct wire_operator_approvals *a = out;
	void *files = NULL;
	int rc = op_read_items(r, root, "", &file_list, &files, &a->n_files);
	a->files = files;
	if (rc < 0)
		return -1;
	return wire_fields_read(r, root, "", WIRE_FIELDS(list_fields), a);
}

/* A file naming no held call is a damaged answer, not a file to show. */
static int files_named(const struct wire_operator_approvals *a, struct wire_status *st)
{
	for (size_t i = 0; i < a->n_files; i++) {
		bool found = false;
		for (size_t j = 0; j < a->n && !found; j++)
			found = !strcmp(a->files[i].approval, a->approvals[j].id);
		if (!found)
			return wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
					 "ListApprovals: files[%zu].approval names no held call",
					 i);
	}
	return 0;
}

int wire_operator_decode_approvals(const char *body, size_t len,
				   struct wire_operator_approvals *out, struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListApprovals", body, len, &approval_list, &items, &out->n,
				read_rest, out, st);
	out->approvals = items;
	if (rc == 0)
		rc = files_named(out, st);
	if (rc < 0)
		wire_operator_approvals_free(out);
	return rc;
}

char *wire_operator_encode_decision(const struct wire_operator_decision *d)
{
	return wire_fields_print(WIRE_FIELDS(decision_fields), d);
}

void wire_operator_decision_free(struct wire_operator_decision *d)
{
	wire_fields_clear(WIRE_FIELDS(decision_fields), d, sizeof *d);
}

int wire_operator_decode_decision_request(const char *body, size_t len,
					  struct wire_operator_decision *out,
					  struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	cleanup_free char *why = NULL;
	struct jr r = {st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST};
	memset(out, 0, sizeof *out);
	if (wire_parse_body(body, len, &root, &why) < 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST, "%s", why);
	int rc = -1;
	if (wire_fields_read(&r, root, "", WIRE_FIELDS(decision_fields), out) < 0)
		goto out;
	if (!*out->id) {
		jr_fail(&r, "id: name the held call (ListApprovals lists them)");
		goto out;
	}
	bool deny = !strcmp(out->decision, "deny");
	if (!deny && strcmp(out->decision, "approve")) {
		jr_fail(&r, "decision must be \"approve\" or \"deny\"");
		goto out;
	}
	if (deny && !*out->reason) {
		jr_fail(&r, "reason: a denial needs a reason (the agent is told it)");
		goto out;
	}
	if (strlen(out->reason) > WIRE_APPROVAL_REASON_MAX) {
		jr_fail(&r, "reason is longer than %u bytes", WIRE_APPROVAL_REASON_MAX);
		goto out;
	}
	/* Who decided is the daemon's to say (the caller's token), never the
	 * caller's: what a request sent there is dropped. */
	free((char *)out->by);
	out->by = xstrdup("");
	out->decided_unix_ms = 0;
	rc = 0;
out:
	if (rc < 0)
		wire_operator_decision_free(out);
	return rc;
}

int wire_operator_decode_decision(const char *body, size_t len, struct wire_operator_decision *out,
				  struct wire_status *st)
{
	return op_decode_fields("DecideApproval", body, len, WIRE_FIELDS(decision_fields), out,
				sizeof *out, st);
}

void wire_operator_approval_copy(struct wire_operator_approval *dst,
				 const struct wire_operator_approval *src)
{
	wire_fields_copy(WIRE_FIELDS(approval_fields), dst, src);
}

void wire_operator_approval_clear(struct wire_operator_approval *a)
{
	wire_fields_clear(WIRE_FIELDS(approval_fields), a, sizeof *a);
}

void wire_operator_approval_file_of(struct wire_operator_approval_file *f, const char *approval,
				    const char *name, const uint8_t *content, size_t len)
{
	memset(f, 0, sizeof *f);
	f->approval = xstrdup(approval);
	f->name = xstrdup(name);
	f->size = len;
	size_t n = len > WIRE_APPROVAL_TEXT_MAX ? WIRE_APPROVAL_TEXT_MAX : len;
	/* Cut at a character's start, so a long text is shown, not called binary. */
	if (n < len)
		while (n > 0 && (content[n] & 0xc0) == 0x80)
			n--;
	f->truncated = n < len;
	f->binary = memchr(content, '\0', n) != NULL || !wire_utf8_valid(content, n);
	f->text = f->binary ? xstrdup("") : xstrndup((const char *)content, n);
}

void wire_operator_approval_file_clear(struct wire_operator_approval_file *f)
{
	wire_fields_clear(WIRE_FIELDS(file_fields), f, sizeof *f);
}

size_t wire_operator_json_string_cost(const char *s)
{
	size_t n = 2;
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
		n += strchr("\b\f\n\r\t\"\\", *p) ? 2 : *p < 0x20 ? 6 : 1; /* cJSON's escapes */
	return n;
}
