/* Colours by meaning, not by view: a state is green, yellow or red
 * everywhere. NO_COLOR, or a terminal without colours, gives monochrome
 * (bold and reverse still mark the header and the selection). */
#include "app.h"

#include <curses.h>
#include <stdlib.h>

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

/* The rows carry the operator API's words; one this console does not know
 * (a newer daemon's) is drawn plain. */
enum ui_color theme_for_state(const char *name)
{
	enum bh_session_state st;
	if (bh_session_state_parse(name, &st) < 0)
		return C_NORMAL;
	switch (st) {
	case BH_SESSION_READY:
		return C_GOOD;
	case BH_SESSION_WAITING:
	case BH_SESSION_OPENING:
	case BH_SESSION_BUSY:
	case BH_SESSION_PAUSING:
	case BH_SESSION_HIBERNATING:
	case BH_SESSION_WAKING:
		return C_WARN;
	case BH_SESSION_PAUSED:
	case BH_SESSION_HIBERNATED:
		return C_CALM;
	case BH_SESSION_ENDED:
		return C_DIM;
	}
	return C_NORMAL;
}
