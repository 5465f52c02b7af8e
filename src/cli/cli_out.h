/* What the line-mode CLI prints that a sandbox, a store or a daemon chose
 * (cell output, file names, a record's fields, a daemon's answers and
 * errors) goes through here. On a terminal, the bytes a terminal acts on
 * are shown instead of sent — `ls -q`'s rule, in GNU ls's escape notation:
 *
 *   - C0 controls and DEL as \xHH (\x1b, \x07, \x7f); \n kept, and \t kept
 *     in free text (cell output, a file) where it is layout;
 *   - C1 controls: U+0080..U+009F written in UTF-8 as \u0080..\u009f, and
 *     a byte that is not part of valid UTF-8 (a raw 0x9b, a CSI on 8-bit
 *     terminals) as \xHH;
 *   - everything else, valid UTF-8 text included, as it is. A backslash is
 *     not doubled: the rendering is for a person to read safely, not to be
 *     parsed back; `--raw` (shell, run) passes cell output untouched.
 *
 * Not a terminal (a pipe, a file): every byte as it came. JSON output keeps
 * its meaning on a terminal: the same characters become \u escapes. */
#ifndef BH_CLI_OUT_H
#define BH_CLI_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_out_kind {
	CLI_OUT_TEXT,  /* free text: \n and \t kept */
	CLI_OUT_FIELD, /* one value in a line or a table: \n and \t escaped too */
};

/* Escapes n bytes of in into out (NUL-terminated, at most cap bytes
 * including the NUL; truncated at a whole escape); returns the length it
 * needed, like snprintf. */
size_t cli_escape(char *out, size_t cap, const void *in, size_t n, enum cli_out_kind kind);

/* Whether output to f is escaped: f is a terminal (--raw aside). */
bool cli_out_escapes(FILE *f);
/* --raw: cell output (and a file's content) goes to the terminal as the
 * sandbox wrote it; names and fields are still escaped. */
void cli_out_set_raw(bool raw);

/* Cell output or a file's content, to f. */
void cli_out_cell(FILE *f, const void *buf, size_t n);
/* A value for a printf %s into f: escaped when f is a terminal. The string
 * lives until 16 more calls (enough for every field of one line). */
const char *cli_out_field(FILE *f, const char *s);
/* A JSON document (cJSON's output) to f; on a terminal DEL
 * and C1 characters become \u escapes (the same JSON) and bytes that are
 * not UTF-8 become \ufffd. */
void cli_out_json(FILE *f, const char *json);

#endif
