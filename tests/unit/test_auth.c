/* The daemon's front door: the clients file and `bulkhead token` (suite
 * auth), and admission per principal (suite admission). The token tests drive the real
 * CLI binary, as an operator would, and check what a client then gets. */
#include "clients.h"
#include "clients_edit.h"
#include "ratelimit.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/bh-auth-test-XXXXXX";
static char file[sizeof dir + 16];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir), "mkdtemp");
	snprintf(file, sizeof file, "%s/clients", dir);
}

static void teardown(void)
{
	char cmd[sizeof dir + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(auth, .init = setup, .fini = teardown);

/* Runs `bulkhead ARGS` (stdout to out, stderr to err); returns its exit status. */
static int cli(char *out, size_t outlen, char *err, size_t errlen, const char *fmt, ...)
{
	char args[2048], cmd[4096], errpath[sizeof dir + 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(errpath, sizeof errpath, "%s/stderr", dir);
	snprintf(cmd, sizeof cmd, "%s %s 2>'%s'", BH_TEST_CLI, args, errpath);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	FILE *e = fopen(errpath, "r");
	cr_assert_not_null(e);
	n = fread(err, 1, errlen - 1, e);
	err[n] = '\0';
	fclose(e);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `bulkhead token create NAME --scope SCOPES` into token; asserts it worked. */
static void create(const char *name, const char *scopes, char token[CLIENTS_TOKEN_LEN + 1])
{
	char out[256], err[1024];
	int rc = cli(out, sizeof out, err, sizeof err, "token create %s --scope %s --clients '%s'",
		     name, scopes, file);
	cr_assert_eq(rc, 0, "token create %s failed (%d): %s", name, rc, err);
	cr_assert_eq(strlen(out), CLIENTS_TOKEN_LEN + 1, "stdout is the token and a newline: [%s]",
		     out);
	cr_assert_eq(out[CLIENTS_TOKEN_LEN], '\n');
	memcpy(token, out, CLIENTS_TOKEN_LEN);
	token[CLIENTS_TOKEN_LEN] = '\0';
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "open %s", path);
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void append(const char *text)
{
	FILE *f = fopen(file, "a");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void write_file(const char *text, mode_t mode)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

static struct clients *load_ok(void)
{
	struct clients *c = NULL;
	char *why = NULL;
	cr_assert_eq(clients_load(file, &c, &why), 0, "load: %s", why ? why : "");
	return c;
}

static char *load_fails(void)
{
	struct clients *c = NULL;
	char *why = NULL;
	cr_assert_lt(clients_load(file, &c, &why), 0, "a bad clients file was loaded");
	cr_assert_null(c);
	cr_assert_not_null(why);
	return why;
}

static int auth(struct clients *c, const char *token, struct client_principal *who)
{
	return clients_authenticate(c, token, strlen(token), who);
}

/* ---- tokens and the file ---- */

Test(auth, created_token_authenticates_with_its_scopes)
{
	char ci[CLIENTS_TOKEN_LEN + 1], ops[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	create("ops", "code:run,operator", ops);
	cr_assert(!strncmp(ci, "bh_", 3), "a token starts with bh_: %s", ci);
	cr_assert_eq(strspn(ci + 3, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
		     43, "43 base64url characters follow");
	cr_assert_str_neq(ci, ops, "each client gets its own token");

	struct clients *c = load_ok();
	cr_assert_eq(clients_count(c), 2);
	struct client_principal who;
	cr_assert_eq(auth(c, ci, &who), 0, "the printed token is accepted");
	cr_assert_str_eq(who.name, "ci");
	cr_assert(client_has_scope(&who, CLIENT_SCOPE_CODE_RUN));
	cr_assert_not(client_has_scope(&who, CLIENT_SCOPE_OPERATOR), "ci was given code:run only");
	cr_assert_eq(auth(c, ops, &who), 0);
	cr_assert_str_eq(who.name, "ops");
	cr_assert(client_has_scope(&who, CLIENT_SCOPE_CODE_RUN));
	cr_assert(client_has_scope(&who, CLIENT_SCOPE_OPERATOR));
	clients_free(c);

	struct stat st;
	cr_assert_eq(stat(file, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "a new clients file is 0600, is %o", st.st_mode & 0777);
}

Test(auth, wrong_empty_and_near_miss_tokens_are_refused)
{
	char ci[CLIENTS_TOKEN_LEN + 1], other[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	cr_assert_eq(clients_token_new(other, NULL), 0);
	struct clients *c = load_ok();
	struct client_principal who = {.name = "untouched"};

	cr_assert_lt(auth(c, other, &who), 0, "someone else's token");
	cr_assert_lt(clients_authenticate(c, "", 0, &who), 0, "an empty token");
	cr_assert_lt(clients_authenticate(c, NULL, 0, &who), 0, "no token");
	char near[CLIENTS_TOKEN_LEN + 2];
	strcpy(near, ci);
	near[CLIENTS_TOKEN_LEN - 1] = near[CLIENTS_TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
	cr_assert_lt(auth(c, near, &who), 0, "a token differing in its last character");
	cr_assert_lt(clients_authenticate(c, ci, CLIENTS_TOKEN_LEN - 1, &who), 0, "a prefix");
	strcpy(near, ci);
	strcat(near, "x");
	cr_assert_lt(auth(c, near, &who), 0, "the token with one more character");
	cr_assert_lt(auth(c, "sha256:0000", &who), 0);
	cr_assert_str_eq(who.name, "untouched", "a refusal fills in nobody");

	cr_assert_eq(auth(c, ci, &who), 0, "and the real one still works");
	clients_free(c);
}

Test(auth, neither_the_file_nor_any_output_contains_the_token)
{
	char out[4096], err[4096], ci[CLIENTS_TOKEN_LEN + 1];
	int rc = cli(out, sizeof out, err, sizeof err, "token create ci --scope code:run --clients '%s'",
		     file);
	cr_assert_eq(rc, 0, "%s", err);
	memcpy(ci, out, CLIENTS_TOKEN_LEN);
	ci[CLIENTS_TOKEN_LEN] = '\0';
	cr_assert_null(strstr(err, ci + 3), "create's message repeats the token: %s", err);

	const char *text = slurp(file);
	cr_assert_null(strstr(text, ci + 3), "the clients file holds the token:\n%s", text);
	cr_assert_not_null(strstr(text, "ci sha256:"), "it holds the digest line:\n%s", text);

	rc = cli(out, sizeof out, err, sizeof err, "token list --clients '%s'", file);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_not_null(strstr(out, "ci"), "%s", out);
	cr_assert_not_null(strstr(out, "code:run"), "%s", out);
	cr_assert_null(strstr(out, ci + 3), "list shows the token: %s", out);
	unsigned char d[CLIENTS_DIGEST_LEN];
	char hex[65], prefix[20];
	clients_token_digest(ci, strlen(ci), d);
	clients_digest_hex(d, hex);
	snprintf(prefix, sizeof prefix, "sha256:%.12s", hex);
	cr_assert_not_null(strstr(out, prefix), "list shows a short digest prefix %s:\n%s", prefix,
			   out);
	cr_assert_null(strstr(out, hex), "list shows only a prefix of the digest:\n%s", out);

	rc = cli(out, sizeof out, err, sizeof err, "token list --json --clients '%s'", file);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_not_null(strstr(out, "\"name\":\t\"ci\""), "%s", out);
	cr_assert_not_null(strstr(out, prefix), "%s", out);
	cr_assert_null(strstr(out, ci + 3), "list --json shows the token: %s", out);
}

Test(auth, a_token_pasted_into_the_file_is_refused_without_repeating_it)
{
	char tok[CLIENTS_TOKEN_LEN + 1], line[128];
	cr_assert_eq(clients_token_new(tok, NULL), 0);
	snprintf(line, sizeof line, "ci %s code:run\n", tok);
	write_file(line, 0600);
	char *why = load_fails();
	cr_assert_not_null(strstr(why, "line 1"), "%s", why);
	cr_assert_not_null(strstr(why, "looks like a token"), "%s", why);
	cr_assert_null(strstr(why, tok + 3), "the error repeats the token: %s", why);
	free(why);

	static const char *const shapes[] = {"%s\n", "%s code:run\n", "%s sha256:%s code:run\n"};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		snprintf(line, sizeof line, shapes[i], tok, "00");
		write_file(line, 0600);
		why = load_fails();
		cr_assert_not_null(strstr(why, "looks like a token"), "shape %zu: %s", i, why);
		cr_assert_null(strstr(why, tok + 3), "the error repeats the token: %s", why);
		free(why);
	}
}

Test(auth, revoke_removes_the_client_and_its_token_stops_working)
{
	char ci[CLIENTS_TOKEN_LEN + 1], ops[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	create("ops", "operator", ops);
	append("# a comment the operator wrote\n");
	struct clients *c = load_ok();

	char out[4096], err[4096];
	int rc = cli(out, sizeof out, err, sizeof err, "token revoke ci --clients '%s'", file);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_not_null(strstr(err, "revoked client \"ci\""), "%s", err);

	char *why = NULL;
	cr_assert_eq(clients_reload(c, &why), 0, "%s", why ? why : "");
	struct client_principal who;
	cr_assert_lt(auth(c, ci, &who), 0, "a revoked token still works");
	cr_assert_eq(auth(c, ops, &who), 0, "revoking ci took ops too");
	cr_assert_str_eq(who.name, "ops");
	cr_assert_eq(clients_count(c), 1);
	clients_free(c);

	const char *text = slurp(file);
	cr_assert_null(strstr(text, "ci sha256:"), "the line is still there:\n%s", text);
	cr_assert_not_null(strstr(text, "# a comment the operator wrote"), "comments are kept:\n%s",
			   text);

	rc = cli(out, sizeof out, err, sizeof err, "token list --clients '%s'", file);
	cr_assert_eq(rc, 0);
	cr_assert_null(strstr(out, "ci "), "list still shows ci:\n%s", out);

	rc = cli(out, sizeof out, err, sizeof err, "token revoke ci --clients '%s'", file);
	cr_assert_neq(rc, 0, "revoking twice succeeds");
	cr_assert_not_null(strstr(err, "no client named \"ci\""), "%s", err);
}

Test(auth, create_refuses_a_duplicate_name_and_a_bad_scope)
{
	char tok[CLIENTS_TOKEN_LEN + 1], out[4096], err[4096];
	create("ci", "code:run", tok);
	int rc = cli(out, sizeof out, err, sizeof err, "token create ci --scope operator --clients '%s'",
		     file);
	cr_assert_neq(rc, 0);
	cr_assert_str_empty(out, "no token is printed for a refused create: %s", out);
	cr_assert_not_null(strstr(err, "a client named \"ci\" already exists"), "%s", err);

	rc = cli(out, sizeof out, err, sizeof err, "token create dev --scope code:walk --clients '%s'",
		 file);
	cr_assert_eq(rc, 2, "a bad scope is a usage error");
	cr_assert_str_empty(out);
	cr_assert_not_null(strstr(err, "unknown scope \"code:walk\""), "%s", err);

	rc = cli(out, sizeof out, err, sizeof err, "token create dev --clients '%s'", file);
	cr_assert_eq(rc, 2);
	cr_assert_not_null(strstr(err, "--scope is needed"), "%s", err);

	rc = cli(out, sizeof out, err, sizeof err, "token list --clients '%s/missing'", dir);
	cr_assert_neq(rc, 0);
	cr_assert_not_null(strstr(err, "No such file"), "an unreadable file is named: %s", err);

	struct clients *c = load_ok();
	cr_assert_eq(clients_count(c), 1, "only the first create landed");
	clients_free(c);
}

Test(auth, malformed_line_is_refused_by_number_and_reload_keeps_the_old_table)
{
	char ci[CLIENTS_TOKEN_LEN + 1], late[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	struct clients *c = load_ok();

	/* The file now has a 3-line header, ci on line 4, this on line 5. */
	append("broken sha256:not-a-digest code:run\n");
	char *why = NULL;
	cr_assert_lt(clients_reload(c, &why), 0, "a malformed file was accepted");
	cr_assert_not_null(strstr(why, "line 5"), "the error names the line: %s", why);
	cr_assert_not_null(strstr(why, file), "the error names the file: %s", why);
	cr_assert_not_null(strstr(why, "kept the clients loaded before"), "%s", why);
	free(why);
	why = NULL;

	struct client_principal who;
	cr_assert_eq(auth(c, ci, &who), 0, "the old table is still in use");
	cr_assert_eq(clients_count(c), 1);

	/* The CLI refuses to edit it, naming the same line. */
	char out[256], err[2048];
	int rc = cli(out, sizeof out, err, sizeof err, "token create late --scope code:run --clients '%s'",
		     file);
	cr_assert_neq(rc, 0);
	cr_assert_not_null(strstr(err, "line 5"), "%s", err);
	cr_assert_str_empty(out);

	/* Fixed by hand, the next reload takes the new file. */
	write_file("# fixed\n", 0600);
	create("late", "operator", late);
	cr_assert_eq(clients_reload(c, &why), 0, "%s", why ? why : "");
	cr_assert_lt(auth(c, ci, &who), 0);
	cr_assert_eq(auth(c, late, &who), 0);
	cr_assert_str_eq(who.name, "late");
	clients_free(c);
}

Test(auth, each_kind_of_bad_line_is_named)
{
	static const char *const digest =
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const char *const other =
		"sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const struct {
		const char *line2;
		const char *says;
	} cases[] = {
		{"b %s code:run,root\n", "unknown scope \"root\""},
		{"b %s code:run,\n", "empty scope"},
		{"a %s code:run\n", "client \"a\" is already defined on line 1"},
		{"-b %s code:run\n", "client name must be"},
		{"b sha256:abc code:run\n", "64 hex digits"},
		{"b %s\n", "found 2 fields"},
		{"b %s operator extra\n", "unknown option \"extra\""},
		{"b %s operator approval=none extra\n", "unknown option \"extra\""}, /* ---- tls ---- */
		{"b %s operator approval=none subject=CN=b extra\n", "found 6 fields"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], line2[256];
		snprintf(line2, sizeof line2, cases[i].line2, other);
		snprintf(text, sizeof text, "a %s operator\n%s", digest, line2);
		write_file(text, 0600);
		char *why = load_fails();
		cr_assert_not_null(strstr(why, "line 2: "), "case %zu: %s", i, why);
		cr_assert_not_null(strstr(why, cases[i].says), "case %zu: %s", i, why);
		free(why);
	}
	/* Same digest twice: two clients would share one token. */
	char text[512];
	snprintf(text, sizeof text, "a %s operator\n\n  # note\nb %s code:run # trailing\n", digest,
		 digest);
	write_file(text, 0600);
	char *why = load_fails();
	cr_assert_not_null(strstr(why, "line 4: "), "%s", why);
	cr_assert_not_null(strstr(why, "same token digest as \"a\""), "%s", why);
	free(why);

	/* Blank lines, comments and a trailing comment are fine. */
	snprintf(text, sizeof text, "\n# header\na\t%s  operator   # ops team\n\n", digest);
	write_file(text, 0600);
	struct clients *c = load_ok();
	cr_assert_eq(clients_count(c), 1);
	clients_free(c);
}

Test(auth, group_or_world_writable_file_is_refused)
{
	char ci[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	struct clients *c = load_ok();

	cr_assert_eq(chmod(file, 0666), 0);
	char *why = load_fails();
	cr_assert_not_null(strstr(why, "world-writable"), "%s", why);
	free(why);
	why = NULL;
	cr_assert_lt(clients_reload(c, &why), 0, "reload took a world-writable file");
	free(why);
	struct client_principal who;
	cr_assert_eq(auth(c, ci, &who), 0, "the old table stays");

	cr_assert_eq(chmod(file, 0620), 0);
	why = load_fails();
	cr_assert_not_null(strstr(why, "group-writable"), "%s", why);
	free(why);

	char out[256], err[2048];
	int rc = cli(out, sizeof out, err, sizeof err, "token revoke ci --clients '%s'", file);
	cr_assert_neq(rc, 0, "an unsafe file was edited");
	cr_assert_not_null(strstr(err, "group-writable"), "%s", err);

	cr_assert_eq(chmod(file, 0640), 0);
	clients_free(load_ok());
	clients_free(c);
}

Test(auth, file_owned_by_someone_else_is_refused)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give the file away");
	char ci[CLIENTS_TOKEN_LEN + 1];
	create("ci", "code:run", ci);
	cr_assert_eq(chown(file, 65534, 65534), 0);
	char *why = load_fails();
	cr_assert_not_null(strstr(why, "owned by uid 65534"), "%s", why);
	free(why);
}

Test(auth, an_edit_keeps_the_files_mode_without_write_bits_for_others)
{
	char a[CLIENTS_TOKEN_LEN + 1], b[CLIENTS_TOKEN_LEN + 1];
	create("a", "code:run", a);
	cr_assert_eq(chmod(file, 0640), 0);
	create("b", "code:run", b);
	struct stat st;
	cr_assert_eq(stat(file, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "mode is %o", st.st_mode & 0777);
}

Test(auth, concurrent_creates_all_land)
{
	enum { N = 8 };
	int fds[N];
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		int p[2];
		cr_assert_eq(pipe(p), 0);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			char name[16];
			snprintf(name, sizeof name, "client%d", i);
			dup2(p[1], 1);
			close(p[0]);
			close(p[1]);
			int devnull = open("/dev/null", O_WRONLY);
			dup2(devnull, 2);
			execl(BH_TEST_CLI, BH_TEST_CLI, "token", "create", name, "--scope", "code:run",
			      "--clients", file, (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		fds[i] = p[0];
		pids[i] = pid;
	}
	char tokens[N][CLIENTS_TOKEN_LEN + 2];
	for (int i = 0; i < N; i++) {
		size_t got = 0;
		ssize_t r;
		while ((r = read(fds[i], tokens[i] + got, sizeof tokens[i] - 1 - got)) > 0)
			got += (size_t)r;
		tokens[i][got] = '\0';
		close(fds[i]);
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "create %d failed", i);
		cr_assert_eq(got, CLIENTS_TOKEN_LEN + 1, "create %d printed [%s]", i, tokens[i]);
		tokens[i][CLIENTS_TOKEN_LEN] = '\0';
	}
	struct clients *c = load_ok();
	cr_assert_eq(clients_count(c), N, "%zu of %d concurrent creates landed:\n%s", clients_count(c),
		     N, slurp(file));
	for (int i = 0; i < N; i++) {
		struct client_principal who;
		char name[16];
		snprintf(name, sizeof name, "client%d", i);
		cr_assert_eq(auth(c, tokens[i], &who), 0, "token of %s refused", name);
		cr_assert_str_eq(who.name, name);
	}
	clients_free(c);
	char cmd[256], out[256];
	snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c tmp", dir);
	FILE *f = popen(cmd, "r");
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	pclose(f);
	cr_assert_eq(atoi(out), 0, "temporary files were left behind");
}

Test(auth, reload_picks_up_a_client_created_while_running)
{
	char a[CLIENTS_TOKEN_LEN + 1], b[CLIENTS_TOKEN_LEN + 1];
	create("a", "code:run", a);
	struct clients *c = load_ok();
	create("b", "operator", b);
	struct client_principal who;
	cr_assert_lt(auth(c, b, &who), 0, "known before the reload");
	char *why = NULL;
	cr_assert_eq(clients_reload(c, &why), 0, "%s", why ? why : "");
	cr_assert_eq(auth(c, b, &who), 0);
	cr_assert_str_eq(who.name, "b");
	cr_assert_eq(who.scopes, CLIENT_SCOPE_OPERATOR);
	clients_free(c);
}

Test(auth, bearer_header_is_taken_apart_strictly)
{
	const char *t = NULL;
	size_t n = 0;
	cr_assert_eq(clients_bearer_token("Bearer bh_abc", &t, &n), 0);
	cr_assert_eq(n, 6);
	cr_assert(!strncmp(t, "bh_abc", n));
	cr_assert_eq(clients_bearer_token("bearer \t bh_abc  ", &t, &n), 0);
	cr_assert_eq(n, 6);
	cr_assert_lt(clients_bearer_token("Basic dXNlcjpwYXNz", &t, &n), 0);
	cr_assert_lt(clients_bearer_token("Bearer", &t, &n), 0);
	cr_assert_lt(clients_bearer_token("Bearer   ", &t, &n), 0);
	cr_assert_lt(clients_bearer_token("Bearerbh_abc", &t, &n), 0);
	cr_assert_lt(clients_bearer_token("Bearer bh_a bc", &t, &n), 0);
	cr_assert_lt(clients_bearer_token(NULL, &t, &n), 0);
}

Test(auth, scopes_parse_and_format_round_trip)
{
	unsigned s = 0;
	char buf[64];
	cr_assert_eq(clients_scopes_parse("operator,code:run", &s, NULL), 0);
	cr_assert_eq(s, CLIENT_SCOPE_CODE_RUN | CLIENT_SCOPE_OPERATOR);
	clients_scopes_format(s, buf, sizeof buf);
	cr_assert_str_eq(buf, "code:run,operator");
	cr_assert_lt(clients_scopes_parse("", &s, NULL), 0);
	cr_assert_lt(clients_scopes_parse("*", &s, NULL), 0);
	cr_assert_lt(clients_scopes_parse("code:run,,operator", &s, NULL), 0);
}

/* ---- admission ---- */

#define T0 1000000u /* an arbitrary monotonic start */

Test(admission, burst_then_refusal_then_refill_after_simulated_time)
{
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.per_minute = 60, .burst = 3});
	uint64_t retry = 99;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ratelimit_admit(rl, "ci", T0, &retry), RATELIMIT_ADMIT, "call %d of the burst",
			     i + 1);
		ratelimit_release(rl, "ci");
	}
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, &retry), RATELIMIT_RATE, "the burst is spent");
	cr_assert_eq(retry, 1000, "60 a minute: the next token is due in 1000 ms, not %llu",
		     (unsigned long long)retry);
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 999, &retry), RATELIMIT_RATE);
	cr_assert_eq(retry, 1);
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 1000, &retry), RATELIMIT_ADMIT, "refilled");
	ratelimit_release(rl, "ci");
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 1000, NULL), RATELIMIT_RATE);

	/* An hour later the bucket holds the burst, not an hour's worth. */
	uint64_t later = T0 + 3600u * 1000u;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ratelimit_admit(rl, "ci", later, NULL), RATELIMIT_ADMIT);
		ratelimit_release(rl, "ci");
	}
	cr_assert_eq(ratelimit_admit(rl, "ci", later, NULL), RATELIMIT_RATE);

	cr_assert_eq(ratelimit_admit(rl, "other", later, NULL), RATELIMIT_ADMIT,
		     "another principal has its own bucket");

	struct ratelimit_stats st;
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.admitted, 8);
	cr_assert_eq(st.shed[RATELIMIT_RATE], 4);
	cr_assert_str_eq(ratelimit_verdict_name(RATELIMIT_RATE), "rate");
	ratelimit_free(rl);
}

