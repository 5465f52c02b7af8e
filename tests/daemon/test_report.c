/* report: `bulkhead report` on a killed daemon's state directory and on a
 * copy of its store. The suspects carry everything the schema describes —
 * records with code and output, one verifying (✓) and one tampered (✗),
 * the call that was running when the daemon died, events, and a capture
 * joined with --capture — and the JSON is checked against
 * docs/report.schema.json by a real validator (python3-jsonschema). Writing
 * a report changes nothing: the directory's files and the host's
 * containers and cgroups are the same after. */
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
static struct daemon_session talk; /* the session with records, abandoned at the kill */
static char talk_sandbox[64];

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
	return dead_daemon_cli(status, NULL, args);
}

static void cell(const char *code)
{
	struct answer *a = daemon_cell(&d, d.run_token, talk.id, "python", code);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
}

/* A session with two records (code and output on both streams), then the
 * daemon killed holding it, a paused sandbox and a running cell; record 1
 * is tampered with in the store (its isolation claims the other tier). */
static void killed_with_records(void)
{
	daemon_open_session(&d, &talk);
	cell("print('first answer')");
	cell("import sys; print('second answer'); print('a warning', file=sys.stderr)");
	daemon_kill_with_leftovers(&d, &dd);
	harness_sh_into(talk_sandbox, sizeof talk_sandbox,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT sandbox FROM sessions WHERE "
			"fingerprint = '%s'\"",
			dd.state, talk.fp);
	talk_sandbox[strcspn(talk_sandbox, "\n")] = '\0';
	cr_assert(*talk_sandbox, "no row for the session with records");
	char out[256];
	harness_sh_into(out, sizeof out,
			"sqlite3 '%s/bulkhead.db' \"UPDATE records SET isolation = CASE isolation WHEN 'kernel' THEN 'container' ELSE 'kernel' END WHERE "
			"session = '%s' AND sequence = 1\" && echo tampered",
			dd.state, talk.fp);
	cr_assert_str_eq(out, "tampered\n", "%s", out);
}

/* The JSON against the schema, by the validator, then what a reader of it
 * sees, one line per fact the test asks (caller frees). */
static char *validated(const char *json_path)
{
	char *said = strdup(harness_sh(
		"python3 -c 'import json, sys, jsonschema\n"
		"schema = json.load(open(sys.argv[1]))\n"
		"jsonschema.Draft202012Validator.check_schema(schema)\n"
		"report = json.load(open(sys.argv[2]))\n"
		"jsonschema.Draft202012Validator(schema).validate(report)\n"
		"print(\"valid\", report[\"sourceKind\"], len(report[\"suspects\"]))\n"
		"for s in report[\"suspects\"]:\n"
		"  for t in s[\"timeline\"]:\n"
		"    if t[\"type\"] == \"record\":\n"
		"      print(\"record\", s[\"session\"][:12], t[\"sequence\"], t[\"verification\"], repr(t[\"code\"]), repr(t[\"stdout\"]), repr(t[\"stderr\"]))\n"
		"    elif t[\"type\"] == \"interrupted\":\n"
		"      print(\"interrupted\", s[\"session\"][:12], t[\"wasRunning\"], repr(t[\"code\"]))\n"
		"    else:\n"
		"      print(\"event\", s[\"session\"][:12], t[\"kind\"])\n"
		"  if s[\"capture\"] is not None:\n"
		"    print(\"capture\", s[\"sandbox\"], s[\"capture\"][\"verifies\"], s[\"capture\"][\"bundleSha256\"] is not None)\n"
		"  print(\"suspect\", s[\"kind\"], s[\"session\"][:12], s[\"recordsVerify\"])' "
		"'%s/../../docs/report.schema.json' '%s' 2>&1",
		BH_TEST_INTERP, json_path));
	cr_assert(!strncmp(said, "valid ", 6), "the report does not validate against its schema:\n%s",
		  said);
	return said;
}

static void has(const char *text, const char *want)
{
	cr_assert_not_null(strstr(text, want), "no \"%s\" in:\n%s", want, text);
}

