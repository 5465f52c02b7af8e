/* The engine object and the modules that work on it. */
#ifndef BH_ENGINE_PRIV_H
#define BH_ENGINE_PRIV_H

#include "internal.h"
#include "chan_check.h"
#include "channel.h"
#include "codec.h"
#include "invocation.h"
#include "path_rule.h"

#include <poll.h>
#include <sys/epoll.h>

/* ---- runtimes (runtime.c) ---- */
struct runtime_ops {
	const char *name;          /* "crun" */
	enum bh_tier tier;         /* what its walls can prove */
	const char *const *binaries; /* where to look, in order */
	const char *delete_force;  /* "-f" or "-force" */
	/* Flags that go before the subcommand, after --root. */
	const char *const *global_flags;
	/* pids.max for its sandboxes when the config does not say; runsc's ptrace
	 * platform makes host stub processes, so it needs room (measured here: a
	 * guest forking 255 children under pids.max 256 killed the whole sandbox
	 * silently). */
	uint32_t default_pids;
	/* RLIMIT_NPROC inside. Under runsc every guest process costs host
	 * threads and memory (its ptrace stubs), so the guest's own limit must
	 * stop a fork bomb before the host's pids and memory limits kill the
	 * whole sandbox. */
	uint32_t nproc;
	bool userns;               /* it honours the OCI user namespace mapping */
	/* runsc 20221219 answers EPERM for every SCMP_ACT_ERRNO rule whatever
	 * its errnoRet; glibc falls back from clone3 only on ENOSYS. */
	bool seccomp_errno_ret;
	/* The posture its sandbox process must show on the host (posture.c):
	 * the capabilities it may hold in its own user namespace, and which
	 * namespaces must differ from the engine's ("pid" too for crun; the
	 * Sentry implements PIDs itself and shares the host's). */
	uint64_t posture_caps;
	const char *const *posture_ns;
	uint32_t posture_max_fds;
	bool posture_env_empty;    /* runsc's Sentry runs with an empty environment */
};
extern const struct runtime_ops runtime_crun, runtime_runsc;

struct runtime {
	const struct runtime_ops *ops;
	char *path;        /* the binary found, NULL if none */
	char *root;        /* private state root, STATE/run/<name> */
	char version[160]; /* its own first version line */
	char hash[65];     /* sha256 of the binary (evidence cache key) */
	char why[512];     /* why preflight failed, when path is NULL */
	bool host_uds;     /* ---- egress: runsc --host-uds=open (egress.c) ---- */
};
/* argv for `<bin> --root R <global flags> <args...>`, NULL-terminated; free with argv_free. */
char **runtime_argv(const struct runtime *rt, const char *const *args);
void argv_free(char **argv);
int runtime_preflight(struct runtime *rt, const char *state_dir, bool create_root, char *why,
		      size_t why_len);

/* ---- the state directory's parents (state_parents.c) ---- */
/* Refuses (naming the parent, its mode and the fix) a state directory below
 * a directory the sandboxes' uids cannot search. */
int state_dir_parents_check(const char *dir, bh_error **err);
/* Container names this runtime lists under our root (blocking; for reconcile/close). */
size_t runtime_list_sync(const struct runtime *rt, char ***names);
/* Kill and delete one container, blocking (close path and leftovers). */
void runtime_destroy_sync(const struct runtime *rt, const char *name);

/* ---- bundles (bundle.c) ---- */
/* Every sandbox process's oom_score_adj: the host's OOM killer picks a
 * sandbox before the daemon (which lowers its own, src/daemon/oom.c). */
