/* The NATS cluster harness (tests/fleet/nats_cluster.c) reports what it
 * cannot do through criterion's assertions. The fleet bench is a program,
 * not a test: compiled into it, each assertion that fails ends the bench
 * with its message instead (its atexit stops the cluster). */
#ifndef BH_BENCH_CRITERION_SHIM_H
#define BH_BENCH_CRITERION_SHIM_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Not format-checked: an assertion without a message passes "". */
static inline void bh_shim_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "bulkhead-bench-fleet: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}
#define BH_SHIM_FAIL_(...) bh_shim_fail(__FILE__, __LINE__, "" __VA_ARGS__)
#define cr_assert(cond, ...)                                                                       \
	do {                                                                                       \
		if (!(cond))                                                                       \
			BH_SHIM_FAIL_(__VA_ARGS__);                                                \
	} while (0)
#define cr_assert_fail(...) BH_SHIM_FAIL_(__VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)

#endif
