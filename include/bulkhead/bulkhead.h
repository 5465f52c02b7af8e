/* libbulkhead: sandboxes with proven walls, driven from the host's own loop.
 *
 * Everything here is plain C: opaque handles, enums, small structs. The
 * engine never prints; it logs through a handler the host installs. One
 * thread owns an engine. The host polls bh_engine_fd() with
 * bh_engine_timeout_ms() and calls bh_engine_process() when it is ready
 * (the curl-multi model); bh_engine_wait() does that for the CLI and tests.
 *
 * Fallible functions return < 0 and, when err is not NULL, fill *err with a
 * bh_error the caller frees with bh_error_free().
 *
 * The vocabulary (tiers, refusals, languages, session states, end reasons,
 * leak kinds) is enums; each has one name table (vocab.c) and a _name()
 * function, and those read back from text a _parse() that refuses a name it
 * does not know.
 */
#ifndef BULKHEAD_H
#define BULKHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BULKHEAD_VERSION "0.1.0"

typedef struct bh_engine bh_engine;
struct bh_egress_ops; /* include/bulkhead/egress.h */

/* ---- why a session ended ---------------------------------------------- */

/* The store and the operator API keep these; plimsoll's wire maps each to
 * its nearest SessionEnd (src/wire/wire_codes.c), the finer one in
 * endDetail. */
enum bh_end_reason {
	BH_END_NONE = 0,           /* it has not ended; its name is "" */
	/* plimsoll's own words, in its order */
	BH_END_CLOSED,             /* someone asked for the close */
	BH_END_EXPIRED,            /* its lifetime of awake time ran out */
	BH_END_DISK_EXCEEDED,      /* its files passed the disk budget */
	BH_END_MAIN_PROCESS_ENDED, /* its sandbox died (killed, out of memory, a failed wake) */
	BH_END_BOUNDARY_FAILED,    /* its sandbox could not be opened, or broke its channel */
	BH_END_SANDBOX_CHANGED,    /* plimsoll's; the engine does not end a session so */
	BH_END_SHUTDOWN,           /* the engine closed */
	BH_END_REPLACED,           /* its owner opened another at the owner cap */
	BH_END_NOT_FOUND,          /* plimsoll's: no such session for this caller */
	BH_END_UNCLAIMED,          /* no call named it before its first idle timeout */
	/* bulkhead's finer ones */
	BH_END_IDLE_CLOSED,        /* paused past hibernate_after on a tier that cannot hibernate */
	BH_END_RETENTION_EXPIRED,  /* its image outlived the retention (or the images budget) */
	BH_END_KILLED,             /* an operator killed it */
	BH_END_REAPED,             /* reconciliation or gc found its engine or its image gone */
	BH_END_OOM,                /* the whole sandbox died of memory (the engine ends that
				      main_process_ended today, its detail "oom") */
	/* ---- fleet (issue 20): its host stopped heartbeating while it was
	 * live. No engine ends a session so (the host is gone): the fleet's
	 * directory does, and a daemon answers a call for it so (plimsoll's
	 * main_process_ended, the detail naming the host) ---- */
	BH_END_HOST_LOST,
};
#define BH_END_REASON_COUNT 17
const char *bh_end_reason_name(enum bh_end_reason r); /* "closed"; "" for NONE */
/* 0 and *out, or -1 for a name that is no end reason ("" is NONE). */
int bh_end_reason_parse(const char *name, enum bh_end_reason *out);

/* ---- errors ---------------------------------------------------------- */

enum bh_error_code {
	BH_E_SYSTEM = 1,     /* a system call failed (sys_errno says which) */
	BH_E_INVALID,        /* the caller's arguments are wrong */
	BH_E_NOT_DISPATCHED, /* refused; nothing ran (reason says why) */
	BH_E_LOCKED,         /* the state directory belongs to another engine */
	BH_E_RUNTIME,        /* crun/runsc failed or misbehaved */
	BH_E_SANDBOX,        /* the sandbox died or broke its channel; the code may have run */
	BH_E_TIMEOUT,        /* the engine's own backstop deadline fired */
	BH_E_CLOSED,         /* the engine is shutting down */
};

/* Why a request was refused before anything ran (plimsoll's NotDispatched). */
enum bh_refusal {
	BH_REFUSAL_NONE = 0,
	BH_REFUSAL_REQUEST,
	BH_REFUSAL_PERMISSION,
	BH_REFUSAL_PROTOCOL,
	BH_REFUSAL_UNSUPPORTED,
	BH_REFUSAL_ISOLATION,
	BH_REFUSAL_CAPACITY,
	BH_REFUSAL_ENVIRONMENT,
};
#define BH_REFUSAL_COUNT 8

typedef struct bh_error {
	enum bh_error_code code;
	enum bh_refusal refusal; /* set when code is BH_E_NOT_DISPATCHED */
	int sys_errno;           /* 0 when no system call is to blame */
	char *msg;               /* complete sentence-ish text, never NULL */
	enum bh_end_reason session_end; /* why, when a call found its session ended */
} bh_error;

void bh_error_free(bh_error *err);
const char *bh_refusal_name(enum bh_refusal r);

/* ---- tiers ------------------------------------------------------------ */

enum bh_tier {
	BH_TIER_UNKNOWN = -1, /* meets nothing */
	BH_TIER_NONE = 0,
	BH_TIER_PROCESS,
	BH_TIER_CONTAINER,
	BH_TIER_KERNEL,
	BH_TIER_VM,
};
#define BH_TIER_COUNT 5

const char *bh_tier_name(enum bh_tier t);
/* Returns 0 and sets *out, or -1 for a name that is not a tier. */
int bh_tier_parse(const char *name, enum bh_tier *out);
/* Whether a sandbox of tier `have` satisfies a request whose floor is `floor`. */
bool bh_tier_meets(enum bh_tier have, enum bh_tier floor);
/* ---- fleet: a set of tiers (1 << bh_tier) in words, strongest first,
 * "kernel,container"; "-" for none. Into buf (n bytes, cut to fit). ---- */
void bh_tier_set_text(uint32_t tiers, char *buf, size_t n);

/* ---- logging ----------------------------------------------------------- */

enum bh_log_level { BH_LOG_DEBUG, BH_LOG_INFO, BH_LOG_WARN, BH_LOG_ERROR };
typedef void (*bh_log_fn)(void *arg, enum bh_log_level level, const char *msg);

/* ---- engine ------------------------------------------------------------ */

