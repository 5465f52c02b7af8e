/* The line-mode CLI on a real terminal (a pseudo-terminal, as a person's
 * shell would give it): what a sandbox or a store chose — cell output, a
 * file's name, a record's fields — reaches the terminal with its control
 * bytes shown, not acted on (the audit's F8). `--raw` passes cell output
 * as written; through a pipe everything passes as written. */
#include "gen_store.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define CLI_TIMEOUT_S 120

static struct harness h;

static void setup(void)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	/* The CLI opens the state directory itself. */
	bh_engine_close(h.e);
	h.e = NULL;
}

static void teardown(void)
{
	harness_close(&h);
}

struct tty_run {
	char *out; /* everything the terminal received */
	size_t len;
	int status;
};

/* Runs `bulkhead ARGS` on a fresh pseudo-terminal (stdin, stdout and
 * stderr all on it), types input (NULL: none; the line discipline echoes
 * it, as a terminal does), and collects what reached the terminal. */
static struct tty_run run_on_tty(const char *input, const char *const *args)
{
	const char *argv[24] = {BH_TEST_CLI};
	size_t n = 1;
	for (; args[n - 1] && n < 23; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	int master = -1;
	struct winsize ws = {.ws_row = 40, .ws_col = 200};
	pid_t pid = forkpty(&master, NULL, NULL, &ws);
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		harness_child_signals_default();
		setenv("BULKHEAD_INTERP", BH_TEST_INTERP, 1);
		execv(BH_TEST_CLI, (char *const *)argv);
		_exit(127);
	}
	if (input) {
		/* No echo: what the terminal shows is then only what the command
		 * wrote (the typed input holds the escapes as text). */
		struct termios t;
		cr_assert_eq(tcgetattr(master, &t), 0);
		t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
		cr_assert_eq(tcsetattr(master, TCSANOW, &t), 0);
		size_t len = strlen(input);
		cr_assert_eq(write(master, input, len), (ssize_t)len);
		/* End of input: ^D at the start of a line. */
		cr_assert_eq(write(master, "\x04", 1), 1);
	}
	struct tty_run r = {.out = malloc(1 << 20)};
	size_t cap = 1 << 20;
	for (int i = 0; i < CLI_TIMEOUT_S * 10; i++) {
		struct pollfd p = {.fd = master, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0) {
			if (waitpid(pid, &r.status, WNOHANG) == pid) {
				pid = 0;
				/* What is still buffered. */
				ssize_t got;
				while (r.len < cap - 1 && (got = read(master, r.out + r.len, cap - 1 - r.len)) > 0)
					r.len += (size_t)got;
				break;
			}
			continue;
		}
		ssize_t got = read(master, r.out + r.len, cap - 1 - r.len);
		if (got <= 0)
			break; /* EIO: the last descriptor of the terminal closed */
		r.len += (size_t)got;
		cr_assert_lt(r.len, cap - 1, "the command wrote too much");
	}
	close(master);
	if (pid > 0) {
		int st = 0;
		for (int i = 0; i < 100 && waitpid(pid, &st, WNOHANG) == 0; i++)
			usleep(50 * 1000);
		if (waitpid(pid, &st, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			cr_assert_fail("bulkhead %s did not finish", args[0]);
		}
		r.status = st;
	}
	r.out[r.len] = '\0';
	return r;
}

/* Whether a byte reached the terminal raw. */
static bool has_byte(const struct tty_run *r, unsigned char c)
{
	return memchr(r->out, c, r->len) != NULL;
}

static bool has(const struct tty_run *r, const char *text)
{
	return memmem(r->out, r->len, text, strlen(text)) != NULL;
}

/* What the audit's reproduction writes: a title (OSC 0), a clear, and the
 * clipboard (OSC 52); and a CSI as the C1 code U+009B. */
#define HOSTILE_PY "'x\\x1b]0;OWNED\\x07\\x1b[2J\\x1b]52;c;ZWNobyBoaQ==\\x07\\u009b31m'"

TestSuite(cli_output, .init = setup, .fini = teardown, .timeout = 300);

Test(cli_output, shell_on_a_terminal_shows_the_sandboxs_escapes_and_raw_passes_only_cell_output)
{
	const char *args[] = {"shell", "--state", h.state_dir, "--tier", "container", NULL};
	struct tty_run r = run_on_tty("open('/work/' + " HOSTILE_PY ", 'w').close()\n"
				      ":files\n"
				      "print(" HOSTILE_PY ")\n"
				      ":close\n",
				      args);
	cr_assert(WIFEXITED(r.status), "the shell died: %s", r.out);
	cr_assert(!has_byte(&r, 0x1b), "an ESC reached the terminal raw:\n%s", r.out);
	cr_assert(!has_byte(&r, 0x07), "a BEL reached the terminal raw:\n%s", r.out);
	cr_assert(!has(&r, "\xc2\x9b"), "a C1 CSI reached the terminal raw:\n%s", r.out);
	/* Shown instead: the file's name in :files, and the printed line. */
	cr_assert(has(&r, "x\\x1b]0;OWNED\\x07\\x1b[2J\\x1b]52;c;ZWNobyBoaQ==\\x07\\u009b31m"),
		  "the escapes are not shown:\n%s", r.out);
	free(r.out);

	const char *raw[] = {"shell", "--raw", "--state", h.state_dir, "--tier", "container", NULL};
	r = run_on_tty("open('/work/' + " HOSTILE_PY ", 'w').close()\n"
		       ":files\n"
		       "print(" HOSTILE_PY ")\n"
		       ":close\n",
		       raw);
	cr_assert(has(&r, "x\x1b]0;OWNED\x07\x1b[2J"), "--raw did not pass the cell's output:\n%s",
		  r.out);
	/* The file's name is still shown escaped: --raw is for cell output. */
	cr_assert(has(&r, "  x\\x1b]0;OWNED"), ":files under --raw:\n%s", r.out);
	free(r.out);
}

Test(cli_output, run_on_a_terminal_shows_the_outputs_escapes_and_raw_passes_them)
{
	const char *args[] = {"run", "--state", h.state_dir, "--tier", "container",
			      "import sys; print(" HOSTILE_PY "); print(" HOSTILE_PY ", file=sys.stderr)",
			      NULL};
	struct tty_run r = run_on_tty(NULL, args);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "run failed: %s", r.out);
	cr_assert(!has_byte(&r, 0x1b), "an ESC reached the terminal raw:\n%s", r.out);
	cr_assert(!has_byte(&r, 0x07), "a BEL reached the terminal raw:\n%s", r.out);
	cr_assert(!has(&r, "\xc2\x9b"), "a C1 CSI reached the terminal raw:\n%s", r.out);
	cr_assert(has(&r, "x\\x1b]0;OWNED"), "the escapes are not shown:\n%s", r.out);
	free(r.out);
	const char *raw[] = {"run", "--raw", "--state", h.state_dir, "--tier", "container",
			     "print(" HOSTILE_PY ")", NULL};
	r = run_on_tty(NULL, raw);
	cr_assert(has(&r, "x\x1b]0;OWNED\x07\x1b[2J"), "--raw did not pass the output:\n%s", r.out);
	free(r.out);
}

