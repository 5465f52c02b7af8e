/* Screen tests of the operator console, tig's way: each test writes a script
 * of keys and :commands, runs the real `bulkhead console --script` headless
 * at a fixed size (80x24 unless it says otherwise), TERM=xterm, TZ=UTC and
 * NO_COLOR=1, and compares WHOLE saved screens with tests/tui/expected/ after
 * normalising what legitimately varies: digests and fingerprints (masked
 * with '#', same width), ages and durations (<dur>), wall-clock times (and
 * since when a view's rows are stale), the
 * sandbox's uids in the tier evidence (<ids>), and the test's directories
 * (<STATE>, <FILES>, <DAEMON>).
 *
 * BH_TUI_UPDATE=1 writes the expected screens instead of comparing them;
 * read every one by eye before committing it. A mismatch prints a diff and
 * leaves the screen it got in $BULKHEAD_TEST_ROOT/tui-actual/.
 *
 * Sources: the embedded engine (the console owns it), a daemon it attaches
 * to (a real `bulkhead serve`), and a copy of a store opened with --db. */
#include "daemon_harness.h"
#include "daemon_leftovers.h" /* inflight */
#include "gen_store.h"
#include "harness.h"
#include "plant.h" /* ---- report ---- */
#include "screen_compare.h"
#include "tamper_proxy.h"
#include "test_ca.h" /* ---- tls ---- */
#include "wire_operator.h" /* ---- light: the Overview poll's cap ---- */

#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h> /* ---- tls ---- */
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"
#define RUN_TIMEOUT_S 180

/* The one binding table, read the way the console reads it. */
#define ACTS 1u
static const struct {
	const char *label, *view, *help;
	unsigned flags;
} bindings[] = {
#define REQ(id, key, label, view, help, flags) {label, view, help, flags},
#include "bindings.def"
#undef REQ
};

static struct harness h;   /* its state directory is the console's */
static struct daemon d;
static bool have_daemon;
static struct tamper_proxy px; /* between an attached console and its daemon */
static char files[4200];   /* STATE-files: scripts, screens, store copies */
static char tls_target[64]; /* ---- tls: https://127.0.0.2:PORT when attached over TLS ---- */
static char orphan_root[4200];
static pid_t live_pid;     /* a console fed through a FIFO */
static int live_fd = -1;
static int screen_lines = 24, screen_cols = 80;

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

/* Runs a shell command; its stdout and stderr (caller frees). */
static char *sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char full[16500];
	snprintf(full, sizeof full, "{ %s ; } 2>&1", cmd);
	FILE *f = popen(full, "r");
	cr_assert_not_null(f);
	size_t cap = 4096, n = 0;
	char *out = malloc(cap);
	size_t got;
	while ((got = fread(out + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n < 2) {
			cap *= 2;
			out = realloc(out, cap);
		}
	}
	out[n] = '\0';
	pclose(f);
	return out;
}


static void setup(void)
{
	/* The harness makes the state directory the standard way (and proves
	 * the tiers, or reads the shared evidence); the console opens it. */
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	harness_require_tier(&h, BH_TIER_KERNEL);
	snprintf(files, sizeof files, "%s-files", h.state_dir);
	cr_assert_eq(mkdir(files, 0700), 0, "%s: %s", files, strerror(errno));
	screen_lines = 24;
	screen_cols = 80;
}

static void close_engine(void)
{
	if (h.e)
		bh_engine_close(h.e);
	h.e = NULL;
}

static void teardown(void)
{
	if (live_fd >= 0)
		close(live_fd);
	live_fd = -1;
	if (live_pid > 0) {
		kill(live_pid, SIGKILL);
		waitpid(live_pid, NULL, 0);
		live_pid = 0;
	}
	proxy_stop(&px);
	if (have_daemon)
		daemon_stop(&d);
	have_daemon = false;
	if (*orphan_root) {
		plant_orphan_remove(orphan_root, "bh-orphan");
		plant_orphan_remove(orphan_root, "bh-0000000000c0ffee"); /* ---- capture ---- */
	}
	orphan_root[0] = '\0';
	close_engine();
	/* Whatever a console that died mid-test left behind. */
	if (h.state_dir)
		free(sh("BULKHEAD_INTERP='%s' '%s' gc --state '%s' >/dev/null", BH_TEST_INTERP, BH_TEST_CLI,
			h.state_dir));
	harness_close(&h);
	if (*files)
		free(sh("rm -rf '%s'", files));
	files[0] = '\0';
}

/* ---- running the console ---- */

/* Writes a script: `:save-display NAME` saves FILES/NAME.txt. */
static void write_script(const char *path, const char *script)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	for (const char *p = script; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n > 14 && !strncmp(p, ":save-display ", 14))
			fprintf(f, ":save-display %s/%.*s.txt\n", files, (int)(n - 14), p + 14);
		else
			fprintf(f, "%.*s\n", (int)n, p);
		p += n + (e ? 1 : 0);
	}
	fclose(f);
}

/* The command a console runs with: a clean, fixed environment; `env` adds
 * or overrides variables ("PATH=... BULKHEAD_TOKEN=..."). */
static void console_cmd(char *cmd, size_t n, const char *script, const char *args, const char *env,
			bool display)
{
	/* HOME is the test root: the header shows ~/state-XXXXXX, as long
	 * whatever the root (the state directory is shown resolved). */
	char home[PATH_MAX];
	if (!realpath(test_root(), home))
		snprintf(home, sizeof home, "%s", test_root());
	snprintf(cmd, n,
		 "cd '%s' && exec env -i PATH=\"$PATH\" HOME='%s' TERM=xterm LINES=%d COLUMNS=%d TZ=UTC "
		 "NO_COLOR=1 LC_ALL=C.UTF-8 BULKHEAD_INTERP='%s' BULKHEAD_EVIDENCE='%s/evidence' "
		 "ASAN_OPTIONS=\"$ASAN_OPTIONS\" UBSAN_OPTIONS=\"$UBSAN_OPTIONS\" %s "
		 "'%s' console --script '%s'%s %s",
		 files, home, screen_lines, screen_cols, BH_TEST_INTERP, test_root(), env ? env : "",
		 BH_TEST_CLI, script, display ? " --display" : "", args ? args : "");
}

static pid_t spawn(const char *cmd, const char *out_name)
{
	char out[4400];
	snprintf(out, sizeof out, "%s/%s", files, out_name);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		harness_child_signals_default();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Waits for a console; SIGKILL after the timeout. Its exit status. */
static int reap_console(pid_t pid)
{
	int st = 0;
	for (int i = 0; i < RUN_TIMEOUT_S * 20; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(50 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	cr_assert_fail("the console did not finish within %d s", RUN_TIMEOUT_S);
	return -1;
}

/* The console's arguments: the test's state directory unless it attaches
 * or opens a store (never the default, /var/lib/bulkhead). */
static void console_args(char *out, size_t n, const char *args)
{
	if (args && (strstr(args, "--db") || strstr(args, "--attach")))
		snprintf(out, n, "%s", args);
	else
		snprintf(out, n, "--state '%s' %s", h.state_dir, args ? args : "");
}

/* Runs one console with its whole arguments over a script; it must exit 0
 * and say nothing. */
static void console_all(const char *script, const char *all, const char *env)
{
	char path[4400], cmd[16384];
	snprintf(path, sizeof path, "%s/script.txt", files);
	write_script(path, script);
	console_cmd(cmd, sizeof cmd, path, all, env, false);
	int st = reap_console(spawn(cmd, "console.out"));
	snprintf(path, sizeof path, "%s/console.out", files);
	char *said = harness_slurp(path);
	cr_assert_eq(st, 0, "the console exited %d: %s", st, said ? said : "");
	cr_assert(said && !*said, "the console wrote: %s", said ? said : "");
	free(said);
}

/* Runs one console over a script (console_args); it must exit 0 and say nothing. */
static void console(const char *script, const char *args, const char *env)
{
	char all[8192];
	console_args(all, sizeof all, args);
	console_all(script, all, env);
}

/* A console fed line by line through a FIFO, for what happens meanwhile. */
static void live_start(const char *args, const char *env)
{
	char fifo[4400], cmd[16384], all[8192];
	snprintf(fifo, sizeof fifo, "%s/live.fifo", files);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	/* O_RDWR: never blocks, and the console sees no end until we close it. */
	live_fd = open(fifo, O_RDWR | O_CLOEXEC);
	cr_assert_geq(live_fd, 0);
	console_args(all, sizeof all, args);
	console_cmd(cmd, sizeof cmd, fifo, all, env, false);
	live_pid = spawn(cmd, "live.out");
}

static void live_send(const char *lines)
{
	char tmp[4400];
	snprintf(tmp, sizeof tmp, "%s/live.part", files);
	write_script(tmp, lines);
	char *text = harness_slurp(tmp);
	size_t n = strlen(text);
	cr_assert_eq(write(live_fd, text, n), (ssize_t)n);
	free(text);
}

/* Waits until the live console saved FILES/NAME.txt whole. */
static void live_wait_screen(const char *name)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.txt", files, name);
	for (int i = 0; i < 60 * 20; i++) {
		char *s = harness_slurp(path);
		int lines = 0;
		for (char *p = s; p && *p; p++)
			lines += *p == '\n';
		free(s);
		if (lines >= screen_lines)
			return;
		int st;
		cr_assert_eq(waitpid(live_pid, &st, WNOHANG), 0, "the live console exited early");
		usleep(50 * 1000);
	}
	cr_assert_fail("the live console never saved %s", name);
}

static void live_finish(void)
{
	live_send(":q");
	close(live_fd);
	live_fd = -1;
	int st = reap_console(live_pid);
	live_pid = 0;
	char path[4400];
	snprintf(path, sizeof path, "%s/live.out", files);
	char *said = harness_slurp(path);
	cr_assert_eq(st, 0, "the console exited %d: %s", st, said ? said : "");
	cr_assert(said && !*said, "the console wrote: %s", said ? said : "");
	free(said);
}

/* ---- normalising and comparing screens ---- */

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Replaces every match of re that stands alone (no letter, digit or _ on
 * either side) with token; token NULL masks the match with '#' instead,
 * keeping its width (digests and fingerprints are cut to fixed widths).
 * After a token, the blanks that follow collapse to one: an age is "3s"
 * or "10s", and the padding after it in a table column varies with it. */
static void replace_all(char *line, size_t cap, const char *pattern, const char *token)
{
	regex_t re;
	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED), 0);
	char out[8192];
	size_t o = 0;
	const char *p = line;
	regmatch_t m;
	int flags = 0;
	while (*p && regexec(&re, p, 1, &m, flags) == 0 && m.rm_eo > m.rm_so) {
		const char *s = p + m.rm_so, *e = p + m.rm_eo;
		if ((s > line && word_char(s[-1])) || word_char(*e)) {
			size_t k = (size_t)(s - p) + 1;
			o += (size_t)snprintf(out + o, sizeof out - o, "%.*s", (int)k, p);
			p += k;
			flags = REG_NOTBOL;
			continue;
		}
		o += (size_t)snprintf(out + o, sizeof out - o, "%.*s", (int)(s - p), p);
		if (!token) {
			for (const char *c = s; c < e && o + 1 < sizeof out; c++)
				out[o++] = '#';
			out[o] = '\0';
			p = e;
		} else {
			o += (size_t)snprintf(out + o, sizeof out - o, "%s", token);
			size_t blanks = 0;
			while (e[blanks] == ' ')
				blanks++;
			if (blanks && e[blanks])
				o += (size_t)snprintf(out + o, sizeof out - o, " ");
			p = e + blanks;
		}
		flags = REG_NOTBOL;
	}
	snprintf(out + o, sizeof out - o, "%s", p);
	snprintf(line, cap, "%s", out);
	regfree(&re);
}

static void replace_literal(char *line, size_t cap, const char *what, const char *token)
{
	if (!what || !*what)
		return;
	char out[8192];
	size_t o = 0;
	const char *p = line, *hit;
	while ((hit = strstr(p, what))) {
		o += (size_t)snprintf(out + o, sizeof out - o, "%.*s%s", (int)(hit - p), p, token);
		p = hit + strlen(what);
	}
	snprintf(out + o, sizeof out - o, "%s", p);
	snprintf(line, cap, "%s", out);
}

/* ---- tables ---- */
/* A digest cut by its column ends in "…": its hex, however short, is
 * masked with '#' as a whole one is. */
static void mask_cut_hex(char *line)
{
	for (char *e = strstr(line, "\xe2\x80\xa6"); e; e = strstr(e + 3, "\xe2\x80\xa6")) {
		char *s = e;
		while (s > line && (isdigit((unsigned char)s[-1]) || (s[-1] >= 'a' && s[-1] <= 'f')))
			s--;
		if (e - s >= 3 && (s == line || !word_char(s[-1])))
			memset(s, '#', (size_t)(e - s));
	}
}

/* ---- usage ---- */
/* The sandboxes view's usage figures (CPU%, MEM, PIDS, DISK and the
 * sparkline) vary from run to run: under a header holding them, each row's
 * span from CPU% to the end of the sparkline is masked as "<usage>",
 * counted in characters (the sparkline's blocks are UTF-8). A test that
 * needs a figure reads the raw screen (usage_mem_mib). */
static int usage_from = -1, usage_to = -1;

static size_t char_to_byte(const char *line, int chars)
{
	size_t b = 0;
	for (int c = 0; c < chars && line[b]; c++) {
		b++;
		while (((unsigned char)line[b] & 0xc0) == 0x80)
			b++;
	}
	return b;
}

/* The characters in line's first bytes bytes (UTF-8). */
static int chars_in(const char *line, size_t bytes)
{
	int n = 0;
	for (size_t i = 0; i < bytes && line[i]; i++)
		n += ((unsigned char)line[i] & 0xc0) != 0x80;
	return n;
}

static void mask_usage(char *line, size_t cap)
{
	const char *cpu = strstr(line, "CPU% ");
	if (cpu && strstr(line, "SESSION")) {
		const char *spark = strstr(line, "CPU 1M");
		/* In characters: a sort marker (↑, ↓) before them is one. */
		usage_from = chars_in(line, (size_t)(cpu - line));
		usage_to = spark ? chars_in(line, (size_t)(spark - line)) + 12 + 1
				 : chars_in(line, strlen(line));
		return;
	}
	if (usage_from < 0)
		return;
	if (!*line) {
		usage_from = usage_to = -1;
		return;
	}
	size_t from = char_to_byte(line, usage_from), to = char_to_byte(line, usage_to);
	if (from >= strlen(line))
		return;
	char out[8192 + sizeof "<usage> "]; /* a whole line of the screen, and the mark */
	snprintf(out, sizeof out, "%.*s<usage> %s", (int)from, line, line + to);
	/* Back into the line, cut to its cap as the screen's lines are. */
	size_t len = strlen(out);
	if (len >= cap)
		len = cap - 1;
	memcpy(line, out, len);
	line[len] = '\0';
}

static char *normalise(const char *screen)
{
	usage_from = usage_to = -1;
	size_t cap = strlen(screen) * 2 + 4096, used = 0;
	char *out = malloc(cap);
	out[0] = '\0';
	for (const char *p = screen; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char line[8192];
		snprintf(line, sizeof line, "%.*s", (int)n, p);
		mask_usage(line, sizeof line); /* ---- usage ---- */
		/* The host's load and memory vary: the header's figures. */
		replace_all(line, sizeof line,
			    "load [0-9]+\\.[0-9]{2}( mem [0-9]+%)?( budget [0-9]+%)?( img ([0-9]+%|-))?",
			    "load <host>");
		replace_literal(line, sizeof line, files, "<FILES>");
		/* A title holding the checkout's path is centred by its length,
		 * which varies with where the tree was cloned: left-justify it. */
		if (strstr(line, "<FILES>"))
			memmove(line, line + strspn(line, " "), strlen(line + strspn(line, " ")) + 1);
		replace_literal(line, sizeof line, h.state_dir, "<STATE>");
		char tilde[4200];
		snprintf(tilde, sizeof tilde, "~/%s", strrchr(h.state_dir, '/') + 1);
		replace_literal(line, sizeof line, tilde, "<STATE>");
		if (have_daemon) {
			if (tls_target[0]) /* ---- tls: the target, named as the socket is ---- */
				replace_literal(line, sizeof line, tls_target, "<DAEMON>/sock");
			replace_literal(line, sizeof line, d.dir, "<DAEMON>");
			snprintf(tilde, sizeof tilde, "~/%s", strrchr(d.dir, '/') + 1);
			replace_literal(line, sizeof line, tilde, "<DAEMON>");
		}
		/* A runtime's state root, in a leak's holder, cut by its column. */
		replace_all(line, sizeof line, "--root /[^ ]*", "--root <path>");
		replace_all(line, sizeof line, "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}",
			    "YYYY-MM-DD hh:mm:ss");
		replace_all(line, sizeof line, "[0-9]{8}T[0-9]{6}Z", "YYYYMMDDThhmmssZ");
		/* ---- tables ---- */
		/* A record's times, to the millisecond (B28). */
		replace_all(line, sizeof line, "hh:mm:ss\\.[0-9]{3}Z", "hh:mm:ss.mmmZ");
		/* A view whose load failed says since when its rows are stale. */
		replace_all(line, sizeof line, "since [0-9]{2}:[0-9]{2}:[0-9]{2}",
			    "since hh:mm:ss");
		/* The sandbox's ids (evidence of its mounts) vary with the state
		 * directory, and their length moves where the line is cut. */
		replace_all(line, sizeof line, "(uid|gid)=[0-9].*$", "<ids>");
		/* ---- inflight: a dead engine's pid and when it died; the
		 * timeline's times ---- */
		replace_all(line, sizeof line, "pid [0-9]+", "pid <pid>");
		replace_all(line, sizeof line, "engine [0-9]+", "engine <pid>");
		replace_all(line, sizeof line, "~[0-9]{2}:[0-9]{2}:[0-9]{2} UTC", "~hh:mm:ss UTC");
		if (strstr(screen, "Timeline["))
			replace_all(line, sizeof line, "^[0-9]{2}:[0-9]{2}:[0-9]{2}", "hh:mm:ss");
		mask_cut_hex(line);
		/* ---- truth: a spinner's frame (a cell still running) ---- */
		if (strchr("|/-\\", line[0]) && line[0] && line[1] == ' ' && strstr(line, "..."))
			line[0] = '*';
		replace_all(line, sizeof line, "[0-9a-f]{6,}", NULL);
		replace_all(line, sizeof line, "[0-9]+(\\.[0-9]+)? ms|[0-9]+(ms|s|m|h|d)", "<dur>");
		/* ---- light: the daemon's uptime, its unit cut off at 80 columns ---- */
		replace_all(line, sizeof line, "up [0-9]+$", "up <dur>");
		/* ---- light: a store copy's absolute times (UTC hh:mm) ---- */
		replace_all(line, sizeof line, "[0-9]{2}:[0-9]{2}", "hh:mm");
		if (used + strlen(line) + 2 > cap) {
			cap = (used + strlen(line) + 2) * 2;
			out = realloc(out, cap);
		}
		used += (size_t)sprintf(out + used, "%s\n", line);
		p += n + (e ? 1 : 0);
	}
	return out;
}

/* The saved screen FILES/NAME.txt, raw. */
static char *shot(const char *name)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.txt", files, name);
	char *s = harness_slurp(path);
	cr_assert_not_null(s, "the console saved no screen %s", name);
	return s;
}

/* Compares FILES/NAME.txt, normalised, with tests/tui/expected/NAME.txt. */
static void screen(const char *name)
{
	char *raw = shot(name);
	char *got = normalise(raw);
	free(raw);
	screen_compare(BH_TUI_EXPECTED, name, got);
}

/* Asserts what a raw screen holds, beyond the comparison. */
static void screen_has(const char *name, const char *text)
{
	char *s = shot(name);
	cr_assert_not_null(strstr(s, text), "screen %s lacks \"%s\":\n%s", name, text, s);
	free(s);
}

static void screen_lacks(const char *name, const char *text)
{
	char *s = shot(name);
	cr_assert_null(strstr(s, text), "screen %s shows \"%s\":\n%s", name, text, s);
	free(s);
}

/* ---- fixtures ---- */

struct opened {
	bool done;
	char err[512];
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct opened *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
}

static bh_session *open_for_run(enum bh_tier tier, const char *run_key, const char *owner)
{
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN,
				    .languages = 1u << BH_LANG_PYTHON, .principal = "agent",
				    .run_key = run_key, .owner = owner};
	struct opened w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, on_open, &w, &s, &err), 0, "open: %s", err ? err->msg : "?");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0, "open: %s", err ? err->msg : "?");
	cr_assert_str_empty(w.err, "the session did not open: %s", w.err);
	return s;
}

static void cell_says(bh_session *s, const char *code, const char *want)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered, "%s: %s", code, o->err_msg ? o->err_msg : "no answer");
	cr_assert_str_eq(o->out, want, "%s", code);
	cell_outcome_free(o);
}

/* A store with history, made by the embedded engine and copied while no
 * engine runs: run conv-1 had two sandboxes (three cells, then one), run
 * conv-2 one on the kernel tier. Leaves FILES/store.db. */
static void make_store(void)
{
	bh_session *a = open_for_run(BH_TIER_CONTAINER, "conv-1", "team-a");
	cell_says(a, "1+1", "2\n");
	cell_says(a, "x = 3", "");
	cell_says(a, "x * 2", "6\n");
	char last[65], reason[32];
	harness_close_session(&h, a, last, reason);
	bh_session *b = open_for_run(BH_TIER_CONTAINER, "conv-1", "team-a");
	cell_says(b, "print('fresh')", "fresh\n");
	harness_close_session(&h, b, last, reason);
	bh_session *c = open_for_run(BH_TIER_KERNEL, "conv-2", "team-b");
	cell_says(c, "2 ** 10", "1024\n");
	harness_close_session(&h, c, last, reason);
	close_engine();
	char *out = sh("set -e; test ! -s '%s/bulkhead.db-wal'; cp '%s/bulkhead.db' '%s/store.db'; "
		       "mkdir '%s/nobin'; echo copied",
		       h.state_dir, h.state_dir, files, files);
	cr_assert_str_eq(out, "copied\n", "%s", out);
	free(out);
}

/* --db on the copy, with a PATH that holds no runtime at all. */
static void console_db(const char *script, const char *db)
{
	char args[512], env[4500];
	snprintf(args, sizeof args, "--db %s", db);
	snprintf(env, sizeof env, "PATH='%s/nobin'", files);
	console(script, args, env);
}

