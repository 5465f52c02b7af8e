/* Memory pressure (issue 21): an overcommitted budget, idle sessions that
 * hold memory, and an active call that pushes what the sandboxes use past
 * the high watermark. The engine must give memory back in order — every
 * idle session paused first, then the least recently used paused ones
 * closed (container tier: idle_closed) until the use is under the low
 * watermark — without touching the call in flight, and leave nothing
 * behind. Real crun sandboxes, their real cgroups' usage. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE 4

static struct harness h;

static void teardown(void)
{
	harness_close(&h);
}

struct seen {
	char kinds[64][32];
	char sessions[64][65];
	size_t n;
};

static int collect(void *arg, const struct bh_event *ev)
{
	struct seen *s = arg;
	if (strncmp(ev->kind, "reclaim_", 8) || s->n == 64)
		return 0;
	snprintf(s->kinds[s->n], sizeof s->kinds[0], "%s", ev->kind);
	snprintf(s->sessions[s->n], sizeof s->sessions[0], "%s", ev->session);
	s->n++;
	return 0;
}

/* The position of the first event of kind for session fp, or -1. */
static int find(const struct seen *s, const char *kind, const char *fp)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->kinds[i], kind) && !strcmp(s->sessions[i], fp))
			return (int)i;
	return -1;
}

static unsigned long long used_mib(void)
{
	char path[512];
	snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes",
		 bh_engine_cgroup_parent(h.e));
	unsigned long long b = 0;
	FILE *f = fopen(path, "r"); /* a cgroup file has no size to slurp by */
	if (f && fscanf(f, "%llu", &b) != 1)
		b = 0;
	if (f)
		fclose(f);
	return b >> 20;
}

/* IDLE sessions of tier, each holding 30 MiB, used in order; then an active
 * container-tier call that holds enough for 8 s to take the use past the
 * high watermark (250 MiB: half the 500 MiB budget) with an excess over the
 * low one (200 MiB) of two and a half idle sessions: the reclaim must give
 * back the three least recently used and keep the fourth. Sized from what
 * the idle ones measured, so the test holds whatever an interpreter weighs
 * on the host. */
#define BUDGET_MB 500

