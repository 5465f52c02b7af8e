/* Every command answers -h/--help: its usage on stdout, nothing on stderr,
 * exit 0. The Debian package's man pages are made from these answers
 * (scripts/manpages.sh), so a command that refused --help, or wrote its
 * usage to stderr, would ship a page without its options. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MAX_COMMANDS 64
#define HELP_MAX 65536 /* serve's is the longest, some 9 KiB */

/* The commands `bulkhead --help` lists, its "  NAME  what it does" lines
 * (as scripts/manpages.sh reads them); returns how many. */
static size_t listed_commands(char names[][32])
{
	static char top[HELP_MAX];
	cr_assert_eq(harness_sh_into(top, sizeof top, "%s --help </dev/null", BH_TEST_CLI), 0);
	size_t n = 0;
	for (char *save = NULL, *l = strtok_r(top, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[32];
		int end = 0;
		if (sscanf(l, "  %31[a-z-]%n", name, &end) == 1 && !strncmp(l + end, "  ", 2) &&
		    n < MAX_COMMANDS)
			snprintf(names[n++], sizeof names[0], "%s", name);
	}
	return n;
}

/* `bulkhead CMD FLAG`'s stdout into out, its stderr into err; its status. */
static int help_of(const char *cmd, const char *flag, char *out, char *err)
{
	int rc = harness_sh_into(out, HELP_MAX, "%s %s %s 2>/dev/null </dev/null", BH_TEST_CLI, cmd,
				 flag);
	harness_sh_into(err, HELP_MAX, "%s %s %s 2>&1 >/dev/null </dev/null", BH_TEST_CLI, cmd, flag);
	return rc;
}

/* out's first line is "usage: bulkhead CMD" and then a space or its end. */
static bool starts_with_usage_of(const char *out, const char *cmd)
{
	char want[64];
	int n = snprintf(want, sizeof want, "usage: bulkhead %s", cmd);
	return !strncmp(out, want, (size_t)n) && (out[n] == ' ' || out[n] == '\n');
}

Test(cli_help, every_listed_command_answers_help_and_h_on_stdout_with_exit_0_and_its_usage_line)
{
	static char out[HELP_MAX], err[HELP_MAX];
	char names[MAX_COMMANDS][32];
	size_t n = listed_commands(names);
	cr_assert_geq(n, 20, "bulkhead --help lists only %zu commands", n);
	static const char *const flags[] = {"--help", "-h"};
	for (size_t i = 0; i < n; i++)
		for (size_t f = 0; f < 2; f++) {
			int rc = help_of(names[i], flags[f], out, err);
			cr_expect_eq(rc, 0, "bulkhead %s %s exited %d: %s", names[i], flags[f], rc, err);
			cr_expect(starts_with_usage_of(out, names[i]),
				  "bulkhead %s %s does not start with its usage line:\n%s", names[i],
				  flags[f], out);
			cr_expect_str_empty(err, "bulkhead %s %s wrote on stderr:\n%s", names[i],
					    flags[f], err);
		}
}

Test(cli_help, help_anywhere_among_the_arguments_answers_before_any_refusal)
{
	static char out[HELP_MAX], err[HELP_MAX];
	static const char *const cases[][2] = {
		{"doctor", "--json --help"}, {"gc", "--bogus -h"},    {"files", "SESSION --help"},
		{"cp", "a:b c --help"},      {"profiles", "check -h"}, {"records", "--json --help"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int rc = help_of(cases[i][0], cases[i][1], out, err);
		cr_expect_eq(rc, 0, "bulkhead %s %s exited %d: %s", cases[i][0], cases[i][1], rc, err);
		cr_expect(starts_with_usage_of(out, cases[i][0]), "bulkhead %s %s:\n%s", cases[i][0],
			  cases[i][1], out);
	}
}

Test(cli_help, an_attaching_commands_help_names_the_attach_and_tls_options)
{
	static char out[HELP_MAX], err[HELP_MAX];
	static const char *const attaching[] = {"ls",     "records", "leaks",  "gc",      "shell",
						"files",  "cp",      "usage",  "follow",  "capture",
						"search", "events",  "approvals"};
	static const char *const options[] = {"--attach SOCKET|URL", "--token-file FILE",
					      "--cacert FILE", "--cert FILE", "--key FILE"};
	for (size_t i = 0; i < sizeof attaching / sizeof *attaching; i++) {
		cr_assert_eq(help_of(attaching[i], "--help", out, err), 0, "%s: %s", attaching[i], err);
		for (size_t o = 0; o < sizeof options / sizeof *options; o++)
			cr_expect(strstr(out, options[o]), "bulkhead %s --help does not name %s:\n%s",
				  attaching[i], options[o], out);
	}
}

Test(cli_help, a_refusal_quotes_the_same_usage_on_stderr_with_exit_2)
{
	static char out[HELP_MAX], help[HELP_MAX], refusal[HELP_MAX];
	cr_assert_eq(help_of("ls", "--help", help, out), 0);
	int rc = harness_sh_into(refusal, sizeof refusal, "%s ls --bogus 2>&1 >/dev/null </dev/null",
				 BH_TEST_CLI);
	cr_expect_eq(rc, 2, "ls --bogus exited %d", rc);
	cr_expect(!strncmp(refusal, "bulkhead: ls: unknown argument \"--bogus\"\n", 41),
		  "the refusal's wording changed:\n%s", refusal);
	cr_expect(strstr(refusal, help), "the refusal does not quote ls's usage:\n%s", refusal);
}

/* Help is read in a terminal, and the man pages are made from it: no line
 * of any command's help is wider than 80 columns. */
Test(cli_help, no_line_of_any_commands_help_is_wider_than_80_columns)
{
	static char out[HELP_MAX], err[HELP_MAX];
	char names[MAX_COMMANDS][32];
	size_t n = listed_commands(names);
	for (size_t i = 0; i < n; i++) {
		help_of(names[i], "--help", out, err);
		size_t line = 1;
		for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save), line++)
			cr_expect_leq(strlen(l), 80, "bulkhead %s --help, line %zu is %zu columns: %s",
				      names[i], line, strlen(l), l);
	}
}
