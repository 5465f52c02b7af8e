/* What a sandbox binds from the state directory (its root, the init, the
 * cell servers), served from a filesystem of its own. A bind mount's line in
 * /proc/self/mountinfo names the source's path inside its filesystem, so
 * binds straight from the state directory showed user code where that
 * directory is on the host (/var/lib/bulkhead/lib/bulkhead-init). Copied
 * into a tmpfs mounted in the engine's private mount namespace, they show
 * /rootfs, /bulkhead-init and /interp. Runtimes are our children and see
 * the same namespace; the host does not. gVisor never showed host paths
 * (its gofer serves each mount as "/"), the view costs it nothing. */
#include "engine_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define VIEW_OPTIONS "mode=0711,size=256m"

/* Once per process: a mount namespace of our own (cgroup.c may have made
 * one already, to hide the hybrid cgroup2 mount from crun). Mounts of the
 * host still propagate in; ours never out, and they end with us. */
static int private_mount_namespace(const struct bh_cgroups *cg, bh_error **err)
{
	static bool ours;
	if (ours || cg->hybrid_hidden)
		return ours = true, 0;
	if (unshare(CLONE_NEWNS) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "make / a slave mount");
	ours = true;
	return 0;
}

static int copy_file(const char *from, const char *to, mode_t mode, bh_error **err)
{
	size_t len = 0;
	cleanup_free char *data = read_file(from, 256u << 20, &len);
	if (!data)
		return bh_fail(err, BH_E_SYSTEM, errno, "read %s", from);
	if (write_file_atomic(to, data, len, mode) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "write %s", to);
	return 0;
}

/* Regular files and directories only: the cell servers' tree. */
static int copy_tree(const char *from, const char *to, bh_error **err)
{
	if (mkdir_p(to, 0755) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", to);
	cleanup_dir DIR *d = opendir(from);
	if (!d)
		return bh_fail(err, BH_E_SYSTEM, errno, "open %s", from);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cleanup_free char *src = xasprintf("%s/%s", from, de->d_name);
		cleanup_free char *dst = xasprintf("%s/%s", to, de->d_name);
		struct stat st;
		if (lstat(src, &st) < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "stat %s", src);
		int ret = S_ISDIR(st.st_mode)	? copy_tree(src, dst, err)
			  : S_ISREG(st.st_mode) ? copy_file(src, dst, 0644, err)
						: 0;
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The view's directory itself, never what a symlink planted in its place
 * points to: mounts go through /proc/self/fd of an O_NOFOLLOW descriptor. */
static int mount_at(const char *dir, const char *source, const char *type, unsigned long flags,
		    const char *data)
{
	int fd = open(dir, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char at[32];
	snprintf(at, sizeof at, "/proc/self/fd/%d", fd);
	int ret = mount(source, at, type, flags, data);
	int saved = errno;
	close(fd);
	errno = saved;
	return ret;
}

static int view_fill(bh_engine *e, bh_error **err)
{
	struct view *v = &e->view;
	v->rootfs = xasprintf("%s/rootfs", v->dir);
	v->init = xasprintf("%s/bulkhead-init", v->dir);
	v->interp = xasprintf("%s/interp", v->dir);
	if (rootfs_prepare(v->rootfs, err) < 0 || copy_file(e->init_path, v->init, 0755, err) < 0 ||
	    copy_tree(e->interp_dir, v->interp, err) < 0)
		return -1;
	/* Frozen: nothing in the engine writes here after this. */
	if (mount_at(v->dir, NULL, NULL, MS_REMOUNT | MS_RDONLY, VIEW_OPTIONS) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "remount %s read-only", v->dir);
	return 0;
}

static void view_forget(struct view *v)
{
	free(v->rootfs);
	free(v->init);
	free(v->interp);
	v->rootfs = v->init = v->interp = NULL;
}

void view_open(bh_engine *e)
{
	struct view *v = &e->view;
	bh_error *err = NULL;
	v->dir = xasprintf("%s/view", e->state_dir);
	if (private_mount_namespace(&e->cg, &err) < 0)
		goto fail;
	if (mkdir(v->dir, 0711) < 0 && errno != EEXIST) {
		bh_fail(&err, BH_E_SYSTEM, errno, "create %s", v->dir);
		goto fail;
	}
	umount2(v->dir, MNT_DETACH | UMOUNT_NOFOLLOW); /* an earlier engine's of this process */
	/* No nosuid/nodev here (each bind adds them): in runsc's user namespace
	 * they would be locked flags its gofer's read-only remount of the root
	 * leaves out, and the kernel refuses that remount. */
	if (mount_at(v->dir, "tmpfs", "tmpfs", 0, VIEW_OPTIONS) < 0) {
		bh_fail(&err, BH_E_SYSTEM, errno, "mount a tmpfs on %s", v->dir);
		goto fail;
	}
	v->mounted = true;
	if (view_fill(e, &err) < 0)
		goto fail;
	return;
fail:
	bh_log(e, BH_LOG_WARN,
	       "sandboxes bind from the state directory itself (its host path shows in their "
	       "/proc/self/mountinfo): %s",
	       err->msg);
	bh_error_free(err);
	view_close(e);
}

void view_close(bh_engine *e)
{
	struct view *v = &e->view;
	if (v->mounted)
		umount2(v->dir, MNT_DETACH | UMOUNT_NOFOLLOW);
	v->mounted = false;
	view_forget(v);
	free(v->dir);
	v->dir = NULL;
}