/* ---- 1. the embedded engine: a sandbox's whole life from the console ---- */

TestSuite(console, .init = setup, .fini = teardown, .timeout = 600);

Test(console, a_sandbox_opened_from_the_console_runs_cells_pauses_and_closes_after_a_confirm)
{
	close_engine();
	console("n\n"
		":save-display life-open-prompt\n"
		"<Enter>\n"
		"x\n"
		"1+1\n"
		":save-display life-cell-prompt\n"
		"<Enter>\n"
		":save-display life-ran-1plus1\n"
		"x\n"
		"x = 3\n"
		"<Enter>\n"
		"x\n"
		"x * 2\n"
		"<Enter>\n"
		":save-display life-ran-x-times-2\n"
		"p\n"
		":save-display life-paused\n"
		"<C-d>\n"
		":save-display life-close-confirm\n"
		"y\n"
		":save-display life-closed\n"
		"a\n"
		":save-display life-closed-all\n"
		":rec\n"
		":save-display life-records\n"
		":events\n"
		":save-display life-events\n"
		":q\n",
		"", NULL);
	screen("life-open-prompt");
	screen("life-cell-prompt");
	screen("life-ran-1plus1");
	screen_has("life-ran-1plus1", " python  exit 0  "); /* the answers pane */
	screen_has("life-ran-1plus1", " interpreter_started\n  2\n");
	screen("life-ran-x-times-2");
	screen_has("life-ran-x-times-2", "\n  6\n");
	screen("life-paused");
	screen_has("life-paused", " paused ");
	screen("life-close-confirm");
	screen_has("life-close-confirm", "close sandbox ");
	screen("life-closed");
	screen_has("life-closed", "sessions: 1 ended");
	screen_has("life-closed", "Sandboxes[0]"); /* it left the live list */
	screen("life-closed-all");
	screen_has("life-closed-all", " closed ");   /* `a` shows the ended ones too */
	screen("life-records");
	screen_has("life-records", "interpreter_started");
	screen("life-events");
	screen_has("life-events", "pausing -> paused");
	screen_has("life-events", "ended      ");
}

Test(console, the_prompt_runs_multi_line_and_javascript_cells_and_sandboxes_hibernate_resume_and_die)
{
	close_engine();
	console("n\n"
		"<Enter>\n"
		"x\n"
		"y = 20<C-o>print(y + 1)\n"
		":save-display acts-multi-line-prompt\n"
		"<Enter>\n"
		":save-display acts-multi-line-ran\n"
		"x\n"
		"<C-t>\n"
		"console.log(6 * 7)\n"
		":save-display acts-javascript-prompt\n"
		"<Enter>\n"
		":save-display acts-javascript-ran\n"
		"h\n"
		":save-display acts-hibernated\n"
		"r\n"
		":save-display acts-resumed\n"
		"x\n"
		"<C-t>\n" /* the editor kept javascript, the last cell's language */
		"print(y)\n"
		"<Enter>\n"
		":save-display acts-state-survived\n"
		"n\n"
		"container - o1\n"
		"<Enter>\n"
		":save-display acts-second-opened\n"
		"<C-k>\n"
		":save-display acts-kill-confirm\n"
		"y\n"
		":save-display acts-killed\n"
		":events\n"
		":save-display acts-events\n"
		":q\n",
		"", NULL);
	screen("acts-multi-line-prompt");
	screen_has("acts-multi-line-prompt", "... print(y + 1)");
	screen("acts-multi-line-ran");
	screen_has("acts-multi-line-ran", " interpreter_started\n  21\n");
	screen("acts-javascript-prompt");
	screen_has("acts-javascript-prompt", "[javascript]");
	screen("acts-javascript-ran");
	screen_has("acts-javascript-ran", " javascript  exit 0  ");
	screen_has("acts-javascript-ran", "\n  42\n");
	screen("acts-hibernated");
	screen("acts-resumed");
	screen("acts-state-survived");
	screen_has("acts-state-survived", "\n  20\n");
	screen("acts-second-opened");
	screen("acts-kill-confirm");
	screen("acts-killed");
	screen_has("acts-killed", "sessions: 1 ready, 1 ended");
	screen("acts-events");
}

/* ---- light: up/down in a multi-line cell move between its lines; the
 * history only from its first line (up) or its last (down) ---- */
Test(console, up_and_down_in_a_multi_line_cell_move_between_lines_and_walk_history_at_its_ends)
{
	close_engine();
	console("n\n"
		"<Enter>\n"
		"x\n"
		"print(1)\n"
		"<Enter>\n"
		"x\n"
		"a = 1<C-o>b = 22<C-o>print(a + b)\n"
		"<Up>\n"
		"X\n"
		"<Up>\n"
		"Y\n"
		":save-display lines-edited-above\n"
		"<Up>\n"
		":save-display lines-history-from-the-first\n"
		"<Down>\n"
		"<Down>\n"
		"<Down>\n"
		"Z\n"
		":save-display lines-back-to-the-draft\n"
		"<Esc>\n"
		":q\n",
		"", NULL);
	/* From the third line's end, up lands at the end of each shorter one. */
	screen("lines-edited-above");
	screen_has("lines-edited-above", "a = 1Y");
	screen_has("lines-edited-above", "... b = 22X");
	screen_has("lines-edited-above", "... print(a + b)");
	/* Up on the first line: the earlier cell. */
	screen("lines-history-from-the-first");
	screen_has("lines-history-from-the-first", "print(1)");
	screen_lacks("lines-history-from-the-first", "b = 22X");
	/* Down from it: the cell being written again, the cursor at its end;
	 * down on its last line goes nowhere, and Z lands there. */
	screen("lines-back-to-the-draft");
	screen_has("lines-back-to-the-draft", "a = 1Y");
	screen_has("lines-back-to-the-draft", "... b = 22X");
	screen_has("lines-back-to-the-draft", "... print(a + b)Z");
}

/* ---- 2. attached to a daemon ---- */

/* A JSON string member of an answer, the simple way (ids and digests). */
static void member(const char *json, const char *name, char *out, size_t n)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":\"", name);
	const char *k = strstr(json, key);
	cr_assert_not_null(k, "no %s in %s", name, json);
	k += strlen(key);
	size_t len = strcspn(k, "\"");
	snprintf(out, n, "%.*s", (int)len, k);
}

/* Another client's session over HTTP: its id and fingerprint. */
static void http_open(const char *token, char id[64], char fp[65])
{
	struct answer *a = daemon_call(&d, token, SVC "OpenSession", "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	member(a->body, "sessionId", id, 64);
	member(a->body, "session", fp, 65);
	answer_free(a);
}

static void http_cell(const char *token, const char *id, const char *code)
{
	char body[512];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"cell\":{\"language\":\"python\",\"code\":\"%s\"}}",
		 id, code);
	struct answer *a = daemon_call(&d, token, SVC "SessionRun", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
}

/* A daemon of the test's own (container tier) for a console to attach to:
 * the console's arguments (more after them) and its environment, the token
 * with both scopes. */
/* ---- tls: BH_TUI_ATTACH_TLS=1 (scripts/test.sh runs a set of the attached
 * tests so) makes the daemon serve https://127.0.0.2:PORT with a test CA
 * and the console attach there with --cacert: the same screens, from a
 * daemon reached over TLS. Only the header's "attached to TARGET" names it
 * differently, and is read as the socket's name (tls_target). The port is
 * https's own, 443, so the target is no longer than the socket's name and
 * the header is cut at 80 columns where it always was; the first of
 * 127.0.0.2..9 free on it is taken (tui and tui-asan may run at once). ---- */
static int free_https_address(void)
{
	for (int x = 2; x <= 9; x++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr_assert_geq(fd, 0);
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(443),
					 .sin_addr.s_addr = htonl(0x7f000000u | (unsigned)x)};
		int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
		close(fd);
		if (r == 0)
			return x;
	}
	cr_assert_fail("none of 127.0.0.2..9 has port 443 free");
	return -1;
}
static bool attach_tls(void)
{
	const char *v = getenv("BH_TUI_ATTACH_TLS");
	return v && !strcmp(v, "1");
}

static void attach_daemon(char args[4400], char env[512], const char *more)
{
	close_engine();
	if (attach_tls()) { /* ---- tls ---- */
		int x = free_https_address();
		char san[32];
		snprintf(san, sizeof san, "IP:127.0.0.%d", x);
		test_ca_make(files, "ca", "bulkhead console TLS test CA");
		test_ca_cert(files, &(struct test_cert){.ca = "ca", .name = "daemon", .subject = "/CN=daemon",
							  .san = san, .usage = "serverAuth"});
		char extra[9000];
		snprintf(extra, sizeof extra,
			 "--tier container --listen 127.0.0.%d:443 --tls-cert '%s/daemon.pem' "
			 "--tls-key '%s/daemon.key'", x, files, files);
		daemon_start(&d, extra);
		have_daemon = true;
		snprintf(tls_target, sizeof tls_target, "https://127.0.0.%d", x);
		snprintf(env, 512, "BULKHEAD_TOKEN='%s'", d.both_token);
		snprintf(args, 4400, "--attach %s --cacert '%s/ca.pem'%s", tls_target, files, more);
		return;
	}
	daemon_start(&d, "--tier container");
	have_daemon = true;
	snprintf(env, 512, "BULKHEAD_TOKEN='%s'", d.both_token);
	snprintf(args, 4400, "--attach '%s'%s", d.sock, more);
}

Test(console, attached_it_shows_a_session_another_client_opened_within_one_refresh)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	live_start(args, env);
	live_send(":save-display attached-before");
	live_wait_screen("attached-before");
	/* Another client (the runner) opens a session and runs a cell. */
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	http_cell(d.run_token, id, "1+1");
	/* One refresh period, then a key that changes nothing: the loop was
	 * blocked reading the script, so the periodic refresh runs first. */
	usleep(2100 * 1000);
	live_send("<Down>\n"
		  ":save-display attached-other-client\n"
		  "x\n"
		  ":save-display attached-not-mine\n"
		  "n\n"
		  "<Enter>\n"
		  ":save-display attached-opened\n"
		  "/\n"
		  "mine\n"
		  "<Enter>\n"
		  ":save-display attached-mine\n"
		  "x\n"
		  "1+1\n"
		  "<Enter>\n"
		  ":save-display attached-ran\n"
		  "p\n"
		  ":save-display attached-paused\n"
		  "r\n"
		  ":save-display attached-resumed\n"
		  "<C-d>\n"
		  "y\n"
		  ":save-display attached-closed\n"
		  "<Esc>\n"
		  "n\n"
		  "- vm\n"
		  "<Enter>\n"
		  ":save-display attached-open-refused\n"
		  "/runner\n"
		  "<Enter>\n"
		  "h\n"
		  ":save-display attached-hibernate-refused\n"
		  "<C-k>\n"
		  "y\n"
		  ":save-display attached-killed-other\n"
		  ":runs\n"
		  ":save-display attached-runs\n"
		  ":rec\n"
		  ":save-display attached-records\n"
		  "<Enter>\n"
		  ":save-display attached-record\n"
		  ":events\n"
		  ":save-display attached-events\n"
		  ":walls\n"
		  ":save-display attached-walls\n"
		  ":leaks\n"
		  ":save-display attached-leaks\n");
	live_finish();
	screen("attached-before");
	screen_has("attached-before", "(none)");
	screen("attached-other-client");
	char row[80];
	snprintf(row, sizeof row, "%.12s ready", fp);
	screen_has("attached-other-client", row);
	screen_has("attached-other-client", "runner");
	screen("attached-not-mine");
	screen_has("attached-not-mine", "cells run only in sandboxes this console opened");
	screen("attached-opened");
	screen("attached-mine");
	screen("attached-ran");
	screen_has("attached-ran", " interpreter_started\n  2\n");
	screen("attached-paused");
	screen("attached-resumed");
	screen("attached-closed");
	screen("attached-open-refused");
	screen_has("attached-open-refused", "open: ");
	screen("attached-hibernate-refused");
	screen_has("attached-hibernate-refused", "hibernate ");
	screen("attached-killed-other");
	screen_has("attached-killed-other", "sessions: 2 ended");
	screen("attached-runs");
	screen("attached-records");
	screen("attached-record");
	screen_has("attached-record", "record_sha256 verifies");
	screen("attached-events");
	screen("attached-walls");
	screen_has("attached-walls", "vm             Nothing ran (isolation)");
	screen("attached-leaks");
}

/* Runs `bulkhead ARGS` with env; its stdout and stderr (caller frees) and status. */
static char *cli_run(int *status, const char *env, const char *args)
{
	char cmd[16384];
	snprintf(cmd, sizeof cmd, "env %s BULKHEAD_INTERP='%s' '%s' %s 2>&1", env, BH_TEST_INTERP,
		 BH_TEST_CLI, args);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t cap = 65536, len = 0, n;
	char *out = malloc(cap);
	while (len < cap - 1 && (n = fread(out + len, 1, cap - len - 1, f)) > 0)
		len += n;
	out[len] = '\0';
	*status = pclose(f);
	return out;
}

/* The words after "bulkhead: " on the CLI's first line (caller frees). */
static char *cli_refusal(const char *out)
{
	const char *p = strstr(out, "bulkhead: ");
	cr_assert_not_null(p, "the CLI did not say why: %s", out);
	p += strlen("bulkhead: ");
	return strndup(p, strcspn(p, "\n"));
}

/* A daemon's answer gone wrong on the way (a proxy rewrites it) is refused by
 * the CLI and by the attached console alike, with the same message: they
 * decode it with the same codec. A session whose calls is a word, and a leak
 * without its kind. */
Test(console, attached_a_malformed_answer_is_refused_as_the_cli_refuses_it_in_the_same_words)
{
	close_engine();
	daemon_start(&d, "--tier container");
	have_daemon = true;
	screen_cols = 200; /* the refusal is shown whole in the view's title */
	char env[512], args[4400], sock[4300];
	snprintf(env, sizeof env, "BULKHEAD_TOKEN='%s'", d.both_token);
	snprintf(sock, sizeof sock, "%s/proxy.sock", d.dir);

	proxy_start_answering(&px, d.sock, sock, "/ListSessions",
			      "{\"sessions\":[{\"session\":\"" "feedfacefeedface" "\","
			      "\"state\":\"ready\",\"calls\":\"many\"}]}");
	int st = 0;
	snprintf(args, sizeof args, "ls --attach '%s'", sock);
	char *out = cli_run(&st, env, args);
	cr_assert_neq(st, 0, "ls believed the answer: %s", out);
	char *words = cli_refusal(out);
	cr_assert_str_eq(words, "The code may have run, and there is no checked answer for it: "
				"ListSessions: sessions[0].calls must be an integer (a number or a "
				"decimal string)");
	free(words);
	free(out);
	/* ---- light: the console reads its sessions from Overview, whose
	 * sessions are ListSessions' message, read by the same decoder ---- */
	proxy_stop(&px);
	proxy_start_answering(&px, d.sock, sock, "/Overview",
			      "{\"token\":\"t\",\"changed\":true,\"usage\":{\"sessions\":[]},"
			      "\"sessions\":{\"sessions\":[{\"session\":\"" "feedfacefeedface" "\","
			      "\"state\":\"ready\",\"calls\":\"many\"}]}}");
	snprintf(args, sizeof args, "--attach '%s'", sock);
	console(":save-display refused-sessions\n", args, env);
	screen_has("refused-sessions", "sessions: ?");
	screen_has("refused-sessions", "ListSessions: sessions[0].calls must be an integer");
	screen_lacks("refused-sessions", "feedface");
	proxy_stop(&px);

	proxy_start_answering(&px, d.sock, sock, "/Leaks",
			      "{\"leaks\":[{\"sandbox\":\"bh-nobody\",\"reason\":\"a leak\"}]}");
	snprintf(args, sizeof args, "leaks --attach '%s'", sock);
	out = cli_run(&st, env, args);
	cr_assert_neq(st, 0, "leaks believed the answer: %s", out);
	words = cli_refusal(out);
	cr_assert(strstr(words, "Leaks: leaks[0].kind \"\" is not a kind of leak this build knows"),
		  "%s", words);
	snprintf(args, sizeof args, "--attach '%s'", sock);
	console(":leaks\n:save-display refused-leaks\n", args, env);
	/* The view's title keeps its rows' age and the refusal, whole. */
	char shown[1024];
	snprintf(shown, sizeof shown, ": %s)", words);
	screen_has("refused-leaks", "Leaks[0] (not loaded since ");
	screen_has("refused-leaks", shown);
	screen_lacks("refused-leaks", "bh-nobody");
	free(words);
	free(out);
}

Test(console, attached_and_readonly_it_shows_the_sessions_but_no_action_and_refuses_one)
{
	char env[512], args[4400];
	attach_daemon(args, env, " --readonly");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	console(":save-display attached-readonly\n"
		"p\n"
		":save-display attached-readonly-refused\n"
		"<C-d>\n"
		":save-display attached-readonly-refused-close\n"
		":q\n",
		args, env);
	screen("attached-readonly");
	screen_has("attached-readonly", "[read-only]");
	screen("attached-readonly-refused");
	screen_has("attached-readonly-refused", "read-only console: actions are off (--readonly)");
	screen("attached-readonly-refused-close");
	screen_lacks("attached-readonly-refused-close", "close sandbox");
	/* Nothing happened to the runner's session. */
	struct answer *a = daemon_call(&d, d.op_token, "bulkhead.v1.OperatorService/ListSessions", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\"ready\""), "%s", a->body);
	answer_free(a);
}

/* The review's repro (B3): attached, the daemon killed. The rows stay, dim,
 * the title says since when they are stale and why, the failure is
 * flashed, and the header says "sessions: ?" once; a view drilled into
 * then says it never loaded. A daemon answering again (on the same socket
 * and state) takes the mark away. */
Test(console, attached_a_daemon_that_died_leaves_its_rows_marked_stale_until_it_answers_again)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	live_start(args, env);
	live_send(":save-display attached-alive");
	live_wait_screen("attached-alive");
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	d.pid = 0;
	live_send("<C-r>\n"
		  ":save-display attached-daemon-gone\n"
		  "<Enter>\n"
		  ":save-display attached-daemon-gone-records\n"
		  "<Esc>\n");
	live_wait_screen("attached-daemon-gone-records");
	daemon_restart(&d, "--tier container");
	live_send("<C-r>\n"
		  ":save-display attached-daemon-back\n");
	live_finish();
	screen("attached-alive");
	char row[80];
	snprintf(row, sizeof row, "%.12s ready", fp);
	screen_has("attached-alive", row);
	screen("attached-daemon-gone");
	/* ---- truth: the old row carries '~'; the header says the link is down ---- */
	snprintf(row, sizeof row, "%.12s~ready", fp);
	screen_has("attached-daemon-gone", row);
	screen_has("attached-daemon-gone", "Sandboxes[1] (stale since ");
	screen_has("attached-daemon-gone",
		   "sandboxes: Nothing ran (environment): cannot reach the daemon");
	screen_has("attached-daemon-gone", "DISCONNECTED since ");
	screen_lacks("attached-daemon-gone", "sessions: sessions");
	screen("attached-daemon-gone-records");
	char title[96];
	snprintf(title, sizeof title, "Records[0] (session %.12s) (not loaded since ", fp);
	screen_has("attached-daemon-gone-records", title);
	screen("attached-daemon-back");
	screen_lacks("attached-daemon-back", "stale since");
	screen_lacks("attached-daemon-back", "sessions: ?");
}

/* ---- 3. a store opened read-only, with no engine ---- */

Test(console, a_store_copy_opened_with_db_shows_records_and_sessions_with_no_engine_or_runtime)
{
	make_store();
	char *before = sh("sha256sum < '%s/store.db'", files);
	console_db(":save-display db-sandboxes\n"
		   "n\n"
		   ":save-display db-refuses-to-act\n"
		   ":rec\n"
		   ":save-display db-records\n"
		   "<Enter>\n"
		   ":save-display db-record-detail\n"
		   ":events\n"
		   ":save-display db-events\n"
		   ":leaks\n"
		   ":save-display db-leaks\n"
		   ":walls\n"
		   ":save-display db-walls\n"
		   ":q\n",
		   "store.db");
	screen("db-sandboxes");
	screen_has("db-sandboxes", "store store.db (read-only, no engine)");
	screen("db-refuses-to-act");
	screen_has("db-refuses-to-act", "a store opened with --db has no engine: nothing can act");
	screen("db-records");
	screen("db-record-detail");
	screen_has("db-record-detail", "record_sha256 verifies");
	screen("db-events");
	screen("db-leaks");
	screen("db-walls");
	char *after = sh("sha256sum < '%s/store.db'", files);
	cr_assert_str_eq(before, after, "the console changed the store it opened read-only");
	free(before);
	free(after);
}

Test(console, runs_drill_to_their_sandboxes_records_and_one_record_and_tables_filter_and_sort)
{
	make_store();
	/* Newest first: conv-2, then conv-1 with its two sandboxes. */
	console_db(":runs\n"
		   ":save-display drill-runs\n"
		   "G\n"
		   "<Enter>\n"
		   ":save-display drill-run-sandboxes\n"
		   "G\n"
		   "<Enter>\n"
		   ":save-display drill-sandbox-records\n"
		   "<Enter>\n"
		   ":save-display drill-record\n"
		   "<Esc>\n"
		   "<Esc>\n"
		   "<Esc>\n"
		   ":save-display drill-back-to-runs\n"
		   ":rec\n"
		   "/\n"
		   "kernel\n"
		   "<Enter>\n"
		   ":save-display drill-records-filtered\n"
		   "<Esc>\n"
		   "F\n"
		   ":save-display drill-records-sorted-by-flags\n"
		   ":sb conv-2\n"
		   ":save-display drill-sandboxes-filtered-by-command\n"
		   ":q\n",
		   "store.db");
	screen("drill-runs");
	screen("drill-run-sandboxes");
	screen_has("drill-run-sandboxes", "(run conv-1)");
	screen("drill-sandbox-records");
	screen("drill-record");
	screen_has("drill-record", "chain holds");
	screen("drill-back-to-runs");
	screen("drill-records-filtered");
	screen("drill-records-sorted-by-flags");
	screen_has("drill-records-sorted-by-flags", "FLAGS\xe2\x86\x91"); /* FLAGS↑: Shift+F */
	screen("drill-sandboxes-filtered-by-command");
	screen_has("drill-sandboxes-filtered-by-command", "Sandboxes[1] </conv-2>");
}

