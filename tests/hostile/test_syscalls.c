/* The seccomp profile from the inside, as user code would attack it: the
 * high-bit form of every argument rule (the kernel reads an int argument's
 * low 32 bits, a filter that compares all 64 misses it), the i386 and x32
 * ABIs, syscalls newer than the profile and the ones Docker's default
 * profile refuses; and what the mount table tells about the host. */
#include "hostile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line per rule: "NAME plain=<answer> hi=<answer>", the answer "OK" or
 * an errno name; the same call is made with bit 32 of the ruled argument
 * set. Whatever succeeded is undone at once (a socket closed, a child
 * reaped, a node unlinked). */
static const char pairs_prelude[] =
	"HI = 1 << 32\n"
	"def sysr(nr, *a):\n"
	"    _ct.set_errno(0)\n"
	"    r = _libc.syscall(_ct.c_long(nr), *[_ct.c_long(x) if isinstance(x, int) else x for x in a])\n"
	"    return r if r >= 0 else _en(_ct.get_errno())\n"
	"def both(name, nr, args, idx, undo):\n"
	"    seen = []\n"
	"    for hi in (0, HI):\n"
	"        a = list(args); a[idx] |= hi\n"
	"        r = sysr(nr, *a)\n"
	"        if not isinstance(r, str):\n"
	"            undo(r); r = 'OK'\n"
	"        seen.append(r)\n"
	"    print(name, 'plain=%s hi=%s' % tuple(seen))\n"
	"def close(fd): os.close(fd)\n"
	"def keep(_): pass\n"
	"def reap(pid):\n"
	"    if pid == 0: os._exit(0)\n"
	"    os.waitpid(pid, 0)\n"
	"def unlink(_):\n"
	"    try: os.unlink('/tmp/bh-node')\n"
	"    except OSError: pass\n"
	"null = os.open('/dev/null', os.O_RDONLY)\n";

/* Every argument rule of data/seccomp/profile.json, denied and allowed. */
static const char pairs_code[] =
	"for fam, n in ((40, 'AF_VSOCK'), (17, 'AF_PACKET')):\n"
	"    both('deny socket ' + n, 41, (fam, 2 if fam == 17 else 1, 0), 0, close)\n"
	"for fam, n in ((1, 'AF_UNIX'), (2, 'AF_INET'), (10, 'AF_INET6'), (16, 'AF_NETLINK')):\n"
	"    both('allow socket ' + n, 41, (fam, 2, 0), 0, close)\n"
	"for cmd, n in ((0x5412, 'TIOCSTI'), (0x541C, 'TIOCLINUX')):\n"
	"    both('deny ioctl ' + n, 16, (null, cmd, 0), 1, keep)\n"
	"both('allow ioctl FIOCLEX', 16, (null, 0x5451, 0), 1, keep)\n"
	"for bit, n in ((0x80, 'TIME'), (0x20000, 'NS'), (0x2000000, 'CGROUP'), (0x4000000, 'UTS'), (0x8000000, 'IPC'), (0x10000000, 'USER'), (0x20000000, 'PID'), (0x40000000, 'NET')):\n"
	"    both('deny clone CLONE_NEW' + n, 56, (bit | 17, 0, 0, 0, 0), 0, reap)\n"
	"both('allow clone fork', 56, (17, 0, 0, 0, 0), 0, reap)\n"
	"for mode, n in ((0o20600, 'S_IFCHR'), (0o60600, 'S_IFBLK')):\n"
	"    both('deny mknod ' + n, 133, (b'/tmp/bh-node', mode, 0x101), 1, unlink)\n"
	"    both('deny mknodat ' + n, 259, (-100, b'/tmp/bh-node', mode, 0x101), 2, unlink)\n"
	"both('allow mknod S_IFIFO', 133, (b'/tmp/bh-node', 0o10600, 0), 1, unlink)\n"
	"both('allow mknodat S_IFIFO', 259, (-100, b'/tmp/bh-node', 0o10600, 0), 2, unlink)\n";

