/* `?`: every binding, generated from the one table — the view's own first,
 * then the global ones. Under --readonly, what acts is listed as off. */
#include "app.h"

#include <stdio.h>
#include <string.h>

static const char *const headers[] = {"KEY", "WHERE", "WHAT"};
/* KEY fits the longest label, "l/right/space". */
static const int widths[] = {13, 10, 0};

static void load(struct app *a, struct view *v)
{
	table_clear(&v->t);
	snprintf(v->sub, sizeof v->sub, "(%.100s)", *v->arg ? v->arg : "all");
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < ui_n_bindings; i++) {
			const struct binding *b = &ui_bindings[i];
			bool here = *v->arg && !strcmp(b->view, v->arg);
			bool global = !*b->view;
			bool other = !here && !global;
			if ((pass == 0 && !here) || (pass == 1 && !global) || (pass == 2 && !other))
				continue;
			bool off = (b->flags & ACTS) && !app_can_act(a, true);
			struct trow *r = table_add(&v->t, b->label, off ? C_DIM : C_NORMAL);
			table_cell(r, 0, "%s", b->label);
			table_cell(r, 1, "%s", *b->view ? b->view : "anywhere");
			table_cell(r, 2, "%s%s", b->help, off ? " (off: read-only)" : "");
		}
	table_index(&v->t, v->filter, NULL);
}

const struct view_ops view_help = {
	.name = "help",
	.title = "Help",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.sourceless = true,
};