#define BH_SANDBOX_OOM_SCORE_ADJ 500
#define BH_SANDBOX_OOM_SCORE_ADJ_TEXT "500"
struct bundle_spec {
	const char *name;        /* container id */
	const char *rootfs;      /* shared read-only root */
	const char *init_path;   /* host path of bulkhead-init, bound read-only */
	const char *interp_dir;  /* host path of the cell servers, bound read-only */
	const char *cgroup_path; /* absolute, "/bulkhead/<key>/<name>" */
	uint32_t host_uid_base;  /* start of this sandbox's uid range */
	uint32_t memory_mb, pids, cpu_millis;
	uint32_t nproc;          /* RLIMIT_NPROC for the sandbox's user */
	uint32_t tmp_mb, work_mb, shm_mb;
	bool userns;
	bool seccomp_errno_ret;  /* the runtime honours errnoRet (see runtime_ops) */
	const char *drop_wall;   /* test hook, see testhook.h */
	/* ---- egress ---- */
	const char *egress_dir;  /* host directory bound read-only at /run; NULL: none */
	bool egress_proxy;       /* the proxy and CA variables (bh_egress_env) too */
};
/* The config.json text (caller frees), or NULL with err filled. */
char *bundle_json(const struct bundle_spec *spec, bh_error **err);
/* Writes DIR/config.json; returns 0 or fills err. */
int bundle_write(const char *dir, const struct bundle_spec *spec, bh_error **err);
extern const char bh_seccomp_profile_json[]; /* data/seccomp/profile.json, embedded */
extern const char *const bh_sandbox_env[];   /* the sandbox's whole environment */
int rootfs_prepare(const char *rootfs, bh_error **err);

/* ---- sandboxes (sandbox.c) ---- */
enum sandbox_state {
	SB_OPENING,
	SB_READY,
	SB_BUSY,
	SB_PAUSED,      /* frozen: memory held, resumes in milliseconds */
	SB_HIBERNATING, /* being checkpointed to disk */
	SB_HIBERNATED,  /* an image on disk, no process */
	SB_ENDING,
	SB_ENDED,
	SB_FAILED,
};
const char *sandbox_state_name(enum sandbox_state s);

struct sandbox;
struct exec_frame_result; /* decoded DONE */

typedef void (*sandbox_open_fn)(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err);
typedef void (*sandbox_done_fn)(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err);

/* A reply to a request, or the loss of the sandbox (type 0). */
struct sandbox_reply {
	uint8_t type;           /* BH_CHAN_DONE, FAIL, REJECTED, LISTING, CONTENT; 0: lost */
	const uint8_t *payload; /* after the call id */
	size_t len;
	const char *lost;       /* why, when type is 0 */
	bool breach;            /* lost because its init broke the channel's contract */
	bool oom;               /* the memory cgroup counted an OOM kill meanwhile */
	uint64_t elapsed_us;
};
typedef void (*sandbox_reply_fn)(bh_engine *e, void *arg, struct sandbox *sb,
				 const struct sandbox_reply *r);

/* stream: one OUTPUT chunk of the call in flight, judged already (stream is
 * BH_CHAN_STDOUT or BH_CHAN_STDERR; offset is where it goes). arg is the
 * request's op_arg. */
typedef void (*sandbox_output_fn)(bh_engine *e, void *arg, uint8_t stream, uint64_t offset,
				  const uint8_t *p, size_t len);

struct done_frame {
	int32_t exit_code;
	uint32_t term_signal, flags;
	uint64_t duration_us, out_total, err_total;
	const uint8_t *out, *err;
	size_t out_len, err_len;
	uint64_t disk_used; /* bytes in /work, /tmp, /dev/shm after the call */
};

typedef void (*sandbox_exec_fn)(bh_engine *e, void *arg, struct sandbox *sb,
				const struct bh_exec_result *res, const bh_error *err);

