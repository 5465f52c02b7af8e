/* What the cells views show of a cell's bytes (stream): the code's first
 * line for a table, a duration, and output cut into screen lines with every
 * byte a terminal would act on shown as caret notation (^[ for ESC, ^? for
 * DEL), so hostile output can only be looked at. */
#ifndef BH_UI_CELL_TEXT_H
#define BH_UI_CELL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void cell_text_first_line(char *out, size_t n, const char *code, size_t len);
void cell_text_duration(char *out, size_t n, int64_t us);

/* Walks text as screen lines of at most width columns: a newline ends one,
 * a longer line is cut (wrap false: the rest is dropped, the line ends in
 * '>') or continued on the next (wrap true). fn gets each line rendered
 * (NUL-terminated, at most 4 bytes a column). Returns the lines. */
typedef void (*cell_line_fn)(void *arg, const char *line);
size_t cell_text_lines(const char *text, size_t len, int width, bool wrap, cell_line_fn fn,
		       void *arg);

#endif
