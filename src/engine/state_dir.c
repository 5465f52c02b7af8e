/* A state directory is evidence an operator may open from somewhere
 * untrusted (a copy of production): before anything under it is used, it
 * must be a directory of root's or ours that nobody else can change, and
 * what the engine keeps in it must be what the engine makes (no symbolic
 * link in its place). One definition of that rule, for the engine, the CLI
 * and the client's auto-attach. */
#include "engine_priv.h"
#include "state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

const char *bh_state_dir_name(const char *dir)
{
	if (dir && *dir)
		return dir;
	const char *env = getenv("BULKHEAD_STATE");
	return env && *env ? env : "/var/lib/bulkhead";
}

static void owner_name(uid_t uid, char *out, size_t n)
{
	struct passwd pw, *found = NULL;
	char buf[1024];
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
		snprintf(out, n, "uid %u (%s)", (unsigned)uid, found->pw_name);
	else
		snprintf(out, n, "uid %u", (unsigned)uid);
}

/* The rule for a directory whose owner decides what every path under it
 * leads to (the state directory, the images directory): what names it in
 * the sentence ("state directory"). */
static int owned_dir_check_fd(int fd, const char *path, const char *what, bh_error **err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "%s %s", what, path);
	if (!S_ISDIR(st.st_mode))
		return bh_fail(err, BH_E_INVALID, 0, "%s %s is not a directory", what, path);
	char owner[300];
	owner_name(st.st_uid, owner, sizeof owner);
	uid_t me = geteuid();
	/* Its owner decides what every path under it leads to. */
	if (st.st_uid != 0 && st.st_uid != me)
		return bh_fail(err, BH_E_INVALID, 0,
			       "%s %s is owned by %s (mode %04o): bulkhead opens only %s "
			       "%s owned by root or by the uid it runs as (%u), since its "
			       "owner can swap anything in it for a link; if it is a copy you trust, "
			       "`chown root: %s` (or copy it with cp -a into a directory of your own)",
			       what, path, owner, (unsigned)(st.st_mode & 07777),
			       *what == 'i' ? "an" : "a", what, (unsigned)me, path);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return bh_fail(err, BH_E_INVALID, 0,
			       "%s %s (owned by %s) has mode %04o: group or others can "
			       "write it, and so swap any entry for a link; `chmod go-w %s`",
			       what, path, owner, (unsigned)(st.st_mode & 07777), path);
	return 0;
}

int state_dir_check_fd(int fd, const char *path, bh_error **err)
{
	return owned_dir_check_fd(fd, path, "state directory", err);
}

static int owned_dir_check(const char *dir, const char *what, const char *fix, bh_error **err)
{
	struct stat st;
	if (lstat(dir, &st) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "%s %s", what, dir);
	if (S_ISLNK(st.st_mode)) {
		char to[PATH_MAX] = "";
		ssize_t n = readlink(dir, to, sizeof to - 1);
		to[n > 0 ? n : 0] = '\0';
		return bh_fail(err, BH_E_INVALID, 0,
			       "%s %s is a symbolic link (to %s): bulkhead follows no "
			       "link to or in %s %s; %s",
			       what, dir, to, *what == 'i' ? "an" : "a", what, fix);
	}
	cleanup_close int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "%s %s", what, dir);
	return owned_dir_check_fd(fd, dir, what, err);
}

int bh_state_dir_check(const char *dir, bh_error **err)
{
	return owned_dir_check(bh_state_dir_name(dir), "state directory", "name the directory itself",
			       err);
}

/* ---- fleet (issue 20): a shared images directory holds what the next
 * call of a conversation restores from, on any host: the same rule ---- */
int images_dir_check(const char *dir, bh_error **err)
{
	return owned_dir_check(dir, "images directory", "name the directory itself (images_dir)",
			       err);
}

/* What the engine keeps in a state directory, and what each must be. */
static const struct {
	const char *name;
	mode_t type;
} entries[] = {
	{"lock", S_IFREG},	      {"bulkhead.db", S_IFREG},	    {"bulkhead.db-wal", S_IFREG},
	{"bulkhead.db-shm", S_IFREG}, {"daemon.sock.path", S_IFREG}, {"rootfs", S_IFDIR},
	{"bundles", S_IFDIR},	      {"images", S_IFDIR},	     {"run", S_IFDIR},
	{"run/crun", S_IFDIR},	      {"run/runsc", S_IFDIR},	     {"lib", S_IFDIR},
	{"lib/interp", S_IFDIR},      {"lib/bulkhead-init", S_IFREG},
	/* ---- egress: the sandboxes' socket directories (egress.c) ---- */
	{"egress", S_IFDIR},
	/* ---- fleet: the images directory it was last opened with ---- */
	{"images-dir", S_IFREG},
};

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a fifo";
	case S_IFSOCK:
		return "a socket";
	default:
		return "a device";
	}
}

int state_dir_entries_check(bh_engine *e, int dirfd, const char *path, bool strict, bh_error **err)
{
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
		/* run/crun is looked at only through a run that is a directory
		 * (a linked run was reported on its own line, first). */
		const char *slash = strchr(entries[i].name, '/');
		cleanup_close int parent = -1;
		if (slash) {
			char dir[64];
			snprintf(dir, sizeof dir, "%.*s", (int)(slash - entries[i].name), entries[i].name);
			parent = open_nofollow(dirfd, dir, O_PATH | O_DIRECTORY, 0);
			if (parent < 0)
				continue;
		}
		const char *name = slash ? slash + 1 : entries[i].name;
		struct stat st;
		if (fstatat(slash ? parent : dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((st.st_mode & S_IFMT) == entries[i].type)
			continue;
		char what[PATH_MAX + 64];
		snprintf(what, sizeof what, "%s", type_name(st.st_mode));
		if (S_ISLNK(st.st_mode)) {
			char to[PATH_MAX] = "";
			ssize_t n = readlinkat(slash ? parent : dirfd, name, to, sizeof to - 1);
			to[n > 0 ? n : 0] = '\0';
			snprintf(what, sizeof what, "a symbolic link (to %s)", to);
		}
		if (strict)
			return bh_fail(err, BH_E_INVALID, 0,
				       "state directory %s: %s is %s, not %s; bulkhead follows no link "
				       "under a state directory and opens none that was tampered with "
				       "(read a copy with `bulkhead ls`, `records`, `verify`, `leaks` or "
				       "`console --db`, which write nothing)",
				       path, entries[i].name, what, type_name(entries[i].type));
		bh_log(e, BH_LOG_WARN, "state directory %s: %s is %s, not %s: not followed", path,
		       entries[i].name, what, type_name(entries[i].type));
	}
	return 0;
}
