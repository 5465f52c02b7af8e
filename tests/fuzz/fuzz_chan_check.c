/* The engine's check of frames from a sandbox's init (src/engine/chan_check.c),
 * fed what a compromised init could send: the first bytes choose the request
 * it answers (its type and the limits it asked for), the rest is the reply's
 * type and payload. The check must never read past the bytes it was given,
 * and a reply it passes must hold what chan_check.h promises. */
#include "chan_check.h"

#include <stdlib.h>
#include <string.h>

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t requests[] = {BH_CHAN_EXEC, BH_CHAN_CELL, BH_CHAN_LIST, BH_CHAN_READ,
					   BH_CHAN_PS};
	if (size < 6)
		return 0;
	struct chan_ask ask = {
		.request = requests[data[0] % sizeof requests],
		.output_cap = le32(data + 1) % (1u << 21),
		.max_entries = le32(data + 1) % 20000u,
		.max_bytes = le32(data + 1) % (1u << 22),
	};
	uint8_t type = data[5];
	size_t len = size - 6;
	/* A copy of exactly the payload, so ASan sees any read past it. */
	uint8_t *p = malloc(len ? len : 1);
	if (!p)
		abort();
	memcpy(p, data + 6, len);
	char why[256];
	const char *bad = chan_check_reply(&ask, type, p, len, why, sizeof why);
	if (bad && (bad != why || !memchr(why, '\0', sizeof why)))
		abort();
	/* What passes keeps the promises: DONE within the cap, a LISTING
	 * within max_entries, a CONTENT within max_bytes. */
	if (!bad && type == BH_CHAN_DONE && le32(p + 36) > ask.output_cap)
		abort();
	if (!bad && type == BH_CHAN_LISTING && (le32(p) & 0x7fffffffu) > ask.max_entries)
		abort();
	if (!bad && type == BH_CHAN_CONTENT && le32(p + 9) > ask.max_bytes)
		abort();
	/* ---- procs ---- a PROCS within max_entries, each command within its
	 * limit and NUL-free, its state one of /proc's letters. */
	if (!bad && type == BH_CHAN_PROCS) {
		uint32_t n = le32(p) & 0x7fffffffu;
		size_t at = 4;
		if (n > ask.max_entries || n > BH_CHAN_PS_MAX_ENTRIES)
			abort();
		for (uint32_t i = 0; i < n; i++) {
			uint8_t state = p[at + 12];
			uint32_t cl = le32(p + at + 37);
			if (!state || !strchr(BH_CHAN_PROC_STATES, state) || cl > BH_CHAN_COMMAND_MAX ||
			    (cl && memchr(p + at + 41, 0, cl)))
				abort();
			at += BH_CHAN_PROCS_ENTRY_MIN + cl;
		}
		if (at != len)
			abort();
	}
	chan_check_ready(p, len, why, sizeof why);

	/* stream: an OUTPUT, after what the request's relay already carried
	 * (the first bytes choose both counts). What passes is a chunk inside
	 * the payload, contiguous with those counts and within the cap. */
	ask.relay_ms = data[0] & 0x80 ? 0 : 50;
	uint64_t relayed[2] = {le32(data + 1) % 70000u, data[5] * 300u};
	uint8_t stream;
	uint64_t offset;
	const uint8_t *chunk;
	uint32_t n;
	bad = chan_check_output(&ask, relayed, p, len, &stream, &offset, &chunk, &n, why, sizeof why);
	if (bad && (bad != why || !memchr(why, '\0', sizeof why)))
		abort();
	if (!bad && (ask.request != BH_CHAN_CELL || !ask.relay_ms || (stream != 1 && stream != 2) ||
		     offset != relayed[stream - 1] || n == 0 || n > BH_CHAN_OUTPUT_CHUNK_MAX ||
		     offset + n > ask.output_cap || chunk < p || chunk + n != p + len))
		abort();
	free(p);

	/* The request side: the engine's own frames, read back. */
	struct chan_ask back;
	chan_ask_of(data, size, &back);
	return 0;
}
