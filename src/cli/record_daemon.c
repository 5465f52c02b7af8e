/* The recorder's own daemon: `bulkhead serve` from this very binary, on a
 * state directory and unix socket of the recording's, open mode (the
 * recorder is its only caller), stopped by pid. A scenario is recorded
 * against the real daemon so the procedures it counts are the ones an
 * agent's worker would send. */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int rec_daemon_start(struct rec_daemon *d)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		cli_error("cannot find this binary: %s", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	snprintf(d->sock, sizeof d->sock, "%s/sock", d->dir);
	snprintf(d->state, sizeof d->state, "%s/state", d->dir);
	char log[4200];
	snprintf(log, sizeof log, "%s/daemon.log", d->dir);
	unlink(d->sock);
	const char *argv[48];
	size_t a = 0;
	argv[a++] = self;
	argv[a++] = "serve";
	argv[a++] = "--state";
	argv[a++] = d->state;
	argv[a++] = "--socket";
	argv[a++] = d->sock;
	if (*d->token) { /* ---- egress: the script's principal ---- */
		argv[a++] = "--clients";
		argv[a++] = d->clients;
	} else {
		argv[a++] = "--open";
	}
	argv[a++] = "--tier";
	argv[a++] = d->tier;
	for (size_t i = 0; i < d->n_args && a < 46; i++)
		argv[a++] = d->args[i];
	argv[a] = NULL;
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		execv(self, (char **)argv);
		_exit(127);
	}
	d->pid = pid;
	/* Ready when Describe answers (the tiers are proven by then). */
	struct bh_client_options co = {.target = d->sock, .token = d->token};
	for (int waited = 0; waited < 120000; waited += 100) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			d->pid = 0;
			cli_error("the recording's daemon exited at start; its log is %s", log);
			return -1;
		}
		struct stat sb;
		if (stat(d->sock, &sb) == 0) {
			bh_client *c = NULL;
			struct bh_client_error *err = NULL;
			struct wire_describe_response info;
			if (bh_client_new(&co, &c, &err) == 0 && bh_client_describe(c, &info, &err) == 0) {
				snprintf(d->isolation, sizeof d->isolation, "%s", info.isolation);
				wire_describe_response_free(&info);
				bh_client_free(c);
				return 0;
			}
			bh_client_error_free(err);
			bh_client_free(c);
		}
		sleep_ms(100);
	}
	cli_error("the recording's daemon did not answer within 2 minutes; its log is %s", log);
	rec_daemon_kill(d);
	return -1;
}

/* SIGTERM: a graceful stop that closes what it holds. */
void rec_daemon_stop(struct rec_daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGTERM);
	int st;
	for (int i = 0; i < 600 && waitpid(d->pid, &st, WNOHANG) == 0; i++)
		sleep_ms(100);
	if (waitpid(d->pid, &st, WNOHANG) == 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, &st, 0);
	}
	d->pid = 0;
}

/* kill -9: what a crashed worker looks like from outside. */
void rec_daemon_kill(struct rec_daemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	d->pid = 0;
}
