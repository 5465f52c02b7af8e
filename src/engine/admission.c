/* Admission: the one rule every new sandbox passes before anything is
 * created, whoever asks for it: a session's open, a fresh call's (`Run`,
 * bh_exec), the warm pool's refill, and a hibernated session's restore.
 *
 * A sandbox holds a *place* while it lives: an open session (awake or
 * asleep), a fresh call in flight, a pooled sandbox (ready or opening).
 * The places are capped three ways:
 *   - all of them by max_sessions;
 *   - one principal's sessions and calls in flight by max_per_principal,
 *     so one tenant cannot take every place from the others;
 *   - those whose sandbox has processes (everything but a hibernated
 *     session) by the memory budget: their memory limits must sum to at
 *     most memory_budget_mb, or to memory_overcommit_pct of it; then (issue
 *     21) what they use, measured, with one more's share, must stay under
 *     the budget's high watermark, and the reclaim (reclaim.c) keeps it so.
 * The per-owner cap and its LRU replacement are the session's own
 * (session_open.c) and run before this.
 *
 * The pool's sandboxes belong to nobody: they count against max_sessions
 * and the budget but never against a principal, a session that takes one
 * moves its place instead of adding one, and a tenant that finds no room
 * has a ready pooled sandbox closed for it (tenants come before the pool;
 * a pool refill that would not fit waits). */
#include "engine_priv.h"

#include <string.h>

uint32_t admission_fair_share(uint32_t max_sessions, uint32_t memory_budget_mb,
			      uint32_t memory_limit_mb)
{
	uint32_t fit = memory_limit_mb ? memory_budget_mb / memory_limit_mb : max_sessions;
	uint32_t most = fit < max_sessions ? fit : max_sessions;
	return most / 4 ? most / 4 : 1;
}

size_t admission_budget_sandboxes(const bh_engine *e)
{
	if (!e->memory_limit_mb)
		return 0;
	uint64_t pct = e->policy.memory_overcommit_pct ? e->policy.memory_overcommit_pct : 100;
	return (size_t)((uint64_t)e->policy.memory_budget_mb * pct / 100u / e->memory_limit_mb);
}

/* Overcommitted, the limits no longer bound what sandboxes use: the
 * measured use, with one more sandbox's share of the budget (its limit over
 * the overcommit), must stay under the high watermark. Not overcommitted,
 * the limits' rule is the whole rule (a sandbox cannot use past its limit). */
static bool measured_use_ok(const bh_engine *e)
{
	uint32_t pct = e->policy.memory_overcommit_pct;
	if (pct <= 100)
		return true;
	uint64_t share = (uint64_t)e->memory_limit_mb * 1048576u * 100u / pct;
	uint64_t high = (uint64_t)e->policy.memory_budget_mb * 1048576u / 100u * reclaim_high_pct(e);
	return reclaim_used_bytes(e) + share <= high;
}

static void census(bh_engine *e, const char *principal, struct census *c);

int admit_branch(bh_engine *e, const char *principal, const char *owner, unsigned n, bh_error **err)
{
	const struct bh_policy *p = &e->policy;
	struct census c;
	census(e, principal ? principal : "", &c);
	size_t owned = sessions_owned(e, principal, owner);
	if (owner && *owner && owned + n > p->max_per_owner)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "a branch of %u would give this owner %zu sessions, past its cap of %u; "
				 "close some, or branch fewer",
				 n, owned + n, p->max_per_owner);
	if (c.mine + n > p->max_per_principal)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "a branch of %u would give this caller %zu sandboxes, past its maximum "
				 "of %u; close a session or branch fewer",
				 n, c.mine + n, p->max_per_principal);
	if (c.places + n > p->max_sessions)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "no room for a branch of %u now: the limit of sandboxes is full; "
				 "nothing ran, try again later",
				 n);
	return 0;
}

static void census(bh_engine *e, const char *principal, struct census *c)
{
	memset(c, 0, sizeof *c);
	sessions_census(e, principal, c);
	execs_census(e, principal, c);
	pool_census(e, c);
}

static const char *const kind_names[] = {"session", "Run call", "pooled sandbox",
					 "restore of a hibernated session",
					 "adoption of a hibernated session"};

int admit_sandbox(bh_engine *e, const struct admit_ask *ask, bh_error **err)
{
	const struct bh_policy *p = &e->policy;
	const char *principal = ask->principal ? ask->principal : "";
	bool tenant = ask->kind != ADMIT_POOL;
	/* A session opening on a tier with a ready pooled sandbox takes that
	 * sandbox: its place and memory change hands. */
	bool transfer = ask->kind == ADMIT_SESSION && ask->tier > BH_TIER_NONE &&
			ask->tier < BH_TIER_COUNT && bh_engine_pool_ready(e, ask->tier) > 0;
	size_t new_place = ask->kind == ADMIT_WAKE || transfer ? 0 : 1;
	size_t new_memory = transfer || ask->kind == ADMIT_ADOPT ? 0 : 1;
	size_t budget_sandboxes = admission_budget_sandboxes(e);
	struct census c;
	census(e, principal, &c);
	/* Only a tenant's own places count against its cap (a restore is of a
	 * place it holds already). */
	if (tenant && ask->kind != ADMIT_WAKE && c.mine + 1 > p->max_per_principal) {
		/* The audit line shows the refusal; the log need not, call by call. */
		bh_log(e, BH_LOG_DEBUG, "admission: refused a %s of principal \"%s\": it holds %zu of its %u",
		       kind_names[ask->kind], principal, c.mine, p->max_per_principal);
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "this caller holds its maximum of %u sandboxes (open sessions and Run "
				 "calls in flight); close a session or wait for a call to finish",
				 p->max_per_principal);
	}
	for (;;) {
		bool places_ok = c.places + new_place <= p->max_sessions;
		bool memory_ok = c.memory + new_memory <= budget_sandboxes;
		bool use_ok = !new_memory || measured_use_ok(e);
		if (places_ok && memory_ok && use_ok)
			return 0;
		if (places_ok && memory_ok) {
			/* The limits fit the overcommit but what runs uses the budget:
			 * the reclaim (its next tick) gives idle sandboxes' memory
			 * back; this one is refused now, not made to wait. */
			bh_log(e, BH_LOG_INFO,
			       "admission: refused a %s: sandboxes use %llu MiB, over %u%% of the %u "
			       "MiB budget with room kept for one more",
			       kind_names[ask->kind], (unsigned long long)(reclaim_used_bytes(e) >> 20),
			       reclaim_high_pct(e), p->memory_budget_mb);
			return bh_refuse(err, BH_REFUSAL_CAPACITY,
					 "no room for another sandbox now: what the sandboxes use fills the "
					 "memory budget; nothing ran, idle ones are being given back, try "
					 "again in a moment");
		}
		if (tenant && pool_yield(e)) {
			census(e, principal, &c);
			continue;
		}
		bh_log(e, tenant ? BH_LOG_INFO : BH_LOG_DEBUG,
		       "admission: refused a %s%s%s%s: %zu of %u places, %zu sandboxes of %u MiB in "
		       "a %u MiB budget",
		       kind_names[ask->kind], tenant ? " of principal \"" : "", tenant ? principal : "",
		       tenant ? "\"" : "", c.places, p->max_sessions, c.memory, e->memory_limit_mb,
		       p->memory_budget_mb);
		/* The caller learns that there is no room, not how the other
		 * tenants fill it: the counts are in the operator's log. */
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "no room for another sandbox now: the %s is full; nothing ran, try "
				 "again later",
				 places_ok ? "memory budget" : "limit of sandboxes");
	}
}
