/* Tier evidence: a tier is offered only when a throwaway sandbox of its
 * runtime proves, from inside, the walls the README promises ("The walls of
 * one sandbox"), plus what the host can see of it from outside. The verdict
 * is cached, keyed by everything that could change it: the runtime binary,
 * the kernel and boot, the init binary, the seccomp profile and the limits. */
#include "engine_priv.h"
#include "probe_keys.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#define EVIDENCE_FORMAT 2 /* bump when the checks change */
#define PROBE_TIMEOUT_MS 20000u

struct proof {
	bh_engine *e;
	enum bh_tier tier;
	struct sandbox *sb;       /* may be gone by the time the host views return */
	char sb_name[40];         /* so the host views never touch a freed sandbox */
	const struct runtime *rt;
	char *probe_out;           /* key=value lines from inside */
	char *host_state, *host_ps; /* runsc's view from outside */
	int host_views_left;        /* state and ps, asked at once */
	char *host_view_failure;
	long long pids_max, mem_limit;
	char key[65];
};

/* ---- report lines ---- */

static void slot_reset(struct tier_slot *s)
{
	for (size_t i = 0; i < s->n_lines; i++) {
		free((char *)s->lines[i].name);
		free((char *)s->lines[i].value);
		free((char *)s->lines[i].expect);
	}
	free(s->lines);
	free(s->version);
	free(s->reason);
	enum bh_tier t = s->report.tier;
	memset(s, 0, sizeof *s);
	s->report.tier = t;
	s->report.runtime = "";
	s->report.version = "";
	s->report.reason = "";
}

static void slot_sync(struct tier_slot *s)
{
	s->report.lines = s->lines;
	s->report.n_lines = s->n_lines;
	s->report.version = s->version ? s->version : "";
	s->report.reason = s->reason ? s->reason : "";
}

static void add_line(struct tier_slot *s, const char *name, const char *value, const char *expect,
		     bool ok)
{
	if (s->n_lines == s->cap_lines) {
		s->cap_lines = s->cap_lines ? s->cap_lines * 2 : 16;
		s->lines = realloc(s->lines, s->cap_lines * sizeof *s->lines);
		if (!s->lines)
			abort();
	}
	s->lines[s->n_lines++] = (struct bh_evidence_line){
		.name = xstrdup(name), .value = xstrdup(value), .expect = xstrdup(expect), .ok = ok};
	slot_sync(s);
}

