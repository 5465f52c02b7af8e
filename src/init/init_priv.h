/* State shared by the init-mode translation units. Everything runs in PID
 * 1's single thread; children are forks that never return into this state. */
#ifndef BH_INIT_PRIV_H
#define BH_INIT_PRIV_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base.h"
#include "channel.h"
#include "frame.h"

/* The uid (and gid) user code runs as; /work belongs to it. */
#define SANDBOX_UID 1000
#define WORK_DIR "/work"
#define IO_CHUNK (64u * 1024u)
/* Per wake-up, per stream: enough to keep up with a flood, small enough that
 * the deadline check between rounds is never far away. */
#define READS_PER_WAKE 16
/* How often the sweep is repeated while its victims die, and how long the
 * init waits for pipes and zombies before answering regardless (a process
 * stuck in uninterruptible sleep must not stall the engine). */
#define SWEEP_TICK_MS 10
#define SWEEP_GRACE_MS 1000
/* Passes that spare the interpreters give up after this long if they keep
 * finding new processes; the interpreters then die with everything else. */
#define SWEEP_SPARING_MS 500
/* A forked helper (file writer, LIST, READ) runs as the sandbox user, so
 * user code could stop it with SIGSTOP; past this it is killed. */
#define HELPER_TIMEOUT_MS 10000
/* LIST and READ helpers running at once. */
#define MAX_FSOPS 4
#define FAIL_MSG_MAX (BH_CHAN_MESSAGE_MAX + 1u) /* with its NUL */

#define NLANG 2

/* ---- common.c ---- */
extern int diag_fd;
__attribute__((format(printf, 1, 2))) void diag(const char *fmt, ...);
uint64_t now_mono_ns(void);
int ms_until(uint64_t now, uint64_t when);
int min_timeout(int a, int b);
int set_nonblock(int fd);
/* nbytes (at most 64) random bytes as 2*nbytes hex digits and a NUL, drawn
 * from a pool (common.c): never fails, and costs no syscall per nonce. */
void pool_random_hex(size_t nbytes, char *out);

/* ---- capture.c: one output stream, kept up to a cap ---- */
struct capture {
	int fd;
	bool borrowed; /* the fd belongs to an interpreter: never closed here */
	uint8_t *buf;
	size_t len;   /* bytes kept */
	size_t alloc; /* bytes allocated; grows up to limit */
	size_t limit; /* output_cap */
	uint64_t total;
	bool lost; /* bytes under the cap dropped for want of memory */
	size_t relayed; /* stream: kept bytes already sent in OUTPUT frames */
};

void capture_init(struct capture *c, int fd, uint32_t cap, bool borrowed);
/* Reads what is ready, at most READS_PER_WAKE chunks. Returns true if it
 * stopped at that limit (more may be waiting). EOF or an error ends the
 * capture (fd becomes -1). */
bool capture_read(struct capture *c);
/* Text from the init itself, kept and counted like program output. */
void capture_note(struct capture *c, const char *text);
void capture_close(struct capture *c);
void capture_free(struct capture *c);
bool capture_truncated(const struct capture *c);
/* Reads and throws away up to max bytes already in a pipe. */
void discard_pending(int fd, size_t max);
/* The same for up to four pipes (fd -1: none), finding the non-empty ones
 * with one poll(). */
void discard_pending_all(const int *fds, size_t n, size_t max);

/* ---- the EXEC job (exec.c) ---- */
struct job {
	bool active;
	bool exited; /* main program reaped */
	bool timed_out;
	bool sweeping;
	uint64_t call_id;
	pid_t pid;
	int status;
	uint64_t t_start, t_end, deadline, sweep_start; /* ns; deadline 0: none */
	struct capture out, err;
	int in_fd;
	uint8_t *in_owner; /* request payload holding the stdin bytes */
	const uint8_t *in_data;
	size_t in_len, in_off;
};

/* ---- interpreters (interp.c) ---- */
#define REPLY_LINE_MAX 256u

struct interp {
	pid_t pid;   /* 0: none */
	bool exited; /* reaped; status valid; fds still to be released */
	int status;
	bool doomed; /* killed on purpose: no longer spared by sweeps */
	bool fresh;  /* no cell has run in it yet */
	int req_fd;  /* its fd 3 */
	int rep_fd;  /* its fd 4 */
	int out_fd, err_fd;
	char line[REPLY_LINE_MAX];
	size_t line_len;
};

/* ---- forked helpers (helper.c) ---- */
enum helper_kind { HK_NONE = 0, HK_FILES, HK_LIST, HK_READ, HK_PS };

struct helper {
	enum helper_kind kind; /* HK_NONE: free slot */
	uint64_t call_id;
	pid_t pid;
	bool reaped;
	int fd; /* answer pipe, read end; -1 once EOF */
	bool overflow;
	uint8_t *buf;
	size_t len, alloc;
	uint64_t deadline;
};

