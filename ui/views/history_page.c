#include "history_page.h"

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
	snprintf(sub, n, "%s%s(older: before #%lld)", p->sub, *p->sub ? " " : "",
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