struct bh_config {
	const char *state_dir;  /* NULL: $BULKHEAD_STATE, else /var/lib/bulkhead */
	const char *init_path;  /* the bulkhead-init binary to bind into sandboxes */
	const char *interp_dir; /* data/interp: the cell servers; NULL: $BULKHEAD_INTERP */
	bh_log_fn log;          /* NULL: discard */
	void *log_arg;
	bool reprove;           /* ignore cached evidence; run every smoke test */
	const char *evidence_dir; /* where proven evidence is cached; NULL: the state directory */
	bool skip_proofs;       /* offer no tier: for commands that only collect or read */
	uint32_t prove_tiers;   /* 1 << tier: prove only these (a command that uses one
				   tier); the others are reported not proven. 0: every tier */
	bool inspect_only;      /* at open, collect nothing a dead engine left (gc) */
	bool read_only;         /* open only to read (ls, leaks, gc --dry-run): no lock file made
				   or written, nothing created, prepared or migrated, the store read
				   without writing beside it; implies inspect_only and skip_proofs */
	bool store_sync_full;   /* SQLite synchronous=FULL (power-loss durability); default NORMAL */
	bool store_digests_only; /* keep no code or output prefix in the store */
	struct bh_policy {
		uint32_t idle_ms;            /* no call for this long: pause. 0: 5 min */
		uint32_t hibernate_after_ms; /* paused this long: hibernate (kernel) or close
						(container, idle_closed). 0: 15 min */
		uint32_t lifetime_ms;        /* awake time a session may have. 0: 30 min */
		uint64_t retention_ms;       /* hibernated this long: image deleted. 0: 24 h */
		/* Admission (admission.c): a place is held by each open session,
		 * each fresh call (Run, bh_exec) in flight and each pooled sandbox;
		 * the memory budget counts them all but hibernated sessions. */
		uint32_t max_sessions;       /* places. 0: 64 */
		uint32_t max_per_principal;  /* one principal's sessions and calls in flight.
						0: max_sessions (one caller); BH_FAIR_SHARE: a
						quarter of what the budget and max_sessions
						admit, at least 1 (the daemon's default) */
		uint32_t max_per_owner;      /* 0: 4; the owner's least recently used idle one
						is replaced */
		uint32_t memory_budget_mb;   /* sum of sandbox memory limits (sessions awake,
						calls in flight, the pool). 0: 16384 */
		/* ---- density (issue 21; src/engine/reclaim.c) ---- */
		uint32_t memory_overcommit_pct; /* the limits may sum to this % of the budget
						   while what the sandboxes use (measured, their
						   cgroups') stays under the budget itself; the
						   engine reclaims idle ones past memory_high_pct.
						   0: 100 (limits alone, no overcommit) */
		uint32_t memory_high_pct;    /* use past this % of the budget (or the host under
						5% available): pause the least recently used
						idle sessions, then hibernate (kernel) or close
						(container, idle_closed) paused ones down to 10
						points under it. 0: 90 */
		bool shutdown_hibernate;     /* at close, hibernate idle kernel-tier sessions so the
						next engine on this directory continues them */
		uint32_t history_days;       /* records of sessions ended longer ago, and events,
						are pruned (hourly and at start). 0: 30 days */
		uint32_t disk_budget_mb;     /* bytes a session may keep in /work, /tmp and
						/dev/shm, measured after each call; over it the
						session ends disk_exceeded. 0: 256 MiB */
		uint32_t images_budget_mb;   /* all hibernation images together; past it the
						oldest are deleted (retention_expired). 0: 10 GiB */
		uint32_t pool_size;          /* never-used sandboxes kept open, interpreters
						started, per pooled tier; each is handed to one
						session. 0: no pool */
		uint32_t pool_tiers;         /* 1 << tier: the tiers pooled. 0: the strongest
						offered */
		uint32_t pool_max_age_ms;    /* a pooled sandbox unused this long is replaced.
						0: 10 min */
		uint32_t state_min_free_mb;  /* a new session is refused (environment) while the
						state directory's filesystem has less free.
						0: 16 MiB */
	} policy;
	uint32_t memory_limit_mb; /* per sandbox; 0 = 512 */
	uint32_t pids_limit;      /* crun sandboxes; 0 = 256 (runsc gets a generous one) */
	/* ---- inflight ---- */
	bool keep_leftovers;      /* at open, what a dead engine left (its sandboxes, rows,
				     images, cgroups, interrupted calls) is evidence: kept,
				     summed up (bh_engine_leftovers), listed by bh_engine_leaks
				     and reaped only by bh_engine_reap / bh_engine_gc. false:
				     the engine takes over by reaping them (the library's
				     default, and `serve --reap-leftovers`) */
	/* ---- egress (issue 18; include/bulkhead/egress.h) ---- */
	const struct bh_egress_ops *egress; /* the broker's; NULL: no broker, no socket
					       mounted, a grant refused */
	void *egress_arg;
	/* ---- fleet (issue 20): where hibernation images live. NULL: the state
	 * directory's images/, unless the state directory was opened with one
	 * before (STATE/images-dir names it): then that one, so a command run
	 * on the directory while its daemon is stopped does not take the
	 * shared images for gone. A fleet's hosts share one (a network filesystem
	 * in production), so a hibernated conversation restores on any host
	 * (bh_engine_adopt_hibernated). Made if missing (0700), then checked
	 * as the state directory is (bh_state_dir_check), where it really is;
	 * refused at open in a sentence naming the images directory. In a
	 * shared directory an engine touches only
	 * the images its own store names: another host's image is never
	 * reaped, budgeted or listed as this engine's leak. ---- */
	const char *images_dir;
};

#define BH_FAIR_SHARE UINT32_MAX /* bh_policy.max_per_principal: see there */

/* The state directory a command means: dir, else $BULKHEAD_STATE, else
 * /var/lib/bulkhead. */
const char *bh_state_dir_name(const char *dir);
/* Whether dir (NULL: bh_state_dir_name's) may be opened as a state
 * directory: the directory itself, not a symbolic link, owned by root or by
 * the uid this process runs as, and not writable by group or others (so
 * nobody else can swap what is in it). -1 with *err naming the path, its
 * owner and mode, and the fix. Every engine open checks it; so do the
 * commands that read a state directory's store or its daemon note. */
int bh_state_dir_check(const char *dir, bh_error **err);

/* Refuses a state directory that fails bh_state_dir_check, and a full
 * engine one whose lock, store files, rootfs, bundles, images, run or lib
 * are symbolic links (or not what the engine makes). */
int bh_engine_open(const struct bh_config *cfg, bh_engine **out, bh_error **err);
/* Kills and deletes every sandbox the engine holds, then releases the state
 * directory. Blocks until the runtime confirmed (bounded). */
void bh_engine_close(bh_engine *e);

int bh_engine_fd(bh_engine *e);              /* readable when there is work */
int bh_engine_timeout_ms(bh_engine *e);      /* -1: no timer pending */
int bh_engine_process(bh_engine *e);         /* do what is ready; never blocks */
/* Runs the loop until *done is true or timeout_ms passes (-1: no limit). */
int bh_engine_wait(bh_engine *e, const bool *done, int timeout_ms, bh_error **err);

const char *bh_engine_state_dir(bh_engine *e);

/* ---- tier evidence ------------------------------------------------------- */

struct bh_evidence_line {
	const char *name;   /* what was checked, e.g. "seccomp" */
	const char *value;  /* what was found */
	const char *expect; /* what the tier requires */
	bool ok;
};

struct bh_tier_report {
	enum bh_tier tier;
	const char *runtime;  /* "crun", "runsc", or "" */
	const char *version;  /* the runtime's own version line */
	bool offered;         /* the smoke test passed: sandboxes may use this tier */
	bool cached;          /* the evidence came from the cache */
	const char *reason;   /* why it is not offered (empty when offered) */
	size_t n_lines;
	const struct bh_evidence_line *lines;
};

/* Proving runs each runtime's smoke test (or loads cached evidence). It starts
 * at open; this reports whether it has finished. */
bool bh_engine_proven(bh_engine *e);
/* What the proofs still running wait for, in words ("the kernel tier
 * (waiting for the probe inside its runsc smoke sandbox, 0.3 s so far)"),
 * into buf; returns how many tiers are still being proven. */
size_t bh_engine_proving(bh_engine *e, char *buf, size_t n);
/* Valid until the next bh_engine_process(). Every tier from none to vm. */
size_t bh_engine_tiers(bh_engine *e, const struct bh_tier_report **out);
/* The strongest offered tier (BH_TIER_UNKNOWN when none is). */
enum bh_tier bh_engine_best_tier(bh_engine *e);
/* What records name as a tier's environment ("bulkhead-sandbox:sha256:…"):
 * the proven sandbox recipe. "" before the tier is proven. */
const char *bh_engine_environment(bh_engine *e, enum bh_tier tier);
/* A bounded readiness check that runs no sandbox: a tier is offered, its
 * runtime binary is still there and executable, the state directory is
 * writable and the store answers. 0, or -1 with the first problem in *err. */
int bh_engine_preflight(bh_engine *e, bh_error **err);
/* Each sandbox's memory limit (MiB) and pids limit. */
void bh_engine_limits(bh_engine *e, uint32_t *memory_mb, uint32_t *pids);

/* ---- one fresh call: a new sandbox runs one program, then is deleted -------- */

struct bh_exec_request {
	enum bh_tier tier;       /* BH_TIER_UNKNOWN: the strongest offered */
	enum bh_tier floor;      /* BH_TIER_UNKNOWN or NONE: no floor */
	const char *const *argv; /* argv[0] is a path inside the sandbox */
	const void *input;       /* fed to the program's stdin */
	size_t input_len;
	uint32_t timeout_ms;     /* 0: 30 s; at most 5 min */
	uint32_t output_cap;     /* bytes kept per stream; 0: 64 KiB; at most what one frame
				    from the init holds for both (BH_MAX_OUTPUT_CAP, ~8 MiB) */
	const char *principal;   /* whose place it holds while in flight; NULL: "" */
};

struct bh_exec_result {
	enum bh_tier tier;
	int exit_code;           /* 124 at the deadline; 128+N when killed by signal N */
	int term_signal;
	bool timed_out;
	bool stdout_truncated;
	bool stderr_truncated;
	bool oom;                /* the memory limit killed something in the sandbox */
	bool sandbox_died;       /* the whole sandbox ended (gVisor's OOM outcome) */
	const uint8_t *out;
	size_t out_len;
	const uint8_t *errout;
	size_t errout_len;
	uint64_t out_total;      /* bytes the program wrote, kept or not */
	uint64_t errout_total;
	uint64_t duration_us;    /* the program's own run time, inside */
	uint64_t wall_us;        /* from the request to the answer, sandbox included */
};