Test(admission, a_slow_rate_refills_fractionally)
{
	/* 1 a minute, burst 1: half a minute is not enough, a minute is. */
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.per_minute = 1});
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	ratelimit_release(rl, "ci");
	uint64_t retry = 0;
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 30000, &retry), RATELIMIT_RATE);
	cr_assert_eq(retry, 30000);
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 60000, NULL), RATELIMIT_ADMIT);
	ratelimit_free(rl);
}

Test(admission, in_flight_cap_per_principal)
{
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.per_principal = 2});
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	uint64_t retry = 99;
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, &retry), RATELIMIT_PER_KEY, "a third at once");
	cr_assert_eq(retry, 0);
	cr_assert_eq(ratelimit_admit(rl, "ops", T0, NULL), RATELIMIT_ADMIT, "others are not held up");
	ratelimit_release(rl, "ci");
	cr_assert_eq(ratelimit_admit(rl, "ci", T0 + 1, NULL), RATELIMIT_ADMIT, "a slot came back");
	struct ratelimit_stats st;
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.inflight, 3);
	cr_assert_eq(st.shed[RATELIMIT_PER_KEY], 1);
	ratelimit_free(rl);
}

Test(admission, daemon_wide_cap_sheds_everyone)
{
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.total = 2});
	cr_assert_eq(ratelimit_admit(rl, "a", T0, NULL), RATELIMIT_ADMIT);
	cr_assert_eq(ratelimit_admit(rl, "b", T0, NULL), RATELIMIT_ADMIT);
	cr_assert_eq(ratelimit_admit(rl, "c", T0, NULL), RATELIMIT_AT_CAPACITY);
	ratelimit_release(rl, "a");
	cr_assert_eq(ratelimit_admit(rl, "c", T0, NULL), RATELIMIT_ADMIT);
	ratelimit_free(rl);
}

