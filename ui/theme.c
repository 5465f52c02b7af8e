/* Colours by meaning, not by view: a state is green, yellow or red
 * everywhere. NO_COLOR, or a terminal without colours, gives monochrome
 * (bold and reverse still mark the header and the selection). */
#include "app.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>

static bool colour;

void theme_init(void)
{
	const char *no = getenv("NO_COLOR");
	colour = has_colors() && !(no && *no);
	if (!colour)
		return;
	start_color();
	use_default_colors();
	init_pair(C_HEADER, COLOR_CYAN, -1);
	init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
	init_pair(C_GOOD, COLOR_GREEN, -1);
	init_pair(C_WARN, COLOR_YELLOW, -1);
	init_pair(C_BAD, COLOR_RED, -1);
	init_pair(C_CALM, COLOR_BLUE, -1);
	init_pair(C_INFO, COLOR_MAGENTA, -1);
	init_pair(C_DIM, COLOR_WHITE, -1);
}

int theme_attr(enum ui_color c)
{
	if (c == C_SELECT)
		return A_REVERSE;
	if (!colour)
		return c == C_TITLE || c == C_HEADER ? A_BOLD : c == C_BAD ? A_BOLD : A_NORMAL;
	if (c == C_NORMAL)
		return A_NORMAL;
	return COLOR_PAIR(c) | (c == C_TITLE ? A_BOLD : 0);
}

enum ui_color theme_for_state(const char *s)
{
	if (!s)
		return C_NORMAL;
	if (!strcmp(s, "ready"))
		return C_GOOD;
	if (!strcmp(s, "busy") || !strcmp(s, "opening") || !strcmp(s, "waking") ||
	    !strcmp(s, "pausing") || !strcmp(s, "hibernating") || !strcmp(s, "waiting"))
		return C_WARN;
	if (!strcmp(s, "paused") || !strcmp(s, "hibernated"))
		return C_CALM;
	if (!strcmp(s, "ended"))
		return C_DIM;
	return C_NORMAL;
}
