/* The warm pool: sandboxes opened ahead of demand, their interpreters
 * started, each handed to exactly one session and never reused. Opening a
 * session then costs a lookup instead of a runtime create and an init
 * start (tens to hundreds of milliseconds). A pooled sandbox nobody took
 * is replaced after pool_max_age_ms, so no sandbox waits for ever with an
 * old image or evidence.
 *
 * Pooled sandboxes have no registry row: nothing in them belongs to anyone
 * yet. If the engine dies, its warden stops them and the next engine's
 * start-up sweep deletes every container under its roots, pooled ones
 * included.
 *
 * They hold memory, so they count against the memory budget and
 * max_sessions like any sandbox (admission.c): a refill that would not fit
 * waits, a session that takes one moves its place, and a tenant that finds
 * no room has a ready one closed for it. */
#include "engine_priv.h"
#include "channel.h"

#include <stdlib.h>

#define RETRY_MS 5000u
#define NO_ROOM_RETRY_MS 1000u /* a refill that did not fit looks again */
#define REFILL_DELAY_MS 250u

struct pool_slot {
	struct sandbox *sb;        /* NULL once taken or failed */
	enum bh_tier tier;
	bool ready;
	struct bh_timer *age_t;
	struct pool_slot *next;
};

static bool pooled_tier(const bh_engine *e, enum bh_tier t)
{
	uint32_t tiers = e->policy.pool_tiers;
	if (!tiers) {
		enum bh_tier best = bh_engine_best_tier((bh_engine *)e);
		tiers = best == BH_TIER_UNKNOWN ? 0 : 1u << best;
	}
	return (tiers & (1u << t)) && e->tiers[t].report.offered;
}

static void slot_unlink(bh_engine *e, struct pool_slot *slot)
{
	for (struct pool_slot **pp = &e->pool; *pp; pp = &(*pp)->next)
		if (*pp == slot) {
			*pp = slot->next;
			break;
		}
	if (slot->age_t)
		loop_timer_cancel(e->loop, slot->age_t);
	free(slot);
}

static void on_retry(bh_engine *e, void *arg)
{
	(void)arg;
	e->pool_retry = NULL;
	pool_fill(e);
}

static void on_aged(bh_engine *e, void *arg)
{
	struct pool_slot *slot = arg;
	slot->age_t = NULL;
	bh_log(e, BH_LOG_DEBUG, "pool: sandbox %s unused for %u ms: replaced", slot->sb->name,
	       e->policy.pool_max_age_ms);
	sandbox_close(e, slot->sb);
	slot_unlink(e, slot);
	pool_fill(e);
}

static void on_pool_open(bh_engine *e, void *arg, struct sandbox *sb, const bh_error *err)
{
	struct pool_slot *slot = arg;
	if (err) {
		enum bh_tier tier = slot->tier;
		slot_unlink(e, slot);
		if (e->closing)
			return; /* closed with the engine: nothing went wrong */
		bh_log(e, BH_LOG_WARN, "pool: a %s sandbox did not open: %s; retrying in %u s",
		       bh_tier_name(tier), err->msg, RETRY_MS / 1000);
		if (!e->pool_retry)
			e->pool_retry = loop_timer(e->loop, RETRY_MS, on_retry, NULL);
		return;
	}
	if (e->closing) {
		sandbox_close(e, sb);
		slot_unlink(e, slot);
		return;
	}
	slot->sb = sb;
	slot->ready = true;
	/* Every interpreter, started now: the session that takes it may want
	 * either, and its first cell should find it running. */
	struct buf f = {0};
	uint8_t type = BH_CHAN_WARM;
	buf_append(&f, &type, 1);
	proto_put_u32(&f, (1u << BH_LANG_COUNT) - 1);
	sandbox_send(e, sb, &f);
	buf_free(&f);
	slot->age_t = loop_timer(e->loop, e->policy.pool_max_age_ms, on_aged, slot);
}

static size_t count(const bh_engine *e, enum bh_tier t, bool ready_only)
{
	size_t n = 0;
	for (const struct pool_slot *s = e->pool; s; s = s->next)
		if (s->tier == t && (!ready_only || s->ready))
			n++;
	return n;
}

