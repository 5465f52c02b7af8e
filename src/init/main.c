/* bulkhead-init: PID 1 of every sandbox (no arguments), or the wall probe
 * the engine runs inside a throwaway sandbox (--probe). */
#include <stdio.h>
#include <string.h>

#include "init.h"
#include "probe.h"

int main(int argc, char **argv)
{
	/* argc 0 is possible with execve(path, {NULL}, ...); the runtime
	 * starting the init with no arguments is what matters. */
	if (argc <= 1)
		return bh_init_main();
	if (argc == 2 && strcmp(argv[1], "--probe") == 0)
		return bh_probe_main();
	fprintf(stderr, "usage: bulkhead-init [--probe]\n");
	return 2;
}
