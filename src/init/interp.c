/* The persistent interpreters behind CELL, one per language: a cell server
 * (data/interp/<language>/cell.*) started as the sandbox user, in its own
 * session, with
 *   fd 0  /dev/null
 *   fd 1  stdout pipe  (read by the init for as long as it lives, so the
 *   fd 2  stderr pipe   output of subprocesses a cell starts is captured too)
 *   fd 3  requests from the init (one JSON line per cell)
 *   fd 4  replies to the init   (one JSON line per cell)
 * The protocol on fds 3 and 4 is described in cell.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_priv.h"
#include "base.h"

struct lang_def {
	const char *name;
	const char *binary;
	const char *server;
	const char *const argv[5];
};

static const struct lang_def langs[NLANG] = {
	[BH_CHAN_PYTHON] = {
		.name = "python",
		.binary = "/usr/bin/python3",
		.server = BH_INTERP_SANDBOX_DIR "/python/cell.py",
		/* -I: neither the environment nor the cwd (/work, where user
		 * files such as json.py live) reaches sys.path. */
		.argv = { "/usr/bin/python3", "-I", "-u",
			  BH_INTERP_SANDBOX_DIR "/python/cell.py", NULL },
	},
	[BH_CHAN_JAVASCRIPT] = {
		.name = "javascript",
		.binary = "/usr/bin/node",
		.server = BH_INTERP_SANDBOX_DIR "/javascript/cell.js",
		.argv = { "/usr/bin/node", BH_INTERP_SANDBOX_DIR "/javascript/cell.js",
			  NULL },
	},
};

const char *interp_name(int lang)
{
	return lang >= 0 && lang < NLANG ? langs[lang].name : "?";
}