struct sandbox {
	char name[40];
	enum bh_tier tier;
	struct runtime *rt;
	enum sandbox_state state;
	enum sandbox_state state_before_end;
	int uid_slot;
	char *bundle_dir;
	char *pid_file;
	pid_t init_pid; /* host pid of the container's init (runsc: its sandbox) */
	bool init_exited;
	bool started, ready_seen; /* the runtime started it; its init said READY */
	bool deleting;
	bool creating; /* the runtime's create is still running */
	int to_init, from_init, diag;
	struct bh_watch *w_out, *w_in, *w_diag;
	struct buf rbuf, wbuf, diagbuf;
	uint64_t opened_us;
	/* the open in progress */
	sandbox_open_fn open_fn;
	void *open_arg;
	struct bh_timer *open_deadline;
	/* its owner, told when it is lost with no request in flight (killed or
	 * exited while idle): the owner must drop its pointer (the sandbox is
	 * closing and will be freed) */
	void (*lost_fn)(bh_engine *e, void *arg, struct sandbox *sb, const char *why);
	void *lost_arg;
	/* the request in flight: one at a time */
	sandbox_reply_fn op_fn;
	void *op_arg;
	uint64_t call_id;
	struct chan_ask ask; /* what it asked for: the reply is held to it */
	bool breached;       /* its init broke the channel's contract: it is lost */
	uint64_t op_started_us;
	long long oom_before;
	struct bh_timer *backstop;
	/* ---- procs ---- */
	/* a side request in flight beside the call (PS, answered while a cell
	 * runs): at most one, held to its own ask */
	sandbox_reply_fn side_fn;
	void *side_arg;
	uint64_t side_call_id;
	struct chan_ask side_ask;
	struct bh_timer *side_backstop;
	struct bh_timer *close_grace;
	/* a control operation in flight (pause, resume, hibernate, restore) */
	sandbox_done_fn control_fn;
	void *control_arg;
	const void *control_verb; /* pause or resume: which one is in flight */
	char *image_dir;        /* where its hibernation image lives */
	uint64_t control_started_us;
	/* ---- stream: OUTPUT frames of the cell in flight ---- */
	sandbox_output_fn output_fn; /* NULL: the request takes none */
	uint64_t relayed[2];         /* bytes relayed so far: stdout, stderr */
	/* ---- egress ---- */
	char *egress_dir;      /* STATE/egress/<name>, bound at /run; NULL: none */
	bool egress_proxy;     /* its environment holds the proxy variables */
	uint32_t host_uid_base;
	struct sandbox *next;
};

/* The bundle a sandbox of this tier gets (name, cgroup and uid range aside). */
void sandbox_bundle_spec(bh_engine *e, enum bh_tier tier, struct bundle_spec *spec);
/* Starts a sandbox of the given tier; fn fires once it is ready or failed.
 * On failure the sandbox cleans itself up. name: the container name (see
 * sandbox_new_name), known before the runtime is called so the intent row
 * can hold it. */
int sandbox_open(bh_engine *e, enum bh_tier tier, const char *name, sandbox_open_fn fn, void *arg,
		 bh_error **err);
int sandbox_new_name(char out[40]);
/* ---- egress: what of the broker a new sandbox gets (egress.c) ---- */
enum egress_mount {
	EGRESS_NONE = 0, /* nothing: no mount, no listener, no variables */
	EGRESS_SOCKET,   /* the socket's directory and the relay, no variables */
	EGRESS_PROXY,    /* and the proxy and CA variables (a profile's session, a granted run) */
};
/* sandbox_open with its egress (sandbox_open: EGRESS_NONE). */
int sandbox_open_egress(bh_engine *e, enum bh_tier tier, const char *name, enum egress_mount m,
			sandbox_open_fn fn, void *arg, bh_error **err);
/* Exactly what sandbox_new_name makes ("bh-" and 16 lowercase hex digits).
 * A name read from the store or a runtime's list becomes a path (bundles/,
 * images/) only after this: a row saying "../../home/alice" is evidence of
 * tampering, never a directory to delete. */
bool sandbox_name_valid(const char *name);
int sandbox_exec(bh_engine *e, struct sandbox *sb, const struct bh_exec_request *req,
		 sandbox_exec_fn fn, void *arg, bh_error **err);
uint64_t sandbox_next_call_id(void);
/* A call's timeout and output cap when it names none, and the longest
 * timeout it may name: the same for a session's cells and a fresh call. */
#define DEFAULT_TIMEOUT_MS 30000u
#define MAX_TIMEOUT_MS (5u * 60u * 1000u)
#define DEFAULT_OUTPUT_CAP (64u * 1024u)
/* How long past a call's own timeout the engine waits for the init's
 * answer before it takes the sandbox for lost (the init enforces the
 * timeout; this is the backstop if it cannot). */
