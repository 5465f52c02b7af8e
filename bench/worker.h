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
	bool usage_off;           /* ---- usage: engine: no usage sampler (the test hook) ---- */
	bool no_output_relay;     /* engine: streaming off (the stream phase's other half) */
};

enum worker_op {
	OP_CELL = 1,   /* a: language. Answers cell */
	OP_EXEC,       /* a: language, a fresh sandbox (bh_exec). Answers cell */
	OP_COLD,       /* a: languages mask. Answers cold */
	OP_PAUSE,      /* pause, then a cell. Answers wake */
	OP_HIBERNATE,  /* hibernate, then a cell. Answers wake */
	OP_MEMORY,     /* a: N sandboxes. Answers memory */
	OP_THROUGHPUT, /* a: sessions, b: window ms, c: rounds. Answers throughput */
	OP_POOL,       /* open from the warm pool -> first cell. Answers pool */
	OP_QUIT,
	OP_USAGE_READ, /* ---- usage: one bh_engine_usage call. Answers cell (client_us) ---- */
};

struct worker_cmd {
	int op;
	int a, b, c;
};

/* What each op answers, below. Times are microseconds unless a name says
 * otherwise; each worker times its own calls. */

/* OP_CELL, OP_EXEC */
struct cell_reply {
	double client_us;         /* the call to its answer, as the worker saw it */
	double engine_wall_us;    /* the engine's wall_us, before the record (daemon: 0) */
	double inside_us;         /* the cell inside the sandbox (the init's duration_us) */
	bool interpreter_started; /* engine OP_CELL: this call started its interpreter */
	long new_connections;     /* daemon: connections this call opened, 0 with keep-alive */
};

/* OP_COLD */
struct cold_reply {
	double answer_us; /* open -> first cell answered */
	double ready_us;  /* open -> session ready */
	double close_us;  /* the close call */
	double gone_us;   /* close -> the sandbox gone */
};

/* OP_POOL */
struct pool_reply {
	double answer_us; /* open -> first cell answered */
	bool from_pool;   /* the open took a pooled sandbox */
	double ready_us;  /* open -> session ready */
	double inside_us; /* the first cell inside the sandbox */
};

/* OP_PAUSE, OP_HIBERNATE: the cell that wakes it */
struct wake_reply {
	double client_us;      /* the cell call to its answer */
	double woke_us;        /* of which the resume or restore itself */
	double slept_us;       /* the pause or hibernate call */
	double engine_wall_us; /* the cell's wall_us */
	/* OP_HIBERNATE: its image, as du counts it */
	double image_disk_bytes, image_apparent_bytes;
};

/* OP_MEMORY: per sandbox, KiB */
struct memory_reply {
	double drop_kib;             /* MemAvailable's drop against the mean of before and after */
	double drop_from_before_kib; /* against before alone */
	double rise_after_close_kib; /* MemAvailable's rise once they closed */
	double pss_kib, rss_kib, cgroup_kib;
	double procs; /* processes each */
	int n;
	double opened_us; /* opening them all, warm-up cells included */
};

/* OP_THROUGHPUT, with 1, 8 and 32 sessions busy */
#define THROUGHPUT_KS 3
struct throughput_reply {
	struct {
		int sessions;                                    /* busy at once */
		double cells_s_median, cells_s_min, cells_s_max; /* over the windows */
		double latency_p50_ms, latency_p95_ms;           /* of every cell */
	} k[THROUGHPUT_KS];
	double open_ms; /* opening the sessions (python warmed) */
	int rounds;
};

struct worker_reply {
	int ok;
	union {
		struct cell_reply cell;
		struct cold_reply cold;
		struct pool_reply pool;
		struct wake_reply wake;
		struct memory_reply memory;
		struct throughput_reply throughput;
	};
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

/* ---- usage ---- */
/* bh_engine_open, with the usage sampler off when asked (bench.c holds the
 * one door to the engine's test hooks, tests/support/engine_internals.h). */

/* In the child. */
int engine_worker_main(const struct worker_cfg *cfg, int fd);
int daemon_worker_main(const struct worker_cfg *cfg, int fd);

/* Helpers shared by both worker kinds. */
void reply_send(int fd, const struct worker_reply *r);
void reply_fail(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CELL_SETUP "x = 0"
#define CELL_CODE "x = x + 1; x"

#endif
