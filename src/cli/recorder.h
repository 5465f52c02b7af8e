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

int cmd_record(int argc, char **argv);

#endif