Test(admission, a_refused_call_takes_no_token)
{
	struct ratelimit *rl = ratelimit_new(
		&(struct ratelimit_config){.per_minute = 60, .burst = 2, .per_principal = 1});
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_PER_KEY);
	ratelimit_release(rl, "ci");
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT,
		     "the refusals spent the bucket");
	ratelimit_free(rl);
}

Test(admission, idle_full_buckets_are_evicted)
{
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.per_minute = 60, .burst = 2});
	cr_assert_eq(ratelimit_admit(rl, "idle", T0, NULL), RATELIMIT_ADMIT);
	ratelimit_release(rl, "idle");
	cr_assert_eq(ratelimit_admit(rl, "busy", T0, NULL), RATELIMIT_ADMIT); /* not released */
	struct ratelimit_stats st;
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.principals, 2);

	cr_assert_eq(ratelimit_sweep(rl, T0 + 500), 0, "a bucket still refilling is kept");
	cr_assert_eq(ratelimit_sweep(rl, T0 + 1000), 1, "the idle full bucket goes");
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.principals, 1, "the one with a call in flight stays");
	ratelimit_release(rl, "busy");
	cr_assert_eq(ratelimit_sweep(rl, T0 + 1000), 1);
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.principals, 0);

	/* admit sweeps by itself once a minute of the caller's time. */
	cr_assert_eq(ratelimit_admit(rl, "x", T0 + 2000, NULL), RATELIMIT_ADMIT);
	ratelimit_release(rl, "x");
	cr_assert_eq(ratelimit_admit(rl, "y", T0 + 120000, NULL), RATELIMIT_ADMIT);
	ratelimit_get_stats(rl, &st);
	cr_assert_eq(st.principals, 1, "x, idle and full, was evicted on the way; y is left");
	ratelimit_free(rl);
}

