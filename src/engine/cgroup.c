/* cgroups as bulkhead uses them: every sandbox of an engine lives below
 * /bulkhead/<state key> in each hierarchy, so an engine's leftovers are found
 * (and two engines never meet) by path alone.
 *
 * These hosts are cgroup v1 "hybrid": v1 controllers plus an almost empty
 * cgroup2 at /sys/fs/cgroup/unified, which makes crun refuse to run. The
 * engine hides that mount in a private mount namespace of its own, once;
 * every runtime it spawns inherits the v1-only view (crun decides the mode
 * before its cgroup manager, so --cgroup-manager=disabled does not help). */
#include "engine_priv.h"
#include "invocation.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>


static bool is_cgroup2(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroups_setup(struct bh_cgroups *cg, const char *state_key, bh_error **err)
{
	memset(cg, 0, sizeof *cg);
	snprintf(cg->parent, sizeof cg->parent, "/bulkhead/%s", state_key);
	if (is_cgroup2(BH_CGROUP_ROOT)) {
		cg->pure_v2 = true;
		return 0;
	}
	if (!is_cgroup2(BH_CGROUP_ROOT "/unified")) {
		/* Pure v1, or hidden by an earlier open in this process: then the
		 * directory is our tmpfs's and crun writes into it. */
		struct stat st;
		cg->hybrid_hidden = stat(BH_CGROUP_ROOT "/unified", &st) == 0;
		return 0;
	}
	/* Even an almost empty one (hugetlb only, here) makes crun refuse. */
	if (unshare(CLONE_NEWNS) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno,
			       "hide the hybrid cgroup2 mount: unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "make / a slave mount");
	if (umount2(BH_CGROUP_ROOT "/unified", MNT_DETACH) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "unmount %s/unified in our namespace",
			       BH_CGROUP_ROOT);
	cg->hybrid_hidden = true;
	return 0;
}

char *cgroups_file(const struct bh_cgroups *cg, const char *controller, const char *leaf,
		   const char *file)
{
	if (cg->pure_v2)
		return xasprintf(BH_CGROUP_ROOT "%s/%s/%s", cg->parent, leaf, file);
	return xasprintf(BH_CGROUP_ROOT "/%s%s/%s/%s", controller, cg->parent, leaf, file);
}

long long cgroups_read_ll(const struct bh_cgroups *cg, const char *controller, const char *leaf,
			  const char *file)
{
	cleanup_free char *p = cgroups_file(cg, controller, leaf, file);
	cleanup_free char *v = read_file(p, 4096, NULL);
	if (!v)
		return -2;
	rtrim(v);
	if (!strcmp(v, "max"))
		return -1;
	return strtoll(v, NULL, 10);
}

long long cgroups_oom_kills(const struct bh_cgroups *cg, const char *leaf)
{
	cleanup_free char *p =
		cgroups_file(cg, "memory", leaf, cg->pure_v2 ? "memory.events" : "memory.oom_control");
	cleanup_free char *v = read_file(p, 4096, NULL);
	if (!v)
		return -2;
	const char *k = strstr(v, "oom_kill ");
	return k ? strtoll(k + 9, NULL, 10) : -2;
}

/* plain: the path is in the hidden "unified" directory, a tmpfs and not a
 * cgroup, where crun's pid writes left regular files (cgroup.procs) that
 * would keep every directory from being removed. */
static void rmdir_tree_bottom_up(const char *path, bool plain)
{
	cleanup_dir DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			cleanup_free char *sub = xasprintf("%s/%s", path, de->d_name);
			if (de->d_type == DT_DIR)
				rmdir_tree_bottom_up(sub, plain);
			else if (plain && de->d_type == DT_REG)
				unlink(sub);
		}
	}
	rmdir(path);
}

static bool plain_dir(const struct bh_cgroups *cg, const char *hierarchy)
{
	return cg->hybrid_hidden && !strcmp(hierarchy, "unified");
}

