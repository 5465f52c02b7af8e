/* The Connect side of the wire (src/wire): an error answer (JSON whose
 * details are base64 protobuf: NotDispatched, SessionEnded, UnansweredCall)
 * and the unary answers a client decodes, as a hostile or broken daemon (or
 * a proxy between) could send them. The first byte picks the HTTP status. */
#include "wire.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int statuses[] = {200, 400, 401, 403, 404, 408, 409, 412, 429, 499, 500, 501, 503, 504};
	int status = size ? statuses[data[0] % (sizeof statuses / sizeof statuses[0])] : 500;
	const char *body = size ? (const char *)data + 1 : "";
	size_t len = size ? size - 1 : 0;

	struct wire_error e;
	wire_decode_error(status, body, len, &e);
	wire_error_free(&e);

	struct wire_status st;
	struct wire_run_response run;
	if (wire_decode_run_response(body, len, &run, &st) == 0)
		wire_run_response_free(&run);
	struct wire_session_run_response srun;
	if (wire_decode_session_run_response(body, len, &srun, &st) == 0)
		wire_session_run_response_free(&srun);
	struct wire_open_session_response open;
	if (wire_decode_open_session_response(body, len, &open, &st) == 0)
		wire_open_session_response_free(&open);
	struct wire_close_session_response close;
	if (wire_decode_close_session_response(body, len, &close, &st) == 0)
		wire_close_session_response_free(&close);

	/* The protobuf details themselves, raw. */
	enum wire_refusal reason;
	wire_pb_decode_not_dispatched((const uint8_t *)body, len, &reason);
	enum wire_session_end end;
	char *detail = NULL;
	if (wire_pb_decode_session_ended((const uint8_t *)body, len, &end, &detail) == 0)
		free(detail);
	struct bh_record rec;
	bool has = false;
	if (wire_pb_decode_unanswered_call((const uint8_t *)body, len, &rec, &has) == 0) /* has or not */
		wire_record_free(&rec);
	return 0;
}
