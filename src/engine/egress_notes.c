/* The egress broker's notes (issue 18): each request it carried or
 * refused, reported from its own thread, becomes an event of the session
 * (kind "egress") on the engine's, and is counted for /metrics. The
 * broker's thread only queues under a mutex and wakes the engine's loop
 * through an eventfd; everything else happens on the loop. */
#include "engine_priv.h"
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>

#include "egress.h"

/* Notes waiting for the loop; past this the broker's newest are counted
 * but not stored as events (the loop is stuck; the broker must not be). */
#define MAX_QUEUED_NOTES 4096u

struct queued_note {
	char fp[65];
	char profile[72], method[16], origin[300], route[300], refusal[160];
	int status;
	uint64_t bytes_out, bytes_in;
	uint32_t ms;
	struct queued_note *next;
};

struct egress_count {
	char profile[72];
	int status;
	uint64_t requests, bytes_out, bytes_in;
};

struct egress_state {
	pthread_mutex_t mu;
	int wake_fd; /* an eventfd the broker's thread writes */
	struct bh_watch *w;
	struct queued_note *head, **tail;
	size_t queued;
	struct egress_count *counts;
	size_t n_counts, cap_counts;
};

/* ---- the broker's notes ---- */

static void count_note(struct egress_state *q, const struct queued_note *n)
{
	struct egress_count *c = NULL;
	for (size_t i = 0; i < q->n_counts && !c; i++)
		if (q->counts[i].status == n->status && !strcmp(q->counts[i].profile, n->profile))
			c = &q->counts[i];
	if (!c) {
		if (q->n_counts == q->cap_counts) {
			q->cap_counts = q->cap_counts ? q->cap_counts * 2 : 16;
			q->counts = realloc(q->counts, q->cap_counts * sizeof *q->counts);
			if (!q->counts)
				abort();
		}
		c = &q->counts[q->n_counts++];
		*c = (struct egress_count){.status = n->status};
		snprintf(c->profile, sizeof c->profile, "%s", n->profile);
	}
	c->requests++;
	c->bytes_out += n->bytes_out;
	c->bytes_in += n->bytes_in;
}

/* What the event says: metadata only, never a body, query or secret (the
 * broker reports no more; the origin and route are cut at their limits
 * and stripped of control bytes all the same). */
static void note_detail(const struct queued_note *n, char *out, size_t len)
{
	snprintf(out, len, "%s %s%s%s -> %d%s%s; out %llu B, in %llu B, %u ms; profile %s",
		 n->method, n->origin, *n->route ? " route " : "", n->route, n->status,
		 *n->refusal ? ", refused: " : "", n->refusal, (unsigned long long)n->bytes_out,
		 (unsigned long long)n->bytes_in, n->ms, *n->profile ? n->profile : "(none held)");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static const char *sandbox_of(bh_engine *e, const char *fp);

static void on_notes(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	struct egress_state *q = arg;
	uint64_t v;
	if (read(q->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
		bh_log(e, BH_LOG_WARN, "egress: reading the notes' wake-up: %s", strerror(errno));
	pthread_mutex_lock(&q->mu);
	struct queued_note *list = q->head;
	q->head = NULL;
	q->tail = &q->head;
	q->queued = 0;
	pthread_mutex_unlock(&q->mu);
	while (list) {
		struct queued_note *n = list;
		list = n->next;
		char detail[1024];
		note_detail(n, detail, sizeof detail);
		if (e->store)
			store_event(e->store, "egress", n->fp, sandbox_of(e, n->fp), detail);
		sessions_note_egress(e, n->fp, detail);
		free(n);
	}
	engine_changed(e);
}

static void copy_field(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int bh_engine_note_egress(bh_engine *e, const struct bh_egress_note *note, bh_error **err)
{
	struct egress_state *q = e ? e->egress_q : NULL;
	if (!q || !note || !note->session_fp)
		return bh_fail(err, BH_E_INVALID, 0, "egress: a note needs an engine with a broker and a session");
	struct queued_note *n = xzalloc(sizeof *n);
	copy_field(n->fp, sizeof n->fp, note->session_fp);
	copy_field(n->profile, sizeof n->profile, note->profile);
	copy_field(n->method, sizeof n->method, note->method);
	copy_field(n->origin, sizeof n->origin, note->origin);
	copy_field(n->route, sizeof n->route, note->route);
	copy_field(n->refusal, sizeof n->refusal, note->refusal);
	n->status = note->status;
	n->bytes_out = note->bytes_out;
	n->bytes_in = note->bytes_in;
	n->ms = note->ms;
	pthread_mutex_lock(&q->mu);
	count_note(q, n);
	bool kept = q->queued < MAX_QUEUED_NOTES;
	if (kept) {
		*q->tail = n;
		q->tail = &n->next;
		q->queued++;
	}
	pthread_mutex_unlock(&q->mu);
	if (!kept) {
		free(n);
		return 0;
	}
	uint64_t one = 1;
	if (write(q->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		return bh_fail(err, BH_E_SYSTEM, errno, "egress: wake the engine");
	return 0;
}

void bh_engine_egress_counts(bh_engine *e, bh_egress_count_fn fn, void *arg)
{
	struct egress_state *q = e ? e->egress_q : NULL;
	if (!q || !fn)
		return;
	pthread_mutex_lock(&q->mu);
	size_t n = q->n_counts;
	struct egress_count *copy = n ? xzalloc(n * sizeof *copy) : NULL;
	if (n)
		memcpy(copy, q->counts, n * sizeof *copy);
	pthread_mutex_unlock(&q->mu);
	for (size_t i = 0; i < n; i++) {
		struct bh_egress_count c = {.profile = copy[i].profile,
					    .status = copy[i].status,
					    .requests = copy[i].requests,
					    .bytes_out = copy[i].bytes_out,
					    .bytes_in = copy[i].bytes_in};
		fn(arg, &c);
	}
	free(copy);
}

/* The sandbox a session's (or a run's) fingerprint names, for its event. */
static const char *sandbox_of(bh_engine *e, const char *fp)
{
	const char *s = sessions_sandbox_of(e, fp);
	if (s)
		return s;
	return execs_sandbox_of(e, fp);
}

int egress_notes_start(bh_engine *e, bh_error **err)
{
	struct egress_state *q = xzalloc(sizeof *q);
	pthread_mutex_init(&q->mu, NULL);
	q->tail = &q->head;
	q->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->wake_fd < 0) {
		pthread_mutex_destroy(&q->mu);
		free(q);
		return bh_fail(err, BH_E_SYSTEM, errno, "egress: eventfd");
	}
	q->w = loop_watch(e->loop, q->wake_fd, EPOLLIN, on_notes, q);
	e->egress_q = q;
	return 0;
}

void egress_notes_stop(bh_engine *e)
{
	struct egress_state *q = e->egress_q;
	if (!q)
		return;
	if (e->loop && q->w)
		on_notes(e, q, 0); /* what the broker said last is kept */
	if (e->loop)
		loop_unwatch(e->loop, q->w);
	close(q->wake_fd);
	pthread_mutex_destroy(&q->mu);
	free(q->counts);
	free(q);
	e->egress_q = NULL;
}
