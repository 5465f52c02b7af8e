#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Queues larger than this are released once drained, so a single big DONE
 * does not pin its memory for the life of the sandbox. */
#define BH_OUTQ_KEEP (256u * 1024u)

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
	uint32_t length;

	if (proto_frame_length(r->hdr, &length) < 0)
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

	if (q->buf.cap - q->buf.len >= need)
		return 0;
	if (q->head > 0) {
		memmove(q->buf.data, q->buf.data + q->head, pending);
		q->head = 0;
		q->buf.len = pending;
	}
	return buf_reserve(&q->buf, need);
}

int bh_frame_begin(struct bh_outq *q, uint8_t type, size_t payload_len)
{
	int ret;

	if (payload_len > BH_CHAN_MAX_FRAME - 1u)
		return -EMSGSIZE;
	ret = outq_reserve(q, BH_CHAN_HEADER + payload_len);
	if (ret < 0)
		return ret;
	return proto_put_header(&q->buf, type, payload_len);
}

static void outq_drained(struct bh_outq *q)
{
	q->head = 0;
	q->buf.len = 0;
	if (q->buf.cap > BH_OUTQ_KEEP)
		buf_free(&q->buf);
}

int write_ready(int fd, const uint8_t *p, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = write(fd, p + *off, len - *off);

		if (n > 0) {
			*off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

int bh_outq_flush(struct bh_outq *q, int fd)
{
	int ret = write_ready(fd, q->buf.data, q->buf.len, &q->head);

	if (ret != 0)
		return ret;
	outq_drained(q);
	return 0;
}

void bh_outq_free(struct bh_outq *q)
{
	buf_free(&q->buf);
	q->head = 0;
}