/* ---- 5. a record's digest and chain, re-verified on screen ---- */

static void make_tampered_store(void)
{
	make_store();
	/* Record 2 (conv-1's first sandbox, a container) now claims the kernel
	 * tier: isolation is digested, so the digest no longer matches. */
	char *out = sh("cp '%s/store.db' '%s/tampered.db' && "
		       "sqlite3 '%s/tampered.db' \"UPDATE records SET isolation = 'kernel' WHERE id = 2\" && echo ok",
		       files, files, files);
	cr_assert_str_eq(out, "ok\n", "%s", out);
	free(out);
}

/* ---- light: a copy's bytes, to show --db never changed them ---- */
static char *sha256_of(const char *path)
{
	char *out = sh("sha256sum < '%s' | cut -c1-64", path);
	return out;
}

/* The line of a screen that starts with prefix (caller frees). */
static char *line_starting(const char *name, const char *prefix)
{
	char *s = shot(name);
	size_t n = strlen(prefix);
	for (char *l = strtok(s, "\n"); l; l = strtok(NULL, "\n"))
		if (!strncmp(l, prefix, n)) {
			char *copy = strdup(l);
			free(s);
			return copy;
		}
	cr_assert_fail("screen %s has no line starting \"%s\"", name, prefix);
	return NULL;
}

Test(console, a_tampered_record_does_not_match_and_the_untampered_next_one_verifies_with_its_chain)
{
	make_tampered_store();
	char copy[4400];
	snprintf(copy, sizeof copy, "%s/tampered.db", files);
	char *before = sha256_of(copy);
	console_db(":rec\n"
		   ":save-display tamper-records\n"
		   "g\n"
		   "<Down>\n"
		   "<Enter>\n"
		   ":save-display tamper-detail-tampered\n"
		   "<Esc>\n"
		   "<Down>\n"
		   "<Enter>\n"
		   ":save-display tamper-detail-next\n"
		   ":q\n",
		   "tampered.db");
	screen("tamper-records");
	/* ---- light: the list says it, each record verified (B24) ---- */
	char *row = line_starting("tamper-records", "2 ");
	cr_assert(strstr(row, " ✗ "), "record 2 is not marked tampered: %s", row);
	free(row);
	row = line_starting("tamper-records", "3 ");
	cr_assert(strstr(row, " ✓ "), "record 3 is not marked sound: %s", row);
	free(row);
	/* And bulkhead verify on the same copy, in words. */
	char *said = sh("'%s' verify --db '%s'; echo rc=$?", BH_TEST_CLI, copy);
	cr_assert(strstr(said, "record 2 (session ") && strstr(said, "its digest does not match"),
		  "%s", said);
	cr_assert(strstr(said, "rc=1\n"), "%s", said);
	free(said);
	char *after = sha256_of(copy);
	cr_assert_str_eq(after, before, "the copy opened with --db changed");
	free(after);
	free(before);
	screen("tamper-detail-tampered");
	screen_has("tamper-detail-tampered", "(record 2)");
	screen_has("tamper-detail-tampered", "record_sha256 DOES NOT MATCH");
	screen_lacks("tamper-detail-tampered", "verifies");
	screen("tamper-detail-next");
	screen_has("tamper-detail-next", "(record 3)");
	screen_has("tamper-detail-next", "record_sha256 verifies");
	screen_has("tamper-detail-next", "chain holds");
}

/* ---- light: leaks on a copy of a store taken after kill -9 (B24) ----
 * The daemon is killed with its session live; a copy of its store, opened
 * with --db (the console's :leaks and `bulkhead leaks --db`), lists that
 * row as abandoned: the dead engine's pid, not running, and its last sign
 * of life in UTC. The copy's bytes are the same after, and nothing was
 * made beside it (no -wal, no -shm). */
Test(console, db_on_a_copy_taken_after_kill_9_lists_the_dead_engines_live_rows_as_leaks)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	pid_t dead = d.pid;
	cr_assert_eq(kill(dead, SIGKILL), 0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);
	d.pid = 0;
	char *out = sh("mkdir -p '%s/nobin' && sqlite3 '%s/state/bulkhead.db' \".backup '%s/killed.db'\" "
		       "&& echo copied",
		       files, d.dir, files);
	cr_assert_str_eq(out, "copied\n", "%s", out);
	free(out);
	char copy[4400];
	snprintf(copy, sizeof copy, "%s/killed.db", files);
	char *before = sha256_of(copy);
	char pid_text[64], row[96];
	snprintf(pid_text, sizeof pid_text, "engine pid %d", (int)dead);
	snprintf(row, sizeof row, "under engine %d, not running; its last sign of life 20", (int)dead);

	char *said = sh("'%s' leaks --db '%s'; echo rc=$?", BH_TEST_CLI, copy);
	cr_assert(strstr(said, "abandoned"), "%s", said);
	char fp12[13];
	snprintf(fp12, sizeof fp12, "%.12s", fp);
	cr_assert(strstr(said, fp12), "the session is not listed: %s", said);
	cr_assert(strstr(said, pid_text), "%s", said);
	cr_assert(strstr(said, row), "%s", said);
	cr_assert(strstr(said, " UTC (from the store alone"), "%s", said);
	cr_assert(strstr(said, "rc=1\n"), "a leak is a non-zero status: %s", said);
	free(said);

	screen_cols = 240; /* the reason and the holder whole */
	console_db(":leaks\n"
		   "<C-w>\n" /* wide: the holder whole */
		   ":save-display db-leaks-after-kill\n"
		   ":q\n",
		   "killed.db");
	screen_has("db-leaks-after-kill", "Leaks[1]");
	screen_has("db-leaks-after-kill", fp12);
	screen_has("db-leaks-after-kill", pid_text);
	screen_has("db-leaks-after-kill", row);
	screen_lacks("db-leaks-after-kill", "leaks are found by an engine");

	char *after = sha256_of(copy);
	cr_assert_str_eq(after, before, "the copy opened with --db changed");
	free(after);
	free(before);
	out = sh("ls '%s' | grep -c 'killed.db-' || true", files);
	cr_assert_str_eq(out, "0\n", "--db made files beside the copy");
	free(out);
	/* The dead daemon's sandboxes: a new one on its directory reaps them. */
	daemon_restart(&d, "--tier container");
}

/* The console drawn on a real terminal (a pty), in colour: the SGR that
 * colours a line, looked up backwards from where its text was written. */
static int colour_before(const char *tty, size_t len, const char *text)
{
	const char *at = memmem(tty, len, text, strlen(text));
	cr_assert_not_null(at, "the terminal never showed \"%s\"", text);
	for (const char *p = at; p > tty; p--) {
		if (p[-1] != '\x1b' || p[0] != '[')
			continue;
		const char *q = p + 1;
		while (q < at && (isdigit((unsigned char)*q) || *q == ';'))
			q++;
		if (q >= at || *q != 'm')
			continue;
		/* The last foreground named in this SGR (30-37). */
		int fg = -1;
		for (const char *r = p + 1; r < q;) {
			int v = atoi(r);
			if (v >= 30 && v <= 37)
				fg = v - 30;
			if (v == 0 || v == 39)
				fg = fg >= 0 ? fg : 9;
			while (r < q && *r != ';')
				r++;
			r++;
		}
		if (fg >= 0)
			return fg;
	}
	return -1;
}

Test(console, a_tampered_record_is_red_and_a_sound_one_green_in_colour)
{
	make_tampered_store();
	char path[4400], cmd[16384], env[4500];
	snprintf(path, sizeof path, "%s/script.txt", files);
	write_script(path, ":rec\ng\n<Down>\n<Enter>\n<Esc>\n<Down>\n<Enter>\nc\n:q\n");
	snprintf(env, sizeof env, "PATH='%s/nobin' NO_COLOR=", files);
	console_cmd(cmd, sizeof cmd, path, "--db tampered.db", env, true);
	int master = -1;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	pid_t pid = forkpty(&master, NULL, NULL, &ws);
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		harness_child_signals_default();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	live_pid = pid;
	size_t cap = 1 << 20, len = 0;
	char *tty = malloc(cap);
	for (int i = 0; i < RUN_TIMEOUT_S * 10; i++) {
		struct pollfd pfd = {.fd = master, .events = POLLIN};
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t n = read(master, tty + len, cap - len - 1);
		if (n <= 0)
			break; /* EIO: the console is gone */
		len += (size_t)n;
		cr_assert_lt(len, cap - 1, "the console wrote too much");
	}
	close(master);
	int st = reap_console(pid);
	live_pid = 0;
	tty[len] = '\0';
	cr_assert_eq(st, 0, "the console exited %d", st);
	cr_assert_eq(colour_before(tty, len, "record_sha256 DOES NOT MATCH"), 1 /* red */,
		     "the mismatch is not drawn red");
	cr_assert_eq(colour_before(tty, len, "record_sha256 verifies"), 2 /* green */,
		     "the verified digest is not drawn green");
	cr_assert_eq(colour_before(tty, len, "chain holds"), 2, "the chain is not drawn green");
	/* ---- tables ---- */
	/* A real terminal: bracketed paste on, and off again at exit; `c` on
	 * the record put its digest on the clipboard (OSC 52, base64). */
	cr_assert_not_null(memmem(tty, len, "\033[?2004h", 8), "bracketed paste was not turned on");
	cr_assert_not_null(memmem(tty, len, "\033[?2004l", 8), "bracketed paste was not turned off");
	const char *osc = memmem(tty, len, "\033]52;c;", 7);
	cr_assert_not_null(osc, "c sent no OSC 52");
	cr_assert_eq(strspn(osc + 7, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), 88,
		     "OSC 52 did not carry a 64-character digest: %.100s", osc + 7);
	cr_assert_eq(osc[7 + 88], '\a');
	free(tty);
}

/* ---- 5b. a long history: the newest rows, and a record past #1001 ---- */

/* More events and records than one page (1000): the audit's F9 and the
 * console review's B5. One session of LONG_RECORDS records, so a record's
 * id is its sequence; events are ids 1..LONG_EVENTS. */
#define LONG_EVENTS 1200
#define LONG_RECORDS 1005

static const char long_script[] = ":events\n"
				  ":save-display long-events\n"
				  "[\n"
				  ":save-display long-events-older\n"
				  "]\n"
				  ":save-display long-events-newest-again\n"
				  ":rec\n"
				  ":save-display long-records\n"
				  "<Up>\n"
				  "<Up>\n"
				  "<Enter>\n"
				  ":save-display long-record-1003\n"
				  ":q\n";

static void long_history_into(const char *db)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = LONG_RECORDS,
					       .events = LONG_EVENTS});
}

/* The newest event shows (the last row, selected) and the page before is
 * reachable; the records view is the newest page; record #1003's chain
 * holds (its predecessor found by sequence). */
static void long_history_seen(int64_t last_event)
{
	char id[32];
	snprintf(id, sizeof id, "\n%-5lld ", (long long)last_event);
	screen_has("long-events", "Events[1000]");
	screen_has("long-events", id);
	screen_has("long-events-older", "(older: before #");
	screen_lacks("long-events-older", id);
	screen_has("long-events-newest-again", id);
	screen_lacks("long-events-newest-again", "(older: before #");
	screen_has("long-records", "Records[1000]");
	screen_has("long-records", " 1005 python"); /* the newest record, by its SEQ */
	screen_has("long-record-1003", "sequence           1003");
	screen_has("long-record-1003", "chain holds: previous_sha256 is record #1002's digest");
	screen_lacks("long-record-1003", "BROKEN");
}

Test(console, a_long_history_shows_the_newest_events_and_records_and_record_1003s_chain_holds)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/long.db", files);
	long_history_into(db);
	console_db(long_script, "long.db");
	screen("long-events");
	screen("long-events-older");
	screen("long-events-newest-again");
	screen("long-records");
	screen("long-record-1003");
	long_history_seen(LONG_EVENTS);
	screen_has("long-events-older", "Events[200] (older: before #201)");
}

/* What long_script's screens show of a long history through any source:
 * the newest page of each view, and record 1003's chain checked. */
static void long_history_screens_hold(void)
{
	screen_has("long-events", "Events[1000]");
	screen_has("long-records", "Records[1000]");
	screen_has("long-records", " 1005 python");
	screen_has("long-record-1003", "chain holds: previous_sha256 is record #1002's digest");
	screen_lacks("long-record-1003", "BROKEN");
	screen_has("long-events-older", "(older: before #");
}

/* The same through the other two sources: the embedded engine on the
 * state directory, and a daemon (its store grown while it runs). */
Test(console, embedded_and_attached_the_newest_events_and_records_show_and_record_1003s_chain_holds)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/bulkhead.db", h.state_dir);
	long_history_into(db);
	console(long_script, NULL, NULL);
	long_history_screens_hold();

	char env[512], args[4400];
	attach_daemon(args, env, "");
	char ddb[4400];
	snprintf(ddb, sizeof ddb, "%s/state/bulkhead.db", d.dir);
	long_history_into(ddb);
	console(long_script, args, env);
	long_history_screens_hold();
}

/* ---- 4. leaks: a planted orphan, found and reaped ---- */

Test(console, the_leaks_view_lists_a_planted_orphan_and_reaps_it_after_the_confirm)
{
	/* A bundle like a real sandbox's, for a container nothing registered.
	 * An engine opening deletes what it finds under its runtime root, so
	 * the orphan is planted while the console runs. */
	bh_session *s = open_for_run(BH_TIER_CONTAINER, NULL, NULL);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	char name[64], cgparent[128];
	snprintf(name, sizeof name, "%s", info.sandbox);
	snprintf(cgparent, sizeof cgparent, "%s", bh_engine_cgroup_parent(h.e));
	char root[4200];
	snprintf(root, sizeof root, "%s", bh_engine_runtime_root(h.e, BH_TIER_CONTAINER));
	char config[4300];
	snprintf(config, sizeof config, "%s/orphan.json", files);
	plant_orphan_bundle(h.state_dir, cgparent, name, "bh-orphan", config);
	char last[65], reason[32];
	harness_close_session(&h, s, last, reason);
	close_engine();

	live_start("", NULL);
	live_send(":leaks\n"
		  ":save-display leaks-none-yet\n");
	live_wait_screen("leaks-none-yet");
	snprintf(orphan_root, sizeof orphan_root, "%s", root);
	plant_orphan_start(h.state_dir, orphan_root, "bh-orphan", config, false);
	live_send("<C-r>\n"
		  ":save-display leaks-orphan\n"
		  "<Enter>\n"
		  ":save-display leaks-timeline\n"
		  "<Esc>\n"
		  "<Esc>\n"
		  "e\n"
		  ":save-display leaks-export-prompt\n"
		  /* The default's UTC stamp (16 characters) becomes a fixed name. */
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "incident\n"
		  "<Enter>\n"
		  ":save-display leaks-exported\n"
		  "<C-d>\n"
		  ":save-display leaks-reap-confirm\n"
		  "y\n"
		  ":save-display leaks-capture-before-reap\n"
		  "<Enter>\n"
		  ":save-display leaks-reaped\n"
		  ":leaks\n"
		  ":save-display leaks-empty\n"
		  ":events\n"
		  ":save-display leaks-events\n");
	live_finish();
	screen("leaks-none-yet");
	screen("leaks-orphan");
	screen_has("leaks-orphan", "orphan       bh-orphan");
	screen("leaks-timeline");
	screen("leaks-export-prompt");
	screen_has("leaks-export-prompt", "report to (.md and .json): ./bulkhead-leaks-");
	screen("leaks-exported");
	screen_has("leaks-exported", "wrote /");
	screen("leaks-reap-confirm");
	screen_has("leaks-reap-confirm", "reap the 1 finding listed? [y/N]");
	screen("leaks-capture-before-reap");
	screen_has("leaks-capture-before-reap", "capture before the reap, into: ./bulkhead-evidence-");
	screen("leaks-reaped");
	/* ---- capture: the reap captured first, and the evidence verifies ---- */
	char *evidence = sh("printf %%s '%s'/bulkhead-evidence-*/01-bh-orphan", files);
	size_t n_ok = 0;
	char msha[65];
	char *problems = NULL;
	bh_error *cerr = NULL;
	cr_assert_eq(bh_capture_verify(evidence, &n_ok, msha, &problems, &cerr), 0, "%s: %s", evidence,
		     cerr ? cerr->msg : "");
	cr_assert_null(problems, "%s", problems);
	free(evidence);
	screen("leaks-empty");
	screen_has("leaks-empty", "Leaks[0]");
	screen("leaks-events");
	char *report = sh("cat '%s'/bulkhead-leaks-*.md", files);
	cr_assert_not_null(strstr(report, "| orphan | bh-orphan |"), "%s", report);
	free(report);
	char *left = sh("crun --root '%s' list -q", orphan_root);
	cr_assert_str_empty(left, "still running: %s", left);
	free(left);
}

/* The audit's F12: the export's names are predictable (the UTC second) and
 * the console often runs from a shared directory, as root. Links planted
 * at the next minute's names, and at a :save-display name, are not
 * followed: the file they point at is unchanged, and the export takes the
 * next free name. */
Test(console, planted_links_at_the_export_and_save_display_names_are_not_followed)
{
	close_engine();
	char *r = sh("set -e; cd '%s'; printf precious > target; ln -s target planted.txt; "
		     "now=$(date -u +%%s); for t in $(seq 0 90); do "
		     "s=$(date -u -d @$((now + t)) +%%Y%%m%%dT%%H%%M%%SZ); "
		     "ln -s target bulkhead-leaks-$s.md; ln -s target bulkhead-leaks-$s.json; done; echo planted",
		     files);
	cr_assert_str_eq(r, "planted\n", "%s", r);
	free(r);
	console(":leaks\n"
		"e\n"
		"<Enter>\n"
		":save-display leaks-export-beside-links\n"
		":save-display planted\n"
		":save-display save-display-refused\n"
		":q\n",
		NULL, NULL);
	char *target = sh("cat '%s/target'", files);
	cr_assert_str_eq(target, "precious", "a planted link was followed: the target now holds %s",
			 target);
	free(target);
	/* The flash names absolute paths (cut at 80 columns); the name taken
	 * is the next free one, below. */
	screen_has("leaks-export-beside-links", "wrote /");
	screen_has("save-display-refused", "save-display: not overwritten, it exists");
	/* What it wrote is a regular file of its own, mode 0600. */
	char *made = sh("cd '%s' && find . -maxdepth 1 -name 'bulkhead-leaks-*-1.md' -type f -perm 600 "
			"| wc -l",
			files);
	cr_assert_str_eq(made, "1\n", "the report is not one new 0600 file: %s", made);
	free(made);
}

/* ---- 6. help, read-only, walls ---- */

/* Every binding of ui/bindings.def is a row of the help: its label, where
 * it works and (as far as the width lets) what it does. */
