/* Sessions inside the engine: the struct every session file works on, the
 * operations queued on it, and the functions the files share. A session's
 * state changes only through set_state (session.c); it ends only through
 * end_session; it is freed only by session_free.
 *
 * Every fallible function of these files requires its err argument (and
 * asserts it). The public calls keep bulkhead.h's promise that err may be
 * NULL at their own door: each that passes err on begins with
 *	cleanup_error bh_error *unasked = NULL;
 *	err = err ? err : &unasked;
 * so nothing inside writes through a NULL err. */
#ifndef BH_SESSION_PRIV_H
#define BH_SESSION_PRIV_H

#include "engine_priv.h"
#include "record.h"
#include "store.h"

#include <assert.h>

static inline void session_error_drop(bh_error **err)
{
	bh_error_free(*err);
}
#define cleanup_error __attribute__((cleanup(session_error_drop)))

/* The longest lifetime a session may have (bh_session_open's, and an
 * adopted one's). */
#define SESSION_MAX_LIFETIME_MS (12u * 60u * 60u * 1000u)

enum op_kind { OP_CELL, OP_LIST, OP_READ, OP_CLOSE };

struct op {
	enum op_kind kind;
	/* cell */
	struct bh_cell cell;
	char *code;
	struct bh_file *files;
	bh_cell_cb cell_cb;
	/* list / read */
	char *path;
	uint32_t max_bytes;
	bh_list_cb list_cb;
	bh_read_cb read_cb;
	/* close */
	bh_close_cb close_cb;
	void *arg;
	/* ---- project: a project run as an EXEC of the runner; code is its
	 * summary, the plan is the EXEC's stdin (session_project.c) ---- */
	struct project_call *project;
	uint64_t queued_us;
	int64_t started_unix_ms;
	/* ---- egress: a granted snippet's profile (op->cell.grant_profile
	 * points here) and its hold while it runs (0: none) ---- */
	char *grant;
	uint64_t grant_hold;
	struct op *next;
};

/* ---- stream: the session's latest cell and its output (session_output.c) ---- */
/* Kept from the cell's start until the next cell starts: the relayed
 * output while it runs (bounded by its output_cap, which the channel check
 * holds the init to), the whole kept output and the record once answered.
 * One copy per cell, whoever follows; readers borrow it. */
struct session_live {
	uint64_t sequence; /* the record's sequence it will have; 0: no cell yet */
	bool running, answered;
	enum bh_language language;
	char *code; /* a copy */
	size_t code_len;
	int64_t started_unix_ms;
	struct buf out, err;
	int exit_code;
	bool timed_out, stdout_truncated, stderr_truncated;
	uint64_t duration_us;
	char record_sha256[65];
};

