/* A recording's claims checked against its own answers (scenario.h,
 * scenario_contradictions): the loader says a file is well formed; this
 * says whether what it lit could have happened. The recorder runs it before
 * it writes, and the replay suite runs it over every shipped scenario, so a
 * replay never shows a class a hop the call never reached. */
#include "scenario.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const tiers[] = {"none", "process", "container", "kernel", "vm"};

static int tier_rank(const char *t)
{
	for (size_t i = 0; t && i < sizeof tiers / sizeof tiers[0]; i++)
		if (!strcmp(t, tiers[i]))
			return (int)i;
	return -1;
}

struct found {
	char *why;
	size_t len, n;
};

static void say(struct found *f, size_t step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct found *f, size_t step, const char *fmt, ...)
{
	f->n++;
	if (!f->why || !f->len)
		return;
	size_t used = strlen(f->why);
	if (used + 1 >= f->len)
		return;
	used += (size_t)snprintf(f->why + used, f->len - used, "%sstep %zu: ", used ? "; " : "", step);
	if (used >= f->len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why + used, f->len - used, fmt, ap);
	va_end(ap);
}

static bool lights(const struct scenario_step *st, enum scenario_hop h)
{
	for (size_t i = 0; i < st->n_hops; i++)
		if (st->hops[i] == h)
			return true;
	return false;
}

static long long count_of(const struct scenario_step *st, const char *name)
{
	for (size_t i = 0; st && i < st->n_daemon_calls; i++)
		if (!strcmp(st->daemon_calls[i].name, name))
			return st->daemon_calls[i].n;
	return 0;
}

/* Did this step send name (its cumulative count rose)? */
static bool sent(const struct scenario_step *st, const struct scenario_step *prev, const char *name)
{
	return count_of(st, name) > count_of(prev, name);
}

/* Words that say a sandbox still holds its interpreters and files. */
static bool claims_kept(const char *text)
{
	return text && (strcasestr(text, "kept between calls") || strcasestr(text, "interpreters and files kept") ||
			strcasestr(text, "still warm"));
}

static void check_step(struct found *f, const struct scenario *s, size_t i, bool daemon_dead)
{
	const struct scenario_step *st = &s->steps[i], *prev = i ? &s->steps[i - 1] : NULL;
	size_t n = i + 1;
	if (st->stopped_at != SCENARIO_HOP_NONE)
		for (size_t k = 0; k < st->n_hops; k++)
			if (st->hops[k] > st->stopped_at)
				say(f, n, "lights \"%s\", past \"%s\" where it stopped", scenario_hop_name(st->hops[k]),
				    scenario_hop_name(st->stopped_at));
	if (st->kind == SCENARIO_CALL && st->outcome == SCENARIO_ANSWERED && !lights(st, SCENARIO_HOP_SANDBOX))
		say(f, n, "answered, but never lit the sandbox that answered");
	int tier = tier_rank(s->tier), floor = tier_rank(s->floor);
	if (lights(st, SCENARIO_HOP_SANDBOX) && floor > tier && tier >= 0)
		say(f, n, "lights the sandbox, but the floor %s is above the %s tier: no session could open", s->floor,
		    s->tier);
	if (st->kind == SCENARIO_HOOK && lights(st, SCENARIO_HOP_SANDBOX) && !sent(st, prev, "OpenSession") &&
	    !sent(st, prev, "CloseSession"))
		say(f, n, "the %s hook lights the sandbox, but opened and closed nothing", st->hook);
	if (daemon_dead) {
		if (lights(st, SCENARIO_HOP_DAEMON))
			say(f, n, "lights the daemon, which was killed and not restarted");
		if (claims_kept(st->narration))
			say(f, n, "says the sandbox is kept, after the daemon was killed");
		for (size_t k = 0; k < st->n_path; k++)
			if (claims_kept(st->path[k].narration))
				say(f, n, "the %s hop says the sandbox is kept, after the daemon was killed",
				    scenario_hop_name(st->path[k].hop));
	}
	/* A path must come back: a refusal travels back to the model as an
	 * answer does, and a call's path ends where it began. */
	if (st->kind == SCENARIO_CALL && st->n_path && st->path[st->n_path - 1].hop != SCENARIO_HOP_MODEL)
		say(f, n, "the call's path ends at \"%s\", not back at the model",
		    scenario_hop_name(st->path[st->n_path - 1].hop));
}

size_t scenario_contradictions(const struct scenario *s, char *why, size_t whylen)
{
	struct found f = {.why = why, .len = whylen};
	if (why && whylen)
		*why = '\0';
	bool dead = false;
	for (size_t i = 0; s && i < s->n_steps; i++) {
		const struct scenario_step *st = &s->steps[i];
		if (st->kind == SCENARIO_OPERATOR && !strcmp(st->action, "restart_daemon"))
			dead = false;
		check_step(&f, s, i, dead && !(st->kind == SCENARIO_OPERATOR && !strcmp(st->action, "kill_daemon")));
		if (st->kind == SCENARIO_OPERATOR && !strcmp(st->action, "kill_daemon"))
			dead = true;
	}
	return f.n;
}
