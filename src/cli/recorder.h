/* `bulkhead record`: plays a scripted conversation against a real daemon
 * and writes the scenario the console replays (docs/scenarios.md). */
#ifndef BH_CLI_RECORDER_H
#define BH_CLI_RECORDER_H

#include "cli.h"
#include "manager.h"

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

int cmd_record(int argc, char **argv);

#endif