/* On success res is set and err NULL; on failure res is NULL. Both are valid
 * only during the callback. */
typedef void (*bh_exec_cb)(void *arg, const struct bh_exec_result *res, const bh_error *err);

/* Refusals that need no evidence (bad arguments) return < 0 at once; every
 * other outcome, refusals included, arrives through cb. */
int bh_exec(bh_engine *e, const struct bh_exec_request *req, bh_exec_cb cb, void *arg,
	    bh_error **err);

/* ---- one JavaScript snippet with its run record (plimsoll's `Run`) ---------- */

struct bh_snippet {
	enum bh_tier tier;       /* BH_TIER_UNKNOWN: the strongest offered */
	enum bh_tier floor;      /* BH_TIER_UNKNOWN or NONE: no floor */
	const char *code;        /* run by `node -`; <= 256 KiB, no NUL */
	size_t code_len;
	uint32_t timeout_ms;     /* 0: 30 s; at most 5 min */
	uint32_t output_cap;     /* bytes kept per stream; 0: 64 KiB */
	/* The timeout exactly as the client sent it, for the request digest
	 * (a client may send 0 or a value the edge clamped). */
	bool has_sent_timeout;
	int64_t sent_timeout_ms;
	const char *principal;   /* whose place it holds while in flight; NULL: "" */
	/* ---- egress ---- */
	const char *grant_profile; /* NULL or "": none; else held for this run only */
};

struct bh_record;

struct bh_snippet_result {
	enum bh_tier tier;
	int exit_code;           /* 124 at the deadline */
	bool timed_out, stdout_truncated, stderr_truncated;
	const uint8_t *out;
	size_t out_len;
	const uint8_t *errout;
	size_t errout_len;
	uint64_t duration_us, wall_us;
	const struct bh_record *record; /* version 2, committed before this answer */
};
typedef void (*bh_snippet_cb)(void *arg, const struct bh_snippet_result *res, const bh_error *err);
int bh_run_javascript(bh_engine *e, const struct bh_snippet *req, bh_snippet_cb cb, void *arg,
		      bh_error **err);

/* ---- project: a project run (plimsoll's ProjectRun) ---------------------- */
/* Files written into /work, steps run in order by /bin/sh as the sandbox
 * user, stopping after the first that fails, artifacts read back, the typed
 * outcome; in a fresh sandbox (bh_run_project) or a session's
 * (bh_session_run_project: the files stay, cells see them). Limits are
 * plimsoll's (include/bulkhead-proto/project.h). */
enum bh_project_outcome { /* ProjectOutcome's numbers, which enter the record */
	BH_PROJECT_UNSPECIFIED = 0,
	BH_PROJECT_COMPLETED = 1,     /* the plan ran to its end (a failing step included) */
	BH_PROJECT_SETUP_FAILED = 2,  /* a file could not be written: no step ran */
	BH_PROJECT_TIMED_OUT = 3,     /* a step, or the run, reached the budget */
	BH_PROJECT_PROTOCOL_ERROR = 4, /* the sandbox gave no report that holds */
};
const char *bh_project_outcome_name(enum bh_project_outcome o); /* "setup_failed" */

struct bh_project {
	enum bh_tier tier;             /* as bh_snippet's */
	enum bh_tier floor;
	const struct bh_file *files;   /* <= 200, 4 MiB in all, paths as a cell's, none twice */
	size_t n_files;
	const char *const *steps;      /* 1..20 shell commands, each <= 16 KiB, no NUL */
	size_t n_steps;
	const char *const *artifacts;  /* <= 100 paths under /work, none twice */
	size_t n_artifacts;
	uint32_t timeout_ms;           /* the whole run's budget; 0: 30 s; at most 120 s */
	bool has_sent_timeout;
	int64_t sent_timeout_ms;       /* as the client sent it, for the request digest */
	const char *principal;         /* a fresh run's place; NULL: "" */
	const char *grant_profile;     /* NULL or "": none; else held for this run only (egress.h) */
};

struct bh_project_step {
	const char *command;
	int exit_code;                 /* 124 at the deadline */
	bool timed_out, stdout_truncated, stderr_truncated;
	const uint8_t *out;
	size_t out_len;
	const uint8_t *errout;
	size_t errout_len;
	uint64_t duration_us;
};

struct bh_artifact {
	const char *path;
	const uint8_t *content;
	size_t len;
};

struct bh_project_result {
	enum bh_tier tier;
	enum bh_project_outcome outcome;
	const char *detail;            /* "" when completed */
	const struct bh_project_step *steps; /* the steps that ran, in order */
	size_t n_steps;
	const struct bh_artifact *artifacts;
	size_t n_artifacts;
	bool artifacts_truncated;
	uint64_t duration_us, wall_us;
	/* Version 2, committed before this answer; in a session, a call that
	 * may have run without an answer has err set and its version-3 record
	 * here (the rest empty). */
	const struct bh_record *record;
	/* In a session: as bh_cell_result's. */
	enum bh_end_reason ended;
	const char *ended_detail;
};
typedef void (*bh_project_cb)(void *arg, const struct bh_project_result *res, const bh_error *err);
int bh_run_project(bh_engine *e, const struct bh_project *req, bh_project_cb cb, void *arg,
		   bh_error **err);
/* ---- egress: the request digest a project run's record will carry (an
 * approval held before the engine sees the call names it) ---- */
void bh_project_request_digest(const struct bh_project *req, char out[65]);

/* ---- sessions: one sandbox kept warm for many calls ------------------------- */

typedef struct bh_session bh_session;

enum bh_language { BH_LANG_PYTHON = 0, BH_LANG_JAVASCRIPT = 1 };
#define BH_LANG_COUNT 2
const char *bh_language_name(enum bh_language l);
int bh_language_parse(const char *name, enum bh_language *out);

enum bh_session_state {
	BH_SESSION_WAITING,     /* its tier is still being proven */
	BH_SESSION_OPENING,
	BH_SESSION_READY,
	BH_SESSION_BUSY,        /* a call or a file operation is in flight */
	BH_SESSION_PAUSING,
	BH_SESSION_PAUSED,
	BH_SESSION_HIBERNATING,
	BH_SESSION_HIBERNATED,
	BH_SESSION_WAKING,      /* resuming or restoring */
	BH_SESSION_ENDED,
};
#define BH_SESSION_STATE_COUNT 10
const char *bh_session_state_name(enum bh_session_state st); /* "ready" */
/* 0 and *out, or -1 for a name that is no session state. */
int bh_session_state_parse(const char *name, enum bh_session_state *out);

struct bh_session_opts {
	enum bh_tier tier;     /* BH_TIER_UNKNOWN: the strongest offered */
	enum bh_tier floor;    /* BH_TIER_UNKNOWN: none */
	uint32_t languages;    /* 1 << bh_language: interpreters to start at open */
	uint32_t lifetime_ms;  /* 0: 30 min; at most 12 h */
	uint32_t idle_ms;      /* no call this long: paused (unclaimed: closed). 0: the
				  engine's; a shorter one is honoured, never under 1 s, a
				  longer one is the engine's (plimsoll's rule) */
	const char *principal; /* who opened it; only they find it again */
	const char *owner;     /* [A-Za-z0-9._:-]{1,64}, a keyed digest; may be NULL */
	const char *run_key;   /* the conversation it serves; may be NULL */
	/* ---- ci: attribution: who asks for it and the request (NULL name: the
	 * principal), for its events (struct bh_actor, below) */
	struct bh_actor {
		const char *name;       /* [A-Za-z0-9._:@-]{1,64}; another byte is kept as '?' */
		const char *request_id; /* the daemon's audit request id; may be NULL */
	} actor;
	/* ---- egress ---- */
	const char *egress_profile; /* NULL: none; else a profile the caller was checked to
				       use, held by the session from open to close */
};

/* Fires once: the sandbox is ready (err NULL), or it could not be opened. */
typedef void (*bh_session_open_cb)(void *arg, bh_session *s, const bh_error *err);

/* Opening is asynchronous ("warm"): *out is set at once and calls made
 * before the sandbox is ready wait for it. A floor the tier does not meet
 * is refused here, before anything is created. Sessions belong to the
 * engine; a handle stays valid until ten minutes after the session ended
 * (its tombstone, so a late close still learns why) or bh_engine_close. */
