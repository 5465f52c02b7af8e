/* Output streams kept up to a cap: memory stays bounded by output_cap
 * however much a program writes, and every byte is still counted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init_priv.h"

void capture_init(struct capture *c, int fd, uint32_t cap, bool borrowed)
{
	*c = (struct capture){ .fd = fd, .limit = cap, .borrowed = borrowed };
	if (c->limit > MAX_OUTPUT_CAP)
		c->limit = MAX_OUTPUT_CAP;
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
		ssize_t n = read(c->fd, keep ? c->buf + c->len : scratch,
				 room < IO_CHUNK ? room : IO_CHUNK);

		if (n > 0) {
			if (keep)
				c->len += (size_t)n;
			c->total += (uint64_t)n;
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