static void set_reason(struct tier_slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(struct tier_slot *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(s->reason);
	if (vasprintf(&s->reason, fmt, ap) < 0)
		abort();
	va_end(ap);
	slot_sync(s);
}

/* ---- the tiers no runtime provides ---- */

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

void evidence_vm_and_below(bh_engine *e)
{
	struct tier_slot *none = &e->tiers[BH_TIER_NONE], *proc = &e->tiers[BH_TIER_PROCESS],
			 *vm = &e->tiers[BH_TIER_VM];
	slot_reset(none);
	set_reason(none, "bulkhead never runs code without walls");
	slot_reset(proc);
	set_reason(proc, "bulkhead has no in-process interpreter; its weakest tier is container");
	slot_reset(vm);
	vm->report.runtime = "";
	bool kvm = exists("/dev/kvm");
	bool pvm = exists("/sys/module/kvm_pvm");
	static const char *const vmms[] = {"/usr/bin/firecracker", "/usr/bin/cloud-hypervisor",
					   "/usr/bin/qemu-system-x86_64", NULL};
	const char *vmm = NULL;
	for (const char *const *v = vmms; *v; v++)
		if (exists(*v) && !vmm)
			vmm = *v;
	add_line(vm, "/dev/kvm", kvm ? "present" : "absent", "present", kvm);
	add_line(vm, "kvm flavour", pvm ? "kvm_pvm (Pagetable-based VM)" : "stock", "stock", !pvm);
	add_line(vm, "virtual machine monitor", vmm ? vmm : "none installed", "firecracker, cloud-hypervisor or qemu", vmm != NULL);
	if (!kvm)
		set_reason(vm, "no /dev/kvm on this host, and bulkhead has no vm runtime");
	else if (pvm)
		set_reason(vm, "/dev/kvm is a PVM hypervisor (kvm_pvm): it boots only PVM-enabled guest "
			       "kernels, stock guests hang; bulkhead has no vm runtime for it");
	else
		set_reason(vm, "bulkhead has no vm runtime yet (%s)",
			   vmm ? "a monitor is installed but no guest is proven" : "no monitor installed");
}

/* ---- the cache ---- */

static void cache_key(bh_engine *e, const struct runtime *rt, char out[65])
{
	struct utsname u;
	uname(&u);
	cleanup_free char *boot = read_file("/proc/sys/kernel/random/boot_id", 128, NULL);
	/* The bundle itself (seccomp profile, mounts, limits) is part of the key:
	 * any change to the walls is proven again. */
	struct bundle_spec spec;
	sandbox_bundle_spec(e, rt->ops->tier, &spec);
	cleanup_free char *bundle = bundle_json(&spec, NULL);
	char walls[65];
	sha256_hex(bundle ? bundle : "", bundle ? strlen(bundle) : 0, walls);
	/* ---- egress: a runtime flag (runsc's --host-uds) is a wall too ---- */
	cleanup_free char *material =
		xasprintf("format=%d runtime=%s kernel=%s %s boot=%s init=%s bundle=%s%s", EVIDENCE_FORMAT,
			  rt->hash, u.release, u.version, boot ? rtrim(boot) : "", e->init_hash, walls,
			  rt->host_uds ? " host-uds=open" : "");
	sha256_hex(material, strlen(material), out);
}

static char *cache_path(bh_engine *e, const struct runtime *rt)
{
	return xasprintf("%s/evidence-%s.json", e->evidence_dir, rt->ops->name);
}

static bool cache_load(bh_engine *e, struct tier_slot *s, const struct runtime *rt, const char *key)
{
	cleanup_free char *path = cache_path(e, rt);
	cleanup_free char *text = read_file(path, 1 << 20, NULL);
	if (!text)
		return false;
	cJSON *j = cJSON_Parse(text);
	if (!j)
		return false;
	bool ok = false;
	cJSON *k = cJSON_GetObjectItem(j, "key");
	cJSON *lines = cJSON_GetObjectItem(j, "lines");
	if (cJSON_IsString(k) && !strcmp(k->valuestring, key) && cJSON_IsTrue(cJSON_GetObjectItem(j, "offered")) &&
	    cJSON_IsArray(lines)) {
		cJSON *l;
		cJSON_ArrayForEach(l, lines)
		{
			cJSON *n = cJSON_GetObjectItem(l, "name"), *v = cJSON_GetObjectItem(l, "value"),
			      *x = cJSON_GetObjectItem(l, "expect");
			if (cJSON_IsString(n) && cJSON_IsString(v) && cJSON_IsString(x))
				add_line(s, n->valuestring, v->valuestring, x->valuestring,
					 cJSON_IsTrue(cJSON_GetObjectItem(l, "ok")));
		}
		ok = s->n_lines > 0;
	}
	cJSON_Delete(j);
	return ok;
}

static void cache_store(bh_engine *e, const struct tier_slot *s, const struct runtime *rt,
			const char *key)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "key", key);
	cJSON_AddBoolToObject(j, "offered", s->report.offered);
	cJSON_AddNumberToObject(j, "checked_unix_ms", (double)now_real_ms());
	cJSON *lines = cJSON_AddArrayToObject(j, "lines");
	for (size_t i = 0; i < s->n_lines; i++) {
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "name", s->lines[i].name);
		cJSON_AddStringToObject(l, "value", s->lines[i].value);
		cJSON_AddStringToObject(l, "expect", s->lines[i].expect);
		cJSON_AddBoolToObject(l, "ok", s->lines[i].ok);
		cJSON_AddItemToArray(lines, l);
	}
	char *text = cJSON_Print(j);
	cJSON_Delete(j);
	cleanup_free char *path = cache_path(e, rt);
	if (write_file_atomic(path, text, strlen(text), 0600) < 0)
		bh_log(e, BH_LOG_WARN, "cannot cache evidence in %s: %s", path, strerror(errno));
	cJSON_free(text);
}

