/* Drawing text that is not ours into a fixed width: control bytes as
 * caret notation, never past the width (a line that ran past the edge
 * would wrap onto the next row), and "…" where it was cut, so a clipped
 * digest or state never looks whole (the console review's B19, B28). */
#include "app.h"

#include <curses.h>
#include <langinfo.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool utf8(void)
{
	static int known = -1;
	if (known < 0) {
		const char *cs = nl_langinfo(CODESET);
		known = cs && (!strcasecmp(cs, "UTF-8") || !strcasecmp(cs, "utf8"));
	}
	return known;
}

const char *ui_ellipsis(void)
{
	return utf8() ? "\xe2\x80\xa6" : ">";
}

void draw_clipped(int y, int x, int w, const char *s)
{
	if (w <= 0 || !s)
		return;
	char out[2048];
	size_t o = 0, fits = 0; /* fits: bytes of whole characters in w - 1 columns */
	int cols = 0;
	bool cut = false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char piece[2];
		size_t n = 1;
		int pc = 1;
		if (*p < 32 || *p == 127) {
			piece[0] = '^';
			piece[1] = *p == 127 ? '?' : (char)(*p + 64);
			n = pc = 2;
		} else {
			piece[0] = (char)*p;
			pc = (*p & 0xc0) == 0x80 ? 0 : 1; /* a continuation byte takes no column */
		}
		if (pc && cols <= w - 1)
			fits = o;
		if (cols + pc > w || o + n + 4 > sizeof out) {
			cut = true;
			break;
		}
		memcpy(out + o, piece, n);
		o += n;
		cols += pc;
	}
	if (cut) {
		if (cols <= w - 1)
			fits = o;
		o = fits;
		const char *e = ui_ellipsis();
		memcpy(out + o, e, strlen(e));
		o += strlen(e);
	}
	out[o] = '\0';
	mvaddstr(y, x, out);
}

void fmt_utc_ms(char *buf, size_t n, int64_t unix_ms)
{
	if (unix_ms <= 0) {
		snprintf(buf, n, "-");
		return;
	}
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char day[32];
	strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", day, (int)(unix_ms % 1000));
}
