/* The directories above a state directory, as a sandbox's uid sees them.
 *
 * Every sandbox runs as unprivileged host uids of its own (sandbox.c's uid
 * ranges), and as those uids its runtime reaches the rootfs, the init and
 * the cell servers below the state directory: each directory above it must
 * let "others" search it. `mktemp -d` makes 0700 directories; below one,
 * crun fails with "make rootfs private: Permission denied" and runsc with
 * "waiting for sandbox to start: EOF", both tiers go unproven and a daemon
 * stays "not ready". Making it work anyway would mean moving the rootfs and
 * every bind source out of the operator's chosen directory (or binding
 * them elsewhere in a mount namespace the warden, `gc` and the other
 * runtime calls would not share), so the engine refuses at open instead,
 * before it creates or proves anything, naming the parent, its mode and
 * the fix. The state directory itself is the engine's to set (0711). */
#include "engine_priv.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

/* The first existing directory above `path` that others cannot search, in
 * `bad` (with its stat); false when there is none. Components that do not
 * exist yet end the walk: the engine creates them itself. */
static bool closed_ancestor(const char *path, char *bad, size_t badlen, struct stat *bad_st)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--; /* "state/" names the same directory as "state" */
	for (size_t i = 1; i < n; i++) {
		if (path[i] != '/')
			continue;
		char prefix[PATH_MAX];
		if (i >= sizeof prefix)
			return false;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		struct stat st;
		if (stat(prefix, &st) < 0)
			return false;
		if (S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) {
			snprintf(bad, badlen, "%s", prefix);
			*bad_st = st;
			return true;
		}
	}
	/* "/" itself, for a state directory one level below it. */
	struct stat st;
	if (path[0] == '/' && stat("/", &st) == 0 && !(st.st_mode & S_IXOTH)) {
		snprintf(bad, badlen, "/");
		*bad_st = st;
		return true;
	}
	return false;
}

int state_dir_parents_check(const char *dir, bh_error **err)
{
	char abs[PATH_MAX];
	if (dir[0] == '/') {
		snprintf(abs, sizeof abs, "%s", dir);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd))
			return bh_fail(err, BH_E_SYSTEM, errno, "resolve state directory %s", dir);
		if (snprintf(abs, sizeof abs, "%s/%s", cwd, dir) >= (int)sizeof abs)
			return bh_fail(err, BH_E_INVALID, 0, "the state directory path %s is too long", dir);
	}
	char bad[PATH_MAX];
	struct stat st;
	if (!closed_ancestor(abs, bad, sizeof bad, &st))
		return 0;
	struct passwd *pw = getpwuid(st.st_uid);
	char owner[64];
	if (pw)
		snprintf(owner, sizeof owner, "%s", pw->pw_name);
	else
		snprintf(owner, sizeof owner, "uid %u", (unsigned)st.st_uid);
	return bh_fail(err, BH_E_INVALID, 0,
		       "the state directory %s is below %s (mode %04o, owner %s), which sandboxes "
		       "cannot pass through: they run as unprivileged uids of their own and could "
		       "not reach their root filesystem. Let others traverse it (chmod o+x %s), or "
		       "choose a --state below directories others can traverse (the default is "
		       "/var/lib/bulkhead)",
		       dir, bad, (unsigned)(st.st_mode & 07777), owner, bad);
}
