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
 *     most memory_budget_mb.
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
	size_t budget_sandboxes = e->memory_limit_mb ? p->memory_budget_mb / e->memory_limit_mb : 0;
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
		if (places_ok && memory_ok)
			return 0;
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
