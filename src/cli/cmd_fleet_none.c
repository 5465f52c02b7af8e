/* bulkhead fleet in a build without libbulkhead-fleet (no libnats): its
 * --help says so, anything else is refused in words. */
#include "cli.h"

int cmd_fleet(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help("usage: bulkhead fleet status|hosts|leaks|records|drain HOST|undrain HOST\n"
				"\n"
				"This bulkhead was built without the fleet library (libnats-dev): a fleet\n"
				"on NATS cannot be seen from it.\n");
	cli_error("fleet: this bulkhead was built without the fleet library (libnats-dev)");
	return CLI_EXIT_BULKHEAD;
}