int bh_session_open(bh_engine *e, const struct bh_session_opts *opts, bh_session_open_cb cb,
		    void *arg, bh_session **out, bh_error **err);

/* The id is a capability (128 random bits, 32 hex): never logged or stored. */
const char *bh_session_id(const bh_session *s);
const char *bh_session_fingerprint(const bh_session *s); /* SHA-256 hex of the id */
enum bh_tier bh_session_tier(const bh_session *s);
/* NULL when the id is unknown or another principal's: the same answer. */
bh_session *bh_engine_find_session(bh_engine *e, const char *session_id, const char *principal);

struct bh_file {
	const char *path;        /* relative to /work */
	const uint8_t *content;
	size_t len;
};

struct bh_cell {
	enum bh_language language;
	const char *code;
	size_t code_len;         /* at most 256 KiB */
	const struct bh_file *files; /* written into /work first: <= 200 files, <= 4 MiB */
	size_t n_files;
	uint32_t timeout_ms;     /* 0: 30 s; at most 5 min */
	uint32_t output_cap;     /* bytes kept per stream; 0: 64 KiB */
	enum bh_tier floor;      /* BH_TIER_UNKNOWN: none */
	/* The timeout exactly as the client sent it, for the request digest. */
	bool has_sent_timeout;
	int64_t sent_timeout_ms;
	/* Run the code as a fresh `node -` in the session's sandbox instead of
	 * in its interpreter (plimsoll's javascript payload in a session): files
	 * are shared, variables are not. JavaScript only, no files; its record
	 * is of kind javascript. */
	bool fresh_process;
	/* ---- egress ---- */
	const char *grant_profile; /* NULL or "": none; else held for this call only
				      (a snippet in a session; a cell carries no grant) */
};

struct bh_cell_result {
	int exit_code;           /* 0 ran, 1 raised, 124 deadline, else the interpreter's end */
	bool timed_out;
	bool stdout_truncated, stderr_truncated;
	bool interpreter_started, interpreter_ended;
	bool oom;
	const uint8_t *out;
	size_t out_len;
	const uint8_t *errout;
	size_t errout_len;
	uint64_t duration_us;    /* inside the sandbox */
	uint64_t wall_us;        /* from the call to its answer, waiting included */
	const struct bh_record *record; /* committed to the store before this answer */
	uint64_t woke_us;        /* resuming or restoring the sandbox first took this long */
	enum bh_end_reason ended; /* set when the session ended during or after this call */
	const char *ended_detail; /* then why, in words (for plimsoll's endDetail) */
};

/* On success res is set and err NULL. On failure err is set; res is NULL,
 * or (the code may have run) carries only the version-3 record. */
typedef void (*bh_cell_cb)(void *arg, const struct bh_cell_result *res, const bh_error *err);

/* One call in flight per session and at most one waiting; more is refused
 * (not dispatched, capacity). Refusals that need no waiting return < 0. */
int bh_session_run(bh_session *s, const struct bh_cell *cell, bh_cell_cb cb, void *arg,
		   bh_error **err);
/* ---- project: a project in the session's sandbox, queued as a cell is
 * (its files stay in /work for later calls); its record chains as a cell's ---- */
int bh_session_run_project(bh_session *s, const struct bh_project *req, bh_project_cb cb,
			   void *arg, bh_error **err);

struct bh_close_result {
	const char *fingerprint;
	uint64_t calls;
	const char *last_record_sha256;
	enum bh_end_reason end_reason; /* closed, or why it had ended before */
};
typedef void (*bh_close_cb)(void *arg, const struct bh_close_result *res, const bh_error *err);
/* Waits for a call in flight, refuses one waiting, ends the sandbox. */
int bh_session_close(bh_session *s, bh_close_cb cb, void *arg, bh_error **err);

/* Files come out through the sandbox's init, never by the host walking
 * paths the sandbox controls. Symlinks are not followed; FIFOs and devices
 * are refused. */
struct bh_file_entry {
	const char *name;
	char type;               /* 'f' 'd' 'l' 'p' 's' 'c' 'b' '?' */
	uint64_t size;
	uint64_t mtime_ms;
	const char *target;      /* for a symlink */
};
typedef void (*bh_list_cb)(void *arg, const struct bh_file_entry *entries, size_t n, bool more,
			   const bh_error *err);
int bh_session_list_files(bh_session *s, const char *path, bh_list_cb cb, void *arg, bh_error **err);
typedef void (*bh_read_cb)(void *arg, const uint8_t *data, size_t len, uint64_t size,
			   bool truncated, const bh_error *err);
int bh_session_read_file(bh_session *s, const char *path, uint32_t max_bytes, bh_read_cb cb,
			 void *arg, bh_error **err);

/* ---- procs: the processes inside a sandbox ---------------------------------- */
/* Read by the sandbox's init from its own /proc (PID 1 of the sandbox's pid
 * namespace), never by the host walking paths the sandbox controls; asked
 * beside the call in flight, so a running cell's children are seen. Every
 * field is the sandbox's word (its pids, its uids), checked for form only. */
struct bh_process {
	uint32_t pid, ppid; /* as the sandbox numbers them */
	uint32_t uid;       /* effective, inside the sandbox */
	char state;         /* /proc's letter: R S D Z T t X I ... ('?' another) */
	uint64_t cpu_us;    /* user + system time so far */
	uint64_t rss_bytes;
	uint64_t age_us;    /* since it started */
	const char *command; /* argv joined by spaces, or "[comm]"; NUL-free, any other byte */
};
/* At most BH_PROCESSES_MAX processes, sorted by pid; more: more were running. */
#define BH_PROCESSES_MAX 1024u
typedef void (*bh_processes_cb)(void *arg, const struct bh_process *procs, size_t n, bool more,
				const bh_error *err);
/* A session that is ready or running a call (not paused, hibernated or
 * ended: refused with a sentence saying so); one list at a time per session. */
int bh_session_processes(bh_session *s, bh_processes_cb cb, void *arg, bh_error **err);
/* The name bulkhead gives a uid inside its sandboxes ("root", "sandbox"),
 * or NULL for a uid it did not make. */
const char *bh_sandbox_user_name(uint32_t uid);

/* Operator actions. Each answers through cb once done. */
typedef void (*bh_action_cb)(void *arg, const bh_error *err);
int bh_session_pause(bh_session *s, bh_action_cb cb, void *arg, bh_error **err);
int bh_session_resume(bh_session *s, bh_action_cb cb, void *arg, bh_error **err);
int bh_session_hibernate(bh_session *s, bh_action_cb cb, void *arg, bh_error **err);
/* Ends it at once, a call in flight included ("killed"). */
void bh_session_kill(bh_session *s);

/* ---- ci: attribution ----
 * The same actions naming who asks (NULL: unattributed, the engine's own):
 * the session's events until the action is done carry who->name and
 * who->request_id (struct bh_event's actor and request_id). The engine's
 * own clocks name themselves: "policy:idle" (the idle pause, the hibernate
 * or close after it, an unclaimed session), "policy:ttl" (the lifetime), "policy:memory" (reclaim under memory pressure),
 * "policy:retention", "policy:images_budget"; what the engine does of its
 * own accord is "engine". The embedded console names itself "console". */
#define BH_ACTOR_ENGINE "engine"
#define BH_ACTOR_CONSOLE "console"
#define BH_ACTOR_MAX 64u
int bh_session_pause_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			bh_error **err);
int bh_session_resume_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			 bh_error **err);
int bh_session_hibernate_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			    bh_error **err);
void bh_session_kill_as(bh_session *s, const struct bh_actor *who);
int bh_session_close_as(bh_session *s, const struct bh_actor *who, bh_close_cb cb, void *arg,
			bh_error **err);

