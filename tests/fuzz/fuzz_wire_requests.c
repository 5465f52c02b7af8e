/* The daemon's request decoders (src/wire): every procedure's body, as any
 * client could send it. A decoder must accept or refuse, never crash, read
 * out of bounds or leak. */
#include "wire.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct wire_status st;
	struct wire_run_request run;
	if (wire_decode_run_request(body, size, &run, &st) == 0)
		wire_run_request_free(&run);
	struct wire_session_run_request srun;
	if (wire_decode_session_run_request(body, size, &srun, &st) == 0)
		wire_session_run_request_free(&srun);
	struct wire_open_session_request open;
	if (wire_decode_open_session_request(body, size, &open, &st) == 0)
		wire_open_session_request_free(&open);
	struct wire_close_session_request close;
	if (wire_decode_close_session_request(body, size, &close, &st) == 0)
		wire_close_session_request_free(&close);
	wire_decode_describe_request(body, size, &st);
	return 0;
}