Test(report, a_killed_daemons_directory_reports_records_a_tampered_one_the_running_call_events_and_a_capture,
     .init = start, .fini = stop)
{
	killed_with_records();
	int st;
	char args[16384];
	/* Evidence of the session with records, to join to its suspect. */
	char *tmp = strdup(harness_sh("printf %%s \"$(dirname '%s')\"", dd.state));
	char evidence[4400], json[4400];
	snprintf(evidence, sizeof evidence, "%s/evidence", tmp);
	snprintf(json, sizeof json, "%s/incident.json", tmp);
	snprintf(args, sizeof args, "capture --state '%s' %s --out '%s'", dd.state, talk_sandbox,
		 evidence);
	char *out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	free(out);

	char *host_before = dead_daemon_host(&dd);
	char *files_before = dead_daemon_files(&dd);
	snprintf(args, sizeof args, "report --state '%s' --format json --out '%s' --capture '%s'",
		 dd.state, json, evidence);
	out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	char wrote[4500];
	snprintf(wrote, sizeof wrote, "wrote %s (", json);
	has(out, wrote);
	free(out);
	char *host_after = dead_daemon_host(&dd);
	char *files_after = dead_daemon_files(&dd);
	cr_assert_str_eq(host_after, host_before, "writing the report changed the host");
	cr_assert_str_eq(files_after, files_before, "writing the report wrote in the directory");
	free(host_before), free(host_after), free(files_before), free(files_after);

	char *said = validated(json);
	char line[512], fp12[13];
	snprintf(fp12, sizeof fp12, "%.12s", talk.fp);
	has(said, "valid state ");
	snprintf(line, sizeof line, "record %s 1 digest \"print('first answer')\" 'first answer\\n' ''",
		 fp12);
	has(said, line);
	snprintf(line, sizeof line,
		 "record %s 2 ok \"import sys; print('second answer'); print('a warning', "
		 "file=sys.stderr)\" 'second answer\\n' 'a warning\\n'",
		 fp12);
	has(said, line);
	snprintf(line, sizeof line, "suspect abandoned %s False", fp12);
	has(said, line);
	snprintf(line, sizeof line, "capture %s True True", talk_sandbox);
	has(said, line);
	snprintf(line, sizeof line, "event %s state", fp12);
	has(said, line);
	snprintf(line, sizeof line, "interrupted %.12s True \"%s\"", dd.running_fp,
		 DEAD_DAEMON_RUNNING_CODE);
	has(said, line);
	free(said);

	/* One suspect, in Markdown, to standard output: the same report. */
	snprintf(args, sizeof args, "report --state '%s' %.12s", dd.state, talk.fp);
	out = cli(&st, args);
	cr_assert_eq(st, 0, "%s", out);
	has(out, "# bulkhead incident report");
	has(out, "- 1 suspect\n");
	has(out, "record 1, exit 0, digest does not match its fields");
	has(out, "record 2, exit 0, verifies");
	has(out, "SOME DO NOT VERIFY");
	has(out, "Capture: none");
	has(out, "```\nprint('first answer')\n```");
	cr_assert_null(strstr(out, dd.paused_sandbox), "another suspect is in it:\n%s", out);
	free(out);
	snprintf(args, sizeof args, "report --state '%s' bh-nothing-named-so", dd.state);
	out = cli(&st, args);
	cr_assert_eq(st, 1, "%s", out);
	has(out, "no finding is named \"bh-nothing-named-so\"");
	free(out);
	/* A report is never written over a file. */
	snprintf(args, sizeof args, "report --state '%s' --out '%s'", dd.state, json);
	out = cli(&st, args);
	cr_assert_neq(st, 0, "%s", out);
	has(out, "never written over a file");
	free(out);
	free(tmp);
}

Test(report, a_copy_of_the_store_reports_its_abandoned_rows_and_is_not_changed, .init = start,
     .fini = stop)
{
	killed_with_records();
	char *tmp = strdup(harness_sh("printf %%s \"$(dirname '%s')\"", dd.state));
	char copy[4400], json[4400];
	snprintf(copy, sizeof copy, "%s/copy.db", tmp);
	snprintf(json, sizeof json, "%s/copy.json", tmp);
	char *out = strdup(harness_sh("sqlite3 '%s/bulkhead.db' \".backup '%s'\" && sha256sum < '%s'",
				      dd.state, copy, copy));
	int st;
	char args[16384];
	snprintf(args, sizeof args, "report --db '%s' --format json --out '%s'", copy, json);
	char *said = cli(&st, args);
	cr_assert_eq(st, 0, "%s", said);
	free(said);
	cr_assert_str_eq(harness_sh("sha256sum < '%s'", copy), out, "the copy changed");
	free(out);
	said = validated(json);
	char line[512], fp12[13];
	snprintf(fp12, sizeof fp12, "%.12s", talk.fp);
	has(said, "valid store ");
	snprintf(line, sizeof line, "record %s 1 digest ", fp12);
	has(said, line);
	snprintf(line, sizeof line, "record %s 2 ok ", fp12);
	has(said, line);
	snprintf(line, sizeof line, "suspect abandoned %s False", fp12);
	has(said, line);
	free(said);
	cr_assert_str_eq(harness_sh("ls '%s' | grep -c 'copy.db-' || true", tmp), "0\n",
			 "--db made files beside the copy");
	free(tmp);
}
