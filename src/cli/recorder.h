/* `bulkhead record`: plays a scripted conversation against a real daemon
 * and writes the scenario the console replays (docs/scenarios.md). */
#ifndef BH_CLI_RECORDER_H
#define BH_CLI_RECORDER_H

#include "cli.h"
#include "manager.h"
#include "scenario.h"

#include <cjson/cJSON.h>

#include <sys/types.h>
#include <time.h>

struct rec_daemon {
	char dir[4096];        /* the recording's temporary directory */
	char sock[4200], state[4200];
	char tier[16];         /* --tier */
	const char *args[24];  /* more `serve` arguments, from the script */
	size_t n_args;
	char isolation[16];    /* what Describe stated */
	/* ---- egress: a named caller (profiles are never granted to an open
	 * daemon's anonymous one): serve --clients with this token, not --open */
	char clients[4200];
	char token[128];       /* "" for an open daemon */
	pid_t pid;
};

int rec_daemon_start(struct rec_daemon *d);
void rec_daemon_stop(struct rec_daemon *d);
void rec_daemon_kill(struct rec_daemon *d);

#define MAX_WORKERS 4

/* One agent worker process: its own client and conversation manager. */
struct worker {
	char name[16];
	bh_client *c;
	bh_manager *m;
};

/* ---- hops: what crossed the wire during a step (record_path.c) ---- */
struct rec_exchange {
	char procedure[40];
	char *request, *answer; /* as sent and received; session ids redacted */
	long status;		/* 0: no answer */
};
struct rec_tap {
	struct rec_exchange ex[32];
	size_t n;
};

struct recording {
	const char *script_path;
	cJSON *script;
	struct rec_daemon d;
	struct worker workers[MAX_WORKERS];
	size_t n_workers;
	bh_client *op;             /* the operator's client (not counted) */
	uint64_t base_calls[3];    /* counts of clients that are gone */
	const char *floor;
	struct bh_manager_options mo;
	struct timespec t0;
	cJSON *steps;
	int turn;
	bool failed;
	struct rec_tap tap; /* ---- hops ---- every client's exchanges since the step began */
	bool daemon_dead;   /* killed by the script and not started again */
	struct rec_egress *egress; /* ---- egress ---- NULL: the script has no "egress" */
};

/* A script's member as a string or a number, or dflt. */
const char *rec_str(const cJSON *o, const char *key, const char *dflt);
double rec_num(const cJSON *o, const char *key, double dflt);

/* The script read (record_script.c): parsed, its steps checked before any
 * daemon starts, the recording set up from it; and the scenario written
 * (it must load, scenario_save) once every step has played. */
cJSON *rec_load_script(const char *path);
int rec_setup(struct recording *r);
int rec_write_scenario(struct recording *r, const char *out_path);

/* ---- hops: each step's path, hop by hop, from what happened (record_path.c) ---- */
/* bh_client_set_tap's callback: arg is the recording's struct rec_tap. */
void rec_tap_on(void *arg, const char *procedure, const char *request, long status, const char *answer);
void rec_tap_reset(struct rec_tap *t);
/* The last exchange of procedure since the reset, or NULL. */
const struct rec_exchange *rec_tap_last(const struct rec_tap *t, const char *procedure);
/* The words of a refusal's answer ({"code", "message"}), or the body. */
const char *rec_answer_message(const struct rec_exchange *x, char *buf, size_t n);

/* What the recorder saw of one executeCode call, for its path. */
struct rec_call_seen {
	const char *key, *owner, *language, *code, *floor, *tier;
	const struct bh_exec_input *in;
	bool had_entry, was_opening; /* the manager held key's sandbox (still opening) before */
	char fp_before[65], fp_after[65];
	long long opened, ran, closed; /* OpenSession, SessionRun, CloseSession sent during it */
	const struct bh_exec_output *out; /* NULL: not answered */
	const struct bh_client_error *err;
	enum scenario_hop stopped; /* SCENARIO_HOP_NONE when answered or it may have run */
	const struct rec_tap *tap;
};
/* The call's "path": down from the model to where it stopped, and back up. */
cJSON *rec_call_path(const struct rec_call_seen *c);

/* A lifecycle hook's: warm (turn_start) or dispose (suspend, complete). */
struct rec_hook_seen {
	const char *hook, *key, *floor;
	bool had_entry, holds_after;
	char fp_before[65], fp_after[65];
	const struct rec_tap *tap;
};
/* Its hops (into lit) and its path; *stopped where a refused open stopped. */
cJSON *rec_hook_path(const struct rec_hook_seen *h, cJSON *lit, enum scenario_hop *stopped);

/* An operator's action on a sandbox through the daemon: its hops into lit. */
cJSON *rec_operator_path(const char *action, const char *fp, const char *said, bool daemon_dead,
			 const struct rec_tap *tap, cJSON *lit);

/* One of n calls sent at once on one session; x is its SessionRun exchange. */
cJSON *rec_concurrent_path(size_t i, size_t n, const char *code, const struct rec_exchange *x,
			   enum scenario_outcome outcome, const char *msg);

/* ---- egress and projects: the step helpers cmd_record.c shares ---- */
cJSON *rec_step_new(struct recording *r, const cJSON *src, enum scenario_kind kind);
void rec_step_finish(struct recording *r, cJSON *s, cJSON *lit, enum scenario_hop stopped_at);
struct worker *rec_worker(struct recording *r, const char *name);
/* One hop of a path (record_path.c's, for the other writers of paths). */
void rec_visit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
	       const char *wire_text, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void rec_exchange_down(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x, const char *words);
void rec_exchange_up(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x, const char *words);

/* ---- egress: a brokered upstream for the recording (record_egress.c) ---- */
/* The script's "egress" ({"upstream": {addr, port}, "credential": {env,
 * value}, "profiles": [lines]}): a test CA and a TLS upstream of the
 * recording's (upstream.py beside the script), the credential in the
 * daemon's environment only, `serve --profiles --upstream-ca`. -1 when the
 * script's block is wrong or the upstream does not start. */
int rec_egress_setup(struct recording *r);
/* After the daemon answers: the events so far are the recording's start. */
int rec_egress_begin(struct recording *r);
/* A step's egress events (waiting for the step's "egress_events", default
 * none) told at the deepest hop its path went down to, with what the
 * upstream saw: a hook's session holding its profile, a call's brokered
 * requests (the events and the upstream's lines on the sandbox hop's wire). */
void rec_egress_annotate(struct recording *r, const cJSON *src, cJSON *path);
/* Whether text holds the credential in any form a scrub would miss (raw,
 * base64, hex, URL-encoded): a recording that does is never written. */
bool rec_egress_leaks(const struct recording *r, const char *text);
void rec_egress_stop(struct recording *r);
/* The profile the manager names for a conversation (the script's
 * manager.grant_profiles by run key, else manager.grant_profile). */
const char *rec_grant_profile_for(void *arg, const char *key, const char *owner);

/* ---- project: a Run with a project payload (record_project.c) ---- */
int rec_do_project(struct recording *r, const cJSON *src, const cJSON *project);

int cmd_record(int argc, char **argv);

#endif
