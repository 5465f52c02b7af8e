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
	 * (include/bulkhead-proto) and the base helpers with the engine,
	 * nothing else. */
	char *hits = includes_outside("src/init", "src/init include/bulkhead-proto "
						  "include/bulkhead-base");
	cr_assert_str_empty(hits, "src/init includes what is not init's, proto's or base's:\n%s",
			    hits);
}

Test(layering, the_contract_and_the_base_depend_on_nothing_else)
{
	const char *proto = "include/bulkhead-proto include/bulkhead-base";
	char *hits = includes_outside("src/proto", proto);
	cr_assert_str_empty(hits, "src/proto includes:\n%s", hits);
	hits = includes_outside("include/bulkhead-proto", proto);
	cr_assert_str_empty(hits, "include/bulkhead-proto includes:\n%s", hits);
	hits = includes_outside("src/base", "include/bulkhead-base");
	cr_assert_str_empty(hits, "src/base includes:\n%s", hits);
	hits = includes_outside("include/bulkhead-base", "include/bulkhead-base");
	cr_assert_str_empty(hits, "include/bulkhead-base includes:\n%s", hits);
	/* Nothing but libc, so the static init can link them. */
	hits = run("cd '" BH_SOURCE_DIR "' && grep -hE '#include[[:space:]]*<' src/proto/*.[ch] "
		   "src/base/*.[ch] include/bulkhead-proto/*.h include/bulkhead-base/*.h | "
		   "grep -E '(cjson|openssl|sqlite|curl|microhttpd|curses)' || true");
	cr_assert_str_empty(hits, "the contract or the base need a library:\n%s", hits);
}

Test(layering, the_public_headers_include_only_public_headers)
{
	char *hits = includes_outside("include/bulkhead", "include/bulkhead include/bulkhead-proto "
							  "include/bulkhead-base");
	cr_assert_str_empty(hits, "include/bulkhead includes a private header:\n%s", hits);
}

/* Each product file outside a library's folder that includes one of the
 * headers in it (they are the library's private headers: what others may
 * use is in include/): "file: header" lines. */
static char *private_includes(const char *folder, const char *own)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "cd '" BH_SOURCE_DIR "' && for h in %s/*.h; do b=${h##*/};"
		 "  for f in $(find src ui bench include -name '*.[ch]' | grep -vE '^(%s)/'); do"
		 "    " INCLUDED " \"$f\" | grep -qxF \"$b\" && echo \"$f: $b\"; done; done; true",
		 folder, own);
	return run(cmd);
}

Test(layering, no_librarys_private_headers_are_included_outside_it)
{
	static const struct {
		const char *folder, *own;
	} libs[] = {
		{"src/engine", "src/engine"}, {"src/wire", "src/wire"},
		{"src/client", "src/client"}, {"src/daemon", "src/daemon"},
		{"src/cli", "src/cli"},       {"src/init", "src/init"},
		{"ui", "ui|ui/views"},        {"ui/views", "ui|ui/views"},
		{"bench", "bench"},
		/* ---- broker ---- */
		{"src/broker", "src/broker"}, {"src/egress", "src/egress"},
		{"src/report", "src/report"}, /* ---- report ---- */
		{"src/fleet", "src/fleet"},   /* ---- fleet ---- */
	};
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		char *hits = private_includes(libs[i].folder, libs[i].own);
		cr_assert_str_empty(hits, "files outside %s including its private headers:\n%s",
				    libs[i].folder, hits);
	}
}

Test(layering, the_bench_reaches_the_engines_insides_only_through_the_test_support_header)
{
	char *hits = includes_outside("bench", "bench include/bulkhead include/bulkhead-base");
	/* stream: the engine worker opens its engine with the test hooks (the
	 * streaming-off half of the stream phase). */
	/* fleet: the fleet bench starts its NATS cluster with the fleet
	 * tests' harness (and the engine's insides are no part of it). */
	cr_assert_str_eq(hits,
			 "bench/bench.c: engine_internals.h\n"
			 "bench/fleet_bench.c: nats_cluster.h\n"
			 "bench/worker_engine.c: engine_internals.h\n",
			 "the bench includes, beside the public headers:\n%s", hits);
}

