/* Connect errors: {"code", "message", "details":[{"type","value"}]}. The
 * details are what a plimsoll client acts on: NotDispatched says nothing ran
 * (the only safe automatic retry), SessionEnded says the session is gone,
 * UnansweredCall carries the version-3 record of a call that may have run.
 * Types are written as plimsoll's clients compare them (the bare message
 * name: the TypeScript client matches it exactly) and values as Connect's
 * spec writes them (base64 without padding); both are read liberally. */
#include "wire_internal.h"

#include <string.h>

char *wire_error_json(enum wire_code code, const char *message, const struct wire_detail *details,
		      size_t n_details)
{
	/* An error always has a code, and "ok" is not one. */
	if (code == WIRE_OK || (unsigned)code >= WIRE_CODE_COUNT)
		code = WIRE_UNKNOWN;
	cJSON *o = jw_object();
	wire_check_alloc(cJSON_AddStringToObject(o, "code", wire_code_name(code)));
	jw_string(o, "message", message);
	if (n_details) {
		cJSON *arr = wire_check_alloc(cJSON_CreateArray());
		for (size_t i = 0; i < n_details; i++) {
			cJSON *d = jw_object();
			cleanup_free char *b64 = wire_base64_encode(details[i].value, details[i].len, false);
			wire_check_alloc(cJSON_AddStringToObject(d, "type", details[i].type));
			wire_check_alloc(cJSON_AddStringToObject(d, "value", b64));
			cJSON_AddItemToArray(arr, d);
		}
		cJSON_AddItemToObject(o, "details", arr);
	}
	return jw_print(o);
}

char *wire_encode_error(const struct wire_error *e)
{
	struct wire_bytes bytes[3] = {0};
	struct wire_detail details[3];
	size_t n = 0;
	if (e->not_dispatched) {
		wire_pb_encode_not_dispatched(e->reason, &bytes[n]);
		details[n] = (struct wire_detail){WIRE_TYPE_NOT_DISPATCHED, bytes[n].data, bytes[n].len};
		n++;
	}
	if (e->session_ended) {
		wire_pb_encode_session_ended(e->end, e->end_detail, &bytes[n]);
		details[n] = (struct wire_detail){WIRE_TYPE_SESSION_ENDED, bytes[n].data, bytes[n].len};
		n++;
	}
	if (e->unanswered) {
		wire_pb_encode_unanswered_call(&e->record, &bytes[n]);
		details[n] = (struct wire_detail){WIRE_TYPE_UNANSWERED_CALL, bytes[n].data, bytes[n].len};
		n++;
	}
	char *out = wire_error_json(e->code, e->message, details, n);
	for (size_t i = 0; i < n; i++)
		free(bytes[i].data);
	return out;
}

void wire_error_free(struct wire_error *e)
{
	if (!e)
		return;
	free((char *)e->message);
	free((char *)e->end_detail);
	if (e->unanswered)
		wire_record_free(&e->record);
	memset(e, 0, sizeof *e);
}

/* One detail: its type (any "…/" prefix dropped) picks the decoder. The first
 * detail of each type counts; one that does not decode states nothing. */
static void read_detail(const cJSON *d, struct wire_error *out)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(d, "type");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(d, "value");
	if (!cJSON_IsString(type) || !cJSON_IsString(value))
		return;
	const char *name = strrchr(type->valuestring, '/');
	name = name ? name + 1 : type->valuestring;
	cleanup_free uint8_t *raw = NULL;
	size_t n = 0;
	if (wire_base64_decode(value->valuestring, strlen(value->valuestring), &raw, &n) < 0)
		return;
	if (!strcmp(name, WIRE_TYPE_NOT_DISPATCHED) && !out->not_dispatched) {
		enum wire_refusal reason;
		if (wire_pb_decode_not_dispatched(raw, n, &reason) == 0) {
			out->not_dispatched = true;
			out->reason = reason;
		}
	} else if (!strcmp(name, WIRE_TYPE_SESSION_ENDED) && !out->session_ended) {
		enum wire_session_end end;
		char *detail = NULL;
		if (wire_pb_decode_session_ended(raw, n, &end, &detail) == 0) {
			out->session_ended = true;
			/* The detail itself says the session ended: unspecified is not open. */
			out->end = end == WIRE_END_OPEN ? WIRE_END_UNKNOWN : end;
			free((char *)out->end_detail);
			out->end_detail = detail;
		}
	} else if (!strcmp(name, WIRE_TYPE_UNANSWERED_CALL) && !out->unanswered) {
		bool has = false;
		struct bh_record rec;
		if (wire_pb_decode_unanswered_call(raw, n, &rec, &has) == 0) {
			if (has) {
				out->record = rec;
				out->unanswered = true;
			} else {
				wire_record_free(&rec);
			}
		}
	}
}

