#include "ratelimit.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A bucket counts in units of 1/60000 of a token, so refilling
 * per_minute tokens a minute adds exactly per_minute units a millisecond. */
#define UNITS_PER_TOKEN 60000u
#define BUCKETS 256
#define SWEEP_EVERY_MS 60000u

struct principal {
	struct principal *next;
	uint64_t level;   /* units in the bucket at `at` */
	uint64_t at;      /* ms when level was last brought up to date */
	unsigned inflight;
	char name[];
};

struct ratelimit {
	pthread_mutex_t lock; /* guards everything below */
	struct ratelimit_config cfg;
	struct principal *table[BUCKETS];
	size_t count;
	unsigned inflight;
	uint64_t last_sweep;
	uint64_t admitted;
	uint64_t shed[RATELIMIT_VERDICTS];
};

static struct ratelimit_config normalise(const struct ratelimit_config *in)
{
	struct ratelimit_config c = in ? *in : (struct ratelimit_config){0};
	if (c.per_minute && !c.burst)
		c.burst = c.per_minute;
	return c;
}

static uint64_t capacity(const struct ratelimit *rl)
{
	return (uint64_t)rl->cfg.burst * UNITS_PER_TOKEN;
}

static size_t slot(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % BUCKETS;
}

/* Brings p's bucket up to now; a clock that went back refills nothing. */
static void refill(const struct ratelimit *rl, struct principal *p, uint64_t now)
{
	uint64_t cap = capacity(rl);
	if (now > p->at && rl->cfg.per_minute) {
		uint64_t elapsed = now - p->at;
		if (p->level >= cap || elapsed > (cap - p->level) / rl->cfg.per_minute)
			p->level = cap;
		else
			p->level += elapsed * rl->cfg.per_minute;
	}
	if (p->level > cap)
		p->level = cap;
	if (now > p->at)
		p->at = now;
}

static bool idle_and_full(const struct ratelimit *rl, struct principal *p, uint64_t now)
{
	if (p->inflight)
		return false;
	if (!rl->cfg.per_minute)
		return true;
	refill(rl, p, now);
	return p->level >= capacity(rl);
}

static size_t sweep_locked(struct ratelimit *rl, uint64_t now)
{
	size_t dropped = 0;
	for (size_t b = 0; b < BUCKETS; b++) {
		struct principal **pp = &rl->table[b];
		while (*pp) {
			struct principal *p = *pp;
			if (idle_and_full(rl, p, now)) {
				*pp = p->next;
				free(p);
				dropped++;
			} else {
				pp = &p->next;
			}
		}
	}
	rl->count -= dropped;
	rl->last_sweep = now;
	return dropped;
}

struct ratelimit *ratelimit_new(const struct ratelimit_config *cfg)
{
	struct ratelimit *rl = calloc(1, sizeof *rl);
	if (!rl)
		abort();
	pthread_mutex_init(&rl->lock, NULL);
	rl->cfg = normalise(cfg);
	return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
	if (!rl)
		return;
	for (size_t b = 0; b < BUCKETS; b++) {
		struct principal *p = rl->table[b];
		while (p) {
			struct principal *next = p->next;
			free(p);
			p = next;
		}
	}
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

void ratelimit_configure(struct ratelimit *rl, const struct ratelimit_config *cfg)
{
	pthread_mutex_lock(&rl->lock);
	rl->cfg = normalise(cfg);
	uint64_t cap = capacity(rl);
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct principal *p = rl->table[b]; p; p = p->next)
			if (p->level > cap)
				p->level = cap;
	pthread_mutex_unlock(&rl->lock);
}

static struct principal *lookup(struct ratelimit *rl, const char *name)
{
	for (struct principal *p = rl->table[slot(name)]; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

enum ratelimit_verdict ratelimit_admit(struct ratelimit *rl, const char *principal,
				       uint64_t now_ms, uint64_t *retry_after_ms)
{
	enum ratelimit_verdict v = RATELIMIT_ADMIT;
	uint64_t retry = 0;
	pthread_mutex_lock(&rl->lock);
	if (now_ms >= rl->last_sweep + SWEEP_EVERY_MS)
		sweep_locked(rl, now_ms);
	if (rl->cfg.total && rl->inflight >= rl->cfg.total) {
		v = RATELIMIT_AT_CAPACITY;
		goto out;
	}
	struct principal *p = lookup(rl, principal);
	if (!p) {
		size_t len = strlen(principal);
		p = calloc(1, sizeof *p + len + 1);
		if (!p)
			abort();
		memcpy(p->name, principal, len + 1);
		p->level = capacity(rl); /* a new principal starts with a full bucket */
		p->at = now_ms;
		size_t b = slot(principal);
		p->next = rl->table[b];
		rl->table[b] = p;
		rl->count++;
	}
	if (rl->cfg.per_principal && p->inflight >= rl->cfg.per_principal) {
		v = RATELIMIT_PER_KEY;
		goto out;
	}
	if (rl->cfg.per_minute) {
		refill(rl, p, now_ms);
		if (p->level < UNITS_PER_TOKEN) {
			uint64_t missing = UNITS_PER_TOKEN - p->level;
			retry = (missing + rl->cfg.per_minute - 1) / rl->cfg.per_minute;
			v = RATELIMIT_RATE;
			goto out;
		}
		p->level -= UNITS_PER_TOKEN;
	}
	p->inflight++;
	rl->inflight++;
out:
	if (v == RATELIMIT_ADMIT)
		rl->admitted++;
	else
		rl->shed[v]++;
	pthread_mutex_unlock(&rl->lock);
	if (retry_after_ms)
		*retry_after_ms = retry;
	return v;
}

void ratelimit_release(struct ratelimit *rl, const char *principal)
{
	pthread_mutex_lock(&rl->lock);
	struct principal *p = lookup(rl, principal);
	if (p && p->inflight) {
		p->inflight--;
		if (rl->inflight)
			rl->inflight--;
	}
	pthread_mutex_unlock(&rl->lock);
}

size_t ratelimit_sweep(struct ratelimit *rl, uint64_t now_ms)
{
	pthread_mutex_lock(&rl->lock);
	size_t n = sweep_locked(rl, now_ms);
	pthread_mutex_unlock(&rl->lock);
	return n;
}

void ratelimit_get_stats(struct ratelimit *rl, struct ratelimit_stats *out)
{
	pthread_mutex_lock(&rl->lock);
	*out = (struct ratelimit_stats){
		.admitted = rl->admitted,
		.principals = rl->count,
		.inflight = rl->inflight,
	};
	memcpy(out->shed, rl->shed, sizeof out->shed);
	pthread_mutex_unlock(&rl->lock);
}

const char *ratelimit_verdict_name(enum ratelimit_verdict v)
{
	static const char *const names[RATELIMIT_VERDICTS] = {
		[RATELIMIT_ADMIT] = "admit",
		[RATELIMIT_AT_CAPACITY] = "at_capacity",
		[RATELIMIT_PER_KEY] = "per_key",
		[RATELIMIT_RATE] = "rate",
	};
	if ((unsigned)v >= RATELIMIT_VERDICTS)
		return "unknown";
	return names[v];
}
