/* Paging a history view (events, records) back from its newest rows. A
 * view at the newest page follows the tail (each refresh asks for the
 * newest again); `[` goes a page back, before the oldest row shown, and
 * `]` comes forward again through the pages it went back through. */
#ifndef BH_UI_HISTORY_PAGE_H
#define BH_UI_HISTORY_PAGE_H

#include "source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTORY_PAGE_ROWS 1000

struct history_page {
	int64_t *before;  /* the cursors of the pages gone back through; */
	size_t depth, cap; /* depth 0: the newest page, following the tail */
	int64_t first_id; /* the oldest row of the page shown */
	size_t rows;      /* how many it has */
	int jump;         /* after a page turn: select the last row (1, going back) or the first (-1) */
	char sub[160];    /* the view's own subtitle, kept while a page back is shown */
};

/* The request for the page to show now. */
struct ui_page history_page_request(const struct history_page *p);
/* What arrived: the first (oldest) row's id and how many rows. */
void history_page_loaded(struct history_page *p, int64_t first_id, size_t rows);
/* One page back; false when the page shown is already the oldest. */
bool history_page_older(struct history_page *p);
/* One page forward; false when at the newest already. */
bool history_page_newer(struct history_page *p);
/* The view's subtitle: its own, then "older: before #N" when paged back. */
void history_page_title(struct history_page *p, char *sub, size_t n);
/* Where the selection goes once a page arrived (the table indexed):
 * a turned page selects its last or first row; the newest page follows
 * the tail when the selection was at the end (at_end) or there was none. */
void history_page_select(struct history_page *p, size_t *sel, size_t *top, size_t nshown,
			 bool at_end);
void history_page_free(struct history_page *p);

/* What the events and records views do alike around the above (their own
 * rows, call and selection rule stay theirs). */
struct app;
struct view;
/* The request for the view's page to show now (its paging made on the first
 * load), counted as in flight. */
struct ui_page history_page_load(struct view *v);
/* A page arrived: the paging and the view's subtitle brought up to date,
 * keep given the key of the row selected before it (to select it again). */
struct history_page *history_page_arrived(struct view *v, int64_t first_id, size_t rows,
					  char *keep, size_t n);
/* `[` (older) or `]`: the view loaded again at the page it turned to, or a
 * flash that there is none ("no older events", "these are the newest
 * events" for what = "events"). Not while the page shown is still coming. */
void history_page_turn(struct app *a, struct view *v, bool older, const char *what,
		       void (*load)(struct app *, struct view *));
/* The view's done: its paging freed. */
void history_page_done(struct view *v);

#endif