Test(admission, reconfiguring_cuts_buckets_to_the_new_burst)
{
	struct ratelimit *rl = ratelimit_new(&(struct ratelimit_config){.per_minute = 60, .burst = 10});
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	ratelimit_release(rl, "ci");
	ratelimit_configure(rl, &(struct ratelimit_config){.per_minute = 60, .burst = 1});
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT);
	ratelimit_release(rl, "ci");
	cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_RATE);
	ratelimit_configure(rl, &(struct ratelimit_config){0});
	for (int i = 0; i < 100; i++)
		cr_assert_eq(ratelimit_admit(rl, "ci", T0, NULL), RATELIMIT_ADMIT, "no limits set");
	ratelimit_free(rl);
}

/* ---- tls: a line's subject=DN names the client whose verified certificate
 * has that subject (serve --tls-client-ca), with its token or instead of
 * one (DIGEST "-"); read as strictly as the rest of the line ---- */
#define TLS_DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(auth, a_subject_names_a_client_with_or_instead_of_its_token)
{
	write_file("ci " TLS_DIGEST " code:run subject=CN=ci,O=Example approval=required\n"
		   "worker-1 - code:run subject=CN=worker-1,O=Example\n",
		   0600);
	struct clients *c = load_ok();
	struct client_principal who;
	cr_assert_eq(clients_by_subject(c, "CN=worker-1,O=Example", &who), 0);
	cr_expect_str_eq(who.name, "worker-1");
	cr_expect_eq(who.scopes, CLIENT_SCOPE_CODE_RUN);
	cr_assert_eq(clients_by_subject(c, "CN=ci,O=Example", &who), 0);
	cr_expect_str_eq(who.name, "ci");
	cr_expect_eq(who.approval, CLIENT_APPROVAL_REQUIRED);
	cr_expect_eq(clients_by_subject(c, "cn=worker-1,o=example", &who), -1, "case matters");
	cr_expect_eq(clients_by_subject(c, "CN=worker-1", &who), -1);
	cr_expect_eq(clients_by_subject(c, "", &who), -1);
	/* A certificate-only client: no token is its, whatever hashes to zeros. */
	cr_expect_eq(auth(c, "-", &who), -1);
	char tok[CLIENTS_TOKEN_LEN + 1];
	create("someone", "code:run", tok);
	cr_expect_eq(auth(c, tok, &who), -1);
	clients_free(c);
}

