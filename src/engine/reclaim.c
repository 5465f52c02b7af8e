/* Reclaim: giving memory back before the kernel takes it (issue 21).
 *
 * With an overcommitted budget (memory_overcommit_pct over 100) admission
 * lets the sandboxes' limits sum past the budget, because an idle sandbox
 * uses a few MiB of its 512: what keeps the host whole is then what they
 * *use*. The loop's one-second tick reads that once, from the engine's
 * cgroup parent (the kernel sums every sandbox under it: one file, however
 * many sessions), and when it passes the high watermark, or the host runs
 * short, gives memory back in order:
 *   1. the least recently used idle awake sessions are paused (they stop
 *      growing; a paused one still holds its pages);
 *   2. the least recently used paused ones are hibernated (kernel tier:
 *      the conversation goes on from disk at its next call) or closed
 *      (container tier, told idle_closed), until what they use covers the
 *      excess down to the low watermark.
 * A session is paused by one tick before a later one hibernates or closes
 * it, so the order holds per session. A session with a call in flight (or
 * queued, or an action in flight) is never touched: a running call is not
 * the one to lose. Each step is an event the console's :events shows.
 * Outside pressure the tick costs one read and a comparison. */
#include "session_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOW_BELOW_HIGH_PCT 10u
/* The host itself short of memory (MemAvailable under this share of
 * MemTotal) is pressure whatever the budget says: an operator's budget can
 * be larger than what the host really has free. */
#define HOST_AVAILABLE_MIN_PCT 5u

uint32_t reclaim_high_pct(const bh_engine *e)
{
	uint32_t h = e->policy.memory_high_pct;
	return h && h <= 100 ? h : 90;
}

uint64_t reclaim_used_bytes(const bh_engine *e)
{
	long long v = cgroups_read_ll(&e->cg, "memory", "",
				      e->cg.pure_v2 ? "memory.current" : "memory.usage_in_bytes");
	return v > 0 ? (uint64_t)v : 0;
}

static uint64_t budget_pct_bytes(const bh_engine *e, uint32_t pct)
{
	return (uint64_t)e->policy.memory_budget_mb * 1048576u / 100u * pct;
}

static bool host_short(void)
{
	cleanup_free char *mem = read_file("/proc/meminfo", 1 << 16, NULL);
	const char *t = mem ? strstr(mem, "MemTotal:") : NULL;
	const char *a = mem ? strstr(mem, "MemAvailable:") : NULL;
	if (!t || !a)
		return false;
	unsigned long long total = strtoull(t + 9, NULL, 10), avail = strtoull(a + 13, NULL, 10);
	return total && avail * 100u < total * HOST_AVAILABLE_MIN_PCT;
}

/* Idle: its sandbox holds memory and nothing of a caller's is in flight. */
static bool idle_awake(const bh_session *s)
{
	return s->state == BH_SESSION_READY && !s->queue && !s->act_cb && s->claimed && s->sb;
}

static bool idle_paused(const bh_session *s)
{
	return s->state == BH_SESSION_PAUSED && !s->queue && !s->act_cb && s->sb;
}

static int64_t used_at(const bh_session *s)
{
	return s->last_call_ms ? s->last_call_ms : s->created_ms;
}

static int by_lru(const void *a, const void *b)
{
	int64_t x = used_at(*(bh_session *const *)a), y = used_at(*(bh_session *const *)b);
	return x < y ? -1 : x > y;
}

static uint64_t sandbox_used(const bh_session *s)
{
	long long v = cgroups_read_ll(&s->e->cg, "memory", s->sb->name,
				      s->e->cg.pure_v2 ? "memory.current" : "memory.usage_in_bytes");
	return v > 0 ? (uint64_t)v : 0;
}

/* The candidates of one kind, least recently used first. */
static size_t candidates(bh_engine *e, bool (*pick)(const bh_session *), bh_session ***out)
{
	size_t n = 0, cap = 0;
	bh_session **v = NULL;
	for (bh_session *s = e->sessions; s; s = s->next) {
		if (!pick(s))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				abort();
		}
		v[n++] = s;
	}
	if (n)
		qsort(v, n, sizeof *v, by_lru);
	*out = v;
	return n;
}

/* What the sessions on their way out (a checkpoint in flight) still hold:
 * already given back, as far as this tick is concerned. */
static uint64_t leaving_bytes(bh_engine *e)
{
	uint64_t b = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATING && s->sb)
			b += sandbox_used(s);
	return b;
}

static void give_back(bh_session *s, const char *why)
{
	session_acting_policy(s, "policy:memory");
	if (!sandbox_can_hibernate(s->sb)) {
		session_event(s, "reclaim_closed", why);
		end_session(s, BH_END_IDLE_CLOSED, why);
		return;
	}
	bh_error *err = NULL;
	if (session_hibernate(s, &err) < 0) {
		bh_log(s->e, BH_LOG_WARN, "session %.12s: reclaim: hibernate: %s", s->fp, err->msg);
		bh_error_free(err);
		return;
	}
	session_event(s, "reclaim_hibernated", why);
}

void reclaim_tick(bh_engine *e)
{
	if (e->inspect_only || !e->policy.memory_budget_mb)
		return;
	uint64_t used = reclaim_used_bytes(e);
	uint64_t high = budget_pct_bytes(e, reclaim_high_pct(e));
	bool short_host = used && host_short();
	if (used <= high && !short_host) {
		e->reclaiming = false;
		return;
	}
	uint32_t low_pct = reclaim_high_pct(e) > LOW_BELOW_HIGH_PCT
				   ? reclaim_high_pct(e) - LOW_BELOW_HIGH_PCT
				   : 0;
	uint64_t low = budget_pct_bytes(e, low_pct);
	char why[256];
	if (short_host)
		snprintf(why, sizeof why,
			 "memory pressure: the host has under %u%% of its memory available "
			 "(sandboxes use %llu MiB)",
			 HOST_AVAILABLE_MIN_PCT, (unsigned long long)(used >> 20));
	else
		snprintf(why, sizeof why,
			 "memory pressure: sandboxes use %llu MiB of the %u MiB budget (high "
			 "watermark %u%%)",
			 (unsigned long long)(used >> 20), e->policy.memory_budget_mb,
			 reclaim_high_pct(e));
	if (!e->reclaiming)
		bh_log(e, BH_LOG_WARN, "%s: reclaiming idle sandboxes, least recently used first",
		       why);
	e->reclaiming = true;
	/* 2. Paused ones (paused by an earlier tick or by their idle timer)
	 *    give their memory back until the excess is covered. */
	uint64_t leaving = leaving_bytes(e);
	uint64_t excess = used > low + leaving ? used - low - leaving : 0;
	if (short_host && !excess)
		excess = 1; /* at least one, while the host is short */
	bh_session **v = NULL;
	size_t n = candidates(e, idle_paused, &v);
	for (size_t i = 0; i < n && excess; i++) {
		uint64_t b = sandbox_used(v[i]);
		give_back(v[i], why);
		excess = b >= excess ? 0 : excess - b;
	}
	free(v);
	/* 1. Idle awake ones stop where they are; the next tick may take
	 *    them further if the pressure holds. */
	n = candidates(e, idle_awake, &v);
	for (size_t i = 0; i < n; i++) {
		bh_error *err = NULL;
		session_acting_policy(v[i], "policy:memory");
		if (session_pause_now(v[i], &err) < 0) {
			bh_log(e, BH_LOG_WARN, "session %.12s: reclaim: pause: %s", v[i]->fp, err->msg);
			bh_error_free(err);
			continue;
		}
		session_event(v[i], "reclaim_paused", why);
	}
	free(v);
}
