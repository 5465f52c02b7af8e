#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Queues larger than this are released once drained, so a single big DONE
 * does not pin its memory for the life of the sandbox. */
#define BH_OUTQ_KEEP (256u * 1024u)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int bh_get_u32(struct bh_cursor *c, uint32_t *out)
{
	if (c->left < 4)
		return -EPROTO;
	*out = le32(c->p);
	c->p += 4;
	c->left -= 4;
	return 0;
}

int bh_get_u64(struct bh_cursor *c, uint64_t *out)
{
	if (c->left < 8)
		return -EPROTO;
	*out = (uint64_t)le32(c->p) | (uint64_t)le32(c->p + 4) << 32;
	c->p += 8;
	c->left -= 8;
	return 0;
}

int bh_get_str(struct bh_cursor *c, const uint8_t **out, uint32_t *len)
{
	uint32_t n;

	if (bh_get_u32(c, &n) < 0 || n > c->left)
		return -EPROTO;
	*out = c->p;
	*len = n;
	c->p += n;
	c->left -= n;
	return 0;
}

/* Pulls up to `want` bytes into dst. 1 = got some, 0 = would block,
 * -ENODATA = end of stream, other negative = read error. */
static int read_some(int fd, uint8_t *dst, size_t want, size_t *got)
{
	for (;;) {
		ssize_t n = read(fd, dst, want);

		if (n > 0) {
			*got = (size_t)n;
			return 1;
		}
		if (n == 0)
			return -ENODATA;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
}

/* Validates the length as soon as its four bytes are in, so an oversized
 * or empty frame is rejected before anything is allocated for it. */
static int begin_payload(struct bh_reader *r)
{
	uint32_t length = le32(r->hdr);

	if (length == 0 || length > BH_CHAN_MAX_FRAME)
		return -EPROTO;
	r->payload_len = length - 1u;
	r->payload_have = 0;
	/* malloc(0) may return NULL; keep "complete frame => non-NULL". */
	r->payload = malloc(r->payload_len ? r->payload_len : 1);
	return r->payload ? 0 : -ENOMEM;
}

static int step_header(struct bh_reader *r, int fd)
{
	while (r->hdr_have < BH_CHAN_HEADER) {
		/* Length and type in one read. A zero-length frame has no type
		 * byte, so that read may take the first byte of the next frame:
		 * harmless, since the length is checked before anything else
		 * and a bad one ends the channel (-EPROTO). */
		size_t got = 0;
		int ret = read_some(fd, r->hdr + r->hdr_have, BH_CHAN_HEADER - r->hdr_have, &got);

		if (ret == -ENODATA)
			return r->hdr_have == 0 ? BH_READ_EOF : -EPROTO;
		if (ret <= 0)
			return ret;
		r->hdr_have += got;
		if (r->hdr_have >= 4 && !r->payload) {
			ret = begin_payload(r);
			if (ret < 0)
				return ret;
		}
	}
	return BH_READ_FRAME;
}

int bh_reader_step(struct bh_reader *r, int fd)
{
	int ret;

	if (r->hdr_have < BH_CHAN_HEADER) {
		ret = step_header(r, fd);
		if (ret != BH_READ_FRAME)
			return ret;
	}
	while (r->payload_have < r->payload_len) {
		size_t got = 0;

		ret = read_some(fd, r->payload + r->payload_have,
				r->payload_len - r->payload_have, &got);
		if (ret == -ENODATA)
			return -EPROTO;
		if (ret <= 0)
			return ret;
		r->payload_have += got;
	}
	return BH_READ_FRAME;
}

uint8_t *bh_reader_take(struct bh_reader *r, uint8_t *type, size_t *len)
{
	uint8_t *p = r->payload;

	*type = r->hdr[4];
	*len = r->payload_len;
	*r = (struct bh_reader){ 0 };
	return p;
}

void bh_reader_free(struct bh_reader *r)
{
	free(r->payload);
	*r = (struct bh_reader){ 0 };
}

/* Makes room for `need` more bytes, first by sliding unsent bytes to the
 * front (the queue is mostly drained between frames), then by growing. */
static int outq_reserve(struct bh_outq *q, size_t need)
{
	size_t pending = bh_outq_pending(q);
	size_t want;
	uint8_t *p;

	if (q->cap - q->len >= need)
		return 0;
	if (q->head > 0) {
		memmove(q->data, q->data + q->head, pending);
		q->head = 0;
		q->len = pending;
		if (q->cap - q->len >= need)
			return 0;
	}
	if (need > SIZE_MAX / 2 - pending)
		return -ENOMEM;
	want = q->cap ? q->cap : 4096;
	while (want < pending + need)
		want *= 2;
	p = realloc(q->data, want);
	if (!p)
		return -ENOMEM;
	q->data = p;
	q->cap = want;
	return 0;
}

static void put_le(struct bh_outq *q, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		q->data[q->len++] = (uint8_t)(v >> (8 * i));
}

int bh_frame_begin(struct bh_outq *q, uint8_t type, size_t payload_len)
{
	int ret;

	if (payload_len > BH_CHAN_MAX_FRAME - 1u)
		return -EMSGSIZE;
	ret = outq_reserve(q, BH_CHAN_HEADER + payload_len);
	if (ret < 0)
		return ret;
	put_le(q, payload_len + 1u, 4);
	q->data[q->len++] = type;
	return 0;
}

void bh_put_u32(struct bh_outq *q, uint32_t v)
{
	put_le(q, v, 4);
}

void bh_put_u64(struct bh_outq *q, uint64_t v)
{
	put_le(q, v, 8);
}

void bh_put_str(struct bh_outq *q, const void *s, uint32_t len)
{
	put_le(q, len, 4);
	if (len)
		memcpy(q->data + q->len, s, len);
	q->len += len;
}

void bh_put_bytes(struct bh_outq *q, const void *s, size_t len)
{
	if (len)
		memcpy(q->data + q->len, s, len);
	q->len += len;
}

static void outq_drained(struct bh_outq *q)
{
	q->head = q->len = 0;
	if (q->cap > BH_OUTQ_KEEP) {
		free(q->data);
		q->data = NULL;
		q->cap = 0;
	}
}

int bh_outq_flush(struct bh_outq *q, int fd)
{
	while (bh_outq_pending(q) > 0) {
		ssize_t n = write(fd, q->data + q->head, bh_outq_pending(q));

		if (n > 0) {
			q->head += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		return n < 0 ? -errno : -EIO;
	}
	outq_drained(q);
	return 0;
}

void bh_outq_free(struct bh_outq *q)
{
	free(q->data);
	*q = (struct bh_outq){ 0 };
}
