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

/* The one place that reads the scenario model's hops. A step is followed
 * hop by hop along its recorded path (scenario_visit: down the pipeline,
 * then back up the answer path), then seen whole: hop_positions says how
 * many places there are to stop (each visit and the whole step, or just the
 * whole step for a recording with no path). hop_view_of_step lights the
 * first `upto` visits (numbered, the one at upto "now", the request's arrows
 * on the way down and the answer's on the way up, STOPPED HERE once the call
 * reached the hop that refused it); past the last visit, all of them.
 * hop_visit is the visit at position upto (1-based), or NULL at the whole
 * step. */
size_t hop_positions(const struct scenario_step *st);
void hop_view_of_step(const struct scenario_step *st, size_t upto, struct hop_view *hv);
const struct scenario_visit *hop_visit(const struct scenario_step *st, size_t upto);

/* "executeCode": a hop's name as the diagram shows it. */
const char *hop_label(enum scenario_hop h);

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

/* Play for the views a class watches: a move every ms[at] while playing;
 * + and - choose from ms, slowest first. */
struct pace {
	const unsigned *ms;
	size_t n, at;
	bool playing;
	uint64_t next_ms;
};
/* The next move is due a whole wait from now. */
void pace_rearm(struct pace *p);
bool pace_due(const struct pace *p, uint64_t now);
/* +: dir 1, -: dir -1; flashes the new wait. */
void pace_change(struct app *a, struct pace *p, int dir);

#endif
