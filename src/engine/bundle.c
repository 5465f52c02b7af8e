/* One OCI bundle per sandbox, every wall (README, "The walls of one sandbox")
 * in its config.json.
 * The rootfs is shared and read-only; what a sandbox may write is a sized
 * tmpfs. A test hook can drop one wall to prove the smoke test notices. */
#include "engine_priv.h"
#include "egress_relay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

static bool dropped(const struct bundle_spec *s, const char *wall)
{
	return s->drop_wall && !strcmp(s->drop_wall, wall);
}

static cJSON *strings(const char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	for (; *v; v++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*v));
	return a;
}

static void add_mount(cJSON *mounts, const char *dest, const char *type, const char *source,
		      const char *const *options)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "destination", dest);
	cJSON_AddStringToObject(m, "type", type);
	cJSON_AddStringToObject(m, "source", source);
	cJSON_AddItemToObject(m, "options", strings(options));
	cJSON_AddItemToArray(mounts, m);
}

static void add_tmpfs(cJSON *mounts, const char *dest, const char *mode, uint32_t mb, bool owned,
		      bool noexec)
{
	char size[32], m[24];
	snprintf(size, sizeof size, "size=%uk", mb * 1024u);
	snprintf(m, sizeof m, "mode=%s", mode);
	const char *opts[8];
	size_t i = 0;
	opts[i++] = "nosuid";
	opts[i++] = "nodev";
	if (noexec)
		opts[i++] = "noexec";
	opts[i++] = m;
	opts[i++] = size;
	if (owned) {
		opts[i++] = "uid=1000";
		opts[i++] = "gid=1000";
	}
	opts[i] = NULL;
	add_mount(mounts, dest, "tmpfs", "tmpfs", opts);
}

/* Nothing of the host or the daemon: only what interpreters need (the
 * posture check holds every sandbox's init to these names). */
const char *const bh_sandbox_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
				      "HOME=/work",
				      "LANG=C.UTF-8",
				      "TMPDIR=/tmp",
				      "PYTHONDONTWRITEBYTECODE=1",
				      "PYTHONUNBUFFERED=1",
				      "MPLBACKEND=Agg",
				      "MPLCONFIGDIR=/tmp/.matplotlib",
				      /* Debian's matplotlib looks in /etc, which the
				       * sandbox does not share. */
				      "MATPLOTLIBRC=/usr/share/matplotlib/mpl-data/matplotlibrc",
				      NULL};

