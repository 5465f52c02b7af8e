/* The warden: the one part of bulkhead-init that runs on the host, beside an
 * engine rather than inside a sandbox. See warden.c. */
#ifndef BH_INIT_WARDEN_H
#define BH_INIT_WARDEN_H

/* bulkhead-init --warden ENGINE_PID LOCK_PATH CGROUP_PARENT */
int bh_warden_main(int argc, char **argv);

#endif
