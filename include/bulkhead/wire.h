/* libbulkhead-wire: plimsoll.v1 messages <-> plain C structs (bulkhead.v1's
 * OperatorService messages are wire_operator.h's).
 *
 * Requests and answers travel as Connect unary JSON (proto3 JSON rules:
 * lowerCamelCase names, bytes as base64, 64-bit integers as strings, enums by
 * name, zero values omitted); errors are Connect error JSON whose details are
 * binary protobuf (NotDispatched, SessionEnded, UnansweredCall), base64. The
 * field numbers and enum names are plimsoll's proto/plimsoll/v1/sandbox.proto.
 *
 * The daemon decodes requests and encodes answers; the client does the
 * reverse with the same structs. Ownership follows one rule: what a decoder
 * (or a wire_*_from_* constructor) fills, it owns, and the matching _free
 * releases it (the struct itself is the caller's storage). What a caller fills
 * by hand for an encoder stays the caller's: encoders only read, and treat a
 * NULL string as "". Encoders return JSON text the caller frees with free().
 *
 * Nothing here prints. Allocation failure aborts, as in the engine.
 */
#ifndef BH_WIRE_H
#define BH_WIRE_H

#include "bulkhead.h"
#include "channel.h"
#include "record.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A cJSON tree freed when its variable goes out of scope (the wire, the
 * daemon and the client all build and read them). */
static inline void wire_cjson_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define cleanup_cjson __attribute__((cleanup(wire_cjson_deletep)))

/* The protocol number bulkhead serves (plimsoll's protocol.Number). */
#define WIRE_PROTOCOL 3

/* Request limits: plimsoll's request validation (docs/api.md, Limits). The
 * code, the files and their bytes are the engine's and the init's
 * (BH_MAX_CODE_BYTES, BH_MAX_FILES, BH_MAX_FILES_BYTES in channel.h); a path
 * is held to the same rule (path_rule.h) and to plimsoll's stricter length,
 * UTF-8 and backslash checks; JSON nesting is the daemon's own bound. */
#define WIRE_MAX_DEPTH 64
#define WIRE_MAX_PATH_BYTES 1024
#define WIRE_MAX_NAME_BYTES 64 /* trace id and owner */
#define WIRE_MAX_IDENTITIES 32
#define WIRE_MAX_IDENTITY_BYTES 256

/* ---- Connect codes ------------------------------------------------------ */

enum wire_code {
	WIRE_OK = 0,
	WIRE_CANCELED,
	WIRE_UNKNOWN,
	WIRE_INVALID_ARGUMENT,
	WIRE_DEADLINE_EXCEEDED,
	WIRE_NOT_FOUND,
	WIRE_ALREADY_EXISTS,
	WIRE_PERMISSION_DENIED,
	WIRE_RESOURCE_EXHAUSTED,
	WIRE_FAILED_PRECONDITION,
	WIRE_ABORTED,
	WIRE_OUT_OF_RANGE,
	WIRE_UNIMPLEMENTED,
	WIRE_INTERNAL,
	WIRE_UNAVAILABLE,
	WIRE_DATA_LOSS,
	WIRE_UNAUTHENTICATED,
};
#define WIRE_CODE_COUNT 17

const char *wire_code_name(enum wire_code c);          /* "failed_precondition"; "ok" for WIRE_OK */
int wire_code_parse(const char *name, enum wire_code *out); /* 0, or -1 for a name Connect lacks */
int wire_code_http_status(enum wire_code c);           /* the Connect spec's table; 200 for WIRE_OK */
enum wire_code wire_code_from_http_status(int status); /* for an answer without a Connect error body */

/* ---- NotDispatchedReason (numbers as on the wire) ---------------------- */

enum wire_refusal {
	WIRE_REFUSAL_UNSPECIFIED = 0,
	WIRE_REFUSAL_REQUEST = 1,
	WIRE_REFUSAL_PERMISSION = 2,
	WIRE_REFUSAL_PROTOCOL = 3,
	WIRE_REFUSAL_UNSUPPORTED = 4,
	WIRE_REFUSAL_ISOLATION = 5,
	WIRE_REFUSAL_CAPACITY = 6,
	WIRE_REFUSAL_ENVIRONMENT = 7,
};