struct bh_session_info {
	const char *fingerprint;
	const char *sandbox;     /* the runtime's container name */
	enum bh_session_state state;
	enum bh_tier tier, floor;
	const char *principal, *owner, *run_key;
	uint64_t calls;
	const char *last_record_sha256;
	int64_t created_unix_ms, last_call_unix_ms, expires_unix_ms;
	uint64_t awake_ms;       /* lifetime used */
	uint32_t idle_ms;        /* its idle window in effect */
	enum bh_end_reason end_reason; /* BH_END_NONE while live */
	bool from_pool;          /* its sandbox came ready from the warm pool */
	/* ---- truth: what describe shows (session_info.c) ---- */
	const char *call_code;   /* the cell in flight: its code ("" when none) */
	size_t call_code_len;
	enum bh_language call_language;
	int64_t call_started_unix_ms; /* 0: no cell in flight */
	int64_t pauses_unix_ms;       /* the idle window pauses it then (0: its clock is not running) */
	int64_t hibernates_unix_ms;   /* paused, it hibernates (or closes) then; projected while ready */
	const char *evidence;    /* its tier's proof: "bulkhead-sandbox:sha256:<evidence key>" */
	const char *end_detail;  /* why it ended, in words ("" while live) */
	/* ---- egress: its profile ("" none), the brokered requests it made
	 * and the last one's event detail ("" none) ---- */
	const char *egress_profile;
	uint64_t egress_requests;
	const char *egress_last;
	/* ---- replay: refused calls, for :live ---- */
	uint64_t refused;         /* calls refused before they ran (not in calls) */
	const char *last_refusal; /* the last one's refusal, "Nothing ran (capacity): ..." ("" none) */
	/* ---- density: a branched session's parent (its fingerprint, "" for
	 * none) and the parent's record its chain goes on from ---- */
	const char *branched_from;
	uint64_t branched_after;
};
void bh_session_get_info(const bh_session *s, struct bh_session_info *out);
/* Every session the engine holds (live, and ended ones kept as tombstones). */
size_t bh_engine_sessions(bh_engine *e, bh_session ***out);
/* Pooled sandboxes of a tier ready to be handed to the next session. */
size_t bh_engine_pool_ready(bh_engine *e, enum bh_tier tier);

/* ---- fleet (issue 20): a hibernated session another engine may adopt ----
 * What a host publishes of each of its hibernated sessions (in the fleet's
 * directory) so that, when it is gone, another engine sharing its images
 * directory continues the conversation: the same fingerprint, principal and
 * owner, its chain going on from last_record_sha256, its variables and files
 * restored from the image at the next call. Every field is checked by the
 * adopting engine as input from outside (form, lengths, names): the
 * directory is another machine's word. */
#define BH_HIBERNATED_TEXT_MAX 256u
struct bh_hibernated {
	char fingerprint[65];      /* SHA-256 hex of the session id */
	char sandbox[64];          /* its image: images_dir/<sandbox>, a name bulkhead makes */
	enum bh_tier tier, floor;  /* tier: kernel (only gVisor hibernates here) */
	char principal[BH_HIBERNATED_TEXT_MAX + 1];
	char owner[BH_HIBERNATED_TEXT_MAX + 1];
	char run_key[BH_HIBERNATED_TEXT_MAX + 1];
	char egress_profile[BH_HIBERNATED_TEXT_MAX + 1]; /* "" none */
	uint32_t languages;        /* 1 << bh_language started in it */
	uint64_t calls;
	char last_record_sha256[65]; /* the chain's head: the next record's prev */
	int64_t created_unix_ms, last_call_unix_ms, hibernated_unix_ms;
	uint32_t lifetime_ms;      /* its lifetime of awake time */
	uint64_t awake_ms;         /* of it, used */
};
/* Fills *out from a hibernated session (its image complete on disk): 0, or
 * -1 with *err when s is not hibernated. */
int bh_session_hibernated(const bh_session *s, struct bh_hibernated *out, bh_error **err);
/* Takes over a hibernated session another engine left in this engine's
 * images directory: the image is renamed to a sandbox name of this engine's
 * (the rename is the claim: of two engines adopting one image, exactly one
 * succeeds, the other is refused with BH_E_NOT_DISPATCHED), a bundle made
 * for it here, its row written to this store with origin_host and the chain
 * head, an "adopted" event. *out is the session, hibernated; its next call
 * restores it. Refused: a fingerprint this engine already holds, a field
 * that does not check, an image that is missing, a link or not a directory,
 * a tier this engine does not offer. Nothing is changed by a refusal.
 * Refusals are BH_E_NOT_DISPATCHED: BH_REFUSAL_REQUEST for the description
 * and the image (a lost claim: "is not there: another engine adopted it
 * first"), UNSUPPORTED for the tier, CAPACITY when admission (places, the
 * principal's cap; no memory until it wakes) has no room. Its row keeps
 * where its chain began (store migration 7: origin_host, adopted_after,
 * adopted_after_sha256), which bh_history_chains gives on its records as
 * bh_record_row.chain_after, so `bulkhead verify` of this store alone
 * walks on from there (bh_chain_begin_after). The adopter's bundle is its
 * own (paths, host uid range, egress mount if it has a broker): gVisor
 * restores an image checkpointed under another state directory, bundle
 * path and uid range (tests/runtime/test_fleet_adopt.c). */
int bh_engine_adopt_hibernated(bh_engine *e, const struct bh_hibernated *h,
			       const char *origin_host, bh_session **out, bh_error **err);

/* ---- density (issue 21): branch a live conversation ----------------------
 * An idle kernel-tier session is checkpointed (it hibernates: its next call
 * restores it and it goes on where it was) and its image given to n new
 * sessions, each with its own session id, fingerprint, sandbox and chain,
 * hibernated on that image: each one's first call restores it with the
 * parent's variables, interpreters and files, and from then on they
 * diverge. A child's chain goes on from the parent's last record (its first
 * record's previous_sha256 is that record's digest, its sequence the next),
 * and its row names the parent (migration 8: branched_from), so history and
 * `bulkhead verify` show where it came from. Children are the parent's
 * principal's and owner's: the places, the principal's and the owner's caps
 * count them (no memory until each wakes). Refused (BH_E_NOT_DISPATCHED,
 * nothing changed): a container-tier session (UNSUPPORTED: no working
 * checkpoint here), n outside 1..BH_BRANCH_MAX (REQUEST), a session with a
 * call or an action in flight (CAPACITY: try when it is idle), no room for
 * n more (CAPACITY). A hibernated session branches from its image as it is
 * (no pause: parent_paused_us 0). cb is called once: the children
 * (valid during the call), or why the branch failed after it started (the
 * parent is then as the checkpoint left it: hibernated, or ended with why
 * when its checkpoint failed). */
#define BH_BRANCH_MAX 16u
struct bh_branch_child {
	char session_id[33];   /* the secret a caller names it by */
	char fingerprint[65];
	char sandbox[40];
};
struct bh_branch_result {
	size_t n;
	const struct bh_branch_child *children;
	uint64_t parent_paused_us;  /* the request to the parent's image complete: the time
				       it stopped answering (its next call restores it) */
	uint64_t after;             /* the parent's calls: children's chains go on after */
	const char *after_sha256;   /* its last record's digest ("" when it had none) */
};
typedef void (*bh_branch_cb)(void *arg, const struct bh_branch_result *r, const bh_error *err);
int bh_session_branch(bh_session *s, unsigned n, bh_branch_cb cb, void *arg, bh_error **err);
int bh_session_branch_as(bh_session *s, const struct bh_actor *who, unsigned n, bh_branch_cb cb,
			 void *arg, bh_error **err);

/* ---- stream: the running cell's output as it is produced ------------------- */

/* A session's latest cell as a follower sees it: while it runs, the output
 * its init relayed so far (channel.h, OUTPUT: chunks at most every 50 ms,
 * up to the cell's output_cap per stream); once answered, the whole kept
 * output and its record's digest. Kept until the next cell starts. */
struct bh_cell_output {
	uint64_t sequence;        /* the cell's record sequence; 0: no cell yet */
	bool running;             /* false: answered, refused or lost */
	bool answered;            /* exit_code ... record_sha256 are set */
	enum bh_language language;
	const char *code;         /* the cell's code (not NUL-safe: code_len) */
	size_t code_len;
	int64_t started_unix_ms;
	/* The bytes after the cursor: out_offset is where they start. */
	const uint8_t *out, *err;
	size_t out_len, err_len;
	uint64_t out_offset, err_offset;
	int exit_code;
	bool timed_out, stdout_truncated, stderr_truncated;
	uint64_t duration_us;
	const char *record_sha256; /* "" until answered */
};
/* The latest cell's output after the cursor (sequence, out_after,
 * err_after): a cursor of another cell (or 0, 0, 0) reads the latest from
 * its start. Nothing is copied: the pointers are the engine's, valid until
 * it next runs (bh_engine_process) or the session is freed. Never waits and
 * never slows the call. Returns 0. */
int bh_session_output(const bh_session *s, uint64_t sequence, uint64_t out_after,
		      uint64_t err_after, struct bh_cell_output *out);

