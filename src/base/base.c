#include "base.h"

#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void bh_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

void bh_close_now(int *fd)
{
	bh_closep(fd);
	*fd = -1;
}

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

char *xstrndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (!p)
		abort();
	if (n)
		memcpy(p, s, n);
	p[n] = '\0';
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

static struct timespec now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts;
}

uint64_t now_mono_ns(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t now_mono_us(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_mono_ms(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t now_real_ms(void)
{
	struct timespec ts = now(CLOCK_REALTIME);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void hex(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = in;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
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

int buf_reserve(struct buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

void buf_append(struct buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n) < 0)
		abort();
	if (n)
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
