/* What the CLI and the console show of others' bytes: after the CLI's
 * escaping no byte a terminal acts on is left (C0 but layout, DEL, C1 in
 * UTF-8 or raw), and a Markdown cell holds no line break and no bare |. */
#include "cli_out.h"
#include "report.h"
#include "ui_files.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_terminal_safe(const unsigned char *p, size_t n, enum cli_out_kind kind)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if (c < 0x20 && !(kind == CLI_OUT_TEXT && (c == '\n' || c == '\t')))
			abort();
		if (c == 0x7f)
			abort();
		if (c == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
			abort();
		/* A byte >= 0x80 is part of valid UTF-8 here (checked by a
		 * second pass: escaping the output again changes nothing). */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int k = 0; k < 2; k++) {
		enum cli_out_kind kind = k ? CLI_OUT_FIELD : CLI_OUT_TEXT;
		size_t need = cli_escape(NULL, 0, data, size, kind);
		char *out = malloc(need + 1);
		if (!out)
			return 0;
		if (cli_escape(out, need + 1, data, size, kind) != need || strlen(out) != need)
			abort();
		check_terminal_safe((const unsigned char *)out, need, kind);
		size_t again = cli_escape(NULL, 0, out, need, kind);
		if (again != need) /* only backslashes would differ: none are added */
			abort();
		/* A cut buffer holds whole escapes and a terminating NUL. */
		size_t cap = size % 17 + 1;
		char small[18];
		cli_escape(small, cap, data, size, kind);
		if (strlen(small) >= cap)
			abort();
		check_terminal_safe((const unsigned char *)small, strlen(small), kind);
		free(out);
	}
	char *cell = strndup((const char *)data, size);
	if (!cell)
		return 0;
	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	if (f) {
		bh_report_md_cell(f, cell);
		fclose(f);
		for (size_t i = 0; i < len; i++) {
			if (md[i] == '\n' || md[i] == '\r')
				abort();
			if (md[i] == '\\') {
				i++;
				continue;
			}
			if (md[i] == '|')
				abort();
		}
		free(md);
	}
	free(cell);
	return 0;
}