Test(console, help_lists_every_binding_of_the_one_table)
{
	close_engine();
	console("?\n"
		":save-display help-top\n"
		"<PgDn>\n"
		":save-display help-middle\n"
		"<PgDn>\n"
		":save-display help-lower\n"
		"<PgDn>\n" /* ---- presenter: its bindings take a page more ---- */
		":save-display help-more\n"
		"<PgDn>\n" /* ---- fleet: the hosts' bindings take a page more ---- */
		":save-display help-fleet\n"
		"G\n"
		":save-display help-bottom\n"
		"<Esc>\n"
		":nope\n"
		":save-display help-unknown-command\n"
		":help\n"
		":save-display help-all\n"
		":q\n",
		"", NULL);
	screen("help-top");
	screen("help-middle");
	screen("help-bottom");
	screen("help-unknown-command");
	screen_has("help-unknown-command", "no command :nope");
	screen("help-all");
	screen("help-lower");
	screen("help-more");
	screen("help-fleet"); /* ---- fleet ---- */
	char *top = shot("help-top"), *middle = shot("help-middle"), *bottom = shot("help-bottom");
	char *lower = shot("help-lower"), *more = shot("help-more"), *fleet = shot("help-fleet");
	size_t n = sizeof bindings / sizeof bindings[0];
	for (size_t i = 0; i < n; i++) {
		char row[256];
		snprintf(row, sizeof row, "%-13s %-10s %.*s", bindings[i].label,
			 *bindings[i].view ? bindings[i].view : "anywhere", screen_cols - 27, bindings[i].help); /* a cut one ends in "…" */
		bool found = false;
		for (const char *s = top; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		for (const char *s = middle; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		for (const char *s = bottom; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		for (const char *s = lower; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		for (const char *s = more; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		for (const char *s = fleet; s && !found; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
			found = !strncmp(s, row, strlen(row));
		cr_assert(found, "the help has no row \"%s\"", row);
	}
	free(lower);
	free(more);
	free(fleet);
	free(middle);
	free(top);
	free(bottom);
}

Test(console, readonly_hides_every_action_hint_and_refuses_an_action_key)
{
	close_engine();
	console(":save-display readonly-sandboxes\n"
		"n\n"
		":save-display readonly-refused\n"
		"?\n"
		":save-display readonly-help\n"
		":leaks\n"
		"<C-d>\n"
		":save-display readonly-leaks\n"
		":q\n",
		"--readonly", NULL);
	screen("readonly-sandboxes");
	/* v captures (it changes nothing of the state): shown read-only too. */
	screen_has("readonly-sandboxes", "\n?:help ::views d:describe l:cells t:processes f:files a:all v:capture\n");
	for (size_t i = 0; i < sizeof bindings / sizeof bindings[0]; i++)
		if (!strcmp(bindings[i].view, "sandboxes") && (bindings[i].flags & 1)) {
			char hint[64];
			bool ctrl = !strncmp(bindings[i].label, "ctrl-", 5);
			snprintf(hint, sizeof hint, " %s%s:", ctrl ? "^" : "", ctrl ? bindings[i].label + 5 : bindings[i].label);
			screen_lacks("readonly-sandboxes", hint);
		}
	screen("readonly-refused");
	screen_has("readonly-refused", "read-only console: actions are off (--readonly)");
	screen_lacks("readonly-refused", "open sandbox");
	screen("readonly-help");
	screen_has("readonly-help", "(off: read-only)");
	screen("readonly-leaks");
	screen_has("readonly-leaks", "read-only console: actions are off (--readonly)");
}

Test(console, the_walls_view_refuses_floor_vm_and_shows_the_evidence_that_proved_the_tiers)
{
	close_engine();
	console(":walls\n"
		":save-display walls\n"
		":q\n",
		"", NULL);
	screen("walls");
	screen_has("walls", "vm             Nothing ran (isolation): the floor is above the tier");
	screen_has("walls", "kernel         runs on the kernel tier (runsc)");
}

/* ---- the size: 80x24 above, and 100x30 here ---- */

Test(console, the_screens_fit_100x30_as_they_fit_80x24)
{
	close_engine();
	screen_lines = 30;
	screen_cols = 100;
	console("n\n"
		"<Enter>\n"
		"x\n"
		"1+1\n"
		"<Enter>\n"
		":save-display wide-sandboxes\n"
		"<Enter>\n"
		":save-display wide-records\n"
		"<Enter>\n"
		":save-display wide-record\n"
		":walls\n"
		":save-display wide-walls\n"
		"?\n"
		":save-display wide-help\n"
		":q\n",
		"", NULL);
	screen("wide-sandboxes");
	screen("wide-records");
	screen("wide-record");
	screen("wide-walls");
	screen("wide-help");
	/* Every line of every screen is within the width and none wrapped. */
	const char *const names[] = {"wide-sandboxes", "wide-records", "wide-record", "wide-walls", "wide-help"};
	for (size_t i = 0; i < 5; i++) {
		char *s = shot(names[i]);
		int lines = 0;
		for (char *p = s; *p; p++)
			lines += *p == '\n';
		cr_assert_eq(lines, 30, "%s has %d lines", names[i], lines);
		free(s);
	}
}

/* ---- replay: the scenarios in $BULKHEAD_SCENARIOS, from the embedded console ---- */

/* The list names what is wrong with each file that does not load, and a
 * sound one opens in the player over the embedded engine as over no source
 * (test_replay.c tests the player itself, with no runtime at all). */
Test(console, the_replay_view_lists_the_scenarios_names_what_does_not_load_and_plays_one)
{
	close_engine();
	char *r = sh("set -e; mkdir -p '%s/data/scenarios'; cd '%s/data/scenarios'; "
		     "echo '{\"title\":\"t\",\"teaches\":\"a refused call stops at the daemon\"}' > refused.json; "
		     "echo '{\"title\":\"a fresh sandbox per run\"}' > fresh.json; "
		     "echo 'not json' > broken.json; "
		     "cp '%s/../../tests/tui/fixtures/scenarios/orders_tour.json' .; echo made",
		     files, files, BH_TEST_INTERP);
	cr_assert_str_eq(r, "made\n", "%s", r);
	free(r);
	char env[4500];
	snprintf(env, sizeof env, "BULKHEAD_SCENARIOS='%s/data/scenarios'", files);
	console(":replay\n"
		":save-display replay\n"
		"<Enter>\n"
		":save-display replay-enter\n"
		"j\n"
		"j\n"
		"<Enter>\n"
		"<Space>\n" /* ---- hops ---- the next step (l lights a hop) */
		":save-display replay-player\n"
		":q\n",
		"", env);
	screen("replay");
	screen("replay-enter");
	screen_has("replay-enter", "broken: not JSON (a syntax error at line 1, column 1)");
	screen("replay-player");
	screen_has("replay-player", "Replay (orders_tour: step 2/8)");
}

/* ---- tables: safe input and real tables (issue 16, acceptance 4) ---- */

/* The first column of a saved screen's table rows (after the header), in
 * order, as "1,2,3". */
static void first_column(const char *name, const char *header, char *out, size_t n)
{
	char *s = shot(name);
	const char *p = strstr(s, header);
	cr_assert_not_null(p, "screen %s has no header %s", name, header);
	p = strchr(p, '\n');
	size_t used = 0;
	out[0] = '\0';
	while (p && p[1] && isdigit((unsigned char)p[1])) {
		long v = strtol(p + 1, NULL, 10);
		used += (size_t)snprintf(out + used, n - used, "%s%ld", used ? "," : "", v);
		p = strchr(p + 1, '\n');
	}
	free(s);
}

/* The review's B6, B7, B9, B15, B17, B20, B29 in one sandbox's life: enter
 * at a [y/N] is No, a multi-line paste is one cell, a paste outside the
 * editor is no keys, the editor's cursor, Tab, history and language, a
 * sandbox just opened is the one selected, and q and ctrl-c ask before
 * closing sandboxes, naming how many. */
Test(console, input_enter_is_no_a_paste_is_one_cell_and_quitting_asks_before_closing_sandboxes)
{
	close_engine();
	console("n\n"
		"<Enter>\n"
		"<C-k>\n"
		":save-display input-kill-confirm\n"
		"<Enter>\n"
		":save-display input-kill-enter-is-no\n"
		"x\n"
		"<Paste>a = 1<Enter>b = 2<Enter>print(a + b)</Paste>\n"
		":save-display input-paste-in-editor\n"
		"<Enter>\n"
		":save-display input-paste-ran\n"
		"<Paste>a = 1<Enter>pass</Paste>\n"
		":save-display input-paste-ignored\n"
		"x\n"
		"print(1)<Left>0\n"
		"<Enter>\n"
		"x\n"
		"<Up>\n"
		":save-display input-history\n"
		"<C-c>\n"
		":save-display input-ctrl-c-cancels-the-prompt\n"
		"x\n"
		"if True:<C-o><Tab>print('tab ok')\n"
		"<Enter>\n"
		"x\n"
		"print('bell\\x07\\rover')\n"
		"<Enter>\n"
		"x\n"
		"<C-t>\n"
		"console.log(6 * 7)\n"
		"<Enter>\n"
		"x\n"
		"print('a long line that goes past the edge of an eighty column screen, and more of it')\n"
		":save-display input-long-line\n"
		"<Esc>\n"
		":save-display input-answers-pane\n"
		":answers\n"
		":save-display input-answers-view\n"
		":sb\n"
		"n\n"
		"bogus\n"
		"<Enter>\n"
		":save-display input-bad-tier\n"
		"n\n"
		"container\n"
		"<Enter>\n"
		"h\n"
		":save-display input-container-no-hibernate\n"
		"x\n"
		":save-display input-second-selected\n"
		"<C-t>\n"
		"print('second')\n"
		"<Enter>\n"
		"x\n"
		"print('x' * 300000)\n"
		"<Enter>\n"
		":save-display input-truncated\n"
		"q\n"
		":save-display input-quit-asks\n"
		"n\n"
		":save-display input-quit-no\n"
		"<C-c>\n"
		":save-display input-ctrl-c-asks\n"
		"y\n"
		":save-display input-never-saved\n",
		"", NULL);
	screen("input-kill-confirm");
	screen_has("input-kill-confirm", "kill sandbox ");
	screen_has("input-kill-confirm", "? [y/N]");
	screen("input-kill-enter-is-no");
	screen_has("input-kill-enter-is-no", "cancelled: nothing was done");
	screen_has("input-kill-enter-is-no", " ready ");
	screen_has("input-kill-enter-is-no", "sessions: 1 ready");
	screen("input-paste-in-editor");
	screen_has("input-paste-in-editor", ">>> a = 1\n... b = 2\n... print(a + b)");
	screen("input-paste-ran");
	screen_has("input-paste-ran", "#1 ");
	screen_has("input-paste-ran", "\n  3\n");
	screen("input-paste-ignored");
	screen_has("input-paste-ignored", "paste ignored");
	screen_has("input-paste-ignored", " ready "); /* the p of "pass" paused nothing */
	screen_lacks("input-paste-ignored", "\xe2\x86\x91"); /* nor did its s sort */
	screen("input-history");
	screen_has("input-history", ">>> print(10)");
	screen("input-ctrl-c-cancels-the-prompt");
	screen_has("input-ctrl-c-cancels-the-prompt", "Sandboxes[1]");
	screen_lacks("input-ctrl-c-cancels-the-prompt", ">>>");
	screen("input-long-line");
	screen("input-answers-pane");
	screen_has("input-answers-pane", "\n  42\n");
	screen_has("input-answers-pane", "\n  tab ok\n");
	screen_has("input-answers-pane", "\n  bell^G^Mover\n"); /* control bytes escaped */
	screen("input-answers-view");
	screen_has("input-answers-view", "Answers[10] (5 cells, newest first)");
	screen_has("input-answers-view", "\n  10\n");
	screen("input-bad-tier");
	screen_has("input-bad-tier", "open: unknown tier \"bogus\" (tiers: container, kernel, vm");
	screen("input-container-no-hibernate");
	screen_has("input-container-no-hibernate", "the container tier cannot hibernate (kernel tier only)");
	screen("input-second-selected");
	screen_has("input-second-selected", "[javascript]"); /* the last cell's language, kept */
	screen("input-truncated");
	screen_has("input-truncated", " stdout_truncated\n  xxxxxxxx");
	screen_has("input-truncated", "x\xe2\x80\xa6\n  (stdout truncated: the sandbox's output cap)\n");
	screen("input-quit-asks");
	screen_has("input-quit-asks", "quit and close 2 sandboxes? [y/N]");
	screen("input-quit-no");
	screen_has("input-quit-no", "Sandboxes[2]");
	screen_has("input-quit-no", "#1 "); /* the second sandbox's first cell, */
	screen_has("input-quit-no", "\n  second\n"); /* run in the one n selected */
	screen("input-ctrl-c-asks");
	screen_has("input-ctrl-c-asks", "quit and close 2 sandboxes? [y/N]");
	char path[4400];
	snprintf(path, sizeof path, "%s/input-never-saved.txt", files);
	cr_assert(access(path, F_OK) != 0, "the console went on after y at the quit");
	/* y closed them: both sandboxes ended when the console shut down. */
	char *ended = sh("sqlite3 '%s/bulkhead.db' \"SELECT state || ' ' || end_reason FROM sessions\"",
			 h.state_dir);
	cr_assert_str_eq(ended, "ended shutdown\nended shutdown\n", "%s", ended);
	free(ended);
}

/* B10, B11, B19, acceptance 4: IDs 1..12 sort as numbers, ascending and
 * then descending on a second Shift+I; the filter applies as it is typed,
 * inverts with !, and selects its first match; PgDn pages with a position
 * marker; a cut cell ends in "…"; ctrl-w shows the wide columns. */
Test(console, tables_sort_numbers_as_numbers_filter_as_typed_page_and_show_cut_columns)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/tables.db", files);
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = 12, .events = 40});
	cr_assert_eq(mkdir(strcat(strcpy(db, files), "/nobin"), 0700), 0);
	console_db(":rec\n"
		   "S\n"
		   "I\n"
		   ":save-display tables-id-ascending\n"
		   "I\n"
		   ":save-display tables-id-descending\n"
		   ":events\n"
		   ":save-display tables-events-newest\n"
		   "g\n"
		   "<PgDn>\n"
		   ":save-display tables-events-page-down\n"
		   "/\n"
		   "!event 1\n"
		   ":save-display tables-filter-inverted-as-typed\n"
		   "<Esc>\n"
		   "?\n"
		   "G\n"
		   "/\n"
		   "pg\n"
		   "<Enter>\n"
		   "c\n"
		   ":save-display tables-filter-first-match\n"
		   ":q\n",
		   "tables.db");
	char ids[256];
	screen("tables-id-ascending");
	first_column("tables-id-ascending", "ID\xe2\x86\x91", ids, sizeof ids);
	cr_assert_str_eq(ids, "1,2,3,4,5,6,7,8,9,10,11,12");
	screen("tables-id-descending");
	first_column("tables-id-descending", "ID\xe2\x86\x93", ids, sizeof ids);
	cr_assert_str_eq(ids, "12,11,10,9,8,7,6,5,4,3,2,1");
	screen("tables-events-newest");
	screen_has("tables-events-newest", "Events[40] 23\xe2\x80\x93" "40 of 40");
	screen_has("tables-events-newest", ".\xe2\x80\xa6\n"); /* the detail, cut */
	screen("tables-events-page-down");
	screen_has("tables-events-page-down", "Events[40] 19\xe2\x80\x93" "36 of 40");
	screen("tables-filter-inverted-as-typed");
	screen_has("tables-filter-inverted-as-typed", "Events[29] </!event 1>");
	screen_has("tables-filter-inverted-as-typed", "\n/!event 1");
	screen("tables-filter-first-match");
	screen_has("tables-filter-first-match", "copied ctrl-f/pgdn");

	screen_cols = 120;
	console_db(":events\n"
		   "<C-w>\n"
		   ":save-display tables-events-wide\n"
		   ":q\n",
		   "tables.db");
	screen("tables-events-wide");
	/* ---- ci: attribution: REQUEST is wide too; these generated events name no one ---- */
	screen_has("tables-events-wide", " DETAIL                           SANDBOX  REQUEST\n");
	screen_has("tables-events-wide", " event 40........................ bh-gen   -\n"); /* whole */
}

/* ---- truth: describe, an honest connection, one request per refresh ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The console opens a sandbox, starts a cell that sleeps and, while it runs
 * (`:wait views`: the keys wait for the views, not for the cell), shows the
 * sandboxes (STATE says how long it has run, IDLE does not count) and
 * describes it: the cell's language, code and running time. */
static void describe_running(const char *prefix, const char *args, const char *env)
{
	char script[4096];
	snprintf(script, sizeof script,
		 "n\n"
		 "<Enter>\n"
		 "x\n"
		 "import time; time.sleep(8); print('slept')\n"
		 ":wait views\n"
		 "<Enter>\n"
		 ":sleep 2500\n"
		 ":save-display %s-sandboxes-running\n"
		 "d\n"
		 ":save-display %s-describe-running\n"
		 ":wait all\n"
		 "<C-r>\n"
		 ":save-display %s-describe-after\n"
		 ":q\n",
		 prefix, prefix, prefix);
	console(script, args, env);
	char name[128];
	snprintf(name, sizeof name, "%s-sandboxes-running", prefix);
	screen(name);
	screen_has(name, " running ");
	snprintf(name, sizeof name, "%s-describe-running", prefix);
	screen(name);
	screen_has(name, "busy: a python cell in flight, running ");
	screen_has(name, "code         import time; time.sleep(8); print('slept')");
	screen_has(name, "call since   ");
	screen_has(name, " UTC");
	screen_has(name, "pauses       (a call is running: the clock restarts after it)");
	snprintf(name, sizeof name, "%s-describe-after", prefix);
	screen(name);
	screen_lacks(name, "in flight");
	screen_has(name, "state        ready");
	screen_has(name, "pauses       20");
}

Test(console, embedded_describe_shows_the_cell_in_flight_its_code_and_how_long_it_has_run)
{
	close_engine();
	describe_running("describe-embedded", "", NULL);
}

Test(console, attached_describe_shows_the_cell_in_flight_its_code_and_how_long_it_has_run)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	describe_running("describe-attached", args, env);
}

/* Runs a console that must refuse to start: its status and what it said. */
static char *console_refused(int *status, const char *args, const char *env)
{
	char path[4400], cmd[16384];
	snprintf(path, sizeof path, "%s/script.txt", files);
	write_script(path, ":q\n");
	console_cmd(cmd, sizeof cmd, path, args, env, false);
	*status = reap_console(spawn(cmd, "console.out"));
	snprintf(path, sizeof path, "%s/console.out", files);
	char *said = harness_slurp(path);
	cr_assert_not_null(said);
	return said;
}

/* B2, B4: a socket nothing answers on, no token, and a token without the
 * operator scope are errors at start, naming what is wrong, not an empty
 * list that looks like an idle daemon. */
Test(console, attached_it_refuses_to_start_on_a_dead_socket_without_a_token_or_the_operator_scope)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	/* A socket file whose daemon is gone. */
	char dead[4400];
	snprintf(dead, sizeof dead, "%s/dead.sock", files);
	char *r = sh("python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind(\"%s\")' && echo made",
		     dead);
	cr_assert_str_eq(r, "made\n", "%s", r);
	free(r);
	int st = 0;
	char a[4500];
	snprintf(a, sizeof a, "--attach '%s'", dead);
	char *said = console_refused(&st, a, env);
	cr_assert_neq(st, 0, "the console started on a dead socket: %s", said);
	char want[4600];
	snprintf(want, sizeof want, "bulkhead: console: nothing answered on %s (", dead);
	cr_assert_not_null(strstr(said, want), "%s", said);
	cr_assert_not_null(strstr(said, "is `bulkhead serve` running there?"), "%s", said);
	free(said);

	said = console_refused(&st, args, NULL);
	cr_assert_neq(st, 0, "the console started with no token: %s", said);
	cr_assert_not_null(strstr(said, "wants a token and none was given: put a token with the "
					"operator scope in $BULKHEAD_TOKEN"),
			   "%s", said);
	free(said);

	char run_only[512];
	snprintf(run_only, sizeof run_only, "BULKHEAD_TOKEN='%s'", d.run_token);
	said = console_refused(&st, args, run_only);
	cr_assert_neq(st, 0, "the console started with a code:run token: %s", said);
	cr_assert_not_null(strstr(said, "the token in $BULKHEAD_TOKEN lacks the operator scope the "
					"console needs"),
			   "%s", said);
	free(said);

	/* An operator-only token starts, and the header's tiers are the
	 * daemon's (container-pinned), not widened by what the token lacks. */
	char op_only[512];
	snprintf(op_only, sizeof op_only, "BULKHEAD_TOKEN='%s'", d.op_token);
	console(":save-display attached-operator-only\n", args, op_only);
	screen_has("attached-operator-only", "tiers: container   sessions:");
}

/* B14: a tier the daemon does not give its sessions is refused with what it
 * offers, not silently replaced. */
Test(console, attached_an_open_asking_a_tier_the_daemon_does_not_give_is_refused_naming_its_tier)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	screen_cols = 200; /* the refusal whole */
	console("n\n"
		"kernel\n"
		"<Enter>\n"
		":save-display attached-open-kernel-refused\n"
		"n\n"
		"container\n"
		"<Enter>\n"
		":save-display attached-open-container\n"
		":q\n",
		args, env);
	screen_has("attached-open-kernel-refused",
		   "open: this daemon gives its sandboxes the container tier, not kernel (offered: "
		   "container)");
	screen_has("attached-open-container", "opened ");
	screen_has("attached-open-container", " container ");
}

/* Acceptance 2 (B3): the daemon killed under an attached console. Within two
 * refreshes the header says DISCONNECTED since when, the rows are marked old
 * (a '~' that shows without colour), ctrl-r says the failure, never
 * "refreshed"; a daemon back on the socket is found again by the retries
 * (backoff at most 8 s) with no key pressed. */
Test(console, attached_a_killed_daemon_shows_disconnected_within_two_refreshes_and_recovers)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	live_start(args, env);
	live_send(":save-display link-alive");
	live_wait_screen("link-alive");
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	d.pid = 0;
	live_send(":sleep 4500\n"
		  ":save-display link-down\n"
		  "<C-r>\n"
		  ":save-display link-down-ctrl-r\n");
	live_wait_screen("link-down-ctrl-r");
	daemon_restart(&d, "--tier container");
	live_send(":sleep 9000\n"
		  ":save-display link-back\n");
	live_wait_screen("link-back");
	live_finish();
	screen("link-alive");
	screen_lacks("link-alive", "DISCONNECTED");
	screen("link-down");
	screen_has("link-down", "DISCONNECTED since ");
	screen_has("link-down", " UTC, retrying in ");
	char row[80];
	snprintf(row, sizeof row, "%.12s~ready", fp);
	screen_has("link-down", row);
	screen("link-down-ctrl-r");
	screen_lacks("link-down-ctrl-r", "refreshed");
	screen_has("link-down-ctrl-r", "sandboxes: Nothing ran (environment): cannot reach the daemon");
	/* The new daemon reaped the session the dead one left: the list is
	 * the new daemon's, fresh. */
	screen("link-back");
	screen_lacks("link-back", "DISCONNECTED");
	screen_lacks("link-back", "stale since");
	screen_has("link-back", "tiers: container   sessions: ");
	screen_has("link-back", "Sandboxes[0]");
}

/* B27: one light request per refresh. The header and the view come from
 * one Overview (sessions, usage, held calls), a long poll the daemon answers
 * when something changed or after its 5 s cap: over ten seconds (five
 * refresh periods) and a ctrl-r an idle console sends a handful, not three
 * a refresh; the daemon's audit log tallies them (no line each), and its
 * tally at stop says how many came. ---- light ---- */
Test(console, attached_a_refresh_sends_one_request_and_the_audit_log_tallies_the_reads)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	uint64_t t0 = mono_ms();
	console("<C-r>\n"
		":save-display refreshed-by-hand\n"
		":sleep 10000\n"
		":save-display refreshed-five-periods-later\n",
		args, env);
	uint64_t elapsed = mono_ms() - t0;
	screen_has("refreshed-by-hand", "refreshed");
	screen_has("refreshed-five-periods-later", "Sandboxes[0]");
	kill(d.pid, SIGTERM);
	waitpid(d.pid, NULL, 0);
	d.pid = 0;
	char path[4400];
	snprintf(path, sizeof path, "%s/audit.log", d.dir);
	char *log = harness_slurp(path);
	cr_assert_not_null(log);
	size_t call_lines = 0;
	unsigned long long overviews = 0, lists = 0;
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		bool console_s = strstr(line, "\"principal\":\"console\"") != NULL;
		if (console_s && strstr(line, "\"audit\":\"call\"") && strstr(line, "OperatorService/"))
			call_lines++;
		const char *n = strstr(line, "\"calls\":");
		if (!console_s || !strstr(line, "\"audit\":\"reads\"") || !n)
			continue;
		if (strstr(line, "OperatorService/Overview"))
			overviews = strtoull(n + 8, NULL, 10);
		if (strstr(line, "OperatorService/ListSessions"))
			lists = strtoull(n + 8, NULL, 10);
	}
	free(log);
	/* Evidence (the header's tiers) aside, nothing the console read is a
	 * line of its own: no Usage, no ListApprovals, no ListSessions. */
	cr_assert_eq(call_lines, 0, "the console's reads are a line each");
	cr_assert_eq(lists, 1, "%llu ListSessions: only the check at start", lists);
	/* The first and the ctrl-r's, then one poll per change or per 5 s
	 * wait (and at most one more a poll, for a refresh just after its
	 * answer): at most two per 5 s. Three requests a 2 s refresh would be
	 * at least 15. */
	unsigned long long cap = 2 + 2 * (elapsed / WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS + 1);
	cr_assert_geq(overviews, 2, "%llu Overviews: the poll never went out", overviews);
	cr_assert_leq(overviews, cap, "%llu Overviews in %llu ms: more than the long poll sends",
		      overviews, (unsigned long long)elapsed);
}

