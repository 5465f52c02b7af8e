/* The probe's look at the seccomp profile: every argument rule tried in its
 * plain form and with bit 32 of the ruled argument set. The kernel reads an
 * int argument's low 32 bits; a rule that compared all 64 would let the
 * second form through to the call it means to refuse. Then the i386 and x32
 * entries, which the profile does not admit at all, and a syscall newer than
 * the profile. Whatever succeeds is undone at once: a socket closed, a child
 * reaped, a node unlinked. */
#include "probe.h"
#include "probe_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIT32 (1L << 32)

enum undo { UNDO_CLOSE, UNDO_REAP, UNDO_UNLINK, UNDO_NONE };

struct rule {
	const char *key;
	long nr;
	int index; /* the ruled argument */
	long args[6];
	enum undo undo;
};

static char node[64]; /* the mknod target, in /tmp */

static void undo(enum undo how, long ret)
{
	switch (how) {
	case UNDO_CLOSE:
		close((int)ret);
		break;
	case UNDO_REAP:
		if (ret == 0)
			_exit(0); /* the child of a clone that should not have been */
		waitpid((pid_t)ret, NULL, __WALL);
		break;
	case UNDO_UNLINK:
		unlink(node);
		break;
	case UNDO_NONE:
		break;
	}
}

static void attempt(const struct rule *r, long hi, char *out, size_t n, probe_errname_fn errname)
{
	long a[6];
	memcpy(a, r->args, sizeof a);
	a[r->index] |= hi;
	errno = 0;
	long ret = syscall(r->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (ret < 0) {
		snprintf(out, n, "%s", errname(errno));
		return;
	}
	undo(r->undo, ret);
	snprintf(out, n, "ok");
}

static void try_rules(probe_emit_fn emit, probe_errname_fn errname)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	snprintf(node, sizeof node, "/tmp/.bh_probe_node.%d", (int)getpid());
	const long path = (long)node;
	const struct rule rules[] = {
		{PROBE_SECCOMP_SOCKET_AF_VSOCK, SYS_socket, 0, {40, SOCK_STREAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_SOCKET_AF_PACKET, SYS_socket, 0, {17, SOCK_DGRAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_SOCKET_AF_UNIX, SYS_socket, 0, {1, SOCK_DGRAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_SOCKET_AF_INET, SYS_socket, 0, {2, SOCK_DGRAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_SOCKET_AF_INET6, SYS_socket, 0, {10, SOCK_DGRAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_SOCKET_AF_NETLINK, SYS_socket, 0, {16, SOCK_DGRAM}, UNDO_CLOSE},
		{PROBE_SECCOMP_IOCTL_TIOCSTI, SYS_ioctl, 1, {null, 0x5412}, UNDO_NONE},
		{PROBE_SECCOMP_IOCTL_TIOCLINUX, SYS_ioctl, 1, {null, 0x541C}, UNDO_NONE},
		{PROBE_SECCOMP_IOCTL_FIOCLEX, SYS_ioctl, 1, {null, 0x5451}, UNDO_NONE},
		{PROBE_SECCOMP_CLONE_NEWTIME, SYS_clone, 0, {0x80 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWNS, SYS_clone, 0, {0x20000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWCGROUP, SYS_clone, 0, {0x2000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWUTS, SYS_clone, 0, {0x4000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWIPC, SYS_clone, 0, {0x8000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWUSER, SYS_clone, 0, {0x10000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWPID, SYS_clone, 0, {0x20000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_NEWNET, SYS_clone, 0, {0x40000000 | SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_CLONE_FORK, SYS_clone, 0, {SIGCHLD}, UNDO_REAP},
		{PROBE_SECCOMP_MKNOD_CHR, SYS_mknod, 1, {path, S_IFCHR | 0600, 0}, UNDO_UNLINK},
		{PROBE_SECCOMP_MKNOD_BLK, SYS_mknod, 1, {path, S_IFBLK | 0600, 0}, UNDO_UNLINK},
		{PROBE_SECCOMP_MKNOD_FIFO, SYS_mknod, 1, {path, S_IFIFO | 0600}, UNDO_UNLINK},
		{PROBE_SECCOMP_MKNODAT_CHR, SYS_mknodat, 2, {AT_FDCWD, path, S_IFCHR | 0600, 0},
		 UNDO_UNLINK},
		{PROBE_SECCOMP_MKNODAT_BLK, SYS_mknodat, 2, {AT_FDCWD, path, S_IFBLK | 0600, 0},
		 UNDO_UNLINK},
		{PROBE_SECCOMP_MKNODAT_FIFO, SYS_mknodat, 2, {AT_FDCWD, path, S_IFIFO | 0600},
		 UNDO_UNLINK},
	};
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		char plain[24], hi[24], value[64];
		attempt(&rules[i], 0, plain, sizeof plain, errname);
		attempt(&rules[i], BIT32, hi, sizeof hi, errname);
		snprintf(value, sizeof value, "%s/%s", plain, hi);
		emit(rules[i].key, value);
	}
	if (null >= 0)
		close(null);
}

/* socket(AF_VSOCK, SOCK_STREAM, 0) through the i386 entry (int 0x80, number
 * 359), from this 64-bit process. */
static long i386_socket_vsock(void)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(359L), "b"(40L), "c"(1L), "d"(0L)
			 : "memory", "r8", "r9", "r10", "r11");
	return (int)ret;
}

static long x32_getpid(void)
{
	long ret = syscall(0x40000000L | SYS_getpid);
	return ret < 0 ? -errno : ret;
}

/* In a child: a call the filter kills takes its process along. */
static void try_abi(probe_emit_fn emit, probe_errname_fn errname, const char *key,
		    long (*call)(void))
{
	int p[2];
	char value[48] = "fork failed";
	if (pipe2(p, O_CLOEXEC) < 0) {
		emit(key, errname(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		long r = call();
		char buf[24];
		int n = r >= 0 ? snprintf(buf, sizeof buf, "ok") : snprintf(buf, sizeof buf, "%s", errname((int)-r));
		if (write(p[1], buf, (size_t)n) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid > 0) {
		int st = 0;
		ssize_t got = read(p[0], value, sizeof value - 1);
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st))
			snprintf(value, sizeof value, "killed by %s", WTERMSIG(st) == SIGSYS ? "SIGSYS" : "a signal");
		else
			value[got > 0 ? got : 0] = '\0';
	}
	close(p[0]);
	emit(key, value);
}

void bh_probe_seccomp(probe_emit_fn emit, probe_errname_fn errname)
{
	try_rules(emit, errname);
	try_abi(emit, errname, PROBE_SECCOMP_I386_SOCKET, i386_socket_vsock);
	try_abi(emit, errname, PROBE_SECCOMP_X32_GETPID, x32_getpid);
	/* listmount (Linux 6.8): newer than the profile and its libseccomp. */
	errno = 0;
	long r = syscall(458L, 0L, 0L, 0L, 0L);
	emit(PROBE_SECCOMP_NEWER, r < 0 ? errname(errno) : "ok");
}