static void drive(enum bh_tier tier)
{
	struct bh_policy p = {.memory_budget_mb = BUDGET_MB,
			      .memory_overcommit_pct = 2000,
			      .memory_high_pct = 50,
			      .max_sessions = 16,
			      .max_per_owner = 16};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, tier);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	const char *gave = tier == BH_TIER_KERNEL ? "reclaim_hibernated" : "reclaim_closed";
	bh_session *idle[IDLE];
	char fp[IDLE][65];
	for (int i = 0; i < IDLE; i++) {
		idle[i] = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
		struct cell_outcome *o = harness_cell(&h, idle[i], BH_LANG_PYTHON,
						      "x = b'\\x01' * (30 << 20); len(x)", 0);
		cr_assert(o->answered && strstr(o->out, "31457280"), "idle %d: %s", i,
			  o->err_msg ? o->err_msg : o->out);
		cell_outcome_free(o);
		struct bh_session_info info;
		bh_session_get_info(idle[i], &info);
		snprintf(fp[i], sizeof fp[i], "%s", info.fingerprint);
	}
	struct seen before = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_events(h.e, 0, 0, collect, &before, &err), 0);
	cr_assert_eq(before.n, 0, "reclaim under the watermark: %s %s", before.kinds[0],
		     before.sessions[0]);

	unsigned long long idle_use = used_mib(), per = idle_use / IDLE;
	cr_assert(per >= 31 && per <= 60,
		  "an idle %s session holding 30 MiB uses %llu MiB: outside what this test is sized "
		  "for (31-60)", bh_tier_name(tier), per);
	int active_mib = (int)(BUDGET_MB * 2 / 5 + per * 5 / 2 - idle_use - 8);
	/* The active call: active_mib more, held for 8 s, well inside its own
	 * 512 MiB limit; the engine's ticks see the use past the high
	 * watermark meanwhile. */
	bh_session *active = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	char code[128], want[32];
	snprintf(code, sizeof code, "import time\ny = b'\\x02' * (%d << 20)\ntime.sleep(8)\nlen(y)",
		 active_mib);
	snprintf(want, sizeof want, "%d", active_mib << 20);
	struct cell_outcome *o = harness_cell(&h, active, BH_LANG_PYTHON, code, 30000);
	cr_assert(o->answered, "the running call was not answered: %s", o->err_msg);
	cr_assert(strstr(o->out, want), "the running call: %s / %s", o->out, o->errout);
	cr_assert_eq(o->session_end, BH_END_NONE);
	cell_outcome_free(o);

	struct seen ev = {0};
	cr_assert_eq(bh_engine_events(h.e, 0, 0, collect, &ev, &err), 0);
	struct bh_session_info ai;
	bh_session_get_info(active, &ai);
	cr_assert_eq(find(&ev, "reclaim_paused", ai.fingerprint), -1, "the busy session was paused");
	/* Every idle one paused; the closed ones are the least recently used
	 * (a prefix of the order they were used in), each after its pause. */
	int closed = 0;
	for (int i = 0; i < IDLE; i++) {
		int paused_at = find(&ev, "reclaim_paused", fp[i]);
		cr_assert_geq(paused_at, 0, "idle session %d was not paused", i);
		int closed_at = find(&ev, gave, fp[i]);
		if (closed_at < 0)
			continue;
		cr_assert_gt(closed_at, paused_at, "idle session %d closed before its pause", i);
		cr_assert_eq(closed, i, "session %d closed while a less recently used one was kept", i);
		closed++;
		struct bh_session_info info;
		bh_session_get_info(idle[i], &info);
		if (tier == BH_TIER_KERNEL)
			cr_assert_eq(info.state, BH_SESSION_HIBERNATED, "session %d is %s", i,
				     bh_session_state_name(info.state));
		else
			cr_assert_eq(info.end_reason, BH_END_IDLE_CLOSED, "closed session %d ended %s",
				     i, bh_end_reason_name(info.end_reason));
	}
	printf("pressure (%s): %d idle sessions used %llu MiB, a call %d MiB more; %d paused, the %d "
	       "least recently used %s, the running call answered\n",
	       bh_tier_name(tier), IDLE, idle_use, active_mib, IDLE, closed, gave + 8);
	fflush(stdout);
	cr_assert_gt(closed, 0, "nothing was given back under pressure");
	cr_assert_lt(closed, IDLE, "every idle session given back: more than the excess");

	/* The call's memory goes with its session; then each idle one, the
	 * kept ones resumed and the hibernated ones restored by their next
	 * call, answers with what it held, and is closed (a restored sandbox
	 * loads its image whole: under this small budget the next restore
	 * would be refused, rightly, while it held its memory); a closed one's
	 * caller is told why. */
	harness_close_session(&h, active, NULL, NULL);
	for (int i = 0; i < IDLE; i++) {
		o = harness_cell(&h, idle[i], BH_LANG_PYTHON, "len(x)", 0);
		if (i < closed && tier != BH_TIER_KERNEL) {
			cr_assert(!o->answered && o->session_end == BH_END_IDLE_CLOSED,
				  "closed session %d: %s", i, o->out);
		} else {
			cr_assert(o->answered && strstr(o->out, "31457280"), "%s session %d: %s",
				  i < closed ? "hibernated" : "kept", i, o->err_msg ? o->err_msg : o->out);
			harness_close_session(&h, idle[i], NULL, NULL);
		}
		cell_outcome_free(o);
	}
	/* The closed sandboxes' deletes run in the background: given 10 s. */
	char *left = harness_runtime_list_settled(&h, 10000);
	cr_assert_str_eq(left, "", "containers left: %s", left);
	free(left);
	char *cgroups = harness_cgroup_list(&h);
	cr_assert_str_eq(cgroups, "", "cgroups left: %s", cgroups);
	free(cgroups);
}

Test(pressure, container_idle_sessions_are_paused_then_the_least_recently_used_closed_and_the_running_call_answers,
     .fini = teardown, .timeout = 120)
{
	drive(BH_TIER_CONTAINER);
}

Test(pressure, kernel_idle_sessions_are_paused_then_the_least_recently_used_hibernated_and_answer_after,
     .fini = teardown, .timeout = 180)
{
	drive(BH_TIER_KERNEL);
}