const char *wire_refusal_name(enum wire_refusal r);      /* "request"; "unknown" otherwise */
const char *wire_refusal_enum_name(enum wire_refusal r); /* "NOT_DISPATCHED_REASON_REQUEST" */
enum wire_refusal wire_refusal_of(enum bh_refusal r);

/* ---- SessionEnd -------------------------------------------------------- */

enum wire_session_end {
	WIRE_END_UNKNOWN = -1, /* ended, for a reason this build has no name for */
	WIRE_END_OPEN = 0,     /* SESSION_END_UNSPECIFIED: not ended */
	WIRE_END_CLOSED,
	WIRE_END_EXPIRED,
	WIRE_END_DISK_EXCEEDED,
	WIRE_END_MAIN_PROCESS_ENDED,
	WIRE_END_BOUNDARY_FAILED,
	WIRE_END_SANDBOX_CHANGED,
	WIRE_END_SHUTDOWN,
	WIRE_END_REPLACED,
	WIRE_END_NOT_FOUND,
	WIRE_END_UNCLAIMED,
};

const char *wire_session_end_enum_name(enum wire_session_end e); /* "SESSION_END_CLOSED" */
const char *wire_session_end_name(enum wire_session_end e);      /* "closed", "open", "unknown" */
/* bulkhead's end reason (the store's vocabulary, finer than plimsoll's) ->
 * the nearest plimsoll value. BH_END_NONE -> WIRE_END_OPEN. */
enum wire_session_end wire_session_end_of(enum bh_end_reason reason);
/* The endDetail text for a reason: the engine's detail, prefixed with the
 * finer reason when the plimsoll value cannot say it ("idle_closed: ..."). */
char *wire_session_end_detail(enum bh_end_reason reason, const char *detail);

/* ---- refusals and failures ---------------------------------------------- */

/* What a decoder could not accept: the answer's Connect code, the NotDispatched
 * mark (UNSPECIFIED: no mark, the call may have run) and a message that names
 * the field and the problem. A request is refused INVALID_ARGUMENT/REQUEST
 * unless a rule says otherwise; an answer that does not parse is DATA_LOSS,
 * unmarked (a client cannot know what ran). */
struct wire_status {
	enum wire_code code;
	enum wire_refusal reason;
	char msg[512];
};

/* ---- bodies -------------------------------------------------------------- */

/* Parses a request or answer body: one JSON object, nesting at most
 * WIRE_MAX_DEPTH, no NUL character in any string (C strings would cut it).
 * The depth is checked on the bytes before cJSON sees them, so a deep
 * document never reaches its recursion. On failure *why is a sentence the
 * caller frees. */
int wire_parse_body(const char *buf, size_t len, cJSON **out, char **why);

/* The mixed-version gate, read before anything else of a request: protocol
 * absent or 0 is INVALID_ARGUMENT, any number but WIRE_PROTOCOL is
 * UNIMPLEMENTED, both marked PROTOCOL. */
int wire_check_protocol(const cJSON *msg, struct wire_status *st);

/* ---- base64 and UTF-8 ------------------------------------------------------ */

/* Standard alphabet; pad: proto3 JSON bytes are padded, Connect detail values
 * are not. */
char *wire_base64_encode(const void *data, size_t len, bool pad);
/* Standard or URL-safe, padded or not. -1 for anything else. */
int wire_base64_decode(const char *s, size_t len, uint8_t **out, size_t *out_len);
bool wire_utf8_valid(const void *s, size_t len);

/* ---- requests --------------------------------------------------------------- */

struct wire_rule {
	char *mode;           /* NULL or "": no rule; else "exact" or "approved" */
	char **identities;
	size_t n_identities;
};

