/* The operator API's decoders (src/wire/wire_operator*.c): every answer the
 * client and the console read, and the daemon's reading of a request, as a
 * daemon (or whatever sits between) could send them. A decoder must accept or
 * refuse, never crash, read out of bounds or leak; and what it accepts must
 * encode to bytes that decode again to the same bytes (what the daemon writes
 * is what the client reads). */
#include "wire_operator.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* encode(decode(text)) is a fixed point of decode-then-encode. */
#define ROUND_TRIP(type, decode_call, encode_call, free_call)                                      \
	do {                                                                                       \
		type first, again;                                                                 \
		struct wire_status st;                                                             \
		if ((decode_call(body, size, &first, &st)) == 0) {                                 \
			char *a = encode_call(&first);                                             \
			if ((decode_call(a, strlen(a), &again, &st)) != 0)                         \
				abort();                                                           \
			char *b = encode_call(&again);                                             \
			if (strcmp(a, b))                                                          \
				abort();                                                           \
			free(a);                                                                   \
			free(b);                                                                   \
			free_call(&again);                                                         \
			free_call(&first);                                                         \
		}                                                                                  \
	} while (0)

#define DECODE(body, size, out, st) wire_operator_decode_leaks(body, size, list, out, st)
#define ENCODE(v) wire_operator_encode_leaks(list, v)

/* ---- remote ---- */
#define LEFTOVERS_FREE(v) ((void)(v)) /* nothing owned */
#define REAP_DECODE(body, size, out, st) wire_operator_decode_reap(body, size, dry, out, st)
#define REAP_ENCODE(v) wire_operator_encode_leaks(dry ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED, v)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	ROUND_TRIP(struct wire_operator_sessions, wire_operator_decode_sessions,
		   wire_operator_encode_sessions, wire_operator_sessions_free);
	ROUND_TRIP(struct wire_operator_session, wire_operator_decode_session,
		   wire_operator_encode_session, wire_operator_session_free);
	ROUND_TRIP(struct wire_operator_closed, wire_operator_decode_closed,
		   wire_operator_encode_closed, wire_operator_closed_free);
	ROUND_TRIP(struct wire_operator_evidence, wire_operator_decode_evidence,
		   wire_operator_encode_evidence, wire_operator_evidence_free);
	ROUND_TRIP(struct wire_operator_records, wire_operator_decode_records,
		   wire_operator_encode_records, wire_operator_records_free);
	ROUND_TRIP(struct wire_operator_events, wire_operator_decode_events,
		   wire_operator_encode_events, wire_operator_events_free);
	ROUND_TRIP(struct wire_operator_files, wire_operator_decode_files,
		   wire_operator_encode_files, wire_operator_files_free);
	ROUND_TRIP(struct wire_operator_file, wire_operator_decode_file, wire_operator_encode_file,
		   wire_operator_file_free);
	/* ---- procs ---- */
	ROUND_TRIP(struct wire_operator_processes, wire_operator_decode_processes,
		   wire_operator_encode_processes, wire_operator_processes_free);
	/* ---- usage ---- */
	ROUND_TRIP(struct wire_operator_usage, wire_operator_decode_usage, wire_operator_encode_usage,
		   wire_operator_usage_free);
	/* stream */
	ROUND_TRIP(struct wire_operator_follow, wire_operator_decode_follow,
		   wire_operator_encode_follow, wire_operator_follow_free);
	ROUND_TRIP(struct wire_operator_cells, wire_operator_decode_cells,
		   wire_operator_encode_cells, wire_operator_cells_free);
	/* ---- density ---- */
	ROUND_TRIP(struct wire_operator_branched, wire_operator_decode_branched,
		   wire_operator_encode_branched, wire_operator_branched_free);
	for (enum wire_operator_leak_list list = WIRE_LEAKS_FOUND; list <= WIRE_LEAKS_WOULD_REAP;
	     list++)
		ROUND_TRIP(struct wire_operator_leaks, DECODE, ENCODE, wire_operator_leaks_free);
	/* ---- approvals ---- */
	ROUND_TRIP(struct wire_operator_approvals, wire_operator_decode_approvals,
		   wire_operator_encode_approvals, wire_operator_approvals_free);
	ROUND_TRIP(struct wire_operator_decision, wire_operator_decode_decision,
		   wire_operator_encode_decision, wire_operator_decision_free);
	ROUND_TRIP(struct wire_operator_decision, wire_operator_decode_decision_request,
		   wire_operator_encode_decision, wire_operator_decision_free);
	/* ---- light ---- */
	ROUND_TRIP(struct wire_operator_overview, wire_operator_decode_overview,
		   wire_operator_encode_overview, wire_operator_overview_free);
	ROUND_TRIP(struct wire_operator_overview_request, wire_operator_decode_overview_request,
		   wire_operator_encode_overview_request, wire_operator_overview_request_free);
	/* ---- remote: the forensics procedures ---- */
	ROUND_TRIP(struct wire_operator_leftovers, wire_operator_decode_leftovers,
		   wire_operator_encode_leftovers, LEFTOVERS_FREE);
	ROUND_TRIP(struct wire_operator_intents, wire_operator_decode_intents,
		   wire_operator_encode_intents, wire_operator_intents_free);
	ROUND_TRIP(struct wire_operator_intents_request, wire_operator_decode_intents_request,
		   wire_operator_encode_intents_request, wire_operator_intents_request_free);
	ROUND_TRIP(struct wire_operator_captured, wire_operator_decode_captured,
		   wire_operator_encode_captured, wire_operator_captured_free);
	ROUND_TRIP(struct wire_operator_capture_request, wire_operator_decode_capture_request,
		   wire_operator_encode_capture_request, wire_operator_capture_request_free);
	ROUND_TRIP(struct wire_operator_hits, wire_operator_decode_hits, wire_operator_encode_hits,
		   wire_operator_hits_free);
	ROUND_TRIP(struct wire_operator_search_request, wire_operator_decode_search_request,
		   wire_operator_encode_search_request, wire_operator_search_request_free);
	ROUND_TRIP(struct wire_operator_reap_request, wire_operator_decode_reap_request,
		   wire_operator_encode_reap_request, wire_operator_reap_request_free);
	for (int dry = 0; dry < 2; dry++)
		ROUND_TRIP(struct wire_operator_leaks, REAP_DECODE, REAP_ENCODE,
			   wire_operator_leaks_free);
	struct wire_status st;
	wire_operator_decode_empty_request("Leftovers", body, size, &st);
	wire_operator_decode_done("Pause", body, size, &st);
	struct wire_operator_request req;
	if (wire_operator_decode_request(body, size, &req, &st) == 0) {
		free(wire_operator_encode_request(&req));
		wire_operator_request_free(&req);
	}
	return 0;
}
