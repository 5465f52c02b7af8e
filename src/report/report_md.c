/* A Markdown table cell's text (report.h): one definition, for the report
 * and the fuzz target that feeds it any bytes (fuzz_output_escape). */
#include "report.h"

#include <string.h>

void bh_report_md_cell(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		unsigned char c = *p;
		if (c == '\n' || c == '\r')
			fputc(' ', f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (strchr("\\|`*_[]()<>!#~&", c))
			fprintf(f, "\\%c", c);
		else
			fputc(c, f);
	}
}
