/* The six hops of a call drawn as boxes that scale with the terminal, for
 * the views a class watches: presenter mode (presenter.c) and a followed
 * live call (live_call.c). The request travels right along the top arrows,
 * the answer comes back left along the bottom ones.
 *
 * What is lit comes in a struct hop_view, so a recorded step
 * (hop_view_of_step, the one place that reads the scenario model's hops)
 * and a live call (what the daemon said) draw alike. Lit boxes and arrows
 * are bold and heavy (UTF-8) or drawn with '#' and '=' (ASCII, LC_ALL=C),
 * so monochrome and the saved screens show them without colour. */
#ifndef BH_UI_HOP_DIAGRAM_H
#define BH_UI_HOP_DIAGRAM_H

#include "app.h"
#include "scenario.h"

#include <stdbool.h>

struct hop_view {
	bool lit[SCENARIO_HOP_COUNT];
	bool out[SCENARIO_HOP_COUNT - 1];  /* the request's arrow from hop h to h+1 */
	bool back[SCENARIO_HOP_COUNT - 1]; /* the answer's arrow from hop h+1 to h */
	enum scenario_hop stopped;         /* the hop that refused it, or NONE */
	bool warn;                         /* the stopped hop is a "may have run", not a refusal */
	bool unseen[SCENARIO_HOP_COUNT];   /* drawn dashed: this view cannot see that hop */
	char mark[SCENARIO_HOP_COUNT][40]; /* under the label: "1", "STOPPED HERE", "running" */
};

/* A recorded step's hops: lit in the recorded order (numbered), the
 * request's arrows between neighbours lit in turn, the answer's back from
 * the last lit hop (or from the one that refused) once the call came back. */
void hop_view_of_step(const struct scenario_step *st, struct hop_view *hv);

/* Rows the diagram takes in a space of avail rows (5 at least, up to 17). */
int hop_diagram_rows(int avail);
/* Draws it in rows y .. y+rows-1, centred across the screen's width. */
void hop_diagram_draw(const struct app *a, const struct hop_view *hv, int y, int rows);

/* Word-wrapped text (newlines kept) at (y, x), at most w wide and rows
 * high, a line every spacing rows (2: set apart, as on a slide); the last
 * line ends in an ellipsis when more did not fit. Returns the rows used. */
int hop_text(int y, int x, int w, int rows, int spacing, int attr, const char *text);
/* "step 3/8 [#####.....]" across w columns at (y, x). */
void hop_progress(const struct app *a, int y, int x, int w, size_t at, size_t n);

#endif
