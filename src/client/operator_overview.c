/* Overview (light) over the generic operator call: the console's one
 * request a refresh, and its long poll. The answer is read by wire's
 * decoder (wire_operator_overview.c), which reads its sessions and usage
 * with ListSessions' and Usage's own. */
#include "client_priv.h"

#define OPS WIRE_OPERATOR_SERVICE "/"

#include <stdlib.h>
#include <string.h>

struct overview_call {
	bh_client_overview_cb cb;
	void *arg;
	struct xfer *x; /* for bh_client_overview_abandon */
};

static void on_http(void *arg, const struct bh_client_http *a)
{
	struct overview_call o = *(struct overview_call *)arg;
	free(arg);
	struct bh_client_error *e = bh_client_error_of(a);
	if (e && e->unanswered) { /* an operator call runs no code: no record to check */
		wire_record_free(&e->record);
		e->unanswered = false;
	}
	struct wire_operator_overview ov;
	struct wire_status st;
	if (!e && wire_operator_decode_overview(a->body, strlen(a->body), &ov, &st) < 0)
		e = client_data_loss("%s", st.msg);
	if (e) {
		o.cb(o.arg, NULL, e);
		bh_client_error_free(e);
		return;
	}
	o.cb(o.arg, &ov, NULL);
	wire_operator_overview_free(&ov);
}

/* Sent with the transport itself, not bh_client_operator_call_async: a
 * long poll still out when the console quits is abandoned whole, its
 * callback never called and nothing of it left behind. */
int bh_client_overview_async(bh_client *c, const char *token, uint32_t wait_ms,
			     bh_client_overview_cb cb, void *arg, void **handle,
			     struct bh_client_error **err)
{
	struct wire_operator_overview_request req = {.token = token ? token : "",
						     .wait_ms = wait_ms};
	cleanup_free char *body = wire_operator_encode_overview_request(&req);
	struct overview_call *o = xzalloc(sizeof *o);
	*o = (struct overview_call){cb, arg, NULL};
	o->x = xfer_start(c, OPS "Overview", body, on_http, o, err);
	if (!o->x) {
		free(o);
		return -1;
	}
	if (handle)
		*handle = o;
	return 0;
}

void bh_client_overview_abandon(bh_client *c, void *handle)
{
	struct overview_call *o = handle;
	xfer_abandon(c, o->x);
	free(o);
}