void wire_decode_error(int http_status, const char *body, size_t len, struct wire_error *out)
{
	memset(out, 0, sizeof *out);
	out->code = wire_code_from_http_status(http_status);
	out->end_detail = xstrdup("");
	cleanup_cjson cJSON *root = NULL;
	cleanup_free char *why = NULL;
	if (wire_parse_body(body, len, &root, &why) < 0) {
		out->message = xasprintf("HTTP %d", http_status);
		return;
	}
	/* A code outside Connect's set is "unknown"; an absent one is the
	 * status's. */
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(root, "code");
	if (cJSON_IsString(code) && wire_code_parse(code->valuestring, &out->code) < 0)
		out->code = WIRE_UNKNOWN;
	const cJSON *message = cJSON_GetObjectItemCaseSensitive(root, "message");
	if (cJSON_IsString(message) && *message->valuestring)
		out->message = xstrdup(message->valuestring);
	else
		out->message = xasprintf("HTTP %d", http_status);
	const cJSON *details = cJSON_GetObjectItemCaseSensitive(root, "details");
	if (cJSON_IsArray(details)) {
		for (const cJSON *d = details->child; d; d = d->next)
			if (cJSON_IsObject(d))
				read_detail(d, out);
	}
	/* A call refused before it ran has no record: a mark and a record
	 * together would contradict each other, and the mark wins. */
	if (out->not_dispatched && out->unanswered) {
		wire_record_free(&out->record);
		out->unanswered = false;
	}
}

void wire_error_from_status(const struct wire_status *st, struct wire_error *out)
{
	memset(out, 0, sizeof *out);
	out->code = st->code;
	out->message = xstrdup(st->msg);
	out->not_dispatched = st->reason != WIRE_REFUSAL_UNSPECIFIED;
	out->reason = st->reason;
}

/* The code a refusal is answered with (plimsoll's sandboxErrCode): a bad
 * request is invalid_argument, a floor or software the daemon cannot meet is
 * failed_precondition, a full daemon is resource_exhausted. */
static enum wire_code refusal_code(enum bh_refusal r)
{
	switch (r) {
	case BH_REFUSAL_PERMISSION:
		return WIRE_PERMISSION_DENIED;
	case BH_REFUSAL_PROTOCOL:
	case BH_REFUSAL_UNSUPPORTED:
		return WIRE_UNIMPLEMENTED;
	case BH_REFUSAL_ISOLATION:
	case BH_REFUSAL_ENVIRONMENT:
		return WIRE_FAILED_PRECONDITION;
	case BH_REFUSAL_CAPACITY:
		return WIRE_RESOURCE_EXHAUSTED;
	case BH_REFUSAL_REQUEST:
	case BH_REFUSAL_NONE:
		break;
	}
	return WIRE_INVALID_ARGUMENT;
}

/* Errors after which the code may have run carry no mark. The engine's
 * backstop deadline is deadline_exceeded; a sandbox that died or broke its
 * channel is the record's own code (unknown when there is none); a shutting
 * down or locked engine is unavailable; a failed system call or runtime is
 * internal. */
static enum wire_code failure_code(const bh_error *err, const struct bh_record *rec)
{
	enum wire_code code;
	if (rec && rec->unanswered && wire_code_parse(rec->unanswered, &code) == 0)
		return code;
	switch (err->code) {
	case BH_E_TIMEOUT:
		return WIRE_DEADLINE_EXCEEDED;
	case BH_E_SANDBOX:
		return WIRE_UNKNOWN;
	case BH_E_CLOSED:
	case BH_E_LOCKED:
		return WIRE_UNAVAILABLE;
	default:
		return WIRE_INTERNAL;
	}
}

void wire_error_from_bh(const bh_error *err, const struct bh_record *unanswered,
			struct wire_error *out)
{
	memset(out, 0, sizeof *out);
	out->message = xstrdup(err->msg);
	if (err->session_end) {
		out->session_ended = true;
		out->end = wire_session_end_of(err->session_end);
		out->end_detail = wire_session_end_detail(err->session_end, err->msg);
	}
	switch (err->code) {
	case BH_E_NOT_DISPATCHED:
		out->not_dispatched = true;
		out->reason = wire_refusal_of(err->refusal);
		/* A call on an ended session is failed_precondition; on a session
		 * this caller does not have, not_found (the same for unknown and
		 * foreign ids). */
		if (out->session_ended)
			out->code = out->end == WIRE_END_NOT_FOUND ? WIRE_NOT_FOUND
								   : WIRE_FAILED_PRECONDITION;
		else
			out->code = refusal_code(err->refusal);
		return;
	case BH_E_INVALID:
		/* The engine refuses bad arguments before anything starts. */
		out->code = WIRE_INVALID_ARGUMENT;
		out->not_dispatched = true;
		out->reason = WIRE_REFUSAL_REQUEST;
		return;
	default:
		out->code = failure_code(err, unanswered);
		if (unanswered && unanswered->version == 3) {
			wire_record_copy(&out->record, unanswered);
			out->unanswered = true;
		}
		return;
	}
}
