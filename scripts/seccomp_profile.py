#!/usr/bin/env python3
"""Writes data/seccomp/profile.json, the OCI seccomp profile of every sandbox.

    scripts/seccomp_profile.py [OUT]      (default: data/seccomp/profile.json)

The profile is an allowlist. What it does not name answers ENOSYS (under crun;
runsc 20221219 turns every errno into EPERM), so a syscall newer than the
profile is refused the way an old kernel refuses it and libc falls back.
Calls that are dangerous on purpose are named and answer EPERM (or
EAFNOSUPPORT for socket families), so a refusal by policy reads as one.

Rules on an argument compare it with SCMP_CMP_MASKED_EQ and a mask inside the
low 32 bits: the kernel reads an int argument (a socket family, an ioctl
command, a mode) from the low half of the register, and a rule that compared
all 64 bits would miss 0x100000028 although the kernel sees AF_VSOCK.
"Everything but X" cannot be one masked comparison, and an unconditional
allow of the same syscall would override its conditional denies in
libseccomp, so such a rule is a set of allows that covers exactly the values
not denied (covering()). Every entry has at most one comparison per argument:
crun and runsc both turn two comparisons of one argument into an OR.

Only the x86_64 ABI is listed. A syscall through int 0x80 (i386) or the x32
numbers hits the bad-architecture action and kills the calling thread,
instead of reaching compat code paths (and i386 duplicates such as umount
and clock_settime64) nothing in a sandbox needs.

Every name must be one the host's libseccomp knows: the bundle asks crun to
refuse a name it cannot resolve (run.oci.seccomp_fail_unknown_syscall),
where it would otherwise skip the name silently.
"""
import json
import sys

EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97

# What interpreters, their libraries, subprocesses and the init use. Grouped
# by purpose; within a group, alphabetical.
ALLOW = {
    "files": """access chdir chmod chown close close_range copy_file_range creat dup dup2
        dup3 faccessat faccessat2 fadvise64 fallocate fchdir fchmod fchmodat fchown fchownat
        fcntl fdatasync fgetxattr flistxattr flock fremovexattr fsetxattr fstat fstatfs fsync
        ftruncate futimesat getcwd getdents getdents64 getxattr inotify_add_watch inotify_init
        inotify_init1 inotify_rm_watch lchown lgetxattr link linkat listxattr llistxattr
        lremovexattr lseek lsetxattr lstat mkdir mkdirat newfstatat open openat openat2 pread64
        preadv preadv2 pwrite64 pwritev pwritev2 read readahead readlink readlinkat readv
        removexattr rename renameat renameat2 rmdir sendfile setxattr splice stat statfs statx
        symlink symlinkat sync sync_file_range syncfs tee truncate umask unlink unlinkat utime
        utimensat utimes vmsplice write writev""",
    "memory": """brk madvise membarrier memfd_create mincore mlock mlock2 mlockall mmap mprotect
        mremap msync munlock munlockall munmap pkey_alloc pkey_free pkey_mprotect""",
    "processes": """arch_prctl capget capset execve execveat exit exit_group fork getcpu getegid
        geteuid getgid getgroups getpgid getpgrp getpid getppid getpriority getresgid getresuid
        getrlimit get_robust_list getrusage getsid gettid getuid ioprio_get ioprio_set kill
        pidfd_open pidfd_send_signal prctl prlimit64 rseq sched_getaffinity sched_getattr
        sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler
        sched_rr_get_interval sched_setaffinity sched_setattr sched_setparam
        sched_setscheduler sched_yield seccomp setfsgid setfsuid setgid setgroups setitimer
        setpgid setpriority setregid setresgid setresuid setreuid setrlimit set_robust_list
        setsid set_tid_address setuid tgkill tkill vfork wait4 waitid""",
    "signals": """rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
        rt_sigsuspend rt_sigtimedwait rt_tgsigqueueinfo sigaltstack signalfd signalfd4""",
    "time": """alarm clock_getres clock_gettime clock_nanosleep getitimer gettimeofday nanosleep
        time timer_create timer_delete timer_getoverrun timer_gettime timer_settime
        timerfd_create timerfd_gettime timerfd_settime times""",
    "waiting": """epoll_create epoll_create1 epoll_ctl epoll_pwait epoll_pwait2 epoll_wait
        eventfd eventfd2 futex futex_waitv pause poll ppoll pselect6 restart_syscall select""",
    "sockets": """accept accept4 bind connect getpeername getsockname getsockopt listen recvfrom
        recvmmsg recvmsg sendmmsg sendmsg sendto setsockopt shutdown socketpair""",
    "pipes and ipc": """io_cancel io_destroy io_getevents io_pgetevents io_setup io_submit
        mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedsend mq_unlink msgctl msgget
        msgrcv msgsnd pipe pipe2 semctl semget semop semtimedop shmat shmctl shmdt shmget""",
    "system": """getrandom landlock_add_rule landlock_create_ruleset landlock_restrict_self
        sysinfo uname""",
}

