/* serve's config file and --print-config, through the real command: a
 * setting from the file applies, a flag overrides it, what is not exactly a
 * setting (or a file others could have written) is refused with the file
 * and line before anything starts, and --print-config's output read back
 * as a file prints the same. Nothing here starts a daemon. */
#include "harness.h"
#include "serve_settings.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

static void make_dir(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(dir, sizeof dir, "%s/serve-config-XXXXXX", root && *root ? root : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char out[64];
	harness_sh_into(out, sizeof out, "rm -rf '%s'", dir);
}

TestSuite(serve_config, .init = make_dir, .fini = remove_dir);

/* A config file at dir/name holding len bytes of text, with mode. */
static const char *config_file(const char *name, const char *text, size_t len, mode_t mode)
{
	static char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
	return path;
}

static const char *config_text(const char *name, const char *text)
{
	return config_file(name, text, strlen(text), 0600);
}

/* `bulkhead serve ARGS` with stdout and stderr into out; its exit status. */
static int serve(char *out, size_t len, const char *args)
{
	return harness_sh_into(out, len, "%s serve %s 2>&1", BH_TEST_CLI, args);
}

/* Whether text holds line as a whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

Test(serve_config, a_setting_from_the_file_applies_and_a_flag_overrides_it)
{
	const char *path = config_text("bulkhead.conf", "# the service\n\n"
							"max-sessions = 7\n"
							"  idle=90s  \n"
							"allowed-host = a.example\n"
							"allowed-host = b.example\n"
							"open = true\r\n");
	char out[16384], args[8192];
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_assert_eq(serve(out, sizeof out, args), 0, "%s", out);
	cr_expect(has_line(out, "max-sessions = 7"), "%s", out);
	cr_expect(has_line(out, "idle = 90s"), "%s", out);
	cr_expect(has_line(out, "open = true"), "%s", out);
	cr_expect(has_line(out, "allowed-host = a.example") &&
			  has_line(out, "allowed-host = b.example"),
		  "%s", out);
	cr_expect(has_line(out, "# rate = 600"), "a default is a comment: %s", out);

	snprintf(args, sizeof args,
		 "--config '%s' --max-sessions 9 --allowed-host c.example --print-config", path);
	cr_assert_eq(serve(out, sizeof out, args), 0, "%s", out);
	cr_expect(has_line(out, "max-sessions = 9") && !strstr(out, "max-sessions = 7"), "%s", out);
	cr_expect(has_line(out, "idle = 90s"), "the file's other settings stay: %s", out);
	/* A repeated flag replaces the file's list as a whole. */
	cr_expect(has_line(out, "allowed-host = c.example") && !strstr(out, "a.example"), "%s",
		  out);
}

Test(serve_config, print_config_read_back_as_the_file_prints_the_same)
{
	char first[16384], again[16384], args[8192];
	cr_assert_eq(
		serve(first, sizeof first,
		      "--no-config --print-config --tier kernel --listen 127.0.0.1:0 --pool-age 90s "
		      "--retention 36h --approval-timeout 1500ms --hardened --log-format json "
		      "--trusted-proxy 127.0.0.9 --trusted-proxy ::1 --shutdown hibernate -v"),
		0, "%s", first);
	const char *path = config_text("printed.conf", first);
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_assert_eq(serve(again, sizeof again, args), 0, "%s", again);
	cr_assert_str_eq(again, first);
	cr_expect(has_line(first, "approval-timeout = 1500ms") &&
			  has_line(first, "retention = 36h") && has_line(first, "verbose = 1") &&
			  has_line(first, "tier = kernel"),
		  "%s", first);
}

/* Each file is refused (usage, 2) naming the file, the line and the key. */
Test(serve_config, what_is_not_exactly_a_setting_is_refused_with_its_line)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{"idle = 5m\n\n# fine so far\nbogus = 1\n",
		 ":4: bogus: not a setting of bulkhead serve"},
		{"max-sessions = 8x\n", ":1: max-sessions: not a valid value"},
		{"idle = 5m\nidle = 6m\n", ":2: idle: given twice (first on line 1)"},
		{"open = yes\n", ":1: open: not a valid value (true or false)"},
		{"tier = vm\n", ":1: tier: not a valid value (container|kernel)"},
		{"config = /etc/other.conf\n", ":1: config: a flag of the command line"},
		{"just words\n", ":1: just words: not a setting (key = value)"},
		{"socket =\n", ":1: socket: not a valid value"},
		{"capture-root = relative/dir\n", ":1: capture-root: not a valid value"},
		{"\xc3\xa9t\xc3\xa9 = 1\n",
		 ":1: (characters other than printable ASCII): not a setting of bulkhead serve"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *path = config_text("bad.conf", cases[i].text);
		char out[8192], args[8192];
		snprintf(args, sizeof args, "--config '%s' --print-config", path);
		int rc = serve(out, sizeof out, args);
		cr_expect_eq(rc, 2, "case %zu exited %d: %s", i, rc, out);
		cr_expect(strstr(out, "bad.conf") && strstr(out, cases[i].expect),
			  "case %zu: wanted \"%s\": %s", i, cases[i].expect, out);
		cr_expect(!strstr(out, "# bulkhead serve: the effective"), "case %zu printed: %s",
			  i, out);
	}
}

