/* The daemon's broker (src/broker, include/bulkhead/broker.h): started with
 * the profiles (serve --profiles), before the engine opens, so the engine
 * gets its ops; stopped after the engine closed. It finds a profile by name
 * in the set current at hold time (a reload swaps the set; a hold goes on
 * under the broker's own copy), and what it carried becomes the engine's
 * events (bh_engine_note_egress).
 *
 * Built where the broker's library is (src/daemon/sources.cmake); a build
 * without it runs no broker, and every grant is refused. */
#include "daemon_priv.h"
#include "broker.h"
#include "why.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Notes arrive on the broker's threads, up to its stop; the engine they go
 * to is set once it is open and cleared (under the lock) before it closes,
 * so no note reaches an engine being freed. */
static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
static bh_engine *note_engine;

static const struct bh_egress_profile *lookup(void *arg, const char *name, void **keep)
{
	bh_egress_profiles *set = daemon_egress_current(arg);
	*keep = set;
	return bh_egress_profiles_find(set, name);
}

static void unkeep(void *arg, void *keep)
{
	(void)arg;
	bh_egress_profiles_unref(keep);
}

static void note(void *arg, const struct bh_egress_note *n)
{
	(void)arg;
	pthread_mutex_lock(&note_lock);
	if (note_engine)
		bh_engine_note_egress(note_engine, n, NULL);
	pthread_mutex_unlock(&note_lock);
}

static void broker_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_INFO)
		daemon_log(level, "broker", "%s", msg);
}

int daemon_broker_start(struct server *s, struct bh_config *ec, char **why)
{
	if (!s->profiles)
		return 0; /* nothing could be held: no broker */
	/* Its CA lives in the state directory, which the engine makes (0711)
	 * and checks when it opens; the broker starts first. */
	const char *state = bh_state_dir_name(ec->state_dir);
	if (mkdir(state, 0711) < 0 && errno != EEXIST)
		return why_errno(why, errno, "make the state directory %s for the broker's CA", state);
	char ca_dir[4096];
	snprintf(ca_dir, sizeof ca_dir, "%s/broker-ca", state);
	struct bh_broker_config bc = {
		.ca_dir = ca_dir,
		.upstream_ca_file = s->cfg->broker_upstream_ca,
		.lookup = lookup,
		.unkeep = unkeep,
		.lookup_arg = s,
		.note = note,
		.log = broker_log,
	};
	bh_broker *b = NULL;
	bh_error *err = NULL;
	if (bh_broker_start(&bc, &b, &err) < 0) {
		why_set(why, "the egress broker: %s", err->msg);
		bh_error_free(err);
		return -1;
	}
	s->broker = b;
	ec->egress = bh_broker_ops();
	ec->egress_arg = b;
	return 0;
}

void daemon_broker_engine(struct server *s, bh_engine *e)
{
	(void)s;
	pthread_mutex_lock(&note_lock);
	note_engine = e;
	pthread_mutex_unlock(&note_lock);
}

void daemon_broker_stop(struct server *s)
{
	daemon_broker_engine(s, NULL);
	bh_broker_stop(s->broker);
	s->broker = NULL;
}
