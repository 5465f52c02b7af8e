/* inflight: the one reap of the findings chosen in :leaks (leaks_reap.c). */
#ifndef BH_UI_LEAKS_REAP_H
#define BH_UI_LEAKS_REAP_H

#include "app.h"

/* Shows the dry-run preview of what reaping these findings removes, asks
 * [y/N], and on y reaps them through the source (reap_chosen). */
void leaks_reap(struct app *a, const struct bh_leak *chosen, size_t n);
extern const struct view_ops view_reap_preview;

#endif
