/* The operator console: an ncurses dashboard over a source (the embedded
 * engine, a daemon, or a store opened read-only). */
#ifndef BH_UI_CONSOLE_H
#define BH_UI_CONSOLE_H

#include "source.h"

#include <stdbool.h>

struct ui_options {
	bool readonly;          /* no action that changes anything */
	const char *script;     /* keys and :commands from this file (headless tests) */
	bool no_display;        /* draw into memory only (with a script) */
	const char *start_view; /* "sandboxes" unless set */
	const char *start_scenario; /* with start_view "replay": this file opens in the player */
};

/* Runs until the user quits (or the script ends). Takes the source. */
int ui_console_run(struct ui_source *src, const struct ui_options *o);

#endif
