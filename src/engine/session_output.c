/* The running cell's output as it is produced (bh_session_output): the
 * init relays chunks while a cell runs (channel.h, OUTPUT), the sandbox
 * judges them (chan_check.c) and hands them here, and readers follow the
 * session's latest cell with a cursor. The agent's call never waits on a
 * reader: a chunk is appended once, whoever reads, and a reader only
 * borrows what is past its cursor. */
#include "session_priv.h"

#include <string.h>

static void on_output(bh_engine *e, void *arg, uint8_t stream, uint64_t offset, const uint8_t *p,
		      size_t len)
{
	(void)e;
	bh_session *s = arg;
	struct buf *b = stream == BH_CHAN_STDOUT ? &s->live.out : &s->live.err;
	/* The channel check made it contiguous with what the sandbox relayed,
	 * which is what this buffer holds. */
	if (!s->live.running || offset != b->len)
		return;
	buf_append(b, p, len);
}

static void live_clear(struct session_live *l)
{
	free(l->code);
	buf_free(&l->out);
	buf_free(&l->err);
	*l = (struct session_live){0};
}

void session_live_begin(bh_session *s, struct op *op)
{
	struct session_live *l = &s->live;
	live_clear(l);
	l->sequence = s->calls + 1;
	l->running = true;
	l->language = op->cell.language;
	/* A copy: the op may go on any of the paths that end a session. */
	l->code = xzalloc(op->cell.code_len + 1);
	memcpy(l->code, op->code, op->cell.code_len);
	l->code_len = op->cell.code_len;
	l->started_unix_ms = op->started_unix_ms;
	if (s->sb && !op->cell.fresh_process)
		sandbox_take_output(s->sb, on_output);
}

/* The answer's whole kept output: the relayed bytes are its prefix (the
 * init relays what it keeps), so only the rest is copied; an init whose
 * relay said otherwise is overruled by its answer, which the record holds. */
static void settle(struct buf *b, const uint8_t *p, size_t n)
{
	if (b->len > n || (b->len && memcmp(b->data, p, b->len)))
		b->len = 0;
	if (n > b->len)
		buf_append(b, p + b->len, n - b->len);
}

void session_live_end(bh_session *s, struct op *op, const struct done_frame *d,
		      const struct bh_record *rec)
{
	struct session_live *l = &s->live;
	if (!l->running)
		return;
	l->running = false;
	(void)op;
	if (!d)
		return;
	l->answered = true;
	settle(&l->out, d->out, d->out_len);
	settle(&l->err, d->err, d->err_len);
	l->exit_code = d->exit_code;
	l->timed_out = d->flags & BH_CHAN_TIMED_OUT;
	l->stdout_truncated = d->flags & BH_CHAN_STDOUT_TRUNCATED;
	l->stderr_truncated = d->flags & BH_CHAN_STDERR_TRUNCATED;
	l->duration_us = d->duration_us;
	if (rec)
		snprintf(l->record_sha256, sizeof l->record_sha256, "%s", rec->record_sha256);
}

void session_live_free(bh_session *s)
{
	live_clear(&s->live);
}

static void after(const struct buf *b, uint64_t cursor, const uint8_t **p, size_t *n,
		  uint64_t *offset)
{
	if (cursor > b->len)
		cursor = b->len;
	*offset = cursor;
	*p = b->data ? b->data + cursor : (const uint8_t *)"";
	*n = b->len - (size_t)cursor;
}

int bh_session_output(const bh_session *s, uint64_t sequence, uint64_t out_after,
		      uint64_t err_after, struct bh_cell_output *out)
{
	const struct session_live *l = &s->live;
	memset(out, 0, sizeof *out);
	out->record_sha256 = "";
	out->code = "";
	if (!l->sequence)
		return 0;
	/* A cursor into an earlier cell reads this one from its start. */
	if (sequence != l->sequence)
		out_after = err_after = 0;
	out->sequence = l->sequence;
	/* A session killed mid-cell ends its cell too. */
	out->running = l->running && s->state == BH_SESSION_BUSY;
	out->answered = l->answered;
	out->language = l->language;
	out->code = l->code ? l->code : "";
	out->code_len = l->code ? l->code_len : 0;
	out->started_unix_ms = l->started_unix_ms;
	after(&l->out, out_after, &out->out, &out->out_len, &out->out_offset);
	after(&l->err, err_after, &out->err, &out->err_len, &out->err_offset);
	out->exit_code = l->exit_code;
	out->timed_out = l->timed_out;
	out->stdout_truncated = l->stdout_truncated;
	out->stderr_truncated = l->stderr_truncated;
	out->duration_us = l->duration_us;
	out->record_sha256 = l->record_sha256;
	return 0;
}