static cJSON *process_json(const struct bundle_spec *s)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddBoolToObject(p, "terminal", false);
	/* The init is the sandbox's root (an unprivileged host uid) and drops
	 * every program it starts to uid 1000 with no capabilities; a different
	 * uid is what keeps user code away from the init's descriptors. */
	cJSON *user = cJSON_AddObjectToObject(p, "user");
	cJSON_AddNumberToObject(user, "uid", 0);
	cJSON_AddNumberToObject(user, "gid", 0);
	static const char *const args[] = {BH_INIT_SANDBOX_PATH, NULL};
	cJSON_AddItemToObject(p, "args", strings(args));
	cJSON_AddStringToObject(p, "cwd", "/work");
	cJSON *env = strings(bh_sandbox_env);
	/* ---- egress: only a sandbox that may use a profile is told of the
	 * proxy and trusts the broker's CA ---- */
	if (s->egress_dir && s->egress_proxy)
		for (const char *const *v = bh_egress_env; *v; v++)
			cJSON_AddItemToArray(env, cJSON_CreateString(*v));
	cJSON_AddItemToObject(p, "env", env);
	cJSON *caps = cJSON_AddObjectToObject(p, "capabilities");
	static const char *const all_caps[] = {"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_PTRACE",
					       "CAP_NET_RAW", "CAP_CHOWN", "CAP_DAC_OVERRIDE",
					       "CAP_SETUID", "CAP_SETGID", NULL};
	/* setuid/setgid to drop to the sandbox user, setpcap to empty each
	 * program's bounding set, kill for the sweep. Nothing is inheritable or
	 * ambient, so programs start with none. */
	static const char *const init_caps[] = {"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_KILL",
						NULL};
	static const char *const none[] = {NULL};
	const char *const *set = dropped(s, "caps") ? all_caps : init_caps;
	static const char *const kinds[] = {"bounding", "effective", "permitted"};
	for (size_t i = 0; i < 3; i++)
		cJSON_AddItemToObject(caps, kinds[i], strings(set));
	cJSON_AddItemToObject(caps, "inheritable", strings(dropped(s, "caps") ? all_caps : none));
	cJSON_AddItemToObject(caps, "ambient", strings(dropped(s, "caps") ? all_caps : none));
	cJSON *rl = cJSON_AddArrayToObject(p, "rlimits");
	struct {
		const char *type;
		double value;
	} limits[] = {
		{"RLIMIT_NOFILE", 1024},
		{"RLIMIT_NPROC", s->nproc},
		{"RLIMIT_CORE", 0},
		{"RLIMIT_FSIZE", 1073741824.0},
	};
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "type", limits[i].type);
		cJSON_AddNumberToObject(r, "hard", limits[i].value);
		cJSON_AddNumberToObject(r, "soft", limits[i].value);
		cJSON_AddItemToArray(rl, r);
	}
	cJSON_AddBoolToObject(p, "noNewPrivileges", !dropped(s, "no-new-privs"));
	cJSON_AddNumberToObject(p, "oomScoreAdj", BH_SANDBOX_OOM_SCORE_ADJ);
	return p;
}

static cJSON *mounts_json(const struct bundle_spec *s)
{
	cJSON *m = cJSON_CreateArray();
	static const char *const proc_opts[] = {"nosuid", "noexec", "nodev", NULL};
	add_mount(m, "/proc", "proc", "proc", proc_opts);
	/* A fresh /dev every time (the runc /dev CVEs hit shared ones). */
	static const char *const dev_opts[] = {"nosuid", "strictatime", "mode=755", "size=65536k", NULL};
	add_mount(m, "/dev", "tmpfs", "tmpfs", dev_opts);
	static const char *const pts_opts[] = {"nosuid", "noexec", "newinstance", "ptmxmode=0666",
					       "mode=0620", NULL};
	add_mount(m, "/dev/pts", "devpts", "devpts", pts_opts);
	add_tmpfs(m, "/dev/shm", "1777", s->shm_mb, false, true);
	add_tmpfs(m, "/tmp", "1777", s->tmp_mb, false, false);
	add_tmpfs(m, "/work", "0755", s->work_mb, s->userns, false);
	static const char *const ro_bind[] = {"rbind", "ro", "nosuid", "nodev", NULL};
	add_mount(m, "/usr", "bind", "/usr", ro_bind);
	static const char *const ro_file[] = {"bind", "ro", "nosuid", "nodev", NULL};
	add_mount(m, "/etc/ld.so.cache", "bind", "/etc/ld.so.cache", ro_file);
	/* Debian's alternatives pick libblas and friends (numpy needs them);
	 * fontconfig's configuration serves matplotlib. Host configuration
	 * that holds no secrets, bound read-only where the host has it. */
	static const char *const host_etc[] = {"/etc/alternatives", "/etc/fonts", NULL};
	for (const char *const *p = host_etc; *p; p++)
		if (access(*p, F_OK) == 0)
			add_mount(m, *p, "bind", *p, ro_bind);
	add_mount(m, BH_INIT_SANDBOX_PATH, "bind", s->init_path, ro_file);
	if (s->interp_dir && *s->interp_dir)
		add_mount(m, BH_INTERP_SANDBOX_DIR, "bind", s->interp_dir, ro_bind);
	/* ---- egress: the broker's socket and the CA bundle, read-only (a
	 * socket connects on a read-only mount; nothing can be written into
	 * the host's directory); runsc reaches the socket with --host-uds ---- */
	if (s->egress_dir) {
		static const char *const egress_opts[] = {"rbind", "ro", "nosuid", "nodev", "noexec",
							  NULL};
		add_mount(m, BH_PROTO_EGRESS_DIR, "bind", s->egress_dir, egress_opts);
	}
	return m;
}

