/* The crash hook (bh_config.crash_at): a test names a point and the
 * engine SIGKILLs itself there, to prove what survives a crash at it. */
#include "engine_priv.h"

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