#define BACKSTOP_GRACE_MS 5000u
/* Sends a request frame (type byte + payload, call id inside) and waits for
 * the reply with that call id; fn gets it, or the sandbox's loss. */
int sandbox_request(bh_engine *e, struct sandbox *sb, uint64_t call_id, const struct buf *frame,
		    uint32_t backstop_ms, sandbox_reply_fn fn, void *arg, bh_error **err);
/* stream: the request just made takes OUTPUT frames, handed to fn. */
void sandbox_take_output(struct sandbox *sb, sandbox_output_fn fn);
/* A frame that expects no reply (WARM). */
void sandbox_send(bh_engine *e, struct sandbox *sb, const struct buf *frame);
/* ---- procs ---- */
/* A request answered beside the call in flight (PS): sent while the
 * sandbox is ready or busy, at most one at a time. fn gets its reply (held
 * to what it asked, chan_check.c), or (type 0, sb NULL) the sandbox's loss;
 * a reply that breaks the contract ends the sandbox as any other does. */
int sandbox_side_request(bh_engine *e, struct sandbox *sb, uint64_t call_id,
			 const struct buf *frame, uint32_t backstop_ms, sandbox_reply_fn fn,
			 void *arg, bh_error **err);
/* Answers a side request in flight with the loss of its answer (why). */
void sandbox_side_abort(bh_engine *e, struct sandbox *sb, const char *why);
int sandbox_decode_done(const struct sandbox_reply *rep, struct done_frame *d);
void sandbox_decode_refusal(const struct sandbox_reply *rep, int *reason, int *err_no, char *msg,
			    size_t msglen);
/* Ends the sandbox: the init sweeps, the runtime deletes it, in the background. */
void sandbox_close(bh_engine *e, struct sandbox *sb);
/* Freeze and thaw (crun and runsc pause/resume). */
int sandbox_pause(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err);
int sandbox_resume(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err);
/* Checkpoint to image_dir and delete the container (runsc only); a paused
 * sandbox is resumed first (runsc cannot checkpoint a paused container). */
int sandbox_hibernate(bh_engine *e, struct sandbox *sb, const char *image_dir, sandbox_done_fn fn,
		      void *arg, bh_error **err);
/* Restore from its image with fresh pipes; the init carries on where it was. */
int sandbox_restore(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err);
bool sandbox_can_hibernate(const struct sandbox *sb);

/* A hibernated sandbox a dead (or stopped) engine left: its bundle and
 * image are on disk; the next call restores it. NULL if the tier's runtime
 * is missing. */
struct sandbox *sandbox_adopt_hibernated(bh_engine *e, enum bh_tier tier, const char *name);
/* ---- fleet (issue 20): a hibernated sandbox whose image another engine
 * made (already renamed to this name in images_dir): a new bundle here,
 * with this engine's paths, uid range and egress mount, the same spec as a
 * sandbox opened here. NULL with err when the runtime is missing or the
 * bundle cannot be written (nothing left behind). ---- */
struct sandbox *sandbox_adopt_image(bh_engine *e, enum bh_tier tier, const char *name,
				    enum egress_mount em, bh_error **err);
/* images_dir/<name> (the caller frees). */
char *engine_image_path(bh_engine *e, const char *name);
/* Whether an image in images_dir is this engine's to delete or list: any
 * in its own STATE/images; in a shared directory only one its store names. */
bool engine_image_ours(bh_engine *e, const char *name);
/* At engine close: forget a hibernated sandbox, keeping its bundle and image. */
void sandbox_detach(bh_engine *e, struct sandbox *sb);

/* Last resort at engine close: delete it now, blocking, and free it. */
void sandbox_abandon(bh_engine *e, struct sandbox *sb);
char *sandbox_cgroup_leaf(const struct sandbox *sb); /* "<name>" */
/* Whether the engine still holds this sandbox (it is freed once deleted). */
bool sandbox_alive(bh_engine *e, const struct sandbox *sb);