/* ---- judging what the probe saw ---- */

static const char *kv(const char *text, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			size_t vlen = len - klen - 1;
			if (vlen >= outlen)
				vlen = outlen - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return out;
		}
		p = nl ? nl + 1 : NULL;
	}
	snprintf(out, outlen, "(not reported)");
	return out;
}

static void check_eq(struct tier_slot *s, const char *probe, const char *name, const char *key,
		     const char *expect)
{
	char v[512];
	kv(probe, key, v, sizeof v);
	add_line(s, name, v, expect, !strcmp(v, expect));
}

static bool has_word(const char *haystack, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(haystack, word); p; p = strstr(p + 1, word)) {
		bool start = p == haystack || p[-1] == ' ' || p[-1] == ',';
		bool end = p[n] == '\0' || p[n] == ' ' || p[n] == ',';
		if (start && end)
			return true;
	}
	return false;
}

static void check_tmpfs(struct tier_slot *s, const char *probe, const char *mnt, bool kernel)
{
	char key[64], name[64], v[512];
	snprintf(key, sizeof key, PROBE_MOUNT "%s", mnt);
	snprintf(name, sizeof name, "%s mount", mnt);
	kv(probe, key, v, sizeof v);
	/* gVisor's mount table leaves out nosuid/nodev; its Sentry has no setuid
	 * programs or device nodes to honour them for, so there only the type
	 * is checked. */
	bool ok = !strncmp(v, "tmpfs ", 6) &&
		  (kernel || (has_word(v, "nosuid") && has_word(v, "nodev")));
	add_line(s, name, v, kernel ? "tmpfs" : "tmpfs, nosuid, nodev", ok);
}

static void check_readonly_mount(struct tier_slot *s, const char *probe, const char *mnt)
{
	char key[64], name[64], v[512];
	snprintf(key, sizeof key, PROBE_MOUNT "%s", mnt);
	snprintf(name, sizeof name, "%s mounted read-only", mnt);
	kv(probe, key, v, sizeof v);
	/* "<fstype> <super options> <mount options>": the last field decides. */
	const char *opts = strrchr(v, ' ');
	add_line(s, name, v, "ro", opts && has_word(opts + 1, "ro"));
}

static bool env_is_clean(const char *names)
{
	static const char *const allowed[] = {"PATH", "HOME", "LANG", "TMPDIR",
					      "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
					      "MPLBACKEND", "MPLCONFIGDIR", "MATPLOTLIBRC", NULL};
	cleanup_free char *copy = xstrdup(names);
	for (char *save = NULL, *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (const char *const *a = allowed; *a; a++)
			found |= !strcmp(*a, n);
		if (!found)
			return false;
	}
	return true;
}

/* The probe tried each argument rule plain and with bit 32 set
 * ("<plain>/<high>"): the kernel reads the low 32 bits, so must the rule. */
static bool split_pair(const char *v, char plain[32], char hi[32])
{
	const char *slash = strchr(v, '/');
	if (!slash || (size_t)(slash - v) >= 32 || strlen(slash + 1) >= 32)
		return false;
	snprintf(plain, 32, "%.*s", (int)(slash - v), v);
	snprintf(hi, 32, "%s", slash + 1);
	return true;
}

static void check_refused_pair(struct tier_slot *s, const char *probe, const char *name,
			       const char *key)
{
	char v[128], plain[32], hi[32], shown[192];
	kv(probe, key, v, sizeof v);
	bool ok = split_pair(v, plain, hi) && strcmp(plain, "ok") && !strcmp(plain, hi);
	if (split_pair(v, plain, hi))
		snprintf(shown, sizeof shown, "%s (plain form: %s)", hi, plain);
	else
		snprintf(shown, sizeof shown, "%s", v);
	add_line(s, name, shown, "refused, as the plain form is", ok);
}

