/* `bulkhead files` and `bulkhead cp` attached to a daemon: a session's
 * /work listed like ls -l, and a file copied here byte for byte, never over
 * an existing file without --force, never through a symlink in /work, never
 * cut at the size cap. */
#include "daemon_harness.h"
#include "harness.h"
#include "png_cell.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SVC "plimsoll.v1.SandboxService/"

static struct daemon d;
static void start(void) { daemon_start(&d, "--tier container"); }
static void stop(void) { daemon_stop(&d); }

/* A cell's stdout, first line only (the digest it prints). */
static void cell(const struct daemon_session *s, const char *code, char *out, size_t n)
{
	struct answer *a = daemon_cell(&d, d.run_token, s->id, "python", code);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert_eq(r.run.result.exit_code, 0, "%.*s", (int)r.run.result.err_len,
		     (const char *)r.run.result.err);
	snprintf(out, n, "%.*s", (int)strcspn((const char *)r.run.result.out, "\n"),
		 (const char *)r.run.result.out);
	wire_session_run_response_free(&r);
	answer_free(a);
}

/* `bulkhead ARGS --attach SOCK` with the operator's token; its status. */
static int cli(char *out, size_t n, const char *args)
{
	return harness_sh_into(out, n, "BULKHEAD_TOKEN='%s' '%s' %s --attach '%s' 2>&1", d.op_token,
			       BH_TEST_CLI, args, d.sock);
}

static void sha256_of(const char *path, char out[65])
{
	char got[256];
	cr_assert_eq(harness_sh_into(got, sizeof got, "sha256sum '%s'", path), 0, "%s", got);
	snprintf(out, 65, "%.64s", got);
}

static bool exists(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0;
}

Test(files_cli, files_lists_work_like_ls_and_cp_copies_a_png_byte_for_byte, .init = start,
     .fini = stop)
{
	struct daemon_session s;
	daemon_open_session(&d, &s);
	char digest[128], out[16384], args[8192];
	cell(&s, PNG_CELL, digest, sizeof digest);
	cell(&s,
	     "import os\n"
	     "os.makedirs('/work/out')\n"
	     "open('/work/out/a.txt', 'w').write('a\\n')\n"
	     "open('/work/notes.txt', 'w').write('hello\\n')\n"
	     "os.symlink('/etc/passwd', '/work/pw')\n"
	     "open('/work/big.bin', 'wb').write(b'x' * (5 * 1024 * 1024))\n",
	     out, sizeof out);
	/* A prefix names the session, as ls shows it. */
	snprintf(args, sizeof args, "files %.12s", s.fp);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	cr_assert_not_null(strstr(out, "  notes.txt\n"), "%s", out);
	cr_assert_not_null(strstr(out, "  plot.png\n"), "%s", out);
	cr_assert_not_null(strstr(out, "\nd "), "no directory line: %s", out);
	cr_assert_not_null(strstr(out, "  out\n"), "%s", out);
	cr_assert_not_null(strstr(out, "  pw -> /etc/passwd\n"), "the link and its target: %s", out);
	cr_assert_not_null(strstr(out, "\n-            6 "), "a file's line starts with '-': %s", out);
	snprintf(args, sizeof args, "files %s /work/out", s.fp);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	cr_assert_not_null(strstr(out, "  a.txt\n"), "%s", out);
	cr_assert_null(strstr(out, "notes.txt"), "%s", out);

	char dest[4200], got[65];
	snprintf(dest, sizeof dest, "%s/plot.png", d.dir);
	snprintf(args, sizeof args, "cp %.12s:plot.png '%s'", s.fp, dest);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	sha256_of(dest, got);
	cr_assert_str_eq(got, digest, "the copy is not the sandbox's file byte for byte");
}

Test(files_cli, cp_refuses_to_overwrite_without_force_a_symlink_and_a_file_over_the_cap,
     .init = start, .fini = stop)
{
	struct daemon_session s;
	daemon_open_session(&d, &s);
	char out[16384], args[8192], dest[4200];
	cell(&s,
	     "import os\n"
	     "open('/work/notes.txt', 'w').write('new\\n')\n"
	     "os.symlink('/etc/passwd', '/work/pw')\n"
	     "open('/work/big.bin', 'wb').write(b'x' * (5 * 1024 * 1024))\n",
	     out, sizeof out);
	snprintf(dest, sizeof dest, "%s/notes.txt", d.dir);
	FILE *f = fopen(dest, "w");
	fputs("mine\n", f);
	fclose(f);
	snprintf(args, sizeof args, "cp %s:notes.txt '%s'", s.fp, dest);
	cr_assert_eq(cli(out, sizeof out, args), 125, "%s", out);
	cr_assert_not_null(strstr(out, "exists: not overwritten (--force replaces it)"), "%s", out);
	char *kept = harness_slurp(dest);
	cr_assert_str_eq(kept, "mine\n", "the existing file was changed");
	free(kept);
	/* A directory as DEST: DEST/NAME, which exists too. */
	snprintf(args, sizeof args, "cp %s:/work/notes.txt '%s'", s.fp, d.dir);
	cr_assert_eq(cli(out, sizeof out, args), 125, "%s", out);
	snprintf(args, sizeof args, "cp --force %s:notes.txt '%s'", s.fp, dest);
	cr_assert_eq(cli(out, sizeof out, args), 0, "%s", out);
	kept = harness_slurp(dest);
	cr_assert_str_eq(kept, "new\n", "--force did not replace it");
	free(kept);

	snprintf(dest, sizeof dest, "%s/pw", d.dir);
	snprintf(args, sizeof args, "cp %s:pw '%s'", s.fp, dest);
	cr_assert_eq(cli(out, sizeof out, args), 125, "%s", out);
	cr_assert_not_null(strstr(out, "ymbolic link"), "the refusal does not name the link: %s", out);
	cr_assert_not(exists(dest), "a symlink's target was copied");

	snprintf(dest, sizeof dest, "%s/big.bin", d.dir);
	snprintf(args, sizeof args, "cp %s:big.bin '%s'", s.fp, dest);
	cr_assert_eq(cli(out, sizeof out, args), 125, "%s", out);
	cr_assert_not_null(strstr(out, "is 5242880 bytes; cp copies at most 4194304"), "%s", out);
	cr_assert_not(exists(dest), "a file over the cap was written (cut)");
	/* Nothing half-written is left beside it either. */
	char ls[4096];
	harness_sh_into(ls, sizeof ls, "ls -A '%s' | grep -c part || true", d.dir);
	cr_assert_str_eq(ls, "0\n", "a temporary file was left: %s", ls);
}

Test(files_cli, an_unknown_session_is_refused_in_words, .init = start, .fini = stop)
{
	char out[4096];
	cr_assert_eq(cli(out, sizeof out, "files 00000000dead"), 125, "%s", out);
	cr_assert_not_null(strstr(out, "the daemon holds no session \"00000000dead\""), "%s", out);
	cr_assert_eq(cli(out, sizeof out, "cp nocolon /tmp/x"), 2, "%s", out);
}
