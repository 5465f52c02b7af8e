/* Counters and one histogram, written as Prometheus text exposition 0.0.4. */
#include "metrics.h"
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const procedures[] = {
	"plimsoll.v1.SandboxService/Describe",	  "plimsoll.v1.SandboxService/Run",
	"plimsoll.v1.SandboxService/OpenSession", "plimsoll.v1.SandboxService/SessionRun",
	"plimsoll.v1.SandboxService/CloseSession", "bulkhead.v1.OperatorService",
	"health",
};
#define N_PROCEDURES (sizeof procedures / sizeof procedures[0])

/* Seconds; the warm cell's target is 2 ms, a cold one up to a second. */
static const double bounds[METRICS_LATENCY_BUCKETS] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.025,
						       0.05,   0.1,   0.25,  0.5,   1,    5};

int metrics_procedure(const char *procedure)
{
	for (size_t i = 0; i < N_PROCEDURES; i++)
		if (!strncmp(procedure, procedures[i], strlen(procedures[i])))
			return (int)i;
	return (int)N_PROCEDURES; /* "other" */
}

void metrics_cell_latency(struct metrics *m, uint64_t wall_us)
{
	double s = (double)wall_us / 1e6;
	size_t i = 0;
	while (i < METRICS_LATENCY_BUCKETS && s > bounds[i])
		i++;
	m->latency_bucket[i]++;
	m->latency_sum_s += s;
	m->latency_count++;
}

