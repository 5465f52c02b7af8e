#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void samples_add(struct samples *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		if (!s->v)
			abort();
	}
	s->v[s->n++] = v;
}

void samples_free(struct samples *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double *sorted_copy(const struct samples *s)
{
	double *v = malloc((s->n ? s->n : 1) * sizeof *v);
	if (!v)
		abort();
	memcpy(v, s->v, s->n * sizeof *v);
	qsort(v, s->n, sizeof *v, by_value);
	return v;
}

/* Nearest rank: the smallest value with at least q of the samples at or
 * below it. */
static double rank(const double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	size_t i = (size_t)ceil(q * (double)n);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

double percentile(const struct samples *s, double q)
{
	double *v = sorted_copy(s);
	double r = rank(v, s->n, q);
	free(v);
	return r;
}

struct summary summarize(const struct samples *s)
{
	struct summary m = {.n = s->n, .median = NAN, .min = NAN, .p95 = NAN, .max = NAN, .mean = NAN};
	if (!s->n)
		return m;
	double *v = sorted_copy(s);
	/* The median of an even count is the mean of the middle two. */
	m.median = s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2.0;
	m.min = v[0];
	m.max = v[s->n - 1];
	m.p95 = rank(v, s->n, 0.95);
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += v[i];
	m.mean = sum / (double)s->n;
	free(v);
	return m;
}

double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