/* clone3 answers ENOSYS so glibc falls back to clone, whose namespace flags
 * seccomp can see. runsc turns every errno into EPERM, which would break
 * thread creation instead: under gVisor clone3 is allowed through to the
 * Sentry, which has no clone3 and answers ENOSYS itself. */
static void allow_clone3(cJSON *profile)
{
	cJSON *rule;
	cJSON_ArrayForEach(rule, cJSON_GetObjectItem(profile, "syscalls"))
	{
		cJSON *names = cJSON_GetObjectItem(rule, "names");
		if (cJSON_GetArraySize(names) != 1 ||
		    strcmp(cJSON_GetArrayItem(names, 0)->valuestring, "clone3"))
			continue;
		cJSON_ReplaceItemInObject(rule, "action", cJSON_CreateString("SCMP_ACT_ALLOW"));
		cJSON_DeleteItemFromObject(rule, "errnoRet");
	}
}

/* Test hook "seccomp-masks": the profile as it was before issue 14, a
 * deny-list over an allow default whose argument rules compare all 64 bits
 * of a register the kernel reads 32 of. */
static void unmask(cJSON *profile)
{
	cJSON_ReplaceItemInObject(profile, "defaultAction", cJSON_CreateString("SCMP_ACT_ALLOW"));
	cJSON_DeleteItemFromObject(profile, "defaultErrnoRet");
	cJSON *rules = cJSON_GetObjectItem(profile, "syscalls");
	for (int i = cJSON_GetArraySize(rules) - 1; i >= 0; i--) {
		cJSON *rule = cJSON_GetArrayItem(rules, i), *a;
		if (!strcmp(cJSON_GetObjectItem(rule, "action")->valuestring, "SCMP_ACT_ALLOW")) {
			cJSON_DeleteItemFromArray(rules, i);
			continue;
		}
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(rule, "args"))
		{
			if (cJSON_GetObjectItem(a, "value")->valuedouble != 4294967295.0)
				continue;
			double v = cJSON_GetObjectItem(a, "valueTwo")->valuedouble;
			cJSON_ReplaceItemInObject(a, "value", cJSON_CreateNumber(v));
			cJSON_DeleteItemFromObject(a, "valueTwo");
			cJSON_ReplaceItemInObject(a, "op", cJSON_CreateString("SCMP_CMP_EQ"));
		}
	}
}