/* Payloads, as bits so a body carrying several can be told from one. */
enum wire_payload {
	WIRE_PAYLOAD_JAVASCRIPT = 1u << 0,
	WIRE_PAYLOAD_PROJECT = 1u << 1,
	WIRE_PAYLOAD_MODULE = 1u << 2,
	WIRE_PAYLOAD_CELL = 1u << 3,
};

/* The fields Run, SessionRun and OpenSession share. */
struct wire_envelope {
	uint32_t protocol;
	char *minimum_isolation; /* as sent ("" or a tier name): it enters the request digest */
	enum bh_tier floor;      /* parsed; BH_TIER_UNKNOWN when none */
	char *trace_id;          /* NULL when absent or dropped */
	bool trace_id_rejected;  /* one was sent and dropped: log trace_id_rejected */
	int32_t timeout_ms;      /* as sent; <= 0 asks for the default (not on OpenSession) */
	struct wire_rule rule;
};

struct wire_javascript_run {
	char *code;
	size_t code_len;
	char *grant_profile; /* "": none */
};

struct wire_cell_run {
	enum bh_language language;
	char *code;
	size_t code_len;
	struct bh_file *files;   /* path and content owned; content is text (proto string) */
	size_t n_files;
};

/* ---- project: ProjectRun{files, steps, artifacts, grant_profile}, held
 * to plimsoll's limits (include/bulkhead-proto/project.h) ---- */
struct wire_project_run {
	struct bh_file *files;   /* as a cell's: path and content owned, text */
	size_t n_files;
	char **steps;
	size_t n_steps;
	char **artifacts;
	size_t n_artifacts;
	char *grant_profile;
};

struct wire_run_request {
	struct wire_envelope env;
	unsigned payloads;       /* every payload the body carried (wire_payload bits) */
	enum wire_payload kind;  /* the one payload; 0 when none */
	struct wire_javascript_run javascript;
	struct wire_cell_run cell;
	struct wire_project_run project; /* ---- project ---- */
};
/* ---- project: what wire_project_run holds, freed (every string malloc'd) ---- */
void wire_project_run_free(struct wire_project_run *p);

struct wire_session_run_request {
	struct wire_run_request call;
	char *session_id;
};

struct wire_open_session_request {
	struct wire_envelope env; /* timeout_ms is not part of OpenSession */
	uint32_t lifetime_ms;
	uint32_t idle_timeout_ms;
	uint32_t languages;       /* 1 << bh_language: the latency hint */
	char *owner;              /* NULL when absent */
	/* ---- profiles: bulkhead's extension (plimsoll's clients never send
	 * it): the profile the session holds from open to close ---- */
	char *grant_profile;      /* NULL when absent */
};

struct wire_close_session_request {
	uint32_t protocol;
	char *session_id;
};

/* Decoders parse the body (wire_parse_body), apply the protocol gate first,
 * then validate what bulkhead runs: code, files, paths, floor, owner, rule.
 * A payload bulkhead does not run (project, module) is UNIMPLEMENTED,
 * marked UNSUPPORTED; a cell on Run is INVALID_ARGUMENT (a cell runs only in
 * a session), and so is a cell with a grantProfile (a cell carries no
 * grant). A grant profile's name is only measured here: the daemon checks
 * it against its profiles and the caller. On failure *out is left empty. */
int wire_decode_run_request(const char *body, size_t len, struct wire_run_request *out,
			    struct wire_status *st);
int wire_decode_session_run_request(const char *body, size_t len,
				    struct wire_session_run_request *out, struct wire_status *st);
int wire_decode_open_session_request(const char *body, size_t len,
				     struct wire_open_session_request *out, struct wire_status *st);
int wire_decode_close_session_request(const char *body, size_t len,
				      struct wire_close_session_request *out, struct wire_status *st);
int wire_decode_describe_request(const char *body, size_t len, struct wire_status *st);

void wire_run_request_free(struct wire_run_request *r);
void wire_session_run_request_free(struct wire_session_run_request *r);
void wire_open_session_request_free(struct wire_open_session_request *r);
void wire_close_session_request_free(struct wire_close_session_request *r);