/* Several rules on one line: every key refused alike in both forms (deny),
 * or allowed in both (allow). The value names the first that is not. */
static void check_pairs(struct tier_slot *s, const char *probe, const char *name,
			const char *const *keys, bool allow)
{
	char v[128], plain[32], hi[32], shown[192];
	size_t n = 0;
	bool ok = true;
	snprintf(shown, sizeof shown, "%s in both forms", allow ? "ok" : "refused");
	for (; keys[n]; n++) {
		kv(probe, keys[n], v, sizeof v);
		bool good = split_pair(v, plain, hi) &&
			    (allow ? !strcmp(plain, "ok") && !strcmp(hi, "ok")
				   : strcmp(plain, "ok") && !strcmp(plain, hi));
		if (!good && ok)
			snprintf(shown, sizeof shown, "%s: %s", strrchr(keys[n], '.') + 1, v);
		ok &= good;
	}
	add_line(s, name, shown, allow ? "ok in both forms" : "refused in both forms, alike", ok);
}

static void judge_seccomp(struct tier_slot *s, const char *probe, bool kernel)
{
	check_refused_pair(s, probe, "socket(AF_VSOCK) with bit 32 set",
			   PROBE_SECCOMP_SOCKET_AF_VSOCK);
	check_refused_pair(s, probe, "socket(AF_PACKET) with bit 32 set",
			   PROBE_SECCOMP_SOCKET_AF_PACKET);
	check_refused_pair(s, probe, "ioctl(TIOCSTI) with bit 32 set", PROBE_SECCOMP_IOCTL_TIOCSTI);
	check_refused_pair(s, probe, "ioctl(TIOCLINUX) with bit 32 set",
			   PROBE_SECCOMP_IOCTL_TIOCLINUX);
	static const char *const clones[] = {
		PROBE_SECCOMP_CLONE_NEWTIME, PROBE_SECCOMP_CLONE_NEWNS,
		PROBE_SECCOMP_CLONE_NEWCGROUP, PROBE_SECCOMP_CLONE_NEWUTS,
		PROBE_SECCOMP_CLONE_NEWIPC, PROBE_SECCOMP_CLONE_NEWUSER,
		PROBE_SECCOMP_CLONE_NEWPID, PROBE_SECCOMP_CLONE_NEWNET,
		NULL};
	check_pairs(s, probe, "clone(CLONE_NEW*) with bit 32 set", clones, false);
	static const char *const devices[] = {PROBE_SECCOMP_MKNOD_CHR, PROBE_SECCOMP_MKNOD_BLK,
					      PROBE_SECCOMP_MKNODAT_CHR, PROBE_SECCOMP_MKNODAT_BLK,
					      NULL};
	check_pairs(s, probe, "mknod(at) of a device with bit 32 set", devices, false);
	static const char *const allowed[] = {
		PROBE_SECCOMP_SOCKET_AF_UNIX, PROBE_SECCOMP_SOCKET_AF_INET,
		PROBE_SECCOMP_SOCKET_AF_INET6, PROBE_SECCOMP_SOCKET_AF_NETLINK,
		PROBE_SECCOMP_IOCTL_FIOCLEX, PROBE_SECCOMP_CLONE_FORK,
		PROBE_SECCOMP_MKNOD_FIFO, PROBE_SECCOMP_MKNODAT_FIFO,
		NULL};
	check_pairs(s, probe, "allowed argument forms with bit 32 set", allowed, true);
	char v[512];
	/* Only the x86_64 ABI is in the profile: the others are the filter's
	 * bad-architecture action. gVisor has no i386 ABI (its Sentry reads int
	 * 0x80 as the x86_64 call of that number, 359: none). */
	kv(probe, PROBE_SECCOMP_I386_SOCKET, v, sizeof v);
	add_line(s, "i386 socket(AF_VSOCK) through int 0x80", v,
		 kernel ? "refused" : "killed by SIGSYS",
		 kernel ? strcmp(v, "ok") && strncmp(v, "(not", 4) : !strcmp(v, "killed by SIGSYS"));
	kv(probe, PROBE_SECCOMP_X32_GETPID, v, sizeof v);
	add_line(s, "x32 getpid", v, kernel ? "refused" : "killed by SIGSYS",
		 kernel ? strcmp(v, "ok") && strncmp(v, "(not", 4) : !strcmp(v, "killed by SIGSYS"));
	/* runsc answers EPERM for any errno rule, the default's included. */
	kv(probe, PROBE_SECCOMP_NEWER, v, sizeof v);
	add_line(s, "a syscall newer than the profile (listmount)", v,
		 kernel ? "EPERM (runsc's errno for every refusal)" : "ENOSYS",
		 !strcmp(v, kernel ? "EPERM" : "ENOSYS"));
}

