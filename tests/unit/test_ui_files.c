/* The console's report files (ui/ui_files.c), alone: a hostile value cannot
 * reshape the Markdown table, and a planted link is never written through. */
#include "report.h"
#include "ui_files.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *cells(const char *const *v, size_t n)
{
	FILE *f = tmpfile();
	cr_assert_not_null(f);
	fputs("| a | b | c |\n|---|---|---|\n", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? " | " : "| ", f);
		bh_report_md_cell(f, v[i]);
	}
	fputs(" |\n", f);
	long len = ftell(f);
	rewind(f);
	char *buf = calloc(1, (size_t)len + 1);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return buf;
}

/* The cell separators a Markdown renderer sees: `|` not after a backslash. */
static size_t pipes(const char *line)
{
	size_t n = 0;
	for (const char *p = line; *p && *p != '\n'; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		n += *p == '|';
	}
	return n;
}

/* Whether what occurs in md unescaped (its first byte not after a backslash). */
static bool unescaped(const char *md, const char *what)
{
	for (const char *p = md; (p = strstr(p, what)); p++)
		if (p == md || p[-1] != '\\')
			return true;
	return false;
}

Test(ui_files, a_hostile_value_cannot_add_a_cell_a_row_a_link_or_an_image_to_the_report)
{
	const char *v[] = {"bh-x | injected | cells |",
			   "reason\n| fake | row | here |\r\n![t](http://attacker.example/p.png)",
			   "`code` [link](http://x) <img src=x> \x1b]0;title\x07 \\| escaped"};
	char *md = cells(v, 3);
	/* Three lines: header, rule, one row; and the row has 4 separators. */
	size_t lines = 0;
	for (const char *p = md; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 3, "the report has %zu lines:\n%s", lines, md);
	const char *row = strchr(strchr(md, '\n') + 1, '\n') + 1;
	cr_assert_eq(pipes(row), 4, "the row has %zu cell separators:\n%s", pipes(row), row);
	cr_assert(!unescaped(md, "!["), "an image survives:\n%s", md);
	cr_assert(!unescaped(md, "]("), "a link survives:\n%s", md);
	cr_assert(!unescaped(md, "<img"), "HTML survives:\n%s", md);
	cr_assert(!unescaped(md, "`"), "a code span survives:\n%s", md);
	cr_assert_null(strchr(md, '\x1b'), "a raw escape reaches the file:\n%s", md);
	cr_assert_not_null(strstr(md, "\\x1b"), "%s", md);
	free(md);
}

Test(ui_files, a_planted_link_is_not_followed_and_the_next_free_name_is_taken)
{
	char dir[] = "/tmp/bh-ui-files-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char old[4096];
	cr_assert_not_null(getcwd(old, sizeof old));
	cr_assert_eq(chdir(dir), 0);
	FILE *t = fopen("target", "w");
	fputs("precious", t);
	fclose(t);
	cr_assert_eq(symlink("target", "report.md"), 0);
	errno = 0;
	cr_assert_null(ui_create_new("report.md"), "a link was opened for writing");
	cr_assert_eq(errno, EEXIST);
	static const char *const exts[] = {"md", "json"};
	FILE *f[2];
	char names[2][256];
	cr_assert_eq(symlink("target", "report-1.json"), 0);
	cr_assert_eq(ui_create_set("report", exts, 2, f, names), 0, "%s", strerror(errno));
	cr_assert_str_eq(names[0], "report-2.md", "the set: %s %s", names[0], names[1]);
	cr_assert_str_eq(names[1], "report-2.json");
	fclose(f[0]);
	fclose(f[1]);
	cr_assert_eq(access("report-1.md", F_OK), -1, "a half-made set stays behind");
	t = fopen("target", "r");
	char got[32] = "";
	cr_assert_not_null(fgets(got, sizeof got, t));
	fclose(t);
	cr_assert_str_eq(got, "precious");
	cr_assert_eq(chdir(old), 0);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
