/* Attribution: a session's events name who acted — the principal that
 * opened or called it, the operator that paused it, the console, one of the
 * engine's clocks — and the request that asked (the daemon's audit request
 * id), so an event ties to its audit line. The caller passes who it is with
 * each action; the engine keeps it for the action's steps only (a pause is
 * two events, "ready -> pausing" and "pausing -> paused"), then what follows
 * is its own until someone acts again. */
#include "session_priv.h"

#include <string.h>

/* A name is shown on the console and written to the audit trail: kept to
 * the bytes a principal's name may hold; any other byte is kept as '?'
 * (visibly not the name it claims to be), and it is cut at BH_ACTOR_MAX. */
static void copy_name(char *dst, size_t n, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < n; i++) {
		char c = src[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  strchr("._:@-", c);
		dst[i] = ok ? c : '?';
	}
	dst[i] = '\0';
}

void session_acting(bh_session *s, const struct bh_actor *who)
{
	copy_name(s->acting, sizeof s->acting,
		  who && who->name && *who->name ? who->name : BH_ACTOR_ENGINE);
	copy_name(s->acting_rid, sizeof s->acting_rid, who ? who->request_id : NULL);
}

void session_acting_policy(bh_session *s, const char *clock)
{
	struct bh_actor who = {.name = clock};
	session_acting(s, &who);
}

void session_acting_done(bh_session *s)
{
	session_acting(s, NULL);
}

void session_event(bh_session *s, const char *kind, const char *detail)
{
	struct bh_actor who = {.name = s->acting[0] ? s->acting : NULL, .request_id = s->acting_rid};
	store_event_by(s->e->store, kind, s->fp, s->sandbox_name, detail, &who);
}

/* The action under who's name; a refused one leaves the session's actor as
 * it was (whatever step is in progress is still the previous actor's). */
struct saved_actor {
	char name[BH_ACTOR_MAX + 1], rid[BH_ACTOR_MAX + 1];
};

static void save(const bh_session *s, struct saved_actor *k)
{
	memcpy(k->name, s->acting, sizeof k->name);
	memcpy(k->rid, s->acting_rid, sizeof k->rid);
}

static int restore_if_refused(bh_session *s, const struct saved_actor *k, int r)
{
	if (r < 0) {
		memcpy(s->acting, k->name, sizeof k->name);
		memcpy(s->acting_rid, k->rid, sizeof k->rid);
	}
	return r;
}

int bh_session_pause_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			bh_error **err)
{
	struct saved_actor k;
	save(s, &k);
	session_acting(s, who);
	return restore_if_refused(s, &k, bh_session_pause(s, cb, arg, err));
}

int bh_session_resume_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			 bh_error **err)
{
	struct saved_actor k;
	save(s, &k);
	session_acting(s, who);
	return restore_if_refused(s, &k, bh_session_resume(s, cb, arg, err));
}

int bh_session_hibernate_as(bh_session *s, const struct bh_actor *who, bh_action_cb cb, void *arg,
			    bh_error **err)
{
	struct saved_actor k;
	save(s, &k);
	session_acting(s, who);
	return restore_if_refused(s, &k, bh_session_hibernate(s, cb, arg, err));
}

/* ---- density ---- */
int bh_session_branch_as(bh_session *s, const struct bh_actor *who, unsigned n, bh_branch_cb cb,
			 void *arg, bh_error **err)
{
	struct saved_actor k;
	save(s, &k);
	session_acting(s, who);
	return restore_if_refused(s, &k, bh_session_branch(s, n, cb, arg, err));
}

int bh_session_close_as(bh_session *s, const struct bh_actor *who, bh_close_cb cb, void *arg,
			bh_error **err)
{
	struct saved_actor k;
	save(s, &k);
	if (s->state != BH_SESSION_ENDED) /* a late close of an ended one changes nothing */
		session_acting(s, who);
	return restore_if_refused(s, &k, bh_session_close(s, cb, arg, err));
}

void bh_session_kill_as(bh_session *s, const struct bh_actor *who)
{
	if (s->state != BH_SESSION_ENDED)
		session_acting(s, who);
	bh_session_kill(s);
}
