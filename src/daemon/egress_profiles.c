/* The daemon's side of the operator's egress profiles (serve --profiles):
 * the set it loaded, swapped whole on SIGHUP (a bad file keeps the old set,
 * loudly, as the clients file does); the check every grant passes before
 * anything is dispatched; and what Describe tells a caller about them.
 *
 * The check is plimsoll's (internal/rpc/sandbox_service.go grantFor, §4.7):
 * a profile that does not exist and one this caller may not use get one
 * answer, PermissionDenied marked permission, word for word the same, so a
 * caller cannot probe the operator's names; a session call, or a session,
 * naming a profile that does not allow sessions is refused the same way with
 * its own text. An unauthenticated caller (--open) is no principal, so no
 * profile is ever its. */
#include "daemon_priv.h"
#include "egress.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;

/* The daemon's thread reads s->profiles directly (it is the only writer);
 * the broker's thread asks through here. */
bh_egress_profiles *daemon_egress_current(void *arg)
{
	struct server *s = arg;
	pthread_mutex_lock(&current_lock);
	bh_egress_profiles *set = bh_egress_profiles_ref(s->profiles);
	pthread_mutex_unlock(&current_lock);
	return set;
}

static void swap_in(struct server *s, bh_egress_profiles *set)
{
	pthread_mutex_lock(&current_lock);
	bh_egress_profiles *old = s->profiles;
	s->profiles = set;
	pthread_mutex_unlock(&current_lock);
	bh_egress_profiles_unref(old);
}

int daemon_egress_load(struct server *s, char **why)
{
	if (!s->cfg->profiles_path)
		return 0;
	bh_egress_profiles *set = NULL;
	bh_error *err = NULL;
	if (bh_egress_profiles_load(s->cfg->profiles_path, &set, &err) < 0) {
		*why = xasprintf("profiles file: %s", err->msg);
		bh_error_free(err);
		return -1;
	}
	swap_in(s, set);
	daemon_log(BH_LOG_INFO, "profiles", "%zu egress profiles loaded from %s",
		bh_egress_profiles_count(set), s->cfg->profiles_path);
	return 0;
}

void daemon_egress_started(struct server *s, bool broker)
{
	s->egress_broker = broker;
	if (s->profiles && !broker)
		daemon_log(BH_LOG_WARN, "profiles", "profiles are loaded but no broker runs: "
						     "every grant is refused until one does");
}

void daemon_egress_reload(struct server *s)
{
	if (!s->cfg->profiles_path)
		return;
	bh_egress_profiles *set = NULL;
	bh_error *err = NULL;
	/* The audit trail says which set served from when, and every file that
	 * was refused. */
	if (bh_egress_profiles_load(s->cfg->profiles_path, &set, &err) < 0) {
		daemon_log(BH_LOG_ERROR, "profiles", "SIGHUP: KEPT THE OLD PROFILES (%zu): the new file is "
						      "refused: %s",
			bh_egress_profiles_count(s->profiles), err->msg);
		audit_event(s, "profiles_kept", NULL, err->msg);
		bh_error_free(err);
		return;
	}
	swap_in(s, set);
	char detail[64];
	snprintf(detail, sizeof detail, "%zu profiles", bh_egress_profiles_count(set));
	audit_event(s, "profiles_loaded", NULL, detail);
	daemon_log(BH_LOG_INFO, "profiles", "SIGHUP: %zu egress profiles loaded from %s",
		bh_egress_profiles_count(set), s->cfg->profiles_path);
}

void daemon_egress_free(struct server *s)
{
	swap_in(s, NULL);
}

#ifndef BH_DAEMON_BROKER
/* A build without the broker's library (src/daemon/sources.cmake): no
 * broker runs, Describe says so, and every grant is refused. */
int daemon_broker_start(struct server *s, struct bh_config *ec, char **why)
{
	(void)s, (void)ec, (void)why;
	return 0;
}

void daemon_broker_engine(struct server *s, bh_engine *e)
{
	(void)s, (void)e;
}