void cgroups_remove_leaf(const struct bh_cgroups *cg, const char *leaf)
{
	if (!cg->parent[0])
		return;
	if (cg->pure_v2) {
		cleanup_free char *p = xasprintf(BH_CGROUP_ROOT "%s/%s", cg->parent, leaf);
		rmdir_tree_bottom_up(p, false);
		return;
	}
	cleanup_dir DIR *d = opendir(BH_CGROUP_ROOT);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		/* "unified" too: with the hybrid mount hidden it is a plain
		 * directory in which crun makes its cgroup paths as well. */
		if (de->d_name[0] == '.')
			continue;
		cleanup_free char *p = xasprintf(BH_CGROUP_ROOT "/%s%s/%s", de->d_name, cg->parent, leaf);
		rmdir_tree_bottom_up(p, plain_dir(cg, de->d_name));
	}
}

void cgroups_thaw_all(const struct bh_cgroups *cg)
{
	char **leaves = NULL;
	size_t n = cgroups_list(cg, &leaves);
	for (size_t i = 0; i < n; i++) {
		/* A frozen process takes no SIGKILL until it is thawed. */
		cleanup_free char *p = cg->pure_v2 ? cgroups_file(cg, "", leaves[i], "cgroup.freeze")
						   : cgroups_file(cg, "freezer", leaves[i], "freezer.state");
		const char *v = cg->pure_v2 ? "0" : "THAWED";
		int fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t w = write(fd, v, strlen(v));
			(void)w;
			close(fd);
		}
		free(leaves[i]);
	}
	free(leaves);
}

/* One pass; true when the parent is gone from every hierarchy. */
static bool cleanup_pass(const struct bh_cgroups *cg)
{
	/* No parent yet (an engine whose open failed before cgroups_setup):
	 * nothing of ours exists, and "" would name every hierarchy's root,
	 * whose empty cgroups are other programs'. */
	if (!cg->parent[0])
		return true;
	struct stat st;
	if (cg->pure_v2) {
		cleanup_free char *p = xasprintf(BH_CGROUP_ROOT "%s", cg->parent);
		rmdir_tree_bottom_up(p, false);
		return stat(p, &st) < 0;
	}
	cleanup_dir DIR *d = opendir(BH_CGROUP_ROOT);
	if (!d)
		return true;
	bool gone = true;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* "unified" too: with the hybrid mount hidden it is a plain
		 * directory in which crun makes its cgroup paths as well. */
		if (de->d_name[0] == '.')
			continue;
		cleanup_free char *p = xasprintf(BH_CGROUP_ROOT "/%s%s", de->d_name, cg->parent);
		rmdir_tree_bottom_up(p, plain_dir(cg, de->d_name));
		gone = gone && stat(p, &st) < 0;
	}
	return gone;
}

void cgroups_cleanup(const struct bh_cgroups *cg)
{
	/* A cgroup whose last task the kernel is still tearing down (a killed
	 * sandbox's zombie, runsc's processes after `delete` returned) refuses
	 * rmdir with EBUSY for a moment: try again, briefly, rather than leave
	 * an empty parent behind. */
	for (int i = 0; i < 50 && !cleanup_pass(cg); i++)
		usleep(20 * 1000);
}

size_t cgroups_list(const struct bh_cgroups *cg, char ***names)
{
	*names = NULL;
	if (!cg->parent[0]) /* not set up: none of ours (and never the root's) */
		return 0;
	cleanup_free char *p = cg->pure_v2 ? xasprintf(BH_CGROUP_ROOT "%s", cg->parent)
					   : xasprintf(BH_CGROUP_ROOT "/memory%s", cg->parent);
	cleanup_dir DIR *d = opendir(p);
	if (!d)
		return 0;
	size_t n = 0;
	char **list = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		list = realloc(list, (n + 1) * sizeof *list);
		if (!list)
			abort();
		list[n++] = xstrdup(de->d_name);
	}
	*names = list;
	return n;
}
