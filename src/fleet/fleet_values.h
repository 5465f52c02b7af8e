/* The fleet bucket's values: small versioned JSON documents ("v":1), one
 * encoder and one strict decoder each. Everything in the bucket is another
 * machine's word: a decoder accepts exactly what an encoder writes (every
 * field present, of its type and range, nothing unknown) and refuses
 * anything else with a why, so the caller skips it and counts it. No
 * decoder echoes a refused value at length. The decoders are fuzzed
 * (tests/fuzz/fuzz_fleet_values.c): an accepted value encodes back to a
 * value that decodes to the same thing. */
#ifndef BH_FLEET_VALUES_H
#define BH_FLEET_VALUES_H

#include "fleet.h"

#include <stdbool.h>
#include <stddef.h>

#define FLEET_VALUE_VERSION 1
#define FLEET_VALUE_MAX 16384u /* no value of ours is near it: larger is refused unread */

/* The keys: "host.<id>", "session.<fp>", "drain.<id>". */
enum fleet_key_kind { FLEET_KEY_BAD = 0, FLEET_KEY_HOST, FLEET_KEY_SESSION, FLEET_KEY_DRAIN };
/* Which kind key is, its id or fingerprint into name (NUL-terminated). */
enum fleet_key_kind fleet_key_parse(const char *key, char name[BH_FLEET_ID_MAX + 1]);

bool fleet_id_ok(const char *id);          /* [A-Za-z0-9._-]{1,64}, not "." or ".." */
bool fleet_fingerprint_ok(const char *fp); /* 64 lowercase hex digits */
/* Text another host wrote: at most max bytes, no control characters, valid UTF-8. */
bool fleet_text_ok(const char *s, size_t max);

/* What a host's heartbeat carries beyond struct bh_fleet_host. */
struct fleet_host_value {
	struct bh_fleet_host h;   /* seen_mono_ms and gone are the reader's: not encoded */
	uint32_t heartbeat_ms;    /* its heartbeat period (how soon a new one is due) */
	uint64_t beat;            /* its heartbeat counter */
};

/* Encoders: a malloc'd NUL-terminated JSON text (the caller frees). */
char *fleet_host_encode(const struct fleet_host_value *v);
char *fleet_entry_encode(const struct bh_fleet_entry *e); /* revision is the bucket's: not encoded */
char *fleet_drain_encode(bool drain, const char *by, int64_t at_unix_ms);

/* Decoders of len bytes (not NUL-terminated): 0 and *out, or -1 with *why.
 * key_name is the name the key carried: the value must name the same. */
int fleet_host_decode(const void *data, size_t len, const char *key_name,
		      struct fleet_host_value *out, char **why);
int fleet_entry_decode(const void *data, size_t len, const char *key_name,
		       struct bh_fleet_entry *out, char **why);
int fleet_drain_decode(const void *data, size_t len, bool *drain, char **why);

/* ---- forwarded messages: NATS headers carry the metadata, the body is raw ----
 *   Bh-V: 1          Bh-Path: /plimsoll.v1.SandboxService/SessionRun (requests)
 *   Bh-From: <id>    Bh-Status: 200 (answers)      Bh-Error: why (a refused request)
 *   Bh-Header: <name>: <value>, once per HTTP header, in order */
#define FLEET_PATH_MAX 1024u
#define FLEET_HEADER_NAME_MAX 256u
#define FLEET_HEADER_VALUE_MAX 8192u
bool fleet_path_ok(const char *path);              /* "/" then printable ASCII, at most FLEET_PATH_MAX */
bool fleet_header_name_ok(const char *name);       /* an HTTP token */
bool fleet_header_value_ok(const char *value);     /* no CR, LF, NUL or other control but tab; trimmed */
/* "name: value" split in place (line is changed): 0, or -1 when it is not one header. */
int fleet_header_split(char *line, const char **name, const char **value);
/* "200": 0 and *status (100 to 599), or -1. */
int fleet_status_parse(const char *text, unsigned *status);

#endif
