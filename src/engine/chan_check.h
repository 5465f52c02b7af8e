/* The engine's check of every frame from a sandbox's init (channel.h)
 * before anything reads it: the init runs inside the sandbox, so a
 * compromised or broken one is hostile input. A reply must be of a type the
 * request allows, and every count and length in it within what the request
 * asked for and within the frame's own bytes. Nothing here allocates, so a
 * frame can be judged before it costs anything. */
#ifndef BH_CHAN_CHECK_H
#define BH_CHAN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "channel.h"

/* What one request asked of the init. */
struct chan_ask {
	uint8_t request;      /* BH_CHAN_EXEC, CELL, LIST, READ */
	uint32_t output_cap;  /* EXEC, CELL: bytes kept per stream */
	uint32_t max_entries; /* LIST, PS */
	uint32_t max_bytes;   /* READ */
	uint32_t relay_ms;    /* stream: CELL, 0: no OUTPUT frames asked for */
};

/* Read from the request frame the engine sends (type byte, then payload):
 * the limits checked are the ones on the wire. -1 for a frame that is not
 * a request with a reply, or is cut short. */
int chan_ask_of(const uint8_t *frame, size_t len, struct chan_ask *ask);

/* A reply to that request: its type and its payload after the call id.
 * NULL when it is sound; otherwise what the init sent wrong, written to why
 * (n bytes with the NUL; a sentence naming the frame and the numbers) and
 * returned. */
const char *chan_check_reply(const struct chan_ask *ask, uint8_t type, const uint8_t *p,
			     size_t len, char *why, size_t n);

/* ---- stream ---- */
/* An OUTPUT frame (its payload after the call id) of the call that asked
 * ask, with relayed[0], relayed[1] the stdout and stderr bytes relayed
 * before it: only a CELL that asked for relaying takes one, the stream is
 * 1 or 2, the chunk 1..BH_CHAN_OUTPUT_CHUNK_MAX bytes within the frame, its
 * offset exactly relayed[stream - 1] and its end within output_cap. NULL
 * and the chunk in *stream, *offset, *data, *len when sound; else why. */
const char *chan_check_output(const struct chan_ask *ask, const uint64_t relayed[2],
			      const uint8_t *p, size_t len, uint8_t *stream, uint64_t *offset,
			      const uint8_t **data, uint32_t *n, char *why, size_t wn);

/* READY: u32 version | u32 flags. */
const char *chan_check_ready(const uint8_t *p, size_t len, char *why, size_t n);

/* "DONE", "LISTING", ... ("an unknown frame" for a type it does not know). */
const char *chan_frame_name(uint8_t type);

#endif
