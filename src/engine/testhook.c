/* The test hooks (testhook.h): the engine opened with them, and the crash
 * hook, where a test names a point and the engine SIGKILLs itself there. */
#include "engine_priv.h"
#include "testhook.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* crash_at is "point" or "point:N" (the Nth time the point is reached). */
void engine_maybe_crash(bh_engine *e, const char *point)
{
	if (!e->crash_at)
		return;
	size_t n = strlen(point);
	if (strncmp(e->crash_at, point, n) || (e->crash_at[n] && e->crash_at[n] != ':'))
		return;
	long nth = e->crash_at[n] == ':' ? strtol(e->crash_at + n + 1, NULL, 10) : 1;
	if (++e->crash_count >= nth)
		raise(SIGKILL);
}

int bh_engine_open_hooked(const struct bh_config *cfg, const struct bh_test_hooks *hooks,
			  bh_engine **out, bh_error **err)
{
	return engine_open(cfg, hooks, out, err);
}
