/* bulkhead gc [--state DIR]: take the state directory and collect whatever a
 * dead engine left there (containers, bundles, cgroups), then let it go. An
 * engine does the same at every start; this does only that. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void print_reaped(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		printf("%s\n", msg);
}

int cmd_gc(int argc, char **argv)
{
	struct cli_common c = {0};
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&c, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r == 0) {
			cli_error("gc: unknown argument \"%s\" (usage: bulkhead gc [--state DIR])", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	bh_engine *e = cli_open_engine_with(&c, false, true, print_reaped);
	if (!e)
		return CLI_EXIT_BULKHEAD;
	printf("collected leftovers in %s\n", bh_engine_state_dir(e));
	bh_engine_close(e);
	return 0;
}
