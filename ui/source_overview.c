/* The attached console's one light request (source_overview.h): the kept
 * Overview, the long poll that keeps it true, and the asks it answers. */
#include "source_overview.h"

#include "base.h"

#include <stdlib.h>
#include <string.h>

enum ask_kind { ASK_SESSIONS, ASK_USAGE, ASK_WAITING };

struct overview_waiter {
	enum ask_kind kind;
	union {
		ui_sessions_fn sessions;
		ui_usage_fn usage;
		ui_count_fn waiting;
	} cb;
	void *arg;
};

/* One ask answered from the kept answer, or with the error. */
static void answer(struct overview *o, const struct overview_waiter *w, const char *err)
{
	switch (w->kind) {
	case ASK_SESSIONS:
		if (err) {
			w->cb.sessions(w->arg, NULL, 0, err);
			return;
		}
		for (size_t i = 0; i < o->n_rows; i++)
			o->rows[i].mine = o->mine(o->owner, o->rows[i].fp);
		w->cb.sessions(w->arg, o->rows, o->n_rows, NULL);
		return;
	case ASK_USAGE:
		if (err) {
			w->cb.usage(w->arg, NULL, err);
			return;
		}
		struct ui_usage u = {.host = o->host, .sessions = o->usage, .n = o->n_usage};
		/* The daemon's clock now: what it said when it last answered
		 * whole, plus the time this console has counted since. An
		 * unchanged answer sends no clock, and this console's own wall
		 * clock is not the daemon's: the header's uptime keeps counting
		 * from the daemon's start without mixing the two. */
		u.host.now_unix_ms += (int64_t)(now_mono_ms() - o->kept_mono_ms);
		memcpy(u.version, o->version, sizeof u.version);
		w->cb.usage(w->arg, &u, NULL);
		return;
	case ASK_WAITING:
		w->cb.waiting(w->arg, err ? 0 : o->waiting, err);
		return;
	}
}

/* Everyone who waited, answered; an answer may ask again (it then waits
 * for the next request). */
static void answer_all(struct overview *o, const char *err)
{
	struct overview_waiter *w = o->waiters;
	size_t n = o->n_waiters;
	o->waiters = NULL;
	o->n_waiters = o->cap_waiters = 0;
	*o->pending -= (int)n;
	for (size_t i = 0; i < n; i++)
		answer(o, &w[i], err);
	free(w);
}

static void keep(struct overview *o, const struct wire_operator_overview *ov)
{
	snprintf(o->token, sizeof o->token, "%s", ov->token);
	if (!ov->changed)
		return;
	free(o->rows);
	o->n_rows = ov->sessions.n;
	o->rows = xzalloc((o->n_rows ? o->n_rows : 1) * sizeof *o->rows);
	for (size_t i = 0; i < o->n_rows; i++)
		ui_session_from(&o->rows[i], &ov->sessions.sessions[i]);
	free(o->usage);
	o->n_usage = ov->usage.n;
	o->usage = xzalloc((o->n_usage ? o->n_usage : 1) * sizeof *o->usage);
	memcpy(o->usage, ov->usage.sessions, o->n_usage * sizeof *o->usage);
	o->host = ov->usage.host;
	o->kept_mono_ms = now_mono_ms();
	snprintf(o->version, sizeof o->version, "%s", ov->usage.version ? ov->usage.version : "");
	o->waiting = ov->approvals_waiting;
}

static void send_overview(struct overview *o, bool poll);

struct overview_sent {
	struct overview *o;
	bool poll;
	unsigned stale_count; /* the overview's when this was sent */
	void *call; /* the client's, for bh_client_overview_abandon */
};

static void on_answer(void *arg, const struct wire_operator_overview *ov,
		      const struct bh_client_error *err)
{
	struct overview_sent s = *(struct overview_sent *)arg;
	free(arg);
	struct overview *o = s.o;
	if (s.poll) {
		o->polling = false;
		o->poll_call = NULL;
	} else {
		o->asking = false;
		o->ask_call = NULL;
	}
	if (o->closing)
		return;
	o->note(o->owner, err);
	if (err) {
		/* Not sent again from here: the console's refresh asks again,
		 * with its backoff while the daemon does not answer. */
		o->have = false;
		answer_all(o, err->message);
		return;
	}
	/* An immediate answer with a poll still out (begun with an older
	 * token) is as new as any: the poll answers soon after it. */
	keep(o, ov);
	if (s.stale_count != o->stale_count) {
		/* Sent before the operator's action or ctrl-r: those waiting
		 * now are asked afresh, not told the older state. */
		o->have = false;
		if (o->n_waiters && !o->asking)
			send_overview(o, false);
		if (!o->polling)
			send_overview(o, true);
		return;
	}
	o->have = true;
	answer_all(o, NULL);
	if (!o->polling)
		send_overview(o, true);
}

