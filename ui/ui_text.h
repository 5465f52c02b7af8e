/* Text a sandbox chose (a process's command, a file's name or content) as
 * the console draws it: the bytes a terminal acts on are shown, not sent, in
 * the CLI's notation (src/cli/cli_out.h): C0 controls and DEL as \xHH, a
 * byte outside valid UTF-8 as \xHH, C1 controls (U+0080..U+009F) as \u00HH;
 * valid UTF-8 text as it is. No curses here. */
#ifndef BH_UI_TEXT_H
#define BH_UI_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* n bytes of in into out (cap bytes with the NUL, cut at a whole escape);
 * keep_newlines: '\n' stays a line break (a file's text), else escaped. */
void ui_text_safe(char *out, size_t cap, const void *in, size_t n, bool keep_newlines);
/* Whether n bytes look like text: valid UTF-8, no NUL, and control bytes
 * (but \n, \r, \t, \f) at most one in ten (a binary file is shown as a
 * hex dump instead). */
bool ui_text_is_text(const void *in, size_t n);

#endif