/* ---- the CELL job (cell.c) ---- */
enum cell_stage { CELL_IDLE = 0, CELL_FILES, CELL_RUN, CELL_SWEEP };
enum cell_result { CR_NONE = 0, CR_OK, CR_ERROR, CR_TIMEOUT, CR_DIED, CR_BADREPLY };

struct jsonl_out;

struct cell {
	enum cell_stage stage;
	uint64_t call_id;
	uint8_t lang;
	uint32_t timeout_ms, output_cap;
	uint8_t *payload; /* the request; code and files point into it */
	const uint8_t *code;
	uint32_t code_len;
	char nonce[33];
	bool fresh;           /* INTERP_STARTED */
	struct jsonl_out *wr; /* request line still being written */
	uint64_t t_start, t_end, deadline, hup_at, sweep_start;
	enum cell_result result;
	int status;       /* CR_DIED: the interpreter's wait status */
	const char *note; /* why the init ended the interpreter */
	struct capture out, err;
	struct helper writer; /* the files, before the code runs */
	/* stream: OUTPUT relaying (relay.c); relay_ms 0: none asked for */
	uint32_t relay_ms;
	uint64_t relay_due; /* ns: no OUTPUT before this */
};

struct init {
	int req_fd;
	int rep_fd;
	int sig_fd;
	bool rep_broken;
	bool children; /* the last waitpid() saw live children */
	/* the sweep in progress (sweep.c) */
	uint64_t sweep_started;
	bool sweep_all;         /* sparing was given up: kill(-1) */
	const char *sweep_note; /* why the interpreters died with it, if they did */
	struct bh_reader rd;
	struct bh_outq out;
	struct job job;
	struct cell cell;
	struct interp interp[NLANG];
	struct helper fsops[MAX_FSOPS];
};

static inline bool init_busy(const struct init *st)
{
	return st->job.active || st->cell.stage != CELL_IDLE;
}

/* ---- poll set shared by the modules (init.c) ---- */
enum pfd_tag {
	T_REQ,
	T_REP,
	T_SIG,
	T_EXEC_OUT,
	T_EXEC_ERR,
	T_EXEC_IN,
	T_CELL_OUT,
	T_CELL_ERR,
	T_CELL_REP,
	T_CELL_REQ,
	T_HELPER,
	T_RELAY, /* ---- egress ---- */
};

/* ---- egress: the relay's listener and two per connection ---- */
#define MAX_PFD (24 + 1 + 2 * 24)

struct pollset {
	struct pollfd *p;
	int *tag;
	void **obj;
	int n;
};

void ps_add(struct pollset *ps, int fd, short events, int tag, void *obj);

/* ---- reply.c: frames to the engine ---- */
int queue_ready(struct init *st);
__attribute__((format(printf, 4, 5))) int queue_fail(struct init *st, uint64_t call_id,
						      int err, const char *fmt, ...);
__attribute__((format(printf, 5, 6))) int queue_rejected(struct init *st, uint64_t call_id,
							  uint32_t reason, int err,
							  const char *fmt, ...);

struct done_info {
	uint64_t call_id;
	int32_t code;
	uint32_t sig;
	uint32_t flags; /* besides the truncation flags, which come from the captures */
	uint64_t duration_us;
	const struct capture *out, *err;
};
int queue_done(struct init *st, const struct done_info *d);
/* Called with each reply frame just queued (its whole length, header
 * included, at the end of st->out). Only the test-only build of the init
 * (BH_TEST_CORRUPT_INIT, tests/support/corrupt_init.c) does anything with
 * it: it rewrites the frame's counts and lengths, so tests can show what
 * the engine does with a compromised init. */
#ifdef BH_TEST_CORRUPT_INIT
void reply_queued(struct init *st, size_t frame_len);
#else
static inline void reply_queued(struct init *st, size_t frame_len)
{
	(void)st;
	(void)frame_len;
}
/* ---- egress: egress_relay.c, the loopback relay to the broker's socket ---- */
/* 1 listening, 0 no egress mount here, -errno when it could not listen. */
int egress_relay_open(void);
void egress_relay_pollfds(struct pollset *ps);
/* obj NULL: the listener; else a connection ps_add was given. */
void egress_relay_ready(void *obj);

#endif

/* ---- stream: relay.c, the running cell's output as OUTPUT frames ---- */
/* An OUTPUT frame of the kept bytes [offset, offset + n) of a stream. */
int queue_output(struct init *st, uint64_t call_id, uint8_t stream, uint64_t offset,
		 const uint8_t *p, size_t n);
/* Sends what the running cell's captures kept since the last relay, once
 * its interval has passed. */
int relay_output(struct init *st, uint64_t now);
/* When relay_output has something to do (-1: nothing pending). */
int relay_timeout(const struct init *st, uint64_t now);

/* ---- sweep.c ---- */
/* kill(-1, SIGKILL): everyone but the init, interpreters included. */
void sweep_everyone(void);
/* A sweep starts (once per call, before its first pass). */
void sweep_begin(struct init *st);
/* One pass of the sweep that spares live interpreters and LIST/READ
 * helpers. Returns true once a pass found nothing alive that should die.
 * Passes that keep finding new processes give sparing up (sweep_note). */
