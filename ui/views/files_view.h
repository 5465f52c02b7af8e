/* What the files views share (files.c, file.c, files_save.c). */
#ifndef BH_UI_FILES_VIEW_H
#define BH_UI_FILES_VIEW_H

#include "app.h"

/* `s`: asks where to save the file at path (below /work) of session fp,
 * then saves it (at most WIRE_OPERATOR_READ_MAX bytes, never over an
 * existing file without a y). size: the listing's, checked first. */
void files_save_ask(struct app *a, const char *fp, const char *path, const char *name,
		    uint64_t size);

#endif
