/* The operator's side of the approval desk: ListApprovals and
 * DecideApproval (docs/api.md, Approvals). The operator scope is checked
 * before either is reached (call.c); who decided is the caller's principal,
 * from its token, never a name the request carries. */
#include "daemon_priv.h"

#include "wire_operator.h"

#include <stdlib.h>
#include <string.h>

static void list_approvals(struct call *c)
{
	struct wire_operator_approvals out;
	approvals_list(c->srv, &out);
	call_answer_json(c, wire_operator_encode_approvals(&out));
	/* The strings are the table's: only the arrays are ours. */
	free(out.approvals);
	free(out.files);
}

static void decide_approval(struct call *c)
{
	struct wire_operator_decision d;
	struct wire_status st;
	if (wire_operator_decode_decision_request(c->body ? c->body : "{}",
						  c->body ? c->body_len : 2, &d, &st) < 0) {
		call_refuse(c, st.code, st.reason, "DecideApproval: %s", st.msg);
		return;
	}
	enum wire_code code = WIRE_OK;
	char why[256];
	struct bh_actor decider = call_actor(c); /* ---- remote: the event's BY ---- */
	if (approvals_decide(c->srv, &d, &decider, &code, why, sizeof why) < 0) {
		call_refuse(c, code, WIRE_REFUSAL_REQUEST, "%s", why);
	} else {
		struct wire_operator_decision out = {
			.id = d.id,
			.decision = d.decision,
			.reason = d.reason,
			.by = c->who.name,
			.decided_unix_ms = (int64_t)now_real_ms(),
		};
		call_answer_json(c, wire_operator_encode_decision(&out));
	}
	wire_operator_decision_free(&d);
}

bool operator_approvals(struct call *c, const char *method)
{
	if (!strcmp(method, "ListApprovals"))
		list_approvals(c);
	else if (!strcmp(method, "DecideApproval"))
		decide_approval(c);
	else
		return false;
	return true;
}