bool sweep_pass(struct init *st);

/* ---- children and reaping (init.c) ---- */
void reap(struct init *st);

/* ---- exec.c ---- */
int handle_exec(struct init *st, uint8_t **payload, size_t len);
void exec_pollfds(struct init *st, struct pollset *ps);
void exec_ready(struct init *st, int tag);
int exec_progress(struct init *st);
int exec_timeout(const struct init *st);
bool exec_reaped(struct init *st, pid_t pid, int status);

/* ---- interp.c ---- */
/* 0 if the language can run here; else -errno and *why. */
int interp_available(int lang, const char **why);
/* Starts it (fresh). On failure returns -errno and sets *why. */
int interp_start(struct init *st, int lang, const char **why);
void interp_kill(struct interp *ip);
void interp_release(struct interp *ip);
bool interp_live(const struct interp *ip);
bool interp_reaped(struct init *st, pid_t pid, int status);
const char *interp_name(int lang);

/* ---- cell.c ---- */
int handle_cell(struct init *st, uint8_t **payload, size_t len);
int handle_warm(struct init *st, const uint8_t *payload, size_t len);
void cell_pollfds(struct init *st, struct pollset *ps);
void cell_ready(struct init *st, int tag);
int cell_progress(struct init *st);
int cell_timeout(const struct init *st);

/* ---- helper.c ---- */
typedef void (*helper_body)(int answer_fd, const void *arg);
int helper_start(struct helper *h, enum helper_kind kind, uint64_t call_id,
		 helper_body body, const void *arg);
void helper_read(struct helper *h);
bool helper_done(const struct helper *h);
bool helper_expired(const struct helper *h, uint64_t now);
/* Kills it if it may still run, and frees the slot. */
void helper_release(struct helper *h);
bool helper_reaped(struct helper *h, pid_t pid);
/* Child side: write it all or die trying. */
void helper_write_all(int fd, const void *p, size_t n);

/* ---- fsread.c ---- */
int handle_list(struct init *st, const uint8_t *payload, size_t len);
int handle_read(struct init *st, const uint8_t *payload, size_t len);
int fsops_progress(struct init *st);

/* ---- procs.c ---- */
/* PS: in a helper that takes one of the fsops slots, answered by
 * fsops_progress like LIST and READ. */
int handle_ps(struct init *st, const uint8_t *payload, size_t len);

/* ---- spawn.c ---- */
enum child_stage {
	STAGE_CREDS = 1,
	STAGE_SETSID,
	STAGE_CHDIR,
	STAGE_STDIO,
	STAGE_EXEC,
	STAGE_PREPARE,
	STAGE_STARTUP, /* no report and no exec in time: stopped, say */
};

/* What the child sends through the error pipe when it cannot exec. */
struct child_report {
	int32_t stage;
	int32_t err;
};

int drop_to_sandbox_user(void);
/* Runs in the child once it is the sandbox user, before descriptors are
 * put in place; may fill fdmap. Returns 0, or -1 with errno set. */
typedef int (*spawn_prepare)(int *fdmap, void *arg);

/* Between fork() and execve(): fdmap[i] becomes descriptor i (-1: leave
 * descriptor i as it is; at most SPAWN_MAP_MAX). Every other descriptor
 * above 2 but report_fd and keep_fd (-1: none; the one prepare() uses) is
 * closed first, while the child is still root. Only async-signal-safe
 * calls. */
#define SPAWN_MAP_MAX 8
#define SPAWN_KEEP_MAX (SPAWN_MAP_MAX + 2)
__attribute__((noreturn)) void spawn_child(int report_fd, int *fdmap, int nmap,
					   char *const argv[], spawn_prepare prepare,
					   void *arg, int keep_fd);
/* Between fork() and execve() the child is already the sandbox user,
 * whom a live interpreter could SIGSTOP: the init waits this long at most. */
#define SPAWN_WAIT_MS 10000
/* 0 once fd is readable, -ETIMEDOUT past `until` (now_mono_ns() clock). */
int spawn_wait_readable(int fd, uint64_t until);
/* Waits until execve() succeeded (0) or the child reported why not (1;
 * STAGE_STARTUP past `until`). After a report the caller kills and
 * reaps the child, which may still be alive (stopped). */
int spawn_wait_report(int fd, struct child_report *r, uint64_t until);
const char *stage_name(int32_t stage);
/* Every descriptor above 2 but the n in keep (at most SPAWN_KEEP_MAX). */
void close_fds_except(const int *keep, size_t n);

/* ---- egress: egress_relay.c, the loopback relay to the broker's socket ---- */
/* 1 listening, 0 no egress mount here, -errno when it could not listen. */
int egress_relay_open(void);
void egress_relay_pollfds(struct pollset *ps);
/* obj NULL: the listener; else a connection ps_add was given. */
void egress_relay_ready(void *obj);

#endif
