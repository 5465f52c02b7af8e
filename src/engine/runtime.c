/* The two OCI runtimes bulkhead drives, as data: where the binary lives, the
 * flags it needs, what its walls can prove. Everything is a spawned child;
 * nothing here blocks the loop except the *_sync helpers used outside it. */
#include "engine_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *const crun_bins[] = {"/usr/bin/crun", "/usr/local/bin/crun", NULL};
static const char *const crun_flags[] = {NULL};
static const char *const crun_ns[] = {"user", "mnt", "net", "ipc", "uts", "pid", "cgroup", NULL};
const struct runtime_ops runtime_crun = {
	.name = "crun",
	.tier = BH_TIER_CONTAINER,
	.binaries = crun_bins,
	.delete_force = "-f",
	.global_flags = crun_flags,
	.default_pids = 256,
	.nproc = 512,
	.userns = true,
	.seccomp_errno_ret = true,
	/* The init keeps setuid, setgid, setpcap and kill inside its own user
	 * namespace to start programs as uid 1000 with none (bundle.c). */
	.posture_caps = (1ull << 5) | (1ull << 6) | (1ull << 7) | (1ull << 8),
	.posture_ns = crun_ns,
	.posture_max_fds = 32,
	.posture_env_empty = false,
};

static const char *const runsc_bins[] = {"/usr/bin/runsc", "/usr/sbin/runsc", "/usr/local/bin/runsc",
					  NULL};
/* --network=none: only loopback inside. --oci-seccomp: apply the bundle's
 * profile inside the Sentry too (without it, gVisor ignores it). The ptrace
 * platform: kvm hangs on these PVM hosts (they cannot run gVisor's ring-0
 * guest mode; runsc stops after "Platform: kvm" until it is killed). */
static const char *const runsc_flags[] = {"--network=none", "--oci-seccomp", "--platform=ptrace",
					  NULL};
static const char *const runsc_ns[] = {"user", "mnt", "net", "ipc", "uts", NULL};
const struct runtime_ops runtime_runsc = {
	.name = "runsc",
	.tier = BH_TIER_KERNEL,
	.binaries = runsc_bins,
	.delete_force = "-force",
	.global_flags = runsc_flags,
	.default_pids = 16384,
	.nproc = 256,
	.userns = true,
	.seccomp_errno_ret = false,
	/* The Sentry runs as nobody in a user namespace of its own, keeping
	 * CAP_SYS_CHROOT and CAP_SYS_ADMIN there (runsc 20221219). */
	.posture_caps = (1ull << 18) | (1ull << 21),
	.posture_ns = runsc_ns,
	.posture_max_fds = 512,
	.posture_env_empty = true,
};

char **runtime_argv(const struct runtime *rt, const char *const *args)
{
	size_t n = 4; /* ---- egress: room for --host-uds ---- */
	for (const char *const *f = rt->ops->global_flags; *f; f++)
		n++;
	for (const char *const *a = args; *a; a++)
		n++;
	char **argv = xzalloc((n + 1) * sizeof *argv);
	size_t i = 0;
	argv[i++] = xstrdup(rt->path);
	argv[i++] = xstrdup("--root");
	argv[i++] = xstrdup(rt->root);
	for (const char *const *f = rt->ops->global_flags; *f; f++)
		argv[i++] = xstrdup(*f);
	/* ---- egress: a sandbox may connect to the host sockets mounted
	 * into it (the broker's), and to nothing else: the gofer serves only
	 * the bundle's mounts. Set only when the engine has a broker. ---- */
	if (rt->host_uds)
		argv[i++] = xstrdup("--host-uds=open");
	for (const char *const *a = args; *a; a++)
		argv[i++] = xstrdup(*a);
	argv[i] = NULL;
	return argv;
}

void argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

int runtime_preflight(struct runtime *rt, const char *state_dir, bool create_root, char *why,
		      size_t why_len)
{
	free(rt->path);
	rt->path = NULL;
	for (const char *const *b = rt->ops->binaries; *b; b++) {
		struct stat st;
		if (stat(*b, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
			rt->path = xstrdup(*b);
			break;
		}
	}
	if (!rt->path) {
		snprintf(why, why_len, "%s is not installed (looked in %s)", rt->ops->name,
			 rt->ops->binaries[0]);
		return -1;
	}
	free(rt->root);
	rt->root = xasprintf("%s/run/%s", state_dir, rt->ops->name);
	if (create_root && mkdir_p(rt->root, 0700) < 0) {
		snprintf(why, why_len, "cannot create %s: %s", rt->root, strerror(errno));
		return -1;
	}
	if (sha256_file_hex(rt->path, rt->hash) < 0) {
		snprintf(why, why_len, "cannot read %s: %s", rt->path, strerror(errno));
		return -1;
	}
	const char *const argv[] = {rt->path, "--version", NULL};
	int status = 0;
	cleanup_free char *out = NULL;
	if (child_run_sync(argv, 10000, &status, &out) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(why, why_len, "%s --version failed: %s", rt->path, out ? rtrim(out) : "no output");
		return -1;
	}
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	snprintf(rt->version, sizeof rt->version, "%s", out);
	return 0;
}

/* A container exists under a runtime's root only with its state there: an
 * empty root (every new state directory's) lists nothing, and asking costs
 * a runtime start (runsc's is a Go binary's: tens of milliseconds, far more
 * on a busy host) on the way to the first proof. */
static bool root_is_empty(int root_fd)
{
	int fd = dup(root_fd);
	if (fd < 0)
		return false;
	cleanup_dir DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false; /* let the runtime say what is wrong */
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return false;
	return true;
}

size_t runtime_list_sync(const struct runtime *rt, char ***names)
{
	*names = NULL;
	if (!rt->path)
		return 0;
	/* No root, nothing to list (crun would create it); a root reached
	 * through a link is not ours (another runtime's containers). */
	cleanup_close int root = open_nofollow(AT_FDCWD, rt->root, O_RDONLY | O_DIRECTORY, 0);
	if (root < 0 || root_is_empty(root))
		return 0;
	/* --quiet, spelled out: crun takes -q too, but runsc's flags know only
	 * -quiet/--quiet and it refuses -q (status 128), which made every runsc
	 * container under our root invisible to the leftovers sweep and the
	 * leak finder. */
	const char *const args[] = {"list", "--quiet", NULL};
	char **argv = runtime_argv(rt, args);
	int status = 0;
	cleanup_free char *out = NULL;
	int r = child_run_sync((const char *const *)argv, 20000, &status, &out);
	argv_free(argv);
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 0;
	size_t n = 0, cap = 0;
	char **list = NULL;
	for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		rtrim(line);
		/* runsc -q prints names only; crun prints a table: take column one
		 * and skip its header. */
		char *sp = strpbrk(line, " \t");
		if (sp)
			*sp = '\0';
		if (!*line || !strcmp(line, "NAME") || !strcmp(line, "ID"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			list = realloc(list, cap * sizeof *list);
			if (!list)
				abort();
		}
		list[n++] = xstrdup(line);
	}
	*names = list;
	return n;
}

void runtime_destroy_sync(const struct runtime *rt, const char *name)
{
	const char *const kill_args[] = {"kill", name, "KILL", NULL};
	char **argv = runtime_argv(rt, kill_args);
	child_run_sync((const char *const *)argv, 10000, NULL, NULL);
	argv_free(argv);
	const char *const del_args[] = {"delete", rt->ops->delete_force, name, NULL};
	argv = runtime_argv(rt, del_args);
	child_run_sync((const char *const *)argv, 20000, NULL, NULL);
	argv_free(argv);
}