/* A session's cells from the store, newest first: the code and the whole
 * answered output up to the store's cap per stream (flags then say
 * stored_stdout_truncated / stored_stderr_truncated, apart from the cell's
 * own stdout_truncated), unless the store keeps digests only. */
#define BH_STORE_OUTPUT_CAP (256u * 1024u)
struct bh_cell_row {
	int64_t id;
	uint64_t sequence;             /* the cursor for the page after it */
	const char *language, *flags;  /* "" for none */
	const char *unanswered;        /* "" when answered; else why not (a version-3 record) */
	const char *record_sha256;
	int exit_code;
	int64_t duration_us, started_unix_ms, ended_unix_ms;
	const uint8_t *code, *out, *err;
	size_t code_len, out_len, err_len;
};
typedef int (*bh_cell_row_fn)(void *arg, const struct bh_cell_row *row);
/* At most limit (0: 50) cells of one session with a sequence below
 * before_sequence (0: from the newest), newest first; non-zero from fn
 * stops. Rows are valid only during the call. */
int bh_engine_cells(bh_engine *e, const char *session, uint64_t before_sequence, size_t limit,
		    bh_cell_row_fn fn, void *arg, bh_error **err);

/* ---- leaks: what is alive that nothing should hold ---------------------------- */

enum bh_leak_kind {
	BH_LEAK_ORPHAN,     /* in the runtime, with no live registry row */
	BH_LEAK_ABANDONED,  /* a live row and its container, but its engine is gone */
	BH_LEAK_GHOST,      /* a live row whose container the runtime does not have */
	BH_LEAK_OVERDUE,    /* held by this engine past its lifetime and a margin */
	BH_LEAK_STALE_IMAGE,/* a hibernation image nothing will restore, or past retention */
	BH_LEAK_STRAY_CGROUP, /* a cgroup below the engine's parent with no container */
	BH_LEAK_INTERRUPTED, /* inflight: a call's intent a dead engine never settled */
};
#define BH_LEAK_KIND_COUNT 7
const char *bh_leak_kind_name(enum bh_leak_kind k);

struct bh_leak {
	enum bh_leak_kind kind;
	char sandbox[64];       /* container, image or cgroup name */
	char fingerprint[65];   /* the session, when a row names it */
	char runtime[8];
	char reason[256];       /* why it is a leak, in words */
	char holder[512];       /* what holds it: a pid, a path */
	int64_t first_seen_ms;  /* when the registry first saw it, else now */
};

/* Compares the registry, the runtimes' lists, the cgroups and the images. */
size_t bh_engine_leaks(bh_engine *e, struct bh_leak **out);
/* Reaps what bh_engine_leaks finds (each reap is an event); returns how many. */
size_t bh_engine_gc(bh_engine *e, struct bh_leak **reaped);
/* ---- capture ---- */
/* Evidence of a finding or a session, before anything reaps it: what the
 * host can still see (processes from the sandbox's cgroup, its cgroup's
 * usage, its open sockets, the bundle's config.json, the store's rows of
 * the session) written into a folder the operator names, then what the
 * caller adds (what the sandbox's init answered: its processes, the /work
 * listing, files), then a MANIFEST with every file's SHA-256 and size, when
 * it was captured and by which engine pid, and what could not be captured
 * and why. Nothing in the state directory or the store changes; the folder
 * is written with no link followed. capture.c. */
#define BH_CAPTURE_FILE_CAP (1u << 20) /* bytes kept of one file */
#define BH_CAPTURE_FILES_MAX 64u       /* files one capture holds */
#define BH_CAPTURE_MANIFEST "MANIFEST"
typedef struct bh_capture bh_capture;
struct bh_capture_target {
	char sandbox[64];      /* the runtime's container name ("" when none) */
	char fingerprint[65];  /* the session ("" for an orphan) */
	char runtime[8];       /* "crun", "runsc" ("" when unknown) */
	bool held;             /* this engine holds the session */
};
/* Resolves what names a finding or a session: a fingerprint (or a prefix
 * of at least 8 of its characters) or a sandbox name, among the sessions
 * this engine holds, the leak finder's findings and the store's rows. */
int bh_engine_capture_target(bh_engine *e, const char *name, struct bh_capture_target *out,
			     bh_error **err);
/* Makes out_dir (absolute; made 0700, or an existing empty directory) and
 * writes the host's view of the target into it. */
int bh_capture_begin(bh_engine *e, const struct bh_capture_target *t, const char *out_dir,
		     bh_capture **out, bh_error **err);
/* Adds one file (a name of letters, digits, '.', '-', '_'; at most
 * BH_CAPTURE_FILE_CAP bytes, more is cut and said so in the manifest). */
int bh_capture_add(bh_capture *c, const char *name, const void *data, size_t len, bool truncated,
		   const char *note, bh_error **err);
/* What the sandbox's init answered, in one format whoever asked it (an
 * engine holding the session, a daemon): its processes as it numbers
 * them (processes-init.txt) and a /work listing (work-listing.txt). */
int bh_capture_add_processes(bh_capture *c, const struct bh_process *procs, size_t n, bool more,
			     bh_error **err);
int bh_capture_add_listing(bh_capture *c, const char *path, const struct bh_file_entry *entries,
			   size_t n, bool more, bh_error **err);
/* Says in the manifest what could not be captured, and why. */
void bh_capture_missing(bh_capture *c, const char *what, const char *why);
/* A name for the evidence of one /work file ("work-03-etc_passwd"). */
char *bh_capture_file_name(size_t index, const char *work_path);
/* Writes the MANIFEST; manifest_sha256 (65 bytes) gets its digest. */
int bh_capture_finish(bh_capture *c, char manifest_sha256[65], bh_error **err);
const char *bh_capture_dir(const bh_capture *c); /* absolute */
void bh_capture_free(bh_capture *c);
/* ---- remote: a whole capture (capture_run.c): bh_capture_begin, then for
 * a session this engine holds its init's processes, the /work listing and
 * each picked /work file (paths below /work), then the MANIFEST. cb fires
 * once (perhaps before this returns): the folder and its MANIFEST's digest,
 * or err; a part the init refused is in the MANIFEST as missing, not an
 * error. -1 (cb never called): the target or the folder was refused. ---- */
#define BH_CAPTURE_PICKED_MAX (BH_CAPTURE_FILES_MAX - 16u)
typedef void (*bh_captured_cb)(void *arg, const struct bh_capture_target *t, const char *dir,
			       const char *manifest_sha256, const bh_error *err);
int bh_engine_capture(bh_engine *e, const char *name, const char *out_dir,
		      const char *const *files, size_t n_files, bh_captured_cb cb, void *arg,
		      bh_error **err);
/* Checks a folder against its MANIFEST: every listed file's size and
 * SHA-256, no file missing, none added. problems (caller frees) has one
 * line per problem; 0 with *problems NULL means it verifies. */
int bh_capture_verify(const char *dir, size_t *n_files, char manifest_sha256[65], char **problems,
		      bh_error **err);
/* ---- report: a capture's MANIFEST read back (capture_manifest.c) ---- */
/* The MANIFEST's text parsed as anyone's bytes (an evidence folder handed
 * over may be forged): the target it names and its file lines exactly as
 * bh_capture_finish writes them, at most BH_CAPTURE_FILES_MAX. A line that
 * claims to be a file and is not one bulkhead writes, or a name listed
 * twice, is a line of problems (NULL: none); a text that is no manifest
 * at all (no header, a NUL) fails. What `capture --verify` checks the
 * folder against, and what the report names the capture by. */
#define BH_CAPTURE_NAME_MAX 128u
struct bh_capture_manifest_file {
	char sha256[65];
	uint64_t size;
	char captured[32]; /* UTC, as written */
	bool cut;          /* the file was cut at BH_CAPTURE_FILE_CAP */
	char name[BH_CAPTURE_NAME_MAX + 1];
};
struct bh_capture_manifest {
	char sandbox[64], session[65], runtime[8]; /* "" when it names none */
	struct bh_capture_manifest_file *files;
	size_t n_files;
	char *problems;
};
int bh_capture_manifest_parse(const char *text, size_t len, struct bh_capture_manifest *out,
			      bh_error **err);
void bh_capture_manifest_free(struct bh_capture_manifest *m);
/* dir's MANIFEST (a regular file, no link followed, capped) read, its
 * SHA-256 in manifest_sha256 (set when it could be read, even if it does
 * not parse), and parsed. */
int bh_capture_manifest_read(const char *dir, struct bh_capture_manifest *out,
			     char manifest_sha256[65], bh_error **err);

