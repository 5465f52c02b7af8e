/* The running cell's output, relayed to the engine while the cell runs
 * (channel.h, OUTPUT): the bytes its captures kept since the last relay, at
 * most once every relay_ms, in chunks of at most BH_CHAN_OUTPUT_CHUNK_MAX.
 * Only kept bytes are relayed, so relaying stops at the cell's output_cap
 * by construction, and a print loop costs the channel what the cap holds
 * whatever it writes. The cell's answer is still DONE, with everything. */
#include "init_priv.h"

static bool pending(const struct cell *c)
{
	return c->out.relayed < c->out.len || c->err.relayed < c->err.len;
}

static int relay_stream(struct init *st, struct capture *cap, uint8_t stream)
{
	struct cell *c = &st->cell;

	while (cap->relayed < cap->len) {
		size_t n = cap->len - cap->relayed;
		int ret;

		if (n > BH_CHAN_OUTPUT_CHUNK_MAX)
			n = BH_CHAN_OUTPUT_CHUNK_MAX;
		ret = queue_output(st, c->call_id, stream, cap->relayed, cap->buf + cap->relayed, n);
		if (ret < 0)
			return ret;
		cap->relayed += n;
	}
	return 0;
}

int relay_output(struct init *st, uint64_t now)
{
	struct cell *c = &st->cell;
	int ret;

	if (!c->relay_ms || c->stage != CELL_RUN || now < c->relay_due || !pending(c))
		return 0;
	ret = relay_stream(st, &c->out, BH_CHAN_STDOUT);
	if (ret == 0)
		ret = relay_stream(st, &c->err, BH_CHAN_STDERR);
	c->relay_due = now + (uint64_t)c->relay_ms * 1000000u;
	return ret;
}

int relay_timeout(const struct init *st, uint64_t now)
{
	const struct cell *c = &st->cell;

	if (!c->relay_ms || c->stage != CELL_RUN || !pending(c))
		return -1;
	return ms_until(now, c->relay_due);
}
