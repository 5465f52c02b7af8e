/* The init's side of its channel (src/init): the frame reader over a pipe
 * (u32 length | type | payload, read incrementally) and the cell request's
 * parser, fed whatever bytes a broken or hostile engine-side writer could
 * put on the channel. */
#include "cell_parse.h"
#include "frame.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The payload parser alone, on the raw bytes. */
	struct cell_req rq;
	bh_parse_cell(data, size, &rq);

	/* Then the whole stream through a pipe, as the init reads it. */
	if (size > 60000)
		return 0; /* stay within the pipe's buffer: nothing here blocks */
	int p[2];
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		abort();
	fcntl(p[1], F_SETPIPE_SZ, 1 << 16);
	if (size && write(p[1], data, size) != (ssize_t)size)
		abort();
	close(p[1]);
	struct bh_reader r = {0};
	for (int guard = 0; guard < 100000; guard++) {
		int got = bh_reader_step(&r, p[0]);
		if (got == BH_READ_FRAME) {
			uint8_t type;
			size_t len;
			uint8_t *payload = bh_reader_take(&r, &type, &len);
			if (!payload)
				abort(); /* documented: never NULL for a complete frame */
			bh_parse_cell(payload, len, &rq);
			free(payload);
			continue;
		}
		break; /* EOF, AGAIN on a closed pipe cannot happen, or an error */
	}
	bh_reader_free(&r);
	close(p[0]);
	return 0;
}
