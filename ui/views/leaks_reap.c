/* Reaping chosen findings from :leaks: a dry-run preview (each finding and
 * exactly what its reap removes, as `bulkhead gc --dry-run` prints it),
 * then [y/N], then the source's one reap (reap_chosen). leaks_reap is the
 * single entry point: a capture of evidence goes in front of it. */
#include "app.h"
#include "capture_view.h"
#include "leaks_reap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"KIND", "SANDBOX", "SESSION", "WILL REMOVE"};
static const int widths[] = {12, 20, 12, 0};

struct preview {
	struct bh_leak *chosen;
	size_t n;
};

static void fill(struct view *v)
{
	struct preview *p = v->priv;
	table_clear(&v->t);
	for (size_t i = 0; i < p->n; i++) {
		const struct bh_leak *l = &p->chosen[i];
		char key[24], what[256];
		snprintf(key, sizeof key, "%zu", i);
		bh_leak_removal(l, what, sizeof what);
		struct trow *r = table_add(&v->t, key, C_WARN);
		table_cell(r, 0, "%s", bh_leak_kind_name(l->kind));
		table_cell(r, 1, "%s", l->sandbox);
		table_cell(r, 2, "%.12s", *l->fingerprint ? l->fingerprint : "-");
		table_cell(r, 3, "%s", what);
	}
	table_index(&v->t, v->filter, NULL);
	snprintf(v->sub, sizeof v->sub, "%s",
		 v->app->src->ops->reap_chosen ? "(dry run: nothing removed yet)"
					       : "(dry run: the daemon reaps every finding at once)");
}

static void load(struct app *a, struct view *v)
{
	(void)a;
	if (v->priv) /* set just after the push */
		fill(v); /* what was chosen: the reap finds each again */
}

static void done(struct view *v)
{
	struct preview *p = v->priv;
	if (p)
		free(p->chosen);
	free(p);
}

const struct view_ops view_reap_preview = {
	.name = "reap-preview",
	.title = "Reap",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.done = done,
};

struct reaping {
	struct app *a;
	size_t asked;
	struct bh_leak *chosen; /* until captured, then reaped */
	size_t n;
};

static void reaped(void *arg, const struct bh_leak *l, size_t n, const char *err)
{
	struct reaping *r = arg;
	app_busy(r->a, "");
	if (err)
		app_flash(r->a, C_BAD, "reap: %s", err);
	else if (n < r->asked)
		app_flash(r->a, C_WARN, "reaped %zu of %zu: the others are held now, or gone", n,
			  r->asked);
	else
		app_flash(r->a, C_GOOD, "reaped %zu finding%s%s%s", n, n == 1 ? "" : "s",
			  n ? ": " : "", n ? l[0].sandbox : "");
	app_refresh(r->a);
	free(r);
}

/* The evidence is in (ok), or a finding was not captured and the flash
 * said which: then nothing is reaped. */
static void reap_captured(struct app *a, bool ok, const char *dir, void *arg)
{
	(void)dir;
	struct reaping *r = arg;
	struct bh_leak *chosen = r->chosen;
	size_t n = r->n;
	r->chosen = NULL;
	if (!ok) {
		free(r);
		free(chosen);
		return;
	}
	app_busy(a, "reaping");
	if (a->src->ops->reap_chosen)
		a->src->ops->reap_chosen(a->src, chosen, n, reaped, r);
	else
		a->src->ops->reap(a->src, reaped, r); /* the preview listed every finding */
	free(chosen);
}

static void confirmed(struct app *a, const char *text, void *arg)
{
	(void)arg;
	struct view *v = a->view;
	if (v->ops != &view_reap_preview)
		return;
	struct preview *p = v->priv;
	if (!text) {
		app_pop(a);
		app_flash(a, C_INFO, "nothing reaped");
		return;
	}
	struct reaping *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	*r = (struct reaping){.a = a, .asked = p->n};
	/* The chosen findings outlive the preview: the reap may answer later. */
	struct bh_leak *chosen = p->chosen;
	size_t n = p->n;
	p->chosen = NULL;
	p->n = 0;
	app_pop(a);
	/* A reap from the console captures first (capture_view.h): nothing is
	 * reaped that was not captured. */
	r->chosen = chosen;
	r->n = n;
	capture_all_then(a, chosen, n, reap_captured, r);
}

void leaks_reap(struct app *a, const struct bh_leak *chosen, size_t n)
{
	if (!n) {
		app_flash(a, C_INFO, "nothing to reap");
		return;
	}
	struct view *v = app_push(a, &view_reap_preview, NULL);
	struct preview *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	p->chosen = malloc(n * sizeof *chosen);
	if (!p->chosen)
		abort();
	memcpy(p->chosen, chosen, n * sizeof *chosen);
	p->n = n;
	v->priv = p;
	fill(v);
	char q[96];
	snprintf(q, sizeof q, "reap the %zu finding%s listed?", n, n == 1 ? "" : "s");
	prompt_confirm(a, q, confirmed, NULL);
}
