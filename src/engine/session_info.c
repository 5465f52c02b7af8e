/* What describe shows of a session beyond its row: the cell in flight, the
 * policy clocks as absolute times, the proof of its tier and why it ended.
 * The clocks are read off the timers the lifecycle armed (session_life.c),
 * so describe says what the engine will do, not a second guess at it. */
#include "session_priv.h"

/* A timer's due time on the wall clock. */
static int64_t due_unix_ms(const struct bh_timer *t)
{
	uint64_t now = now_mono_us(), due = loop_timer_due_us(t);
	int64_t left_ms = due > now ? (int64_t)((due - now) / 1000u) : 0;
	return (int64_t)now_real_ms() + left_ms;
}

void session_info_truth(const bh_session *s, struct bh_session_info *o)
{
	o->call_code = "";
	const struct op *head = s->queue;
	if (s->state == BH_SESSION_BUSY && head && head->kind == OP_CELL && head->started_unix_ms) {
		o->call_code = head->code ? head->code : "";
		o->call_code_len = head->code ? head->cell.code_len : 0;
		o->call_language = head->cell.language;
		o->call_started_unix_ms = head->started_unix_ms;
	}
	uint32_t hibernate_after = s->e->policy.hibernate_after_ms;
	if (s->state == BH_SESSION_READY && !s->queue) {
		/* Just after a call, before the dispatch that arms it (the call's
		 * after-work), the window is about to start whole: from now. */
		o->pauses_unix_ms = s->idle_t ? due_unix_ms(s->idle_t)
					      : (int64_t)now_real_ms() + (int64_t)session_idle_ms(s);
		/* Unclaimed, its first idle timeout ends it instead: no hibernate. */
		if (s->claimed)
			o->hibernates_unix_ms = o->pauses_unix_ms + (int64_t)hibernate_after;
	} else if (s->state == BH_SESSION_PAUSED && s->sleep_t) {
		o->hibernates_unix_ms = due_unix_ms(s->sleep_t);
	}
	o->evidence = bh_engine_environment(s->e, s->tier);
	o->end_detail = s->state == BH_SESSION_ENDED ? s->end_detail : "";
}
