/* A cell's bytes as screen text (cell_text.h). */
#include "cell_text.h"

#include <stdio.h>
#include <string.h>

void cell_text_duration(char *out, size_t n, int64_t us)
{
	/* Milliseconds always: one unit to compare down a column. */
	snprintf(out, n, "%.1f ms", us / 1000.0);
}

/* The length of a well-formed UTF-8 sequence at p, or 0. */
static size_t printable_utf8(const unsigned char *p, size_t left)
{
	size_t n = p[0] >= 0xf0 && p[0] < 0xf5 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	if (!n || n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* One source byte (or UTF-8 sequence) at p as screen text into out; the
 * bytes consumed. */
static size_t render(const unsigned char *p, size_t left, char out[8])
{
	if (p[0] == '\t') {
		strcpy(out, "    ");
		return 1;
	}
	if (p[0] < 0x20 || p[0] == 0x7f) {
		out[0] = '^';
		out[1] = (char)(p[0] ^ 0x40);
		out[2] = '\0';
		return 1;
	}
	if (p[0] < 0x80) {
		out[0] = (char)p[0];
		out[1] = '\0';
		return 1;
	}
	size_t n = printable_utf8(p, left);
	if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
		strcpy(out, "?"); /* U+0080..U+009F, C1 controls: one mark for the character */
		return 2;
	}
	if (!n) {
		strcpy(out, "?");
		return 1;
	}
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

/* Columns a rendered piece takes: one per character. */
static int columns(const char *piece)
{
	int c = 0;
	for (const unsigned char *p = (const unsigned char *)piece; *p; p++)
		c += (*p & 0xc0) != 0x80;
	return c;
}

void cell_text_first_line(char *out, size_t n, const char *code, size_t len)
{
	const char *nl = len ? memchr(code, '\n', len) : NULL;
	size_t first = nl ? (size_t)(nl - code) : len;
	size_t o = 0;
	for (size_t i = 0; i < first && o + 8 < n;) {
		char piece[8];
		i += render((const unsigned char *)code + i, first - i, piece);
		size_t k = strlen(piece);
		memcpy(out + o, piece, k);
		o += k;
	}
	out[o] = '\0';
	if (nl && o + 4 < n)
		strcat(out, " …");
}

size_t cell_text_lines(const char *text, size_t len, int width, bool wrap, cell_line_fn fn,
		       void *arg)
{
	char line[4096];
	size_t lines = 0, o = 0;
	int cols = 0;
	bool cut = false;
	if (width < 2)
		width = 2;
	for (size_t i = 0; i < len;) {
		if (text[i] == '\n') {
			line[o] = '\0';
			fn(arg, line);
			lines++;
			o = 0, cols = 0, cut = false;
			i++;
			continue;
		}
		char piece[8];
		i += render((const unsigned char *)text + i, len - i, piece);
		if (cut)
			continue;
		int w = columns(piece);
		if (cols + w > width || o + strlen(piece) + 4 >= sizeof line) {
			if (!wrap) {
				/* The rest of the line is not shown: say so. */
				while (o && ((unsigned char)line[o - 1] & 0xc0) == 0x80)
					o--;
				if (o)
					line[o - 1] = '>';
				cut = true;
				continue;
			}
			line[o] = '\0';
			fn(arg, line);
			lines++;
			o = 0, cols = 0;
		}
		memcpy(line + o, piece, strlen(piece));
		o += strlen(piece);
		cols += w;
	}
	if (o || (len && text[len - 1] != '\n')) {
		line[o] = '\0';
		fn(arg, line);
		lines++;
	}
	return lines;
}
