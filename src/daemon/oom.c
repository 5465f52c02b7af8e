/* The daemon holds every tenant's sessions: when the host runs out of memory
 * the kernel must pick a sandbox (oomScoreAdj 500, bundle.c), never us.
 * Going below 0 needs CAP_SYS_RESOURCE (some hosts' root lacks it, this
 * project's build machines among them); then we go as low as we may and
 * say so. Children inherit the value: the warden shares it on purpose (it
 * must outlive a crash to clean up), and both runtimes set every sandbox
 * process to the bundle's own value. */
#include "daemon_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_adj(void)
{
	char buf[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(buf) : 0;
}

static int write_adj(int adj)
{
	char buf[16];
	int n = snprintf(buf, sizeof buf, "%d", adj);
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ret = write(fd, buf, (size_t)n) == n ? 0 : -1;
	int saved = errno;
	close(fd);
	errno = saved;
	return ret;
}

void daemon_keep_out_of_oom(void)
{
	int was = read_adj();
	if (was <= DAEMON_OOM_SCORE_ADJ)
		return;
	if (write_adj(DAEMON_OOM_SCORE_ADJ) == 0)
		return;
	int why = errno;
	/* Without the capability the floor is where the capability last left
	 * it, 0 for processes started the usual way. */
	if (was > 0 && write_adj(0) < 0)
		why = errno;
	daemon_log(BH_LOG_WARN, NULL,
		   "cannot lower our oom_score_adj to %d (%s%s); it is %d, sandboxes are at 500",
		DAEMON_OOM_SCORE_ADJ, strerror(why),
		why == EACCES ? ": going below 0 needs CAP_SYS_RESOURCE" : "", read_adj());
}