/* ---- light: the header's daemon uptime ----
 * The daemon's start is known (this test started it); the header must
 * count from it, in the daemon's clock, however long nothing changed: an
 * idle daemon's Overview polls answer "unchanged" with no clock, and an
 * uptime read from the last whole answer stood still at "up 0s"/"up 1s". */
static long header_uptime_s(const char *name)
{
	char *s = shot(name);
	const char *up = strstr(s, " up ");
	cr_assert_not_null(up, "screen %s has no uptime:\n%s", name, s);
	char *end = NULL;
	long n = strtol(up + 4, &end, 10);
	cr_assert(end && *end == 's', "screen %s: uptime not in seconds:\n%s", name, s);
	free(s);
	return n;
}

Test(console, attached_the_headers_uptime_counts_from_the_daemons_start_while_nothing_changes)
{
	char env[512], args[4400];
	uint64_t before = mono_ms();
	attach_daemon(args, env, "");
	uint64_t started = mono_ms(); /* the daemon started between the two */
	console(":save-display uptime-first\n"
		":sleep 7000\n"
		":save-display uptime-later\n",
		args, env);
	uint64_t done = mono_ms();
	long first = header_uptime_s("uptime-first"), later = header_uptime_s("uptime-later");
	/* Seven seconds later it says at least six more (a second's rounding),
	 * and never more than the daemon has lived. */
	cr_assert_geq(later - first, 6, "the uptime went from %lds to %lds in 7 s", first, later);
	cr_assert_geq(later, (long)((done - started) / 1000) - 2, "up %lds", later);
	cr_assert_leq(later, (long)((done - before) / 1000) + 1, "up %lds", later);
}

/* B26: over a daemon, a client's trace id is its sessions' run: `:runs`
 * lists it and drills into its sandboxes as it does embedded. */
Test(console, attached_runs_group_sessions_by_the_trace_id_their_client_sent)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char fps[2][65];
	for (int i = 0; i < 2; i++) {
		struct answer *a = daemon_call(&d, d.run_token, SVC "OpenSession",
					       "{\"protocol\":3,\"traceId\":\"conv-7\"}");
		cr_assert_eq(a->status, 200, "%s", a->body);
		char id[64];
		member(a->body, "sessionId", id, 64);
		member(a->body, "session", fps[i], 65);
		answer_free(a);
	}
	char id[64], other[65];
	http_open(d.run_token, id, other);
	console(":runs\n"
		":save-display attached-runs-by-trace\n"
		"/conv-7\n"
		"<Enter>\n"
		"<Enter>\n"
		":save-display attached-run-drilled\n",
		args, env);
	screen("attached-runs-by-trace");
	screen_has("attached-runs-by-trace", "conv-7");
	screen("attached-run-drilled");
	screen_has("attached-run-drilled", "(run conv-7)");
	for (int i = 0; i < 2; i++) {
		char row[16];
		snprintf(row, sizeof row, "%.12s", fps[i]);
		screen_has("attached-run-drilled", row);
	}
	char row[16];
	snprintf(row, sizeof row, "%.12s", other);
	screen_lacks("attached-run-drilled", row);
}

/* The operator's usual case: describing an agent's session while its cell
 * runs. The code is the agent's: an escape sequence in it (one that would
 * retitle the terminal, one that would clear it) is shown as '?', never sent
 * to the operator's terminal. */
Test(console, attached_describe_shows_another_clients_cell_in_flight_with_its_control_bytes_masked)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	pid_t kid = fork();
	cr_assert_neq(kid, -1);
	if (kid == 0) {
		struct answer *a = daemon_cell(&d, d.run_token, id, "python",
					       "s = '\x1b]0;pwned\x07'  # \x1b[2J\n"
					       "import time; time.sleep(15)");
		_exit(a && a->status == 200 ? 0 : 1);
	}
	usleep(1500 * 1000); /* the cell is under way (for 15 s) */
	console("/runner\n"
		"<Enter>\n"
		"d\n"
		":save-display describe-agents-cell\n",
		args, env);
	int st = 0;
	cr_assert_eq(waitpid(kid, &st, 0), kid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent's cell failed");
	screen("describe-agents-cell");
	screen_has("describe-agents-cell", "busy: a python cell in flight, running ");
	screen_has("describe-agents-cell", "code         s = '?]0;pwned?'  # ?[2J");
	screen_has("describe-agents-cell", "             import time; time.sleep(15)");
	screen_has("describe-agents-cell", "principal    runner");
	char *raw = shot("describe-agents-cell");
	cr_assert_null(strchr(raw, '\x1b'), "an escape reached the screen");
	free(raw);
}

/* An ended session's describe says how it ended and why, and no clock runs. */
Test(console, embedded_describe_of_a_killed_sandbox_says_how_it_ended_and_no_clock_runs)
{
	close_engine();
	console("n\n"
		"<Enter>\n"
		"<C-k>\n"
		"y\n"
		"a\n"
		"d\n"
		"G\n"
		":save-display describe-ended\n",
		"", NULL);
	screen("describe-ended");
	screen_has("describe-ended", "state        ended");
	screen_has("describe-ended", "pauses       (ended)");
	screen_has("describe-ended", "end          killed: an operator killed it");
	screen_lacks("describe-ended", "in flight");
}

/* ---- procs: inside a live sandbox (t processes, f files) ---- */
#include "png_cell.h"

/* What varies in a processes screen beyond what normalise() masks: the
 * rows' figures (PID, PPID, CPU%, RSS: the columns at 0-14 and 31-45)
 * become fixed marks, and the spinner's turn becomes '*'. USER, STATE and
 * COMMAND stay: they are what the screen shows — but for the init's own
 * STATE: the init answers the listing itself, so it may read itself running
 * (R) on its way to the answer as well as sleeping (S); R is shown as S. */
static void mask_process_figures(const char *name)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.txt", files, name);
	char *s = harness_slurp(path);
	cr_assert_not_null(s, "no screen %s", name);
	int line = 0;
	for (char *p = s; *p; line++) {
		char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (line >= 5 && line < screen_lines - 1 && n > 46) {
			memcpy(p, "<pid>   <ppid> ", 15);
			memcpy(p + 31, "<cpu>  <rss>   ", 15);
			if (memmem(p, n, "/bulkhead-init", 14) && p[25] == 'R')
				p[25] = 'S'; /* STATE, after PID, PPID and USER */
		}
		if (line == screen_lines - 1 && n > 1 && strchr("|/-\\", *p) && p[1] == ' ')
			*p = '*';
		p += n + (e ? 1 : 0);
	}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(s, f);
	fclose(f);
	free(s);
}

/* The PNG cell as one line the cell prompt takes: the code in hex, run by
 * exec, and a text file with a terminal escape in it beside it. */
static char *png_prompt_line(void)
{
	static const char code[] = PNG_CELL "import os\n"
					    "os.makedirs('/work/out', exist_ok=True)\n"
					    "open('/work/out/notes.txt', 'w').write('hello\\n\\x1b[31mred\\tend\\n')\n"
					    "open('/work/out/\\x1b[2Jevil\\x07.txt', 'w').write('x')\n";
	char *line = malloc(2 * sizeof code + 64);
	cr_assert_not_null(line);
	size_t o = (size_t)sprintf(line, "exec(bytes.fromhex('");
	for (size_t i = 0; code[i]; i++)
		o += (size_t)sprintf(line + o, "%02x", (unsigned char)code[i]);
	sprintf(line + o, "').decode())");
	return line;
}

/* One console (embedded or attached: args, env) through a sandbox's life
 * seen from inside: a cell's background process in the processes view
 * while the cell runs, gone after it; a PNG the next cell made, found in
 * the files view and saved here (then not saved over without a y), a text
 * file viewed with its escape shown, the PNG as a hex dump. Screens are
 * PREFIX-NAME. */
static void procs_and_files_tour(const char *prefix, const char *args, const char *env)
{
	char *png = png_prompt_line();
	size_t n = strlen(png) + 4096;
	char *script = malloc(n);
	cr_assert_not_null(script);
	snprintf(script, n,
		 "n\n"
		 "<Enter>\n"
		 "x\n"
		 "import subprocess, time; p = subprocess.Popen(['sleep', '30']); time.sleep(8)\n"
		 ":wait views\n"
		 "<Enter>\n"
		 ":sleep 2500\n"
		 "t\n"
		 ":save-display %s-procs-running\n"
		 ":wait all\n"
		 "<Esc>\n"
		 "t\n"
		 ":save-display %s-procs-after\n"
		 "<Esc>\n"
		 "x\n"
		 "%s\n"
		 "<Enter>\n"
		 ":save-display %s-files-made\n"
		 "f\n"
		 "<C-r>\n"
		 ":save-display %s-files-work\n"
		 "/\n"
		 "plot.png\n"
		 "<Enter>\n"
		 "s\n"
		 ":save-display %s-files-save-prompt\n"
		 "<Enter>\n"
		 ":save-display %s-files-saved\n"
		 "s\n"
		 "<Enter>\n"
		 ":save-display %s-files-replace-prompt\n"
		 "<Enter>\n"
		 ":save-display %s-files-not-replaced\n"
		 "<Enter>\n"
		 ":save-display %s-file-png\n"
		 "<Esc>\n"
		 "<Esc>\n"
		 "/\n"
		 "out\n"
		 "<Enter>\n"
		 "<Enter>\n"
		 ":save-display %s-files-out\n"
		 "/\n"
		 "notes\n"
		 "<Enter>\n"
		 "<Enter>\n"
		 ":save-display %s-file-text\n"
		 "<Esc>\n"
		 "<Backspace>\n"
		 ":save-display %s-files-up\n"
		 ":q\n",
		 prefix, prefix, png, prefix, prefix, prefix, prefix, prefix, prefix, prefix, prefix,
		 prefix, prefix);
	console(script, args, env);
	free(script);
	free(png);
	char name[128];
	snprintf(name, sizeof name, "%s-procs-running", prefix);
	screen_has(name, "sleep 30");
	screen_has(name, "sandbox");
	mask_process_figures(name);
	screen(name);
	snprintf(name, sizeof name, "%s-procs-after", prefix);
	screen_lacks(name, "sleep 30");
	mask_process_figures(name);
	screen(name);
	/* The saved file is the sandbox's, byte for byte: its digest is what
	 * the cell printed (on the flash line of the screen after it). */
	char path[4400], digest[256];
	snprintf(path, sizeof path, "%s/plot.png", files);
	cr_assert_eq(harness_sh_into(digest, sizeof digest, "sha256sum '%s'", path), 0, "%s",
		     digest);
	digest[64] = '\0';
	snprintf(name, sizeof name, "%s-files-made", prefix);
	screen_has(name, digest);
	const char *shots[] = {"files-work",		 "files-save-prompt", "files-saved",
			       "files-replace-prompt", "files-not-replaced", "file-png",
			       "files-out",		 "file-text",	      "files-up"};
	for (size_t i = 0; i < sizeof shots / sizeof shots[0]; i++) {
		snprintf(name, sizeof name, "%s-%s", prefix, shots[i]);
		screen(name);
	}
	snprintf(name, sizeof name, "%s-files-saved", prefix);
	screen_has(name, "saved ");
	snprintf(name, sizeof name, "%s-files-not-replaced", prefix);
	screen_has(name, "kept as it is: ");
	snprintf(name, sizeof name, "%s-file-text", prefix);
	screen_has(name, "\\x1b[31mred");
	/* A name with a terminal's escapes in it is shown, not obeyed. */
	snprintf(name, sizeof name, "%s-files-out", prefix);
	screen_has(name, "\\x1b[2Jevil\\x07.txt");
	snprintf(name, sizeof name, "%s-file-png", prefix);
	screen_has(name, "89 50 4e 47");
}

Test(console, embedded_processes_show_a_running_cells_child_and_a_png_is_saved_byte_for_byte)
{
	close_engine();
	procs_and_files_tour("emb", "", NULL);
}

Test(console, attached_processes_show_a_running_cells_child_and_a_png_is_saved_byte_for_byte)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	procs_and_files_tour("att", args, env);
}

Test(console, a_store_opened_with_db_refuses_processes_and_files_in_words)
{
	make_store();
	console_db("t\n"
		   ":save-display db-processes-refused\n"
		   "<Esc>\n"
		   "f\n"
		   ":save-display db-files-refused\n"
		   ":q\n",
		   "store.db");
	screen("db-processes-refused");
	screen_has("db-processes-refused",
		   "processes: needs a live engine; this is a store opened read-only");
	screen("db-files-refused");
	screen_has("db-files-refused", "files: needs a live engine; this is a store opened read-only");
}

/* ---- approvals ---- */
#include <pthread.h>

#define APPROVAL_CELL "open('/work/seen.txt','w').write('x'); print('ran after approval')"

/* An agent's SessionRun on its own thread: its request stays open while held. */
struct held_agent {
	pthread_t t;
	char id[64];
	const char *code;
	struct answer *a;
};

static void *held_agent_main(void *arg)
{
	struct held_agent *g = arg;
	char *body = daemon_cell_body(g->id, "python", g->code);
	g->a = daemon_call(&d, d.run_token, SVC "SessionRun", body);
	free(body);
	return NULL;
}

/* Starts the agent's call and waits until the daemon holds it. */
static void held_agent_start(struct held_agent *g, const char *code)
{
	g->code = code;
	cr_assert_eq(pthread_create(&g->t, NULL, held_agent_main, g), 0);
	for (int i = 0; i < 400; i++) {
		struct answer *a = daemon_call(&d, d.op_token, "bulkhead.v1.OperatorService/ListApprovals",
					       "{}");
		bool held = a->status == 200 && strstr(a->body, g->code ? "\"procedure\"" : "") != NULL;
		answer_free(a);
		if (held)
			return;
		usleep(25 * 1000);
	}
	cr_assert_fail("the agent's call was never held");
}

static struct answer *held_agent_join(struct held_agent *g)
{
	pthread_join(g->t, NULL);
	return g->a;
}

Test(console, attached_a_held_call_is_approved_from_the_approvals_view_and_runs)
{
	close_engine();
	daemon_start(&d, "--tier container --approval required");
	have_daemon = true;
	char env[512], args[4400];
	snprintf(env, sizeof env, "BULKHEAD_TOKEN='%s'", d.both_token);
	snprintf(args, sizeof args, "--attach '%s'", d.sock);
	struct held_agent g = {0};
	char fp[65];
	http_open(d.run_token, g.id, fp);
	held_agent_start(&g, APPROVAL_CELL);
	live_start(args, env);
	live_send(":approvals\n"
		  ":save-display approvals-held\n"
		  "<Enter>\n"
		  ":save-display approvals-detail\n"
		  "<Esc>\n"
		  "a\n"
		  "reviewed: writes one file\n"
		  ":save-display approvals-reason\n"
		  "<Enter>\n"
		  ":save-display approvals-confirm\n"
		  "y\n"
		  ":save-display approvals-approved\n");
	live_wait_screen("approvals-approved");
	/* Whether the header still says busy depends on how fast the cell
	 * runs: the screen compared whole is the one after its answer. */
	screen_has("approvals-approved", "approved ");
	screen_has("approvals-approved", "(none)");
	struct answer *a = held_agent_join(&g);
	cr_assert_eq(a->status, 200, "the approved call did not run: %s", a->body);
	/* stdout is base64 on the wire: "ran after approval\n". */
	cr_expect(strstr(a->body, "\"stdout\":\"cmFuIGFmdGVyIGFwcHJvdmFsCg==\"") != NULL, "%s",
		  a->body);
	answer_free(a);

	/* A second one, denied: the agent is told why. */
	struct held_agent g2 = {0};
	snprintf(g2.id, sizeof g2.id, "%s", g.id);
	held_agent_start(&g2, "print('never')");
	live_send("<C-r>\n"
		  ":save-display approvals-after-run\n"
		  "d\n"
		  "not today\n"
		  "<Enter>\n"
		  "y\n"
		  ":save-display approvals-denied\n"
		  ":events\n"
		  ":save-display approvals-events\n"
		  ":rec\n"
		  "<Enter>\n"
		  ":save-display approvals-record\n");
	live_wait_screen("approvals-record");
	a = held_agent_join(&g2);
	cr_expect_eq(a->status, 403, "%s", a->body);
	cr_expect(strstr(a->body, "denied by console: not today") != NULL, "%s", a->body);
	answer_free(a);
	live_finish();

	screen("approvals-held");
	screen_has("approvals-held", "approvals: 1 waiting");
	screen_has("approvals-held", "runner");
	screen("approvals-detail");
	screen_has("approvals-detail", APPROVAL_CELL);
	screen("approvals-reason");
	screen("approvals-confirm");
	screen_has("approvals-confirm", "[y/N]");
	screen_lacks("approvals-approved", "approvals: 1 waiting");
	screen("approvals-after-run");
	screen("approvals-denied");
	screen("approvals-events");
	/* The detail column is cut at 80: who decided shows; the record view
	 * has the rest. */
	screen_has("approvals-events", "approved by console; req");
	screen_has("approvals-events", "denied by console; requ");
	/* The approved call's record says who let it through, when and why. */
	screen("approvals-record");
	screen_has("approvals-record", "approval           approved by console at ");
	screen_has("approvals-record", "approval reason    reviewed: writes one file");
}

/* The embedded console runs its own engine: no daemon holds its calls. */
Test(console, embedded_the_approvals_view_says_held_calls_are_a_daemons)
{
	close_engine();
	console(":approvals\n:save-display approvals-embedded\na\n:save-display approvals-embedded-a\n",
		NULL, NULL);
	screen("approvals-embedded");
	screen_has("approvals-embedded", "approvals are a daemon's");
	/* a asks for no reason: there is nothing to decide here. */
	screen_has("approvals-embedded-a", "approvals are a daemon's: held calls wait in");
	screen_lacks("approvals-embedded-a", "reason");
}

/* ---- usage ---- */

/* The MiB the first sandbox row's MEM column shows on a raw screen (the
 * console's own 512M-limit sandbox), -1 when no row shows one. */
static double usage_mem_mib(const char *name)
{
	char *s = shot(name);
	const char *p = strstr(s, "/512M");
	double mib = -1;
	if (p) {
		const char *b = p;
		while (b > s && (isdigit((unsigned char)b[-1]) || b[-1] == '.' || b[-1] == 'K' ||
				 b[-1] == 'M' || b[-1] == 'G'))
			b--;
		char unit = p[-1];
		mib = strtod(b, NULL);
		mib = unit == 'K' ? mib / 1024 : unit == 'G' ? mib * 1024 : mib;
	}
	free(s);
	return mib;
}

/* Opens a sandbox, then runs a cell holding 200 MiB in it; the screens
 * before and after are PREFIX-before and PREFIX-held. */
static void usage_console(const char *prefix, const char *args, const char *env)
{
	char script[1024];
	snprintf(script, sizeof script,
		 "n\n"
		 "<Enter>\n"
		 "<C-r>\n"
		 ":save-display %s-before\n"
		 "x\n"
		 "x = bytearray(200 * 1024 * 1024)\n"
		 "<Enter>\n"
		 "<C-r>\n"
		 ":save-display %s-held\n"
		 ":q\n",
		 prefix, prefix);
	console(script, args, env);
}

/* Acceptance 1's first item: the MEM column rises past 200 MiB while a
 * cell holds the memory, the header shows the host, the budget's share and
 * the uptime, and it all fits 80x24. */
static void memory_rises_while_a_cell_allocates(const char *before, const char *held)
{
	double was = usage_mem_mib(before), now = usage_mem_mib(held);
	cr_assert(was >= 0 && was < 150, "before the cell MEM showed %.1f MiB", was);
	cr_assert_geq(now, 200, "holding 200 MiB, MEM showed %.1f MiB (before: %.1f)", now, was);
	screen_has(held, "CPU%");
	screen_has(held, "PIDS");
	screen_has(held, "CPU 1M");
	/* One 512 MiB sandbox held in the budget: a share above 0 %. */
	char *s = shot(held);
	const char *b = strstr(s, " budget ");
	cr_assert_not_null(b, "the header lacks the budget:\n%s", s);
	cr_assert_gt(atoi(b + 8), 0, "the budget's share is 0:\n%s", s);
	cr_assert_not_null(strstr(s, " mem "), "%s", s);
	cr_assert_not_null(strstr(s, " up "), "%s", s);
	free(s);
}

Test(console, embedded_the_usage_columns_show_a_sandboxs_memory_rising_while_a_cell_allocates)
{
	close_engine();
	usage_console("usage", "", NULL);
	memory_rises_while_a_cell_allocates("usage-before", "usage-held");
	screen_has("usage-held", "embedded engine on ");
	screen("usage-before");
	screen("usage-held");
}

Test(console, attached_the_usage_columns_show_a_sandboxs_memory_rising_while_a_cell_allocates)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	usage_console("usage-attached", args, env);
	memory_rises_while_a_cell_allocates("usage-attached-before", "usage-attached-held");
	screen_has("usage-attached-held", "daemon " BULKHEAD_VERSION " up ");
	screen("usage-attached-before");
	screen("usage-attached-held");
}

/* The first sandbox row of a raw screen (the line after the header). */
static char *first_row(const char *name)
{
	char *s = shot(name);
	char *head = strstr(s, "SESSION ");
	cr_assert_not_null(head, "%s has no sandboxes table:\n%s", name, s);
	char *row = strchr(head, '\n');
	cr_assert_not_null(row);
	row++;
	char *row_end = strchr(row, '\n');
	char *out = strndup(row, row_end ? (size_t)(row_end - row) : strlen(row));
	free(s);
	return out;
}

/* MEM sorts as a number, the biggest first; the sparkline fills from the
 * engine's 5 s samples, in Unicode blocks under a UTF-8 locale and in
 * ASCII otherwise. */