static cJSON *linux_json(const struct bundle_spec *s, bh_error **err)
{
	cJSON *l = cJSON_CreateObject();
	cJSON *ns = cJSON_AddArrayToObject(l, "namespaces");
	const char *kinds[] = {"pid", "ipc", "uts", "mount", "network", "user", "cgroup"};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (!strcmp(kinds[i], "user") && (!s->userns || dropped(s, "userns")))
			continue;
		if (!strcmp(kinds[i], "network") && dropped(s, "netns"))
			continue;
		cJSON *n = cJSON_CreateObject();
		cJSON_AddStringToObject(n, "type", kinds[i]);
		cJSON_AddItemToArray(ns, n);
	}
	if (s->userns && !dropped(s, "userns")) {
		const char *maps[] = {"uidMappings", "gidMappings"};
		for (size_t i = 0; i < 2; i++) {
			cJSON *arr = cJSON_AddArrayToObject(l, maps[i]);
			cJSON *mm = cJSON_CreateObject();
			cJSON_AddNumberToObject(mm, "containerID", 0);
			cJSON_AddNumberToObject(mm, "hostID", s->host_uid_base);
			cJSON_AddNumberToObject(mm, "size", 65536);
			cJSON_AddItemToArray(arr, mm);
		}
	}
	cJSON_AddStringToObject(l, "cgroupsPath", s->cgroup_path);
	cJSON *res = cJSON_AddObjectToObject(l, "resources");
	cJSON *devs = cJSON_AddArrayToObject(res, "devices");
	cJSON *deny = cJSON_CreateObject();
	cJSON_AddBoolToObject(deny, "allow", false);
	cJSON_AddStringToObject(deny, "access", "rwm");
	cJSON_AddItemToArray(devs, deny);
	cJSON *mem = cJSON_AddObjectToObject(res, "memory");
	double bytes = (double)s->memory_mb * 1024.0 * 1024.0;
	cJSON_AddNumberToObject(mem, "limit", bytes);
	cJSON_AddNumberToObject(mem, "swap", bytes); /* memory+swap = memory: no swap */
	cJSON *pids = cJSON_AddObjectToObject(res, "pids");
	cJSON_AddNumberToObject(pids, "limit", s->pids);
	cJSON *cpu = cJSON_AddObjectToObject(res, "cpu");
	cJSON_AddNumberToObject(cpu, "shares", 1024);
	cJSON_AddNumberToObject(cpu, "period", 100000);
	cJSON_AddNumberToObject(cpu, "quota", 100.0 * s->cpu_millis);
	/* Docker's list, and /proc/softirqs beside /proc/interrupts: per-CPU
	 * interrupt counts of the host time its other tenants' activity. */
	static const char *const masked[] = {
		"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/softirqs", "/proc/timer_list", "/proc/timer_stats",
		"/proc/sched_debug", "/proc/scsi", "/proc/sysrq-trigger", "/sys/devices/virtual/powercap",
		"/sys/firmware", NULL};
	cJSON_AddItemToObject(l, "maskedPaths", strings(masked));
	static const char *const ro[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", NULL};
	cJSON_AddItemToObject(l, "readonlyPaths", strings(ro));
	if (!dropped(s, "seccomp")) {
		cJSON *sc = cJSON_Parse(bh_seccomp_profile_json);
		if (!sc) {
			cJSON_Delete(l);
			return bh_fail(err, BH_E_INVALID, 0, "the embedded seccomp profile is not JSON"),
			       NULL;
		}
		if (!s->seccomp_errno_ret)
			allow_clone3(sc);
		if (dropped(s, "seccomp-masks"))
			unmask(sc);
		if (dropped(s, "seccomp-unknown-name")) {
			/* Test hook: a name no libseccomp knows, as a deny rule. */
			cJSON *r = cJSON_CreateObject();
			static const char *const bogus[] = {"bulkhead_no_such_syscall", NULL};
			cJSON_AddItemToObject(r, "names", strings(bogus));
			cJSON_AddStringToObject(r, "action", "SCMP_ACT_ERRNO");
			cJSON_AddNumberToObject(r, "errnoRet", 1);
			cJSON_AddItemToArray(cJSON_GetObjectItem(sc, "syscalls"), r);
		}
		cJSON_AddItemToObject(l, "seccomp", sc);
	}
	return l;
}

