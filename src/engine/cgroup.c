/* cgroups as bulkhead uses them: every sandbox of an engine lives below
 * /bulkhead/<state key> in each hierarchy, so an engine's leftovers are found
 * (and two engines never meet) by path alone.
 *
 * These hosts are cgroup v1 "hybrid": v1 controllers plus an almost empty
 * cgroup2 at /sys/fs/cgroup/unified, which makes crun refuse to run. The
 * engine hides that mount in a private mount namespace of its own, once;
 * every runtime it spawns inherits the v1-only view (host-facts §1). */
#include "engine_priv.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#define CG_ROOT "/sys/fs/cgroup"

static bool is_cgroup2(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroups_setup(struct bh_cgroups *cg, const char *state_key, bh_error **err)
{
	memset(cg, 0, sizeof *cg);
	snprintf(cg->parent, sizeof cg->parent, "/bulkhead/%s", state_key);
	if (is_cgroup2(CG_ROOT)) {
		cg->pure_v2 = true;
		return 0;
	}
	if (!is_cgroup2(CG_ROOT "/unified"))
		return 0; /* pure v1, or already hidden by an earlier open */
	/* Even an almost empty one (hugetlb only, here) makes crun refuse. */
	if (unshare(CLONE_NEWNS) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno,
			       "hide the hybrid cgroup2 mount: unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "make / a slave mount");
	if (umount2(CG_ROOT "/unified", MNT_DETACH) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "unmount %s/unified in our namespace",
			       CG_ROOT);
	cg->hybrid_hidden = true;
	return 0;
}

char *cgroups_file(const struct bh_cgroups *cg, const char *controller, const char *leaf,
		   const char *file)
{
	if (cg->pure_v2)
		return xasprintf(CG_ROOT "%s/%s/%s", cg->parent, leaf, file);
	return xasprintf(CG_ROOT "/%s%s/%s/%s", controller, cg->parent, leaf, file);
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

static void rmdir_tree_bottom_up(const char *path)
{
	cleanup_dir DIR *d = opendir(path);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			cleanup_free char *sub = xasprintf("%s/%s", path, de->d_name);
			rmdir_tree_bottom_up(sub);
		}
	}
	rmdir(path);
}

void cgroups_cleanup(const struct bh_cgroups *cg)
{
	if (cg->pure_v2) {
		cleanup_free char *p = xasprintf(CG_ROOT "%s", cg->parent);
		rmdir_tree_bottom_up(p);
		return;
	}
	cleanup_dir DIR *d = opendir(CG_ROOT);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "unified"))
			continue;
		cleanup_free char *p = xasprintf(CG_ROOT "/%s%s", de->d_name, cg->parent);
		rmdir_tree_bottom_up(p);
	}
}

size_t cgroups_list(const struct bh_cgroups *cg, char ***names)
{
	*names = NULL;
	cleanup_free char *p = cg->pure_v2 ? xasprintf(CG_ROOT "%s", cg->parent)
					   : xasprintf(CG_ROOT "/memory%s", cg->parent);
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
