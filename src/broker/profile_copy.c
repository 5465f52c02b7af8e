/* A hold keeps its own copy of the profile: the daemon may swap its set
 * (SIGHUP) while a hold lasts, and the hold goes on under the profile it
 * started with. */
#include "broker_priv.h"

#include <string.h>

static char **strv_copy(char *const *v, size_t n)
{
	char **out = xzalloc((n + 1) * sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static void strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

struct bh_egress_profile *profile_copy(const struct bh_egress_profile *p)
{
	struct bh_egress_profile *c = xzalloc(sizeof *c);
	c->name = xstrdup(p->name);
	c->description = xstrdup(p->description);
	c->origins = strv_copy(p->origins, p->n_origins);
	c->n_origins = p->n_origins;
	c->routes = xzalloc((p->n_routes + 1) * sizeof *c->routes);
	for (size_t i = 0; i < p->n_routes; i++) {
		c->routes[i].method = xstrdup(p->routes[i].method);
		c->routes[i].pattern = xstrdup(p->routes[i].pattern);
	}
	c->n_routes = p->n_routes;
	c->credential.source = p->credential.source;
	c->credential.file = p->credential.file ? xstrdup(p->credential.file) : NULL;
	c->credential.env = p->credential.env ? xstrdup(p->credential.env) : NULL;
	if (p->credential.argv) {
		size_t n = 0;
		while (p->credential.argv[n])
			n++;
		c->credential.argv = strv_copy(p->credential.argv, n);
	}
	c->credential.lifetime_s = p->credential.lifetime_s;
	c->headers = xzalloc((p->n_headers + 1) * sizeof *c->headers);
	for (size_t i = 0; i < p->n_headers; i++) {
		c->headers[i].name = xstrdup(p->headers[i].name);
		c->headers[i].template = xstrdup(p->headers[i].template);
	}
	c->n_headers = p->n_headers;
	c->budgets = p->budgets;
	c->principals = strv_copy(p->principals, p->n_principals);
	c->n_principals = p->n_principals;
	c->allow_in_sessions = p->allow_in_sessions;
	return c;
}

void profile_free(struct bh_egress_profile *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->description);
	strv_free(p->origins, p->n_origins);
	for (size_t i = 0; i < p->n_routes; i++) {
		free(p->routes[i].method);
		free(p->routes[i].pattern);
	}
	free(p->routes);
	free(p->credential.file);
	free(p->credential.env);
	if (p->credential.argv) {
		for (size_t i = 0; p->credential.argv[i]; i++)
			free(p->credential.argv[i]);
		free(p->credential.argv);
	}
	for (size_t i = 0; i < p->n_headers; i++) {
		free(p->headers[i].name);
		free(p->headers[i].template);
	}
	free(p->headers);
	strv_free(p->principals, p->n_principals);
	free(p);
}

bool profile_has_origin(const struct bh_egress_profile *p, const char *origin)
{
	for (size_t i = 0; i < p->n_origins; i++)
		if (!strcmp(p->origins[i], origin))
			return true;
	return false;
}