/* A crafted store's fields (a copy handed over for forensics). */
Test(cli_output, records_on_a_terminal_shows_a_crafted_stores_escapes)
{
	char db[4200];
	snprintf(db, sizeof db, "%s/bulkhead.db", h.state_dir);
	gen_store(db, &(struct gen_store_spec){.sessions = 1, .records_per_session = 2});
	gen_store_exec(db, "UPDATE records SET isolation = 'k' || char(27) || ']0;OWNED' || char(7), "
			   "language = 'py' || char(155) || '31m', flags = 'f' || char(27) || '[2J' || "
			   "x'9b' || char(127)");
	const char *args[] = {"records", "--no-attach", "--state", h.state_dir, NULL};
	struct tty_run r = run_on_tty(NULL, args);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "records failed: %s", r.out);
	cr_assert(!has_byte(&r, 0x1b), "an ESC reached the terminal raw:\n%s", r.out);
	cr_assert(!has_byte(&r, 0x07), "a BEL reached the terminal raw:\n%s", r.out);
	cr_assert(!has_byte(&r, 0x7f), "a DEL reached the terminal raw:\n%s", r.out);
	cr_assert(!has(&r, "\xc2\x9b"), "a C1 CSI reached the terminal raw:\n%s", r.out);
	cr_assert(!has_byte(&r, 0x9b), "a raw 0x9b reached the terminal:\n%s", r.out);
	cr_assert(has(&r, "k\\x1b]0;OWNED\\x07"), "the isolation is not shown escaped:\n%s", r.out);
	cr_assert(has(&r, "py\\u009b31m"), "the language is not shown escaped:\n%s", r.out);
	free(r.out);
	const char *json[] = {"records", "--json", "--no-attach", "--state", h.state_dir, NULL};
	r = run_on_tty(NULL, json);
	cr_assert(!has_byte(&r, 0x1b) && !has_byte(&r, 0x7f) && !has(&r, "\xc2\x9b"),
		  "--json let a control through:\n%s", r.out);
	cr_assert(has(&r, "py\\u009b31m"), "%s", r.out);
	free(r.out);

	/* Through a pipe the bytes are the store's, unchanged. */
	char cmd[8400];
	snprintf(cmd, sizeof cmd,
		 "'%s' records --no-attach --state '%s' | grep -c \"$(printf 'k\\033]0;OWNED')\"",
		 BH_TEST_CLI, h.state_dir);
	FILE *p = popen(cmd, "r");
	char line[64] = "";
	cr_assert_not_null(fgets(line, sizeof line, p));
	pclose(p);
	cr_assert_str_eq(line, "2\n", "a pipe did not get the bytes as stored: %s", line);
}
