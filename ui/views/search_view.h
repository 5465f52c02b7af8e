/* Search across the stored code and output from the console: `/` in the
 * records and events views filters their rows as everywhere, and a query
 * with a search prefix (code:, stdout:, stderr:, out:, err:, cell:) opens
 * the search view on Enter: every stored cell (all sessions) whose code or
 * output holds the text, enter opening its record. */
#ifndef BH_UI_SEARCH_VIEW_H
#define BH_UI_SEARCH_VIEW_H

#include "app.h"

extern const struct view_ops view_search;
/* The `/` prompt of the records and events views. */
void search_filter_ask(struct app *a, struct view *v);

#endif
