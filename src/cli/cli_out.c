#include "cli_out.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool raw_cells;

/* The length of the valid UTF-8 sequence at p (at most n bytes), and its
 * code point; 0 when p does not start one (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_at(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t v;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f;
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	*cp = v;
	return len;
}

struct sink {
	char *out;
	size_t cap;
	size_t used;    /* what the whole needs (may pass cap) */
	size_t written; /* what went in: whole escapes only, NUL room kept */
	bool full;      /* one did not fit: nothing more goes in */
};

static void put(struct sink *s, const char *text, size_t n)
{
	if (!s->full && s->written + n < s->cap) {
		memcpy(s->out + s->written, text, n);
		s->written += n;
	} else {
		s->full = true;
	}
	s->used += n;
}

size_t cli_escape(char *out, size_t cap, const void *in, size_t n, enum cli_out_kind kind)
{
	const unsigned char *p = in;
	struct sink s = {.out = out, .cap = cap};
	char esc[8];
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		uint32_t cp = 0;
		size_t len;
		if (c < 0x20 || c == 0x7f) {
			bool layout = kind == CLI_OUT_TEXT && (c == '\n' || c == '\t');
			if (layout)
				put(&s, (const char *)&p[i], 1);
			else {
				snprintf(esc, sizeof esc, "\\x%02x", c);
				put(&s, esc, 4);
			}
			i++;
		} else if (c < 0x80) {
			put(&s, (const char *)&p[i], 1);
			i++;
		} else if ((len = utf8_at(p + i, n - i, &cp)) > 0) {
			if (cp <= 0x9f) {
				snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
				put(&s, esc, 6);
			} else {
				put(&s, (const char *)&p[i], len);
			}
			i += len;
		} else {
			snprintf(esc, sizeof esc, "\\x%02x", c);
			put(&s, esc, 4);
			i++;
		}
	}
	if (cap)
		out[s.written] = '\0';
	return s.used;
}

bool cli_out_escapes(FILE *f)
{
	return isatty(fileno(f)) == 1;
}

void cli_out_set_raw(bool raw)
{
	raw_cells = raw;
}

void cli_out_cell(FILE *f, const void *buf, size_t n)
{
	if (!n)
		return;
	if (raw_cells || !cli_out_escapes(f)) {
		fwrite(buf, 1, n, f);
		return;
	}
	size_t need = cli_escape(NULL, 0, buf, n, CLI_OUT_TEXT);
	char *esc = malloc(need + 1);
	if (!esc)
		abort();
	cli_escape(esc, need + 1, buf, n, CLI_OUT_TEXT);
	fwrite(esc, 1, need, f);
	free(esc);
}

const char *cli_out_field(FILE *f, const char *s)
{
	static char *slot[16];
	static size_t next;
	if (!s)
		s = "";
	if (!cli_out_escapes(f))
		return s;
	size_t n = strlen(s);
	size_t need = cli_escape(NULL, 0, s, n, CLI_OUT_FIELD);
	char **mine = &slot[next++ % 16];
	free(*mine);
	*mine = malloc(need + 1);
	if (!*mine)
		abort();
	cli_escape(*mine, need + 1, s, n, CLI_OUT_FIELD);
	return *mine;
}

void cli_out_json(FILE *f, const char *json)
{
	if (!cli_out_escapes(f)) {
		fputs(json, f);
		return;
	}
	const unsigned char *p = (const unsigned char *)json;
	size_t n = strlen(json);
	for (size_t i = 0; i < n;) {
		uint32_t cp = 0;
		size_t len;
		/* cJSON escapes C0 itself; what it passes through is DEL, C1
		 * and whatever bytes it was given. */
		if (p[i] == 0x7f) {
			fputs("\\u007f", f);
			i++;
		} else if (p[i] < 0x80) {
			fputc(p[i], f);
			i++;
		} else if ((len = utf8_at(p + i, n - i, &cp)) > 0) {
			if (cp <= 0x9f)
				fprintf(f, "\\u%04x", (unsigned)cp);
			else
				fwrite(p + i, 1, len, f);
			i += len;
		} else {
			fputs("\\ufffd", f);
			i++;
		}
	}
}