/* ---- posture (posture.c): every started sandbox, seen from the host ---- */
/* Reads the host's /proc of the sandbox's init (runsc: its sandbox process,
 * the Sentry): seccomp filter mode on every thread, no_new_privs, the
 * capabilities its runtime allows, namespaces other than the engine's,
 * descriptors of allowed kinds only and bounded, an environment of the
 * sandbox's own names; under crun also the init's children (no
 * capabilities). 0, or -1 with err naming the first failed check. */
int posture_check(bh_engine *e, const struct sandbox *sb, bh_error **err);

/* ---- evidence (evidence.c) ---- */
struct tier_slot {
	struct bh_tier_report report;
	char environment[96]; /* "bulkhead-sandbox:sha256:<evidence key>": what records name */
	struct bh_evidence_line *lines;
	size_t n_lines, cap_lines;
	char *version, *reason;
	bool proving;
	uint64_t proving_since_us;  /* when its smoke test started */
	const char *waiting_for;    /* the step it waits on, in words (static) */
};
void evidence_start(bh_engine *e);
/* Every tier reported "not proven": this engine only collects or reads. */
void evidence_skip(bh_engine *e);
void evidence_free(bh_engine *e);
void evidence_vm_and_below(bh_engine *e);
/* Saying what the proofs wait for (proof_watch.c): a proof's start (logged,
 * and a reminder every few seconds while any proof runs), each step, its
 * duration so far. */
void proof_started(bh_engine *e, enum bh_tier tier, const char *waiting_for);
void proof_step(bh_engine *e, enum bh_tier tier, const char *waiting_for);
double proof_seconds(bh_engine *e, enum bh_tier tier);
void proof_watch_stop(bh_engine *e);

/* ---- sessions (session*.c; session_priv.h inside) ---- */
/* Sessions waiting for a proof: those pinned to `tier` start (BH_TIER_UNKNOWN:
 * every proof finished, all of them). */
void sessions_tier_proven(bh_engine *e, enum bh_tier tier);
void sessions_close_all(bh_engine *e);
void sessions_free(bh_engine *e);
/* Registry rows a dead engine left live end as reaped. */
void sessions_reconcile(bh_engine *e);
/* inflight: only the hibernated rows re-adopted; the dead engine's live
 * rows stay for the operator (keep_leftovers). */
void sessions_readopt(bh_engine *e);
/* Whether a registry row says this container is a hibernated session (its
 * bundle must survive the leftover sweep). */
bool sessions_keeps_bundle(bh_engine *e, const char *sandbox);
/* At close with shutdown_hibernate: put idle kernel-tier sessions to disk. */
void sessions_hibernate_for_shutdown(bh_engine *e);
bool sessions_hibernating(bh_engine *e);
/* bh_engine_open, with the test hooks (testhook.h; NULL: none). */
struct bh_test_hooks;
int engine_open(const struct bh_config *cfg, const struct bh_test_hooks *hooks, bh_engine **out,
		bh_error **err);
/* The crash_at test hook (testhook.c). */
void engine_maybe_crash(bh_engine *e, const char *point);

/* ---- egress (egress.c) ---- */
extern const char *const bh_egress_env[]; /* what a sandbox with a profile adds */
/* The engine's own guard of a profile's name: refused (permission) when
 * there is no broker or it is not a profile name; 0 for none. */
int egress_check_profile(bh_engine *e, const char *profile, bh_error **err);
/* Makes STATE/egress/<sandbox> the sandbox's (its CA bundle inside). */
int egress_sandbox_prepare(bh_engine *e, const char *sandbox, uint32_t uid_base, char **dir_out,
			   bh_error **err);
char *egress_sandbox_dir(bh_engine *e, const char *sandbox);
/* The broker listens on the sandbox's socket for this fingerprint (no-op
 * without a broker or a mount). */
