/* bulkhead replay [NAME|FILE] [--script FILE [--display]]: the console
 * straight in the replay player on data/scenarios/NAME.json (or a file), or
 * on the list of scenarios with no NAME. A replay executes nothing, so the
 * console runs on no source: no engine, no daemon, no store, and no state
 * directory is opened or made. A NAME or file that does not load is said
 * before any screen, with exit status 2. */
#include "cli.h"
#include "console.h"
#include "scenario.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "usage: bulkhead replay [NAME|FILE] [--script FILE [--display]]\n"
			    "       bulkhead replay --handout NAME|FILE OUT.md\n"
			    "  NAME: a scenario in $BULKHEAD_SCENARIOS, else the shipped data/scenarios\n"
			    "  --handout: the scenario as Markdown (steps, code, answers, narration)\n"
			    "             in a new file OUT.md (never over an existing one)\n";

/* "one_turn, suspend, ..." for an error that names what there is. */
static void names_in(const char *dir, char *buf, size_t n)
{
	struct scenario_entry *list = NULL;
	size_t count = 0;
	char err[256];
	buf[0] = '\0';
	if (scenario_list(dir, &list, &count, err, sizeof err) < 0)
		return;
	size_t used = 0;
	for (size_t i = 0; i < count && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", list[i].name);
	scenario_list_free(list, count);
}

/* ---- presenter: handouts ---- */
/* `--handout NAME OUT.md`: the scenario loaded as the player loads it, then
 * written as Markdown; the absolute path said on stdout. */
static int handout(const char *dir, const char *name, const char *out)
{
	char path[4400], err[1024];
	if (scenario_resolve(dir, name, path, sizeof path, err, sizeof err) < 0) {
		cli_error("replay --handout: %s", err);
		return CLI_EXIT_USAGE;
	}
	struct scenario *s = NULL;
	if (scenario_load(path, &s, err, sizeof err) < 0) {
		cli_error("replay --handout: %s", err);
		return CLI_EXIT_USAGE;
	}
	int rc = scenario_handout_save(s, out, err, sizeof err);
	scenario_free(s);
	if (rc < 0) {
		cli_error("replay --handout: %s", err);
		return CLI_EXIT_BULKHEAD;
	}
	char abs[PATH_MAX];
	printf("handout written: %s\n", realpath(out, abs) ? abs : out);
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	struct ui_options o = {.start_view = "replay"};
	const char *name = NULL;
	bool display = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--script") && i + 1 < argc)
			o.script = argv[++i];
		else if (!strcmp(a, "--handout")) { /* ---- presenter ---- */
			if (i + 2 >= argc || i + 3 != argc) {
				cli_error("replay: --handout takes a scenario and a file, and nothing after\n%s",
					  usage);
				return CLI_EXIT_USAGE;
			}
			char dir[4096];
			return handout(scenario_dir(dir, sizeof dir), argv[i + 1], argv[i + 2]);
		}
		else if (!strcmp(a, "--display"))
			display = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (a[0] != '-' && !name)
			name = a;
		else {
			cli_error("replay: unexpected \"%s\"\n%s", a, usage);
			return CLI_EXIT_USAGE;
		}
	}
	char dir[4096], path[4400], err[1024];
	scenario_dir(dir, sizeof dir);
	if (name) {
		if (scenario_resolve(dir, name, path, sizeof path, err, sizeof err) < 0) {
			char names[1024];
			names_in(dir, names, sizeof names);
			cli_error("replay: %s%s%s%s", err, *names ? " (the scenarios: " : "", names, *names ? ")" : "");
			return CLI_EXIT_USAGE;
		}
		struct scenario *s = NULL;
		if (scenario_load(path, &s, err, sizeof err) < 0) {
			cli_error("replay: %s", err);
			return CLI_EXIT_USAGE;
		}
		scenario_free(s);
		o.start_scenario = path;
	}
	o.no_display = o.script && !display;
	if (!o.script && !isatty(STDIN_FILENO)) {
		cli_error("replay: needs a terminal (or --script FILE for a headless run)");
		return CLI_EXIT_USAGE;
	}
	return ui_console_run(ui_source_none(), &o) == 0 ? 0 : CLI_EXIT_BULKHEAD;
}