static void judge(struct proof *p, struct tier_slot *s)
{
	const char *probe = p->probe_out ? p->probe_out : "";
	char v[512], exp[128];
	bool kernel = p->tier == BH_TIER_KERNEL;
	check_eq(s, probe, "root filesystem writable", PROBE_ROOT_WRITABLE, "0");
	check_eq(s, probe, "/usr writable", PROBE_USR_WRITABLE, "0");
	/* Not writable could be mere permissions (user code is not root):
	 * the mount itself must be read-only. */
	check_readonly_mount(s, probe, "/");
	check_readonly_mount(s, probe, "/usr");
	check_eq(s, probe, "writable mounts", PROBE_WRITABLE_MOUNTS, "/dev/shm,/tmp,/work");
	check_tmpfs(s, probe, "/tmp", kernel);
	check_tmpfs(s, probe, "/work", kernel);
	check_tmpfs(s, probe, "/dev/shm", kernel);
	check_eq(s, probe, "network interfaces", PROBE_NET_IFACES, "lo");
	kv(probe, PROBE_CONNECT_PUBLIC, v, sizeof v);
	add_line(s, "connect to 1.1.1.1:80", v, "refused at once (ENETUNREACH)",
		 !strcmp(v, "ENETUNREACH") || !strcmp(v, "EHOSTUNREACH") || !strcmp(v, "ENETDOWN"));
	check_eq(s, probe, "effective capabilities", PROBE_CAP_EFF, "0000000000000000");
	check_eq(s, probe, "bounding capabilities", PROBE_CAP_BND, "0000000000000000");
	check_eq(s, probe, "NoNewPrivs", PROBE_NO_NEW_PRIVS_PRCTL, "1");
	if (!kernel)
		check_eq(s, probe, "Seccomp mode", PROBE_SECCOMP_MODE, "2");
	check_eq(s, probe, "unshare(CLONE_NEWUSER)", PROBE_UNSHARE_USER, "EPERM");
	judge_seccomp(s, probe, kernel);
	check_eq(s, probe, "ptrace(ATTACH, 1)", PROBE_PTRACE_PID1, "EPERM");
	check_eq(s, probe, "running as uid", PROBE_UID, "1000");
	if (!kernel) {
		kv(probe, PROBE_UID_MAP, v, sizeof v);
		add_line(s, "user namespace uid_map", v, "0 <own host range> 65536",
			 strncmp(v, "0 0 ", 4) != 0 && strstr(v, " 65536") != NULL);
	}
	check_eq(s, probe, "open descriptors of user code", PROBE_FDS, "0,1,2");
	check_eq(s, probe, "init runs as another uid", PROBE_PID1_UID, "0");
	check_eq(s, probe, "init descriptors openable", PROBE_PID1_FDS_OPENABLE, "none");
	check_eq(s, probe, "/proc/1/mem readable", PROBE_PID1_MEM_READABLE, "0");
	if (kernel) {
		/* gVisor 20221219 lists /proc/1/fd and shows /proc/1/environ to
		 * every uid (fixed upstream in 2025). The wall that matters is the
		 * line above: none of those descriptors opens, and the init's
		 * environment is the sandbox's own, checked below. */
		kv(probe, PROBE_PID1_FD_READABLE, v, sizeof v);
		add_line(s, "/proc/1/fd listable", v, "0, or names only under gVisor", true);
		kv(probe, PROBE_PID1_ENVIRON_READABLE, v, sizeof v);
		add_line(s, "/proc/1/environ readable", v, "0, or the sandbox's own env under gVisor",
			 true);
	} else {
		check_eq(s, probe, "/proc/1/fd readable", PROBE_PID1_FD_READABLE, "0");
		check_eq(s, probe, "/proc/1/environ readable", PROBE_PID1_ENVIRON_READABLE, "0");
	}
	kv(probe, PROBE_ENVIRON, v, sizeof v);
	add_line(s, "environment names", v, "PATH, HOME, LANG, TMPDIR, PYTHON*, matplotlib's only",
		 env_is_clean(v));
	struct bundle_spec spec;
	sandbox_bundle_spec(p->e, p->tier, &spec);
	uint32_t pids = spec.pids;
	snprintf(v, sizeof v, "%lld", p->pids_max);
	snprintf(exp, sizeof exp, "%u", pids);
	add_line(s, "pids.max (host cgroup)", v, exp, p->pids_max == (long long)pids);
	snprintf(v, sizeof v, "%lld", p->mem_limit);
	snprintf(exp, sizeof exp, "%llu", (unsigned long long)p->e->memory_limit_mb * 1048576ull);
	add_line(s, "memory limit (host cgroup)", v, exp,
		 p->mem_limit == (long long)p->e->memory_limit_mb * 1048576ll);
	kv(probe, PROBE_KERNEL_RELEASE, v, sizeof v);
	if (kernel) {
		add_line(s, "kernel release inside", v, "4.4.0 (gVisor's Sentry)", !strcmp(v, "4.4.0"));
		const char *st = p->host_state ? p->host_state : "";
		bool running = strstr(st, "\"status\": \"running\"") || strstr(st, "\"status\":\"running\"");
		add_line(s, "runsc state (host)", running ? "running" : (*st ? "not running" : "no answer"),
			 "running", running);
		size_t procs = 0;
		for (const char *q = p->host_ps ? p->host_ps : ""; (q = strchr(q, '\n')); q++)
			procs++;
		snprintf(v, sizeof v, "%zu processes listed", procs > 0 ? procs - 1 : 0);
		add_line(s, "runsc ps (host)", v, "the sandbox's processes", procs >= 2);
		kv(probe, PROBE_SYSLOG, v, sizeof v);
		add_line(s, "syslog (diagnostic)", v, "any", true);
	} else {
		struct utsname u;
		uname(&u);
		add_line(s, "kernel release inside", v, "the host's (shared kernel)",
			 !strcmp(v, u.release));
	}
}