int egress_open_session(bh_engine *e, const char *fp, const struct sandbox *sb, bh_error **err);
void egress_close_session(bh_engine *e, const char *fp);
int egress_hold(bh_engine *e, const char *fp, uint64_t hold, const char *profile, bh_error **err);
void egress_release(bh_engine *e, const char *fp, uint64_t hold);
int egress_engine_start(bh_engine *e, const struct bh_config *cfg, bh_error **err);
void egress_engine_stop(bh_engine *e);
/* The broker's notes' queue and counts (egress_notes.c). */
int egress_notes_start(bh_engine *e, bh_error **err);
void egress_notes_stop(bh_engine *e);
/* At open: a dead engine's sandbox directories go (a kept bundle's stay). */
void egress_sweep_stale(bh_engine *e);
/* The sandbox of a session's (or a granted run's) fingerprint, or NULL. */
const char *sessions_sandbox_of(bh_engine *e, const char *fp);
/* A session's count and last detail for describe (no-op for a run's). */
void sessions_note_egress(bh_engine *e, const char *fp, const char *detail);
const char *execs_sandbox_of(bh_engine *e, const char *fp);

/* ---- the engine ---- */
struct pending_exec;
struct bh_store;
/* What bh_exec refuses before anything is dispatched (BH_REFUSAL_REQUEST):
 * 0, or -1 with *err. */
int exec_request_check(const struct bh_exec_request *req, bh_error **err);
/* ---- egress: bh_exec with a profile held for the run (NULL: none) ---- */
int exec_start(bh_engine *e, const struct bh_exec_request *req, const char *grant, bh_exec_cb cb,
	       void *arg, bh_error **err);

/* ---- the view sandboxes bind from (view.c) ---- */
struct view {
	char *dir;                     /* STATE/view, a tmpfs in our mount namespace */
	char *rootfs, *init, *interp;  /* inside it; NULL when there is no view */
	bool mounted;
};
/* Copies the rootfs, the init and the cell servers into the view; on
 * failure logs why and leaves sandboxes binding the state directory. */
void view_open(bh_engine *e);
void view_close(bh_engine *e);

/* ---- density (uid_region.c): host uid ranges per engine, and where
 * engines claim their regions ---- */
#define UID_REGION_SLOTS 2048
/* Not under /run/bulkhead: the service's RuntimeDirectory, removed when it
 * stops while other engines (a console, a CLI) may hold claims here. */
#define UID_REGION_DIR "/run/lock/bulkhead-uid-regions"

struct bh_engine {
	char *state_dir;
	char state_key[13];
	int lock_fd;
	struct bh_loop *loop;
	struct bh_children *children;
	bh_log_fn log;
	void *log_arg;
	struct bh_cgroups cg;
	char *init_path;   /* the copy inside the state directory */
	char init_hash[65]; /* of the init and the cell servers: part of the evidence key */
	char *interp_dir;  /* the cell servers' copy inside the state directory */
	char *rootfs;
	struct view view;  /* what bundles bind, when it could be made */
	char *bundles_dir;
	/* ---- fleet (issue 20): where hibernation images live (resolved,
	 * checked at open): STATE/images, or bh_config.images_dir, which other
	 * engines share (images_shared): there only the images this store
	 * names are this engine's to delete or list ---- */
	char *images_dir;
	bool images_shared;
	struct runtime runtimes[BH_TIER_COUNT]; /* indexed by tier; ops NULL if none */
	struct tier_slot tiers[BH_TIER_COUNT];
	int proofs_running;
	struct bh_timer *proof_watch; /* the "still proving" reminder */
	struct sandbox *sandboxes;
	/* ---- density: host uid ranges (uid_region.c) ---- */
	uint32_t uid_region;   /* the region claimed (or, not running sandboxes, the key's) */
	int uid_region_fd;     /* its claim's lock, -1: none */
	char *uid_region_dir;  /* a test hook's instead of UID_REGION_DIR (NULL: that) */
	uint8_t uid_slots[UID_REGION_SLOTS];
	struct bh_timer *tick;
	struct pending_exec *pending;
	struct pending_exec *running; /* fresh calls holding a place (admission) */
	bool closing;
	bool reprove;
	uint32_t prove_tiers; /* bh_config's: 0 proves every tier */
	bool inspect_only;
	bool read_only;    /* bh_config's: nothing created, written or locked exclusively */
	int state_fd;      /* the state directory, checked (state_dir.c) */
	char *evidence_dir;
	char *drop_wall;
	char *drop_wall_after_proof; /* test hook, see testhook.h */
	uint32_t memory_limit_mb, pids_limit;
	struct bh_store *store;
	char *store_path;
	bool keep_content;
	uint32_t relay_ms; /* stream: what cells ask their init (0: no OUTPUT frames) */
	char *crash_at;
	long crash_count;
	struct bh_policy policy;
	struct bh_session *sessions;
	struct bh_timer *checkpoint, *checkpoint_soon;
	struct bh_timer *prune;
	pid_t warden_pid;  /* 0: none (inspect-only engines have none) */
	int warden_pidfd;
	struct pool_slot *pool;    /* the warm pool (pool.c) */
	struct bh_timer *pool_retry;
	/* ---- usage (usage.c) ---- */
	int64_t started_unix_ms;   /* the engine's uptime starts here */
	uint32_t usage_ticks;      /* loop ticks: which slice of the sessions is sampled */
	bool reclaiming;           /* ---- density: past the high watermark (reclaim.c) ---- */
	bool usage_off;            /* test hook: no sampler (the bench's control) */
	/* ---- light: what an operator's overview shows changed (B27) ---- */
	uint64_t generation;       /* bumped by engine_changed */
	int64_t usage_sampled_ms;  /* the last usage pass's wall time (0: none yet) */
	/* ---- inflight (leftovers.c) ---- */
	bool keep_leftovers;       /* bh_config's: a dead engine's leftovers are evidence */
	size_t bounded_reaped;     /* ---- report: older dead engines' findings reaped at open */
	struct bh_leftovers leftovers; /* what it left, as found at open */
	/* ---- egress (egress.c) ---- */
	const struct bh_egress_ops *egress; /* bh_config's; NULL: no broker */
	void *egress_arg;
	struct egress_state *egress_q;      /* the broker's notes and counts */
};