char *metrics_render(const struct metrics *m, bh_engine *e)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	fprintf(f, "# HELP bulkhead_sessions Sessions the engine holds, by state.\n"
		   "# TYPE bulkhead_sessions gauge\n");
	size_t counts[BH_SESSION_STATE_COUNT] = {0};
	if (e) {
		bh_session **list = NULL;
		size_t n = bh_engine_sessions(e, &list);
		for (size_t i = 0; i < n; i++) {
			struct bh_session_info info;
			bh_session_get_info(list[i], &info);
			if ((unsigned)info.state < BH_SESSION_STATE_COUNT)
				counts[info.state]++;
		}
		free(list);
	}
	/* Every state, in the engine's order, zeros included. */
	for (int j = 0; j < BH_SESSION_STATE_COUNT; j++)
		fprintf(f, "bulkhead_sessions{state=\"%s\"} %zu\n",
			bh_session_state_name((enum bh_session_state)j), counts[j]);
	fprintf(f, "# HELP bulkhead_pool_ready Never-used sandboxes ready in the warm pool, by tier.\n"
		   "# TYPE bulkhead_pool_ready gauge\n");
	static const enum bh_tier pooled[] = {BH_TIER_CONTAINER, BH_TIER_KERNEL};
	for (size_t j = 0; j < sizeof pooled / sizeof pooled[0]; j++)
		fprintf(f, "bulkhead_pool_ready{tier=\"%s\"} %zu\n", bh_tier_name(pooled[j]),
			e ? bh_engine_pool_ready(e, pooled[j]) : 0);
	fprintf(f, "# HELP bulkhead_calls_total Calls answered, by procedure and Connect code.\n"
		   "# TYPE bulkhead_calls_total counter\n");
	for (size_t p = 0; p <= N_PROCEDURES; p++)
		for (int c = 0; c < WIRE_CODE_COUNT; c++)
			if (m->calls[p][c])
				fprintf(f, "bulkhead_calls_total{procedure=\"%s\",code=\"%s\"} %llu\n",
					p < N_PROCEDURES ? procedures[p] : "other",
					wire_code_name((enum wire_code)c),
					(unsigned long long)m->calls[p][c]);
	fprintf(f, "# HELP bulkhead_cells_total Cells answered in sessions.\n"
		   "# TYPE bulkhead_cells_total counter\nbulkhead_cells_total %llu\n",
		(unsigned long long)m->cells);
	fprintf(f, "# HELP bulkhead_runs_total Single runs answered.\n"
		   "# TYPE bulkhead_runs_total counter\nbulkhead_runs_total %llu\n",
		(unsigned long long)m->runs);
	fprintf(f, "# HELP bulkhead_refusals_total Calls refused before anything ran, by reason.\n"
		   "# TYPE bulkhead_refusals_total counter\n");
	for (int r = 1; r < 8; r++)
		fprintf(f, "bulkhead_refusals_total{reason=\"%s\"} %llu\n",
			wire_refusal_name((enum wire_refusal)r), (unsigned long long)m->refusals[r]);
	fprintf(f, "# HELP bulkhead_unauthenticated_total Calls without a valid token.\n"
		   "# TYPE bulkhead_unauthenticated_total counter\nbulkhead_unauthenticated_total %llu\n",
		(unsigned long long)m->unauthenticated);
	fprintf(f, "# HELP bulkhead_readiness_checks_total Preflights /readyz ran; it answers from the "
		   "last for a second.\n"
		   "# TYPE bulkhead_readiness_checks_total counter\nbulkhead_readiness_checks_total %llu\n",
		(unsigned long long)m->readiness_checks);
	fprintf(f, "# HELP bulkhead_connections_refused_total Connections refused because their peer "
		   "(a local uid) held its limit on the listener.\n"
		   "# TYPE bulkhead_connections_refused_total counter\n"
		   "bulkhead_connections_refused_total{listener=\"unix\"} %llu\n"
		   "bulkhead_connections_refused_total{listener=\"tcp\"} %llu\n",
		(unsigned long long)m->peer_refusals[0], (unsigned long long)m->peer_refusals[1]);
	fprintf(f, "# HELP bulkhead_cell_seconds Wall time of a cell, call to answer.\n"
		   "# TYPE bulkhead_cell_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t i = 0; i < METRICS_LATENCY_BUCKETS; i++) {
		cum += m->latency_bucket[i];
		fprintf(f, "bulkhead_cell_seconds_bucket{le=\"%g\"} %llu\n", bounds[i],
			(unsigned long long)cum);
	}
	cum += m->latency_bucket[METRICS_LATENCY_BUCKETS];
	fprintf(f, "bulkhead_cell_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
	fprintf(f, "bulkhead_cell_seconds_sum %.6f\nbulkhead_cell_seconds_count %llu\n", m->latency_sum_s,
		(unsigned long long)m->latency_count);
	fprintf(f, "# HELP bulkhead_leaks_found_total Leaks the operator's reconciles found.\n"
		   "# TYPE bulkhead_leaks_found_total counter\nbulkhead_leaks_found_total %llu\n",
		(unsigned long long)m->leaks_found);
	fprintf(f, "# HELP bulkhead_leaks_reaped_total Leaks reaped by gc.\n"
		   "# TYPE bulkhead_leaks_reaped_total counter\nbulkhead_leaks_reaped_total %llu\n",
		(unsigned long long)m->leaks_reaped);
	/* ---- approvals ---- */
	fprintf(f, "# HELP bulkhead_approvals_waiting Calls held for a person's decision now.\n"
		   "# TYPE bulkhead_approvals_waiting gauge\nbulkhead_approvals_waiting %llu\n",
		(unsigned long long)m->approvals_waiting);
	fprintf(f, "# HELP bulkhead_approvals_total Held calls, by how their wait ended.\n"
		   "# TYPE bulkhead_approvals_total counter\n");
	static const char *const outcomes[] = {"approved", "denied", "timed_out", "dropped"};
	for (size_t i = 0; i < METRICS_APPROVAL_OUTCOMES; i++)
		fprintf(f, "bulkhead_approvals_total{outcome=\"%s\"} %llu\n", outcomes[i],
			(unsigned long long)m->approvals[i]);
	/* ---- fleet (issue 20): zeros on a host alone ---- */
	fprintf(f, "# HELP bulkhead_fleet_forwarded_total Calls forwarded to the host holding their "
		   "session, by outcome.\n"
		   "# TYPE bulkhead_fleet_forwarded_total counter\n"
		   "bulkhead_fleet_forwarded_total{outcome=\"answered\"} %llu\n"
		   "bulkhead_fleet_forwarded_total{outcome=\"failed\"} %llu\n",
		(unsigned long long)(m->fleet_forwarded - m->fleet_forward_failed),
		(unsigned long long)m->fleet_forward_failed);
	fprintf(f, "# HELP bulkhead_fleet_served_total Calls another host forwarded here.\n"
		   "# TYPE bulkhead_fleet_served_total counter\nbulkhead_fleet_served_total %llu\n",
		(unsigned long long)m->fleet_served);
	fprintf(f, "# HELP bulkhead_fleet_adoptions_total Hibernated sessions of a gone host "
		   "adopted here.\n"
		   "# TYPE bulkhead_fleet_adoptions_total counter\nbulkhead_fleet_adoptions_total %llu\n",
		(unsigned long long)m->fleet_adopted);
	fprintf(f, "# HELP bulkhead_fleet_host_lost_total Calls refused host_lost (their session's "
		   "host is gone).\n"
		   "# TYPE bulkhead_fleet_host_lost_total counter\nbulkhead_fleet_host_lost_total %llu\n",
		(unsigned long long)m->fleet_host_lost);
	if (e) /* ---- usage ---- */
		metrics_render_usage(f, e);
	if (e) /* ---- plumb: egress ---- */
		metrics_render_egress(f, e);
	fclose(f);
	return out;
}
