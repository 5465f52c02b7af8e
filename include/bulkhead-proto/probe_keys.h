/* The facts bulkhead-init --probe reports (src/init/probe.c, one
 * "key=value" line each) and the engine judges (src/engine/evidence.c).
 * A key exists here once, so the two cannot drift apart: a fact the probe
 * stops reporting, or names differently, fails to compile on the other
 * side instead of reading "(not reported)". */
#ifndef BH_PROTO_PROBE_KEYS_H
#define BH_PROTO_PROBE_KEYS_H

/* ---- who the probe runs as ---- */
#define PROBE_UID "uid"
#define PROBE_GID "gid"
#define PROBE_UID_MAP "uid_map" /* the first line of /proc/self/uid_map, or "absent" */
#define PROBE_PID "pid"

/* ---- /proc/self/status ---- */
#define PROBE_CAP_EFF "cap_eff"
#define PROBE_CAP_BND "cap_bnd"
#define PROBE_CAP_PRM "cap_prm"
#define PROBE_NO_NEW_PRIVS "no_new_privs"
#define PROBE_SECCOMP_MODE "seccomp"
#define PROBE_NO_NEW_PRIVS_PRCTL "no_new_privs_prctl" /* prctl(PR_GET_NO_NEW_PRIVS) */

/* ---- the filesystem ---- */
#define PROBE_ROOT_WRITABLE "root_writable" /* 1 if a file could be made in / */
#define PROBE_ROOT_ERRNO "root_errno"
#define PROBE_USR_WRITABLE "usr_writable"
#define PROBE_USR_ERRNO "usr_errno"
#define PROBE_WRITABLE_MOUNTS "writable_mounts" /* comma-separated mount points */
/* PROBE_MOUNT "<point>": "<fstype> <super options> <mount options>" */
#define PROBE_MOUNT "mount."

/* ---- the network ---- */
#define PROBE_NET_IFACES "net_ifaces"
#define PROBE_CONNECT_PUBLIC "connect_public" /* an errno name, or "ok" */

/* ---- the kernel and limits ---- */
#define PROBE_KERNEL_RELEASE "kernel_release"
#define PROBE_KERNEL_VERSION "kernel_version"
#define PROBE_RLIMIT_NPROC "rlimit_nproc"
#define PROBE_RLIMIT_NOFILE "rlimit_nofile"
#define PROBE_RLIMIT_CORE "rlimit_core"
#define PROBE_RLIMIT_FSIZE "rlimit_fsize"

/* ---- what user code can reach ---- */
#define PROBE_FDS "fds" /* the descriptors open, comma-separated */
#define PROBE_ENVIRON "environ" /* the environment's names, comma-separated */
#define PROBE_PID1_FD_READABLE "pid1_fd_readable"
#define PROBE_PID1_MEM_READABLE "pid1_mem_readable"
#define PROBE_PID1_ENVIRON_READABLE "pid1_environ_readable"
#define PROBE_PID1_UID "pid1_uid"
#define PROBE_PID1_FDS_OPENABLE "pid1_fds_openable" /* "none", or the numbers */

/* ---- escape attempts (an errno name, or "ok") ---- */
#define PROBE_UNSHARE_USER "unshare_user"
#define PROBE_PTRACE_PID1 "ptrace_pid1"
#define PROBE_SYSLOG "syslog"

/* ---- the seccomp profile (src/init/probe_seccomp.c) ----
 * Each argument rule, tried plain and with bit 32 of the ruled argument
 * set: "<plain>/<high>", each an errno name or "ok". */
#define PROBE_SECCOMP "seccomp."
#define PROBE_SECCOMP_SOCKET_AF_VSOCK PROBE_SECCOMP "socket.AF_VSOCK"
#define PROBE_SECCOMP_SOCKET_AF_PACKET PROBE_SECCOMP "socket.AF_PACKET"
#define PROBE_SECCOMP_SOCKET_AF_UNIX PROBE_SECCOMP "socket.AF_UNIX"
#define PROBE_SECCOMP_SOCKET_AF_INET PROBE_SECCOMP "socket.AF_INET"
#define PROBE_SECCOMP_SOCKET_AF_INET6 PROBE_SECCOMP "socket.AF_INET6"
#define PROBE_SECCOMP_SOCKET_AF_NETLINK PROBE_SECCOMP "socket.AF_NETLINK"
#define PROBE_SECCOMP_IOCTL_TIOCSTI PROBE_SECCOMP "ioctl.TIOCSTI"
#define PROBE_SECCOMP_IOCTL_TIOCLINUX PROBE_SECCOMP "ioctl.TIOCLINUX"
#define PROBE_SECCOMP_IOCTL_FIOCLEX PROBE_SECCOMP "ioctl.FIOCLEX"
#define PROBE_SECCOMP_CLONE_NEWTIME PROBE_SECCOMP "clone.CLONE_NEWTIME"
#define PROBE_SECCOMP_CLONE_NEWNS PROBE_SECCOMP "clone.CLONE_NEWNS"
#define PROBE_SECCOMP_CLONE_NEWCGROUP PROBE_SECCOMP "clone.CLONE_NEWCGROUP"
#define PROBE_SECCOMP_CLONE_NEWUTS PROBE_SECCOMP "clone.CLONE_NEWUTS"
#define PROBE_SECCOMP_CLONE_NEWIPC PROBE_SECCOMP "clone.CLONE_NEWIPC"
#define PROBE_SECCOMP_CLONE_NEWUSER PROBE_SECCOMP "clone.CLONE_NEWUSER"
#define PROBE_SECCOMP_CLONE_NEWPID PROBE_SECCOMP "clone.CLONE_NEWPID"
#define PROBE_SECCOMP_CLONE_NEWNET PROBE_SECCOMP "clone.CLONE_NEWNET"
#define PROBE_SECCOMP_CLONE_FORK PROBE_SECCOMP "clone.fork"
#define PROBE_SECCOMP_MKNOD_CHR PROBE_SECCOMP "mknod.S_IFCHR"
#define PROBE_SECCOMP_MKNOD_BLK PROBE_SECCOMP "mknod.S_IFBLK"
#define PROBE_SECCOMP_MKNOD_FIFO PROBE_SECCOMP "mknod.S_IFIFO"
#define PROBE_SECCOMP_MKNODAT_CHR PROBE_SECCOMP "mknodat.S_IFCHR"
#define PROBE_SECCOMP_MKNODAT_BLK PROBE_SECCOMP "mknodat.S_IFBLK"
#define PROBE_SECCOMP_MKNODAT_FIFO PROBE_SECCOMP "mknodat.S_IFIFO"
/* The ABIs the profile does not admit, and a syscall newer than it: an
 * errno name, "ok", or "killed by SIGSYS". */
#define PROBE_SECCOMP_I386_SOCKET PROBE_SECCOMP "i386.socket.AF_VSOCK"
#define PROBE_SECCOMP_X32_GETPID PROBE_SECCOMP "x32.getpid"
#define PROBE_SECCOMP_NEWER PROBE_SECCOMP "newer.listmount"

#endif
