/* bulkhead fleet in a build without libbulkhead-fleet (no libnats): refused
 * in words. */
#include "cli.h"

int cmd_fleet(int argc, char **argv)
{
	(void)argc, (void)argv;
	cli_error("fleet: this bulkhead was built without the fleet library (libnats-dev)");
	return CLI_EXIT_BULKHEAD;
}
