/* User code that tries to outlive its cell, for the init-boundary cases
 * (test_init_boundary.c uploads it into a sandbox). It first leaves the
 * caller's session, then, by mode:
 *   chain          forks and lets the parent exit, forever: each of its
 *                  processes lives for one fork() (tens of microseconds)
 *   zombie-leader  its main thread exits and a second thread runs on, so
 *                  /proc/<pid>/stat says Z (zombie) of a process that runs
 * Either way it writes the wall-clock time to the file named last (through
 * a rename, never half written) every few milliseconds, so a later cell can
 * tell whether it still runs. Static: a sandbox has only the host's /usr.
 * Never run it outside a sandbox: only the end of its pid namespace (or a
 * kill of its whole session) stops it. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char hb_path[4096], hb_tmp[4200];

static void heartbeat(void)
{
	struct timespec ts;
	char buf[64];
	int fd, len;

	clock_gettime(CLOCK_REALTIME, &ts);
	len = snprintf(buf, sizeof buf, "%lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	fd = open(hb_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, buf, (size_t)len) == len)
		rename(hb_tmp, hb_path);
	close(fd);
}

__attribute__((noreturn)) static void chain(void)
{
	for (unsigned long n = 0;; n++) {
		pid_t p = fork();

		if (p > 0)
			_exit(0);
		if (p < 0) { /* at the pids limit for a moment */
			usleep(1000);
			continue;
		}
		if ((n & 31) == 0)
			heartbeat();
	}
}

static void *beat(void *arg)
{
	(void)arg;
	for (;;) {
		heartbeat();
		usleep(5000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 3 || strlen(argv[2]) >= sizeof hb_path)
		return 2;
	snprintf(hb_path, sizeof hb_path, "%s", argv[2]);
	snprintf(hb_tmp, sizeof hb_tmp, "%s.tmp", argv[2]);
	if (fork() != 0)
		_exit(0);
	setsid();
	if (!strcmp(argv[1], "chain"))
		chain();
	if (strcmp(argv[1], "zombie-leader") || pthread_create(&t, NULL, beat, NULL) != 0)
		return 2;
	pthread_exit(NULL);
}
