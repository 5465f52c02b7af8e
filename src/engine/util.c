#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

char *read_file(const char *path, size_t max, size_t *len)
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *data = malloc(cap + 1);
	if (!data)
		abort();
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				break;
			cap = cap * 2 > max ? max : cap * 2;
			data = realloc(data, cap + 1);
			if (!data)
				abort();
		}
		ssize_t r = read(fd, data + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			free(data);
			errno = saved;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	data[n] = '\0';
	if (len)
		*len = n;
	return data;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	/* The directory is reached with no link followed, the temporary file is
	 * made exclusively in it, and rename replaces a link at path rather
	 * than writing through it. */
	cleanup_free char *base = NULL;
	cleanup_close int dir = open_parent_nofollow(path, &base);
	if (dir < 0)
		return -1;
	cleanup_free char *tmp = xasprintf("%s.tmp.%d", base, (int)getpid());
	unlinkat(dir, tmp, 0); /* a crashed writer's leftover, never followed */
	cleanup_close int fd =
		openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			unlinkat(dir, tmp, 0);
			errno = saved;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0 || renameat(dir, tmp, dir, base) < 0) {
		int saved = errno;
		unlinkat(dir, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

int mkdir_p_named(const char *path, mode_t mode)
{
	cleanup_free char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	/* One component at a time, each opened with no link followed before
	 * the next is made in it: a link anywhere stops the walk (ELOOP). */
	cleanup_free char *p = xstrdup(path);
	cleanup_close int dir = open(p[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	char *save = NULL;
	for (char *c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (mkdirat(dir, c, mode) < 0 && errno != EEXIST)
			return -1;
		int next = !strcmp(c, "..") ? openat(dir, c, O_PATH | O_DIRECTORY | O_CLOEXEC)
					    : open_nofollow(dir, c, O_PATH | O_DIRECTORY, 0);
		if (next < 0)
			return -1;
		close(dir);
		dir = next;
	}
	return 0;
}

static int rm_rf_at(int parent, const char *name)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -1 : 0;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	cleanup_dir DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int ret = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (rm_rf_at(dirfd(d), de->d_name) < 0)
			ret = -1;
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		ret = -1;
	return ret;
}

int rm_rf(const char *path)
{
	cleanup_free char *base = NULL;
	cleanup_close int dir = open_parent_nofollow(path, &base);
	if (dir < 0)
		return errno == ENOENT ? 0 : -1;
	return rm_rf_at(dir, base);
}

static uint64_t usage_at(int parent, const char *name)
{
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	uint64_t total = (uint64_t)st.st_blocks * 512u;
	if (!S_ISDIR(st.st_mode))
		return total;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return total;
	cleanup_dir DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return total;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			total += usage_at(dirfd(d), de->d_name);
	return total;
}

uint64_t disk_usage(const char *path)
{
	return usage_at(AT_FDCWD, path);
}

void sha256_hex(const void *data, size_t len, char out[65])
{
	uint8_t md[32];
	unsigned int mdlen = 0;
	EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
	hex(md, 32, out);
}

int sha256_file_hex(const char *path, char out[65])
{
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	uint64_t size = 0;
	return sha256_fd_hex(fd, out, &size);
}

int sha256_fd_hex(int fd, char out[65], uint64_t *size)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		abort();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	uint8_t chunk[65536];
	*size = 0;
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;
			EVP_MD_CTX_free(ctx);
			errno = saved;
			return -1;
		}
		if (r == 0)
			break;
		*size += (uint64_t)r;
		EVP_DigestUpdate(ctx, chunk, (size_t)r);
	}
	uint8_t md[32];
	unsigned int mdlen = 0;
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	hex(md, 32, out);
	return 0;
}

char *rtrim(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}
