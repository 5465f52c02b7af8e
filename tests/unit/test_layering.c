/* Dependencies point one way, cli -> (ui | daemon | client) -> wire -> engine:
 * the engine knows nothing above it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *run(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	pclose(f);
	return buf;
}

Test(layering, engine_sources_include_no_curses_http_or_curl)
{
	char *hits = run("grep -rlE '#include[[:space:]]*[<\"](n?curses|microhttpd|curl/)' " BH_SOURCE_DIR
			 "/src/engine 2>/dev/null");
	cr_assert_str_empty(hits, "engine files including UI/HTTP headers:\n%s", hits);
}

Test(layering, engine_sources_never_print)
{
	char *hits = run("grep -rnE '\\b(printf|fprintf|puts|perror)[[:space:]]*\\(' " BH_SOURCE_DIR
			 "/src/engine 2>/dev/null | grep -v snprintf");
	cr_assert_str_empty(hits, "the engine prints:\n%s", hits);
}

Test(layering, engine_library_references_no_curses_http_or_curl_symbols)
{
	char *hits = run("nm -u '" BH_LIBBULKHEAD "' 2>/dev/null | "
			 "grep -E ' (curl_|MHD_|initscr|newterm|wgetch|endwin)' || true");
	cr_assert_str_empty(hits, "libbulkhead needs:\n%s", hits);
	char *all = run("nm -u '" BH_LIBBULKHEAD "' 2>/dev/null | wc -l");
	cr_assert_gt(atoi(all), 10, "nm could read " BH_LIBBULKHEAD);
}
