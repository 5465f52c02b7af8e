/* report: an evidence folder's MANIFEST read back (capture_manifest.c):
 * only lines exactly as bulkhead writes them are files; a forged or
 * damaged one is a problem said in words, never a file checked. */
#include "bulkhead.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define WHEN "2026-12-01T22:28:01.123Z"
#define HEAD "bulkhead capture manifest 1\n"

static struct bh_capture_manifest parsed(const char *text)
{
	struct bh_capture_manifest m;
	bh_error *err = NULL;
	cr_assert_eq(bh_capture_manifest_parse(text, strlen(text), &m, &err), 0, "%s",
		     err ? err->msg : "");
	return m;
}

Test(capture_manifest, the_lines_bulkhead_writes_are_its_files_and_its_target)
{
	struct bh_capture_manifest m = parsed(
		HEAD "sandbox: bh-0000000000c0ffee\nsession: -\nruntime: crun\n"
		     "file " SHA_A " 1234 " WHEN " whole config.json\n  about: the bundle\n"
		     "file " SHA_A " 0 " WHEN " cut processes-host.txt\n");
	cr_assert_null(m.problems, "%s", m.problems);
	cr_assert_eq(m.n_files, 2);
	cr_assert_str_eq(m.files[0].name, "config.json");
	cr_assert_eq(m.files[0].size, 1234);
	cr_assert(!m.files[0].cut && m.files[1].cut);
	cr_assert_str_eq(m.sandbox, "bh-0000000000c0ffee");
	cr_assert_str_eq(m.session, "", "\"-\" names no session");
	cr_assert_str_eq(m.runtime, "crun");
	bh_capture_manifest_free(&m);
}

Test(capture_manifest, a_forged_file_line_is_a_problem_not_a_file)
{
	struct bh_capture_manifest m = parsed(
		HEAD "file " SHA_A " -1 " WHEN " whole wraps\n"               /* a sign */
		     "file " SHA_A " 01 " WHEN " whole zero\n"                /* not as printed */
		     "file " SHA_A " 1 " WHEN " whole trailing extra\n"       /* a seventh field */
		     "file " SHA_A " 1 " WHEN " whole ../etc\n"               /* a path */
		     "file " SHA_A " 1 " WHEN " whole MANIFEST\n"             /* itself */
		     "file " SHA_A " 1 yesterday whole late\n"                /* not a time */
		     "file " SHA_A "  1 " WHEN " whole spaced\n"              /* two spaces */
		     "file " SHA_A " 18446744073709551616 " WHEN " whole big\n" /* past 64 bits */
		     "file " SHA_A " 1 " WHEN " whole twice\n"
		     "file " SHA_A " 1 " WHEN " whole twice\n");
	cr_assert_eq(m.n_files, 1, "only \"twice\" is a file line bulkhead writes");
	cr_assert_str_eq(m.files[0].name, "twice");
	for (int line = 2; line <= 9; line++) {
		char want[64];
		snprintf(want, sizeof want, "MANIFEST line %d is not a file line bulkhead writes", line);
		cr_assert_not_null(strstr(m.problems, want), "%s in:\n%s", want, m.problems);
	}
	cr_assert_not_null(strstr(m.problems, "twice: listed twice\n"), "%s", m.problems);
	bh_capture_manifest_free(&m);
}

Test(capture_manifest, more_files_than_a_capture_holds_stop_being_files)
{
	char text[32768];
	size_t at = (size_t)snprintf(text, sizeof text, HEAD);
	for (unsigned i = 0; i < BH_CAPTURE_FILES_MAX + 5; i++)
		at += (size_t)snprintf(text + at, sizeof text - at, "file " SHA_A " 1 " WHEN " whole f%u\n", i);
	struct bh_capture_manifest m = parsed(text);
	cr_assert_eq(m.n_files, BH_CAPTURE_FILES_MAX);
	cr_assert_not_null(strstr(m.problems, "more than a capture holds"), "%s", m.problems);
	bh_capture_manifest_free(&m);
}

Test(capture_manifest, a_text_that_is_no_manifest_fails_in_words)
{
	struct bh_capture_manifest m;
	bh_error *err = NULL;
	cr_assert_eq(bh_capture_manifest_parse("hello\n", 6, &m, &err), -1);
	cr_assert_not_null(strstr(err->msg, "does not start \"bulkhead capture manifest 1\""), "%s",
			   err->msg);
	bh_error_free(err);
	err = NULL;
	static const char nul[] = HEAD "file \0x";
	cr_assert_eq(bh_capture_manifest_parse(nul, sizeof nul - 1, &m, &err), -1);
	cr_assert_not_null(strstr(err->msg, "NUL byte"), "%s", err->msg);
	bh_error_free(err);
	/* A session that is no fingerprint names none. */
	m = parsed(HEAD "session: ../../etc\n");
	cr_assert_str_eq(m.session, "");
	bh_capture_manifest_free(&m);
}
