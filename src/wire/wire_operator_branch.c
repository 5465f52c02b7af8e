/* ---- density (issue 21) ----
 * Branch's answer: the children a branch made (each its fingerprint, the
 * session id a caller names it by, its sandbox), the parent's pause, and
 * the parent's record the children's chains go on from. The client reads
 * it as the daemon's word: a digest that is not one, more children than a
 * branch makes or an id that is not one a session has is refused. */
#include "wire_operator_priv.h"

#include <stdlib.h>
#include <string.h>

#define CHILD(member) WIRE_AT(struct wire_operator_branch_child, member)
static const struct wire_field child_fields[] = {
	{"session", WIRE_F_DIGEST, CHILD(session)},
	{"sessionId", WIRE_F_FIXED, CHILD(session_id)},
	{"sandbox", WIRE_F_FIXED, CHILD(sandbox)},
};
#undef CHILD

static const struct op_items child_list =
	OP_FIELD_ITEMS("children", struct wire_operator_branch_child, child_fields);

char *wire_operator_encode_branched(const struct wire_operator_branched *b)
{
	cJSON *o = jw_object();
	op_items_json(o, &child_list, b->children, b->n);
	jw_u64(o, "parentPausedUs", b->parent_paused_us);
	jw_u64(o, "after", b->after);
	jw_string(o, "afterSha256", b->after_sha256);
	return jw_print(o);
}

void wire_operator_branched_free(struct wire_operator_branched *b)
{
	if (!b)
		return;
	op_items_free(&child_list, b->children, b->n);
	memset(b, 0, sizeof *b);
}

static int read_rest(const struct jr *r, const cJSON *root, void *out)
{
	struct wire_operator_branched *b = out;
	char *sha = NULL;
	size_t n = 0;
	if (jr_u64(r, root, "", "parentPausedUs", &b->parent_paused_us) < 0 ||
	    jr_u64(r, root, "", "after", &b->after) < 0 ||
	    jr_string(r, root, "", "afterSha256", &sha, &n) < 0)
		return -1;
	bool ok = n == 0 || (sha && n == 64 && strspn(sha, "0123456789abcdef") == 64);
	if (ok && n)
		memcpy(b->after_sha256, sha, 65);
	free(sha);
	return ok ? 0 : jr_fail(r, "afterSha256 is not a SHA-256 hex digest");
}

static bool hex_id(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

int wire_operator_decode_branched(const char *body, size_t len, struct wire_operator_branched *out,
				  struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("Branch", body, len, &child_list, &items, &out->n, read_rest, out, st);
	out->children = items;
	if (rc == 0 && (out->n < 1 || out->n > BH_BRANCH_MAX))
		rc = wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
			       "Branch: %zu children; a branch makes 1 to %u", out->n, BH_BRANCH_MAX);
	for (size_t i = 0; rc == 0 && i < out->n; i++) {
		const struct wire_operator_branch_child *c = &out->children[i];
		if (!hex_id(c->session, 64) || !hex_id(c->session_id, 32) ||
		    strncmp(c->sandbox, "bh-", 3) || !hex_id(c->sandbox + 3, 16))
			rc = wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
				       "Branch: children[%zu] is not a session bulkhead makes (its "
				       "fingerprint, id or sandbox name)",
				       i);
	}
	if (rc < 0)
		wire_operator_branched_free(out);
	return rc;
}
