/* A file an operator saves from a sandbox (the console's `s`, `bulkhead cp`):
 * written whole beside its destination under a temporary name, flushed to
 * disk, then put in place in one step, so the destination is either absent,
 * what it was, or the whole new file, never a part of it. Without overwrite
 * the step is link(): it fails if the name exists by then, a symlink
 * included, so nothing planted at the name is written through or replaced. */
#include "base.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bh_save_file(const char *dest, const void *data, size_t len, bool overwrite)
{
	char tmp[4200], rnd[17];
	const char *slash = strrchr(dest, '/');
	int dir_len = slash ? (int)(slash - dest + 1) : 0;
	if (!*dest || (slash && !slash[1]))
		return -EISDIR;
	if (random_hex(8, rnd) < 0)
		return -errno;
	if (snprintf(tmp, sizeof tmp, "%.*s.%s.%s.part", dir_len, dest, slash ? slash + 1 : dest,
		     rnd) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	/* The mode cp gives a new file: 0666 less the umask. */
	mode_t mask = umask(0);
	umask(mask);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666 & ~mask);
	if (fd < 0)
		return -errno;
	const uint8_t *p = data;
	size_t off = 0;
	int ret = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0) {
		if (overwrite)
			ret = rename(tmp, dest) < 0 ? -errno : 0;
		else
			ret = link(tmp, dest) < 0 ? -errno : 0;
	}
	/* After rename the name is gone already; after link (or a failure)
	 * the temporary name goes. */
	if (!overwrite || ret < 0)
		unlink(tmp);
	return ret;
}
