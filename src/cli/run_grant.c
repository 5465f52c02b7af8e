/* ---- egress: `bulkhead run --grant PROFILE` (run_grant.h). The broker is
 * the daemon's (include/bulkhead/broker.h), started here with a set read
 * once: a one-shot run has nothing to reload. ---- */
#include "run_grant.h"

#ifdef BH_CLI_BROKER
#include "broker.h"
#endif
#include "egress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct cli_grant {
	bh_egress_profiles *set;
	bh_broker *broker;
	pthread_mutex_t mu; /* notes come on the broker's threads */
	bh_engine *engine;
};

int cli_grant_opt(struct cli_grant_opts *g, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char **slot = !strcmp(a, "--grant")         ? &g->profile
			    : !strcmp(a, "--profiles")    ? &g->profiles
			    : !strcmp(a, "--upstream-ca") ? &g->upstream_ca
							  : NULL;
	if (!slot)
		return 0;
	if (*i + 1 >= argc || !*argv[*i + 1]) {
		cli_error("%s needs a value", a);
		return -1;
	}
	*slot = argv[++*i];
	return 1;
}

#ifdef BH_CLI_BROKER
static const struct bh_egress_profile *lookup(void *arg, const char *name, void **keep)
{
	struct cli_grant *g = arg;
	*keep = NULL;
	return bh_egress_profiles_find(g->set, name);
}

static void note(void *arg, const struct bh_egress_note *n)
{
	struct cli_grant *g = arg;
	pthread_mutex_lock(&g->mu);
	if (g->engine)
		bh_engine_note_egress(g->engine, n, NULL);
	pthread_mutex_unlock(&g->mu);
}

static void broker_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_WARN)
		fprintf(stderr, "bulkhead: broker: %s\n", msg);
}

int cli_grant_start(const struct cli_grant_opts *o, struct cli_common *c, struct cli_grant **out)
{
	*out = NULL;
	if (!o->profile) {
		if (o->profiles || o->upstream_ca) {
			cli_error("--profiles and --upstream-ca go with --grant PROFILE");
			return -1;
		}
		return 0;
	}
	if (!o->profiles) {
		cli_error("--grant %s needs --profiles FILE, the egress profiles file naming it",
			  o->profile);
		return -1;
	}
	struct cli_grant *g = xzalloc(sizeof *g);
	pthread_mutex_init(&g->mu, NULL);
	bh_error *err = NULL;
	if (bh_egress_profiles_load(o->profiles, &g->set, &err) < 0) {
		cli_error("--profiles %s: %s", o->profiles, err->msg);
		bh_error_free(err);
		cli_grant_stop(g);
		return -1;
	}
	if (!bh_egress_profiles_find(g->set, o->profile)) {
		cli_error("--grant %s: %s names no such profile", o->profile, o->profiles);
		cli_grant_stop(g);
		return -1;
	}
	/* The broker's CA is the state directory's, as serve's is. */
	const char *state = bh_state_dir_name(c->state_dir);
	if (mkdir(state, 0711) < 0 && errno != EEXIST) {
		cli_error("make the state directory %s for the broker's CA: %s", state,
			  strerror(errno));
		cli_grant_stop(g);
		return -1;
	}
	char ca_dir[4096];
	snprintf(ca_dir, sizeof ca_dir, "%s/broker-ca", state);
	struct bh_broker_config bc = {
		.ca_dir = ca_dir,
		.upstream_ca_file = o->upstream_ca,
		.lookup = lookup,
		.lookup_arg = g,
		.note = note,
		.note_arg = g,
		.log = broker_log,
	};
	if (bh_broker_start(&bc, &g->broker, &err) < 0) {
		cli_error("the egress broker: %s", err->msg);
		bh_error_free(err);
		cli_grant_stop(g);
		return -1;
	}
	c->egress = bh_broker_ops();
	c->egress_arg = g->broker;
	*out = g;
	return 0;
}

void cli_grant_engine(struct cli_grant *g, bh_engine *e)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->engine = e;
	pthread_mutex_unlock(&g->mu);
}

void cli_grant_stop(struct cli_grant *g)
{
	if (!g)
		return;
	cli_grant_engine(g, NULL);
	bh_broker_stop(g->broker);
	bh_egress_profiles_unref(g->set);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
#else
/* A build without the broker's library (CMakeLists.txt): nothing could
 * serve a grant. */
int cli_grant_start(const struct cli_grant_opts *o, struct cli_common *c, struct cli_grant **out)
{
	(void)c;
	*out = NULL;
	if (!o->profile && !o->profiles && !o->upstream_ca)
		return 0;
	cli_error("--grant: this bulkhead was built without the egress broker");
	return -1;
}

void cli_grant_engine(struct cli_grant *g, bh_engine *e)
{
	(void)g, (void)e;
}

void cli_grant_stop(struct cli_grant *g)
{
	(void)g;
}
#endif
