#include "engine_priv.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>

static int order[8], n_order;

static void mark(bh_engine *e, void *arg)
{
	(void)e;
	order[n_order++] = (int)(intptr_t)arg;
}

Test(loop, timers_fire_in_due_order_and_cancelled_ones_never)
{
	struct bh_loop *l = loop_new();
	n_order = 0;
	loop_timer(l, 30, mark, (void *)3);
	loop_timer(l, 10, mark, (void *)1);
	struct bh_timer *t = loop_timer(l, 20, mark, (void *)99);
	loop_timer(l, 20, mark, (void *)2);
	loop_timer_cancel(l, t);
	uint64_t until = now_mono_us() + 100000;
	while (now_mono_us() < until && n_order < 3) {
		struct pollfd p = {.fd = loop_fd(l), .events = POLLIN};
		int w = loop_timeout_ms(l);
		poll(&p, 1, w < 0 ? 10 : w);
		loop_run_once(l, NULL);
	}
	cr_assert_eq(n_order, 3);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 3);
	cr_assert_eq(loop_timeout_ms(l), -1, "nothing left pending");
	loop_free(l);
}

struct pair {
	struct bh_loop *l;
	struct bh_watch *a, *b;
	int fired;
};

static void unwatch_both(bh_engine *e, void *arg, uint32_t ev)
{
	(void)e;
	(void)ev;
	struct pair *p = arg;
	p->fired++;
	/* Removing the other watch while its event may be in the same batch
	 * must not call it afterwards. */
	loop_unwatch(p->l, p->a);
	loop_unwatch(p->l, p->b);
}

Test(loop, a_watch_removed_inside_a_callback_is_not_called_again)
{
	struct pair p = {.l = loop_new()};
	int x[2], y[2];
	cr_assert_eq(pipe(x), 0);
	cr_assert_eq(pipe(y), 0);
	cr_assert_eq(write(x[1], "a", 1), 1);
	cr_assert_eq(write(y[1], "b", 1), 1);
	p.a = loop_watch(p.l, x[0], EPOLLIN, unwatch_both, &p);
	p.b = loop_watch(p.l, y[0], EPOLLIN, unwatch_both, &p);
	loop_run_once(p.l, NULL);
	loop_run_once(p.l, NULL);
	cr_assert_eq(p.fired, 1);
	loop_free(p.l);
	close(x[0]), close(x[1]), close(y[0]), close(y[1]);
}
