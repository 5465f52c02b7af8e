/* What a source without an engine (a store opened read-only, no source at
 * all) answers when asked inside a live sandbox: a sentence saying why not,
 * never an empty list that would look like a sandbox with nothing in it. */
#include "source.h"

#include <string.h>

/* Short, for the flash line, after the view's name ("processes: ..."). */
static const char *why_not(struct ui_source *s)
{
	return strcmp(s->ops->kind, "none")
		       ? "needs a live engine; this is a store opened read-only"
		       : "needs a live engine; a replay opens none (run `bulkhead` for one)";
}

void ui_source_no_processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg)
{
	(void)fp;
	cb(arg, NULL, 0, false, why_not(s));
}

void ui_source_no_list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
			     void *arg)
{
	(void)fp, (void)path;
	cb(arg, NULL, 0, false, why_not(s));
}

void ui_source_no_read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
			    ui_file_fn cb, void *arg)
{
	(void)fp, (void)path, (void)max;
	cb(arg, NULL, 0, 0, false, why_not(s));
}
