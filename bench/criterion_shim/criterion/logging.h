/* criterion's logging, as the fleet bench's stderr (see criterion.h here). */
#ifndef BH_BENCH_CRITERION_SHIM_LOGGING_H
#define BH_BENCH_CRITERION_SHIM_LOGGING_H

#include <stdio.h>

#define cr_log_error(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#define cr_log(level, ...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))

#endif
