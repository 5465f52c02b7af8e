/* Small utilities of init mode: diagnostics, timeouts, randomness. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "init_priv.h"

int diag_fd = 2;

/* Diagnostics must never block the init: the engine may not be draining
 * that pipe, and the descriptor may be shared with the runtime, so it is
 * left blocking and only written when poll says a small write fits. */
void diag(const char *fmt, ...)
{
	char buf[512];
	struct pollfd p = { .fd = diag_fd, .events = POLLOUT };
	va_list ap;
	ssize_t w;
	int n;

	if (diag_fd < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return;
	memcpy(buf, "bulkhead-init: ", 15);
	va_start(ap, fmt);
	n = vsnprintf(buf + 15, sizeof(buf) - 16, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 15 + (n < (int)sizeof(buf) - 16 ? n : (int)sizeof(buf) - 17);
	buf[n++] = '\n';
	/* Best effort by design: there is nowhere else to report a failure. */
	w = write(diag_fd, buf, (size_t)n);
	(void)w;
}

int ms_until(uint64_t now, uint64_t when)
{
	uint64_t ms;

	if (when <= now)
		return 0;
	/* Round up: waking a hair early would just spin once more. */
	ms = (when - now + 999999u) / 1000000u;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int min_timeout(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* The nonce only has to be unguessable for code that cannot read the
 * interpreter's memory (its subprocesses, say), so when neither the
 * syscall nor the device is there, a clock-seeded mix still beats a
 * constant. */
static void fill_random(uint8_t *p, size_t n)
{
	size_t have = 0;

	while (have < n) {
		ssize_t r = getrandom(p + have, n - have, GRND_NONBLOCK);

		if (r > 0) {
			have += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	if (have < n) {
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

		while (fd >= 0 && have < n) {
			ssize_t r = read(fd, p + have, n - have);

			if (r <= 0)
				break;
			have += (size_t)r;
		}
		if (fd >= 0)
			close(fd);
	}
	if (have < n) {
		uint64_t x = now_mono_ns() ^ ((uint64_t)getpid() << 32);

		for (size_t i = have; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (uint8_t)x;
		}
	}
}

/* Random bytes are drawn from a pool refilled 512 bytes at a time: a nonce
 * per call would otherwise cost a getrandom() per call, tens of
 * microseconds under gVisor. The pool is in the init's memory, which code
 * in the sandbox cannot read (another uid, no ptrace), and only PID 1
 * draws from it: interpreters exec right after fork and helpers never
 * return to the loop. Drawn bytes are wiped. */
static void take_random(uint8_t *p, size_t n)
{
	static uint8_t pool[512];
	static size_t left;

	while (n > 0) {
		size_t k;

		if (left == 0) {
			fill_random(pool, sizeof(pool));
			left = sizeof(pool);
		}
		k = n < left ? n : left;
		memcpy(p, pool + sizeof(pool) - left, k);
		memset(pool + sizeof(pool) - left, 0, k);
		left -= k;
		p += k;
		n -= k;
	}
}

void pool_random_hex(size_t nbytes, char *out)
{
	uint8_t b[64];

	if (nbytes > sizeof(b))
		nbytes = sizeof(b);
	take_random(b, nbytes);
	hex(b, nbytes, out);
}
