/* The one reader and writer of the channel's frames (channel.h): the engine
 * and the init encode and read every integer and string through these, so
 * both sides agree on the bytes by construction. Nothing here allocates but
 * the writer's buffer growth, and nothing needs more than libc. */
#ifndef BH_PROTO_CODEC_H
#define BH_PROTO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "channel.h"

/* ---- reading: a bounds-checked walk over a received payload ---- */

/* Every getter returns 0, or -EPROTO rather than reading past the end: then
 * *out is zero (or NULL), the cursor stays where it was and is marked bad,
 * and every later getter fails too. A short frame is never mistaken for a
 * valid one, and a reader of a frame already judged sound (chan_check.h)
 * may read it through and look at `bad` once. */
struct proto_cursor {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static inline struct proto_cursor proto_cursor(const void *p, size_t n)
{
	return (struct proto_cursor){.p = p, .left = n};
}

/* n raw bytes; *out (may be NULL) points into the payload. */
int proto_take(struct proto_cursor *c, size_t n, const uint8_t **out);
int proto_get_u8(struct proto_cursor *c, uint8_t *out);
int proto_get_u32(struct proto_cursor *c, uint32_t *out);
int proto_get_u64(struct proto_cursor *c, uint64_t *out);
/* A protocol string: u32 length | bytes. *s points into the payload. */
int proto_get_str(struct proto_cursor *c, const uint8_t **s, uint32_t *len);

static inline uint32_t proto_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A frame's header (its first BH_CHAN_HEADER bytes; the length word is
 * enough): 0 and the length of its type and payload, or -EPROTO for a
 * length no frame may have (0, or above BH_CHAN_MAX_FRAME). */
int proto_frame_length(const uint8_t *hdr, uint32_t *len);

/* ---- writing: appended to a byte buffer (base.h) ---- */

/* A frame's header for a type and payload_len bytes to follow; -EMSGSIZE
 * (nothing written) past BH_CHAN_MAX_FRAME. */
int proto_put_header(struct buf *b, uint8_t type, size_t payload_len);
void proto_put_u8(struct buf *b, uint8_t v);
void proto_put_u32(struct buf *b, uint32_t v);
void proto_put_u64(struct buf *b, uint64_t v);
/* u32 length | bytes */
void proto_put_str(struct buf *b, const void *s, size_t n);

#endif
