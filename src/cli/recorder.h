/* `bulkhead record`: plays a scripted conversation against a real daemon
 * and writes the scenario the console replays (docs/scenarios.md). */
#ifndef BH_CLI_RECORDER_H
#define BH_CLI_RECORDER_H

#include "cli.h"

#include <sys/types.h>

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

int cmd_record(int argc, char **argv);

#endif
