/* The posture check: every sandbox, once started, is looked at from the
 * host's /proc before it is used (gVisor's sandboxposture test, done on
 * every start rather than once). The tier's smoke test proved the recipe;
 * this proves the sandbox in hand was built from it.
 *
 *   crun:  the container's init  - Seccomp 2, NoNewPrivs 1, only the caps
 *          the init keeps, a non-root host uid, every namespace but time its
 *          own, only /dev/null, pipes and anon inodes open, the sandbox's
 *          own environment; its children (interpreters) hold no caps.
 *   runsc: the sandbox process (the Sentry) - the same, with the namespaces
 *          runsc makes (gVisor implements PIDs itself), its own descriptor
 *          kinds (sockets to the gofer, memfds, files the gofer donated,
 *          never the engine's state directory) and an empty environment.
 *
 * Reads only; a failure is a refusal naming the first failed check. */
#include "engine_priv.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

struct status {
	bool ok;
	long uid;
	int no_new_privs, seccomp;
	unsigned long long cap_eff, cap_bnd;
};

static struct status read_status(const char *path)
{
	struct status st = {.uid = -1, .no_new_privs = -1, .seccomp = -1};
	cleanup_free char *text = read_file(path, 16384, NULL);
	if (!text)
		return st;
	st.ok = true;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!strncmp(line, "Uid:", 4))
			st.uid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "NoNewPrivs:", 11))
			st.no_new_privs = (int)strtol(line + 11, NULL, 10);
		else if (!strncmp(line, "Seccomp:", 8))
			st.seccomp = (int)strtol(line + 8, NULL, 10);
		else if (!strncmp(line, "CapEff:", 7))
			st.cap_eff = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "CapBnd:", 7))
			st.cap_bnd = strtoull(line + 7, NULL, 16);
		line = nl ? nl + 1 : NULL;
	}
	return st;
}

static int refuse(bh_error **err, const struct sandbox *sb, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(bh_error **err, const struct sandbox *sb, const char *fmt, ...)
{
	char what[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return bh_refuse(err, BH_REFUSAL_ISOLATION,
			 "sandbox %s failed its posture check and was not used: %s", sb->name, what);
}

static int check_status(const struct sandbox *sb, const char *who, const struct status *st,
			uint64_t caps_allowed, bh_error **err)
{
	if (!st->ok)
		return refuse(err, sb, "%s: its /proc status is unreadable", who);
	if (st->seccomp != 2) {
		return refuse(err, sb, "%s: Seccomp is %d, want 2 (a filter)", who, st->seccomp);
	}
	if (st->no_new_privs != 1) {
		return refuse(err, sb, "%s: NoNewPrivs is %d, want 1", who, st->no_new_privs);
	}
	if (st->cap_eff & ~caps_allowed) {
		return refuse(err, sb, "%s: CapEff is %016llx, allowed %016llx", who, st->cap_eff,
			      (unsigned long long)caps_allowed);
	}
	if (st->uid == 0)
		return refuse(err, sb, "%s: runs as root on the host", who);
	return 0;
}

static int check_threads(const struct sandbox *sb, pid_t pid, bh_error **err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	cleanup_dir DIR *d = opendir(path);
	if (!d)
		return refuse(err, sb, "its threads cannot be listed: %s", strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[320];
		snprintf(p, sizeof p, "/proc/%d/task/%s/status", (int)pid, de->d_name);
		struct status st = read_status(p);
		if (st.ok && st.seccomp != 2) /* a thread may have just exited */
			return refuse(err, sb, "thread %s runs without a seccomp filter", de->d_name);
	}
	return 0;
}

static int check_namespaces(const struct sandbox *sb, pid_t pid, const char *const *kinds,
			    bh_error **err)
{
	for (const char *const *k = kinds; *k; k++) {
		char mine[96], theirs[96], path[96];
		snprintf(path, sizeof path, "/proc/self/ns/%s", *k);
		ssize_t a = readlink(path, mine, sizeof mine - 1);
		snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, *k);
		ssize_t b = readlink(path, theirs, sizeof theirs - 1);
		if (a < 0 || b < 0)
			return refuse(err, sb, "its %s namespace cannot be read", *k);
		mine[a] = theirs[b] = '\0';
		if (!strcmp(mine, theirs))
			return refuse(err, sb, "it shares the engine's %s namespace (%s)", *k, mine);
		/* The engine lives in a private mount namespace: compare with the
		 * host's first process too, where it can be read. */
		snprintf(path, sizeof path, "/proc/1/ns/%s", *k);
		ssize_t c = readlink(path, mine, sizeof mine - 1);
		if (c > 0) {
			mine[c] = '\0';
			if (!strcmp(mine, theirs))
				return refuse(err, sb, "it shares the host's %s namespace (%s)", *k, mine);
		}
	}
	return 0;
}

static bool fd_kind_allowed(const struct runtime_ops *ops, const char *target,
			    const char *state_dir, bool egress)
{
	if (!strcmp(target, "/dev/null") || !strncmp(target, "pipe:", 5) ||
	    !strncmp(target, "anon_inode:", 11))
		return true;
	/* ---- egress: the init's relay listens on the sandbox's loopback ---- */
	if (egress && !strncmp(target, "socket:", 7))
		return true;
	if (ops->tier != BH_TIER_KERNEL)
		return false;
	/* The Sentry talks to its gofer over sockets, keeps its memory in
	 * memfds and holds files the gofer opened for it inside the sandbox's
	 * root; never anything of the engine's. */
	if (!strncmp(target, "socket:", 7) || !strncmp(target, "/memfd:", 7))
		return true;
	size_t n = strlen(state_dir);
	return target[0] == '/' && strncmp(target, state_dir, n) != 0 &&
	       strstr(target, "bulkhead.db") == NULL;
}

static int check_fds(bh_engine *e, const struct sandbox *sb, pid_t pid, bh_error **err)
{
	const struct runtime_ops *ops = sb->rt->ops;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	cleanup_dir DIR *d = opendir(path);
	if (!d)
		return refuse(err, sb, "its descriptors cannot be listed: %s", strerror(errno));
	uint32_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (++n > ops->posture_max_fds) {
			return refuse(err, sb, "it holds more than %u descriptors", ops->posture_max_fds);
		}
		char p[320], target[PATH_MAX];
		snprintf(p, sizeof p, "/proc/%d/fd/%s", (int)pid, de->d_name);
		ssize_t len = readlink(p, target, sizeof target - 1);
		if (len < 0)
			continue; /* closed meanwhile */
		target[len] = '\0';
		if (!fd_kind_allowed(ops, target, e->state_dir, sb->egress_dir != NULL))
			return refuse(err, sb, "it holds descriptor %s open on %s", de->d_name, target);
	}
	return 0;
}