struct bh_session {
	bh_engine *e;
	char id[33];
	char fp[65];
	char sandbox_name[40];
	enum bh_tier tier, floor;
	uint32_t languages;
	uint32_t lifetime_ms;
	uint32_t idle_ms; /* 0: the engine's */
	char *principal, *owner, *run_key;
	enum bh_session_state state;
	struct sandbox *sb;
	bh_session_open_cb open_cb;
	void *open_arg;
	struct op *queue; /* head is in flight when state is BH_SESSION_BUSY */
	uint64_t calls;
	char last_record[65];
	enum bh_end_reason end_reason;
	char end_detail[256];
	struct bh_record last; /* the last record handed out, for the callback */
	/* lifecycle */
	struct bh_timer *idle_t, *sleep_t, *life_t, *retention_t, *tomb_t;
	uint64_t awake_used_us, awake_since_us; /* lifetime counts awake time only */
	int64_t created_ms, last_call_ms;
	char branched_from[65];  /* ---- density: its parent's fingerprint ("" none) ---- */
	uint64_t branched_after; /* and the parent's record its chain goes on from */
	bool claimed;        /* a call named it: it is not "unclaimed" */
	bool expire_pending; /* the lifetime ran out during a call */
	uint64_t woke_us;    /* for the next cell's answer */
	int64_t hibernated_ms; /* when its image was written */
	uint64_t image_bytes;  /* and how much disk it takes */
	bh_action_cb act_cb; /* an operator's pause/resume/hibernate in flight */
	void *act_arg;
	bool from_pool;      /* its sandbox came from the warm pool */
	struct sandbox *handoff;        /* a pooled sandbox on its way (handoff_t) */
	struct bh_timer *handoff_t;
	bool end_unstored;              /* its end is not in the store yet (end_retry_t) */
	struct bh_timer *end_retry_t;
	/* ---- usage (usage.c) ---- */
	struct session_usage {
		struct bh_usage_point ring[BH_USAGE_HISTORY];
		uint8_t head, n;                /* next slot, points held */
		uint64_t cpu_ns, cpu_at_us;     /* the last sample's reading */
		uint64_t prev_ns, prev_at_us;   /* and the one before (0: none) */
		bool cpu_known;
		uint32_t cpu_millicores;        /* over the interval before it */
		uint64_t disk_bytes;            /* the last DONE's */
		int64_t disk_unix_ms;
		/* calls started, per second of the last minute: a slot is its
		 * second's when second[i] says so, else stale */
		uint32_t calls[60];
		int64_t second[60];
	} usage;
	struct session_live live; /* stream */
	/* ---- ci: attribution (session_actor.c): who the step in progress is
	 * for; its events name them ---- */
	char acting[BH_ACTOR_MAX + 1];
	char acting_rid[BH_ACTOR_MAX + 1];
	/* ---- egress (session_egress.c) ---- */
	char *egress_profile;  /* held from open to close; NULL: none */
	bool egress_open;      /* the broker listens on its socket */
	bool egress_held;      /* the profile's hold is active */
	uint64_t egress_holds; /* hold ids used (the profile's is 1) */
	uint64_t egress_requests; /* the broker's notes of it */
	char egress_last[256];    /* the last one's detail */
	/* ---- replay: calls refused before they ran (bh_session_run), so a
	 * console following calls (:live) sees them too ---- */
	uint64_t refused;
	char last_refusal[300];
	struct bh_session *next;
};

/* ---- the session and its state door (session.c) ---- */

/* A new session of this engine, its state waiting (for its tier's proof,
 * or for start_open); it is nobody's until linked into e->sessions. */
bh_session *session_create(bh_engine *e);
/* Frees what a session holds: the one place a session is freed. */
void session_free(bh_session *s);
/* The one door for a session's state: logs the change and, but for the
 * ready <-> busy of every call, the end and the wait for a proof, tells
 * the store (the row and a "state" event). */
void set_state(bh_session *s, enum bh_session_state st);
/* The same door for a change the store already knows: the intent row says
 * opening, a re-adopted row says hibernated. */
void set_state_quiet(bh_session *s, enum bh_session_state st);
/* The one place a session ends (session.c). */
void end_session(bh_session *s, enum bh_end_reason reason, const char *detail);
/* Stores the end (retried while the store cannot take it). */
void session_store_end(bh_session *s);
/* The refusal of anything asked of an ended session: why it ended. */
void session_ended_error(const bh_session *s, bh_error **err);
void session_answer_close(bh_session *s, struct op *op);
/* Answers everything queued on a session that ended: a close with how it
 * ended, anything else refused with err. */
void session_answer_queue(bh_session *s, const bh_error *err);
/* Its idle window: the one it asked for, else the engine's. */
uint32_t session_idle_ms(const bh_session *s);
void op_free(struct op *op);
/* ---- project: the doors session_project.c uses (session_call.c) ---- */
struct project_call;
void project_call_free(struct project_call *pc);
int session_enqueue(bh_session *s, struct op *op, bh_error **err);
void session_fill_record(bh_session *s, struct bh_record *rec, const struct op *op, int version);
int session_commit_extra(bh_session *s, struct bh_record *rec,
			 const struct store_record_extra *x, bh_error **err);
