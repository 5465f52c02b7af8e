/* /metrics' usage figures: each live sandbox's CPU, memory, pids, disk and
 * calls a minute (cardinality bounded: METRICS_USAGE_SERIES in metrics.h),
 * the host's load and memory, the budgets, and the daemon's version and
 * uptime. One bh_engine_usage call per scrape. */
#include "metrics.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int by_memory_desc(const void *x, const void *y)
{
	const struct bh_session_usage *a = x, *b = y;
	if (a->memory_bytes != b->memory_bytes)
		return a->memory_bytes < b->memory_bytes ? 1 : -1;
	return strcmp(a->fingerprint, b->fingerprint); /* stable between scrapes */
}

/* A per-sandbox figure: its metric, and where bh_session_usage keeps it. */
struct series {
	const char *name, *help;
	size_t offset, size; /* a uint32_t or a uint64_t */
};

#define FIGURE(member) \
	offsetof(struct bh_session_usage, member), sizeof(((struct bh_session_usage *)0)->member)
static const struct series all_series[] = {
	{"bulkhead_sandbox_cpu_millicores", "CPU over the last sample interval, 1000 = one CPU.",
	 FIGURE(cpu_millicores)},
	{"bulkhead_sandbox_memory_bytes", "Memory the sandbox's cgroup uses now.",
	 FIGURE(memory_bytes)},
	{"bulkhead_sandbox_memory_limit_bytes", "The sandbox's memory limit.",
	 FIGURE(memory_limit_bytes)},
	{"bulkhead_sandbox_memory_peak_bytes", "The most memory the sandbox's cgroup used.",
	 FIGURE(memory_peak_bytes)},
	{"bulkhead_sandbox_pids", "Host tasks in the sandbox's cgroup (runsc: the Sentry's).",
	 FIGURE(pids)},
	{"bulkhead_sandbox_disk_bytes",
	 "Bytes in /work, /tmp and /dev/shm as the init measured them after the last call.",
	 FIGURE(disk_bytes)},
	{"bulkhead_sandbox_calls_last_minute", "Calls started in the session in the last 60 s.",
	 FIGURE(calls_last_minute)},
};
#undef FIGURE

static uint64_t value(const struct series *s, const struct bh_session_usage *u)
{
	const char *p = (const char *)u + s->offset;
	if (s->size == sizeof(uint32_t)) {
		uint32_t v;
		memcpy(&v, p, sizeof v);
		return v;
	}
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

void metrics_render_usage(FILE *f, bh_engine *e)
{
	struct bh_host_usage host;
	struct bh_session_usage *u = NULL;
	size_t n = bh_engine_usage(e, &host, &u);
	qsort(u, n, sizeof *u, by_memory_desc);
	size_t own = n < METRICS_USAGE_SERIES ? n : METRICS_USAGE_SERIES;
	for (size_t k = 0; k < sizeof all_series / sizeof all_series[0]; k++) {
		const struct series *s = &all_series[k];
		fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", s->name, s->help, s->name);
		for (size_t i = 0; i < own; i++)
			fprintf(f, "%s{session=\"%.12s\",tier=\"%s\"} %llu\n", s->name,
				u[i].fingerprint, bh_tier_name(u[i].tier),
				(unsigned long long)value(s, &u[i]));
		if (n > own) {
			uint64_t sum = 0;
			for (size_t i = own; i < n; i++)
				sum += value(s, &u[i]);
			fprintf(f, "%s{session=\"_other\",tier=\"\"} %llu\n", s->name,
				(unsigned long long)sum);
		}
	}
	fprintf(f,
		"# HELP bulkhead_sandbox_series_folded Live sessions past the %d with series of their "
		"own, summed into session=\"_other\".\n"
		"# TYPE bulkhead_sandbox_series_folded gauge\nbulkhead_sandbox_series_folded %zu\n",
		METRICS_USAGE_SERIES, n - own);
	free(u);
	fprintf(f, "# HELP bulkhead_host_load Load average of the host.\n"
		   "# TYPE bulkhead_host_load gauge\n");
	static const char *const windows[3] = {"1m", "5m", "15m"};
	for (int i = 0; i < 3; i++)
		fprintf(f, "bulkhead_host_load{window=\"%s\"} %.3f\n", windows[i],
			host.load_milli[i] / 1000.0);
	fprintf(f,
		"# HELP bulkhead_host_memory_bytes The host's memory (/proc/meminfo).\n"
		"# TYPE bulkhead_host_memory_bytes gauge\n"
		"bulkhead_host_memory_bytes{kind=\"total\"} %llu\n"
		"bulkhead_host_memory_bytes{kind=\"available\"} %llu\n",
		(unsigned long long)host.mem_total_bytes,
		(unsigned long long)host.mem_available_bytes);
	fprintf(f,
		"# HELP bulkhead_memory_budget_bytes The sandboxes' memory budget: its size, what the "
		"live sandboxes' limits hold of it, what they use.\n"
		"# TYPE bulkhead_memory_budget_bytes gauge\n"
		"bulkhead_memory_budget_bytes{kind=\"budget\"} %llu\n"
		"bulkhead_memory_budget_bytes{kind=\"held\"} %llu\n"
		"bulkhead_memory_budget_bytes{kind=\"used\"} %llu\n",
		(unsigned long long)host.budget_bytes, (unsigned long long)host.budget_held_bytes,
		(unsigned long long)host.sandboxes_used_bytes);
	fprintf(f,
		"# HELP bulkhead_images_bytes Hibernation images on disk, and their budget.\n"
		"# TYPE bulkhead_images_bytes gauge\n"
		"bulkhead_images_bytes{kind=\"used\"} %llu\n"
		"bulkhead_images_bytes{kind=\"budget\"} %llu\n",
		(unsigned long long)host.images_bytes,
		(unsigned long long)host.images_budget_bytes);
	int64_t up = host.now_unix_ms - host.started_unix_ms;
	fprintf(f,
		"# HELP bulkhead_uptime_seconds Since the daemon's engine opened.\n"
		"# TYPE bulkhead_uptime_seconds gauge\nbulkhead_uptime_seconds %.3f\n"
		"# HELP bulkhead_build_info The daemon's version.\n"
		"# TYPE bulkhead_build_info gauge\nbulkhead_build_info{version=\"%s\"} 1\n",
		up > 0 ? up / 1000.0 : 0.0, BULKHEAD_VERSION);
}
