/* The broker's requests in /metrics (issue 18): what the engine counted
 * from the broker's notes, per profile and status, since it opened. */
#include "metrics.h"
#include "egress.h"

#include <stdlib.h>
#include <string.h>

struct egress_rows {
	struct bh_egress_count *v;
	char **profiles;
	size_t n, cap;
};

static void keep(void *arg, const struct bh_egress_count *c)
{
	struct egress_rows *r = arg;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
		r->profiles = realloc(r->profiles, r->cap * sizeof *r->profiles);
		if (!r->v || !r->profiles)
			abort();
	}
	r->profiles[r->n] = strdup(c->profile ? c->profile : "");
	if (!r->profiles[r->n])
		abort();
	r->v[r->n] = *c;
	r->v[r->n].profile = r->profiles[r->n];
	r->n++;
}

/* A label value as the exposition format wants it: \, " and newline
 * escaped (a profile name never holds them; the broker's word is not
 * trusted to keep to that). */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f), fputc(*s, f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void series(FILE *f, const char *name, const struct egress_rows *r, size_t field)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct bh_egress_count *c = &r->v[i];
		uint64_t v = field == 0 ? c->requests : field == 1 ? c->bytes_out : c->bytes_in;
		fprintf(f, "%s{profile=\"", name);
		label(f, c->profile);
		fprintf(f, "\",status=\"%d\"} %llu\n", c->status, (unsigned long long)v);
	}
}

void metrics_render_egress(FILE *f, bh_engine *e)
{
	struct egress_rows r = {0};
	bh_engine_egress_counts(e, keep, &r);
	fprintf(f, "# HELP bulkhead_egress_requests_total Requests the egress broker carried or "
		   "refused, by profile and status.\n"
		   "# TYPE bulkhead_egress_requests_total counter\n");
	series(f, "bulkhead_egress_requests_total", &r, 0);
	fprintf(f, "# HELP bulkhead_egress_request_bytes_total Request body bytes sent upstream, by "
		   "profile and status.\n"
		   "# TYPE bulkhead_egress_request_bytes_total counter\n");
	series(f, "bulkhead_egress_request_bytes_total", &r, 1);
	fprintf(f, "# HELP bulkhead_egress_response_bytes_total Response body bytes returned to "
		   "sandboxes, by profile and status.\n"
		   "# TYPE bulkhead_egress_response_bytes_total counter\n");
	series(f, "bulkhead_egress_response_bytes_total", &r, 2);
	for (size_t i = 0; i < r.n; i++)
		free(r.profiles[i]);
	free(r.profiles);
	free(r.v);
}
