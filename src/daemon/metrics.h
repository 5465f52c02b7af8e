/* The daemon's counters, rendered as Prometheus text at /metrics. */
#ifndef BH_DAEMON_METRICS_H
#define BH_DAEMON_METRICS_H

#include "bulkhead.h"

#include <stdint.h>
#include <stdio.h>

#define METRICS_LATENCY_BUCKETS 12
/* ---- approvals: how held calls ended ---- */
enum metrics_approval { METRICS_APPROVED, METRICS_DENIED, METRICS_TIMED_OUT, METRICS_DROPPED,
			METRICS_APPROVAL_OUTCOMES };

struct metrics {
	uint64_t calls[8][17];  /* by procedure index and Connect code */
	uint64_t cells, runs;
	uint64_t refusals[8];   /* by NotDispatched reason */
	uint64_t latency_bucket[METRICS_LATENCY_BUCKETS + 1]; /* cell wall time; last is +Inf */
	double latency_sum_s;
	uint64_t latency_count;
	uint64_t leaks_found, leaks_reaped;
	uint64_t unauthenticated;
	uint64_t readiness_checks;   /* preflights /readyz ran (the rest were answered cached) */
	uint64_t peer_refusals[2];   /* connections over the per-peer limit: unix, tcp */
	/* ---- approvals ---- */
	uint64_t approvals_waiting;                   /* calls held now */
	uint64_t approvals[METRICS_APPROVAL_OUTCOMES]; /* decided, by metrics_approval_names */
	/* ---- fleet (issue 20) ---- */
	uint64_t fleet_forwarded;     /* calls sent to the host holding their session */
	uint64_t fleet_forward_failed;/* of them, no answer came (the host or NATS failed) */
	uint64_t fleet_served;        /* calls another host forwarded here */
	uint64_t fleet_adopted;       /* hibernated sessions of a gone host adopted here */
	uint64_t fleet_host_lost;     /* calls refused host_lost */
};

/* Index of a procedure name for metrics; the last index is "other". */
int metrics_procedure(const char *procedure);
void metrics_cell_latency(struct metrics *m, uint64_t wall_us);
/* Prometheus text exposition (version 0.0.4); sessions by state come from the engine. */
char *metrics_render(const struct metrics *m, bh_engine *e);

/* ---- usage ---- */
/* Per-sandbox series are labelled by the first 12 hex digits of the
 * session's fingerprint and its tier, at most this many per metric: the
 * sessions using the most memory get their own; the rest are summed into
 * one series labelled session="_other", and bulkhead_sandbox_series_folded
 * says how many it holds. */
#define METRICS_USAGE_SERIES 32
/* The usage figures (metrics_usage.c): per sandbox, the host and the daemon. */
void metrics_render_usage(FILE *f, bh_engine *e);

/* ---- plumb: egress ---- */
/* bulkhead_egress_requests_total and the bytes, per profile and status
 * (metrics_egress.c); the series are there only once the broker noted a
 * request. */
void metrics_render_egress(FILE *f, bh_engine *e);

#endif