/* ---- light ---- */
/* Something a session list shows changed (a session opened, changed state,
 * took a call, was forgotten): an operator's long poll wakes for it. */
static inline void engine_changed(bh_engine *e)
{
	e->generation++;
}
/* The store a history reads (history.c), for history_leaks.c. */
struct bh_store *history_store(bh_history *h);

/* ---- inflight: a dead engine's leftovers (leftovers.c) ---- */
/* Before anything is touched at open (tell: logged), and again after each
 * reap: what the previous engine left, and still is there. */
void leftovers_survey(bh_engine *e, bool tell);
/* The intents no held session is running: calls a dead engine was
 * running, as findings (bh_engine_leaks). */
void leftovers_interrupted(bh_engine *e, struct bh_leak **v, size_t *n);
/* At a take-over: those calls settled as reaped (their intents kept). */
void leftovers_reap_interrupted(bh_engine *e);
/* Kept leftovers keep their host uid ranges: no new sandbox of ours is
 * given one a dead engine's sandbox still runs as (sandbox.c). */
void leftovers_hold_uids(bh_engine *e);
/* ---- report: a crash loop's leftovers, bounded (leftovers_bound.c) ----
 * Keeping: the findings of dead engines older than the
 * BH_LEFTOVERS_KEPT_ENGINES newest are captured, then reaped. */
void leftovers_bound(bh_engine *e);
/* ---- density (uid_region.c): the engine's host uid region, claimed for
 * its life so no live engine shares a uid with another's sandboxes ---- */
/* claim false (an engine that runs no sandboxes): only the key's region,
 * for reading what a state directory holds. */
int uid_region_claim(bh_engine *e, bool claim, bh_error **err);
void uid_region_release(bh_engine *e);
int uid_slot_of(bh_engine *e, uint32_t host_uid_base);
/* The slot of the uid range a bundle of ours maps (-1: none of this
 * engine's, or no bundle that says). */
int bundle_uid_slot(bh_engine *e, const char *name);
void uid_slot_hold(bh_engine *e, int slot);

/* The provider name records and answers carry for a tier (vocab.c). */
const char *engine_provider(enum bh_tier tier);
/* A fresh call's record (a Run's snippet or project: no session, no chain),
 * stamped from its request and result fields and sealed (exec.c). */
