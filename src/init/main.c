/* bulkhead-init: PID 1 of every sandbox (no arguments), the wall probe
 * the engine runs inside a throwaway sandbox (--probe), or, on the host, the
 * warden that stops an engine's sandboxes when the engine dies (--warden). */
#include <stdio.h>
#include <string.h>

#include "init.h"
#include "invocation.h"
#include "probe.h"
#include "project.h"
#include "runner.h"
#include "warden.h"

int main(int argc, char **argv)
{
	/* argc 0 is possible with execve(path, {NULL}, ...); the runtime
	 * starting the init with no arguments is what matters. */
	if (argc <= 1)
		return bh_init_main();
	if (argc == 2 && strcmp(argv[1], BH_INIT_PROBE) == 0)
		return bh_probe_main();
	/* ---- project: the runner an EXEC starts (project.h) ---- */
	if (argc == 2 && strcmp(argv[1], BH_INIT_PROJECT) == 0)
		return bh_project_main();
	if (argc >= 2 && strcmp(argv[BH_WARDEN_ARG_MODE], BH_INIT_WARDEN) == 0)
		return bh_warden_main(argc, argv);
	fprintf(stderr, "usage: bulkhead-init [--probe | --project | --warden ENGINE_PID LOCK_PATH CGROUP_PARENT]\n");
	return 2;
}