# Refused on purpose (EPERM): mounts and namespaces, tracing and reading other
# processes, kernel code, clocks, keyrings, io_uring, bpf, perf, userfaultfd,
# NUMA policy, handles, and the calls Docker's default profile also refuses
# to a container without capabilities.
DENY = """acct add_key adjtimex bpf chroot clock_adjtime clock_settime create_module
    delete_module fanotify_init fanotify_mark finit_module fsconfig fsmount fsopen fspick
    get_kernel_syms get_mempolicy init_module io_uring_enter io_uring_register io_uring_setup
    ioperm iopl kcmp kexec_file_load kexec_load keyctl lookup_dcookie mbind migrate_pages
    modify_ldt mount mount_setattr move_mount move_pages name_to_handle_at nfsservctl
    open_by_handle_at open_tree perf_event_open personality pidfd_getfd pivot_root
    process_madvise process_mrelease process_vm_readv process_vm_writev ptrace query_module
    quotactl quotactl_fd reboot remap_file_pages request_key set_mempolicy
    set_mempolicy_home_node setdomainname sethostname setns settimeofday swapoff swapon
    _sysctl syslog umount2 unshare uselib userfaultfd vhangup"""

# Namespace flags: clone may create none of them (clone3 answers ENOSYS so
# glibc falls back to clone, whose flags seccomp can read).
CLONE_NEW = {"CLONE_NEWTIME": 0x80, "CLONE_NEWNS": 0x20000, "CLONE_NEWCGROUP": 0x2000000,
             "CLONE_NEWUTS": 0x4000000, "CLONE_NEWIPC": 0x8000000,
             "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
             "CLONE_NEWNET": 0x40000000}
# Socket families user code may open: unix, IPv4, IPv6 (loopback only inside)
# and netlink (glibc's if_nameindex and getaddrinfo use it). AF_PACKET and
# AF_VSOCK (not network-namespaced) are refused by name; others get ENOSYS.
SOCKET_ALLOW = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16}
SOCKET_DENY = {"AF_PACKET": 17, "AF_VSOCK": 40}
# ioctl commands refused: terminal input injection and the console ioctl.
IOCTL_DENY = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}
# mknod: no character or block devices (S_IFMT is 0xf000, bits 12-15).
S_IFCHR, S_IFBLK = 0x2000, 0x6000


def covering(denied, width=32, top=31):
    """(mask, value) pairs, each `x & mask == value`, whose union is exactly
    the `width`-bit values not in `denied`, and which never overlap: walk the
    binary trie of the denied values from bit `top` down and emit every
    subtree that holds none of them."""
    out = []

    def walk(bit, mask, value, inside):
        if not inside:
            out.append((mask, value))
            return
        if bit < top - width + 1:
            return  # a denied value itself
        for b in (0, 1):
            v = value | (b << bit)
            walk(bit - 1, mask | (1 << bit), v, [d for d in inside if (d >> bit) & 1 == b])

    walk(top, 0, 0, sorted(set(denied)))
    return out


def words(text):
    return sorted(text.split())


def rule(names, action, errno=None, args=None):
    r = {"names": names, "action": action}
    if errno is not None:
        r["errnoRet"] = errno
    if args:
        r["args"] = args
    return r


def masked(index, mask, value):
    return {"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"}


def profile():
    allowed = sorted({n for group in ALLOW.values() for n in group.split()})
    denied = words(DENY)
    both = set(allowed) & set(denied)
    assert not both, f"allowed and denied: {both}"
    rules = [rule(allowed, "SCMP_ACT_ALLOW"), rule(denied, "SCMP_ACT_ERRNO", EPERM),
             rule(["clone3"], "SCMP_ACT_ERRNO", ENOSYS)]
    every_new = 0
    for name, bit in CLONE_NEW.items():
        every_new |= bit
        rules.append(rule(["clone"], "SCMP_ACT_ERRNO", EPERM, [masked(0, bit, bit)]))
    rules.append(rule(["clone"], "SCMP_ACT_ALLOW", args=[masked(0, every_new, 0)]))
    for fam in SOCKET_ALLOW.values():
        rules.append(rule(["socket"], "SCMP_ACT_ALLOW", args=[masked(0, 0xFFFFFFFF, fam)]))
    for fam in SOCKET_DENY.values():
        rules.append(rule(["socket"], "SCMP_ACT_ERRNO", EAFNOSUPPORT,
                          [masked(0, 0xFFFFFFFF, fam)]))
    for cmd in IOCTL_DENY.values():
        rules.append(rule(["ioctl"], "SCMP_ACT_ERRNO", EPERM, [masked(1, 0xFFFFFFFF, cmd)]))
    for mask, value in covering(IOCTL_DENY.values()):
        rules.append(rule(["ioctl"], "SCMP_ACT_ALLOW", args=[masked(1, mask, value)]))
    # Only S_IFMT's four bits decide, so the coverings are over bits 12-15.
    device = (S_IFCHR >> 12, S_IFBLK >> 12)
    other_types = covering(device, width=4, top=3)
    device_types = covering([t for t in range(16) if t not in device], width=4, top=3)
    for name, index in (("mknod", 1), ("mknodat", 2)):
        for mask, value in device_types:
            rules.append(rule([name], "SCMP_ACT_ERRNO", EPERM,
                              [masked(index, mask << 12, value << 12)]))
        for mask, value in other_types:
            rules.append(rule([name], "SCMP_ACT_ALLOW",
                              args=[masked(index, mask << 12, value << 12)]))
    return {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": ENOSYS,
            "architectures": ["SCMP_ARCH_X86_64"], "syscalls": rules}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data/seccomp/profile.json"
    with open(out, "w") as f:
        json.dump(profile(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