/* ---- the proof's steps ---- */

static void proof_finish(struct proof *p, const char *failure)
{
	bh_engine *e = p->e;
	struct tier_slot *s = &e->tiers[p->tier];
	const struct runtime *rt = &e->runtimes[p->tier];
	/* An engine that closes with a proof in flight (a command done with
	 * the tier it needed) ended that proof itself: the tier is unproven,
	 * not failed, and saying otherwise would be a warning about nothing. */
	bool cut_short = failure && e->closing;
	if (cut_short) {
		set_reason(s, "not proven: the engine closed before its smoke test finished");
	} else if (failure) {
		set_reason(s, "smoke test could not run: %s", failure);
	} else {
		judge(p, s);
		size_t bad = 0;
		const char *first = NULL;
		for (size_t i = 0; i < s->n_lines; i++) {
			if (!s->lines[i].ok) {
				bad++;
				if (!first)
					first = s->lines[i].name;
			}
		}
		s->report.offered = bad == 0;
		if (bad)
			set_reason(s, "smoke test failed %zu check%s (first: %s)", bad, bad == 1 ? "" : "s",
				   first);
		else
			cache_store(e, s, rt, p->key);
	}
	s->proving = false;
	s->waiting_for = NULL;
	slot_sync(s);
	bh_log(e, s->report.offered || cut_short ? BH_LOG_INFO : BH_LOG_WARN,
	       "tier %s (%s): %s (smoke test of %.2f s)", bh_tier_name(p->tier), rt->ops->name,
	       s->report.offered ? "offered" : s->reason, proof_seconds(e, p->tier));
	if (p->sb && sandbox_alive(e, p->sb))
		sandbox_close(e, p->sb);
	free(p->probe_out);
	free(p->host_state);
	free(p->host_ps);
	free(p->host_view_failure);
	enum bh_tier tier = p->tier;
	free(p);
	e->proofs_running--;
	engine_tier_proven(e, tier);
	if (e->proofs_running == 0)
		engine_proofs_done(e);
}

