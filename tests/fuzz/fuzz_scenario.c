/* The scenario loader (src/scenario/scenario.c, docs/scenarios.md): a scenario file
 * is data an operator may have been handed; parsing it must accept or
 * refuse with a message, never crash or leak; and what it accepts, the
 * check of its hops against its answers reads without a fault. */
#include "scenario.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scenario *s = NULL;
	char err[512];
	if (scenario_parse((const char *)data, size, &s, err, sizeof err) == 0) {
		char why[256]; /* ---- hops ---- */
		(void)scenario_contradictions(s, why, sizeof why);
		scenario_free(s);
	}
	return 0;
}
