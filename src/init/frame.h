/* The init's ends of the engine <-> init channel (channel.h): frames read
 * from and written to its descriptors. The bytes inside a frame are read
 * and written with the one codec both sides share (codec.h).
 *
 * Both directions are driven from a poll() loop on non-blocking descriptors,
 * so the reader and the writer keep their progress between calls and never
 * wait for more bytes than the descriptor has ready. */
#ifndef BH_INIT_FRAME_H
#define BH_INIT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "codec.h"

/* Incremental frame reader. */
struct bh_reader {
	uint8_t hdr[BH_CHAN_HEADER];
	size_t hdr_have;
	uint8_t *payload;
	size_t payload_len;
	size_t payload_have;
};

enum bh_read_result {
	BH_READ_AGAIN = 0, /* descriptor drained, frame not complete yet */
	BH_READ_FRAME = 1, /* a whole frame is ready: bh_reader_take() it */
	BH_READ_EOF = 2,   /* clean end of stream on a frame boundary */
};

/* Reads at most up to the end of the current frame, so frames that follow
 * stay in the pipe until the caller is ready for them (backpressure).
 * Returns an enum bh_read_result, -EPROTO for a bad length or a stream that
 * ends inside a frame, or -errno for a read error. */
int bh_reader_step(struct bh_reader *r, int fd);

/* Takes ownership of the completed frame's payload (free() it; never NULL
 * for a complete frame, even when the payload is empty) and resets the
 * reader for the next frame. */
uint8_t *bh_reader_take(struct bh_reader *r, uint8_t *type, size_t *len);

void bh_reader_free(struct bh_reader *r);

/* Outgoing byte queue. Frames are appended whole and drained with
 * bh_outq_flush() whenever the descriptor is writable. */
struct bh_outq {
	struct buf buf; /* queued bytes, up to buf.len */
	size_t head;    /* first byte not yet written */
};

/* Reserves room for one frame carrying payload_len bytes and writes its
 * header; the caller then appends exactly payload_len bytes to q->buf with
 * the codec's proto_put_* (or buf_append for raw bytes), which need no
 * more memory after a successful begin. Returns -EMSGSIZE if the frame
 * would exceed BH_CHAN_MAX_FRAME, -ENOMEM without room for it. */
int bh_frame_begin(struct bh_outq *q, uint8_t type, size_t payload_len);

static inline size_t bh_outq_pending(const struct bh_outq *q)
{
	return q->buf.len - q->head;
}

/* Writes queued bytes until the queue is empty (returns 0) or the
 * descriptor would block (returns 1). -errno on a write error. */
int bh_outq_flush(struct bh_outq *q, int fd);

void bh_outq_free(struct bh_outq *q);

/* Writes p[*off..len) to a non-blocking fd, advancing *off: 0 once all is
 * written, 1 when the descriptor would block, -errno on a write error. */
int write_ready(int fd, const uint8_t *p, size_t len, size_t *off);

#endif