static void read_host_limits(struct proof *p)
{
	p->pids_max = cgroups_read_ll(&p->e->cg, "pids", p->sb_name, "pids.max");
	p->mem_limit = cgroups_read_ll(&p->e->cg, "memory", p->sb_name,
				       p->e->cg.pure_v2 ? "memory.max" : "memory.limit_in_bytes");
}

/* The host's views are asked at once (each is a runsc start, the slowest
 * part of a proof's tail on a busy host); the proof ends with the last. */
static void host_view_done(struct proof *p, const char *failure)
{
	if (failure && !p->host_view_failure)
		p->host_view_failure = xstrdup(failure);
	if (--p->host_views_left > 0)
		return;
	cleanup_free char *why = p->host_view_failure;
	p->host_view_failure = NULL;
	proof_finish(p, why);
}

static void spawn_host_view(struct proof *p, const char *verb, bh_child_fn fn)
{
	if (p->e->closing) {
		host_view_done(p, "the engine closed during the smoke test");
		return;
	}
	const char *const args[] = {verb, p->sb_name, NULL};
	char **argv = runtime_argv(p->rt, args);
	struct bh_child_spec spec = {.argv = (const char *const *)argv,
				     .fd_in = -1,
				     .fd_out = BH_CHILD_CAPTURE,
				     .fd_err = BH_CHILD_CAPTURE,
				     .timeout_ms = 15000};
	bh_error *err = NULL;
	if (child_spawn(p->e, &spec, fn, p, NULL, &err) < 0) {
		host_view_done(p, err->msg);
		bh_error_free(err);
	}
	argv_free(argv);
}

static void on_host_ps(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	(void)e;
	struct proof *p = arg;
	p->host_ps = xstrdup(r->output);
	host_view_done(p, NULL);
}

static void on_host_state(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	(void)e;
	struct proof *p = arg;
	p->host_state = xstrdup(r->output);
	host_view_done(p, NULL);
}

static void on_probe_done(bh_engine *e, void *arg, struct sandbox *sb,
			  const struct bh_exec_result *res, const bh_error *err)
{
	(void)e;
	(void)sb;
	struct proof *p = arg;
	if (err) {
		proof_finish(p, err->msg);
		return;
	}
	if (res->exit_code != 0) {
		char why[256];
		snprintf(why, sizeof why, "the probe exited %d: %.*s", res->exit_code,
			 (int)(res->errout_len < 200 ? res->errout_len : 200), (const char *)res->errout);
		proof_finish(p, why);
		return;
	}
	p->probe_out = xzalloc(res->out_len + 1);
	memcpy(p->probe_out, res->out, res->out_len);
	read_host_limits(p);
	/* While the sandbox still runs, look at it from the host as well. */
	if (p->tier == BH_TIER_KERNEL) {
		proof_step(e, p->tier, "runsc state and ps of its smoke sandbox, from the host");
		p->host_views_left = 2;
		spawn_host_view(p, "state", on_host_state);
		spawn_host_view(p, "ps", on_host_ps);
	} else {
		proof_finish(p, NULL);
	}
}

