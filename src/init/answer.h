/* What a forked helper sends back to the init: one type byte, then the
 * payload of the frame the init is to send on its behalf (call_id
 * first). The helper runs as the sandbox user, whom a live interpreter
 * could use to tamper with it, so the init relays only answers that parse
 * as the frames it expects, for the call it asked about. */
#ifndef BH_INIT_ANSWER_H
#define BH_INIT_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "init_priv.h"

/* Answer types besides the frame types: the files were written. */
#define ANSWER_FILES_OK 'K'

/* ---- child side: the answer built with the channel's codec ---- */
struct abuf {
	struct buf buf;
	bool oom; /* an append found no memory: the answer is lost */
};

void ab_u8(struct abuf *b, uint8_t v);
void ab_u32(struct abuf *b, uint32_t v);
void ab_u64(struct abuf *b, uint64_t v);
void ab_bytes(struct abuf *b, const void *p, size_t n);
void ab_str(struct abuf *b, const void *p, size_t n);
/* Sends the answer and exits the helper (FAIL ENOMEM if it could not be
 * built or would not fit one frame). */
__attribute__((noreturn)) void ab_send(int fd, struct abuf *b, uint64_t call_id);
/* FAIL (or, with type BH_CHAN_REJECTED, REJECTED for `reason`), then exit. */
__attribute__((noreturn, format(printf, 6, 7))) void
answer_error(int fd, uint8_t type, uint64_t call_id, uint32_t reason, int err,
	     const char *fmt, ...);

/* ---- init side ---- */
enum answer_verdict {
	ANSWER_QUEUED = 0,  /* a well-formed frame was queued for the engine */
	ANSWER_PLAIN = 1,   /* ANSWER_FILES_OK: nothing to relay */
	ANSWER_INVALID = 2, /* missing, malformed or not among `types` */
};

/* Checks h's answer against `types` (a string of allowed type bytes) and
 * queues it. Returns an enum answer_verdict, or -errno when a valid frame
 * could not be queued. */
int answer_relay(struct init *st, const struct helper *h, const char *types);

#endif
