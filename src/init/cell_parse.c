#include "cell_parse.h"

#include <errno.h>

int bh_parse_cell(const uint8_t *p, size_t n, struct cell_req *rq)
{
	struct proto_cursor c = proto_cursor(p, n);
	const uint8_t *s;
	uint32_t len;

	if (proto_get_u64(&c, &rq->call_id) < 0 || proto_get_u32(&c, &rq->timeout_ms) < 0 ||
	    proto_get_u32(&c, &rq->output_cap) < 0 || proto_get_u8(&c, &rq->lang) < 0 ||
	    proto_get_str(&c, &rq->code, &rq->code_len) < 0 ||
	    proto_get_u32(&c, &rq->nfiles) < 0)
		return -EPROTO;
	/* Each file costs at least its two length words. */
	if (rq->nfiles > c.left / 8u)
		return -EPROTO;
	rq->files = c;
	for (uint32_t i = 0; i < rq->nfiles; i++)
		if (proto_get_str(&c, &s, &len) < 0 || proto_get_str(&c, &s, &len) < 0)
			return -EPROTO;
	rq->files.left -= c.left;
	if (proto_get_u32(&c, &rq->relay_ms) < 0)
		return -EPROTO;
	return c.left == 0 ? 0 : -EPROTO;
}