Test(layering, no_librarys_own_folder_is_a_public_include_directory)
{
	/* Every target_include_directories(...) of the product, flattened to
	 * one line; a src/ or ui folder after PUBLIC or INTERFACE (until
	 * PRIVATE) would hand a library's private headers to its users. */
	char *hits = run(
		"cd '" BH_SOURCE_DIR "' && cat CMakeLists.txt src/*/sources.cmake ui/sources.cmake "
		"bench/sources.cmake | tr '\\n' ' ' | grep -o 'target_include_directories([^)]*)' | "
		"awk '{ m = \"\"; for (i = 1; i <= NF; i++) { t = $i; "
		"  if (t == \"PUBLIC\" || t == \"INTERFACE\") m = \"pub\"; "
		"  else if (t == \"PRIVATE\") m = \"\"; "
		"  else if (m == \"pub\" && t ~ /(^|\\/)(src|ui)(\\/|$)/) print $1 \" \" t } }'");
	cr_assert_str_empty(hits, "a library's own folder is a public include directory:\n%s", hits);
	/* The check can see: the public directories are there to be found. */
	char *pub = run("cd '" BH_SOURCE_DIR "' && grep -c 'PUBLIC include/bulkhead' CMakeLists.txt");
	cr_assert_gt(atoi(pub), 0, "no PUBLIC include/bulkhead in CMakeLists.txt");
}

Test(layering, no_two_headers_share_a_name)
{
	/* A same-named header is told apart by search order alone. */
	char *hits = run("cd '" BH_SOURCE_DIR "' && find src ui include -name '*.h' -printf '%f\\n' | "
			 "sort | uniq -d");
	cr_assert_str_empty(hits, "headers with the same name:\n%s", hits);
}

/* ---- broker: the egress broker (src/broker) and the profiles file
 * (src/egress) are libraries above the engine: the daemon and the CLI link
 * them, the engine reaches the broker only through struct bh_egress_ops. ---- */
Test(layering, the_engine_reaches_the_broker_and_the_profiles_only_through_the_contract)
{
	char *hits = run("grep -rlE '#include[[:space:]]*[<\"](broker\\.h|broker_priv\\.h|openssl/ssl\\.h)' " BH_SOURCE_DIR
			 "/src/engine 2>/dev/null");
	cr_assert_str_empty(hits, "engine files including the broker or libssl:\n%s", hits);
	hits = run("nm -u '" BH_LIBBULKHEAD "' 2>/dev/null | "
		   "grep -E ' (bh_broker_|bh_egress_profiles_|SSL_)' || true");
	cr_assert_str_empty(hits, "libbulkhead needs the broker's, the profiles' or libssl's:\n%s", hits);
}

Test(layering, the_broker_and_the_profiles_include_no_engine_private_header)
{
	const char *allowed_broker = "src/broker include/bulkhead include/bulkhead-base";
	char *hits = includes_outside("src/broker", allowed_broker);
	cr_assert_str_empty(hits, "src/broker includes:\n%s", hits);
	hits = run("cd '" BH_SOURCE_DIR "' && ls src/broker/*.c | wc -l");
	cr_assert_gt(atoi(hits), 3, "the check sees src/broker");
	/* (src/egress is the profiles' folder; the rule holds once it exists) */
	if (*run("cd '" BH_SOURCE_DIR "' && test -d src/egress && echo yes")) {
		hits = includes_outside("src/egress", "src/egress include/bulkhead include/bulkhead-base");
		cr_assert_str_empty(hits, "src/egress includes:\n%s", hits);
	}
}

/* ---- report ---- */
Test(layering, the_report_sits_below_the_console_and_the_command)
{
	/* One definition of the incident report that the console's view and
	 * `bulkhead report` both write: it uses the engine's public API and the
	 * wire's (include/bulkhead), never the console, the command, a daemon
	 * or a client, and no engine-private header. */
	char *hits = includes_outside("src/report", "src/report include/bulkhead");
	cr_assert_str_empty(hits, "src/report includes what is not its own or public:\n%s", hits);
	hits = run("cd '" BH_SOURCE_DIR "' && grep -lE '#include[[:space:]]*[<\"](n?curses|microhttpd|curl/)' "
		   "src/report/*.[ch] 2>/dev/null || true");
	cr_assert_str_empty(hits, "src/report includes UI or HTTP headers:\n%s", hits);
	/* The view writes through it: no second writer of the report's JSON. */
	hits = run("cd '" BH_SOURCE_DIR "' && grep -l 'cJSON' ui/views/leaks_report.c src/cli/cmd_report.c "
		   "2>/dev/null || true");
	cr_assert_str_empty(hits, "a second writer of the report:\n%s", hits);
}

