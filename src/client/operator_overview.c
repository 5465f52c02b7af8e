/* Overview (light) over the generic operator call: the console's one
 * request a refresh, and its long poll. The answer is read by wire's
 * decoder (wire_operator_overview.c), which reads its sessions and usage
 * with ListSessions' and Usage's own. */
#include "client_priv.h"

#include <stdlib.h>
#include <string.h>

struct overview_call {
	bh_client_overview_cb cb;
	void *arg;
};

static void on_overview(void *arg, const char *json, const struct bh_client_error *err)
{
	struct overview_call o = *(struct overview_call *)arg;
	free(arg);
	if (err) {
		o.cb(o.arg, NULL, err);
		return;
	}
	struct wire_operator_overview ov;
	struct wire_status st;
	if (wire_operator_decode_overview(json, strlen(json), &ov, &st) < 0) {
		struct bh_client_error *e = client_data_loss("%s", st.msg);
		o.cb(o.arg, NULL, e);
		bh_client_error_free(e);
		return;
	}
	o.cb(o.arg, &ov, NULL);
	wire_operator_overview_free(&ov);
}

int bh_client_overview_async(bh_client *c, const char *token, uint32_t wait_ms,
			     bh_client_overview_cb cb, void *arg, struct bh_client_error **err)
{
	struct wire_operator_overview_request req = {.token = token ? token : "",
						     .wait_ms = wait_ms};
	cleanup_free char *body = wire_operator_encode_overview_request(&req);
	struct overview_call *o = xzalloc(sizeof *o);
	*o = (struct overview_call){cb, arg};
	if (bh_client_operator_call_async(c, "Overview", body, on_overview, o, err) < 0) {
		free(o);
		return -1;
	}
	return 0;
}