/* ---- inflight: a dead engine's leftovers, reaped finding by finding ---- */

/* What the previous engine left, as this engine found it at open (before
 * touching anything): from the store (the dead rows' engine pid and its
 * last sign of life, store_inflight.c) and the host (bh_engine_leaks). */
struct bh_leftovers {
	bool any;
	int64_t engine_pid;       /* 0: the store names none (an orphan's only trace is the host) */
	int64_t last_sign_ms;     /* the newest time its rows, events and intents carry */
	size_t by_kind[BH_LEAK_KIND_COUNT];
	size_t paused;            /* of the abandoned sandboxes, those the registry says paused */
	bool reaped_at_open;      /* keep_leftovers was off: they were reaped */
	/* ---- report: a crash loop is bounded. An engine keeping leftovers
	 * keeps those of the BH_LEFTOVERS_KEPT_ENGINES newest dead engines; an
	 * older one's findings are captured into STATE/captures/ and reaped at
	 * open (leftovers_bound.c): how many, and how many dead engines kept. */
	size_t bounded_reaped;
	size_t dead_engines;
};
#define BH_LEFTOVERS_KEPT_ENGINES 3
#define BH_LEFTOVERS_CAPTURES "captures" /* below the state directory */
void bh_engine_leftovers(bh_engine *e, struct bh_leftovers *out);
/* One line for people: "the previous engine (pid 5287, died ~08:19:11 UTC)
 * left: 1 paused sandbox, 2 ghost rows, ..." (~: after its last sign of
 * life); "" when nothing. */
void bh_leftovers_text(const struct bh_leftovers *l, char *buf, size_t n);

/* The one reap: the findings named in chosen (kind, sandbox and session
 * match; NULL with n 0: every finding), each found again and asked again
 * whether something holds it now. Returns how many were reaped, in *reaped. */
size_t bh_engine_reap(bh_engine *e, const struct bh_leak *chosen, size_t n_chosen,
		      struct bh_leak **reaped);
/* ---- remote: the same reap, its events in who's name (NULL: the engine's
 * own; the console passes BH_ACTOR_CONSOLE, a daemon the calling operator
 * and its audit request id). dry_run: nothing is touched and no event is
 * kept; *reaped gets the chosen findings that are found again and unheld,
 * what the reap would take now (a read-only engine answers it too). ---- */
size_t bh_engine_reap_as(bh_engine *e, const struct bh_actor *who, const struct bh_leak *chosen,
			 size_t n_chosen, bool dry_run, struct bh_leak **reaped);
/* What reaping a finding removes, in words (the dry-run preview's column:
 * the console's and `gc --dry-run`'s). */
void bh_leak_removal(const struct bh_leak *l, char *buf, size_t n);

/* A call's intent, committed before it was sent to the init. */
struct bh_inflight {
	const char *session, *code_sha256, *language, *principal, *owner;
	const char *code;          /* not NUL-terminated: code_len bytes */
	size_t code_len;
	bool code_kept;            /* false: the store keeps digests only */
	uint64_t sequence;         /* the record's sequence it would have had */
	int64_t engine_pid, started_ms;
	int64_t reaped_ms;         /* 0: still a finding */
	bool interrupted;          /* no engine runs it now: it was running when its engine died */
};
typedef int (*bh_inflight_fn)(void *arg, const struct bh_inflight *row);
/* The intents of one session (NULL: all) still in the store: calls in
 * flight now, and calls a dead engine was running ("was running"). */
int bh_engine_inflight(bh_engine *e, const char *session, bh_inflight_fn fn, void *arg,
		       bh_error **err);

/* ---- history: records and events from the store ------------------------------ */

struct bh_record_row {
	int64_t id;                    /* commit order; a cursor for the next page */
	const struct bh_record *record;
	const char *language, *flags;  /* "" for none */
	int exit_code;
	int64_t duration_us;
	/* ---- fleet (issue 20): on each record bh_history_chains lists of a
	 * chain that began in another engine's store (a session adopted from
	 * it, bh_engine_adopt_hibernated): the sequence and digest of the
	 * record there it goes on from, and the host it was adopted from, as
	 * this store's row says (bh_chain_begin_after). 0, "" and "" for a
	 * chain that began here, and in every other listing. ---- */
	uint64_t chain_after;
	const char *chain_after_sha256, *chain_origin;
	/* ---- density (issue 21): a branch's child names its parent's
	 * fingerprint here ("" otherwise); chain_after is then the parent's
	 * record the child's chain goes on from ---- */
	const char *chain_branched_from;
};
/* Return non-zero to stop. Rows are valid only during the call. */
typedef int (*bh_record_fn)(void *arg, const struct bh_record_row *row);
/* Records committed after after_id (0: from the first), at most limit (0:
 * 1000), of one session (its fingerprint) or of all (NULL). */
int bh_engine_records(bh_engine *e, const char *session, int64_t after_id, size_t limit,
		      bh_record_fn fn, void *arg, bh_error **err);
/* Paging from the newest: at most limit (0: 1000) records committed before
 * before_id (0: the newest of all), listed in commit order; the first row's
 * id is the cursor for the page before it. */
int bh_engine_records_newest(bh_engine *e, const char *session, int64_t before_id, size_t limit,
			     bh_record_fn fn, void *arg, bh_error **err);
/* One session's record by its sequence (a record's predecessor is
 * sequence - 1): fn is called once, or not at all when there is none. */
int bh_engine_record_at(bh_engine *e, const char *session, uint64_t sequence, bh_record_fn fn,
			void *arg, bh_error **err);

struct bh_event {
	int64_t id, at_unix_ms;
	const char *kind, *session, *sandbox, *detail;
	/* ---- ci: attribution: who acted (a principal's name, "console",
	 * "policy:idle" ..., "engine"; "" in a row older than the column) and
	 * the daemon's audit request id of the call that asked ("" for none) */
	const char *actor, *request_id;
};
typedef int (*bh_event_fn)(void *arg, const struct bh_event *ev);
/* Events after after_id, oldest first, at most limit (0: 1000). */
int bh_engine_events(bh_engine *e, int64_t after_id, size_t limit, bh_event_fn fn, void *arg,
		     bh_error **err);
/* The newest events before before_id (0: of all), at most limit (0: 1000),
 * listed oldest first. */
int bh_engine_events_newest(bh_engine *e, int64_t before_id, size_t limit, bh_event_fn fn,
			    void *arg, bh_error **err);

/* ---- approvals ---- */
/* Keeps a step of the daemon's approval desk (a call held, approved, denied
 * or timed out: who, when, why, and the request digest its record carries)
 * as an event of kind "approval" naming the session's fingerprint ("" for a
 * one-shot Run). A denied or timed-out call has no record (it was refused
 * not dispatched), so this event is where its decision is kept. */
#define BH_EVENT_APPROVAL "approval"
int bh_engine_note_approval(bh_engine *e, const char *fingerprint, const char *detail,
			    bh_error **err);
/* ---- remote: the same, naming who took the step: the held call's
 * principal (held, dropped), the deciding operator (approved, denied), the
 * desk's clock (timed out), like the engine's policy clocks ---- */
#define BH_ACTOR_APPROVAL_CLOCK "policy:approval_timeout"
int bh_engine_note_approval_by(bh_engine *e, const char *fingerprint, const char *detail,
			       const struct bh_actor *who, bh_error **err);

/* A store opened read-only, with no engine and no runtime: forensics on a
 * copy of a production store, or reading beside a running engine. The file
 * is read as untrusted: SQLite in defensive mode with trusted_schema off,
 * no views or triggers, its tables checked against this build's schema,
 * one value's length and one query's work bounded (a read past the bound
 * fails naming the store), and every read a bounded page. */
typedef struct bh_history bh_history;
int bh_history_open(const char *db_path, bh_history **out, bh_error **err);
void bh_history_close(bh_history *h);
int bh_history_records(bh_history *h, const char *session, int64_t after_id, size_t limit,
		       bh_record_fn fn, void *arg, bh_error **err);
int bh_history_records_newest(bh_history *h, const char *session, int64_t before_id, size_t limit,
			      bh_record_fn fn, void *arg, bh_error **err);
int bh_history_record_at(bh_history *h, const char *session, uint64_t sequence, bh_record_fn fn,
			 void *arg, bh_error **err);
/* Every record of one session (NULL: of all) in chain order, a row at a
 * time, never a page held: single runs first, then each session's chain by
 * sequence (what `bulkhead records` lists and `verify` walks). */