void pool_fill(bh_engine *e)
{
	if (e->closing || !e->policy.pool_size || !e->loop || e->inspect_only ||
	    !bh_engine_proven(e))
		return;
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		if (!pooled_tier(e, (enum bh_tier)t))
			continue;
		while (count(e, (enum bh_tier)t, false) < e->policy.pool_size) {
			struct admit_ask ask = {.kind = ADMIT_POOL, .tier = (enum bh_tier)t};
			if (admit_sandbox(e, &ask, NULL) < 0) {
				if (!e->pool_retry)
					e->pool_retry =
						loop_timer(e->loop, NO_ROOM_RETRY_MS, on_retry, NULL);
				return;
			}
			struct pool_slot *slot = xzalloc(sizeof *slot);
			slot->tier = (enum bh_tier)t;
			slot->next = e->pool;
			e->pool = slot;
			bh_error *err = NULL;
			/* ---- egress: a session's sandbox has the broker's socket ---- */
			if (sandbox_open_egress(e, (enum bh_tier)t, NULL, EGRESS_SOCKET, on_pool_open,
						slot, &err) < 0) {
				bh_log(e, BH_LOG_WARN, "pool: cannot open a %s sandbox: %s",
				       bh_tier_name((enum bh_tier)t), err->msg);
				bh_error_free(err);
				slot_unlink(e, slot);
				if (!e->pool_retry)
					e->pool_retry = loop_timer(e->loop, RETRY_MS, on_retry, NULL);
				return;
			}
		}
	}
}

struct sandbox *pool_take(bh_engine *e, enum bh_tier tier)
{
	struct sandbox *found = NULL;
	struct pool_slot *slot = e->pool;
	while (slot && !found) {
		struct pool_slot *next = slot->next;
		if (slot->tier == tier && slot->ready) {
			struct sandbox *sb = slot->sb;
			slot_unlink(e, slot);
			/* One that died while it waited is closed, never handed out. */
			if (sandbox_alive(e, sb) && sb->state == SB_READY)
				found = sb;
			else
				sandbox_close(e, sb);
		}
		slot = next;
	}
	/* Its replacement starts a moment later: creating a sandbox is a
	 * runtime process and a burst of CPU the session's first cell should
	 * not share. */
	if (found && !e->pool_retry)
		e->pool_retry = loop_timer(e->loop, REFILL_DELAY_MS, on_retry, NULL);
	return found;
}

void pool_census(bh_engine *e, struct census *c)
{
	for (const struct pool_slot *s = e->pool; s; s = s->next) {
		c->places++;
		c->memory++;
	}
}

bool pool_yield(bh_engine *e)
{
	for (struct pool_slot *slot = e->pool; slot; slot = slot->next) {
		if (!slot->ready)
			continue; /* still opening: its sandbox is not ours to close yet */
		bh_log(e, BH_LOG_INFO, "pool: sandbox %s closed to make room for a caller",
		       slot->sb->name);
		sandbox_close(e, slot->sb);
		slot_unlink(e, slot);
		if (!e->pool_retry)
			e->pool_retry = loop_timer(e->loop, NO_ROOM_RETRY_MS, on_retry, NULL);
		return true;
	}
	return false;
}

size_t bh_engine_pool_ready(bh_engine *e, enum bh_tier tier)
{
	return tier >= 0 && tier < BH_TIER_COUNT ? count(e, tier, true) : 0;
}

void pool_close_all(bh_engine *e)
{
	if (e->pool_retry) {
		loop_timer_cancel(e->loop, e->pool_retry);
		e->pool_retry = NULL;
	}
	/* Ready ones are closed here; one still opening hears of the engine's
	 * close of every sandbox through on_pool_open, which frees its slot. */
	struct pool_slot *slot = e->pool;
	while (slot) {
		struct pool_slot *next = slot->next;
		if (slot->sb) {
			sandbox_close(e, slot->sb);
			slot_unlink(e, slot);
		}
		slot = next;
	}
}

void pool_free(bh_engine *e)
{
	while (e->pool) {
		struct pool_slot *slot = e->pool;
		e->pool = slot->next;
		free(slot); /* the loop is gone: its timers with it */
	}
}
