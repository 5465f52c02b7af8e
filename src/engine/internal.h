/* What the engine's modules share with each other (never installed). */
#ifndef BH_INTERNAL_H
#define BH_INTERNAL_H

#include "bulkhead.h"
#include "util.h"

#include <stdarg.h>
#include <sys/types.h>

/* ---- errors (error.c) ---- */
/* Fill *err (when err is not NULL) and return -1, so call sites read
 * `return bh_fail(err, ...)`. */
int bh_fail(bh_error **err, enum bh_error_code code, int sys_errno, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int bh_refuse(bh_error **err, enum bh_refusal reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix the message of an existing error with context. */
void bh_error_wrap(bh_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bh_error *bh_error_copy(const bh_error *err);

/* ---- logging (engine.c) ---- */
void bh_log(bh_engine *e, enum bh_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- the loop (loop.c) ---- */
struct bh_loop;
typedef void (*bh_io_fn)(bh_engine *e, void *arg, uint32_t events);
typedef void (*bh_timer_fn)(bh_engine *e, void *arg);
struct bh_watch;
struct bh_timer;

struct bh_loop *loop_new(void);
void loop_free(struct bh_loop *l);
int loop_fd(struct bh_loop *l);
int loop_timeout_ms(struct bh_loop *l);
/* One round: runs due timers, then ready watchers; never blocks. */
void loop_run_once(struct bh_loop *l, bh_engine *e);

struct bh_watch *loop_watch(struct bh_loop *l, int fd, uint32_t events, bh_io_fn fn, void *arg);
void loop_watch_events(struct bh_loop *l, struct bh_watch *w, uint32_t events);
/* Safe from inside any callback; the watch is freed after the round. */
void loop_unwatch(struct bh_loop *l, struct bh_watch *w);
struct bh_timer *loop_timer(struct bh_loop *l, uint64_t delay_ms, bh_timer_fn fn, void *arg);
void loop_timer_cancel(struct bh_loop *l, struct bh_timer *t);
/* ---- truth ---- */
/* When a timer fires, on the monotonic clock (us). */
uint64_t loop_timer_due_us(const struct bh_timer *t);

/* ---- children (child.c) ---- */
/* A spawned control command (crun, runsc ...). Its stdout and stderr are
 * captured together (capped) unless fds are given; completion fires once the
 * process was reaped and its output pipe reached end-of-file. */
struct bh_child_spec {
	const char *const *argv; /* argv[0] absolute */
	int fd_in, fd_out, fd_err; /* -1: /dev/null, or BH_CHILD_CAPTURE (out/err) */
	uint32_t timeout_ms;       /* 0: none; SIGKILL at the deadline */
};
#define BH_CHILD_CAPTURE (-2)
struct bh_child_result {
	pid_t pid;
	int status;       /* as from waitpid */
	bool timed_out;
	const char *output; /* captured stdout+stderr, NUL-terminated */
	size_t output_len;
};
typedef void (*bh_child_fn)(bh_engine *e, void *arg, const struct bh_child_result *r);

struct bh_children;
struct bh_children *children_new(void);
/* At engine close, before the loop goes: kills what still runs, frees all. */
void children_release(bh_engine *e);
int child_spawn(bh_engine *e, const struct bh_child_spec *spec, bh_child_fn fn, void *arg,
		pid_t *pid_out, bh_error **err);
/* Watch a process that is (or will be, once its runtime exits) our child —
 * container inits are reparented to the engine, a subreaper. fn fires when it
 * was reaped (output is empty). */
int child_adopt(bh_engine *e, pid_t pid, bh_child_fn fn, void *arg, bh_error **err);
/* Forget the callback of a pending child (its owner went away); the process
 * is still reaped. */
void child_forget(bh_engine *e, pid_t pid);
void children_reap(bh_engine *e);
size_t children_pending(bh_engine *e);
/* Runs argv to completion, blocking; for setup steps outside the loop. */
int child_run_sync(const char *const *argv, uint32_t timeout_ms, int *status, char **output);

/* ---- cgroups (cgroup.c) ---- */
struct bh_cgroups {
	bool hybrid_hidden;   /* the unified mount was hidden in our mount ns */
	bool pure_v2;         /* a cgroup2-only host */
	char parent[96];      /* "/bulkhead/<key>" */
};
int cgroups_setup(struct bh_cgroups *cg, const char *state_key, bh_error **err);
/* Path of a sandbox's cgroup file in a v1 hierarchy or the v2 tree:
 * e.g. cgroups_file(cg, "memory", "bh-1234", "memory.limit_in_bytes"). */
char *cgroups_file(const struct bh_cgroups *cg, const char *controller, const char *leaf,
		   const char *file);
/* Reads one integer (or "max" as -1) from a cgroup file; -2 when unreadable. */
long long cgroups_read_ll(const struct bh_cgroups *cg, const char *controller, const char *leaf,
			  const char *file);
/* The memory cgroup's OOM kill count (v1 memory.oom_control / v2 memory.events). */
long long cgroups_oom_kills(const struct bh_cgroups *cg, const char *leaf);
/* Thaws every frozen sandbox cgroup of the engine (a dead engine's paused ones). */
void cgroups_thaw_all(const struct bh_cgroups *cg);
/* Removes one sandbox's cgroup in every hierarchy (when it is empty). */
void cgroups_remove_leaf(const struct bh_cgroups *cg, const char *leaf);
/* Removes the engine's cgroup subtree where it is empty. */
void cgroups_cleanup(const struct bh_cgroups *cg);
/* Lists leaf names below the engine's parent in the memory (or v2) tree. */
size_t cgroups_list(const struct bh_cgroups *cg, char ***names);

#endif