Test(auth, a_bad_subject_line_is_refused_naming_the_line)
{
	char long_line[600];
	snprintf(long_line, sizeof long_line, "b - code:run subject=CN=%0300d\n", 0);
	const struct {
		const char *line2, *says;
	} cases[] = {
		{"b - code:run\n", "a client without a token (DIGEST \"-\") needs a subject=DN"},
		{"b - code:run approval=none\n", "needs a subject=DN"},
		{"b " TLS_DIGEST " code:run subject=\n", "subject= needs a certificate subject of 1 to 255 bytes"},
		{long_line, "1 to 255 bytes"},
		{"b " TLS_DIGEST " code:run subject=CN=b subject=CN=c\n", "subject= is given twice"},
		{"b " TLS_DIGEST " code:run subject=CN=b\x01\n", "control character"},
		{"b - code:run subject=CN=a,O=Example\n", "has the same subject as \"a\" on line 1"},
		{"b -- code:run subject=CN=b\n", "the second field must be"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[1024];
		snprintf(text, sizeof text, "a - operator subject=CN=a,O=Example\n%s", cases[i].line2);
		write_file(text, 0600);
		char *why = load_fails();
		cr_expect(strstr(why, "line 2: ") != NULL, "case %zu: %s", i, why);
		cr_expect(strstr(why, cases[i].says) != NULL, "case %zu: %s", i, why);
		free(why);
	}
}