Test(console, the_mem_column_sorts_by_bytes_and_the_sparkline_fills_in_blocks_or_ascii)
{
	close_engine();
	/* Two sandboxes; the first one opened (listed last) holds 200 MiB.
	 * Shift+M twice: by MEM, then descending. */
	const char *script = "n\n"
			     "<Enter>\n"
			     "x\n"
			     "x = bytearray(200 * 1024 * 1024)\n"
			     "<Enter>\n"
			     "n\n"
			     "<Enter>\n"
			     ":sleep 5600\n"
			     "<C-r>\n"
			     "M\nM\n"
			     ":save-display usage-sorted-by-mem\n"
			     ":q\n";
	console(script, "", NULL);
	screen_has("usage-sorted-by-mem", "MEM\xe2\x86\x93"); /* ↓ */
	char *top = first_row("usage-sorted-by-mem");
	const char *m = strstr(top, "M/512M");
	cr_assert_not_null(m, "%s", top);
	while (m > top && isdigit((unsigned char)m[-1]))
		m--;
	cr_assert_geq(atoi(m), 200, "the top row under MEM↓ is not the 200 MiB one: %s", top);
	cr_assert(strstr(top, "\u2581") || strstr(top, "\u2582") || strstr(top, "\u2588") ||
			  strstr(top, "\u2584") || strstr(top, "\u2586"),
		  "no sparkline block after a sample: %s", top);
	free(top);
	screen("usage-sorted-by-mem");

	console("n\n<Enter>\n:sleep 5600\n<C-r>\n:save-display usage-ascii\n:q\n", "", "LC_ALL=C");
	char *row = first_row("usage-ascii");
	for (const char *p = row; *p; p++)
		cr_assert_lt((unsigned char)*p, 0x80, "a non-ASCII byte under LC_ALL=C: %s", row);
	cr_assert(strchr(row, '_'), "no ASCII sparkline (an idle sandbox's is _): %s", row);
	free(row);
}

/* ---- stream: cells and the running cell's output (acceptance 1) ---- */

/* A cell prints a line, then sleeps: `l` opens the sandbox's cells with the
 * running one on top, enter its pane, which shows the line while the cell
 * still runs (autoscroll on), and then its end; `:wait nothing` lets the script
 * look while the cell is in flight. Back in the list the cell is stored,
 * newest first; a hostile cell's escape bytes show as caret notation. */
static const char follow_script[] =
	"n\n"
	"<Enter>\n"
	"x\n"
	"import time; print('first', flush=True); time.sleep(4); print('last')\n"
	":wait nothing\n"
	"<Enter>\n"
	":sleep 500\n"
	"l\n"
	":sleep 500\n"
	":save-display PFX-cells-running\n"
	"<Enter>\n"
	":sleep 1500\n"
	":save-display PFX-follow-running\n"
	":wait all\n"
	/* A key waits for the cell's answer; the sleep after it lets the pane
	 * hear the end too. */
	"<Down>\n"
	":sleep 800\n"
	":save-display PFX-follow-done\n"
	"s\n"
	"w\n"
	":save-display PFX-follow-keys\n"
	"<Esc>\n"
	"<Esc>\n"
	"x\n"
	"print('\\x1b[2J\\x07bell\\x9b')\n"
	"<Enter>\n"
	"l\n"
	":save-display PFX-cells-done\n"
	"<Enter>\n"
	":save-display PFX-hostile-pane\n"
	":q\n";

static void follow_screens(const char *pfx, const char *args, const char *env)
{
	char script[sizeof follow_script + 16 * 32]; /* PFX at most 16 times, each at most 32 bytes */
	char *o = script;
	for (const char *p = follow_script; *p;) {
		if (!strncmp(p, "PFX", 3)) {
			o += sprintf(o, "%s", pfx);
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	console(script, args, env);
	/* The screens taken while the cell runs show the spinner at whatever
	 * turn it was: one mark for all of its turns. */
	char *r = sh("sed -i 's|^[-\\\\|/] running a cell|- running a cell|' '%s/%s-cells-running.txt' "
		     "'%s/%s-follow-running.txt' && echo ok",
		     files, pfx, files, pfx);
	cr_assert_str_eq(r, "ok\n", "%s", r);
	free(r);
	char name[64];
	snprintf(name, sizeof name, "%s-cells-running", pfx);
	screen(name);
	screen_has(name, "running");
	snprintf(name, sizeof name, "%s-follow-running", pfx);
	screen(name);
	/* Acceptance 1: the line printed before the cell ends is on screen
	 * while it still runs. */
	screen_has(name, "first");
	screen_has(name, "running");
	screen_has(name, "-- stdout (6 bytes) --"); /* "first\n", not yet "last\n" */
	snprintf(name, sizeof name, "%s-follow-done", pfx);
	screen(name);
	screen_has(name, "exit 0");
	screen_has(name, "-- stdout (11 bytes) --");
	snprintf(name, sizeof name, "%s-follow-keys", pfx);
	screen(name);
	screen_has(name, "wrap on");
	snprintf(name, sizeof name, "%s-cells-done", pfx);
	screen(name);
	snprintf(name, sizeof name, "%s-hostile-pane", pfx);
	screen(name);
	screen_has(name, "^[[2J^Gbell");
}

Test(console, embedded_the_cells_pane_follows_a_running_cells_output_and_shows_its_end)
{
	close_engine();
	follow_screens("cells-embedded", "", NULL);
}

Test(console, attached_the_cells_pane_follows_a_running_cells_output_and_shows_its_end)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	follow_screens("cells-attached", args, env);
}

/* A store opened with --db: the cells come from the store, newest first,
 * and the pane shows a stored cell; nothing is followed (no engine). */
Test(console, a_store_copy_shows_a_sessions_cells_and_a_cells_pane_without_following)
{
	make_store();
	console_db("/\n"
		   "team-a\n"
		   "<Enter>\n"
		   "G\n"
		   "l\n"
		   ":save-display db-cells\n"
		   "<Enter>\n"
		   ":save-display db-cell-pane\n"
		   ":q\n",
		   "store.db");
	screen("db-cells");
	screen_has("db-cells", "x * 2");
	screen("db-cell-pane");
	screen_has("db-cell-pane", "-- stdout (2 bytes) --");
}

/* ---- presenter: following a live call (acceptance 5) ---- */
/* An attached console on :live waits for the next call on any session;
 * another client (the runner, over HTTP) makes one that prints, sleeps and
 * prints again. The diagram lights the daemon and the sandbox while it runs
 * (the first line already on screen), then the answer's way back with its
 * exit; the session, its tier and who opened it are what the daemon said. */
Test(console, attached_live_follows_the_next_call_another_client_makes_out_and_back)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp); /* a session before: its call is the next one */
	live_start(args, env);
	live_send(":live\n"
		  ":save-display live-waiting\n");
	live_wait_screen("live-waiting");
	pid_t kid = fork();
	cr_assert_neq(kid, -1);
	if (kid == 0) {
		struct answer *a = daemon_cell(&d, d.run_token, id, "python",
					       "import time\nprint('hello class', flush=True)\n"
					       "time.sleep(4)\nprint('bye' + ' now')");
		_exit(a && a->status == 200 ? 0 : 1);
	}
	usleep(1500 * 1000); /* the cell is under way (for 4 s) */
	/* The console reads its script as it comes: a :sleep lets its loop
	 * turn (and the view ask) before the screen is saved. */
	live_send(":sleep 1200\n"
		  ":save-display live-running\n");
	live_wait_screen("live-running");
	int st = 0;
	cr_assert_eq(waitpid(kid, &st, 0), kid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the other client's call failed");
	live_send(":sleep 1200\n" /* the view hears the end */
		  ":save-display live-answered\n"
		  "n\n"
		  ":save-display live-again\n");
	live_finish();
	screen("live-waiting");
	screen_has("live-waiting", "waiting for the next call on any session");
	screen_has("live-waiting", "waiting");
	screen("live-running");
	screen_has("live-running", "the call runs in the sandbox");
	screen_has("live-running", "running");
	screen_has("live-running", "hello class");
	screen_lacks("live-running", "bye now"); /* not printed yet */
	char row[128];
	snprintf(row, sizeof row, "session %.12s  tier container", fp);
	screen_has("live-running", row);
	screen_has("live-running", "opened by runner");
	screen("live-answered");
	screen_has("live-answered", "the answer went back to the caller");
	screen_has("live-answered", "exit 0");
	screen_has("live-answered", "answer: exit 0");
	screen_has("live-answered", "bye now");
	screen_has("live-again", "waiting for the next call on any session");
}

/* ---- replay: a refused call in :live ---- */
/* A call the daemon refuses before it runs (here a floor above the
 * session's tier) runs no cell and writes no record; :live still sees it —
 * the session's refusedCalls grew — and stops it at the daemon with the
 * refusal its caller read, on the whole screen (no header, like presenter
 * mode). */
Test(console, attached_live_sees_a_call_the_daemon_refused_stop_at_the_daemon)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	live_start(args, env);
	live_send(":live\n"
		  ":sleep 600\n"
		  ":save-display live-refused-waiting\n");
	live_wait_screen("live-refused-waiting");
	char body[512];
	snprintf(body, sizeof body,
		 "{\"protocol\":3,\"sessionId\":\"%s\",\"minimumIsolation\":\"vm\","
		 "\"cell\":{\"language\":\"python\",\"code\":\"print('never')\"}}",
		 id);
	struct answer *a = daemon_call(&d, d.run_token, "plimsoll.v1.SandboxService/SessionRun", body);
	cr_assert_neq(a->status, 200, "the vm floor was not refused: %s", a->body);
	cr_assert_not_null(strstr(a->body, "the floor vm is above the session's container tier"), "%s",
			   a->body);
	answer_free(a);
	live_send(":sleep 1200\n"
		  ":save-display live-refused\n"
		  "n\n"
		  ":save-display live-refused-again\n");
	live_finish();
	screen("live-refused");
	screen_lacks("live-refused", "bulkhead 0.1.0"); /* no header */
	screen_has("live-refused", "the daemon refused the call before it ran");
	screen_has("live-refused", "┃ daemon ┃──▷│sandbox │"); /* the sandbox never lit */
	screen_has("live-refused", "┃STOPPED ┃");
	screen_has("live-refused", "◀━━┃  HERE  ┃"); /* the refusal back to its caller */
	screen_has("live-refused", "refused: nothing ran, no record was written");
	screen_has("live-refused", "Nothing ran (isolation): the floor vm is above the session's");
	screen_has("live-refused", "n: wait for the next call");
	char row[128];
	snprintf(row, sizeof row, "session %.12s  tier container", fp);
	screen_has("live-refused", row);
	screen_has("live-refused-again", "waiting for the next call on any session");
}

/* ---- capture ---- */

/* A paused container nobody registered (under a name bulkhead makes, so its
 * bundle is read too): `v` asks for a folder, captures
 * what the host still sees, and the MANIFEST verifies; the reap after it
 * leaves the folder as it was. */
Test(console, v_in_leaks_captures_a_paused_orphan_into_a_folder_whose_manifest_verifies)
{
	bh_session *s = open_for_run(BH_TIER_CONTAINER, NULL, NULL);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	char name[64], cgparent[128];
	snprintf(name, sizeof name, "%s", info.sandbox);
	snprintf(cgparent, sizeof cgparent, "%s", bh_engine_cgroup_parent(h.e));
	char root[4200];
	snprintf(root, sizeof root, "%s", bh_engine_runtime_root(h.e, BH_TIER_CONTAINER));
	char config[4300];
	snprintf(config, sizeof config, "%s/orphan.json", files);
	plant_orphan_bundle(h.state_dir, cgparent, name, "bh-0000000000c0ffee", config);
	char last[65], reason[32];
	harness_close_session(&h, s, last, reason);
	close_engine();

	live_start("", NULL);
	live_send(":leaks\n"
		  ":save-display capture-none-yet\n");
	live_wait_screen("capture-none-yet");
	snprintf(orphan_root, sizeof orphan_root, "%s", root);
	plant_orphan_start(h.state_dir, orphan_root, "bh-0000000000c0ffee", config, true);
	live_send("<C-r>\n"
		  "v\n"
		  ":save-display capture-prompt\n"
		  "<Enter>\n"
		  ":save-display capture-done\n"
		  "?\n"
		  ":save-display capture-help\n"
		  "<Esc>\n"
		  "e\n"
		  /* The default's UTC stamp (16 characters) becomes a fixed name. */
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		  "incident\n"
		  "<Enter>\n"
		  ":save-display capture-reported\n"
		  "<C-d>\n"
		  "y\n"
		  "<Enter>\n"
		  ":save-display capture-reaped\n");
	live_finish();
	screen("capture-none-yet");
	screen("capture-prompt");
	screen_has("capture-prompt", "evidence folder: ./bulkhead-evidence-bh-0000000000c0ffee");
	screen("capture-done");
	screen_has("capture-done", "captured into /");
	screen("capture-help");
	screen_has("capture-help", "capture the finding's evidence");
	screen("capture-reported");
	screen_has("capture-reported", "/bulkhead-leaks-incident.md");
	screen("capture-reaped");
	/* The report's JSON against its documented schema, by a real
	 * validator (Debian's python3-jsonschema), and what it says. */
	char *valid = sh("python3 -c 'import json, sys, jsonschema\n"
			 "schema = json.load(open(sys.argv[1]))\n"
			 "jsonschema.Draft202012Validator.check_schema(schema)\n"
			 "report = json.load(open(sys.argv[2]))\n"
			 "jsonschema.Draft202012Validator(schema).validate(report)\n"
			 "s = report[\"suspects\"][0]\n"
			 "print(\"valid\", s[\"sandbox\"], s[\"capture\"][\"verifies\"], "
			 "s[\"capture\"][\"bundleSha256\"] is not None)' "
			 "'%s/../../docs/report.schema.json' '%s/bulkhead-leaks-incident.json' 2>&1",
			 BH_TEST_INTERP, files);
	char *manifest = sh("cat '%s'/bulkhead-evidence-bh-0000000000c0ffee-*/MANIFEST", files);
	cr_assert_str_eq(valid, "valid bh-0000000000c0ffee True True\n", "the report does not validate: %s\n%s",
			 valid, manifest);
	free(manifest);
	free(valid);
	char *md = sh("cat '%s/bulkhead-leaks-incident.md'", files);
	cr_assert(strstr(md, "# bulkhead incident report") && strstr(md, "| orphan | bh-0000000000c0ffee |") &&
			  strstr(md, ", verifies (8 files), bundle config.json sha256 "),
		  "%s", md);
	free(md);
	char *dir = sh("printf %%s '%s'/bulkhead-evidence-bh-0000000000c0ffee-*", files);
	size_t n = 0;
	char sha[65];
	char *problems = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_capture_verify(dir, &n, sha, &problems, &err), 0, "%s", err ? err->msg : "");
	cr_assert_null(problems, "the console's capture does not verify:\n%s", problems);
	char *procs = sh("cat '%s/processes-host.txt'", dir);
	cr_assert(strstr(procs, "/bin/sleep 300"), "%s", procs);
	free(procs);
	free(dir);
	char *left = sh("crun --root '%s' list -q", orphan_root);
	cr_assert_str_empty(left, "still running: %s", left);
	free(left);
}

/* A store whose cells read /etc/passwd (mallory's cell 7 of session 0, its
 * output carrying a terminal escape) and /etc/shadow (session 1's stderr). */
static void search_store(const char *db)
{
	gen_store(db, &(struct gen_store_spec){.sessions = 2, .records_per_session = 8, .events = 10});
	char fp0[65], fp1[65], sql[1024];
	gen_store_session(0, fp0);
	gen_store_session(1, fp1);
	snprintf(sql, sizeof sql,
		 "UPDATE records SET code = CAST('print(open(''/etc/passwd'').read())' AS BLOB), "
		 "stdout_prefix = CAST('root:x:0:0:root:/root:/bin/bash' AS BLOB) || X'0a1b5d303b70776e656407' "
		 "WHERE session = '%s' AND sequence = 7;"
		 "UPDATE records SET code = CAST('open(''/etc/shadow'')' AS BLOB), "
		 "stderr_prefix = CAST('PermissionError: [Errno 13] /etc/shadow' AS BLOB) "
		 "WHERE session = '%s' AND sequence = 3;",
		 fp0, fp1);
	gen_store_exec(db, sql);
}

/* `bulkhead search`: which cell read /etc/passwd? The hit names the
 * session, the sequence and the stream; a sandbox's bytes are escaped; the
 * text is a parameter, never SQL. */
Test(console, bulkhead_search_finds_the_cell_that_read_etc_passwd_and_escapes_its_output)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/search.db", files);
	search_store(db);
	char fp0[65];
	gen_store_session(0, fp0);
	char *out = sh("'%s' search --db '%s' code:/etc/passwd; echo \"exit $?\"", BH_TEST_CLI, db);
	char line[160];
	snprintf(line, sizeof line, "%.12s     7 code   print(open('>>/etc/passwd<<').read())", fp0);
	cr_assert(strstr(out, line), "%s", out);
	cr_assert(strstr(out, "exit 0"), "%s", out);
	cr_assert_null(strstr(out, "shadow"), "%s", out);
	free(out);
	out = sh("'%s' search --db '%s' stdout:/bin/bash; echo \"exit $?\"", BH_TEST_CLI, db);
	cr_assert(strstr(out, "stdout root:x:0:0:root:/root:>>/bin/bash<<\\x0a\\x1b]0;pwned\\x07"), "%s",
		  out);
	cr_assert_null(strchr(out, 0x1b), "an escape reached the output: %s", out);
	free(out);
	out = sh("'%s' search --db '%s' /etc/; echo \"exit $?\"", BH_TEST_CLI, db);
	cr_assert(strstr(out, " 3 code   open('>>/etc/<<shadow')\n") &&
			  strstr(out, " 3 stderr PermissionError: [Errno 13] >>/etc/<<shadow\n") &&
			  strstr(out, " 7 code   print(open('>>/etc/<<passwd').read())\n"),
		  "a hit per cell and stream: %s", out);
	free(out);
	out = sh("'%s' search --db \"%s\" \"code:'); DROP TABLE records; --\"; echo \"exit $?\"; "
		 "'%s' search --db '%s' code:passwd | wc -l",
		 BH_TEST_CLI, db, BH_TEST_CLI, db);
	cr_assert(strstr(out, "no stored cell's code holds that text\nexit 1\n2\n"), "%s", out);
	free(out);
}

/* `/` with a prefix in :rec (or :events) searches every stored cell and
 * lists the hits; enter opens the record; hostile bytes are escaped. */
Test(console, slash_code_prefix_in_records_searches_every_stored_cell_and_enter_opens_the_record)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/search.db", files);
	search_store(db);
	cr_assert_eq(mkdir(strcat(strcpy(db, files), "/nobin"), 0700), 0);
	console_db(":rec\n"
		   "/\n"
		   "code:passwd\n"
		   ":save-display search-typing\n"
		   "<Enter>\n"
		   ":save-display search-code\n"
		   "<Enter>\n"
		   ":save-display search-record\n"
		   "<Esc>\n"
		   "<Esc>\n"
		   ":events\n"
		   "/\n"
		   "cell:/etc/\n"
		   "<Enter>\n"
		   ":save-display search-all-streams\n"
		   "<Esc>\n"
		   "/\n"
		   "out:pwned\n"
		   "<Enter>\n"
		   ":save-display search-hostile\n"
		   "<Esc>\n"
		   "/\n"
		   "stdout:nothing-prints-this\n"
		   "<Enter>\n"
		   ":save-display search-none\n"
		   "<Esc>\n"
		   "?\n"
		   "/\n"
		   "every cell\n"
		   "<Enter>\n"
		   ":save-display search-help\n"
		   ":q\n",
		   "search.db");
	screen("search-typing");
	screen_has("search-typing", "/code:passwd");
	screen("search-code");
	screen_has("search-code", "Search[1]");
	screen_has("search-code", "code   \xe2\x80\xa6rint(open('/etc/>>passwd<<').read())");
	screen("search-record");
	screen_has("search-record", "record_sha256 verifies");
	screen("search-all-streams");
	screen_has("search-all-streams", "Search[3]");
	screen_has("search-all-streams", "stderr \xe2\x80\xa6ror: [Errno 13] >>/etc/<<shadow");
	screen("search-hostile");
	screen_has("search-hostile", "stdout \xe2\x80\xa6" "in/bash\\n\\x1b]0;>>pwned<<\\x07");
	screen("search-none");
	screen_has("search-none", "Search[0]");
	screen("search-help");
	screen_has("search-help", "search every cell: /code:TEXT (stdout: stderr: cell:)");
}

/* `v` in :sb captures a live sandbox the console's engine holds: its init
 * answers its processes and the /work listing, and the MANIFEST verifies. */
Test(console, v_in_sandboxes_captures_a_live_sandbox_through_its_init)
{
	close_engine();
	console("n\n"
		"<Enter>\n"
		"x\n"
		"open('notes.txt', 'w').write('kept for the evidence')\n"
		"<Enter>\n"
		"v\n"
		":save-display capture-live-prompt\n"
		"<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		"<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		"<Backspace>\n<Backspace>\n<Backspace>\n<Backspace>\n"
		"live\n"
		"<Enter>\n"
		":save-display capture-live-done\n"
		"<C-k>\n"
		"y\n"
		":q\n",
		"", NULL);
	screen("capture-live-prompt");
	/* Not compared whole: the flash is cut inside the fingerprint. */
	screen_has("capture-live-done", "captured into /");
	char *dir = sh("printf %%s '%s'/bulkhead-evidence-*-live", files);
	size_t n = 0;
	char sha[65];
	char *problems = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_capture_verify(dir, &n, sha, &problems, &err), 0, "%s: %s", dir,
		     err ? err->msg : "");
	cr_assert_null(problems, "%s", problems);
	char *listing = sh("cat '%s/work-listing.txt'", dir);
	cr_assert(strstr(listing, "notes.txt"), "%s", listing);
	free(listing);
	char *procs = sh("cat '%s/processes-init.txt'", dir);
	cr_assert(strstr(procs, "cell.py"), "%s", procs);
	free(procs);
	char *rows = sh("cat '%s/store-rows.json'", dir);
	cr_assert(strstr(rows, "\"sequence\":\t1"), "%s", rows);
	free(rows);
	free(dir);
}

/* ---- ci: attribution ---- */
/* Who acted, in the events view: the embedded console names itself for the
 * open, the pause and the close. BY shows where the detail keeps its 25
 * columns (here 100); at 80 the wide toggle shows it. */
