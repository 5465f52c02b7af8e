/* What a source without an engine (a store opened read-only, no source at
 * all) answers when asked inside a live sandbox: a sentence saying why not,
 * never an empty list that would look like a sandbox with nothing in it. */
#include "source.h"

#include <stdio.h>
#include <string.h>

static const char *why_not(struct ui_source *s, const char *what, char *buf, size_t n)
{
	snprintf(buf, n, "%s need%s a live engine; %s", what, strcmp(what, "a file") ? "" : "s",
		 strcmp(s->ops->kind, "none") ? "this is a store opened read-only"
					       : "a replay opens none (run `bulkhead` for one)");
	return buf;
}

void ui_source_no_processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg)
{
	char why[160];
	(void)fp;
	cb(arg, NULL, 0, false, why_not(s, "the processes of a sandbox", why, sizeof why));
}

void ui_source_no_list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
			     void *arg)
{
	char why[160];
	(void)fp, (void)path;
	cb(arg, NULL, 0, false, why_not(s, "the files of a sandbox", why, sizeof why));
}

void ui_source_no_read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
			    ui_file_fn cb, void *arg)
{
	char why[160];
	(void)fp, (void)path, (void)max;
	cb(arg, NULL, 0, 0, false, why_not(s, "a file", why, sizeof why));
}