static void on_probe_open(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	struct proof *p = arg;
	if (err) {
		proof_finish(p, err->msg);
		return;
	}
	p->sb = sb;
	snprintf(p->sb_name, sizeof p->sb_name, "%s", sb->name);
	p->rt = sb->rt;
	proof_step(e, p->tier, "the probe inside its smoke sandbox");
	static const char *const argv[] = {BH_INIT_SANDBOX_PATH, BH_INIT_PROBE, NULL};
	struct bh_exec_request req = {
		.argv = argv, .timeout_ms = PROBE_TIMEOUT_MS, .output_cap = 65536};
	bh_error *e2 = NULL;
	if (sandbox_exec(e, sb, &req, on_probe_done, p, &e2) < 0) {
		proof_finish(p, e2->msg);
		bh_error_free(e2);
	}
}

static void prove(bh_engine *e, enum bh_tier tier)
{
	struct tier_slot *s = &e->tiers[tier];
	struct runtime *rt = &e->runtimes[tier];
	slot_reset(s);
	s->report.runtime = rt->ops->name;
	if (!rt->path) {
		set_reason(s, "%s", rt->why);
		return;
	}
	s->version = xstrdup(rt->version);
	slot_sync(s);
	struct proof *p = xzalloc(sizeof *p);
	p->e = e;
	p->tier = tier;
	cache_key(e, rt, p->key);
	snprintf(s->environment, sizeof s->environment, "bulkhead-sandbox:sha256:%s", p->key);
	if (!e->reprove && cache_load(e, s, rt, p->key)) {
		s->report.offered = true;
		s->report.cached = true;
		slot_sync(s);
		free(p);
		return;
	}
	s->proving = true;
	e->proofs_running++;
	proof_started(e, tier, tier == BH_TIER_KERNEL ? "its runsc smoke sandbox to boot"
						      : "its crun smoke sandbox to start");
	bh_error *err = NULL;
	/* ---- egress: proven as sessions' sandboxes are built ---- */
	if (sandbox_open_egress(e, tier, NULL, EGRESS_SOCKET, on_probe_open, p, &err) < 0) {
		e->proofs_running--;
		s->proving = false;
		set_reason(s, "smoke test could not start: %s", err->msg);
		bh_error_free(err);
		free(p);
	}
}

void evidence_start(bh_engine *e)
{
	for (int t = 0; t < BH_TIER_COUNT; t++)
		e->tiers[t].report.tier = (enum bh_tier)t;
	evidence_vm_and_below(e);
	/* Count both before starting either, so a quick failure of the first
	 * cannot announce "all proven" while the second is still to come. */
	e->proofs_running++;
	/* The kernel tier's proof is the longest (a gVisor boot): it starts
	 * first, and the two run side by side. */
	static const enum bh_tier runtime_tiers[] = {BH_TIER_KERNEL, BH_TIER_CONTAINER};
	for (size_t i = 0; i < sizeof runtime_tiers / sizeof runtime_tiers[0]; i++) {
		enum bh_tier t = runtime_tiers[i];
		if (e->prove_tiers && !(e->prove_tiers & (1u << t))) {
			/* A command that uses one tier does not pay for (or wait on
			 * the teardown of) another's throwaway sandbox. */
			struct tier_slot *s = &e->tiers[t];
			slot_reset(s);
			s->report.runtime = e->runtimes[t].ops->name;
			set_reason(s, "not proven: this command uses only another tier");
			continue;
		}
		prove(e, t);
	}
	if (--e->proofs_running == 0)
		engine_proofs_done(e);
}

void evidence_skip(bh_engine *e)
{
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		e->tiers[t].report.tier = (enum bh_tier)t;
		slot_reset(&e->tiers[t]);
		set_reason(&e->tiers[t], "not proven: this engine was opened only to collect or read");
	}
}

void evidence_free(bh_engine *e)
{
	for (int t = 0; t < BH_TIER_COUNT; t++)
		slot_reset(&e->tiers[t]);
}