static bool env_name_allowed(const char *entry, bool egress_proxy)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
	for (const char *const *a = bh_sandbox_env; *a; a++)
		if (!strncmp(*a, entry, n) && (*a)[n] == '=')
			return true;
	/* ---- egress: a sandbox with a profile has the proxy's, exactly ---- */
	for (const char *const *a = bh_egress_env; egress_proxy && *a; a++)
		if (!strcmp(*a, entry))
			return true;
	return false;
}

static int check_environ(const struct sandbox *sb, pid_t pid, bh_error **err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	size_t len = 0;
	cleanup_free char *env = read_file(path, 65536, &len);
	if (!env)
		return refuse(err, sb, "its environment cannot be read: %s", strerror(errno));
	if (sb->rt->ops->posture_env_empty && len > 0) {
		return refuse(err, sb, "its environment is not empty (%.40s...)", env);
	}
	for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
		if (!env_name_allowed(env + i, sb->egress_proxy)) {
			const char *eq = strchr(env + i, '=');
			int n = eq && eq - (env + i) < 64 ? (int)(eq - (env + i)) : 64;
			return refuse(err, sb, "its environment holds %.*s, which is not the sandbox's", n,
				      env + i);
		}
	}
	return 0;
}

/* crun: whatever the init already started (the interpreters a warm open
 * asked for) must hold no capabilities at all. */
static int check_children(const struct sandbox *sb, pid_t pid, bh_error **err)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	cleanup_free char *kids = read_file(path, 4096, NULL);
	if (!kids)
		return 0;
	for (char *p = kids; *p;) {
		char *end;
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		p = end;
		char sp[64];
		snprintf(sp, sizeof sp, "/proc/%ld/status", child);
		struct status st = read_status(sp);
		if (!st.ok)
			continue; /* exited meanwhile */
		char who[48];
		snprintf(who, sizeof who, "its init's child %ld", child);
		if (check_status(sb, who, &st, 0, err) < 0)
			return -1;
	}
	return 0;
}

int posture_check(bh_engine *e, const struct sandbox *sb, bh_error **err)
{
	const struct runtime_ops *ops = sb->rt->ops;
	pid_t pid = sb->init_pid;
	if (pid <= 0)
		return refuse(err, sb, "no process to look at");
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	struct status st = read_status(path);
	const char *who = ops->tier == BH_TIER_KERNEL ? "the sandbox process" : "the init";
	if (check_status(sb, who, &st, ops->posture_caps, err) < 0 ||
	    check_threads(sb, pid, err) < 0 || check_namespaces(sb, pid, ops->posture_ns, err) < 0 ||
	    check_fds(e, sb, pid, err) < 0 || check_environ(sb, pid, err) < 0)
		return -1;
	if (ops->tier != BH_TIER_KERNEL && check_children(sb, pid, err) < 0)
		return -1;
	bh_log(e, BH_LOG_DEBUG, "sandbox %s: posture ok (pid %d, CapEff %016llx)", sb->name,
	       (int)pid, st.cap_eff);
	return 0;
}
