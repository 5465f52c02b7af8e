/* Paths resolved with no symbolic link followed at any component (openat2,
 * Linux 5.6+). Everything under a state directory is opened this way: the
 * directory may be a tampered copy, and the engine runs as root. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>

int open_nofollow(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		/* openat2 refuses a mode without O_CREAT. */
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   (dirfd == AT_FDCWD ? 0 : RESOLVE_BENEATH),
	};
	long fd;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	while (fd < 0 && (errno == EINTR || errno == EAGAIN));
	return (int)fd;
}

int open_parent_nofollow(const char *path, char **base)
{
	*base = NULL;
	cleanup_free char *p = xstrdup(path);
	size_t n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	char *slash = strrchr(p, '/');
	const char *name = slash ? slash + 1 : p;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		return -1;
	}
	const char *parent = ".";
	if (slash == p)
		parent = "/";
	else if (slash) {
		*slash = '\0';
		parent = p;
	}
	int fd = open_nofollow(AT_FDCWD, parent, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	*base = xstrdup(name);
	return fd;
}

DIR *opendir_nofollow(const char *path)
{
	int fd = open_nofollow(AT_FDCWD, path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return d;
}