/* poll: the long poll with the kept token; else an Overview answered now. */
static void send_overview(struct overview *o, bool poll)
{
	struct overview_sent *s = xzalloc(sizeof *s);
	*s = (struct overview_sent){.o = o, .poll = poll, .stale_count = o->stale_count};
	struct bh_client_error *err = NULL;
	void *call = NULL;
	int rc = bh_client_overview_async(o->c, poll ? o->token : "", poll ? OVERVIEW_WAIT_MS : 0,
					  on_answer, s, &call, &err);
	if (rc < 0) {
		free(s);
		o->have = false;
		answer_all(o, err ? err->message : "the call could not be made");
		bh_client_error_free(err);
		return;
	}
	s->call = call;
	if (poll) {
		o->polling = true;
		o->poll_sent_ms = now_mono_ms();
		o->poll_call = s;
	} else {
		o->asking = true;
		o->ask_call = s;
	}
}

/* The kept answer is the daemon's state while the poll on it is out, has
 * been out long enough for the daemon to have refused its token, and is not
 * late. */
static bool fresh(const struct overview *o)
{
	uint64_t now = now_mono_ms(), out = now - o->poll_sent_ms;
	return o->have && o->polling && out >= OVERVIEW_CONFIRM_MS &&
	       out < OVERVIEW_WAIT_MS + OVERVIEW_LATE_MS && now - o->read_ms < OVERVIEW_UNREAD_MS;
}

static void ask(struct overview *o, const struct overview_waiter *w)
{
	if (fresh(o)) {
		answer(o, w, NULL);
		return;
	}
	if (o->n_waiters == o->cap_waiters) {
		o->cap_waiters = o->cap_waiters ? 2 * o->cap_waiters : 4;
		o->waiters = realloc(o->waiters, o->cap_waiters * sizeof *o->waiters);
		if (!o->waiters)
			abort();
	}
	o->waiters[o->n_waiters++] = *w;
	(*o->pending)++;
}

/* Sent from the loop, after whatever else this turn asked (a view's own
 * load): the header and the view share one, and it sees what they did. */
void overview_flush(struct overview *o)
{
	if (o->n_waiters && !o->asking && !o->closing)
		send_overview(o, false);
}

bool overview_due(const struct overview *o)
{
	return o->n_waiters && !o->asking;
}

void overview_sessions(struct overview *o, ui_sessions_fn cb, void *arg)
{
	ask(o, &(struct overview_waiter){.kind = ASK_SESSIONS, .cb.sessions = cb, .arg = arg});
}

void overview_usage(struct overview *o, ui_usage_fn cb, void *arg)
{
	ask(o, &(struct overview_waiter){.kind = ASK_USAGE, .cb.usage = cb, .arg = arg});
}

void overview_waiting(struct overview *o, ui_count_fn cb, void *arg)
{
	ask(o, &(struct overview_waiter){.kind = ASK_WAITING, .cb.waiting = cb, .arg = arg});
}

void overview_stale(struct overview *o)
{
	o->have = false;
	o->stale_count++;
}

void overview_read(struct overview *o)
{
	o->read_ms = now_mono_ms();
}

void overview_close(struct overview *o)
{
	o->closing = true;
	struct overview_sent *out[2] = {o->poll_call, o->ask_call};
	for (size_t i = 0; i < 2; i++)
		if (out[i]) {
			bh_client_overview_abandon(o->c, out[i]->call);
			free(out[i]);
		}
	o->poll_call = o->ask_call = NULL;
	o->polling = o->asking = false;
}

void overview_free(struct overview *o)
{
	free(o->waiters);
	free(o->rows);
	free(o->usage);
	memset(o, 0, sizeof *o);
}