Test(console, the_events_view_says_the_console_opened_paused_and_closed_the_sandbox)
{
	close_engine();
	screen_cols = 100;
	console("n\n"
		"<Enter>\n"
		"p\n"
		":save-display attribution-paused\n"
		"<C-d>\n"
		"y\n"
		":save-display attribution-closed\n"
		":events\n"
		":save-display attribution-events\n"
		":q\n",
		"", NULL);
	screen("attribution-events");
	screen_has("attribution-events", " BY ");
	/* screen() compared every row, the fingerprints masked; these say it
	 * against the real screen */
	screen_has("attribution-events", " state         console     ");
	screen_has("attribution-events", " pausing -> paused\n");
	screen_has("attribution-events", " ended         console     ");
	screen_lacks("attribution-events", " engine      "); /* nothing was the engine's own */
}

/* ---- inflight: a dead daemon's state directory, opened by the console ---- */

/* A console on another state directory than the harness's (a dead
 * daemon's): it must exit 0 and say nothing. */
static void console_on_state(const char *state, const char *script, const char *extra)
{
	char all[8192];
	snprintf(all, sizeof all, "--state '%s' %s", state, extra ? extra : "");
	console_all(script, all, NULL);
}

/* Issue 17, acceptance 2 (without the capture): a daemon killed holding a
 * paused sandbox and a running cell; --readonly shows both findings and
 * changes nothing at all (the directory's files, the host's containers and
 * cgroups compared before and after). */
Test(console, readonly_on_a_killed_daemons_directory_shows_its_leftovers_and_changes_nothing)
{
	close_engine();
	daemon_start(&d, NULL);
	have_daemon = true;
	struct dead_daemon dd;
	daemon_kill_with_leftovers(&d, &dd);
	char *host_before = dead_daemon_host(&dd);
	char *files_before = dead_daemon_files(&dd);
	console_on_state(dd.state,
			 ":save-display leftovers-readonly\n"
			 ":leaks\n"
			 ":save-display leftovers-readonly-leaks\n"
			 ":q\n",
			 "--readonly");
	char *host_after = dead_daemon_host(&dd);
	char *files_after = dead_daemon_files(&dd);
	cr_assert_str_eq(host_after, host_before, "the read-only console changed the host");
	cr_assert_str_eq(files_after, files_before, "the read-only console wrote in the directory");
	free(host_before), free(host_after), free(files_before), free(files_after);
	screen("leftovers-readonly");
	screen_has("leftovers-readonly", "left: 1 paused sandbox");
	screen_has("leftovers-readonly", "1 call was running");
	screen("leftovers-readonly-leaks");
	screen_has("leftovers-readonly-leaks", dd.paused_sandbox);
	screen_has("leftovers-readonly-leaks", "interrupted");
}

/* The same directory in a console that may act: nothing is reaped until the
 * operator marks a finding and confirms the preview; the interrupted call's
 * timeline shows it "was running" with its code; the reap takes only the
 * marked finding. */
Test(console, a_killed_daemons_leftovers_are_kept_until_a_marked_finding_is_reaped_after_its_preview)
{
	close_engine();
	daemon_start(&d, NULL);
	have_daemon = true;
	struct dead_daemon dd;
	daemon_kill_with_leftovers(&d, &dd);
	char script[8192];
	snprintf(script, sizeof script,
		 ":save-display leftovers-header\n"
		 ":leaks\n"
		 ":save-display leftovers-leaks\n"
		 "/interrupted\n"
		 "<Enter>\n"
		 "<Enter>\n"
		 ":save-display leftovers-timeline\n"
		 "<Esc>\n"
		 "<Esc>\n"
		 "/%s\n"
		 "<Enter>\n"
		 "<Space>\n"
		 ":save-display leftovers-marked\n"
		 "<Esc>\n"
		 "<C-d>\n"
		 ":save-display leftovers-preview\n"
		 "y\n"
		 "<Enter>\n" /* the capture before the reap, into the default folder */
		 ":save-display leftovers-reaped\n"
		 ":rec\n"
		 ":save-display leftovers-records\n"
		 ":q\n",
		 dd.paused_sandbox);
	console_on_state(dd.state, script, NULL);
	screen("leftovers-header");
	screen_has("leftovers-header", "left: 1 paused sandbox");
	screen("leftovers-leaks");
	screen("leftovers-timeline");
	screen_has("leftovers-timeline", "was running");
	screen_has("leftovers-timeline", "import time; print('exfil chunk'");
	screen_has("leftovers-timeline", "principal runner, owner none");
	screen("leftovers-marked");
	screen_has("leftovers-marked", "*abandoned");
	screen("leftovers-preview");
	screen_has("leftovers-preview", "(dry run: nothing removed yet)");
	screen("leftovers-reaped");
	screen_has("leftovers-reaped", "reaped 1 finding");
	char row[128];
	snprintf(row, sizeof row, "abandoned    %s", dd.paused_sandbox);
	screen_lacks("leftovers-reaped", row);
	screen_has("leftovers-reaped", "left: 1 abandoned sandbox, 1");
	screen_has("leftovers-reaped", "interrupted");
	screen("leftovers-records");
	screen_has("leftovers-records", "was running");
	screen_has("leftovers-records", "code:"); /* whole in the timeline, cut here at 80 columns */
	/* The host agrees: the marked sandbox is gone, nothing else was touched. */
	char *host = dead_daemon_host(&dd);
	cr_assert_null(strstr(host, dd.paused_sandbox), "%s", host);
	free(host);
	char out[256];
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT count(*) FROM inflight WHERE "
			"reaped_ms IS NULL\"",
			dd.state);
	cr_assert_str_eq(out, "1\n", "the unmarked interrupted call was reaped too");
	/* ---- remote: the embedded console's reap is the console's (BY console) ---- */
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT actor FROM events WHERE kind = "
			"'leak_reaped'\"",
			dd.state);
	cr_assert_str_eq(out, "console\n");
}

/* ---- remote: forensics through a daemon (issue 17, over the operator API) ---- */

/* A daemon killed holding a paused sandbox and a running cell, started
 * again on its directory with the console's folder as its capture root
 * (the default evidence folder, ./bulkhead-evidence-..., is below it), and
 * the attach arguments of a console with the operator's token (watcher). */
static void attach_restarted_daemon(struct dead_daemon *dd, char args[4400], char env[512])
{
	close_engine();
	char extra[4500];
	snprintf(extra, sizeof extra, "--capture-root '%s'", files);
	daemon_start(&d, extra);
	have_daemon = true;
	daemon_kill_with_leftovers(&d, dd);
	daemon_restart(&d, extra);
	snprintf(env, 512, "BULKHEAD_TOKEN='%s'", d.op_token);
	snprintf(args, 4400, "--attach '%s'", d.sock);
}

/* An attached console does on a restarted daemon's leftovers what an
 * embedded one does on the directory: the header says what the dead engine
 * left, the interrupted call's timeline shows it "was running" with its
 * code, `v` captures a finding (the daemon writes the folder), a mark and
 * ctrl-d preview then reap only the marked finding, captured first, and the
 * reap's event is the operator's. */
Test(console, attached_a_restarted_daemons_leftovers_are_captured_then_a_marked_one_reaped_after_its_preview)
{
	struct dead_daemon dd;
	char args[4400], env[512];
	attach_restarted_daemon(&dd, args, env);
	char script[8192];
	snprintf(script, sizeof script,
		 ":save-display remote-header\n"
		 ":leaks\n"
		 ":save-display remote-leaks\n"
		 "/interrupted\n"
		 "<Enter>\n"
		 "<Enter>\n"
		 ":save-display remote-timeline\n"
		 "<Esc>\n"
		 "<Esc>\n"
		 "/%s\n"
		 "<Enter>\n"
		 "v\n"
		 "<Enter>\n" /* the default folder, below the daemon's capture root */
		 ":save-display remote-captured\n"
		 "<Space>\n"
		 ":save-display remote-marked\n"
		 "<Esc>\n"
		 "<C-d>\n"
		 ":save-display remote-preview\n"
		 "y\n"
		 "<Enter>\n" /* the capture before the reap */
		 ":save-display remote-reaped\n"
		 ":q\n",
		 dd.paused_sandbox);
	console(script, args, env);
	screen("remote-header");
	screen_has("remote-header", "left: 1 paused sandbox");
	screen_has("remote-header", "1 call was running");
	screen("remote-leaks");
	screen_has("remote-leaks", dd.paused_sandbox);
	screen("remote-timeline");
	screen_has("remote-timeline", "was running");
	screen_has("remote-timeline", "import time; print('exfil chunk'");
	screen_has("remote-timeline", "principal runner, owner none");
	screen_has("remote-captured", "captured into /");
	screen("remote-marked");
	screen_has("remote-marked", "*abandoned");
	screen("remote-preview");
	screen_has("remote-preview", "(dry run: nothing removed yet)");
	screen("remote-reaped");
	screen_has("remote-reaped", "reaped 1 finding");
	screen_has("remote-reaped", "left: 1 abandoned sandbox, 1");
	/* The daemon wrote both folders, and each verifies. */
	char *dirs = sh("find '%s' -path '*bulkhead-evidence-*' -name MANIFEST -printf '%%h\\n' | sort",
			files);
	size_t verified = 0;
	for (char *save = NULL, *dir = strtok_r(dirs, "\n", &save); dir;
	     dir = strtok_r(NULL, "\n", &save)) {
		size_t n = 0;
		char sha[65];
		char *problems = NULL;
		bh_error *err = NULL;
		cr_assert_eq(bh_capture_verify(dir, &n, sha, &problems, &err), 0, "%s: %s", dir,
			     err ? err->msg : "");
		cr_assert_null(problems, "%s: %s", dir, problems);
		verified++;
	}
	free(dirs);
	cr_assert_eq(verified, 2, "the capture and the reap's capture: %zu folders verify", verified);
	/* Only the marked finding went, in the operator's name. */
	char *host = dead_daemon_host(&dd);
	cr_assert_null(strstr(host, dd.paused_sandbox), "%s", host);
	free(host);
	char out[256];
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT actor FROM events WHERE kind = "
			"'leak_reaped'\"",
			dd.state);
	cr_assert_str_eq(out, "watcher\n");
	harness_sh_into(out, sizeof out,
			"sqlite3 -readonly '%s/bulkhead.db' \"SELECT count(*) FROM inflight WHERE "
			"reaped_ms IS NULL\"",
			dd.state);
	cr_assert_str_eq(out, "1\n", "the unmarked interrupted call was reaped too");
}

/* `/code:` in an attached console's :rec searches the daemon's store: the
 * cell another client ran is found, enter opens its record. */
Test(console, attached_slash_code_searches_the_daemons_stored_cells_and_enter_opens_the_record)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	http_cell(d.run_token, id, "print(open('/etc/passwd').read()[:4])");
	console(":rec\n"
		"/\n"
		"code:passwd\n"
		"<Enter>\n"
		":save-display remote-search\n"
		"<Enter>\n"
		":save-display remote-search-record\n"
		"<Esc>\n"
		"<Esc>\n"
		"/\n"
		"stdout:nothing-prints-this\n"
		"<Enter>\n"
		":save-display remote-search-none\n"
		":q\n",
		args, env);
	screen("remote-search");
	screen_has("remote-search", "Search[1]");
	screen_has("remote-search", ">>passwd<<");
	screen("remote-search-record");
	screen_has("remote-search-record", "record_sha256 verifies");
	screen("remote-search-none");
	screen_has("remote-search-none", "Search[0]");
}

/* A daemon started without --capture-root refuses an attached console's
 * capture, and the flash says how to allow it; nothing is written. */
Test(console, attached_a_capture_on_a_daemon_without_a_capture_root_is_refused_saying_how)
{
	char env[512], args[4400];
	attach_daemon(args, env, "");
	char id[64], fp[65];
	http_open(d.run_token, id, fp);
	console(":sb\n"
		"v\n"
		"<Enter>\n"
		":save-display remote-capture-refused\n"
		":q\n",
		args, env);
	screen_has("remote-capture-refused", "not captured:");
	screen_has("remote-capture-refused", "--capture-root");
	char *left = sh("ls -d '%s'/bulkhead-evidence-* 2>/dev/null | wc -l", files);
	cr_assert_str_eq(left, "0\n");
	free(left);
}

/* ---- project: a project's record in the records view and its steps in
 * the session's cells. A store made by the embedded engine: a session that
 * ran a project then a cell reading its file, and a fresh project run. ---- */
struct project_wait {
	bool done;
	char err[256];
	enum bh_project_outcome outcome;
};

static void on_project_done(void *arg, const struct bh_project_result *res, const bh_error *err)
{
	struct project_wait *w = arg;
	w->done = true;
	if (err)
		snprintf(w->err, sizeof w->err, "%s", err->msg);
	else
		w->outcome = res->outcome;
}

static void project_completes(bh_session *s, const struct bh_project *p)
{
	struct project_wait w = {0};
	bh_error *err = NULL;
	int rc = s ? bh_session_run_project(s, p, on_project_done, &w, &err)
		   : bh_run_project(h.e, p, on_project_done, &w, &err);
	cr_assert_eq(rc, 0, "project: %s", err ? err->msg : "?");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0, "project: %s", err ? err->msg : "?");
	cr_assert_str_empty(w.err, "the project did not run: %s", w.err);
	cr_assert_eq(w.outcome, BH_PROJECT_COMPLETED);
}

static void make_project_store(void)
{
	static const struct bh_file files_in[] = {
		{"data/in.csv", (const uint8_t *)"a,b\n1,2\n3,4\n", 12}};
	static const char *const steps[] = {"wc -l < data/in.csv > data/count.txt",
					    "cat data/count.txt"};
	static const char *const artifacts[] = {"data/count.txt"};
	struct bh_project p = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
			       .files = files_in, .n_files = 1, .steps = steps, .n_steps = 2,
			       .artifacts = artifacts, .n_artifacts = 1};
	bh_session *s = open_for_run(BH_TIER_CONTAINER, "conv-p", "team-p");
	project_completes(s, &p);
	cell_says(s, "open('data/count.txt').read().strip()", "'3'\n");
	char last[65], reason[32];
	harness_close_session(&h, s, last, reason);
	static const char *const one[] = {"echo fresh"};
	struct bh_project fresh = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				   .steps = one, .n_steps = 1};
	project_completes(NULL, &fresh);
	close_engine();
	char *out = sh("set -e; test ! -s '%s/bulkhead.db-wal'; cp '%s/bulkhead.db' '%s/store.db'; "
		       "mkdir '%s/nobin'; echo copied",
		       h.state_dir, h.state_dir, files, files);
	cr_assert_str_eq(out, "copied\n", "%s", out);
	free(out);
}

Test(console, a_project_record_is_a_project_row_and_its_steps_are_the_sessions_cell)
{
	make_project_store();
	console_db(":rec\n"
		   ":save-display project-records\n"
		   "<Enter>\n"
		   ":save-display project-record\n"
		   ":sandboxes\n"
		   "/\n"
		   "team-p\n"
		   "<Enter>\n"
		   "l\n"
		   ":save-display project-cells\n"
		   "G\n"
		   "<Enter>\n"
		   ":save-display project-cell-pane\n"
		   ":q\n",
		   "store.db");
	screen("project-records");
	screen_has("project-records", "project");
	screen("project-record");
	screen_has("project-record", "project, exit 0, completed");
	screen_has("project-record", "record_sha256 verifies");
	screen("project-cells");
	screen_has("project-cells", "project    0       completed");
	screen("project-cell-pane");
	screen_has("project-cell-pane", "$ cat data/count.txt");
}

/* ---- plumb: egress (issue 18) ---- */
/* The broker's requests are events of their session: method, origin, the
 * route matched, status, bytes each way and time, never a body or a query
 * value; one the broker refused says why. */
Test(console, the_events_view_shows_the_brokers_requests_and_why_one_was_refused)
{
	close_engine();
	char db[4400];
	snprintf(db, sizeof db, "%s/egress.db", files);
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = 1});
	char fp[65], sql[2048];
	gen_store_session(0, fp);
	snprintf(sql, sizeof sql,
		 "INSERT INTO events (at_ms, kind, session, sandbox, detail) VALUES "
		 "(1796166000000, 'egress', '%s', 'bh-gen', 'GET https://api.example.test:443 route "
		 "/v1/items/* -> 200; out 0 B, in 321 B, 12 ms; profile weather'), "
		 "(1796166001000, 'egress', '%s', 'bh-gen', 'POST https://api.example.test:443 -> 403, "
		 "refused: route not allowed; out 0 B, in 0 B, 1 ms; profile weather')",
		 fp, fp);
	gen_store_exec(db, sql);
	cr_assert_eq(mkdir(strcat(strcpy(db, files), "/nobin"), 0700), 0);
	screen_cols = 160; /* the whole detail on one row */
	console_db(":events\n"
		   ":save-display egress-events\n"
		   ":q\n",
		   "egress.db");
	screen("egress-events");
	screen_has("egress-events", " egress ");
	screen_has("egress-events", "GET https://api.example.test:443 route /v1/items/* -> 200; out 0 B, in 321 B");
	screen_has("egress-events", "POST https://api.example.test:443 -> 403, refused: route not allowed");
}

/* ---- report: a store copy's times are when, in UTC — the day when not
 * today (a copy's "now" is not this console's) ---- */
/* A copy whose conv-2 row is live under an engine that is gone, last
 * called on 2026-11-27 (09:15 UTC), expiring that day: its IDLE and
 * EXPIRES in :sb and its SEEN in :leaks are that day, MM-DD; the other
 * rows, from today, are hh:mm. */
Test(console, a_store_copys_times_are_utc_and_a_day_not_today_shows_its_date)
{
	make_store();
	pid_t gone = fork();
	cr_assert_neq(gone, -1);
	if (gone == 0)
		_exit(0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone); /* a pid that no engine runs */
	char *out = sh("cp '%s/store.db' '%s/dated.db' && sqlite3 '%s/dated.db' \"UPDATE sessions SET "
		       "state = 'ready', engine_pid = %d, created_ms = 1795770000000, "
		       "last_call_ms = 1795770900000, expires_ms = 1795773600000, ended_ms = NULL, "
		       "end_reason = NULL, end_detail = NULL WHERE run_key = 'conv-2'\" && echo dated",
		       files, files, files, (int)gone);
	cr_assert_str_eq(out, "dated\n", "%s", out);
	free(out);
	console_db(":sb\n"
		   ":save-display db-dated-sandboxes\n"
		   ":leaks\n"
		   ":save-display db-dated-leaks\n"
		   ":q\n",
		   "dated.db");
	screen("db-dated-sandboxes");
	screen_has("db-dated-sandboxes", " ready       kernel    -         1     11-27 11-27   team-b");
	screen("db-dated-leaks");
	char *row = line_starting("db-dated-leaks", "abandoned");
	cr_assert(strstr(row, " 11-27 "), "SEEN is not the day it was first seen: %s", row);
	free(row);
}

/* ---- fleet (issue 20): the console over a fleet on NATS ---- */

/* Outside a fleet, :hosts says what it is for and how to get one. */
Test(console, the_hosts_view_outside_a_fleet_says_how_to_open_one)
{
	close_engine();
	console(":hosts\n"
		":save-display hosts-no-fleet\n"
		":q\n",
		"", NULL);
	screen("hosts-no-fleet");
	screen_has("hosts-no-fleet", "hosts are a fleet's: open the console on one");
}

#ifdef BH_TUI_FLEET
#include "fleet.h"
#include "nats_cluster.h"

#include <nats/nats.h>
#include <sys/mount.h>

/* Acceptance 4: a three-node NATS cluster, three real daemons in fleet
 * mode (serve --fleet) sharing one clients file, a session on each; the
 * console --fleet lists the three hosts in :hosts and the three sandboxes
 * with their HOST; a host killed (SIGKILL) shows gone, its sandbox's row
 * kept, dim and marked ~, not dropped; drain asks [y/N] and the host says
 * draining; enter on a host shows its sandboxes only. */
#define FLEET_HOSTS 3
static struct nats_cluster *fleet_nats;
static struct daemon fleet_d[FLEET_HOSTS];
static int n_fleet;

static void fleet_teardown(void)
{
	for (int i = n_fleet - 1; i >= 0; i--) {
		/* A daemon that died (killed, or crashed in a failing test)
		 * leaves its view of the rootfs mounted in our namespace: out
		 * of the way first, so that its directory is removed. */
		if (fleet_d[i].pid > 0) {
			int st;
			if (waitpid(fleet_d[i].pid, &st, WNOHANG) == fleet_d[i].pid)
				fleet_d[i].pid = 0;
		}
		if (fleet_d[i].pid <= 0 && fleet_d[i].dir[0]) {
			char view[4300];
			snprintf(view, sizeof view, "%s/state/view", fleet_d[i].dir);
			umount2(view, MNT_DETACH | UMOUNT_NOFOLLOW);
		}
		daemon_stop(&fleet_d[i]);
	}
	n_fleet = 0;
	if (fleet_nats)
		nats_cluster_stop(fleet_nats);
	fleet_nats = NULL;
	teardown();
}

/* A daemon of the fleet: its own state, socket and audit log; the first
 * one's clients file (a fleet's hosts have the same), so one token works
 * on every host. */
static void fleet_daemon_start(int i, const char *more)
{
	struct daemon *d0 = &fleet_d[0], *di = &fleet_d[i];
	char extra[8192];
	snprintf(extra, sizeof extra,
		 "--tier container --fleet '%s' --host-id h%d --fleet-heartbeat-ms 300 "
		 "--fleet-gone-ms 1500 %s",
		 nats_cluster_urls(fleet_nats), i + 1, more ? more : "");
	/* Counted before it starts: one that fails to start is stopped and
	 * its directory removed all the same. */
	n_fleet = i + 1;
	if (i == 0) {
		daemon_start(di, extra);
	} else {
		memset(di, 0, sizeof *di);
		snprintf(di->dir, sizeof di->dir, "%s/daemon-XXXXXX", test_root());
		cr_assert_not_null(mkdtemp(di->dir));
		chmod(di->dir, 0711);
		char sock[sizeof di->sock];
		snprintf(sock, sizeof sock, "%s/sock", di->dir);
		memcpy(di->sock, sock, sizeof sock);
		char *out = sh("cp '%s/clients' '%s/clients' && chmod 0600 '%s/clients' && echo copied",
			       d0->dir, di->dir, di->dir);
		cr_assert_str_eq(out, "copied\n", "%s", out);
		free(out);
		memcpy(di->run_token, d0->run_token, sizeof di->run_token);
		memcpy(di->op_token, d0->op_token, sizeof di->op_token);
		memcpy(di->both_token, d0->both_token, sizeof di->both_token);
		memcpy(di->other_token, d0->other_token, sizeof di->other_token);
		daemon_restart(di, extra);
	}
}

