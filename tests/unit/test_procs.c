/* The procs part's pieces alone: the engine's judgement of a PROCS frame
 * (chan_check.c), ListProcesses' codec, a file saved atomically without
 * overwriting (bh_save_file), and the console's escaping of a sandbox's
 * bytes (ui/ui_text.c). */
#include "base.h"
#include "chan_check.h"
#include "codec.h"
#include "ui_text.h"
#include "wire_operator.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- PROCS against a PS that asked for max entries ---- */

static void entry(struct buf *b, uint8_t state, const void *cmd, uint32_t len)
{
	proto_put_u32(b, 7);
	proto_put_u32(b, 1);
	proto_put_u32(b, 1000);
	buf_append(b, &state, 1);
	proto_put_u64(b, 10);
	proto_put_u64(b, 4096);
	proto_put_u64(b, 99);
	proto_put_str(b, cmd, len);
}

static const char *judge(const struct buf *b, uint32_t max)
{
	static char why[256];
	struct chan_ask ask = {.request = BH_CHAN_PS, .max_entries = max};
	return chan_check_reply(&ask, BH_CHAN_PROCS, b->data, b->len, why, sizeof why);
}

Test(procs, a_sound_process_list_passes_and_each_broken_rule_is_named)
{
	struct buf b = {0};
	proto_put_u32(&b, 2 | 0x80000000u);
	entry(&b, 'S', "sleep 30", 8);
	entry(&b, 'R', "", 0);
	cr_assert_null(judge(&b, 1024), "%s", judge(&b, 1024));
	cr_assert_not_null(strstr(judge(&b, 1), "PROCS of 2 processes; at most 1 were asked for"));
	buf_free(&b);

	proto_put_u32(&b, 1);
	entry(&b, 'S', "a\0b", 3);
	cr_assert_not_null(strstr(judge(&b, 1024), "has a NUL in its command"));
	buf_free(&b);

	char *cmd = calloc(1, BH_CHAN_COMMAND_MAX + 1);
	memset(cmd, 'c', BH_CHAN_COMMAND_MAX + 1);
	proto_put_u32(&b, 1);
	entry(&b, 'S', cmd, BH_CHAN_COMMAND_MAX + 1);
	cr_assert_not_null(strstr(judge(&b, 1024), "command of 1025 bytes; at most 1024"));
	free(cmd);
	buf_free(&b);

	proto_put_u32(&b, 1);
	entry(&b, 'q', "x", 1);
	cr_assert_not_null(strstr(judge(&b, 1024), "has state 0x71"));
	buf_free(&b);

	proto_put_u32(&b, 1);
	entry(&b, 'S', "x", 1);
	proto_put_u32(&b, 0);
	cr_assert_not_null(strstr(judge(&b, 1024), "bytes after its end"));
	buf_free(&b);

	/* A count the frame cannot hold is refused before anything is read. */
	proto_put_u32(&b, 1000);
	cr_assert_not_null(strstr(judge(&b, 1024), "PROCS of 1000 processes in 0 bytes"));
	buf_free(&b);
}

Test(procs, a_ps_answered_with_a_listing_is_refused)
{
	struct buf b = {0};
	proto_put_u32(&b, 0);
	char why[256];
	struct chan_ask ask = {.request = BH_CHAN_PS, .max_entries = 10};
	cr_assert_not_null(chan_check_reply(&ask, BH_CHAN_LISTING, b.data, b.len, why, sizeof why));
	cr_assert_not_null(strstr(why, "answered a PS with a LISTING"), "%s", why);
	buf_free(&b);
}

/* ---- ListProcesses' codec ---- */

Test(procs, a_command_that_is_not_utf8_crosses_the_wire_as_replacement_characters)
{
	struct bh_process p = {.pid = 3, .ppid = 1, .uid = 1000, .state = 'S', .cpu_us = 5,
			       .rss_bytes = 8192, .age_us = 7, .command = "ok \xff\xc3(x \xc3\xa9"};
	struct wire_operator_processes in = {.procs = &p, .n = 1, .more = true}, out;
	char *json = wire_operator_encode_processes(&in);
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_processes(json, strlen(json), &out, &st), 0, "%s: %s",
		     st.msg, json);
	cr_assert_eq(out.n, 1);
	cr_assert(out.more);
	cr_assert_eq(out.procs[0].pid, 3);
	cr_assert_eq(out.procs[0].state, 'S');
	cr_assert_eq(out.procs[0].rss_bytes, 8192);
	cr_assert_str_eq(out.procs[0].command, "ok \xef\xbf\xbd\xef\xbf\xbd(x \xc3\xa9");
	wire_operator_processes_free(&out);
	free(json);
	const char *bad = "{\"processes\":[{\"pid\":\"x\"}]}";
	cr_assert_lt(wire_operator_decode_processes(bad, strlen(bad), &out, &st), 0);
	cr_assert_not_null(strstr(st.msg, "ListProcesses: "), "%s", st.msg);
}

/* ---- bh_save_file ---- */

static char dir[64];

static void in_tmp(void)
{
	snprintf(dir, sizeof dir, "/tmp/bh-save-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int entries(void)
{
	char cmd[128], out[32];
	snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(fgets(out, sizeof out, p));
	pclose(p);
	return atoi(out);
}

Test(procs, a_saved_file_never_replaces_a_name_or_follows_a_link_without_overwrite,
     .init = in_tmp, .fini = rm_tmp)
{
	char dest[128], victim[128];
	snprintf(dest, sizeof dest, "%s/out.bin", dir);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	cr_assert_eq(bh_save_file(dest, "one", 3, false), 0);
	cr_assert_str_eq(slurp(dest), "one");
	cr_assert_eq(bh_save_file(dest, "two", 3, false), -EEXIST);
	cr_assert_str_eq(slurp(dest), "one");
	cr_assert_eq(bh_save_file(dest, "two", 3, true), 0);
	cr_assert_str_eq(slurp(dest), "two");
	/* A link planted at the name: neither written through nor replaced. */
	FILE *f = fopen(victim, "w");
	fputs("keep", f);
	fclose(f);
	char link[128];
	snprintf(link, sizeof link, "%s/planted", dir);
	cr_assert_eq(symlink(victim, link), 0);
	cr_assert_eq(bh_save_file(link, "evil", 4, false), -EEXIST);
	cr_assert_str_eq(slurp(victim), "keep");
	/* No temporary file is left behind by any of it. */
	cr_assert_eq(entries(), 3);
}

/* ---- the console's escaping ---- */

Test(procs, a_sandboxs_bytes_are_shown_not_obeyed)
{
	char out[256];
	ui_text_safe(out, sizeof out, "\x1b[2Jx\x07", 6, false);
	cr_assert_str_eq(out, "\\x1b[2Jx\\x07");
	ui_text_safe(out, sizeof out, "a\xff" "b\xc2\x9b" "c\xc3\xa9", 8, false);
	cr_assert_str_eq(out, "a\\xffb\\u009bc\xc3\xa9");
	ui_text_safe(out, sizeof out, "l1\nl2", 5, true);
	cr_assert_str_eq(out, "l1\nl2");
	ui_text_safe(out, sizeof out, "l1\nl2", 5, false);
	cr_assert_str_eq(out, "l1\\x0al2");
	/* Cut at a whole escape, never inside one. */
	ui_text_safe(out, 6, "ab\x1b", 3, false);
	cr_assert_str_eq(out, "ab");
	cr_assert(ui_text_is_text("hello\n\x1b[31mred\n", 15));
	cr_assert_not(ui_text_is_text("\x89PNG\r\n\x1a\n\0\0", 10));
}
