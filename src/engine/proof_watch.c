/* What an engine's first start waits for, said while it waits.
 *
 * A state directory with no cached evidence proves each runtime tier with a
 * throwaway sandbox (evidence.c) before a call that names no tier can be
 * placed: "the strongest offered tier" is not known until every proof has
 * finished. On a busy host that wait is long enough to look like a hang, so
 * the engine says which tier it proves and which step of the proof it waits
 * on: when the proof starts, every few seconds while it lasts, when it ends,
 * and to whoever asks (readiness, the console). */
#include "engine_priv.h"

#include <stdio.h>
#include <string.h>

#define WATCH_EVERY_MS 5000u

static double seconds_since(uint64_t t0_us)
{
	return (double)(now_mono_us() - t0_us) / 1e6;
}

size_t bh_engine_proving(bh_engine *e, char *buf, size_t n)
{
	size_t tiers = 0, used = 0;
	if (n)
		buf[0] = '\0';
	for (int t = BH_TIER_COUNT - 1; t >= 0; t--) {
		const struct tier_slot *s = &e->tiers[t];
		if (!s->proving)
			continue;
		tiers++;
		if (used < n)
			used += (size_t)snprintf(buf + used, n - used,
						 "%sthe %s tier (waiting for %s, %.1f s so far)",
						 used ? "; " : "", bh_tier_name((enum bh_tier)t),
						 s->waiting_for ? s->waiting_for : "its smoke test",
						 seconds_since(s->proving_since_us));
	}
	return tiers;
}

static void on_watch(bh_engine *e, void *arg)
{
	(void)arg;
	e->proof_watch = NULL;
	char what[512];
	if (!bh_engine_proving(e, what, sizeof what))
		return;
	bh_log(e, BH_LOG_INFO, "still proving %s", what);
	e->proof_watch = loop_timer(e->loop, WATCH_EVERY_MS, on_watch, NULL);
}

void proof_started(bh_engine *e, enum bh_tier tier, const char *waiting_for)
{
	struct tier_slot *s = &e->tiers[tier];
	s->proving_since_us = now_mono_us();
	s->waiting_for = waiting_for;
	bh_log(e, BH_LOG_INFO,
	       "proving the %s tier: a %s smoke sandbox proves its walls from inside (%s); calls "
	       "that need it wait",
	       bh_tier_name(tier), e->runtimes[tier].ops->name,
	       e->reprove ? "asked to prove again"
			  : "no evidence is cached for this runtime, kernel, boot and bundle");
	if (!e->proof_watch)
		e->proof_watch = loop_timer(e->loop, WATCH_EVERY_MS, on_watch, NULL);
}

void proof_step(bh_engine *e, enum bh_tier tier, const char *waiting_for)
{
	struct tier_slot *s = &e->tiers[tier];
	s->waiting_for = waiting_for;
	bh_log(e, BH_LOG_DEBUG, "proving the %s tier: waiting for %s (%.2f s so far)",
	       bh_tier_name(tier), waiting_for, seconds_since(s->proving_since_us));
}

double proof_seconds(bh_engine *e, enum bh_tier tier)
{
	return seconds_since(e->tiers[tier].proving_since_us);
}

void proof_watch_stop(bh_engine *e)
{
	loop_timer_cancel(e->loop, e->proof_watch);
	e->proof_watch = NULL;
}
