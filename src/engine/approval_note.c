/* The approval desk's steps, kept where the console and `bulkhead events`
 * already read: the store's events (bulkhead.h, approvals). */
#include "engine_priv.h"
#include "store.h"

#include <string.h>

int bh_engine_note_approval(bh_engine *e, const char *fingerprint, const char *detail,
			    bh_error **err)
{
	if (store_event(e->store, BH_EVENT_APPROVAL, fingerprint ? fingerprint : "", "",
			detail ? detail : "") < 0)
		return bh_fail(err, BH_E_SYSTEM, 0,
			       "could not keep the approval event in the store");
	return 0;
}

/* ---- remote: the step in the name of who took it ---- */
int bh_engine_note_approval_by(bh_engine *e, const char *fingerprint, const char *detail,
			       const struct bh_actor *who, bh_error **err)
{
	if (store_event_by(e->store, BH_EVENT_APPROVAL, fingerprint ? fingerprint : "", "",
			   detail ? detail : "", who) < 0)
		return bh_fail(err, BH_E_SYSTEM, 0,
			       "could not keep the approval event in the store");
	return 0;
}
