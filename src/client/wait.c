/* The blocking forms: the same asynchronous calls, with the loop run under
 * poll() here until their answer arrives (for the CLI and tests). */
#include "client_priv.h"

#include <string.h>

void waiter_settle(struct waiter *w, void *res, const struct bh_client_error *err)
{
	w->done = true;
	if (err) {
		w->err = bh_client_error_dup(err);
		return;
	}
	if (res && w->out) {
		memcpy(w->out, res, w->size); /* moved: the library frees what is left, now nothing */
		memset(res, 0, w->size);
	}
}

int waiter_wait(bh_client *c, struct waiter *w, struct bh_client_error **err)
{
	if (bh_client_wait(c, &w->done, -1) < 0 && !w->done)
		return client_fail(err, client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
						     "the client's loop stopped before the answer"));
	if (w->err)
		return client_fail(err, steal_ptr(w->err));
	return 0;
}
