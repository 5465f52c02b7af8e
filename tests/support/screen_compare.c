/* screen_compare.h: one definition of "this screen is the expected one",
 * with BH_TUI_UPDATE, for the three screen-test files. */
#include "screen_compare.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *read_stream(FILE *f)
{
	size_t cap = 8192, n = 0, got;
	char *b = malloc(cap);
	cr_assert_not_null(b);
	while ((got = fread(b + n, 1, cap - n - 1, f)) > 0)
		if ((n += got) + 1 >= cap) {
			b = realloc(b, cap *= 2);
			cr_assert_not_null(b);
		}
	b[n] = '\0';
	return b;
}

char *screen_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *b = read_stream(f);
	fclose(f);
	return b;
}

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

void screen_compare(const char *expected_dir, const char *name, char *got)
{
	char expected[PATH_MAX + 64];
	snprintf(expected, sizeof expected, "%s/%s.txt", expected_dir, name);
	const char *update = getenv("BH_TUI_UPDATE");
	if (update && *update) {
		FILE *f = fopen(expected, "w");
		cr_assert_not_null(f, "%s: %s", expected, strerror(errno));
		fputs(got, f);
		fclose(f);
		free(got);
		return;
	}
	char *want = screen_slurp(expected);
	cr_assert_not_null(want, "no expected screen %s (BH_TUI_UPDATE=1 writes it; review it)", expected);
	if (strcmp(want, got)) {
		char dir[PATH_MAX], actual[PATH_MAX + 64];
		snprintf(dir, sizeof dir, "%s/tui-actual", test_root());
		mkdir(dir, 0700);
		snprintf(actual, sizeof actual, "%s/%s.txt", dir, name);
		FILE *f = fopen(actual, "w");
		cr_assert_not_null(f, "%s: %s", actual, strerror(errno));
		fputs(got, f);
		fclose(f);
		char cmd[3 * PATH_MAX];
		snprintf(cmd, sizeof cmd, "diff -u '%s' '%s' 2>&1 | head -80", expected, actual);
		FILE *p = popen(cmd, "r");
		char *diff = p ? read_stream(p) : NULL;
		if (p)
			pclose(p);
		cr_assert_fail("screen %s differs (got it in %s):\n%s", name, actual,
			       diff ? diff : "(no diff)");
	}
	free(want);
	free(got);
}
