/* The conversation manager: one sandbox per agent run, kept warm for the
 * run and reused by every call it makes (plimsoll's CodeSandboxes, in C).
 *
 * An agent framework calls warm() when a turn starts (the open starts; the
 * turn does not wait for it), run() for every executeCode call (the key's
 * sandbox, opened if it is not), and dispose() right before the run
 * suspends or when it completes. Keys must come from verified identities
 * (the run id, the signed-in user), never from the model.
 *
 * Caps are enforced here, in the process, before anything opens: opening a
 * key's sandbox when its owner already holds max_per_owner (or the manager
 * holds max_sessions) closes the least recently used idle entry; when every
 * entry is busy the call is refused with capacity. A warm never closes
 * another sandbox. The daemon enforces the same cap across processes with
 * the owner sent as a keyed digest (the owner's name never leaves here).
 *
 * Runs on the client's (or the engine's) loop: the host drives it as usual
 * and calls bh_manager_process_timeout() when bh_manager_timeout_ms() says
 * so (idle closes), or uses bh_manager_wait(), which does both. */
#ifndef BH_MANAGER_H
#define BH_MANAGER_H

#include "client.h"

typedef struct bh_manager bh_manager;

struct bh_manager_options {
	/* Where the sandboxes are: a daemon through a client, or an engine in
	 * this process (exactly one; borrowed, they outlive the manager). */
	bh_client *client;
	bh_engine *engine;
	const char *principal;      /* engine: who the sessions belong to ("" when NULL) */
	const char *token;          /* the client's token: keys the owner digest (NULL: none) */
	enum bh_tier floor;         /* BH_TIER_UNKNOWN: kernel, the safe default */
	uint32_t languages;         /* interpreters to start at open; 0: python and javascript */
	uint32_t idle_close_ms;     /* close an entry idle this long; 0: never (default 10 min
				       when use_defaults) */
	uint32_t max_per_owner;     /* 0: none */
	uint32_t max_sessions;      /* 0: none */
	uint32_t lifetime_ms;       /* forwarded to OpenSession; 0: the daemon's */
	size_t max_output_chars;    /* per stream; 0: 16,000 */
	int32_t timeout_ms;         /* per call; 0: the daemon's default */
	/* ---- profiles: the egress profile a conversation's sandbox holds from
	 * open to close (OpenSession's grantProfile; it must allow sessions).
	 * grant_profile_for, when set, names it per conversation (NULL: none)
	 * and is asked at each open; else grant_profile is every conversation's
	 * (NULL: none). The profile is the operator's to define and the
	 * server's to pick, never the model's. */
	const char *grant_profile;
	const char *(*grant_profile_for)(void *arg, const char *key, const char *owner);
	void *grant_profile_arg;
};
/* plimsoll's defaults: kernel floor, both languages, idle close 10 min,
 * 3 sandboxes per owner, 16,000 characters per stream. */
void bh_manager_defaults(struct bh_manager_options *o);

/* What the executeCode tool answers (the model sees this). */
struct bh_exec_output {
	enum bh_language language;
	int exit_code;
	bool timed_out;
	char *stdout_text, *stderr_text;
	bool truncated;             /* a stream was cut, by the sandbox or here */
	bool state_kept;            /* the interpreter and the sandbox live on */
	bool fresh_interpreter;     /* this call started the interpreter */
	bool files_persist;         /* /work is kept for the next call */
	bool fresh_sandbox;         /* the first answered call in a newly opened sandbox */
	char isolation[16];
	char record_sha256[65];
	bool retried;               /* refused as ended, then run once in a new sandbox */
};
void bh_exec_output_free(struct bh_exec_output *o);
/* The answer as the AI SDK tool returns it (camelCase JSON, plimsoll's
 * ExecuteCodeOutput); the caller frees it. */
char *bh_exec_output_json(const struct bh_exec_output *o);

/* The tool's answer for one checked SessionRun answer (the manager's own
 * rules: state kept unless the interpreter or the session ended, at most
 * max_chars characters per stream, 0: 16,000). */
void bh_exec_output_from(const struct wire_session_run_response *res, enum bh_language language,
			 bool fresh_sandbox, size_t max_chars, struct bh_exec_output *out);

struct bh_exec_input {
	enum bh_language language;
	const char *code;
	const struct bh_file *files; /* written into /work first */
	size_t n_files;
};

int bh_manager_new(const struct bh_manager_options *o, bh_manager **out,
		   struct bh_client_error **err);
/* Forgets every entry without closing (dispose_all first to close them). */
void bh_manager_free(bh_manager *m);

/* Starts opening key's sandbox and returns at once. Nothing happens when the
 * key already has one (or one opening) or a cap is reached. */
void bh_manager_warm(bh_manager *m, const char *key, const char *owner);

/* One executeCode call in key's sandbox. The callback gets the answer or an
 * error whose message says whether anything ran. */
typedef void (*bh_manager_run_cb)(void *arg, struct bh_exec_output *out,
				  const struct bh_client_error *err);
int bh_manager_run_async(bh_manager *m, const char *key, const char *owner,
			 const struct bh_exec_input *in, bh_manager_run_cb cb, void *arg,
			 struct bh_client_error **err);
/* The blocking form: out is the caller's (bh_exec_output_free). */
int bh_manager_run(bh_manager *m, const char *key, const char *owner,
		   const struct bh_exec_input *in, struct bh_exec_output *out,
		   struct bh_client_error **err);

/* Forgets key at once and closes its sandbox (after an open in flight
 * finishes; calls in flight keep their answers). */
void bh_manager_dispose(bh_manager *m, const char *key);
void bh_manager_dispose_all(bh_manager *m);

/* Milliseconds until the next idle close is due (-1: none). */
int bh_manager_timeout_ms(bh_manager *m);
void bh_manager_process_timeout(bh_manager *m);
/* Runs the client's loop and the idle timers until *done or timeout_ms
 * (-1: until *done); returns -1 when it stopped without *done. */
int bh_manager_wait(bh_manager *m, const bool *done, int timeout_ms);

/* What the manager holds, for views and tests. */
struct bh_manager_entry {
	const char *key, *owner;
	bool opening, ready;
	unsigned busy;              /* calls in flight */
	const char *fingerprint;    /* "" while opening */
};
size_t bh_manager_entries(bh_manager *m, struct bh_manager_entry *out, size_t max);

/* The owner as OpenSession sends it: hex HMAC-SHA256 of the owner under
 * SHA-256("bulkhead owner digest v1\n" || token), so the name never leaves
 * the process and the daemon, which keeps only a token digest, cannot test
 * guesses. */
void bh_owner_digest(const char *token, const char *owner, char out[65]);

#endif
