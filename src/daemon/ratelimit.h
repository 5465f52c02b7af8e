/* Admission per principal, as plimsoll's daemon admits: a daemon-wide in-flight cap
 * (shed, never queue), an in-flight cap per principal, and a token bucket per
 * principal that refills `per_minute` calls a minute up to `burst`.
 *
 * The caller passes the time (milliseconds on a monotonic clock), so tests
 * need no sleeping. A principal's state is created on its first call and
 * dropped once its bucket is full again and it has nothing in flight (idle
 * full buckets are evicted by ratelimit_sweep(), which ratelimit_admit()
 * also runs once a minute of the caller's time). Safe to share between
 * threads: one mutex guards the table. */
#ifndef BH_DAEMON_RATELIMIT_H
#define BH_DAEMON_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

struct ratelimit_config {
	unsigned per_minute;    /* calls a principal may start per minute; 0: no rate limit */
	unsigned burst;         /* bucket capacity; 0: the same as per_minute */
	unsigned per_principal; /* calls one principal may have in flight; 0: no cap */
	unsigned total;         /* calls everyone together may have in flight; 0: no cap */
};

enum ratelimit_verdict {
	RATELIMIT_ADMIT = 0,   /* go ahead; call ratelimit_release() when the call is answered */
	RATELIMIT_AT_CAPACITY, /* the daemon-wide in-flight cap is reached */
	RATELIMIT_PER_KEY,     /* this principal's in-flight cap is reached */
	RATELIMIT_RATE,        /* this principal's bucket is empty */
	RATELIMIT_VERDICTS,
};

struct ratelimit_stats {
	uint64_t admitted;
	uint64_t shed[RATELIMIT_VERDICTS]; /* refusals by verdict (shed[RATELIMIT_ADMIT] is 0) */
	size_t principals;                 /* principals with state right now */
	unsigned inflight;                 /* calls admitted and not yet released */
};

struct ratelimit;

struct ratelimit *ratelimit_new(const struct ratelimit_config *cfg);
void ratelimit_free(struct ratelimit *rl);
/* Changes the limits at any time; buckets over the new burst are cut down to it. */
void ratelimit_configure(struct ratelimit *rl, const struct ratelimit_config *cfg);
/* Admits one call of `principal` at now_ms, taking a token and an in-flight
 * slot, or refuses it and takes nothing. On RATELIMIT_RATE *retry_after_ms
 * (when not NULL) says when the next token is due; on the in-flight verdicts
 * it is 0 (a slot frees when a call ends). */
enum ratelimit_verdict ratelimit_admit(struct ratelimit *rl, const char *principal,
				       uint64_t now_ms, uint64_t *retry_after_ms);
/* The admitted call has been answered: gives its in-flight slot back. */
void ratelimit_release(struct ratelimit *rl, const char *principal);
/* Drops principals whose bucket is full at now_ms and who have nothing in
 * flight; returns how many were dropped. */
size_t ratelimit_sweep(struct ratelimit *rl, uint64_t now_ms);
void ratelimit_get_stats(struct ratelimit *rl, struct ratelimit_stats *out);
/* "admit", "at_capacity", "per_key", "rate" (plimsoll's shed reasons). */
const char *ratelimit_verdict_name(enum ratelimit_verdict v);

#endif
