#include "answer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool ab_room(struct abuf *b, size_t n)
{
	if (b->oom)
		return false;
	if (buf_reserve(&b->buf, n) < 0) {
		b->oom = true;
		return false;
	}
	return true;
}

/* Each append reserves first, so the codec's writers never need memory
 * they could not get (they would abort). */
void ab_bytes(struct abuf *b, const void *p, size_t n)
{
	if (n && ab_room(b, n))
		buf_append(&b->buf, p, n);
}

void ab_u8(struct abuf *b, uint8_t v)
{
	if (ab_room(b, 1))
		proto_put_u8(&b->buf, v);
}

void ab_u32(struct abuf *b, uint32_t v)
{
	if (ab_room(b, 4))
		proto_put_u32(&b->buf, v);
}

void ab_u64(struct abuf *b, uint64_t v)
{
	if (ab_room(b, 8))
		proto_put_u64(&b->buf, v);
}

void ab_str(struct abuf *b, const void *p, size_t n)
{
	if (ab_room(b, 4 + n))
		proto_put_str(&b->buf, p, n);
}

void answer_error(int fd, uint8_t type, uint64_t call_id, uint32_t reason, int err,
		  const char *fmt, ...)
{
	struct abuf b = { 0 };
	char msg[FAIL_MSG_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	ab_u8(&b, type);
	ab_u64(&b, call_id);
	if (type == BH_CHAN_REJECTED)
		ab_u32(&b, reason);
	ab_u32(&b, (uint32_t)(int32_t)err);
	ab_str(&b, msg, (size_t)n);
	if (b.oom)
		_exit(124);
	helper_write_all(fd, b.buf.data, b.buf.len);
	_exit(0);
}

void ab_send(int fd, struct abuf *b, uint64_t call_id)
{
	if (b->oom || b->buf.len > BH_CHAN_MAX_FRAME) {
		buf_free(&b->buf);
		answer_error(fd, BH_CHAN_FAIL, call_id, 0, ENOMEM,
			     "the answer did not fit in memory or in a frame");
	}
	helper_write_all(fd, b->buf.data, b->buf.len);
	_exit(0);
}

/* ---- init side ---- */

static bool skip_str(struct proto_cursor *c)
{
	const uint8_t *s;
	uint32_t n;

	return proto_get_str(c, &s, &n) == 0;
}

static bool valid_listing(struct proto_cursor *c)
{
	uint32_t n;

	if (proto_get_u32(c, &n) < 0)
		return false;
	n &= ~0x80000000u;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *name;
		uint32_t len;
		uint64_t skip;

		if (proto_get_str(c, &name, &len) < 0 || len == 0 || len > BH_CHAN_NAME_MAX ||
		    memchr(name, '/', len) || memchr(name, 0, len) || c->left < 1 ||
		    !memchr("fdlpscb?", c->p[0], 8))
			return false;
		c->p++;
		c->left--;
		/* The engine holds the init to the same rules (chan_check.c). */
		if (proto_get_u64(c, &skip) < 0 || proto_get_u64(c, &skip) < 0 ||
		    proto_get_str(c, &name, &len) < 0 || len > BH_CHAN_TARGET_MAX)
			return false;
	}
	return true;
}

/* ---- procs ---- */
static bool valid_procs(struct proto_cursor *c)
{
	uint32_t n;

	if (proto_get_u32(c, &n) < 0)
		return false;
	n &= ~0x80000000u;
	if (n > BH_CHAN_PS_MAX_ENTRIES)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *command;
		uint32_t u32, len;
		uint64_t u64;
		uint8_t state;

		/* The engine holds the init to the same rules (chan_check.c). */
		if (proto_get_u32(c, &u32) < 0 || proto_get_u32(c, &u32) < 0 ||
		    proto_get_u32(c, &u32) < 0 || proto_get_u8(c, &state) < 0 || !state ||
		    !strchr(BH_CHAN_PROC_STATES, state) || proto_get_u64(c, &u64) < 0 ||
		    proto_get_u64(c, &u64) < 0 || proto_get_u64(c, &u64) < 0 ||
		    proto_get_str(c, &command, &len) < 0 || len > BH_CHAN_COMMAND_MAX ||
		    (len && memchr(command, 0, len)))
			return false;
	}
	return true;
}

static bool valid_body(uint8_t type, struct proto_cursor *c)
{
	uint32_t u32;
	uint64_t u64;

	switch (type) {
	case ANSWER_FILES_OK:
		return true;
	case BH_CHAN_FAIL:
		return proto_get_u32(c, &u32) == 0 && skip_str(c);
	case BH_CHAN_REJECTED:
		return proto_get_u32(c, &u32) == 0 && proto_get_u32(c, &u32) == 0 && skip_str(c);
	case BH_CHAN_CONTENT:
		if (proto_get_u64(c, &u64) < 0 || c->left < 1 || c->p[0] > 1)
			return false;
		c->p++;
		c->left--;
		return skip_str(c);
	case BH_CHAN_LISTING:
		return valid_listing(c);
	case BH_CHAN_PROCS:
		return valid_procs(c);
	default:
		return false;
	}
}

int answer_relay(struct init *st, const struct helper *h, const char *types)
{
	struct proto_cursor c;
	uint64_t call_id;
	uint8_t type;
	int ret;

	if (h->overflow || h->len < 1)
		return ANSWER_INVALID;
	type = h->buf[0];
	if (!type || !strchr(types, type))
		return ANSWER_INVALID;
	c = proto_cursor(h->buf + 1, h->len - 1);
	if (proto_get_u64(&c, &call_id) < 0 || call_id != h->call_id ||
	    !valid_body(type, &c) || c.left != 0)
		return ANSWER_INVALID;
	if (type == ANSWER_FILES_OK)
		return ANSWER_PLAIN;
	ret = bh_frame_begin(&st->out, type, h->len - 1);
	if (ret < 0)
		return ret;
	buf_append(&st->out.buf, h->buf + 1, h->len - 1);
	reply_queued(st, BH_CHAN_HEADER + h->len - 1);
	return ANSWER_QUEUED;
}