HOSTILE_TEST(the_high_bit_form_of_every_argument_rule_is_refused_like_the_plain_form)
{
	bh_session *s = hostile_session();
	case_begin("seccomp argument rules, plain and with bit 32 set");
	static char code[8192];
	snprintf(code, sizeof code, "%s%s", pairs_prelude, pairs_code);
	struct cell_outcome *o = py(s, code, 30000);
	size_t rules = 0;
	for (const char *p = o->out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char name[96], plain[32], hi[32];
		if (sscanf(p, "%95[^=]=%31s hi=%31s", name, plain, hi) != 3)
			continue;
		/* "deny socket AF_VSOCK plain" -> the rule's name and its answers. */
		char *cut = strstr(name, " plain");
		if (cut)
			*cut = '\0';
		rules++;
		if (!strncmp(name, "deny ", 5)) {
			cr_assert_str_neq(plain, "OK", "%s succeeded:\n%s", name, o->out);
			cr_assert_str_eq(hi, plain,
					 "%s with bit 32 set answered %s, the plain form %s: the filter "
					 "compared bits the kernel never reads\n%s",
					 name, hi, plain, o->out);
		} else {
			cr_assert_str_eq(plain, "OK", "%s was refused:\n%s", name, o->out);
			cr_assert_str_eq(hi, "OK", "%s with bit 32 set was refused (%s):\n%s", name,
					 hi, o->out);
		}
		case_saw("%s %s/%s", name + (name[0] == 'd' ? 5 : 6), plain, hi);
	}
	/* Every argument rule of the profile, each once: 6 socket, 3 ioctl, 9
	 * clone and 6 mknod/mknodat. */
	cr_assert_eq(rules, 24, "%zu rules tried:\n%s", rules, o->out);
	cell_outcome_free(o);
	case_end();
}

/* int 0x80 (the i386 entry) from a 64-bit process, and the x32 numbers, each
 * in a child of its own: a call the filter kills takes its process along. */
static const char abi_code[] =
	"import mmap, struct\n"
	"page = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40, prot=7)\n"
	"# push rbx; mov r8d,ecx; mov eax,edi; mov ebx,esi; mov ecx,edx; mov edx,r8d; int 0x80; pop rbx; ret\n"
	"code = bytes.fromhex('534189c889f889f389d14489c2cd805bc3')\n"
	"page[0:len(code)] = code\n"
	"base = _ct.addressof(_ct.c_char.from_buffer(page))\n"
	"i386 = _ct.CFUNCTYPE(_ct.c_int, _ct.c_uint, _ct.c_uint, _ct.c_uint, _ct.c_uint)(base)\n"
	"page[256:268] = struct.pack('<III', 40, 1, 0)\n"
	"def sockets():\n"
	"    n = 0\n"
	"    for f in os.listdir('/proc/self/fd'):\n"
	"        try: n += os.readlink('/proc/self/fd/' + f).startswith('socket:')\n"
	"        except OSError: pass\n"
	"    return n\n"
	"def attempt(name, call):\n"
	"    pid = os.fork()\n"
	"    if pid == 0:\n"
	"        before = sockets()\n"
	"        r = call()\n"
	"        os.write(1, ('%s returned %s sockets+%d\\n' % (name, r if r >= 0 else _en(-r), sockets() - before)).encode())\n"
	"        os._exit(0)\n"
	"    st = os.waitpid(pid, 0)[1]\n"
	"    if os.WIFSIGNALED(st): print(name, 'killed by signal', os.WTERMSIG(st))\n"
	"calls = [('i386 socket(AF_VSOCK)', 359, 40, 1, 0), ('i386 socketcall(SOCKET, AF_VSOCK)', 102, 1, base + 256, 0),\n"
	"         ('i386 getpid', 20, 0, 0, 0), ('i386 umount', 22, 0, 0, 0), ('i386 clock_settime64', 404, 0, 0, 0),\n"
	"         ('i386 clock_adjtime64', 405, 0, 0, 0), ('i386 unshare(CLONE_NEWUSER)', 310, 0x10000000, 0, 0)]\n"
	"for name, nr, a, b, c in calls:\n"
	"    attempt(name, lambda: i386(nr, a, b, c))\n"
	"def x32(nr, *a):\n"
	"    r = _libc.syscall(_ct.c_long(0x40000000 | nr), *[_ct.c_long(x) for x in a])\n"
	"    return r if r >= 0 else -_ct.get_errno()\n"
	"attempt('x32 getpid', lambda: x32(39))\n"
	"attempt('x32 socket(AF_VSOCK)', lambda: x32(41, 40, 1, 0))\n";