char *bundle_json(const struct bundle_spec *s, bh_error **err)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "ociVersion", "1.0.2");
	cJSON_AddItemToObject(root, "process", process_json(s));
	cJSON *r = cJSON_AddObjectToObject(root, "root");
	cJSON_AddStringToObject(r, "path", s->rootfs);
	cJSON_AddBoolToObject(r, "readonly", !dropped(s, "readonly-root"));
	cJSON_AddStringToObject(root, "hostname", "sandbox");
	/* crun skips a profile name its libseccomp cannot resolve; for a rule
	 * that denies, that is a hole. Refuse the profile instead (runsc skips
	 * such names too, and has no such switch: the allowlist makes a skipped
	 * name a refusal there). */
	cJSON *ann = cJSON_AddObjectToObject(root, "annotations");
	cJSON_AddStringToObject(ann, "run.oci.seccomp_fail_unknown_syscall", "1");
	cJSON_AddItemToObject(root, "mounts", mounts_json(s));
	cJSON *l = linux_json(s, err);
	if (!l) {
		cJSON_Delete(root);
		return NULL;
	}
	cJSON_AddItemToObject(root, "linux", l);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	char *copy = xstrdup(text);
	cJSON_free(text);
	return copy;
}

int bundle_write(const char *dir, const struct bundle_spec *s, bh_error **err)
{
	if (mkdir_p(dir, 0700) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create bundle directory %s", dir);
	cleanup_free char *text = bundle_json(s, err);
	if (!text)
		return -1;
	cleanup_free char *path = xasprintf("%s/config.json", dir);
	if (write_file_atomic(path, text, strlen(text), 0600) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "write %s", path);
	return 0;
}

/* The shared read-only root: symlinks into the host's /usr (bound read-only),
 * empty mount points, and a generated minimal /etc. Built once per state
 * directory; rebuilding is idempotent. */
int rootfs_prepare(const char *rootfs, bh_error **err)
{
	static const char *const dirs[] = {"usr", "etc/alternatives", "etc/fonts", "proc", "dev",
					   "sys", "work", "opt/bulkhead/interp",
					   "run", /* ---- egress: its mount point ---- */
					   NULL};
	for (const char *const *d = dirs; *d; d++) {
		cleanup_free char *p = xasprintf("%s/%s", rootfs, *d);
		if (mkdir_p(p, 0755) < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "create %s", p);
	}
	/* runc ignores a tmpfs's mode and takes the mount point's: keep 1777.
	 * Changed through a descriptor opened with no link followed. */
	cleanup_free char *tmp = xasprintf("%s/tmp", rootfs);
	cleanup_close int tmp_fd = mkdir_p(tmp, 01777) < 0 ? -1
					: open_nofollow(AT_FDCWD, tmp, O_RDONLY | O_DIRECTORY, 0);
	if (tmp_fd < 0 || fchmod(tmp_fd, 01777) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", tmp);
	/* The rootfs's own links, made inside it (they are resolved inside the
	 * sandbox, never by us). */
	static const char *const links[][2] = {
		{"bin", "usr/bin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}, {"sbin", "usr/sbin"},
		{"etc/localtime", "/usr/share/zoneinfo/Etc/UTC"}};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		cleanup_free char *p = xasprintf("%s/%s", rootfs, links[i][0]);
		cleanup_free char *base = NULL;
		cleanup_close int dir = open_parent_nofollow(p, &base);
		if (dir < 0 || (symlinkat(links[i][1], dir, base) < 0 && errno != EEXIST))
			return bh_fail(err, BH_E_SYSTEM, errno, "symlink %s", p);
	}
	/* Bind mounts of single files (the init, ld.so.cache) need files as
	 * mount points. */
	static const struct {
		const char *name, *text;
	} files[] = {
		{"etc/passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\n"
			       "sandbox:x:1000:1000:sandbox:/work:/bin/sh\n"
			       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
		{"etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
		{"etc/hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n"},
		{"etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n"},
		{"etc/resolv.conf", ""},
		{"etc/ld.so.cache", ""},
		{"opt/bulkhead/bulkhead-init", ""},
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		cleanup_free char *p = xasprintf("%s/%s", rootfs, files[i].name);
		size_t have = 0;
		cleanup_free char *cur = read_file(p, 1 << 16, &have);
		if (cur && !strcmp(cur, files[i].text))
			continue;
		if (write_file_atomic(p, files[i].text, strlen(files[i].text), 0644) < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "write %s", p);
	}
	return 0;
}
