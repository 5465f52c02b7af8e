#include "history_page.h"
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ui_page history_page_request(const struct history_page *p)
{
	return (struct ui_page){.newest = true,
				.before = p->depth ? p->before[p->depth - 1] : 0,
				.limit = HISTORY_PAGE_ROWS};
}

void history_page_loaded(struct history_page *p, int64_t first_id, size_t rows)
{
	p->first_id = first_id;
	p->rows = rows;
}

bool history_page_older(struct history_page *p)
{
	/* A short page holds the oldest row there is. */
	if (p->rows < HISTORY_PAGE_ROWS || p->first_id <= 1)
		return false;
	if (p->depth == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->before = realloc(p->before, p->cap * sizeof *p->before);
		if (!p->before)
			abort();
	}
	p->before[p->depth++] = p->first_id;
	p->jump = 1;
	return true;
}

bool history_page_newer(struct history_page *p)
{
	if (!p->depth)
		return false;
	p->depth--;
	/* Back at the newest: its last row, and the tail is followed again. */
	p->jump = p->depth ? -1 : 1;
	return true;
}

void history_page_title(struct history_page *p, char *sub, size_t n)
{
	if (!p->depth) {
		if (strstr(sub, "(older: before #")) {
			snprintf(sub, n, "%s", p->sub);
			p->sub[0] = '\0';
		}
		return;
	}
	if (!strstr(sub, "(older: before #"))
		snprintf(p->sub, sizeof p->sub, "%s", sub);
	/* The title cut so the page's place always shows (a view's sub is 160
	 * bytes; the place at most 40). */
	snprintf(sub, n, "%.100s%s(older: before #%lld)", p->sub, *p->sub ? " " : "",
		 (long long)p->before[p->depth - 1]);
}

void history_page_select(struct history_page *p, size_t *sel, size_t *top, size_t nshown,
			 bool at_end)
{
	if (!nshown)
		return;
	if (p->jump)
		*top = 0; /* the drawing scrolls from the top to the selection */
	if (p->jump > 0 || (!p->jump && !p->depth && at_end))
		*sel = nshown - 1;
	else if (p->jump < 0)
		*sel = 0;
	p->jump = 0;
}

void history_page_free(struct history_page *p)
{
	free(p->before);
	*p = (struct history_page){0};
}

struct ui_page history_page_load(struct view *v)
{
	if (!v->priv) {
		v->priv = calloc(1, sizeof(struct history_page));
		if (!v->priv)
			abort();
	}
	v->loading++;
	return history_page_request(v->priv);
}

struct history_page *history_page_arrived(struct view *v, int64_t first_id, size_t rows,
					  char *keep, size_t n)
{
	struct history_page *p = v->priv;
	history_page_loaded(p, first_id, rows);
	history_page_title(p, v->sub, sizeof v->sub);
	const struct trow *sel = table_selected(&v->t);
	snprintf(keep, n, "%s", sel ? sel->key : "");
	return p;
}

void history_page_turn(struct app *a, struct view *v, bool older, const char *what,
		       void (*load)(struct app *, struct view *))
{
	struct history_page *p = v->priv;
	if (v->loading > 0) /* the page shown is still coming: turn from it once it is here */
		return;
	if (older ? history_page_older(p) : history_page_newer(p))
		load(a, v);
	else if (older)
		app_flash(a, C_INFO, "no older %s", what);
	else
		app_flash(a, C_INFO, "these are the newest %s", what);
}

void history_page_done(struct view *v)
{
	if (v->priv)
		history_page_free(v->priv);
	free(v->priv);
}
