/* The vocabulary (vocab.c): every value of each enum has one name, the
 * names are distinct, and each parses back to its value; a name the
 * engine does not write is refused, not guessed at. */
#include "bulkhead.h"

#include <criterion/criterion.h>
#include <string.h>

typedef const char *(*name_fn)(int v);

/* Every value in [first, count) has a name, none repeats, and the value
 * one past the end has none. */
static void named_and_distinct(const char *what, int first, int count, name_fn name)
{
	for (int i = first; i < count; i++) {
		const char *n = name(i);
		cr_assert_not_null(n, "%s %d has no name", what, i);
		cr_assert_str_neq(n, "unknown", "%s %d is named unknown", what, i);
		for (int j = first; j < i; j++)
			cr_assert_str_neq(n, name(j), "%s %d and %d are both \"%s\"", what, i, j, n);
	}
	cr_assert_str_eq(name(count), "unknown", "%s: the count is not one past the last value", what);
	cr_assert_str_eq(name(-1), "unknown");
}

static const char *state_name(int v)
{
	return bh_session_state_name((enum bh_session_state)v);
}

static const char *end_name(int v)
{
	return bh_end_reason_name((enum bh_end_reason)v);
}

static const char *language_name(int v)
{
	return bh_language_name((enum bh_language)v);
}

static const char *refusal_name(int v)
{
	return bh_refusal_name((enum bh_refusal)v);
}

static const char *leak_name(int v)
{
	return bh_leak_kind_name((enum bh_leak_kind)v);
}

static const char *tier_name(int v)
{
	return bh_tier_name((enum bh_tier)v);
}

Test(vocab, every_value_of_every_enum_has_one_distinct_name)
{
	named_and_distinct("state", 0, BH_SESSION_STATE_COUNT, state_name);
	named_and_distinct("end reason", 0, BH_END_REASON_COUNT, end_name);
	named_and_distinct("language", 0, BH_LANG_COUNT, language_name);
	named_and_distinct("refusal", 0, BH_REFUSAL_COUNT, refusal_name);
	named_and_distinct("leak kind", 0, BH_LEAK_KIND_COUNT, leak_name);
	named_and_distinct("tier", 0, BH_TIER_COUNT, tier_name);
}

Test(vocab, every_session_state_round_trips_by_name)
{
	for (int i = 0; i < BH_SESSION_STATE_COUNT; i++) {
		enum bh_session_state st = BH_SESSION_ENDED;
		const char *n = bh_session_state_name((enum bh_session_state)i);
		cr_assert_eq(bh_session_state_parse(n, &st), 0, "%s", n);
		cr_assert_eq((int)st, i, "%s parsed as %d", n, (int)st);
	}
	cr_assert_str_eq(bh_session_state_name(BH_SESSION_WAITING), "waiting");
	cr_assert_str_eq(bh_session_state_name(BH_SESSION_HIBERNATED), "hibernated");
}

Test(vocab, every_end_reason_round_trips_by_name_and_live_is_the_empty_name)
{
	for (int i = 0; i < BH_END_REASON_COUNT; i++) {
		enum bh_end_reason r = BH_END_KILLED;
		const char *n = bh_end_reason_name((enum bh_end_reason)i);
		cr_assert_eq(bh_end_reason_parse(n, &r), 0, "%s", n);
		cr_assert_eq((int)r, i, "%s parsed as %d", n, (int)r);
	}
	/* The store's column is empty while a session lives. */
	cr_assert_str_eq(bh_end_reason_name(BH_END_NONE), "");
	cr_assert_str_eq(bh_end_reason_name(BH_END_IDLE_CLOSED), "idle_closed");
	cr_assert_str_eq(bh_end_reason_name(BH_END_MAIN_PROCESS_ENDED), "main_process_ended");
}

Test(vocab, a_name_the_engine_does_not_write_is_refused)
{
	enum bh_session_state st = BH_SESSION_READY;
	const char *bad_states[] = {NULL, "", "Ready", "ready ", "sleeping", "unknown"};
	for (size_t i = 0; i < sizeof bad_states / sizeof bad_states[0]; i++)
		cr_assert_eq(bh_session_state_parse(bad_states[i], &st), -1, "\"%s\" parsed",
			     bad_states[i] ? bad_states[i] : "(null)");
	cr_assert_eq(st, BH_SESSION_READY, "a refused name left its mark");
	enum bh_end_reason r = BH_END_CLOSED;
	const char *bad_ends[] = {NULL, "eaten_by_a_grue", "CLOSED", "SESSION_END_CLOSED", "unknown"};
	for (size_t i = 0; i < sizeof bad_ends / sizeof bad_ends[0]; i++)
		cr_assert_eq(bh_end_reason_parse(bad_ends[i], &r), -1, "\"%s\" parsed",
			     bad_ends[i] ? bad_ends[i] : "(null)");
	cr_assert_eq(r, BH_END_CLOSED);
	enum bh_language l = BH_LANG_PYTHON;
	cr_assert_eq(bh_language_parse("ruby", &l), -1);
	cr_assert_eq(bh_language_parse(NULL, &l), -1);
	cr_assert_eq(bh_language_parse("javascript", &l), 0);
	cr_assert_eq(l, BH_LANG_JAVASCRIPT);
}

/* The hosts view and `bulkhead fleet hosts` name a host's proven tiers with
 * one function: strongest first, "-" for none, cut to the buffer. */
Test(vocab, a_set_of_tiers_reads_strongest_first_and_none_as_a_dash)
{
	char buf[64];
	bh_tier_set_text((1u << BH_TIER_CONTAINER) | (1u << BH_TIER_KERNEL), buf, sizeof buf);
	cr_assert_str_eq(buf, "kernel,container");
	bh_tier_set_text(1u << BH_TIER_CONTAINER, buf, sizeof buf);
	cr_assert_str_eq(buf, "container");
	bh_tier_set_text(0, buf, sizeof buf);
	cr_assert_str_eq(buf, "-");
	char small[5];
	bh_tier_set_text((1u << BH_TIER_CONTAINER) | (1u << BH_TIER_KERNEL), small, sizeof small);
	cr_assert_str_eq(small, "kern");
}
