/* The cell request's payload (channel.h), parsed apart from the init's
 * state so a fuzz target (tests/fuzz) can drive it with any bytes. */
#ifndef BH_INIT_CELL_PARSE_H
#define BH_INIT_CELL_PARSE_H

#include "codec.h"

#include <stddef.h>
#include <stdint.h>

struct cell_req {
	uint64_t call_id;
	uint32_t timeout_ms;
	uint32_t output_cap;
	uint8_t lang;
	const uint8_t *code;
	uint32_t code_len;
	struct proto_cursor files;
	uint32_t nfiles;
	uint32_t relay_ms; /* 0: no OUTPUT frames */
};

/* 0, or -EPROTO for a payload that is short, long or inconsistent; on success
 * code and files point into p (files: nfiles path/content string pairs). */
int bh_parse_cell(const uint8_t *p, size_t n, struct cell_req *rq);

#endif
