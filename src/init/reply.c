/* Frames from the init to the engine (channel.h). Each returns 0 or
 * -errno when the frame cannot be queued at all. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "init_priv.h"

#include <sys/statvfs.h>

int queue_ready(struct init *st)
{
	int ret = bh_frame_begin(&st->out, BH_CHAN_READY, 8);

	if (ret < 0)
		return ret;
	proto_put_u32(&st->out.buf, BH_CHAN_VERSION);
	proto_put_u32(&st->out.buf, 0);
	return 0;
}

static size_t format_msg(char *msg, size_t cap, const char *fmt, va_list ap)
{
	int n = vsnprintf(msg, cap, fmt, ap);

	if (n < 0)
		return 0;
	/* Truncated: a huge argv[0] or path. */
	return (size_t)n >= cap ? cap - 1 : (size_t)n;
}

/* FAIL, or REJECTED for `reason`: u64 call_id | (u32 reason) | i32 errno
 * | string message. */
__attribute__((format(printf, 6, 0))) static int
queue_message(struct init *st, uint8_t type, uint64_t call_id, uint32_t reason, int err,
	      const char *fmt, va_list ap)
{
	char msg[FAIL_MSG_MAX];
	size_t n = format_msg(msg, sizeof(msg), fmt, ap);
	size_t len = 8u + (type == BH_CHAN_REJECTED ? 4u : 0u) + 4u + 4u + n;
	int ret = bh_frame_begin(&st->out, type, len);

	if (ret < 0)
		return ret;
	proto_put_u64(&st->out.buf, call_id);
	if (type == BH_CHAN_REJECTED)
		proto_put_u32(&st->out.buf, reason);
	proto_put_u32(&st->out.buf, (uint32_t)(int32_t)err);
	proto_put_str(&st->out.buf, msg, n);
	if (type == BH_CHAN_FAIL)
		reply_queued(st, BH_CHAN_HEADER + len);
	return 0;
}

int queue_fail(struct init *st, uint64_t call_id, int err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = queue_message(st, BH_CHAN_FAIL, call_id, 0, err, fmt, ap);
	va_end(ap);
	return ret;
}

int queue_rejected(struct init *st, uint64_t call_id, uint32_t reason, int err,
		   const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = queue_message(st, BH_CHAN_REJECTED, call_id, reason, err, fmt, ap);
	va_end(ap);
	return ret;
}

/* What the sandbox's writable mounts hold now: the engine compares it with
 * the session's disk budget. */
static uint64_t disk_used(void)
{
	static const char *const mounts[] = {"/work", "/tmp", "/dev/shm"};
	uint64_t used = 0;
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		struct statvfs v;
		if (statvfs(mounts[i], &v) == 0 && v.f_blocks >= v.f_bfree)
			used += (uint64_t)(v.f_blocks - v.f_bfree) * v.f_frsize;
	}
	return used;
}

int queue_done(struct init *st, const struct done_info *d)
{
	uint32_t flags = d->flags;
	int ret;

	if (capture_truncated(d->out))
		flags |= BH_CHAN_STDOUT_TRUNCATED;
	if (capture_truncated(d->err))
		flags |= BH_CHAN_STDERR_TRUNCATED;
	ret = bh_frame_begin(&st->out, BH_CHAN_DONE,
			     BH_CHAN_DONE_FIXED + d->out->len + d->err->len);
	if (ret < 0)
		return ret;
	proto_put_u64(&st->out.buf, d->call_id);
	proto_put_u32(&st->out.buf, (uint32_t)d->code);
	proto_put_u32(&st->out.buf, d->sig);
	proto_put_u32(&st->out.buf, flags);
	proto_put_u64(&st->out.buf, d->duration_us);
	proto_put_u64(&st->out.buf, d->out->total);
	proto_put_u64(&st->out.buf, d->err->total);
	proto_put_str(&st->out.buf, d->out->buf, (uint32_t)d->out->len);
	proto_put_str(&st->out.buf, d->err->buf, (uint32_t)d->err->len);
	proto_put_u64(&st->out.buf, disk_used());
	reply_queued(st, BH_CHAN_HEADER + BH_CHAN_DONE_FIXED + d->out->len + d->err->len);
	return 0;
}

/* ---- stream ---- */
int queue_output(struct init *st, uint64_t call_id, uint8_t stream, uint64_t offset,
		 const uint8_t *p, size_t n)
{
	int ret = bh_frame_begin(&st->out, BH_CHAN_OUTPUT, BH_CHAN_OUTPUT_FIXED + n);

	if (ret < 0)
		return ret;
	proto_put_u64(&st->out.buf, call_id);
	buf_append(&st->out.buf, &stream, 1);
	proto_put_u64(&st->out.buf, offset);
	proto_put_str(&st->out.buf, p, (uint32_t)n);
	reply_queued(st, BH_CHAN_HEADER + BH_CHAN_OUTPUT_FIXED + n);
	return 0;
}