Test(layering, the_consoles_views_reach_the_fleet_only_through_the_source)
{
	/* ---- fleet (issue 20): in the console only the fleet source
	 * (ui/source_fleet.c) calls the fleet library; the views see struct
	 * ui_host and the source's hosts and drain, and no NATS header is
	 * included in ui/ or the console's and fleet's commands. ---- */
	char *hits = run("cd '" BH_SOURCE_DIR "' && grep -lE 'bh_fleet_[a-z_]+\\(' ui/*.c ui/views/*.c "
			 "src/cli/cmd_console.c 2>/dev/null | grep -vE '^ui/source_fleet.c$' || true");
	cr_assert_str_empty(hits, "the fleet library called outside its source and command:\n%s", hits);
	hits = run("cd '" BH_SOURCE_DIR "' && grep -lE '#include[[:space:]]*[<\"]nats' ui/*.[ch] ui/views/*.[ch] "
		   "src/cli/cmd_console.c src/cli/cmd_fleet*.c 2>/dev/null || true");
	cr_assert_str_empty(hits, "a NATS header in the console or the CLI:\n%s", hits);
}

/* ---- fleet (issue 20): libbulkhead-fleet (src/fleet) is a library above
 * the engine on NATS: only the daemon, the console and the CLI link it; it
 * uses the engine's public header and the base, never an engine private
 * header; nothing below it includes nats.h. ---- */
Test(layering, the_fleet_library_uses_only_public_headers_and_the_base)
{
	char *hits = includes_outside("src/fleet", "src/fleet include/bulkhead include/bulkhead-base");
	cr_assert_str_empty(hits, "src/fleet includes what is not its own, public or the base's:\n%s", hits);
	hits = run("cd '" BH_SOURCE_DIR "' && ls src/fleet/*.c | wc -l");
	cr_assert_gt(atoi(hits), 3, "the check sees src/fleet");
}

Test(layering, nothing_below_the_fleet_includes_nats_h)
{
	/* NATS is the fleet library's alone: the engine, the init, the
	 * contract, the base, the wire, the report and the public headers
	 * never see it. */
	char *hits = run("cd '" BH_SOURCE_DIR "' && grep -rlE '#include[[:space:]]*[<\"]nats/' "
			 "src/engine src/init src/proto src/base src/wire src/report src/egress src/broker "
			 "include 2>/dev/null || true");
	cr_assert_str_empty(hits, "files below the fleet including nats.h:\n%s", hits);
	hits = run("nm -u '" BH_LIBBULKHEAD "' 2>/dev/null | grep -E ' (nats|kvStore_|js_|bh_fleet_)' || true");
	cr_assert_str_empty(hits, "libbulkhead needs NATS's or the fleet's:\n%s", hits);
	/* The check can see: the fleet does include it. */
	hits = run("cd '" BH_SOURCE_DIR "' && grep -lE '#include[[:space:]]*<nats/nats.h>' src/fleet/*.[ch] | wc -l");
	cr_assert_gt(atoi(hits), 0, "src/fleet includes nats.h");
}

Test(layering, only_the_daemon_the_console_and_the_cli_link_the_fleet_library)
{
	/* Every target_link_libraries(...) naming bulkhead-fleet, flattened:
	 * its first word is the target linking it. The tests' own binaries
	 * (tests/) may, as they test it, and the fleet bench, an observer of
	 * the fleet it measures. */
	char *hits = run(
		"cd '" BH_SOURCE_DIR "' && cat CMakeLists.txt src/*/sources.cmake ui/sources.cmake "
		"bench/sources.cmake | tr '\\n' ' ' | grep -o 'target_link_libraries([^)]*)' | "
		"grep -w 'bulkhead-fleet' | sed 's/target_link_libraries(\\([^ ]*\\).*/\\1/' | "
		"grep -vxE 'bulkhead-fleet|bulkhead-daemon|bulkhead-ui|bulkhead-cli|bulkhead-bench-fleet' || true");
	cr_assert_str_empty(hits, "linking libbulkhead-fleet beside the daemon, the console and the CLI:\n%s", hits);
	/* and no engine source names the fleet's API */
	hits = run("grep -rlE 'bh_fleet_|fleet\\.h' " BH_SOURCE_DIR "/src/engine 2>/dev/null || true");
	cr_assert_str_empty(hits, "the engine knows the fleet:\n%s", hits);
}

/* The fuzz build (tests/fuzz, its own CMake project) embeds the store's
 * migrations itself: one that is not named there leaves every fuzz target
 * unlinkable, which only the fuzz step of the whole suite would find. */
Test(layering, the_fuzz_build_embeds_every_store_migration)
{
	char *hits = run("cd '" BH_SOURCE_DIR "' && for f in data/migrations/*.sql; do "
			 "grep -qF \"$f\" tests/fuzz/CMakeLists.txt || echo \"$f\"; done");
	cr_assert_str_empty(hits, "migrations the fuzz build does not embed:\n%s", hits);
	hits = run("cd '" BH_SOURCE_DIR "' && ls data/migrations/*.sql | wc -l");
	cr_assert_geq(atoi(hits), 6, "the check sees data/migrations");
}
