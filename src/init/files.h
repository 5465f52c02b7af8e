/* The files of a CELL, written under /work by a forked helper running as
 * the sandbox user: all of them or none. */
#ifndef BH_INIT_FILES_H
#define BH_INIT_FILES_H

#include <stdint.h>

#include "frame.h"

struct files_req {
	uint64_t call_id;
	struct proto_cursor files; /* nfiles x (string path | string content) */
	uint32_t nfiles;
	const char *tag; /* random, names the temporaries */
};

/* helper_body for HK_FILES: answers ANSWER_FILES_OK or REJECTED(FILES). */
void files_body(int fd, const void *arg);

#endif