struct bh_request_fields;
struct bh_result_fields;
void engine_seal_fresh_record(bh_engine *e, enum bh_tier tier, const struct bh_request_fields *rq,
			      const struct bh_result_fields *rs, int64_t started_unix_ms,
			      struct bh_record *rec);

/* ---- the warm pool (pool.c) ---- */
/* Opens sandboxes until each pooled tier has pool_size (no-op until proven). */
void pool_fill(bh_engine *e);
/* A ready never-used sandbox of the tier, now the caller's, or NULL. */
struct sandbox *pool_take(bh_engine *e, enum bh_tier tier);
void pool_close_all(bh_engine *e);
void pool_free(bh_engine *e);

/* ---- admission (admission.c): the one rule every new sandbox passes ---- */
/* ADMIT_ADOPT (fleet): a hibernated session another engine left takes a
 * place here, and no memory until it wakes. */
enum admit_kind { ADMIT_SESSION, ADMIT_RUN, ADMIT_POOL, ADMIT_WAKE, ADMIT_ADOPT };
struct admit_ask {
	enum admit_kind kind;
	const char *principal; /* who asks ("" the embedding host); none for the pool */
	enum bh_tier tier;     /* a session's: a ready pooled sandbox of it changes hands */
};
/* 0, or -1 with a capacity refusal in err (nothing may be created). */
int admit_sandbox(bh_engine *e, const struct admit_ask *ask, bh_error **err);
/* How many sandboxes with processes the budget admits: its size (times the
 * overcommit) over one sandbox's limit. */
size_t admission_budget_sandboxes(const bh_engine *e);
/* ---- density: n children of a branch, the parent's principal's and
 * owner's, hibernated (a place each, no memory until they wake): 0, or -1
 * with a capacity refusal ---- */
int admit_branch(bh_engine *e, const char *principal, const char *owner, unsigned n, bh_error **err);
/* max_per_principal's BH_FAIR_SHARE: a quarter of the sandboxes the budget
 * and max_sessions admit, at least 1. */
uint32_t admission_fair_share(uint32_t max_sessions, uint32_t memory_budget_mb,
			      uint32_t memory_limit_mb);
/* What holds places, each holder counting its own: places (every live
 * sandbox), mine (the principal's), memory (those with processes). */
struct census {
	size_t places, mine, memory;
};
void sessions_census(bh_engine *e, const char *principal, struct census *c);
size_t sessions_owned(bh_engine *e, const char *principal, const char *owner);
void execs_census(bh_engine *e, const char *principal, struct census *c);
void pool_census(bh_engine *e, struct census *c);
/* Closes one ready pooled sandbox for a tenant that found no room; false
 * when the pool holds none. */
bool pool_yield(bh_engine *e);

/* ---- the warden (warden.c): kills our sandboxes if we die ---- */
void warden_start(bh_engine *e);
void warden_stop(bh_engine *e);

/* Called by evidence.c when the last proof finishes, and as each tier's
 * does: the calls and sessions that waited start (exec.c). */
void engine_proofs_done(bh_engine *e);
void engine_tier_proven(bh_engine *e, enum bh_tier tier);
bool engine_tier_decided(bh_engine *e, enum bh_tier tier);

/* ---- usage (usage.c): per-session samples from the loop's tick ---- */
/* From the loop's one-second tick: every BH_USAGE_SAMPLE_MS, a sample of
 * each live session into its ring. */
void usage_tick(bh_engine *e);

/* ---- density (reclaim.c): memory given back under pressure ---- */
void reclaim_tick(bh_engine *e);
/* What every sandbox under the engine's cgroup parent uses now. */
uint64_t reclaim_used_bytes(const bh_engine *e);
uint32_t reclaim_high_pct(const bh_engine *e);
struct bh_session;
/* A call started in the session (calls a minute). */
void usage_note_call(struct bh_session *s);
/* The init's disk figure from a DONE frame. */
void usage_note_disk(struct bh_session *s, uint64_t bytes);

#endif
