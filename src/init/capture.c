/* Output streams kept up to a cap: memory stays bounded by output_cap
 * however much a program writes, and every byte is still counted. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init_priv.h"

void capture_init(struct capture *c, int fd, uint32_t cap, bool borrowed)
{
	*c = (struct capture){ .fd = fd, .limit = cap, .borrowed = borrowed };
	if (c->limit > BH_MAX_OUTPUT_CAP)
		c->limit = BH_MAX_OUTPUT_CAP;
}

void capture_close(struct capture *c)
{
	if (c->fd >= 0 && !c->borrowed)
		close(c->fd);
	c->fd = -1;
}

void capture_free(struct capture *c)
{
	capture_close(c);
	free(c->buf);
	*c = (struct capture){ .fd = -1 };
}

bool capture_truncated(const struct capture *c)
{
	return c->total > c->limit || c->lost;
}

/* Makes sure there is room to keep the next bytes, growing the buffer
 * geometrically up to the cap so small outputs stay small. */
static bool capture_room(struct capture *c)
{
	size_t want;
	uint8_t *p;

	if (c->len >= c->limit)
		return false;
	if (c->len < c->alloc)
		return true;
	want = c->alloc ? c->alloc * 2 : IO_CHUNK;
	if (want > c->limit)
		want = c->limit;
	p = realloc(c->buf, want);
	if (!p) {
		/* Counting on beats stalling the program; the engine learns
		 * through the truncation flag. */
		c->lost = true;
		return false;
	}
	c->buf = p;
	c->alloc = want;
	return true;
}

/* Under the cap, bytes land in the kept buffer; beyond it they go to a
 * scratch buffer and are only counted, so the program is always drained
 * but the init's memory stays bounded by the cap. */
bool capture_read(struct capture *c)
{
	static uint8_t scratch[IO_CHUNK];

	for (int i = 0; i < READS_PER_WAKE && c->fd >= 0; i++) {
		bool keep = capture_room(c);
		size_t room = keep ? c->alloc - c->len : sizeof(scratch);
		size_t want = room < IO_CHUNK ? room : IO_CHUNK;
		ssize_t n = read(c->fd, keep ? c->buf + c->len : scratch, want);

		if (n > 0) {
			if (keep)
				c->len += (size_t)n;
			c->total += (uint64_t)n;
			/* A pipe hands over everything it holds, up to want: a
			 * short read emptied it, just as EAGAIN would have said
			 * one system call later. EOF shows up at the next
			 * wake-up (POLLHUP). */
			if ((size_t)n < want)
				return false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		capture_close(c); /* EOF, or an error that will not improve */
		return false;
	}
	return c->fd >= 0;
}

void capture_note(struct capture *c, const char *text)
{
	size_t n = strlen(text);

	c->total += n;
	while (n > 0 && capture_room(c)) {
		size_t room = c->alloc - c->len;
		size_t k = n < room ? n : room;

		memcpy(c->buf + c->len, text, k);
		c->len += k;
		text += k;
		n -= k;
	}
}

void discard_pending_all(const int *fds, size_t n, size_t max)
{
	struct pollfd p[4];
	size_t k = 0;

	for (size_t i = 0; i < n && k < 4; i++)
		if (fds[i] >= 0)
			p[k++] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	/* Usually nothing is stale: one poll instead of a read per pipe. */
	if (k == 0 || poll(p, (nfds_t)k, 0) <= 0)
		return;
	for (size_t i = 0; i < k; i++)
		if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
			discard_pending(p[i].fd, max);
}

void discard_pending(int fd, size_t max)
{
	static uint8_t scratch[IO_CHUNK];
	size_t done = 0;

	while (fd >= 0 && done < max) {
		ssize_t n = read(fd, scratch, sizeof(scratch));

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return; /* empty (EAGAIN), EOF or an error: nothing stale left */
	}
}