/* A project's answered EXEC (its DONE): judged, recorded, answered. */
void session_project_answered(bh_session *s, struct op *op, const struct done_frame *d, bool oom);
/* A project's request fields (for its record's request digest). */
void session_project_request_fields(const struct op *op, struct bh_request_fields *rf);
const struct buf *session_project_plan(const struct op *op);
/* Answers an operation with err (a close is answered by end_session). */
void op_refuse(struct op *op, const bh_error *err);

/* ---- truth ---- */
/* The fields of an info describe adds: the cell in flight, the policy
 * clocks, the tier's evidence and the end's detail (session_info.c). */
void session_info_truth(const bh_session *s, struct bh_session_info *o);

/* ---- stream (session_output.c) ---- */
/* The cell op starts: its output is relayed into s->live from now. */
void session_live_begin(bh_session *s, struct op *op);
/* It was answered (d, the record just committed) or ended without an answer
 * (d NULL). */
void session_live_end(bh_session *s, struct op *op, const struct done_frame *d,
		      const struct bh_record *rec);
void session_live_free(bh_session *s);

/* ---- calls, cells and records (session_call.c) ---- */

/* Starts the operation at the head of the queue when the sandbox is free
 * (waking it first when it sleeps). */
void session_dispatch(bh_session *s);

/* ---- opening, admission and the pool hand-off (session_open.c) ---- */

/* The session owns this sandbox; its loss ends the session. */
void session_own_sandbox(bh_session *s, struct sandbox *sb);

/* ---- the lifecycle clocks and operator actions (session_life.c) ---- */

void session_arm_idle(bh_session *s);
void session_arm_life(bh_session *s);
/* Resumes or restores a sleeping session for what waits on it. */
void session_wake(bh_session *s);
int session_hibernate(bh_session *s, bh_error **err);
/* Freezes a ready session now (its idle timer's step, taken early by the
 * memory reclaim). */
int session_pause_now(bh_session *s, bh_error **err);
/* A loop timer's callback: the hibernated session's retention ran out. */
void session_on_retention(bh_engine *e, void *arg);
/* Past the images' disk budget the oldest images go, newest last. */
void sessions_enforce_images_budget(bh_engine *e, bh_session *newest);

/* ---- re-adoption and adoption (session_recover.c, session_adopt.c) ---- */
/* A hibernated session from its row (a previous engine's on this state
 * directory, or one adopted from another engine's): it owns sb (hibernated,
 * its bundle and image on disk), is linked in and its retention armed from
 * when it went to disk; its next call restores it. */
bh_session *session_register_hibernated(bh_engine *e, struct sandbox *sb, enum bh_tier tier,
					const struct store_hibernated_row *r);

/* ---- egress (session_egress.c) ---- */
/* The sandbox is the session's now (opened, handed over, restored): the
 * broker listens on its socket and the session's profile is held. */
int session_egress_attach(bh_session *s, bh_error **err);
/* Its sandbox goes (closed, ended, hibernated): the hold is released and
 * the socket closed. */
void session_egress_detach(bh_session *s);
/* A granted call: held for the call only (hold id in *hold; 0: none). */
int session_egress_grant(bh_session *s, const char *profile, uint64_t *hold, bh_error **err);
void session_egress_ungrant(bh_session *s, uint64_t hold);
/* argv for a granted snippet in the session: the proxy variables for its
 * process only (NULL-terminated; static strings). */
const char *const *session_egress_argv(const char *const *argv, const char **out, size_t cap);

/* ---- ci: attribution (session_actor.c) ---- */
/* Who the session's step in progress is for (NULL or no name: the engine),
 * kept until the step is done (session_acting_done). */
void session_acting(bh_session *s, const struct bh_actor *who);
/* A clock of the engine's ("policy:idle", "policy:ttl" ...). */
void session_acting_policy(bh_session *s, const char *clock);
/* The step is done: what follows is the engine's until someone acts. */
void session_acting_done(bh_session *s);
/* An event of this session, naming who is acting. */
void session_event(bh_session *s, const char *kind, const char *detail);

#endif
