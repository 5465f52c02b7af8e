/* Little-endian framing for the engine <-> init channel (channel_proto.h).
 *
 * Both directions are driven from a poll() loop on non-blocking descriptors,
 * so the reader and the writer keep their progress between calls and never
 * wait for more bytes than the descriptor has ready. */
#ifndef BH_INIT_FRAME_H
#define BH_INIT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "channel_proto.h"

/* Bounds-checked walk over a received payload. Every getter returns
 * -EPROTO rather than reading past the end, so a short frame can never be
 * mistaken for a valid one. */
struct bh_cursor {
	const uint8_t *p;
	size_t left;
};

static inline struct bh_cursor bh_cursor_make(const void *p, size_t n)
{
	return (struct bh_cursor){ .p = p, .left = n };
}

int bh_get_u32(struct bh_cursor *c, uint32_t *out);
int bh_get_u64(struct bh_cursor *c, uint64_t *out);
/* A protocol string: u32 length | bytes. *out points into the payload. */
int bh_get_str(struct bh_cursor *c, const uint8_t **out, uint32_t *len);

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
	uint8_t *data;
	size_t head; /* first byte not yet written */
	size_t len;  /* end of queued bytes */
	size_t cap;
};

/* Reserves room for one frame carrying payload_len bytes and writes its
 * header; the caller then appends exactly payload_len bytes with the
 * bh_put_* helpers, which cannot fail after a successful begin.
 * Returns -EMSGSIZE if the frame would exceed BH_CHAN_MAX_FRAME. */
int bh_frame_begin(struct bh_outq *q, uint8_t type, size_t payload_len);
void bh_put_u32(struct bh_outq *q, uint32_t v);
void bh_put_u64(struct bh_outq *q, uint64_t v);
void bh_put_str(struct bh_outq *q, const void *s, uint32_t len);
/* Raw bytes, no length word: relaying a payload built elsewhere. */
void bh_put_bytes(struct bh_outq *q, const void *s, size_t len);

static inline size_t bh_outq_pending(const struct bh_outq *q)
{
	return q->len - q->head;
}

/* Writes queued bytes until the queue is empty (returns 0) or the
 * descriptor would block (returns 1). -errno on a write error. */
int bh_outq_flush(struct bh_outq *q, int fd);

void bh_outq_free(struct bh_outq *q);

#endif