int interp_available(int lang, const char **why)
{
	struct stat sb;

	if (lang < 0 || lang >= NLANG) {
		*why = "unknown language";
		return -EINVAL;
	}
	*why = langs[lang].binary;
	if (stat(langs[lang].binary, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EACCES;
	*why = langs[lang].server;
	if (stat(langs[lang].server, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EACCES;
	return 0;
}

bool interp_live(const struct interp *ip)
{
	return ip->pid > 0 && !ip->exited;
}

static void close_pair(int p[2])
{
	bh_close_now(&p[0]);
	bh_close_now(&p[1]);
}

struct interp_pipes {
	int out[2], err[2], report[2];
	int sock[2]; /* carries the init's ends of fds 3 and 4 back */
	int req_w, rep_r;
};

static void pipes_close(struct interp_pipes *p)
{
	close_pair(p->out);
	close_pair(p->err);
	close_pair(p->report);
	close_pair(p->sock);
	bh_close_now(&p->req_w);
	bh_close_now(&p->rep_r);
}

/* fds 3 and 4 are made by the child, already the sandbox user, so the
 * pipes belong to that user: Node, which has no fcntl(), makes them
 * close-on-exec by reopening them through /proc/self/fd, and that open
 * checks the pipe's owner and mode (which the init could not fix up:
 * gVisor refuses fchmod on a pipe). The init's ends come back over a
 * socketpair. Runs between fork() and execve(). */
static int make_channel(int *fdmap, void *arg)
{
	int sock = *(int *)arg;
	int req[2], rep[2], ends[2];
	char byte = 'p';
	union {
		char buf[CMSG_SPACE(sizeof(ends))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;

	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
		return -1;
	ends[0] = req[1];
	ends[1] = rep[0];
	memset(ctl.buf, 0, sizeof(ctl.buf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(ends));
	memcpy(CMSG_DATA(c), ends, sizeof(ends));
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -1;
	fdmap[3] = req[0];
	fdmap[4] = rep[1];
	return 0;
}

/* The child's two pipe ends (1), or EOF (0) when it failed before
 * sending, or -ETIMEDOUT. */
static int receive_channel(int sock, int *req_w, int *rep_r, uint64_t until)
{
	char byte;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int fds[2];

	do {
		int ret = spawn_wait_readable(sock, until);

		if (ret < 0)
			return ret;
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	} while (n < 0 && (errno == EINTR || errno == EAGAIN));
	if (n <= 0)
		return n < 0 ? -errno : 0;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(fds)))
		return -EPROTO;
	memcpy(fds, CMSG_DATA(c), sizeof(fds));
	*req_w = fds[0];
	*rep_r = fds[1];
	return (msg.msg_flags & MSG_CTRUNC) ? -EPROTO : 1;
}

int interp_start(struct init *st, int lang, const char **why)
{
	__attribute__((cleanup(pipes_close))) struct interp_pipes p = {
		{ -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, -1, -1
	};
	struct interp *ip = &st->interp[lang];
	struct child_report report;
	uint64_t until;
	pid_t pid;
	int ret;

	ret = interp_available(lang, why);
	if (ret < 0)
		return ret;
	/* All close-on-exec: the child dup2()s what it needs onto 1-4 and
	 * every other end vanishes at execve(). */
	if (pipe2(p.out, O_CLOEXEC) < 0 || pipe2(p.err, O_CLOEXEC) < 0 ||
	    pipe2(p.report, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.sock) < 0) {
		*why = "pipe";
		return -errno;
	}
	until = now_mono_ns() + SPAWN_WAIT_MS * 1000000ull;
	pid = fork();
	if (pid < 0) {
		*why = "fork";
		return -errno;
	}
	if (pid == 0) {
		int map[5] = { -1, p.out[1], p.err[1], -1, -1 };

		spawn_child(p.report[1], map, 5, (char *const *)langs[lang].argv,
			    make_channel, &p.sock[1], p.sock[1]);
	}
	bh_close_now(&p.out[1]);
	bh_close_now(&p.err[1]);
	bh_close_now(&p.report[1]);
	bh_close_now(&p.sock[1]);
	ret = receive_channel(p.sock[0], &p.req_w, &p.rep_r, until);
	if (ret == -ETIMEDOUT)
		report = (struct child_report){ .stage = STAGE_STARTUP, .err = ETIMEDOUT };
	if (ret == -ETIMEDOUT || spawn_wait_report(p.report[0], &report, until)) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		*why = stage_name(report.stage);
		return -report.err;
	}
	if (ret <= 0) {
		/* It exec()ed without handing over its pipes: cannot be. */
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		*why = "receive the interpreter's pipes";
		return ret < 0 ? ret : -EPROTO;
	}
	*ip = (struct interp){
		.pid = pid,
		.fresh = true,
		.out_fd = steal_fd(p.out[0]),
		.err_fd = steal_fd(p.err[0]),
		.req_fd = steal_fd(p.req_w),
		.rep_fd = steal_fd(p.rep_r),
	};
	set_nonblock(ip->out_fd);
	set_nonblock(ip->err_fd);
	set_nonblock(ip->req_fd);
	set_nonblock(ip->rep_fd);
	st->children = true;
	return 0;
}

/* Its whole process group: the server and whatever it started without
 * a session of its own. The sweep takes care of the rest. */
void interp_kill(struct interp *ip)
{
	if (ip->pid <= 0)
		return;
	ip->doomed = true;
	if (!ip->exited) {
		kill(-ip->pid, SIGKILL);
		kill(ip->pid, SIGKILL);
	}
}

void interp_release(struct interp *ip)
{
	bh_close_now(&ip->out_fd);
	bh_close_now(&ip->err_fd);
	bh_close_now(&ip->req_fd);
	bh_close_now(&ip->rep_fd);
	*ip = (struct interp){ .out_fd = -1, .err_fd = -1, .req_fd = -1, .rep_fd = -1 };
}

bool interp_reaped(struct init *st, pid_t pid, int status)
{
	for (int i = 0; i < NLANG; i++) {
		struct interp *ip = &st->interp[i];

		if (ip->pid == pid && !ip->exited) {
			ip->exited = true;
			ip->status = status;
			return true;
		}
	}
	return false;
}
