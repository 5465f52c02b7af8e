/* The engine's loop: one epoll descriptor the host polls, plus timers.
 *
 * Watches and timers may be removed from inside any callback; they are only
 * marked dead and freed after the round (redis's deferred timer deletion),
 * so a batch of epoll events never points at freed memory. */
#include "internal.h"

#include <errno.h>
#include <sys/epoll.h>

struct bh_watch {
	int fd;
	bh_io_fn fn;
	void *arg;
	bool dead;
	struct bh_watch *next_dead;
};

struct bh_timer {
	uint64_t due_us;
	bh_timer_fn fn;
	void *arg;
	bool dead;
	struct bh_timer *next;
};

struct bh_loop {
	int epfd;
	struct bh_timer *timers; /* sorted by due time */
	struct bh_watch *dead_watches;
};

struct bh_loop *loop_new(void)
{
	struct bh_loop *l = xzalloc(sizeof *l);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	return l;
}

static void reap_dead(struct bh_loop *l)
{
	while (l->dead_watches) {
		struct bh_watch *w = l->dead_watches;
		l->dead_watches = w->next_dead;
		free(w);
	}
	struct bh_timer **pp = &l->timers;
	while (*pp) {
		struct bh_timer *t = *pp;
		if (t->dead) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

void loop_free(struct bh_loop *l)
{
	if (!l)
		return;
	reap_dead(l);
	while (l->timers) {
		struct bh_timer *t = l->timers;
		l->timers = t->next;
		free(t);
	}
	close(l->epfd);
	free(l);
}

int loop_fd(struct bh_loop *l)
{
	return l->epfd;
}

int loop_timeout_ms(struct bh_loop *l)
{
	for (struct bh_timer *t = l->timers; t; t = t->next) {
		if (t->dead)
			continue;
		uint64_t now = now_mono_us();
		if (t->due_us <= now)
			return 0;
		uint64_t ms = (t->due_us - now + 999) / 1000;
		return ms > 86400000 ? 86400000 : (int)ms;
	}
	return -1;
}

struct bh_watch *loop_watch(struct bh_loop *l, int fd, uint32_t events, bh_io_fn fn, void *arg)
{
	struct bh_watch *w = xzalloc(sizeof *w);
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(w);
		return NULL;
	}
	return w;
}

void loop_watch_events(struct bh_loop *l, struct bh_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};
	epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void loop_unwatch(struct bh_loop *l, struct bh_watch *w)
{
	if (!w || w->dead)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
	w->next_dead = l->dead_watches;
	l->dead_watches = w;
}

struct bh_timer *loop_timer(struct bh_loop *l, uint64_t delay_ms, bh_timer_fn fn, void *arg)
{
	struct bh_timer *t = xzalloc(sizeof *t);
	t->due_us = now_mono_us() + delay_ms * 1000u;
	t->fn = fn;
	t->arg = arg;
	struct bh_timer **pp = &l->timers;
	while (*pp && (*pp)->due_us <= t->due_us)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	return t;
}

void loop_timer_cancel(struct bh_loop *l, struct bh_timer *t)
{
	(void)l;
	if (t)
		t->dead = true;
}

void loop_run_once(struct bh_loop *l, bh_engine *e)
{
	/* Timers first: only those due when the round began, so a timer that
	 * re-arms itself with delay 0 cannot starve the descriptors. */
	uint64_t now = now_mono_us();
	for (struct bh_timer *t = l->timers; t && t->due_us <= now; t = t->next) {
		if (t->dead)
			continue;
		t->dead = true;
		t->fn(e, t->arg);
	}
	struct epoll_event evs[64];
	int n = epoll_wait(l->epfd, evs, 64, 0);
	for (int i = 0; i < n; i++) {
		struct bh_watch *w = evs[i].data.ptr;
		if (!w->dead)
			w->fn(e, w->arg, evs[i].events);
	}
	reap_dead(l);
}

/* ---- truth ---- */
uint64_t loop_timer_due_us(const struct bh_timer *t)
{
	return t->due_us;
}
