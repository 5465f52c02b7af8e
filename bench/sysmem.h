/* Memory and disk figures read from /proc and /sys. */
#ifndef BH_BENCH_SYSMEM_H
#define BH_BENCH_SYSMEM_H

#include <stdint.h>

/* MemAvailable from /proc/meminfo, KiB; -1 when unreadable. */
long long mem_available_kib(void);

struct pss_total {
	long long pss_kib, rss_kib, cgroup_kib;
	int procs;
};

/* Adds the processes of one sandbox: every pid in its cgroups (any v1
 * hierarchy below parent/name), and every process whose command line names
 * it (runsc's gofer and sandbox). Each pid is counted once. */
void sandbox_pss(const char *cgroup_parent, const char *name, struct pss_total *t);

/* Bytes under path: st_size summed, and st_blocks * 512 (on disk). */
void du(const char *path, uint64_t *apparent, uint64_t *on_disk);

#endif
