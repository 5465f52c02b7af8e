/* A session's side of egress (issue 18): the broker's socket from the
 * moment the session has its sandbox until it goes, the hold of the
 * session's profile for that whole time, and a granted call's hold for
 * that call only (released before the call is answered, so whatever the
 * call left running finds the broker answering 503). */
#include "session_priv.h"

#include <stdio.h>
#include <string.h>

#define PROFILE_HOLD 1u

int session_egress_attach(bh_session *s, bh_error **err)
{
	assert(err);
	bh_engine *e = s->e;
	if (!e->egress || !s->sb || !s->sb->egress_dir || s->egress_open)
		return 0;
	if (egress_open_session(e, s->fp, s->sb, err) < 0)
		return -1;
	s->egress_open = true;
	if (s->egress_profile) {
		if (egress_hold(e, s->fp, PROFILE_HOLD, s->egress_profile, err) < 0) {
			egress_close_session(e, s->fp);
			s->egress_open = false;
			return -1;
		}
		s->egress_held = true;
		if (s->egress_holds < PROFILE_HOLD)
			s->egress_holds = PROFILE_HOLD;
	}
	if (s->egress_profile) {
		char detail[128];
		snprintf(detail, sizeof detail, "holds profile %s: the broker serves it", s->egress_profile);
		session_event(s, "egress", detail);
	}
	return 0;
}

void session_egress_detach(bh_session *s)
{
	bh_engine *e = s->e;
	if (s->egress_held)
		egress_release(e, s->fp, PROFILE_HOLD);
	s->egress_held = false;
	if (s->egress_open)
		egress_close_session(e, s->fp);
	s->egress_open = false;
}

int session_egress_grant(bh_session *s, const char *profile, uint64_t *hold, bh_error **err)
{
	assert(err);
	*hold = 0;
	if (!profile || !*profile)
		return 0;
	if (egress_check_profile(s->e, profile, err) < 0)
		return -1;
	if (!s->egress_open)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				 "the session's sandbox has no socket to the egress broker");
	uint64_t id = ++s->egress_holds;
	if (id <= PROFILE_HOLD)
		id = s->egress_holds = PROFILE_HOLD + 1;
	if (egress_hold(s->e, s->fp, id, profile, err) < 0)
		return -1;
	*hold = id;
	return 0;
}

void session_egress_ungrant(bh_session *s, uint64_t hold)
{
	if (hold)
		egress_release(s->e, s->fp, hold);
}

const char *const *session_egress_argv(const char *const *argv, const char **out, size_t cap)
{
	size_t i = 0;
	out[i++] = "/usr/bin/env";
	for (const char *const *v = bh_egress_env; *v && i + 1 < cap; v++)
		out[i++] = *v;
	for (const char *const *a = argv; *a && i + 1 < cap; a++)
		out[i++] = *a;
	out[i] = NULL;
	return out;
}

const char *sessions_sandbox_of(bh_engine *e, const char *fp)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (!strcmp(s->fp, fp))
			return s->sandbox_name;
	return NULL;
}

void sessions_note_egress(bh_engine *e, const char *fp, const char *detail)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (!strcmp(s->fp, fp)) {
			s->egress_requests++;
			snprintf(s->egress_last, sizeof s->egress_last, "%s", detail);
			return;
		}
}