int bh_history_chains(bh_history *h, const char *session, bh_record_fn fn, void *arg,
		      bh_error **err);
/* A consistent copy of the store at dest (SQLite's online backup), beside a
 * running engine or daemon. */
int bh_history_backup(bh_history *h, const char *dest, bh_error **err);
int bh_history_events(bh_history *h, int64_t after_id, size_t limit, bh_event_fn fn, void *arg,
		      bh_error **err);
int bh_history_events_newest(bh_history *h, int64_t before_id, size_t limit, bh_event_fn fn,
			     void *arg, bh_error **err);
/* The registry's rows: the sessions the store remembers, newest first, at
 * most limit (0: 1000). A row whose state or end reason is no name this
 * build knows fails the read, naming the row (a crafted or damaged store). */
struct bh_history_session {
	const char *fingerprint, *sandbox, *runtime, *tier, *floor, *principal, *owner, *run_key;
	enum bh_session_state state;
	enum bh_end_reason end_reason;
	const char *end_detail, *last_record_sha256;
	int64_t created_ms, expires_ms, last_call_ms, ended_ms, awake_ms;
	uint64_t calls;
};
typedef int (*bh_history_session_fn)(void *arg, const struct bh_history_session *row);
int bh_history_sessions(bh_history *h, size_t limit, bh_history_session_fn fn, void *arg,
			bh_error **err);
/* stream: bh_engine_cells over a store opened read-only. */
int bh_history_cells(bh_history *h, const char *session, uint64_t before_sequence, size_t limit,
		     bh_cell_row_fn fn, void *arg, bh_error **err);
/* ---- capture: search across the stored code and output ---- */
/* Cells (all sessions, single runs too) whose code, stdout or stderr holds
 * text (bytes, case-sensitive), newest first: one hit per cell and stream,
 * at most limit (0 or more than BH_SEARCH_MAX: BH_SEARCH_MAX). The text is
 * a bound parameter, never part of the SQL. */
enum bh_search_stream { BH_SEARCH_ANY, BH_SEARCH_CODE, BH_SEARCH_STDOUT, BH_SEARCH_STDERR };
#define BH_SEARCH_MAX 200u
#define BH_SEARCH_CONTEXT 40u /* bytes of the cell kept each side of the match */
#define BH_SEARCH_TEXT_MAX 256u
struct bh_search_hit {
	int64_t id;                 /* the record's row */
	const char *session;        /* fingerprint; "" for a single run */
	uint64_t sequence;
	const char *stream;         /* "code", "stdout", "stderr" */
	const uint8_t *snippet;     /* the match with its context: the cell's bytes, any byte */
	size_t snippet_len, match_at, match_len;
	bool cut_before, cut_after; /* the cell goes on past the snippet */
	int64_t started_unix_ms;
};
typedef int (*bh_search_fn)(void *arg, const struct bh_search_hit *hit);
int bh_engine_search(bh_engine *e, enum bh_search_stream stream, const char *text, size_t limit,
		     bh_search_fn fn, void *arg, bh_error **err);
int bh_history_search(bh_history *h, enum bh_search_stream stream, const char *text, size_t limit,
		      bh_search_fn fn, void *arg, bh_error **err);
/* "code:", "stdout:", "stderr:", "out:", "err:" at the start of a query
 * choose the stream, "cell:" every stream (the rest is the text); no
 * prefix: every stream, *text the whole query. */
enum bh_search_stream bh_search_parse(const char *query, const char **text);

/* ---- usage: what each live sandbox uses now, and the host ---------------- */

/* The engine samples every live session's cgroup from its loop's one-second
 * tick, every BH_USAGE_SAMPLE_MS, into a ring of BH_USAGE_HISTORY points (a
 * minute: the console's sparkline). Nothing wakes for it but that tick; a
 * pass reads five host-owned cgroup files per sandbox (cpuacct.usage,
 * memory.usage_in_bytes, max_usage_in_bytes, limit_in_bytes, pids.current;
 * cgroup v2's equivalents), never a path the sandbox controls. A gVisor
 * sandbox is read through the host cgroup runsc puts its Sentry in (the
 * bundle's cgroupsPath, under the engine's parent), so its figures are the
 * Sentry's: the guest's memory as the host pays for it. */
#define BH_USAGE_HISTORY 12
#define BH_USAGE_SAMPLE_MS 5000u

struct bh_usage_point {
	int64_t at_unix_ms;
	uint32_t cpu_millicores;  /* thousandths of one CPU over the interval before it */
	uint64_t memory_bytes;
};

struct bh_session_usage {
	char fingerprint[65];
	enum bh_tier tier;
	enum bh_session_state state;
	/* false: nothing to read (a hibernated session is an image; a cgroup
	 * gone mid-read): the figures below but disk and calls are 0. */
	bool measured;
	int64_t sampled_unix_ms;     /* when the figures below were read */
	uint32_t cpu_millicores;     /* since the last tick's sample (1000: one CPU busy) */
	uint64_t memory_bytes, memory_limit_bytes, memory_peak_bytes;
	uint32_t pids;
	/* Bytes in /work, /tmp and /dev/shm as the init measured them in its
	 * last DONE (after the call's sweep only idle interpreters remain, so
	 * the figure stands until the next call); disk_unix_ms: when (0: no
	 * call yet, disk_bytes unknown). */
	uint64_t disk_bytes;
	int64_t disk_unix_ms;
	uint32_t calls_last_minute;  /* calls started in the last 60 s */
	size_t n_history;
	struct bh_usage_point history[BH_USAGE_HISTORY]; /* oldest first */
};

struct bh_host_usage {
	uint32_t load_milli[3];      /* /proc/loadavg x 1000: 1, 5, 15 minutes */
	uint64_t mem_total_bytes, mem_available_bytes;
	/* The memory budget admission holds sandboxes to: what the live ones
	 * take of it (their limits, each sandbox with processes counted) and
	 * what they use (their cgroups' usage, sessions only). */
	uint64_t budget_held_bytes, budget_bytes, sandboxes_used_bytes;
	uint64_t images_bytes, images_budget_bytes; /* hibernation images */
	int64_t started_unix_ms, now_unix_ms;       /* the engine's start: its uptime */
};

/* Every live session's usage (ended ones are not listed), read now, in
 * *out (the caller frees it with free()), and the host's figures. Returns
 * how many. */
size_t bh_engine_usage(bh_engine *e, struct bh_host_usage *host, struct bh_session_usage **out);

/* ---- light: what changed since an operator last looked (B27) ---- */
/* An operator's overview (the session list and the usage) is unchanged
 * while this is: the engine's start (a restarted engine counts again from
 * 0), a generation bumped whenever a session is opened, changes state, takes
 * a call or is forgotten, and the last usage sample's time (every
 * BH_USAGE_SAMPLE_MS while sessions live). */
struct bh_change_token {
	int64_t started_unix_ms;
	uint64_t generation;
	int64_t usage_sampled_unix_ms;
};
void bh_engine_change_token(bh_engine *e, struct bh_change_token *out);

/* ---- light: leaks on a copy of a store (B24) ---- */
/* The live rows (neither ended nor hibernated) whose recorded engine pid
 * does not run, or runs something that is not a bulkhead engine, as
 * BH_LEAK_ABANDONED findings: the reason names the state, the engine and
 * its last sign of life (the newest time its rows and their events carry,
 * UTC), the holder "engine pid N". From the store alone: nothing on the host
 * is looked at, nothing is written. *out is freed with free(). */
int bh_history_leaks(bh_history *h, struct bh_leak **out, size_t *n, bh_error **err);

/* ---- introspection for tests and the leak finder ---------------------------- */

/* The cgroup path (below each hierarchy's mount) under which this engine's
 * sandboxes live, e.g. "/bulkhead/3f2a9c01b7de". */
const char *bh_engine_cgroup_parent(bh_engine *e);
/* The runtime's state root for a tier ("STATE/run/crun"). */
const char *bh_engine_runtime_root(bh_engine *e, enum bh_tier t);
/* Sandboxes with processes (hibernated ones are images and do not count). */
size_t bh_engine_live_sandboxes(bh_engine *e);
/* The lifecycle policy in force, defaults filled in. */
const struct bh_policy *bh_engine_policy(bh_engine *e);
/* The store's path (STATE/bulkhead.db). */
const char *bh_engine_store_path(bh_engine *e);
/* Online consistent copy of the store (SQLite's backup API). */
int bh_engine_backup(bh_engine *e, const char *dest, bh_error **err);

#ifdef __cplusplus
}
#endif
#endif