/* For the client. */
char *wire_encode_run_request(const struct wire_run_request *r);
char *wire_encode_session_run_request(const struct wire_session_run_request *r);
char *wire_encode_open_session_request(const struct wire_open_session_request *r);
char *wire_encode_close_session_request(const struct wire_close_session_request *r);

/* The request as the digest sees it (borrows from r). */
void wire_request_fields(const struct wire_run_request *r, struct bh_request_fields *out);

/* ---- answers ------------------------------------------------------------------ */

/* PayloadEnvironment. proto3 omits an unset message but writes a set one,
 * even when empty, as {}: present says which. */
struct wire_environment {
	bool present;
	const char *identity;
	uint32_t max_timeout_ms;
	const char *software_identity;
	const char *const *languages;
	size_t n_languages;
};

struct wire_resources {
	bool present;
	uint32_t memory_mb;
	double cpus;
	uint32_t pids;
	uint32_t disk_mb;
};

struct wire_run_response {
	const char *sandbox;
	const char *isolation;
	int64_t duration_ms;
	bool has_record;
	struct bh_record record;
	const char *software_identity;
	const char *environment;
	/* The result oneof. kind "javascript", "cell" or "project" (fields as
	 * digested; a decoded project's steps and artifacts are owned);
	 * decoding, "module" names a result bulkhead does not read, and NULL
	 * none. */
	struct bh_result_fields result;
};

struct wire_session_run_response {
	bool has_run;
	struct wire_run_response run;
	enum wire_session_end ended;
	const char *end_detail;
};

struct wire_open_session_response {
	const char *session_id;
	const char *session; /* the fingerprint */
	const char *sandbox;
	const char *isolation;
	int64_t expires_unix_ms;
	uint32_t idle_timeout_ms;
	const char *software_identity;
};

struct wire_close_session_response {
	const char *session;
	uint64_t calls;
	const char *last_record_sha256;
	enum wire_session_end ended;
};

/* ---- profiles: a profile the caller may name (bulkhead's extension to
 * DescribeResponse, "grantProfiles"; plimsoll's decoders skip it) ---- */
struct wire_grant_profile {
	const char *name;
	const char *description;
	bool allow_in_sessions;
	const char *const *origins; /* canonical "https://host:port" */
	size_t n_origins;
};

struct wire_describe_response {
	const char *sandbox;
	const char *isolation;
	bool supports_project;
	bool supports_javascript_grants;
	bool supports_project_grants;
	bool supports_module;
	uint32_t protocol;
	struct wire_environment javascript_environment;
	struct wire_environment project_environment;
	struct wire_environment module_environment;
	struct wire_resources resources;
	const char *policy;
	bool supports_sessions;
	uint32_t session_lifetime_ms;
	uint32_t session_idle_timeout_ms;
	struct wire_environment session_environment;
	uint32_t max_sessions_per_caller;
	uint32_t max_sessions_per_owner;
	/* ---- profiles: those this caller may use (held only when a
	 * supports*Grants flag says a broker runs) ---- */
	const struct wire_grant_profile *grant_profiles;
	size_t n_grant_profiles;
};

char *wire_encode_record(const struct bh_record *rec); /* a RunRecord as a JSON object */
char *wire_encode_run_response(const struct wire_run_response *r);
char *wire_encode_session_run_response(const struct wire_session_run_response *r);
char *wire_encode_open_session_response(const struct wire_open_session_response *r);
char *wire_encode_close_session_response(const struct wire_close_session_response *r);
char *wire_encode_describe_response(const struct wire_describe_response *r);

/* Decoded strings are never NULL (absent reads as ""). A body that does not
 * keep the schema is DATA_LOSS, unmarked, with the field named. */
int wire_decode_record(const char *body, size_t len, struct bh_record *out, struct wire_status *st);
int wire_decode_run_response(const char *body, size_t len, struct wire_run_response *out,
			     struct wire_status *st);