/* The fleet's screens name the hosts' directories and the NATS servers,
 * which vary: <HOSTn> and <NATS>. */
static void fleet_mask(const char *name)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.txt", files, name);
	char *s = harness_slurp(path);
	cr_assert_not_null(s);
	size_t cap = strlen(s) * 2 + 1024;
	char *out = calloc(1, cap);
	for (const char *p = s; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char line[8192];
		snprintf(line, sizeof line, "%.*s", (int)n, p);
		for (int i = 0; i < n_fleet; i++) {
			char tok[24], tilde[4200];
			snprintf(tok, sizeof tok, "<HOST%d>", i + 1);
			replace_literal(line, sizeof line, fleet_d[i].dir, tok);
			snprintf(tilde, sizeof tilde, "~/%s", strrchr(fleet_d[i].dir, '/') + 1);
			replace_literal(line, sizeof line, tilde, tok);
		}
		replace_all(line, sizeof line, "nats://127\\.0\\.0\\.1:[0-9]+", "<NATS>");
		/* A host's figures: memory used, load, the heartbeat's age (the
		 * header's are normalise's). */
		if (strncmp(line, "tiers: ", 7)) {
			replace_all(line, sizeof line, "[0-9.]+/[0-9]+[MG]", "<mem>");
			replace_all(line, sizeof line, "[0-9]+\\.[0-9]{2}", "<load>");
			replace_all(line, sizeof line, "[0-9]+(\\.[0-9])?s", "<age>");
		}
		snprintf(out + strlen(out), cap - strlen(out), "%s\n", line);
		p += n + (e ? 1 : 0);
	}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(out, f);
	fclose(f);
	free(out);
	free(s);
}

/* kill -9 of host i's daemon (its warden stops its sandboxes), and its
 * view of the rootfs unmounted in our namespace (a SIGTERM would have). */
static void fleet_kill(int i)
{
	kill(fleet_d[i].pid, SIGKILL);
	waitpid(fleet_d[i].pid, NULL, 0);
	fleet_d[i].pid = 0;
	char view[4300];
	snprintf(view, sizeof view, "%s/state/view", fleet_d[i].dir);
	umount2(view, MNT_DETACH | UMOUNT_NOFOLLOW);
}

static void fleet_screen(const char *name)
{
	fleet_mask(name);
	screen(name);
}

/* The line of a saved screen holding text (caller frees), or a failure. */
static char *line_with(const char *name, const char *text)
{
	char *s = shot(name);
	char *at = strstr(s, text);
	cr_assert_not_null(at, "screen %s lacks \"%s\":\n%s", name, text, s);
	char *start = at;
	while (start > s && start[-1] != '\n')
		start--;
	size_t len = strcspn(start, "\n");
	char *line = strndup(start, len);
	free(s);
	return line;
}

/* Waits (30 s at most) until an observer of the fleet sees `live` live
 * hosts heartbeating `sessions` sessions between them: placement reads the
 * same heartbeats. */
static void fleet_wait(size_t live, uint32_t sessions)
{
	struct bh_fleet_config cfg = {.servers = nats_cluster_urls(fleet_nats)};
	bh_fleet *f = NULL;
	char *why = NULL;
	cr_assert_eq(bh_fleet_open(&cfg, &f, &why), 0, "observer: %s", why ? why : "");
	size_t seen_live = 0;
	uint32_t seen_sessions = 0;
	for (int i = 0; i < 600; i++) {
		struct pollfd p = {.fd = bh_fleet_fd(f), .events = POLLIN};
		poll(&p, 1, 50);
		bh_fleet_process(f);
		struct bh_fleet_host *hs = NULL;
		size_t n = bh_fleet_hosts(f, &hs);
		seen_live = 0;
		seen_sessions = 0;
		for (size_t k = 0; k < n; k++)
			if (!hs[k].gone) {
				seen_live++;
				seen_sessions += hs[k].sessions;
			}
		free(hs);
		if (seen_live == live && seen_sessions == sessions)
			break;
	}
	bh_fleet_close(f);
	cr_assert(seen_live == live && seen_sessions == sessions,
		  "the fleet shows %zu live hosts with %u sessions, not %zu with %u", seen_live,
		  seen_sessions, live, sessions);
}

/* Opens a session through host i (the fleet places it: with the others
 * holding one each, on the emptiest) and returns its fingerprint. */
static void fleet_open(int i, char fp[65], char id[64])
{
	struct answer *a = daemon_call(&fleet_d[i], fleet_d[i].run_token, SVC "OpenSession",
				       "{\"protocol\":3}");
	cr_assert_eq(a->status, 200, "OpenSession through h%d: %ld %s", i + 1, a->status, a->body);
	member(a->body, "session", fp, 65);
	char sid[64];
	member(a->body, "sessionId", id ? id : sid, 64);
	answer_free(a);
}

Test(console, fleet_lists_three_hosts_and_their_sandboxes_and_a_killed_host_shows_gone,
     .fini = fleet_teardown, .timeout = 900)
{
	close_engine();
	fleet_nats = nats_cluster_start(3);
	for (int i = 0; i < FLEET_HOSTS; i++)
		fleet_daemon_start(i, NULL);
	/* A session on each: opened through each host in turn, after the
	 * heartbeats said where the others are (placement: the most room). */
	char fp[FLEET_HOSTS][65];
	for (int i = 0; i < FLEET_HOSTS; i++) {
		fleet_wait(FLEET_HOSTS, (uint32_t)i);
		fleet_open(i, fp[i], NULL);
	}
	fleet_wait(FLEET_HOSTS, FLEET_HOSTS);
	char args[4400], env[512];
	snprintf(args, sizeof args, "--fleet '%s'", nats_cluster_urls(fleet_nats));
	snprintf(env, sizeof env, "BULKHEAD_TOKEN='%s'", fleet_d[0].both_token);
	live_start(args, env);
	live_send(":sleep 2500\n"
		  "<C-r>\n"
		  ":save-display fleet-sandboxes\n"
		  "d\n"
		  ":save-display fleet-describe\n"
		  "<Esc>\n"
		  "<Down>\n"
		  "p\n"
		  ":save-display fleet-paused\n"
		  "r\n"
		  ":save-display fleet-resumed\n"
		  ":events\n"
		  ":save-display fleet-events\n"
		  ":hosts\n"
		  ":save-display fleet-hosts\n"
		  "G\n"
		  "<Enter>\n"
		  ":save-display fleet-host-sandboxes\n"
		  "<Esc>\n"
		  "g\n"
		  "d\n"
		  ":save-display fleet-drain-asked\n"
		  "y\n"
		  ":sleep 2000\n"
		  "<C-r>\n"
		  ":save-display fleet-drained\n"
		  "u\n"
		  "y\n"
		  ":sleep 1500\n");
	live_wait_screen("fleet-drained");
	/* Host h3 dies under the console. */
	fleet_kill(2);
	live_send(":sleep 7000\n"
		  "<C-r>\n"
		  ":save-display fleet-hosts-gone\n"
		  "/gone\n"
		  "<Enter>\n"
		  ":save-display fleet-hosts-filtered\n"
		  "<Esc>\n"
		  ":sb\n"
		  ":sleep 500\n"
		  ":save-display fleet-sandboxes-gone\n"
		  ":leaks\n"
		  ":sleep 1500\n"
		  ":save-display fleet-leaks\n");
	live_wait_screen("fleet-leaks");
	live_finish();

	/* Three hosts, live, each with its socket as its API. */
	fleet_screen("fleet-hosts");
	screen_has("fleet-hosts", "Hosts[3]");
	for (int i = 0; i < FLEET_HOSTS; i++) {
		char host[8];
		snprintf(host, sizeof host, "h%d ", i + 1);
		char *row = line_with("fleet-hosts", host);
		cr_assert(strstr(row, " live "), "host h%d is not live: %s", i + 1, row);
		cr_assert(strstr(row, " container "), "host h%d names no tier: %s", i + 1, row);
		free(row);
	}
	/* Three sandboxes, each with the host that holds it. */
	fleet_screen("fleet-sandboxes");
	screen_has("fleet-sandboxes", "Sandboxes[3]");
	screen_has("fleet-sandboxes", "SESSION      HOST     STATE");
	for (int i = 0; i < FLEET_HOSTS; i++) {
		char prefix[16];
		snprintf(prefix, sizeof prefix, "%.12s ", fp[i]);
		char *row = line_with("fleet-sandboxes", prefix);
		cr_assert(strstr(row, " ready "), "%s", row);
		cr_assert(strstr(row, " h1 ") || strstr(row, " h2 ") || strstr(row, " h3 "), "no HOST: %s", row);
		free(row);
	}
	char *one = line_with("fleet-sandboxes", " h1 ");
	free(one);
	one = line_with("fleet-sandboxes", " h2 ");
	free(one);
	one = line_with("fleet-sandboxes", " h3 ");
	char on_h3[13];
	snprintf(on_h3, sizeof on_h3, "%.12s", one); /* the session h3 holds */
	free(one);
	/* Looking and acting go to the host that holds the sandbox: describe
	 * of the first row (h1's), pause and resume of the second (h2's). */
	char *first = line_with("fleet-sandboxes", " h1 ");
	char first_fp[13];
	snprintf(first_fp, sizeof first_fp, "%.12s", first);
	free(first);
	fleet_screen("fleet-describe");
	screen_has("fleet-describe", first_fp);
	char *second = line_with("fleet-sandboxes", " h2 ");
	char second_fp[13];
	snprintf(second_fp, sizeof second_fp, "%.12s", second);
	free(second);
	fleet_screen("fleet-paused");
	char *paused = line_with("fleet-paused", second_fp);
	cr_assert(strstr(paused, " h2 ") && strstr(paused, " paused "), "%s", paused);
	free(paused);
	screen_has("fleet-paused", "pause ");
	fleet_screen("fleet-resumed");
	char *resumed = line_with("fleet-resumed", second_fp);
	cr_assert(strstr(resumed, " ready "), "%s", resumed);
	free(resumed);
	/* The events of every host, merged by time: each session's opening. */
	fleet_screen("fleet-events");
	for (int i = 0; i < FLEET_HOSTS; i++) {
		char prefix[16];
		snprintf(prefix, sizeof prefix, "%.12s", fp[i]);
		screen_has("fleet-events", prefix);
	}
	/* enter on h3: its sandboxes only. */
	fleet_screen("fleet-host-sandboxes");
	screen_has("fleet-host-sandboxes", "Sandboxes[1] (host h3)");
	/* drain: asked first, then the host heartbeats that it drains. */
	fleet_screen("fleet-drain-asked");
	screen_has("fleet-drain-asked", "drain host h1 (it places nothing new, hibernates what it can)? [y/N]");
	fleet_screen("fleet-drained");
	char *row = line_with("fleet-drained", "h1 ");
	cr_assert(strstr(row, " draining "), "h1 does not say it drains: %s", row);
	free(row);
	/* The killed host: gone, its row kept, dim and marked. */
	fleet_screen("fleet-hosts-gone");
	row = line_with("fleet-hosts-gone", "h3 ");
	cr_assert(strstr(row, " gone "), "h3 is not gone: %s", row);
	free(row);
	screen_has("fleet-hosts-gone", "(1 gone, 0 not answering)");
	/* Filtered as every table is. */
	fleet_screen("fleet-hosts-filtered");
	screen_has("fleet-hosts-filtered", "Hosts[1] </gone>");
	row = line_with("fleet-hosts-filtered", "h3 ");
	free(row);
	screen_lacks("fleet-hosts-filtered", "h1         live");
	fleet_screen("fleet-sandboxes-gone");
	screen_has("fleet-sandboxes-gone", "Sandboxes[3]");
	row = line_with("fleet-sandboxes-gone", " h3~ ");
	free(row);
	screen_has("fleet-sandboxes-gone", "(not answering: h3, rows ~ old)");
	/* :leaks over the fleet: the gone host's directory entry (the
	 * session h3 held), named a fleet finding. */
	fleet_screen("fleet-leaks");
	row = line_with("fleet-leaks", on_h3);
	cr_assert(!strncmp(row, "ghost ", 6) && strstr(row, " fleet: a l"), "%s", row);
	free(row);
}
#endif

#ifdef BH_TUI_FLEET
/* bulkhead fleet hosts, records and leaks with one host down: the table of
 * every host (the dead one gone), the records of the hosts that answered,
 * merged, and the one that did not named (exit 1); the fleet's leaks: the
 * dead host's directory entry, a sandbox a host runs whose entry was
 * deleted, an image in the shared images directory no entry names. status
 * sums it up; drain waits for the host to say so; a host not in the fleet
 * is refused naming it. */
static void delete_entry(const char *fp)
{
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	kvStore *kv = NULL;
	cr_assert_eq(natsConnection_ConnectTo(&nc, nats_cluster_urls(fleet_nats)), NATS_OK);
	cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	cr_assert_eq(js_KeyValue(&kv, js, BH_FLEET_BUCKET), NATS_OK);
	char key[128];
	snprintf(key, sizeof key, "session.%s", fp);
	cr_assert_eq(kvStore_Delete(kv, key), NATS_OK);
	kvStore_Destroy(kv);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

Test(console, fleet_cli_hosts_records_and_leaks_name_the_host_that_did_not_answer,
     .fini = fleet_teardown, .timeout = 900)
{
	close_engine();
	fleet_nats = nats_cluster_start(3);
	for (int i = 0; i < FLEET_HOSTS; i++)
		fleet_daemon_start(i, NULL);
	/* A cell through each host: a record in the store of the host that
	 * holds its session. */
	char fp[FLEET_HOSTS][65];
	for (int i = 0; i < FLEET_HOSTS; i++) {
		fleet_wait(FLEET_HOSTS, (uint32_t)i);
		char id[64];
		fleet_open(i, fp[i], id);
		struct answer *a = daemon_cell(&fleet_d[i], fleet_d[i].run_token, id, "python", "1+1");
		cr_assert_eq(a->status, 200, "%s", a->body);
		answer_free(a);
	}
	char env[600];
	snprintf(env, sizeof env, "BULKHEAD_TOKEN='%s'", fleet_d[0].op_token);
	char args[5000];
	int st = 0;
	snprintf(args, sizeof args, "fleet records --fleet '%s'", nats_cluster_urls(fleet_nats));
	char *out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	cr_assert(strstr(out, "3 records from 3 of 3 hosts"), "%s", out);
	/* Which host holds the first session (the fleet placed it). */
	char at[16];
	snprintf(at, sizeof at, "%.12s", fp[0]);
	const char *hit = strstr(out, at);
	cr_assert_not_null(hit, "%s", out);
	while (hit > out && hit[-1] != '\n')
		hit--;
	int holder = hit[1] - '1';
	cr_assert(hit[0] == 'h' && holder >= 0 && holder < FLEET_HOSTS, "%s", out);
	/* How many records each host holds (placement chose). */
	int held[FLEET_HOSTS] = {0};
	for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (l[0] == 'h' && l[1] >= '1' && l[1] < '1' + FLEET_HOSTS && l[2] == ' ')
			held[l[1] - '1']++;
	free(out);
	/* Its entry deleted behind its host's back; an image nobody names. */
	delete_entry(fp[0]);
	char images[4400];
	snprintf(images, sizeof images, "%s/images", files);
	cr_assert_eq(mkdir(images, 0700), 0);
	snprintf(args, sizeof args, "%s/bh-00000000000dead1", images);
	cr_assert_eq(mkdir(args, 0700), 0);
	/* A host that does not hold it dies. */
	int dead = (holder + 1) % FLEET_HOSTS;
	char dead_id[8];
	snprintf(dead_id, sizeof dead_id, "h%d", dead + 1);
	fleet_kill(dead);
	usleep(6500 * 1000); /* past the 5 s gone time */
	snprintf(args, sizeof args, "fleet hosts --fleet '%s'", nats_cluster_urls(fleet_nats));
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	cr_assert(strstr(out, "HOST         STATE    TIERS"), "%s", out);
	for (int i = 0; i < FLEET_HOSTS; i++) {
		char row[64];
		snprintf(row, sizeof row, "h%d           %-8s container", i + 1, i == dead ? "gone" : "live");
		cr_assert(strstr(out, row), "no \"%s\" in:\n%s", row, out);
	}
	free(out);
	snprintf(args, sizeof args, "fleet records --fleet '%s'", nats_cluster_urls(fleet_nats));
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 1, "%s", out);
	char tally[64];
	snprintf(tally, sizeof tally, "%d records from 2 of 3 hosts", FLEET_HOSTS - held[dead]);
	cr_assert(strstr(out, tally), "%s", out);
	char said[128];
	snprintf(said, sizeof said, "hosts that did not answer: %s (gone: no heartbeat)", dead_id);
	cr_assert(strstr(out, said), "%s", out);
	free(out);
	snprintf(args, sizeof args, "fleet leaks --fleet '%s' --images-dir '%s'",
		 nats_cluster_urls(fleet_nats), images);
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	snprintf(said, sizeof said, "fleet: a live directory entry on host %s, which is gone (no heartbeat)",
		 dead_id);
	cr_assert(strstr(out, said), "%s", out);
	snprintf(said, sizeof said, "fleet: host h%d runs it, the directory does not list it", holder + 1);
	cr_assert(strstr(out, said), "%s", out);
	cr_assert(strstr(out, "bh-00000000000dead1") &&
		  strstr(out, "fleet: an image in the shared images directory that no directory entry names"),
		  "%s", out);
	free(out);
	snprintf(args, sizeof args, "fleet status --fleet '%s'", nats_cluster_urls(fleet_nats));
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	cr_assert(strstr(out, "NATS: connected to nats://127.0.0.1:"), "%s", out);
	cr_assert(strstr(out, "hosts: 3 (2 live, 0 draining, 1 gone)"), "%s", out);
	free(out);
	snprintf(args, sizeof args, "fleet drain nosuch --fleet '%s'", nats_cluster_urls(fleet_nats));
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 1, "%s", out);
	cr_assert(strstr(out, "no host \"nosuch\" in the fleet"), "%s", out);
	free(out);
	/* In colour, on a real terminal: the gone host red, the live ones
	 * green (monochrome says it in words: STATE). */
	char path[4400], cmd[16384], cenv[1024];
	snprintf(path, sizeof path, "%s/script.txt", files);
	/* The selection (drawn reversed) on a live host. */
	write_script(path, dead == 0 ? ":hosts\n:sleep 1500\nG\n<C-r>\n:q\n" : ":hosts\n:sleep 1500\n<C-r>\n:q\n");
	snprintf(cenv, sizeof cenv, "NO_COLOR= BULKHEAD_TOKEN='%s'", fleet_d[0].op_token);
	char cargs[1024];
	snprintf(cargs, sizeof cargs, "--fleet '%s'", nats_cluster_urls(fleet_nats));
	console_cmd(cmd, sizeof cmd, path, cargs, cenv, true);
	int master = -1;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	pid_t pid = forkpty(&master, NULL, NULL, &ws);
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		harness_child_signals_default();
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	live_pid = pid;
	size_t cap = 1 << 20, len = 0;
	char *tty = malloc(cap);
	for (int i = 0; i < RUN_TIMEOUT_S * 10; i++) {
		struct pollfd pfd = {.fd = master, .events = POLLIN};
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t n = read(master, tty + len, cap - len - 1);
		if (n <= 0)
			break; /* EIO: the console is gone */
		len += (size_t)n;
		cr_assert_lt(len, cap - 1, "the console wrote too much");
	}
	close(master);
	st = reap_console(pid);
	live_pid = 0;
	tty[len] = '\0';
	cr_assert_eq(st, 0, "the console exited %d", st);
	/* A row's STATE, not the header's "1 gone " or the title's "1 gone,":
	 * the cell ends where its colour does. */
	cr_assert_eq(colour_before(tty, len, "gone\x1b[39m"), 1 /* red */, "the gone host is not drawn red");
	cr_assert_eq(colour_before(tty, len, "live\x1b[39m"), 2 /* green */, "a live host is not drawn green");
	free(tty);
	/* :rec over the fleet: the answering hosts' records merged; enter
	 * opens one from its own host, whose digest and chain verify. */
	char all[4400], renv[700];
	snprintf(all, sizeof all, "--fleet '%s'", nats_cluster_urls(fleet_nats));
	snprintf(renv, sizeof renv, "BULKHEAD_TOKEN='%s'", fleet_d[0].op_token);
	console_all(":sleep 1500\n"
		    ":rec\n"
		    ":save-display fleet-records\n"
		    "<Enter>\n"
		    ":save-display fleet-record\n"
		    ":q\n",
		    all, renv);
	char count[32];
	snprintf(count, sizeof count, "Records[%d]", FLEET_HOSTS - held[dead]);
	screen_has("fleet-records", count);
	screen_has("fleet-record", "record_sha256 verifies");
	snprintf(args, sizeof args, "fleet drain h%d --fleet '%s'", holder + 1, nats_cluster_urls(fleet_nats));
	out = cli_run(&st, env, args);
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	snprintf(said, sizeof said, "host h%d is draining", holder + 1);
	cr_assert(strstr(out, said), "%s", out);
	free(out);
}
#endif

#ifdef BH_TUI_FLEET
/* bulkhead fleet --help, and what it refuses before it reaches NATS. */
Test(console, fleet_cli_help_and_usage_refusals)
{
	close_engine();
	int st = 0;
	char *out = cli_run(&st, "", "fleet --help");
	cr_assert_eq(WEXITSTATUS(st), 0, "%s", out);
	cr_assert(strstr(out, "usage: bulkhead fleet status|hosts|leaks|records"), "%s", out);
	free(out);
	out = cli_run(&st, "BULKHEAD_FLEET=", "fleet hosts");
	cr_assert_eq(WEXITSTATUS(st), 2, "%s", out);
	cr_assert(strstr(out, "name the NATS servers with --fleet URLS or $BULKHEAD_FLEET"), "%s", out);
	free(out);
	out = cli_run(&st, "", "fleet drain --fleet nats://127.0.0.1:1");
	cr_assert_eq(WEXITSTATUS(st), 2, "%s", out);
	cr_assert(strstr(out, "fleet drain: which host?"), "%s", out);
	free(out);
	out = cli_run(&st, "", "fleet bogus --fleet nats://127.0.0.1:1");
	cr_assert_eq(WEXITSTATUS(st), 2, "%s", out);
	cr_assert(strstr(out, "no subcommand \"bogus\""), "%s", out);
	free(out);
}
#endif
