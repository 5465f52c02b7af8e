/* Dependencies point one way, cli -> (ui | daemon | client) -> wire -> engine:
 * the engine knows nothing above it; the init knows nothing of the engine but
 * the contract they share (src/proto) and the base (src/base). */
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

/* The "X.h" a C file includes, one a line. */
#define INCLUDED "sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p'"

/* Each project header a folder's files include that is in none of the
 * folders it may use: "file: header" lines. */
static char *includes_outside(const char *folder, const char *allowed)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "cd '" BH_SOURCE_DIR "' && for f in %s/*.[ch]; do " INCLUDED " \"$f\" |"
		 "  while read -r h; do ok=; for d in %s; do [ -e \"$d/$h\" ] && ok=1; done;"
		 "    [ -n \"$ok\" ] || echo \"$f: $h\"; done; done",
		 folder, allowed);
	return run(cmd);
}

Test(layering, the_init_includes_nothing_from_the_engine)
{
	/* bulkhead-init is PID 1 inside the sandbox: it shares the contract
	 * (src/proto) and the base helpers with the engine, nothing else. */
	char *hits = includes_outside("src/init", "src/init src/proto src/base");
	cr_assert_str_empty(hits, "src/init includes what is not init's, proto's or base's:\n%s",
			    hits);
}

Test(layering, the_contract_and_the_base_depend_on_nothing_else)
{
	char *hits = includes_outside("src/proto", "src/proto src/base");
	cr_assert_str_empty(hits, "src/proto includes:\n%s", hits);
	hits = includes_outside("src/base", "src/base");
	cr_assert_str_empty(hits, "src/base includes:\n%s", hits);
	/* Nothing but libc, so the static init can link them. */
	hits = run("cd '" BH_SOURCE_DIR "' && grep -hE '#include[[:space:]]*<' src/proto/*.[ch] "
		   "src/base/*.[ch] | grep -E '(cjson|openssl|sqlite|curl|microhttpd|curses)'"
		   " || true");
	cr_assert_str_empty(hits, "src/proto or src/base need a library:\n%s", hits);
}

Test(layering, the_engines_private_headers_stay_in_the_engine)
{
	/* store.h is still read by `bulkhead records` and the bench (the public
	 * history API is to replace it there). */
	char *hits = run("cd '" BH_SOURCE_DIR "' && grep -rlE '#include[[:space:]]*\"(engine_priv|"
			 "internal|chan_check|util|state_dir|store_files|store_untrusted)\\.h\"' "
			 "src ui bench | grep -v '^src/engine/' || true");
	cr_assert_str_empty(hits, "files outside src/engine including its private headers:\n%s",
			    hits);
}