int wire_decode_session_run_response(const char *body, size_t len,
				     struct wire_session_run_response *out, struct wire_status *st);
int wire_decode_open_session_response(const char *body, size_t len,
				      struct wire_open_session_response *out, struct wire_status *st);
int wire_decode_close_session_response(const char *body, size_t len,
				       struct wire_close_session_response *out, struct wire_status *st);
int wire_decode_describe_response(const char *body, size_t len, struct wire_describe_response *out,
				  struct wire_status *st);

void wire_record_free(struct bh_record *rec); /* a decoded record's strings */
void wire_run_response_free(struct wire_run_response *r);
void wire_session_run_response_free(struct wire_session_run_response *r);
void wire_open_session_response_free(struct wire_open_session_response *r);
void wire_close_session_response_free(struct wire_close_session_response *r);
void wire_describe_response_free(struct wire_describe_response *r);

/* ---- protobuf error details ------------------------------------------------------ */

struct wire_bytes {
	uint8_t *data; /* free() it */
	size_t len;
};

#define WIRE_TYPE_NOT_DISPATCHED "plimsoll.v1.NotDispatched"
#define WIRE_TYPE_SESSION_ENDED "plimsoll.v1.SessionEnded"
#define WIRE_TYPE_UNANSWERED_CALL "plimsoll.v1.UnansweredCall"

/* Encoders write fields in number order and omit zero values, as proto3 does.
 * Decoders skip unknown fields and refuse a known field of the wrong wire
 * type, a truncated value or a string that is not UTF-8 (-1). */
void wire_pb_encode_not_dispatched(enum wire_refusal reason, struct wire_bytes *out);
int wire_pb_decode_not_dispatched(const uint8_t *p, size_t n, enum wire_refusal *reason);
void wire_pb_encode_session_ended(enum wire_session_end end, const char *detail,
				  struct wire_bytes *out);
int wire_pb_decode_session_ended(const uint8_t *p, size_t n, enum wire_session_end *end,
				 char **detail);
void wire_pb_encode_unanswered_call(const struct bh_record *rec, struct wire_bytes *out);
/* *has_record is false when the message carried none; the record's strings
 * are owned (wire_record_free). */
int wire_pb_decode_unanswered_call(const uint8_t *p, size_t n, struct bh_record *rec,
				   bool *has_record);

/* ---- Connect errors ----------------------------------------------------------------- */

struct wire_detail {
	const char *type; /* fully qualified, without type.googleapis.com/ */
	const uint8_t *value;
	size_t len;
};

/* {"code":…,"message":…,"details":[{"type":…,"value":<unpadded base64>}…]} */
char *wire_error_json(enum wire_code code, const char *message, const struct wire_detail *details,
		      size_t n_details);

struct wire_error {
	enum wire_code code;
	const char *message;
	bool not_dispatched;          /* a NotDispatched detail: nothing ran */
	enum wire_refusal reason;
	bool session_ended;           /* a SessionEnded detail */
	enum wire_session_end end;
	const char *end_detail;
	bool unanswered;              /* an UnansweredCall detail: its version-3 record */
	struct bh_record record;
};

/* Details in the order NotDispatched, SessionEnded, UnansweredCall, as set. */
char *wire_encode_error(const struct wire_error *e);
/* Never fails: a body that is not a Connect error gives the code Connect
 * infers from the HTTP status, and a detail that does not decode states
 * nothing (in particular not that nothing ran). Type names are read with or
 * without a type.googleapis.com/ prefix; values padded or not. */
void wire_decode_error(int http_status, const char *body, size_t len, struct wire_error *out);
/* A decoder's refusal, or an engine error (with the version-3 record of a
 * call that may have run, or NULL), as the answer to send. */
void wire_error_from_status(const struct wire_status *st, struct wire_error *out);
void wire_error_from_bh(const bh_error *err, const struct bh_record *unanswered,
			struct wire_error *out);
void wire_error_free(struct wire_error *e);

#endif
