/* Processes (`t` on a sandbox): what runs inside the sandbox now, as its
 * init read the sandbox's own /proc (the host never walks paths the sandbox
 * controls), refreshed with the view. CPU% is the share of one CPU since
 * the last refresh (the first sample: since the process started, as ps
 * shows it); users are named for the uids the sandbox's /etc/passwd holds,
 * else shown as numbers. Commands are the sandbox's bytes, escaped. */
#include "app.h"
#include "ui_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"PID", "PPID", "USER", "STATE", "CPU%", "RSS", "COMMAND"};
static const int widths[] = {7, 7, 8, 5, 6, 8, 0};

/* The last sample, for CPU% over the refresh. */
struct sample {
	uint32_t pid;
	uint64_t cpu_us, age_us;
};

struct procs_view {
	struct sample *last;
	size_t n_last;
	uint64_t last_mono_us;
};

static void fmt_bytes(char *buf, size_t n, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, n, "%lluB", (unsigned long long)b);
	else if (b < 1024u * 1024u)
		snprintf(buf, n, "%.1fK", (double)b / 1024.0);
	else if (b < 1024ull * 1024u * 1024u)
		snprintf(buf, n, "%.1fM", (double)b / (1024.0 * 1024.0));
	else
		snprintf(buf, n, "%.1fG", (double)b / (1024.0 * 1024.0 * 1024.0));
}

static double cpu_percent(const struct procs_view *p, const struct bh_process *row,
			  uint64_t now_us)
{
	for (size_t i = 0; i < p->n_last; i++) {
		const struct sample *s = &p->last[i];
		/* The same process: its pid, and no younger than it was. */
		if (s->pid != row->pid || row->age_us < s->age_us || row->cpu_us < s->cpu_us)
			continue;
		uint64_t wall = now_us - p->last_mono_us;
		return wall ? 100.0 * (double)(row->cpu_us - s->cpu_us) / (double)wall : 0.0;
	}
	return row->age_us ? 100.0 * (double)row->cpu_us / (double)row->age_us : 0.0;
}

static enum ui_color color_of(char state)
{
	return state == 'Z' || state == 'X' ? C_BAD : state == 'R' ? C_GOOD : state == 'D' ? C_WARN
												    : C_NORMAL;
}

static void loaded(void *arg, const struct bh_process *rows, size_t n, bool more, const char *err)
{
	struct view *v = arg;
	if (!view_answered(v, err))
		return;
	struct procs_view *p = v->priv;
	uint64_t now_us = now_mono_us();
	const struct trow *sel = table_selected(&v->t);
	char keep[128];
	snprintf(keep, sizeof keep, "%s", sel ? sel->key : "");
	table_clear(&v->t);
	struct sample *next = xzalloc((n + 1) * sizeof *next);
	for (size_t i = 0; i < n; i++) {
		const struct bh_process *r = &rows[i];
		char key[16], rss[16], command[1024];
		snprintf(key, sizeof key, "%u", r->pid);
		struct trow *t = table_add(&v->t, key, color_of(r->state));
		table_cell(t, 0, "%u", r->pid);
		table_cell(t, 1, "%u", r->ppid);
		const char *user = bh_sandbox_user_name(r->uid);
		if (user)
			table_cell(t, 2, "%s", user);
		else
			table_cell(t, 2, "%u", r->uid);
		table_cell(t, 3, "%c", r->state);
		table_cell(t, 4, "%.1f", cpu_percent(p, r, now_us));
		fmt_bytes(rss, sizeof rss, r->rss_bytes);
		table_cell(t, 5, "%s", rss);
		ui_text_safe(command, sizeof command, r->command, strlen(r->command), false);
		table_cell(t, 6, "%s", command);
		next[i] = (struct sample){r->pid, r->cpu_us, r->age_us};
	}
	free(p->last);
	p->last = next;
	p->n_last = n;
	p->last_mono_us = now_us;
	snprintf(v->sub, sizeof v->sub, "(sandbox %.12s%s)", v->arg, more ? "; more not shown" : "");
	table_index(&v->t, v->filter, keep);
}

static void load(struct app *a, struct view *v)
{
	if (!v->priv)
		v->priv = xzalloc(sizeof(struct procs_view));
	/* One list in flight: the sandbox answers one at a time. */
	if (v->loading)
		return;
	snprintf(v->sub, sizeof v->sub, "(sandbox %.12s)", v->arg);
	v->loading++;
	a->src->ops->processes(a->src, v->arg, loaded, v);
}

static void done(struct view *v)
{
	struct procs_view *p = v->priv;
	if (p)
		free(p->last);
	free(p);
}

const struct view_ops view_processes = {
	.name = "processes",
	.title = "Processes",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.done = done,
};
