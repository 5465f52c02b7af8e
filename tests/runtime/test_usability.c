/* What a new operator meets first: a state directory the sandboxes cannot
 * reach, the first proof of the tiers, a warning that meant nothing, and a
 * leak finding that named a live session's image. Each case as the operator
 * types it, or as the console's leaks view sees it. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static int sh(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- a state directory below a directory the sandboxes cannot pass ---- */

static char closed_parent[512];

static void closed_parent_setup(void)
{
	mkdir(test_root(), 0711);
	/* What `mktemp -d` makes: a directory only its owner may enter. */
	snprintf(closed_parent, sizeof closed_parent, "%s/cli-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(closed_parent));
	cr_assert_eq(chmod(closed_parent, 0700), 0);
}

static void closed_parent_teardown(void)
{
	char out[256];
	sh(out, sizeof out, "rm -rf '%s'", closed_parent);
}

Test(usability, every_command_refuses_a_state_directory_below_an_untraversable_parent_naming_it,
     .init = closed_parent_setup, .fini = closed_parent_teardown)
{
	char script[700];
	snprintf(script, sizeof script, "%s/script", closed_parent);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs(":quit\n", f);
	fclose(f);
	/* The daemon is given 20 s: before the check it listened and stayed
	 * "not ready" forever, and `timeout` ended it (status 124). */
	const char *const commands[] = {
		"doctor",
		"run --tier container 'print(1)'",
		"shell --no-attach </dev/null",
		"timeout 20 %s serve --open --socket '%s/sock'",
		"console --script '%s/script'",
	};
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char cmd[1024], line[2048];
		const char *c = commands[i];
		if (!strncmp(c, "timeout", 7))
			snprintf(line, sizeof line, c, BH_TEST_CLI, closed_parent);
		else if (strstr(c, "%s"))
			snprintf(cmd, sizeof cmd, c, closed_parent),
				snprintf(line, sizeof line, "%s %s", BH_TEST_CLI, cmd);
		else
			snprintf(line, sizeof line, "%s %s", BH_TEST_CLI, c);
		static char out[16384];
		int rc = sh(out, sizeof out, "BULKHEAD_INTERP='%s' %s --state '%s/state' 2>&1",
			    BH_TEST_INTERP, line, closed_parent);
		cr_assert(rc != 0 && rc != 124, "`%s` went on (status %d): %s", line, rc, out);
		char want[700];
		snprintf(want, sizeof want, "%s (mode 0700", closed_parent);
		cr_assert_not_null(strstr(out, want), "`%s` does not name the parent and its mode: %s",
				   line, out);
		snprintf(want, sizeof want, "chmod o+x %s", closed_parent);
		cr_assert_not_null(strstr(out, want), "`%s` does not say the fix: %s", line, out);
		cr_assert_null(strstr(out, "smoke test"), "`%s` tried a proof first: %s", line, out);
	}
	/* Nothing was created below the parent it refused. */
	char state[600];
	snprintf(state, sizeof state, "%s/state", closed_parent);
	struct stat st;
	cr_assert_neq(stat(state, &st), 0, "the refused state directory was created");
	/* With the fix the message names, the same directory works. */
	cr_assert_eq(chmod(closed_parent, 0711), 0);
	static char out[16384];
	int rc = sh(out, sizeof out, "BULKHEAD_INTERP='%s' %s run --tier container --state '%s' 'print(6*7)' 2>&1",
		    BH_TEST_INTERP, BH_TEST_CLI, state);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_eq(strncmp(out, "42\n", 3), 0, "%s", out);
}