Test(serve_config, a_nul_byte_an_overlong_line_or_too_many_names_are_refused)
{
	char out[8192], args[8192];
	const char *path = config_file("nul.conf", "idle = 5m\nrate = 6\0000\n", 20, 0600);
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
	cr_expect(strstr(out, "nul.conf:2: a NUL byte"), "%s", out);

	static char text[SERVE_CONFIG_LINE_MAX + 64];
	int n = snprintf(text, sizeof text, "# ok\nsocket = /");
	memset(text + n, 'a', SERVE_CONFIG_LINE_MAX);
	path = config_file("long.conf", text, (size_t)n + SERVE_CONFIG_LINE_MAX, 0600);
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
	cr_expect(strstr(out, "long.conf:2: the line is longer than 4096 bytes"), "%s", out);

	char names[2048] = "";
	for (int i = 0; i <= DAEMON_MAX_NAMES; i++)
		snprintf(names + strlen(names), sizeof names - strlen(names),
			 "allowed-host = h%d\n", i);
	path = config_text("names.conf", names);
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
	cr_expect(strstr(out, "names.conf:17: allowed-host: given more than 16 times"), "%s", out);
}

Test(serve_config, a_file_others_could_write_or_a_missing_named_one_is_refused)
{
	char out[8192], args[8192];
	static const mode_t modes[] = {0620, 0602};
	static const char *const why[] = {"group-writable", "world-writable"};
	for (size_t i = 0; i < 2; i++) {
		const char *path = config_file("open.conf", "idle = 5m\n", 10, modes[i]);
		snprintf(args, sizeof args, "--config '%s' --print-config", path);
		cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
		cr_expect(strstr(out, "refusing the config file") && strstr(out, why[i]), "%s",
			  out);
	}
	const char *path = config_file("theirs.conf", "idle = 5m\n", 10, 0644);
	cr_assert_eq(chown(path, 4242, 4242), 0);
	snprintf(args, sizeof args, "--config '%s' --print-config", path);
	cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
	cr_expect(strstr(out, "owned by neither root nor us"), "%s", out);

	snprintf(args, sizeof args, "--config '%s/absent.conf' --print-config", dir);
	cr_expect_eq(serve(out, sizeof out, args), 2, "%s", out);
	cr_expect(strstr(out, "cannot open the config file"), "%s", out);
}

/* --help is what the man page is made from: every setting is in it, and
 * every setting but the command line's own is a key --print-config writes. */
Test(serve_config, help_and_print_config_name_every_setting_of_the_table)
{
	static char help[65536], printed[65536];
	cr_assert_eq(serve(help, sizeof help, "--help"), 0);
	cr_assert_eq(serve(printed, sizeof printed, "--no-config --print-config"), 0);
	for (size_t i = 0; i < serve_options_count; i++) {
		const struct serve_option *o = &serve_options[i];
		char flag[128], key[128];
		snprintf(flag, sizeof flag, "--%s%s", o->name, o->arg ? " " : "");
		cr_expect(strstr(help, flag), "--help does not list %s", flag);
		if (o->kind == SERVE_META)
			continue;
		snprintf(key, sizeof key, "\n# %s = ", o->name);
		cr_expect(strstr(printed, key), "--print-config does not write %s", o->name);
	}
	/* Folded for a terminal (and for help2man). */
	for (const char *l = help; *l;) {
		size_t n = strcspn(l, "\n");
		cr_expect_leq(n, 79, "a --help line of %zu columns: %.*s", n, (int)n, l);
		l += n + (l[n] == '\n');
	}
}

Test(serve_config, of_config_and_no_config_the_later_counts)
{
	const char *path = config_text("later.conf", "max-sessions = 7\n");
	char out[16384], args[8192];
	snprintf(args, sizeof args, "--no-config --config '%s' --print-config", path);
	cr_assert_eq(serve(out, sizeof out, args), 0, "%s", out);
	cr_expect(has_line(out, "max-sessions = 7"), "%s", out);
	snprintf(args, sizeof args, "--config '%s' --no-config --print-config", path);
	cr_assert_eq(serve(out, sizeof out, args), 0, "%s", out);
	cr_expect(has_line(out, "# max-sessions = 64"), "%s", out);
}

/* ---- fleet (issue 20): the fleet's settings, from the file and flags ---- */
Test(serve_config, the_fleet_settings_come_from_the_file_and_bad_ones_are_refused)
{
	const char *path = config_text("fleet.conf", "fleet = nats://127.0.0.1:4222,nats://127.0.0.1:4223\n"
						     "host-id = host-a\n"
						     "advertise = https://a.example:8746\n"
						     "fleet-heartbeat-ms = 250\n"
						     "fleet-gone-ms = 2000\n"
						     "images-dir = /tmp\n");
	char out[16384], args[8192];
	snprintf(args, sizeof args, "--config '%s' --host-id host-b --print-config", path);
	cr_assert_eq(serve(out, sizeof out, args), 0, "%s", out);
	cr_expect(has_line(out, "fleet = nats://127.0.0.1:4222,nats://127.0.0.1:4223"), "%s", out);
	cr_expect(has_line(out, "host-id = host-b"), "the flag overrides the file: %s", out);
	cr_expect(has_line(out, "advertise = https://a.example:8746") &&
			  has_line(out, "fleet-heartbeat-ms = 250") &&
			  has_line(out, "fleet-gone-ms = 2000") && has_line(out, "images-dir = /tmp"),
		  "%s", out);
	cr_assert_eq(serve(out, sizeof out, "--no-config --help"), 0, "%s", out);
	cr_expect(strstr(out, "--fleet URLS") && strstr(out, "--images-dir DIR"), "%s", out);
	/* A relative images directory, or a heartbeat out of range: usage, before anything starts. */
	cr_expect_eq(serve(out, sizeof out, "--no-config --images-dir images --print-config"), 2, "%s",
		     out);
	cr_expect(strstr(out, "images-dir"), "%s", out);
	cr_expect_eq(serve(out, sizeof out, "--no-config --fleet-heartbeat-ms 10 --print-config"), 2,
		     "%s", out);
}
