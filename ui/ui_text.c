#include "ui_text.h"

#include "wire.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t k = p[0] < 0xc0 ? 0 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : p[0] < 0xf8 ? 4 : 0;
	return k && k <= n && wire_utf8_valid(p, k) ? k : 0;
}

void ui_text_safe(char *out, size_t cap, const void *in, size_t n, bool keep_newlines)
{
	const unsigned char *p = in;
	size_t o = 0;
	if (!cap)
		return;
	for (size_t i = 0; i < n;) {
		char esc[8];
		const char *put = esc;
		size_t len, take = 1;
		if (p[i] < 0x20 || p[i] == 0x7f) {
			if (p[i] == '\n' && keep_newlines)
				put = "\n", len = 1;
			else
				len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
		} else if (p[i] < 0x80) {
			put = (const char *)&p[i], len = 1;
		} else if ((take = utf8_len(p + i, n - i)) == 0) {
			take = 1;
			len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
		} else if (take == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0) {
			len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", p[i + 1]);
		} else {
			put = (const char *)&p[i], len = take;
		}
		if (o + len >= cap)
			break;
		memcpy(out + o, put, len);
		o += len;
		i += take;
	}
	out[o] = '\0';
}

bool ui_text_is_text(const void *in, size_t n)
{
	const unsigned char *p = in;
	size_t controls = 0;
	for (size_t i = 0; i < n;) {
		if (p[i] >= 0x80) {
			size_t k = utf8_len(p + i, n - i);
			if (!k)
				return false;
			i += k;
			continue;
		}
		if (!p[i])
			return false;
		if ((p[i] < 0x20 && !strchr("\n\r\t\f", p[i])) || p[i] == 0x7f)
			controls++;
		i++;
	}
	/* A stray escape in a log is still text (shown escaped); a file
	 * made of them is not. */
	return controls * 10 <= n;
}
