/* The engine's vocabulary: one name table per enum of bulkhead.h, and the
 * parsers that read a name back (from the store, a request, the command
 * line). Everything that prints a tier, a state or an end reason takes its
 * word from here; nothing above the engine keeps a list of its own. */
#include "engine_priv.h"

#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Each table is indexed by its enum and sized by the enum's count: a value
 * added without a name fails here, and unit/test_vocab.c checks that every
 * value up to the count has one. */
#define NAMED(table, count) _Static_assert(COUNT(table) == (count), #table " names every value")

static const char *const tier_names[] = {
	[BH_TIER_NONE] = "none",     [BH_TIER_PROCESS] = "process", [BH_TIER_CONTAINER] = "container",
	[BH_TIER_KERNEL] = "kernel", [BH_TIER_VM] = "vm",
};
NAMED(tier_names, BH_TIER_COUNT);

static const char *const refusal_names[] = {
	[BH_REFUSAL_NONE] = "none",
	[BH_REFUSAL_REQUEST] = "request",
	[BH_REFUSAL_PERMISSION] = "permission",
	[BH_REFUSAL_PROTOCOL] = "protocol",
	[BH_REFUSAL_UNSUPPORTED] = "unsupported",
	[BH_REFUSAL_ISOLATION] = "isolation",
	[BH_REFUSAL_CAPACITY] = "capacity",
	[BH_REFUSAL_ENVIRONMENT] = "environment",
};
NAMED(refusal_names, BH_REFUSAL_COUNT);

static const char *const language_names[] = {
	[BH_LANG_PYTHON] = "python",
	[BH_LANG_JAVASCRIPT] = "javascript",
};
NAMED(language_names, BH_LANG_COUNT);

static const char *const state_names[] = {
	[BH_SESSION_WAITING] = "waiting",
	[BH_SESSION_OPENING] = "opening",
	[BH_SESSION_READY] = "ready",
	[BH_SESSION_BUSY] = "busy",
	[BH_SESSION_PAUSING] = "pausing",
	[BH_SESSION_PAUSED] = "paused",
	[BH_SESSION_HIBERNATING] = "hibernating",
	[BH_SESSION_HIBERNATED] = "hibernated",
	[BH_SESSION_WAKING] = "waking",
	[BH_SESSION_ENDED] = "ended",
};
NAMED(state_names, BH_SESSION_STATE_COUNT);

/* The words the store keeps (its end_reason column) and the operator API
 * answers; a live session's is "" (the column is empty). */
static const char *const end_names[] = {
	[BH_END_NONE] = "",
	[BH_END_CLOSED] = "closed",
	[BH_END_EXPIRED] = "expired",
	[BH_END_DISK_EXCEEDED] = "disk_exceeded",
	[BH_END_MAIN_PROCESS_ENDED] = "main_process_ended",
	[BH_END_BOUNDARY_FAILED] = "boundary_failed",
	[BH_END_SANDBOX_CHANGED] = "sandbox_changed",
	[BH_END_SHUTDOWN] = "shutdown",
	[BH_END_REPLACED] = "replaced",
	[BH_END_NOT_FOUND] = "not_found",
	[BH_END_UNCLAIMED] = "unclaimed",
	[BH_END_IDLE_CLOSED] = "idle_closed",
	[BH_END_RETENTION_EXPIRED] = "retention_expired",
	[BH_END_KILLED] = "killed",
	[BH_END_REAPED] = "reaped",
	[BH_END_OOM] = "oom",
	[BH_END_HOST_LOST] = "host_lost",
};
NAMED(end_names, BH_END_REASON_COUNT);

static const char *const leak_names[] = {
	[BH_LEAK_ORPHAN] = "orphan",
	[BH_LEAK_ABANDONED] = "abandoned",
	[BH_LEAK_GHOST] = "ghost",
	[BH_LEAK_OVERDUE] = "overdue",
	[BH_LEAK_STALE_IMAGE] = "stale-image",
	[BH_LEAK_STRAY_CGROUP] = "stray-cgroup",
	[BH_LEAK_INTERRUPTED] = "interrupted", /* inflight */
};
NAMED(leak_names, BH_LEAK_KIND_COUNT);

static const char *name_in(const char *const *table, size_t n, int v)
{
	return v >= 0 && (size_t)v < n ? table[v] : "unknown";
}

static int parse_in(const char *const *table, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(name, table[i]))
			return (int)i;
	return -1;
}

const char *bh_tier_name(enum bh_tier t)
{
	return name_in(tier_names, COUNT(tier_names), t);
}

int bh_tier_parse(const char *name, enum bh_tier *out)
{
	int i = parse_in(tier_names, COUNT(tier_names), name);
	if (i < 0)
		return -1;
	*out = (enum bh_tier)i;
	return 0;
}

void bh_tier_set_text(uint32_t tiers, char *buf, size_t n)
{
	size_t used = 0;
	if (!n)
		return;
	buf[0] = '\0';
	for (int t = BH_TIER_VM; t >= BH_TIER_NONE; t--)
		if (tiers & (1u << t))
			used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s",
						 used ? "," : "", bh_tier_name((enum bh_tier)t));
	if (!used)
		snprintf(buf, n, "-");
}

bool bh_tier_meets(enum bh_tier have, enum bh_tier floor)
{
	if (floor <= BH_TIER_NONE)
		return have >= BH_TIER_NONE;
	return have >= floor && have < BH_TIER_COUNT;
}

const char *bh_refusal_name(enum bh_refusal r)
{
	return name_in(refusal_names, COUNT(refusal_names), r);
}

const char *bh_language_name(enum bh_language l)
{
	return name_in(language_names, COUNT(language_names), l);
}

int bh_language_parse(const char *name, enum bh_language *out)
{
	int i = parse_in(language_names, COUNT(language_names), name);
	if (i < 0)
		return -1;
	*out = (enum bh_language)i;
	return 0;
}

const char *bh_session_state_name(enum bh_session_state st)
{
	return name_in(state_names, COUNT(state_names), st);
}

int bh_session_state_parse(const char *name, enum bh_session_state *out)
{
	int i = parse_in(state_names, COUNT(state_names), name);
	if (i < 0)
		return -1;
	*out = (enum bh_session_state)i;
	return 0;
}

const char *bh_end_reason_name(enum bh_end_reason r)
{
	return name_in(end_names, COUNT(end_names), r);
}

int bh_end_reason_parse(const char *name, enum bh_end_reason *out)
{
	int i = parse_in(end_names, COUNT(end_names), name);
	if (i < 0)
		return -1;
	*out = (enum bh_end_reason)i;
	return 0;
}

const char *bh_leak_kind_name(enum bh_leak_kind k)
{
	return name_in(leak_names, COUNT(leak_names), k);
}

/* What records and answers name as the provider: the tier's runtime. */
const char *engine_provider(enum bh_tier tier)
{
	return tier == BH_TIER_KERNEL ? "bulkhead-runsc" : "bulkhead-crun";
}
