/* ListApprovals and DecideApproval over the generic operator call, their
 * answers read by wire's decoders (wire_operator_approvals.c), so the CLI
 * and the console refuse a malformed answer in the same words. */
#include "client_priv.h"

#include <stdlib.h>
#include <string.h>

static char *decision_body(const char *id, bool approve, const char *reason)
{
	struct wire_operator_decision d = {
		.id = id,
		.decision = approve ? "approve" : "deny",
		.reason = reason ? reason : "",
	};
	return wire_operator_encode_decision(&d);
}

int bh_client_list_approvals(bh_client *c, struct wire_operator_approvals *out,
			     struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "ListApprovals", "{}", &json, err) < 0)
		return -1;
	struct wire_status st;
	if (wire_operator_decode_approvals(json, strlen(json), out, &st) < 0)
		return client_fail(err, client_data_loss("%s", st.msg));
	return 0;
}

int bh_client_decide_approval(bh_client *c, const char *id, bool approve, const char *reason,
			      struct wire_operator_decision *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	cleanup_free char *body = decision_body(id, approve, reason);
	cleanup_free char *json = NULL;
	if (bh_client_operator_call(c, "DecideApproval", body, &json, err) < 0)
		return -1;
	struct wire_status st;
	if (wire_operator_decode_decision(json, strlen(json), out, &st) < 0)
		return client_fail(err, client_data_loss("%s", st.msg));
	return 0;
}

struct list_call {
	bh_client_approvals_cb cb;
	void *arg;
};

static void on_list(void *arg, const char *json, const struct bh_client_error *err)
{
	struct list_call *l = arg;
	if (err) {
		l->cb(l->arg, NULL, err);
	} else {
		struct wire_operator_approvals a;
		struct wire_status st;
		if (wire_operator_decode_approvals(json, strlen(json), &a, &st) < 0) {
			struct bh_client_error *e = client_data_loss("%s", st.msg);
			l->cb(l->arg, NULL, e);
			bh_client_error_free(e);
		} else {
			l->cb(l->arg, &a, NULL);
			wire_operator_approvals_free(&a);
		}
	}
	free(l);
}

int bh_client_list_approvals_async(bh_client *c, bh_client_approvals_cb cb, void *arg,
				   struct bh_client_error **err)
{
	struct list_call *l = xzalloc(sizeof *l);
	*l = (struct list_call){cb, arg};
	if (bh_client_operator_call_async(c, "ListApprovals", "{}", on_list, l, err) < 0) {
		free(l);
		return -1;
	}
	return 0;
}

struct decide_call {
	bh_client_done_cb cb;
	void *arg;
};

static void on_decided(void *arg, const char *json, const struct bh_client_error *err)
{
	struct decide_call *d = arg;
	struct bh_client_error *e = NULL;
	if (!err) {
		struct wire_operator_decision out;
		struct wire_status st;
		if (wire_operator_decode_decision(json, strlen(json), &out, &st) < 0)
			err = e = client_data_loss("%s", st.msg);
		else
			wire_operator_decision_free(&out);
	}
	d->cb(d->arg, err);
	bh_client_error_free(e);
	free(d);
}

int bh_client_decide_approval_async(bh_client *c, const char *id, bool approve, const char *reason,
				    bh_client_done_cb cb, void *arg, struct bh_client_error **err)
{
	struct decide_call *d = xzalloc(sizeof *d);
	*d = (struct decide_call){cb, arg};
	cleanup_free char *body = decision_body(id, approve, reason);
	if (bh_client_operator_call_async(c, "DecideApproval", body, on_decided, d, err) < 0) {
		free(d);
		return -1;
	}
	return 0;
}
