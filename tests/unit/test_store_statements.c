/* The store's kept statements: a statement in use when the same query is
 * asked for again (a nested store call from an iteration's callback) is a
 * one-off, and handing a one-off back must finalize it and return. The
 * timeouts make a release that never returns fail the test instead of
 * hanging the suite. */
#include "store.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fixture {
	char dir[64];
	char path[96];
	struct bh_store *s;
};

static void open_store(struct fixture *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/bh-store-statements.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/bulkhead.db", f->dir);
	bh_error *err = NULL;
	cr_assert_eq(store_open(f->path, false, false, &f->s, &err), 0, "store_open: %s",
		     err ? err->msg : "?");
}

static void close_store(struct fixture *f)
{
	store_close(f->s);
	char side[128];
	unlink(f->path);
	snprintf(side, sizeof side, "%s-wal", f->path);
	unlink(side);
	snprintf(side, sizeof side, "%s-shm", f->path);
	unlink(side);
	rmdir(f->dir);
}

struct nested {
	struct bh_store *s;
	int outer, inner, depth;
};

static int count_inner(void *arg, const struct bh_event *ev)
{
	(void)ev;
	((struct nested *)arg)->inner++;
	return 0;
}

/* For each event, list the events again: the outer statement is busy, so
 * the inner one is a one-off. */
static int list_again(void *arg, const struct bh_event *ev)
{
	(void)ev;
	struct nested *n = arg;
	n->outer++;
	bh_error *err = NULL;
	int r = store_events(n->s, 0, 100, count_inner, n, &err);
	cr_assert_eq(r, 0, "the nested listing failed: %s", err ? err->msg : "?");
	return 0;
}

Test(store_statements, a_nested_listing_from_a_callback_returns_and_sees_every_row, .timeout = 10)
{
	struct fixture f;
	open_store(&f);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(store_event(f.s, "state", "", "sb", "x"), 0);
	struct nested n = {.s = f.s};
	bh_error *err = NULL;
	cr_assert_eq(store_events(f.s, 0, 100, list_again, &n, &err), 0);
	cr_assert_eq(n.outer, 3);
	cr_assert_eq(n.inner, 9, "each of the 3 nested listings sees the 3 rows (saw %d)", n.inner);
	/* The kept statement is free again, and a write after it works. */
	cr_assert_eq(store_event(f.s, "state", "", "sb", "y"), 0);
	n.outer = n.inner = 0;
	cr_assert_eq(store_events(f.s, 0, 100, count_inner, &n, &err), 0);
	cr_assert_eq(n.inner, 4);
	close_store(&f);
}

/* Nested deeper than once: every level below the first is a one-off. */
static int list_deeper(void *arg, const struct bh_event *ev)
{
	(void)ev;
	struct nested *n = arg;
	n->outer++;
	if (n->depth >= 4)
		return 1; /* stop this level's iteration */
	n->depth++;
	bh_error *err = NULL;
	cr_assert_eq(store_events(n->s, 0, 100, list_deeper, n, &err), 0);
	n->depth--;
	return 1;
}

Test(store_statements, one_offs_nested_several_deep_are_all_released, .timeout = 10)
{
	struct fixture f;
	open_store(&f);
	cr_assert_eq(store_event(f.s, "state", "", "sb", "x"), 0);
	struct nested n = {.s = f.s};
	bh_error *err = NULL;
	cr_assert_eq(store_events(f.s, 0, 100, list_deeper, &n, &err), 0);
	cr_assert_eq(n.outer, 5, "five levels, one row each (saw %d)", n.outer);
	close_store(&f);
}
