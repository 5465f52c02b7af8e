/* What every runtime test needs: an engine of its own on a fresh state
 * directory (so tests never see each other's sandboxes), a blocking way to
 * run one program, and host-side facts to compare before and after. */
#ifndef BH_TEST_HARNESS_H
#define BH_TEST_HARNESS_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stddef.h>

/* A result copied out of the callback, owned by the test. */
struct run_result {
	bool answered;
	enum bh_error_code err_code; /* 0 when answered */
	enum bh_refusal refusal;
	char *err_msg;
	struct bh_exec_result r;    /* out/errout point into the copies below */
	char *out, *errout;         /* NUL-terminated copies */
};

struct harness {
	char *state_dir;
	bh_engine *e;
	char log[8192]; /* warnings the engine logged, for failure messages */
	struct bh_policy policy;
	bool keep_leftovers; /* inflight: bh_config's (kept across harness_open_at) */
	/* ---- egress: bh_config's broker (kept across harness_open_at) ---- */
	const struct bh_egress_ops *egress;
	void *egress_arg;
	/* ---- fleet: bh_config.images_dir (NULL: STATE/images), kept across
	 * harness_open_at; the test owns the directory ---- */
	const char *images_dir;
	/* ---- density: where host uid regions are claimed (NULL: the host's
	 * directory), kept across harness_open_at; the test owns it ---- */
	const char *uid_region_dir;
};

/* Opens an engine on a fresh state directory below $BULKHEAD_TEST_ROOT
 * (default /tmp/bulkhead-tests); the tier evidence is cached across tests in
 * $BULKHEAD_TEST_ROOT/evidence unless drop_wall is set. */
void harness_open(struct harness *h, const char *drop_wall);
/* Like harness_open, with a lifecycle policy (short timers in tests). */
void harness_open_policy(struct harness *h, const struct bh_policy *policy);
/* ---- egress: like harness_open, with a broker's ops (bh_config.egress) ---- */
struct bh_egress_ops;
void harness_open_egress(struct harness *h, const struct bh_egress_ops *ops, void *arg);
/* ---- fleet: like harness_open_policy, with a shared images directory ---- */
void harness_open_images(struct harness *h, const struct bh_policy *policy, const char *images_dir);
/* ---- density: like harness_open, claiming host uid regions in dir ---- */
void harness_open_uid_regions(struct harness *h, const char *dir);
/* Opens an engine on an existing state directory (a restart), optionally
 * with the crash hook armed. */
void harness_open_at(struct harness *h, const char *state_dir, const char *crash_at);
/* Closes the engine (deleting its sandboxes) and removes the directory. */
void harness_close(struct harness *h);
/* After an engine on state_dir was killed: waits (stated slack 5 s) until
 * its warden has taken the directory's lock, stopped the dead engine's
 * sandboxes and let go, so a test that then touches the runtime does not
 * race it. */
void harness_wait_for_warden(const char *state_dir);

/* Runs argv (or python/node code) in a fresh sandbox of `tier`, blocking. */
struct run_result *harness_exec(struct harness *h, enum bh_tier tier, enum bh_tier floor,
				const char *const *argv, const char *input, uint32_t timeout_ms,
				uint32_t output_cap);
struct run_result *harness_python(struct harness *h, enum bh_tier tier, const char *code,
				  uint32_t timeout_ms);
struct run_result *harness_node(struct harness *h, enum bh_tier tier, const char *code,
				uint32_t timeout_ms);
void run_result_free(struct run_result *r);

/* Host-side views, for "nothing was created" and leak checks. */
char *harness_runtime_list(struct harness *h); /* sorted names, both runtimes */
/* The same once it is empty, or ms have passed with the engine running
 * (the deletes of closed sandboxes finish in the background). */
char *harness_runtime_list_settled(struct harness *h, int ms);
/* A shell command's stdout into out (NUL-terminated, cut at outlen - 1);
 * its exit status, -1 when it did not exit. */
int harness_sh_into(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A whole file, NUL-terminated (the caller frees it), or NULL when it cannot be read. */
char *harness_slurp(const char *path);
/* A new directory NAME-XXXXXX under $BULKHEAD_TEST_ROOT (else /tmp) into
 * dir, and its bulkhead.db path into db (NULL: none); the test fails when
 * it cannot be made. harness_remove_dir removes it whole. */
void harness_scratch_dir(const char *name, char *dir, size_t dirlen, char *db, size_t dblen);
void harness_remove_dir(const char *dir);
/* A shell command's stdout (capped at 8 KiB), in a buffer the next call reuses. */
char *harness_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *harness_cgroup_list(struct harness *h);  /* leaves below the engine's parent */
long harness_rss_kib(void);
/* A process's oom_score_adj (pid as /proc names it), -10000 when it cannot
 * be read (the process is gone). */
int harness_oom_score_adj(const char *pid);
/* Sets this test's own oom_score_adj, which what it starts inherits. */
void harness_set_oom_score_adj(int adj);

/* In a child forked to exec a command: no signal blocked and every one at
 * its default (Criterion's workers set signals up their own way). */
void harness_child_signals_default(void);

/* Skips the test when the tier is not offered here, saying why. */
void harness_require_tier(struct harness *h, enum bh_tier tier);

#endif

/* ---- sessions ---- */

struct cell_outcome {
	bool answered;
	enum bh_error_code err_code;
	enum bh_refusal refusal;
	char *err_msg;
	enum bh_end_reason session_end;
	struct bh_cell_result r; /* out/errout/record point into the copies below */
	char *out, *errout;
	char record_sha256[65];
	unsigned long long sequence;
	int record_version;
};

/* Opens a session (waiting until it is ready). */
bh_session *harness_session(struct harness *h, enum bh_tier tier, uint32_t languages);
/* The same with every option the caller's (principal "test" when none). */
bh_session *harness_session_opts(struct harness *h, const struct bh_session_opts *opts);
/* Runs one cell and waits for its answer. */
struct cell_outcome *harness_cell(struct harness *h, bh_session *s, enum bh_language lang,
				  const char *code, uint32_t timeout_ms);
struct cell_outcome *harness_cell_files(struct harness *h, bh_session *s, enum bh_language lang,
					const char *code, const struct bh_file *files, size_t n);
/* Starts a cell without waiting; *done is set and *out filled when it is answered. */
int harness_cell_start(struct harness *h, bh_session *s, enum bh_language lang, const char *code,
		       bool *done, struct cell_outcome **out, bh_error **err);
void cell_outcome_free(struct cell_outcome *o);
/* Closes a session and waits; returns its call count. */
unsigned long long harness_close_session(struct harness *h, bh_session *s, char last[65],
					 char reason[32]);
/* Runs `bulkhead ARGS...` on the harness's state directory; returns its exit status. */
int harness_cli(struct harness *h, char *out, size_t outlen, const char *args);
