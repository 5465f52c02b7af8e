/* The init's side of the JSON lines it exchanges with the cell servers
 * (see cell.c for the protocol). Hand-written because the init is
 * libc-only: the encoder streams (a 16 MiB cell must not cost 96 MiB of
 * escapes) and the parser accepts exactly the reply shape and nothing
 * else. */
#ifndef BH_INIT_JSONL_H
#define BH_INIT_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
bool utf8_valid(const uint8_t *s, size_t n);

struct jsonl_out;

/* {"nonce":"<nonce>","code":"<code, escaped>"}\n. The code must stay
 * alive until the line is written; it must be valid UTF-8. */
struct jsonl_out *jsonl_request(const char *nonce, const uint8_t *code, size_t len);
/* Writes what the descriptor takes: 0 all written, 1 would block,
 * -errno on error (EPIPE: the reader is gone). */
int jsonl_write(struct jsonl_out *o, int fd);
void jsonl_free(struct jsonl_out *o);

enum jsonl_reply {
	JSONL_OK = 0,      /* status "ok" */
	JSONL_ERROR = 1,   /* status "error" */
	JSONL_BAD = -1,    /* not the reply shape */
	JSONL_STRANGER = -2, /* well-formed, but another nonce */
};

/* line: one reply without its newline. */
enum jsonl_reply jsonl_parse_reply(const char *line, size_t n, const char *nonce);

#endif
