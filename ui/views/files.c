/* Files (`f` on a sandbox): /work as the sandbox's own init lists it
 * (symlinks shown, never followed). enter goes into a directory or views a
 * file; backspace (or esc) goes up; the title holds the path. `s` saves the
 * selected file on this machine: the path asked for (./NAME by default),
 * at most WIRE_OPERATOR_READ_MAX bytes, never over an existing file unless
 * the operator says y, written whole under a temporary name and then put in
 * place (bh_save_file). Names are the sandbox's bytes, escaped. */
#include "app.h"
#include "files_view.h"
#include "ui_text.h"
#include "wire_operator.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const headers[] = {"NAME", "TYPE", "SIZE", "MODIFIED (UTC)"};
static const int widths[] = {0, 6, 10, 19};

struct files_view {
	char path[BH_MAX_PATH_BYTES + 1]; /* below /work; "" is /work */
	struct bh_file_entry *entries;    /* the last listing, for enter and s */
	char **names;
	size_t n;
};

static const char *type_name(char t)
{
	switch (t) {
	case 'f':
		return "file";
	case 'd':
		return "dir";
	case 'l':
		return "link";
	case 'p':
		return "fifo";
	case 's':
		return "socket";
	case 'c':
	case 'b':
		return "device";
	default:
		return "other";
	}
}

static void forget(struct files_view *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	free(p->entries);
	p->names = NULL;
	p->entries = NULL;
	p->n = 0;
}

static void title(struct view *v)
{
	struct files_view *p = v->priv;
	char shown[512];
	ui_text_safe(shown, sizeof shown, p->path, strlen(p->path), false);
	snprintf(v->sub, sizeof v->sub, "%.12s:/work%s%.140s", v->arg, *p->path ? "/" : "", shown);
}

static void loaded(void *arg, const struct bh_file_entry *rows, size_t n, bool more,
		   const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct files_view *p = v->priv;
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	forget(p);
	p->entries = xzalloc((n + 1) * sizeof *p->entries);
	p->names = xzalloc((n + 1) * sizeof *p->names);
	p->n = n;
	for (size_t i = 0; i < n; i++) {
		const struct bh_file_entry *e = &rows[i];
		char name[600], target[600], when[32], key[24];
		p->names[i] = xstrdup(e->name);
		p->entries[i] = *e;
		p->entries[i].name = p->names[i];
		p->entries[i].target = "";
		ui_text_safe(name, sizeof name, e->name, strlen(e->name), false);
		snprintf(key, sizeof key, "%zu", i);
		struct trow *r = table_add(&v->t, key, e->type == 'd' ? C_INFO : e->type == 'f'
									    ? C_NORMAL
									    : C_DIM);
		if (e->type == 'l') {
			ui_text_safe(target, sizeof target, e->target, strlen(e->target), false);
			table_cell(r, 0, "%s -> %s", name, target);
		} else {
			table_cell(r, 0, "%s%s", name, e->type == 'd' ? "/" : "");
		}
		table_cell(r, 1, "%s", type_name(e->type));
		if (e->type == 'f')
			table_cell(r, 2, "%llu", (unsigned long long)e->size);
		else
			table_cell(r, 2, "-");
		time_t t = (time_t)(e->mtime_ms / 1000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
		table_cell(r, 3, "%s", when);
	}
	title(v);
	if (more)
		snprintf(v->sub + strlen(v->sub), sizeof v->sub - strlen(v->sub), " (first %zu)", n);
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv)
		v->priv = xzalloc(sizeof(struct files_view));
	struct files_view *p = v->priv;
	title(v);
	v->loading++;
	a->src->ops->list_files(a->src, v->arg, p->path, loaded, v);
}

/* The selected entry, or NULL (flashed). */
static const struct bh_file_entry *selected(struct app *a, struct view *v)
{
	struct files_view *p = v->priv;
	const struct trow *sel = table_selected(&v->t);
	size_t i = sel ? strtoul(sel->key, NULL, 10) : 0;
	if (!sel || i >= p->n) {
		app_flash(a, C_WARN, "no file selected");
		return NULL;
	}
	return &p->entries[i];
}

/* path/name below /work, or -1 when it would pass the path limit. */
static int child_path(const struct files_view *p, const char *name, char *out, size_t n)
{
	int len = snprintf(out, n, "%s%s%s", p->path, *p->path ? "/" : "", name);
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

static void go(struct app *a, struct view *v, const char *path)
{
	struct files_view *p = v->priv;
	snprintf(p->path, sizeof p->path, "%s", path);
	table_clear(&v->t);
	forget(p);
	v->t.sel = v->t.top = 0;
	v->filter[0] = '\0';
	load(a, v);
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)row;
	struct files_view *p = v->priv;
	const struct bh_file_entry *e = selected(a, v);
	char path[BH_MAX_PATH_BYTES + 1], shown[300];
	if (!e)
		return;
	ui_text_safe(shown, sizeof shown, e->name, strlen(e->name), false);
	if (child_path(p, e->name, path, sizeof path) < 0) {
		app_flash(a, C_WARN, "%s: the path would pass %u bytes", shown, BH_MAX_PATH_BYTES);
		return;
	}
	if (e->type == 'd') {
		go(a, v, path);
	} else if (e->type == 'f') {
		char arg[64 + 1 + BH_MAX_PATH_BYTES + 1];
		if (snprintf(arg, sizeof arg, "%.64s/%s", v->arg, path) >= (int)sizeof arg) {
			app_flash(a, C_WARN, "%s: the path is too long to view here", shown);
			return;
		}
		app_push(a, &view_file, arg);
	} else {
		app_flash(a, C_WARN, "%s is a %s: only regular files are viewed (links are not followed)",
			  shown, type_name(e->type));
	}
}

/* Up one directory; false at /work itself. */
static bool up(struct app *a, struct view *v)
{
	struct files_view *p = v->priv;
	if (!*p->path)
		return false;
	char parent[sizeof p->path];
	snprintf(parent, sizeof parent, "%s", p->path);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	else
		parent[0] = '\0';
	go(a, v, parent);
	return true;
}

static enum request request(struct app *a, struct view *v, enum request r)
{
	struct files_view *p = v->priv;
	switch (r) {
	case REQ_UPDIR:
		if (!up(a, v))
			app_flash(a, C_INFO, "already at /work");
		return REQ_NONE;
	case REQ_BACK:
		if (*v->filter || !up(a, v))
			return REQ_BACK;
		return REQ_NONE;
	case REQ_SAVE: {
		const struct bh_file_entry *e = selected(a, v);
		char path[BH_MAX_PATH_BYTES + 1];
		if (!e)
			return REQ_NONE;
		if (e->type != 'f') {
			char shown[300];
			ui_text_safe(shown, sizeof shown, e->name, strlen(e->name), false);
			app_flash(a, C_WARN, "%s is a %s: only regular files are saved", shown,
				  type_name(e->type));
			return REQ_NONE;
		}
		if (child_path(p, e->name, path, sizeof path) < 0) {
			app_flash(a, C_WARN, "the path would pass %u bytes", BH_MAX_PATH_BYTES);
			return REQ_NONE;
		}
		files_save_ask(a, v->arg, path, e->name, e->size);
		return REQ_NONE;
	}
	default:
		return r;
	}
}

static void done(struct view *v)
{
	struct files_view *p = v->priv;
	if (p)
		forget(p);
	free(p);
}

const struct view_ops view_files = {
	.name = "files",
	.title = "Files",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.request = request,
	.enter = enter,
	.done = done,
};