void daemon_broker_stop(struct server *s)
{
	(void)s;
}
#endif

/* The caller as a profile's principals name it; NULL when nobody is
 * authenticated. */
static const char *principal_of(const struct call *c)
{
	return c->srv->clients && c->who.name[0] ? c->who.name : NULL;
}

/* The name as the refusal repeats it: the caller's own bytes, printable
 * ASCII only (the decoder measured it). */
static void shown(const char *name, char out[WIRE_MAX_NAME_BYTES + 1])
{
	size_t i = 0;
	for (; name[i] && i < WIRE_MAX_NAME_BYTES; i++)
		out[i] = name[i] > 0x20 && name[i] < 0x7f ? name[i] : '?';
	out[i] = '\0';
}

bool daemon_egress_refuse(struct call *c, const char *profile, bool in_session)
{
	if (!profile || !*profile)
		return false;
	struct server *s = c->srv;
	char name[WIRE_MAX_NAME_BYTES + 1];
	shown(profile, name);
	snprintf(c->grant_profile, sizeof c->grant_profile, "%s", name); /* the audit line's */
	const struct bh_egress_profile *p = bh_egress_profiles_find(s->profiles, profile);
	if (!p || !bh_egress_profile_allows(p, principal_of(c))) {
		call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION, BH_EGRESS_REFUSED_FMT,
			    name);
		return true;
	}
	if (in_session && !p->allow_in_sessions) {
		call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION,
			    BH_EGRESS_NOT_FOR_SESSIONS_FMT, name);
		return true;
	}
	/* Only a caller who may use the profile learns this. */
	if (!s->egress_broker) {
		call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION,
			    "grant profile %s cannot be held: this daemon runs no broker "
			    "(Describe says supportsJavascriptGrants false)",
			    name);
		return true;
	}
	return false;
}

/* ---- egress: a session's own profile, checked again at each of its calls:
 * a profiles reload may have removed it or taken it from this caller, and a
 * hibernated session re-adopted by a new daemon holds it again at wake. The
 * call is refused before it reaches the engine, so the session is not woken
 * and its profile not held. ---- */
bool daemon_egress_session_refuse(struct call *c, bh_session *session)
{
	struct bh_session_info info;
	bh_session_get_info(session, &info);
	const char *profile = info.egress_profile;
	if (!profile || !*profile)
		return false;
	const struct bh_egress_profile *p = bh_egress_profiles_find(c->srv->profiles, profile);
	if (p && bh_egress_profile_allows(p, principal_of(c)) && p->allow_in_sessions &&
	    c->srv->egress_broker)
		return false;
	char name[WIRE_MAX_NAME_BYTES + 1];
	shown(profile, name);
	call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION,
		    "this session holds egress profile %s, which is no longer yours to hold in a "
		    "session (the profiles were reloaded without it, or without you in its "
		    "principals); nothing ran: close the session and open another",
		    name);
	return true;
}

struct wire_grant_profile *daemon_egress_describe(const struct call *c,
						  struct wire_describe_response *d)
{
	const struct server *s = c->srv;
	d->supports_javascript_grants = s->egress_broker;
	d->supports_project_grants = s->egress_broker; /* ---- pgrant: held as a snippet's ---- */
	size_t n = bh_egress_profiles_count(s->profiles);
	if (!n)
		return NULL;
	struct wire_grant_profile *v = xzalloc(n * sizeof *v);
	const char *who = principal_of(c);
	for (size_t i = 0; i < n; i++) {
		const struct bh_egress_profile *p = bh_egress_profiles_at(s->profiles, i);
		if (!bh_egress_profile_allows(p, who))
			continue;
		v[d->n_grant_profiles++] = (struct wire_grant_profile){
			.name = p->name,
			.description = p->description,
			.allow_in_sessions = p->allow_in_sessions,
			.origins = (const char *const *)p->origins,
			.n_origins = p->n_origins,
		};
	}
	d->grant_profiles = v;
	return v;
}
