/* Samples and the figures the benchmark prints: median, min, p95, max, and
 * ratios taken pair by pair (A and B measured back to back, the ratio of
 * each pair, then the median of those ratios) so machine drift cancels. */
#ifndef BH_BENCH_STATS_H
#define BH_BENCH_STATS_H

#include <stddef.h>

struct samples {
	double *v;
	size_t n, cap;
};

void samples_add(struct samples *s, double v);
void samples_free(struct samples *s);

struct summary {
	size_t n;
	double median, min, p95, max, mean;
};

/* NAN everywhere when s is empty. Does not reorder s. */
struct summary summarize(const struct samples *s);

/* Nearest-rank percentile (q in 0..1) of a copy of s. */
double percentile(const struct samples *s, double q);

double now_us(void);

#endif
