/* What the fault suites share: blocking helpers that never assert (a forked
 * worker must report through its exit status, not through criterion), a
 * shell capture, and the host-side leak count after a restart. */
#ifndef BH_TEST_FAULTS_H
#define BH_TEST_FAULTS_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stddef.h>

#define FAULTS_PRINCIPAL "faults"

/* Opens an engine on state_dir with the shared evidence cache and waits until
 * it is proven; NULL (and *why) when it cannot. No criterion asserts. */
bh_engine *faults_engine_open(const char *state_dir, const char *crash_at, char *why, size_t n);

struct faults_cell {
	bool done, answered;
	int exit_code;
	char out[512];
	char record[65];
	char err[512];
	enum bh_end_reason session_end;
	enum bh_refusal refusal;
	enum bh_error_code code;
};

/* Each returns 0, or -1 with the engine's words in why. */
bh_session *faults_open(bh_engine *e, enum bh_tier tier, char *why, size_t n);
int faults_cell(bh_engine *e, bh_session *s, const char *code, uint32_t timeout_ms,
		struct faults_cell *c);
int faults_action(bh_engine *e, bh_session *s,
		  int (*act)(bh_session *, bh_action_cb, void *, bh_error **), char *why, size_t n);
int faults_close(bh_engine *e, bh_session *s, char *why, size_t n);

/* popen(fmt...) into out (NUL-terminated); returns the exit status. */
int faults_sh(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What a dead engine could have left, seen by the next engine e on
 * state_dir: containers, cgroups, processes, bundles and images nothing
 * keeps, and the engine's own leak report. Appends one line per finding to
 * report (may be NULL) and returns how many. */
int faults_leaks(bh_engine *e, const char *state_dir, char *report, size_t n);

#endif
