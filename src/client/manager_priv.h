/* The conversation manager's parts: the core (manager.c) keeps entries,
 * caps, idle timers and the retry; a backend carries a session's open,
 * calls and close to where the sandboxes are — a daemon through the C
 * client (manager_client.c) or an engine in this process
 * (manager_engine.c). */
#ifndef BH_MANAGER_PRIV_H
#define BH_MANAGER_PRIV_H

#include "client_priv.h"
#include "manager.h"

struct call;

struct entry {
	bh_manager *m;
	char *key, *owner;         /* owner NULL when the caller named none */
	char owner_digest[65];
	char *grant_profile;       /* ---- profiles: the profile it opened with; NULL: none */
	void *h;                   /* the backend's session handle; NULL until open */
	bool opening, disposed, closing, answered_once;
	unsigned busy;
	unsigned pinned;           /* inside a backend call that may answer at once */
	uint64_t used;             /* the LRU clock at the last call's start or end */
	uint64_t idle_since_ms;
	struct call *waiting, *waiting_tail; /* calls that arrived while it opened */
	struct entry *next;
};

struct call {
	bh_manager *m;
	struct entry *e;
	char *key, *owner;
	enum bh_language language;
	char *code;
	struct bh_file *files;
	size_t n_files;
	bool retried;
	bh_manager_run_cb cb;
	void *arg;
	struct call *next;
};

/* What a backend does; each answers through the mgr_* functions below,
 * possibly before its own call returns. */
struct mgr_backend {
	int (*open)(bh_manager *m, struct entry *e, struct bh_client_error **err);
	int (*run)(bh_manager *m, struct call *c, struct bh_client_error **err);
	int (*close)(bh_manager *m, struct entry *e, struct bh_client_error **err);
	void (*release)(bh_manager *m, struct entry *e); /* forget e->h */
	const char *(*fingerprint)(bh_manager *m, const struct entry *e);
	bool (*stopped)(bh_manager *m, const struct entry *e); /* no checkable chain any more */
	/* Runs the loop until *done or t ms (-1: no limit); false when nothing
	 * could ever set *done. */
	bool (*wait)(bh_manager *m, const bool *done, int t);
};
extern const struct mgr_backend mgr_client_backend, mgr_engine_backend;

struct bh_manager {
	struct bh_manager_options o;
	const struct mgr_backend *be;
	char *token;
	struct entry *live;        /* keyed entries */
	struct entry *leaving;     /* disposed, waiting for their last callback */
	uint64_t clock;
};

/* The backend's answers. h is the new session (err NULL), or err. */
void mgr_opened(struct entry *e, void *h, const struct bh_client_error *err);
/* out is filled but for fresh_sandbox and retried; ended: this call ended
 * the session. The core frees what out holds. */
void mgr_answered(struct call *c, struct bh_exec_output *out, bool ended);
void mgr_failed(struct call *c, const struct bh_client_error *err);
void mgr_closed(struct entry *e);

/* The tool's text of a stream (manager.c): invalid UTF-8 as U+FFFD, at most
 * max characters, never a character cut in two. */
char *mgr_text(const uint8_t *p, size_t n, size_t max, bool *cut);

#endif
