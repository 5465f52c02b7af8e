/* bulkhead-bench --soak SECONDS: one cell a second through one engine, the
 * WAL's size sampled after every cell (soak.c). */
#ifndef BH_BENCH_SOAK_H
#define BH_BENCH_SOAK_H

#include <signal.h>

struct soak_opts {
	int seconds;
	const char *run_dir;  /* the soak's state directory goes below it */
	const char *init, *interp, *evidence;
};

/* 0 when it ran and the WAL stayed within its bound. */
int bench_soak(const struct soak_opts *o, volatile sig_atomic_t *interrupted);

#endif