HOSTILE_TEST(the_i386_and_x32_abis_route_around_no_rule)
{
	bh_session *s = hostile_session();
	case_begin("i386 (int 0x80) and x32 syscalls");
	struct cell_outcome *o = py(s, abi_code, 30000);
	const char *names[] = {"i386 socket(AF_VSOCK)", "i386 socketcall(SOCKET, AF_VSOCK)",
			       "i386 getpid", "i386 umount", "i386 clock_settime64",
			       "i386 clock_adjtime64", "i386 unshare(CLONE_NEWUSER)", "x32 getpid",
			       "x32 socket(AF_VSOCK)"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char v[128];
		cr_assert_not_null(probe(o->out, names[i], v, sizeof v), "%s did not run:\n%s",
				   names[i], o->out);
		if (tier == BH_TIER_CONTAINER) {
			/* Only the x86_64 ABI is in the profile: anything else is the
			 * bad-architecture action, the calling thread killed (SIGSYS). */
			cr_assert_str_eq(v, "killed by signal 31", "%s: %s\n%s", names[i], v, o->out);
		} else {
			/* gVisor has no i386 ABI: its Sentry reads int 0x80 as the
			 * x86_64 call of that number, under the same filter. Whatever
			 * it ran, no socket may come of it. */
			cr_assert_not_null(strstr(v, "sockets+0"), "%s: %s\n%s", names[i], v, o->out);
		}
		case_saw("%s: %s", names[i], v);
	}
	cell_outcome_free(o);
	case_end();
}

/* Syscalls newer than the profile (and than the host's libseccomp), and the
 * ones Docker's default profile refuses to a container without
 * capabilities that the old deny-list let through. */
static const struct {
	const char *name;
	int nr;
} refused[] = {
	{"process_madvise", 440},	  {"set_mempolicy_home_node", 450},
	{"cachestat", 451},		  {"fchmodat2", 452},
	{"map_shadow_stack", 453},
	{"futex_wake", 454},		  {"futex_wait", 455},
	{"futex_requeue", 456},		  {"statmount", 457},
	{"listmount", 458},		  {"lsm_get_self_attr", 459},
	{"lsm_set_self_attr", 460},	  {"lsm_list_modules", 461},
	{"mseal", 462},			  {"setxattrat", 463},
	{"getxattrat", 464},		  {"listxattrat", 465},
	{"removexattrat", 466},		  {"open_tree_attr", 467},
	{"file_getattr", 468},		  {"file_setattr", 469},
	{"an unassigned number (600)", 600}, {"name_to_handle_at", 303},
	{"fanotify_init", 300},		  {"modify_ldt", 154},
	{"remap_file_pages", 216},	  {"process_mrelease", 448},
};

HOSTILE_TEST(syscalls_newer_than_the_profile_and_dockers_refusals_are_refused)
{
	bh_session *s = hostile_session();
	case_begin("syscalls newer than the profile, and Docker's refusals");
	static char code[8192];
	size_t used = 0;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		used += (size_t)snprintf(code + used, sizeof code - used, "sc('%s', %d, 0, 0, 0, 0, 0)\n",
					 refused[i].name, refused[i].nr);
	struct cell_outcome *o = py(s, code, 30000);
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		char v[64];
		cr_assert_not_null(probe(o->out, refused[i].name, v, sizeof v), "%s did not run:\n%s",
				   refused[i].name, o->out);
		/* Refused by the filter, not by the kernel looking at the
		 * arguments: ENOSYS (not in the allowlist: the default) or EPERM
		 * (named in it); runsc answers EPERM for both. */
		cr_assert(!strcmp(v, "ENOSYS") || !strcmp(v, "EPERM"),
			  "%s (%d) reached the kernel: %s\n%s", refused[i].name, refused[i].nr, v,
			  o->out);
		if (tier == BH_TIER_CONTAINER && refused[i].nr >= 451)
			cr_assert_str_eq(v, "ENOSYS", "%s: %s", refused[i].name, v);
		case_saw("%s %s", refused[i].name, v);
	}
	cell_outcome_free(o);
	case_end();
}

HOSTILE_TEST(the_mount_table_shows_no_host_path_of_the_state_directory)
{
	bh_session *s = hostile_session();
	case_begin("/proc/self/mountinfo");
	struct cell_outcome *o =
		py(s,
		   "for line in open('/proc/self/mountinfo'):\n"
		   "    f = line.split(' ')\n"
		   "    print('mount', f[4], 'root', f[3])\n",
		   0);
	const char *state = bh_engine_state_dir(h.e);
	cr_assert_not_null(strstr(o->out, "mount / root"), "%s", o->out);
	cr_assert_null(strstr(o->out, state), "the sandbox sees the state directory %s:\n%s",
		       state, o->out);
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	if (root && *root)
		cr_assert_null(strstr(o->out, root), "the sandbox sees %s:\n%s", root, o->out);
	char v[256];
	case_saw("/ from %s", probe(o->out, "mount /", v, sizeof v));
	case_saw("/opt/bulkhead/bulkhead-init from %s",
		 probe(o->out, "mount /opt/bulkhead/bulkhead-init", v, sizeof v));
	case_saw("/opt/bulkhead/interp from %s",
		 probe(o->out, "mount /opt/bulkhead/interp", v, sizeof v));
	cell_outcome_free(o);
	case_end();
}
