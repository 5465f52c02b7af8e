/* Vocabulary: Connect codes and their HTTP statuses, NotDispatched reasons,
 * session ends, and how bulkhead's own words map onto plimsoll's. */
#include "wire_internal.h"

#include <string.h>

/* The Connect protocol's table (connectrpc.com/docs/protocol#error-codes, as
 * revised in 2024 and implemented since connect-go 1.16: canceled 499,
 * deadline_exceeded 504, failed_precondition 400, unimplemented 501). */
static const struct {
	const char *name;
	int http;
} codes[WIRE_CODE_COUNT] = {
	[WIRE_OK] = {"ok", 200},
	[WIRE_CANCELED] = {"canceled", 499},
	[WIRE_UNKNOWN] = {"unknown", 500},
	[WIRE_INVALID_ARGUMENT] = {"invalid_argument", 400},
	[WIRE_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
	[WIRE_NOT_FOUND] = {"not_found", 404},
	[WIRE_ALREADY_EXISTS] = {"already_exists", 409},
	[WIRE_PERMISSION_DENIED] = {"permission_denied", 403},
	[WIRE_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
	[WIRE_FAILED_PRECONDITION] = {"failed_precondition", 400},
	[WIRE_ABORTED] = {"aborted", 409},
	[WIRE_OUT_OF_RANGE] = {"out_of_range", 400},
	[WIRE_UNIMPLEMENTED] = {"unimplemented", 501},
	[WIRE_INTERNAL] = {"internal", 500},
	[WIRE_UNAVAILABLE] = {"unavailable", 503},
	[WIRE_DATA_LOSS] = {"data_loss", 500},
	[WIRE_UNAUTHENTICATED] = {"unauthenticated", 401},
};

const char *wire_code_name(enum wire_code c)
{
	if ((unsigned)c >= WIRE_CODE_COUNT)
		return "unknown";
	return codes[c].name;
}

int wire_code_parse(const char *name, enum wire_code *out)
{
	/* "ok" is not a code an error can carry. */
	for (int i = 1; name && i < WIRE_CODE_COUNT; i++) {
		if (!strcmp(name, codes[i].name)) {
			*out = (enum wire_code)i;
			return 0;
		}
	}
	return -1;
}

int wire_code_http_status(enum wire_code c)
{
	if ((unsigned)c >= WIRE_CODE_COUNT)
		return 500;
	return codes[c].http;
}

/* The spec's "HTTP to error code" table, for an answer whose body is not a
 * Connect error (a proxy's page, an empty 503). */
enum wire_code wire_code_from_http_status(int status)
{
	switch (status) {
	case 400:
		return WIRE_INTERNAL;
	case 401:
		return WIRE_UNAUTHENTICATED;
	case 403:
		return WIRE_PERMISSION_DENIED;
	case 404:
		return WIRE_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return WIRE_UNAVAILABLE;
	default:
		return WIRE_UNKNOWN;
	}
}

static const char *const refusal_names[] = {
	[WIRE_REFUSAL_UNSPECIFIED] = "unknown", [WIRE_REFUSAL_REQUEST] = "request",
	[WIRE_REFUSAL_PERMISSION] = "permission", [WIRE_REFUSAL_PROTOCOL] = "protocol",
	[WIRE_REFUSAL_UNSUPPORTED] = "unsupported", [WIRE_REFUSAL_ISOLATION] = "isolation",
	[WIRE_REFUSAL_CAPACITY] = "capacity", [WIRE_REFUSAL_ENVIRONMENT] = "environment",
};

static const char *const refusal_enum_names[] = {
	[WIRE_REFUSAL_UNSPECIFIED] = "NOT_DISPATCHED_REASON_UNSPECIFIED",
	[WIRE_REFUSAL_REQUEST] = "NOT_DISPATCHED_REASON_REQUEST",
	[WIRE_REFUSAL_PERMISSION] = "NOT_DISPATCHED_REASON_PERMISSION",
	[WIRE_REFUSAL_PROTOCOL] = "NOT_DISPATCHED_REASON_PROTOCOL",
	[WIRE_REFUSAL_UNSUPPORTED] = "NOT_DISPATCHED_REASON_UNSUPPORTED",
	[WIRE_REFUSAL_ISOLATION] = "NOT_DISPATCHED_REASON_ISOLATION",
	[WIRE_REFUSAL_CAPACITY] = "NOT_DISPATCHED_REASON_CAPACITY",
	[WIRE_REFUSAL_ENVIRONMENT] = "NOT_DISPATCHED_REASON_ENVIRONMENT",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *wire_refusal_name(enum wire_refusal r)
{
	return (unsigned)r < COUNT(refusal_names) ? refusal_names[r] : "unknown";
}

const char *wire_refusal_enum_name(enum wire_refusal r)
{
	return (unsigned)r < COUNT(refusal_enum_names) ? refusal_enum_names[r]
						       : "NOT_DISPATCHED_REASON_UNSPECIFIED";
}

/* Spelled out rather than cast: the two enums agree today by construction,
 * and a switch keeps that from being an accident. */
enum wire_refusal wire_refusal_of(enum bh_refusal r)
{
	switch (r) {
	case BH_REFUSAL_REQUEST:
		return WIRE_REFUSAL_REQUEST;
	case BH_REFUSAL_PERMISSION:
		return WIRE_REFUSAL_PERMISSION;
	case BH_REFUSAL_PROTOCOL:
		return WIRE_REFUSAL_PROTOCOL;
	case BH_REFUSAL_UNSUPPORTED:
		return WIRE_REFUSAL_UNSUPPORTED;
	case BH_REFUSAL_ISOLATION:
		return WIRE_REFUSAL_ISOLATION;
	case BH_REFUSAL_CAPACITY:
		return WIRE_REFUSAL_CAPACITY;
	case BH_REFUSAL_ENVIRONMENT:
		return WIRE_REFUSAL_ENVIRONMENT;
	case BH_REFUSAL_NONE:
		break;
	}
	return WIRE_REFUSAL_UNSPECIFIED;
}

/* plimsoll's SessionEnd, by number. */
static const struct {
	const char *enum_name;
	const char *name;
} ends[] = {
	[WIRE_END_OPEN] = {"SESSION_END_UNSPECIFIED", "open"},
	[WIRE_END_CLOSED] = {"SESSION_END_CLOSED", "closed"},
	[WIRE_END_EXPIRED] = {"SESSION_END_EXPIRED", "expired"},
	[WIRE_END_DISK_EXCEEDED] = {"SESSION_END_DISK_EXCEEDED", "disk_exceeded"},
	[WIRE_END_MAIN_PROCESS_ENDED] = {"SESSION_END_MAIN_PROCESS_ENDED", "main_process_ended"},
	[WIRE_END_BOUNDARY_FAILED] = {"SESSION_END_BOUNDARY_FAILED", "boundary_failed"},
	[WIRE_END_SANDBOX_CHANGED] = {"SESSION_END_SANDBOX_CHANGED", "sandbox_changed"},
	[WIRE_END_SHUTDOWN] = {"SESSION_END_SHUTDOWN", "shutdown"},
	[WIRE_END_REPLACED] = {"SESSION_END_REPLACED", "replaced"},
	[WIRE_END_NOT_FOUND] = {"SESSION_END_NOT_FOUND", "not_found"},
	[WIRE_END_UNCLAIMED] = {"SESSION_END_UNCLAIMED", "unclaimed"},
};

const char *wire_session_end_enum_name(enum wire_session_end e)
{
	if (e < 0 || (size_t)e >= COUNT(ends))
		return "SESSION_END_UNSPECIFIED";
	return ends[e].enum_name;
}

const char *wire_session_end_name(enum wire_session_end e)
{
	if (e < 0 || (size_t)e >= COUNT(ends))
		return "unknown";
	return ends[e].name;
}

/* bulkhead's end reason -> plimsoll's SessionEnd. A switch with no default,
 * so a reason added to the engine does not compile until it is given a
 * plimsoll value here. Most are plimsoll's own word; for the finer ones a
 * client acts on any end the same way (it drops the session and, once,
 * retries in a new one), so the value only has to tell it truly who ended
 * the session and whether the state is gone:
 *  - idle_closed: a container-tier session paused past hibernate_after is
 *    closed by the daemon's timers, not by anyone's request and not by a
 *    fault. plimsoll's word for "the daemon's clock ended it" is EXPIRED;
 *    CLOSED would tell the client it (or someone) asked for the close.
 *  - retention_expired: a hibernated session kept past its retention: the
 *    daemon's clock again, EXPIRED.
 *  - killed: an operator ended it on purpose, at once. That is a close by
 *    someone with authority over the daemon (an operator's plain close is
 *    "closed" too), so CLOSED.
 *  - reaped: reconciliation found its sandbox gone or orphaned because the
 *    engine that held it died (or its image vanished). The daemon stopped
 *    under it: SHUTDOWN, which tells a client to open anew, not that it did
 *    anything wrong.
 *  - oom: the whole sandbox died of memory (gVisor's outcome): its main
 *    process ended, MAIN_PROCESS_ENDED.
 * endDetail keeps the finer reason (wire_session_end_detail). */
enum wire_session_end wire_session_end_of(enum bh_end_reason reason)
{
	switch (reason) {
	case BH_END_NONE:
		return WIRE_END_OPEN;
	case BH_END_CLOSED:
		return WIRE_END_CLOSED;
	case BH_END_EXPIRED:
		return WIRE_END_EXPIRED;
	case BH_END_DISK_EXCEEDED:
		return WIRE_END_DISK_EXCEEDED;
	case BH_END_MAIN_PROCESS_ENDED:
		return WIRE_END_MAIN_PROCESS_ENDED;
	case BH_END_BOUNDARY_FAILED:
		return WIRE_END_BOUNDARY_FAILED;
	case BH_END_SANDBOX_CHANGED:
		return WIRE_END_SANDBOX_CHANGED;
	case BH_END_SHUTDOWN:
		return WIRE_END_SHUTDOWN;
	case BH_END_REPLACED:
		return WIRE_END_REPLACED;
	case BH_END_NOT_FOUND:
		return WIRE_END_NOT_FOUND;
	case BH_END_UNCLAIMED:
		return WIRE_END_UNCLAIMED;
	case BH_END_IDLE_CLOSED:
	case BH_END_RETENTION_EXPIRED:
		return WIRE_END_EXPIRED;
	case BH_END_KILLED:
		return WIRE_END_CLOSED;
	case BH_END_REAPED:
		return WIRE_END_SHUTDOWN;
	case BH_END_OOM:
	case BH_END_HOST_LOST:
		return WIRE_END_MAIN_PROCESS_ENDED;
	}
	/* Not a value of the enum (a caller's cast): it still means the session
	 * ended, never UNSPECIFIED, which reads as open. */
	return WIRE_END_CLOSED;
}

/* Whether plimsoll's value says the reason in its own word. */
static bool plimsoll_says(enum bh_end_reason reason)
{
	const char *plimsolls = wire_session_end_name(wire_session_end_of(reason));
	return !strcmp(bh_end_reason_name(reason), plimsolls);
}

char *wire_session_end_detail(enum bh_end_reason reason, const char *detail)
{
	bool has_detail = detail && *detail;
	if (reason == BH_END_NONE || plimsoll_says(reason))
		return xstrdup(has_detail ? detail : "");
	const char *finer = bh_end_reason_name(reason);
	if (!has_detail)
		return xstrdup(finer);
	/* The engine's messages often name the reason already. */
	if (strstr(detail, finer))
		return xstrdup(detail);
	return xasprintf("%s: %s", finer, detail);
}
