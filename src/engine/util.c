#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

void *xzalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		abort();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		abort();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		abort();
	return s;
}

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

static void hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
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
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		abort();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	uint8_t chunk[65536];
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
		EVP_DigestUpdate(ctx, chunk, (size_t)r);
	}
	uint8_t md[32];
	unsigned int mdlen = 0;
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	hex(md, 32, out);
	return 0;
}

int random_hex(size_t nbytes, char *out)
{
	uint8_t b[64];
	if (nbytes > sizeof b) {
		errno = EINVAL;
		return -1;
	}
	size_t got = 0;
	while (got < nbytes) {
		ssize_t r = getrandom(b + got, nbytes - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	hex(b, nbytes, out);
	return 0;
}

uint64_t now_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

char *rtrim(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

void buf_append(struct buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (!b->data)
			abort();
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
