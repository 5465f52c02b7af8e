#include "codec.h"

#include <errno.h>
#include <string.h>

static int bad(struct proto_cursor *c)
{
	c->bad = true;
	return -EPROTO;
}

int proto_take(struct proto_cursor *c, size_t n, const uint8_t **out)
{
	if (out)
		*out = NULL;
	if (c->bad || c->left < n)
		return bad(c);
	if (out)
		*out = c->p;
	c->p += n;
	c->left -= n;
	return 0;
}

static int get_le(struct proto_cursor *c, unsigned bytes, uint64_t *v)
{
	const uint8_t *b;
	*v = 0;
	if (proto_take(c, bytes, &b) < 0)
		return -EPROTO;
	for (unsigned i = 0; i < bytes; i++)
		*v |= (uint64_t)b[i] << (8 * i);
	return 0;
}

int proto_get_u8(struct proto_cursor *c, uint8_t *out)
{
	uint64_t v;
	int ret = get_le(c, 1, &v);
	*out = (uint8_t)v;
	return ret;
}

int proto_get_u32(struct proto_cursor *c, uint32_t *out)
{
	uint64_t v;
	int ret = get_le(c, 4, &v);
	*out = (uint32_t)v;
	return ret;
}

int proto_get_u64(struct proto_cursor *c, uint64_t *out)
{
	return get_le(c, 8, out);
}

int proto_get_str(struct proto_cursor *c, const uint8_t **s, uint32_t *len)
{
	struct proto_cursor at = *c;
	uint32_t n;
	*s = NULL;
	*len = 0;
	if (proto_get_u32(&at, &n) < 0 || proto_take(&at, n, s) < 0)
		return bad(c);
	*c = at;
	*len = n;
	return 0;
}

int proto_frame_length(const uint8_t *hdr, uint32_t *len)
{
	*len = proto_le32(hdr);
	return *len == 0 || *len > BH_CHAN_MAX_FRAME ? -EPROTO : 0;
}

static void put_le(struct buf *b, uint64_t v, unsigned bytes)
{
	uint8_t x[8];
	for (unsigned i = 0; i < bytes; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	buf_append(b, x, bytes);
}

int proto_put_header(struct buf *b, uint8_t type, size_t payload_len)
{
	if (payload_len > BH_CHAN_MAX_FRAME - 1u)
		return -EMSGSIZE;
	put_le(b, payload_len + 1u, 4);
	buf_append(b, &type, 1);
	return 0;
}

void proto_put_u8(struct buf *b, uint8_t v)
{
	buf_append(b, &v, 1);
}

void proto_put_u32(struct buf *b, uint32_t v)
{
	put_le(b, v, 4);
}

void proto_put_u64(struct buf *b, uint64_t v)
{
	put_le(b, v, 8);
}

void proto_put_str(struct buf *b, const void *s, size_t n)
{
	put_le(b, (uint32_t)n, 4);
	buf_append(b, s, n);
}
