/* Workers: each configuration under test runs in a process of its own (one
 * engine per process: an engine reaps with waitpid(-1) and owns its state
 * directory), and the parent drives them one command at a time over a
 * SOCK_SEQPACKET pair. That is what lets the benchmark interleave A and B
 * cell by cell: A's engine in one process, B's in another, the parent
 * alternating between them. Each worker times its own calls; the command
 * channel is outside every measurement. */
#ifndef BH_BENCH_WORKER_H
#define BH_BENCH_WORKER_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum worker_kind {
	WK_ENGINE, /* libbulkhead in this process */
	WK_DAEMON, /* a libcurl client of `bulkhead serve` on a unix socket */
};

struct worker_cfg {
	enum worker_kind kind;
	char name[32];            /* for messages: "crun/NORMAL" */
	enum bh_tier tier;
	bool sync_full;           /* engine: SQLite synchronous=FULL */
	bool digests_only;        /* engine: the store keeps digests only */
	bool warm_session;        /* open one session with both interpreters at start */
	uint32_t pool_size;       /* engine: a warm pool of this many (its tier only) */
	char state_dir[4096];     /* engine */
	char evidence_dir[4096];  /* engine */
	char socket[4096];        /* daemon */
	const char *init_path, *interp_dir;
	bool verbose;
};

enum worker_op {
	OP_CELL = 1,   /* a: language. v: client wall, engine wall_us, duration_us */
	OP_EXEC,       /* a: language, a fresh sandbox (bh_exec). v: as OP_CELL */
	OP_COLD,       /* a: languages mask. v: open->answer, open->ready, close */
	OP_PAUSE,      /* v: answer wall, woke_us, pause */
	OP_HIBERNATE,  /* v: answer wall, woke_us, hibernate, image bytes */
	OP_MEMORY,     /* a: N sandboxes. v: see worker_engine.c */
	OP_THROUGHPUT, /* a: sessions, b: window ms, c: rounds. v: see worker_engine.c */
	OP_POOL,       /* open from the warm pool -> first cell. v: open->answer, from_pool */
	OP_QUIT,
};

struct worker_cmd {
	int op;
	int a, b, c;
};

#define REPLY_VALUES 24
struct worker_reply {
	int ok;
	double v[REPLY_VALUES];
	char msg[1024];
};

struct worker {
	struct worker_cfg cfg;
	pid_t pid;
	int fd;
	bool up;
};

/* Forks the worker and waits for its first reply (the engine proven and the
 * warm session answering). 0, or -1 with why filled. */
int worker_start(struct worker *w, const struct worker_cfg *cfg, char *why, size_t whylen);
/* One command; blocks for the reply (a worker that dies answers ok=0). */
int worker_call(struct worker *w, const struct worker_cmd *c, struct worker_reply *r);
/* OP_QUIT, then wait (bounded); SIGKILL only as the last resort. */
void worker_stop(struct worker *w);

/* In the child. */
int engine_worker_main(const struct worker_cfg *cfg, int fd);
int daemon_worker_main(const struct worker_cfg *cfg, int fd);

/* Helpers shared by both worker kinds. */
void reply_send(int fd, const struct worker_reply *r);
void reply_fail(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CELL_SETUP "x = 0"
#define CELL_CODE "x = x + 1; x"

#endif
