/* A body becomes a cJSON tree only after its bytes pass a scan that cJSON's
 * recursion and its C strings need: nesting at most WIRE_MAX_DEPTH (cJSON's
 * own limit is 1000 frames of recursion), no raw control character in a string
 * (JSON forbids them and cJSON would keep them), and no \u0000 (cJSON would
 * cut the string there, so "code" would silently lose its tail). Then the
 * mixed-version gate, which reads the protocol field alone. */
#include "wire_internal.h"

#include <string.h>

/* The scan walks strings and brackets only; everything else is cJSON's to
 * judge. On a refusal *why says what and, for a NUL, under which key. */
static int prescan(const char *buf, size_t len, char **why)
{
	int depth = 0;
	size_t key_start = 0, key_len = 0;   /* the member name the scan is inside */
	size_t str_start = 0, str_end = 0;   /* the last string that closed */
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (in_str) {
			if (c == '"') {
				in_str = false;
				str_end = i;
			} else if (c == '\\') {
				if (i + 5 < len && buf[i + 1] == 'u' && !memcmp(buf + i + 2, "0000", 4)) {
					char q[64];
					const char *key = key_len ? wire_quote(q, buf + key_start, key_len)
								  : "a member name";
					*why = xasprintf("the string under %s contains a NUL character "
							 "(\\u0000), which bulkhead does not accept",
							 key);
					return -1;
				}
				i++; /* the escaped character, whatever it is */
			} else if (c < 0x20) {
				*why = xasprintf("the body has a raw control character (0x%02x) inside "
						 "a string, which JSON does not allow",
						 c);
				return -1;
			}
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			str_start = i + 1;
			break;
		case ':':
			key_start = str_start;
			key_len = str_end >= str_start ? str_end - str_start : 0;
			break;
		case '{':
		case '[':
			if (++depth > WIRE_MAX_DEPTH) {
				*why = xasprintf("the body nests deeper than %d levels", WIRE_MAX_DEPTH);
				return -1;
			}
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			break;
		default:
			break;
		}
	}
	return 0;
}

int wire_parse_body(const char *buf, size_t len, cJSON **out, char **why)
{
	*out = NULL;
	*why = NULL;
	if (!buf || len == 0) {
		*why = xstrdup("the body is empty; send a JSON object ({} when there are no fields)");
		return -1;
	}
	if (prescan(buf, len, why) < 0)
		return -1;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= buf && at <= buf + len ? (size_t)(at - buf) : 0;
		*why = xasprintf("the body is not valid JSON (near byte %zu)", off);
		return -1;
	}
	for (const char *p = end; p && p < buf + len; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			cJSON_Delete(root);
			*why = xasprintf("the body has data after its JSON value (at byte %zu)",
					 (size_t)(p - buf));
			return -1;
		}
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*why = xstrdup("the body is not a JSON object");
		return -1;
	}
	*out = root;
	return 0;
}

int wire_check_protocol(const cJSON *msg, struct wire_status *st)
{
	struct jr r = {st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST};
	uint32_t protocol = 0;
	if (jr_u32(&r, msg, "", "protocol", &protocol) < 0)
		return -1;
	if (protocol == 0)
		return wire_fail(st, WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_PROTOCOL,
				 "protocol is required: this daemon serves protocol %d", WIRE_PROTOCOL);
	if (protocol != WIRE_PROTOCOL)
		return wire_fail(st, WIRE_UNIMPLEMENTED, WIRE_REFUSAL_PROTOCOL,
				 "protocol %u is not served here: this daemon serves protocol %d",
				 protocol, WIRE_PROTOCOL);
	return 0;
}
