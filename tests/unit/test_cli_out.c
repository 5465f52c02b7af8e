/* The CLI's terminal escaping (src/cli/cli_out.c), alone: which bytes a
 * terminal acts on are shown, and which text passes untouched. */
#include "../../src/cli/cli_out.h" /* not the directory: its record.h is the CLI's */

#include <criterion/criterion.h>
#include <string.h>

static const char *esc(const char *in, size_t n, enum cli_out_kind kind)
{
	static char out[1024];
	size_t need = cli_escape(out, sizeof out, in, n, kind);
	cr_assert_lt(need, sizeof out);
	cr_assert_eq(strlen(out), need);
	return out;
}

Test(cli_out, c0_del_and_c1_are_shown_and_text_passes)
{
	cr_assert_str_eq(esc("a\x1b[2Jb\x07", 7, CLI_OUT_TEXT), "a\\x1b[2Jb\\x07");
	cr_assert_str_eq(esc("x\x7fy", 3, CLI_OUT_TEXT), "x\\x7fy");
	/* C1 as UTF-8 (U+009B, CSI) and as a raw byte (8-bit terminals). */
	cr_assert_str_eq(esc("\xc2\x9b" "31m", 5, CLI_OUT_TEXT), "\\u009b31m");
	cr_assert_str_eq(esc("\x9b" "31m", 4, CLI_OUT_TEXT), "\\x9b31m");
	cr_assert_str_eq(esc("\xc2\x85", 2, CLI_OUT_TEXT), "\\u0085");
	/* Valid UTF-8 passes, continuation bytes in 0x80..0x9f included. */
	cr_assert_str_eq(esc("é € ▒ 😀", strlen("é € ▒ 😀"), CLI_OUT_TEXT), "é € ▒ 😀");
	/* Not UTF-8: a stray byte, an overlong form, a surrogate, a cut tail. */
	cr_assert_str_eq(esc("\xe9t\xc0\xaf\xed\xa0\x80\xe2\x96", 9, CLI_OUT_TEXT),
			 "\\xe9t\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x96");
	/* NUL is a byte like the others. */
	cr_assert_str_eq(esc("a\0b", 3, CLI_OUT_TEXT), "a\\x00b");
}

Test(cli_out, text_keeps_its_layout_a_field_shows_it)
{
	cr_assert_str_eq(esc("a\tb\nc\r", 6, CLI_OUT_TEXT), "a\tb\nc\\x0d");
	cr_assert_str_eq(esc("a\tb\nc", 5, CLI_OUT_FIELD), "a\\x09b\\x0ac");
}

Test(cli_out, a_short_buffer_holds_whole_escapes_and_the_length_needed)
{
	char out[6];
	size_t need = cli_escape(out, sizeof out, "ab\x1b" "c", 4, CLI_OUT_TEXT);
	cr_assert_eq(need, 7);
	cr_assert_str_eq(out, "ab", "an escape was cut: %s", out);
}
