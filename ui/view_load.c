/* A view's load that failed: the error flashed, the rows kept and marked
 * stale (the title says since when and why; draw_table dims them) until a
 * load succeeds again. An attached console whose daemon died keeps showing
 * what it last knew, and says it is old. */
#include "app.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void view_load_failed(struct app *a, struct view *v, const char *err)
{
	if (!v->ops->sourceless && !strcmp(a->src->ops->kind, "none"))
		return; /* nothing behind it: draw_table says so */
	if (!err || !*err)
		err = "failed";
	bool changed = strcmp(v->stale, err) != 0;
	if (!*v->stale) {
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(v->stale_since, sizeof v->stale_since, "%H:%M:%S", &tm);
	}
	snprintf(v->stale, sizeof v->stale, "%s", err);
	if (v == a->view && (changed || !v->stale_told || a->refresh_asked)) {
		app_flash(a, C_BAD, "%s: %s", v->ops->name, err);
		v->stale_told = true;
	}
	if (v == a->view)
		a->refresh_asked = false;
}

void view_load_ok(struct view *v)
{
	/* ctrl-r said nothing yet: this answer is what it waited for. */
	if (v->app && v == v->app->view && v->app->refresh_asked) {
		app_flash(v->app, C_INFO, "refreshed");
		v->app->refresh_asked = false;
	}
	v->stale[0] = v->stale_since[0] = '\0';
	v->stale_told = false;
	v->ever_loaded = true;
}

bool view_answered(struct view *v, const char *err)
{
	if (!view_done_loading(v))
		return false;
	if (err) {
		view_load_failed(v->app, v, err);
		return false;
	}
	view_load_ok(v);
	return true;
}
