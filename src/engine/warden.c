/* Starting and stopping the warden (src/init/warden.c): a process beside the
 * engine that kills the engine's sandboxes if the engine dies without
 * closing them. It must outlive us, so it is not spawned like the runtime
 * commands (those die with the engine by PDEATHSIG): it gets its own session,
 * no descriptors of ours, and a default signal state. */
#include "engine_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static void exec_warden(const char *init, const char *engine_pid, const char *state_dir,
			const char *parent, int region_fd)
{
	setsid();
	/* From inside the state directory, so no process on the host carries
	 * its path in its command line (tests and operators grep for that to
	 * find a dead engine's runtime processes). */
	if (chdir(state_dir) < 0)
		_exit(127);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	/* The host uid region's claim (uid_region.c) goes with it as fd 3,
	 * unused but open: the region stays this engine's until the warden
	 * has stopped its sandboxes. */
	unsigned first_closed = 3u;
	if (region_fd == 3 ? fcntl(3, F_SETFD, 0) == 0 : region_fd > 3 && dup2(region_fd, 3) == 3)
		first_closed = 4u;
	syscall(SYS_close_range, first_closed, ~0u, 0u);
	/* The init's copy lives in the state directory: name it relatively. */
	size_t n = strlen(state_dir);
	if (!strncmp(init, state_dir, n) && init[n] == '/')
		init += n + 1;
	const char *argv[BH_WARDEN_ARGC + 1] = {
		[0] = init,
		[BH_WARDEN_ARG_MODE] = BH_INIT_WARDEN,
		[BH_WARDEN_ARG_ENGINE_PID] = engine_pid,
		[BH_WARDEN_ARG_LOCK] = "lock",
		[BH_WARDEN_ARG_CGROUP_PARENT] = parent,
	};
	execv(init, (char *const *)argv);
	_exit(127);
}

void warden_start(bh_engine *e)
{
	char pid[24];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	pid_t w = fork();
	if (w < 0) {
		bh_log(e, BH_LOG_WARN, "cannot start the warden (fork: %s): sandboxes left by a "
				       "crash wait for the next engine or `bulkhead gc`",
		       strerror(errno));
		return;
	}
	if (w == 0)
		exec_warden(e->init_path, pid, e->state_dir, e->cg.parent, e->uid_region_fd);
	e->warden_pidfd = (int)syscall(SYS_pidfd_open, w, 0);
	e->warden_pid = w;
	bh_log(e, BH_LOG_DEBUG, "warden %d watches this engine", (int)w);
}

/* At a graceful close, after every sandbox ended: nothing is left to guard. */
void warden_stop(bh_engine *e)
{
	if (e->warden_pid <= 0)
		return;
	if (e->warden_pidfd >= 0) {
		/* Through the pidfd: the loop's sweep may have reaped it already,
		 * and a recycled pid must not be signalled. */
		syscall(SYS_pidfd_send_signal, e->warden_pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		waitid(P_PIDFD, (id_t)e->warden_pidfd, &si, WEXITED);
		close(e->warden_pidfd);
	}
	e->warden_pidfd = -1;
	e->warden_pid = 0;
}
