/* Minting the credential at hold time, on the host: it never crosses into
 * the sandbox, and no message here ever holds it. */
#include "broker_priv.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CREDENTIAL_MAX (64u * 1024u)
#define MINT_TIMEOUT_MS 10000

static char *trimmed(const char *p, size_t n)
{
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return xstrndup(p, n);
}

static int from_file(const char *path, char **out, const char **why)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		*why = "the credential file could not be opened";
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "the credential file is not a regular file";
		return -1;
	}
	/* Re-checked here as well as when the profiles were loaded: the file
	 * may have changed since. */
	if ((st.st_mode & 077) || (st.st_uid != 0 && st.st_uid != geteuid())) {
		*why = "the credential file is readable by others or not ours";
		return -1;
	}
	char buf[CREDENTIAL_MAX + 1];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof buf - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = "the credential file could not be read";
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > CREDENTIAL_MAX) {
			*why = "the credential file is over 64 KiB";
			return -1;
		}
	}
	*out = trimmed(buf, n);
	return 0;
}

static int from_command(char *const *argv, char **out, const char **why)
{
	if (!argv || !argv[0] || argv[0][0] != '/') {
		*why = "the credential command is not an absolute path";
		return -1;
	}
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		*why = "no pipe for the credential command";
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		*why = "the credential command could not be started";
		return -1;
	}
	if (pid == 0) {
		/* Only async-signal-safe calls between fork and exec. */
		int devnull = open("/dev/null", O_RDWR);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(pipefd[1], 1) < 0 ||
		    dup2(devnull, 2) < 0)
			_exit(127);
		syscall(SYS_close_range, 3, ~0U, 0);
		static char *const envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(pipefd[1]);
	char buf[CREDENTIAL_MAX + 1];
	size_t n = 0;
	uint64_t deadline = now_mono_ms() + MINT_TIMEOUT_MS;
	bool failed = false;
	for (;;) {
		uint64_t now = now_mono_ms();
		if (now >= deadline) {
			*why = "the credential command took over 10 s";
			failed = true;
			break;
		}
		struct pollfd pfd = {.fd = pipefd[0], .events = POLLIN};
		int pr = poll(&pfd, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t r = read(pipefd[0], buf + n, sizeof buf - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n > CREDENTIAL_MAX) {
			*why = "the credential command wrote over 64 KiB";
			failed = true;
			break;
		}
	}
	close(pipefd[0]);
	if (failed)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (failed)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		*why = "the credential command failed";
		return -1;
	}
	*out = trimmed(buf, n);
	return 0;
}

int credential_mint(const struct bh_egress_credential *c, char **out, const char **why)
{
	int r;
	switch (c->source) {
	case BH_EGRESS_CREDENTIAL_NONE:
		*out = xstrdup("");
		return 0;
	case BH_EGRESS_CREDENTIAL_FILE:
		r = from_file(c->file ? c->file : "", out, why);
		break;
	case BH_EGRESS_CREDENTIAL_ENV: {
		const char *v = c->env ? getenv(c->env) : NULL;
		if (!v || !*v) {
			*why = "the credential's environment variable is not set";
			return -1;
		}
		*out = trimmed(v, strlen(v));
		r = 0;
		break;
	}
	case BH_EGRESS_CREDENTIAL_COMMAND:
		r = from_command(c->argv, out, why);
		break;
	default:
		*why = "the credential has no known source";
		return -1;
	}
	if (r == 0 && c->source != BH_EGRESS_CREDENTIAL_NONE && !**out) {
		free(*out);
		*out = NULL;
		*why = "the credential is empty";
		return -1;
	}
	/* It goes into a header line: a CR or LF in it would add lines of
	 * its own to the upstream request. */
	for (const char *p = r == 0 ? *out : ""; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			free(*out);
			*out = NULL;
			*why = "the credential holds a control byte";
			return -1;
		}
	return r;
}
