/* cJSON's constructors checked (a loop owner has no sane way on without
 * memory, as in the engine) and the one way a refusal is filled in. */
#include "wire_internal.h"

#include <stdio.h>
#include <string.h>

void *wire_check_alloc(void *p)
{
	if (!p)
		abort();
	return p;
}

static int vfail(struct wire_status *st, enum wire_code code, enum wire_refusal reason,
		 const char *fmt, va_list ap)
{
	if (st) {
		st->code = code;
		st->reason = reason;
		vsnprintf(st->msg, sizeof st->msg, fmt, ap);
	}
	return -1;
}

int wire_fail(struct wire_status *st, enum wire_code code, enum wire_refusal reason,
	      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(st, code, reason, fmt, ap);
	va_end(ap);
	return -1;
}

int jr_fail(const struct jr *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(r->st, r->code, r->reason, fmt, ap);
	va_end(ap);
	return -1;
}

const char *wire_quote(char out[64], const char *s, size_t n)
{
	size_t o = 0;
	out[o++] = '"';
	for (size_t i = 0; i < n && i < 40; i++) {
		unsigned char c = (unsigned char)s[i];
		out[o++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
	}
	out[o++] = '"';
	if (n > 40) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}
