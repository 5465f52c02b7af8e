/* How bulkhead-init is started, its three modes: PID 1 of a sandbox (no
 * arguments), the wall probe inside a throwaway sandbox, and the warden on
 * the host beside an engine (src/init/warden.c). The engine writes these
 * command lines (bundle.c, evidence.c, warden.c) and the init reads them
 * (src/init/main.c). */
#ifndef BH_PROTO_INVOCATION_H
#define BH_PROTO_INVOCATION_H

/* Where the init finds itself inside the sandbox (a read-only bind mount). */
#define BH_INIT_SANDBOX_PATH "/opt/bulkhead/bulkhead-init"

/* bulkhead-init --probe: one key=value fact per line (probe_keys.h). */
#define BH_INIT_PROBE "--probe"

/* bulkhead-init --warden ENGINE_PID LOCK_PATH CGROUP_PARENT, each at its
 * index in argv. */
#define BH_INIT_WARDEN "--warden"
enum bh_warden_arg {
	BH_WARDEN_ARG_MODE = 1,	         /* BH_INIT_WARDEN */
	BH_WARDEN_ARG_ENGINE_PID = 2,    /* decimal */
	BH_WARDEN_ARG_LOCK = 3,	         /* the state directory's lock, relative to the cwd */
	BH_WARDEN_ARG_CGROUP_PARENT = 4, /* the engine's sandboxes' cgroup parent, below
					    each hierarchy under BH_CGROUP_ROOT */
	BH_WARDEN_ARGC = 5,
};

/* Where the hierarchies the cgroup parent is found under are mounted: the
 * engine makes its sandboxes' cgroups there and the warden empties them. */
#define BH_CGROUP_ROOT "/sys/fs/cgroup"

#endif
