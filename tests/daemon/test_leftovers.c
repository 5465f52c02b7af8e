/* inflight (issue 17, acceptance 2): a daemon killed with kill -9 (its warden
 * too) while it holds a paused sandbox and a running cell. What the next
 * opener of its state directory finds — both as findings, the cell as an
 * interrupted call with its code — and that finding them reaps nothing;
 * a daemon restarted on it keeps them unless --reap-leftovers. */
#include "daemon_leftovers.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static struct daemon d;
static struct dead_daemon dd;

static void start(void)
{
	daemon_start(&d, NULL);
}

static void stop(void)
{
	daemon_stop(&d); /* its gc reaps what the test kept */
	memset(&dd, 0, sizeof dd);
}

static char *cli(int *status, const char *args)
{
	char cmd[16384];
	/* The operator's token, for a daemon that holds the directory again. */
	snprintf(cmd, sizeof cmd, "BULKHEAD_TOKEN='%s' BULKHEAD_INTERP='%s' '%s' %s 2>&1", d.op_token,
		 BH_TEST_INTERP, BH_TEST_CLI, args);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t cap = 65536, n = 0, got;
	char *out = malloc(cap);
	while ((got = fread(out + n, 1, cap - n - 1, f)) > 0)
		n += got;
	out[n] = '\0';
	int st = pclose(f);
	*status = WEXITSTATUS(st);
	return out;
}

static const cJSON *finding(const cJSON *list, const char *kind, const char *session)
{
	const cJSON *o;
	cJSON_ArrayForEach(o, list)
	{
		const cJSON *k = cJSON_GetObjectItem(o, "kind"), *s = cJSON_GetObjectItem(o, "session");
		if (cJSON_IsString(k) && cJSON_IsString(s) && !strcmp(k->valuestring, kind) &&
		    !strcmp(s->valuestring, session))
			return o;
	}
	return NULL;
}

Test(leftovers, a_killed_daemons_paused_sandbox_and_running_cell_are_both_findings_and_looking_reaps_nothing,
     .init = start, .fini = stop)
{
	daemon_kill_with_leftovers(&d, &dd);
	char *host_before = dead_daemon_host(&dd);
	char *files_before = dead_daemon_files(&dd);
	char paused_row[128];
	snprintf(paused_row, sizeof paused_row, "%s paused", dd.paused_sandbox);
	cr_assert_not_null(strstr(host_before, paused_row), "no runtime holds the paused sandbox:\n%s",
			   host_before);

	int st;
	char args[8192];
	snprintf(args, sizeof args, "leaks --no-attach --json --state '%s'", dd.state);
	char *out = cli(&st, args);
	cr_assert_eq(st, 1, "leaks found nothing (status %d): %s", st, out);
	cJSON *list = cJSON_Parse(strchr(out, '['));
	cr_assert_not_null(list, "%s", out);
	const cJSON *abandoned = finding(list, "abandoned", dd.paused_fp);
	cr_assert_not_null(abandoned, "the paused sandbox is no finding: %s", out);
	cr_assert_str_eq(cJSON_GetObjectItem(abandoned, "sandbox")->valuestring, dd.paused_sandbox);
	const cJSON *interrupted = finding(list, "interrupted", dd.running_fp);
	cr_assert_not_null(interrupted, "the running cell is no finding: %s", out);
	cr_assert_not_null(strstr(cJSON_GetObjectItem(interrupted, "reason")->valuestring,
				  "python cell"),
			   "%s", out);
	cJSON_Delete(list);
	free(out);

	/* The dry run's preview says what each reap would remove. */
	snprintf(args, sizeof args, "gc --dry-run --no-attach --state '%s'", dd.state);
	out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	char line[256];
	snprintf(line, sizeof line, "kill + delete %s", dd.paused_sandbox);
	cr_assert_not_null(strstr(out, line), "%s", out);
	cr_assert_not_null(strstr(out, "the intent is marked reaped"), "%s", out);
	free(out);

	/* Looking changed nothing: on the host, in the store, in the directory. */
	char *host_after = dead_daemon_host(&dd);
	char *files_after = dead_daemon_files(&dd);
	cr_assert_str_eq(host_after, host_before);
	cr_assert_str_eq(files_after, files_before);
	free(host_before), free(host_after), free(files_before), free(files_after);

	/* The intent keeps the code, whole (read last: sqlite3's own reader
	 * writes the WAL index beside the store). */
	char code[4096];
	harness_sh_into(code, sizeof code,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT code FROM inflight WHERE session = '%s'\"",
			dd.state, dd.running_fp);
	cr_assert_str_eq(code, DEAD_DAEMON_RUNNING_CODE "\n");
}

Test(leftovers, a_daemon_restarted_on_the_directory_keeps_them_and_gc_then_reaps_them, .init = start,
     .fini = stop)
{
	daemon_kill_with_leftovers(&d, &dd);
	daemon_restart(&d, NULL);
	char *host = dead_daemon_host(&dd);
	char paused_row[128];
	snprintf(paused_row, sizeof paused_row, "%s paused", dd.paused_sandbox);
	cr_assert_not_null(strstr(host, paused_row), "the restarted daemon reaped the evidence:\n%s",
			   host);
	free(host);
	/* The daemon it is now lists them, and reaps them when told to. */
	int st;
	char args[8192];
	snprintf(args, sizeof args, "leaks --state '%s'", dd.state);
	char *out = cli(&st, args);
	cr_assert_eq(st, 1, "%s", out);
	cr_assert_not_null(strstr(out, dd.paused_sandbox), "%s", out);
	cr_assert_not_null(strstr(out, "interrupted"), "%s", out);
	free(out);
	snprintf(args, sizeof args, "gc --state '%s'", dd.state);
	out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
	host = dead_daemon_host(&dd);
	cr_assert_null(strstr(host, dd.paused_sandbox), "gc left it:\n%s", host);
	free(host);
}

Test(leftovers, serve_with_reap_leftovers_takes_the_directory_over_as_before, .init = start,
     .fini = stop)
{
	daemon_kill_with_leftovers(&d, &dd);
	daemon_restart(&d, "--reap-leftovers");
	char *host = dead_daemon_host(&dd);
	cr_assert_null(strstr(host, dd.paused_sandbox), "--reap-leftovers kept it:\n%s", host);
	free(host);
	char out[256];
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT count(*) FROM sessions WHERE state "
			"NOT IN ('ended')\"",
			dd.state);
	cr_assert_str_eq(out, "0\n");
}
