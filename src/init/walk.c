#include "walk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init_priv.h"
#include "base.h"

void path_printable(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\%03o", p[i]);
		else
			out[o++] = (char)p[i];
	}
	if (n > 0 && o + 5 >= cap && o + 3 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

int open_work(void)
{
	int fd = open(WORK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* O_PATH with O_NOFOLLOW yields the symlink itself, never its target, and
 * fstat() then says what was opened. O_DIRECTORY|O_NOFOLLOW is not enough:
 * gVisor 20221219 follows a symlink given both. The O_PATH descriptor
 * pins what was checked, so nothing can be swapped in between, and serves
 * as the dirfd of every later *at() call. */
static int open_step(int dirfd, const char *name)
{
	cleanup_close int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0)
		return -errno;
	if (S_ISLNK(sb.st_mode))
		return -ELOOP;
	if (!S_ISDIR(sb.st_mode))
		return -ENOTDIR;
	return steal_fd(fd);
}

int walk_dir(int work, const char *dir, size_t n, walk_created_fn created, void *arg)
{
	char comp[BH_MAX_PATH_BYTES + 1];
	char prefix[BH_MAX_PATH_BYTES + 1];
	cleanup_close int cur = fcntl(work, F_DUPFD_CLOEXEC, 3);
	size_t start = 0;

	if (cur < 0)
		return -errno;
	if (n > BH_MAX_PATH_BYTES)
		return -ENAMETOOLONG;
	while (start < n) {
		const char *slash = memchr(dir + start, '/', n - start);
		size_t end = slash ? (size_t)(slash - dir) : n;
		int next;

		memcpy(comp, dir + start, end - start);
		comp[end - start] = '\0';
		next = open_step(cur, comp);
		if (next == -ENOENT && created) {
			if (mkdirat(cur, comp, 0755) == 0) {
				memcpy(prefix, dir, end);
				prefix[end] = '\0';
				created(prefix, arg);
			} else if (errno != EEXIST) {
				return -errno;
			}
			next = open_step(cur, comp);
		}
		if (next < 0)
			return next;
		bh_close_now(&cur);
		cur = next;
		start = end + 1;
	}
	return steal_fd(cur);
}

void path_split(const char *path, size_t n, size_t *dir_len, const char **base)
{
	const char *slash = memrchr(path, '/', n);

	if (!slash) {
		*dir_len = 0;
		*base = path;
		return;
	}
	*dir_len = (size_t)(slash - path);
	*base = slash + 1;
}
