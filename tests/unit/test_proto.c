/* The engine <-> init contract (src/proto): the limits both sides hold to,
 * the one codec and the one path rule. */
#include "chan_check.h"
#include "codec.h"
#include "engine_priv.h"
#include "path_rule.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

/* A DONE whose two streams are `len` bytes each, as the init builds it. */
static void done_frame(struct buf *f, uint32_t len)
{
	uint8_t *bytes = calloc(1, len ? len : 1);
	cr_assert_not_null(bytes);
	cr_assert_eq(proto_put_header(f, BH_CHAN_DONE, BH_CHAN_DONE_FIXED + 2ull * len), 0);
	proto_put_u64(f, 7);                  /* call id */
	proto_put_u32(f, 0);                  /* exit code */
	proto_put_u32(f, 0);                  /* signal */
	proto_put_u32(f, 0);                  /* flags */
	proto_put_u64(f, 1);                  /* duration */
	proto_put_u64(f, len);                /* stdout total */
	proto_put_u64(f, len);                /* stderr total */
	proto_put_str(f, bytes, len);
	proto_put_str(f, bytes, len);
	proto_put_u64(f, 0);                  /* disk used */
	free(bytes);
}

Test(proto, the_output_cap_is_what_one_done_frame_holds)
{
	struct buf f = {0};
	done_frame(&f, BH_MAX_OUTPUT_CAP);
	uint32_t len;
	cr_assert_eq(proto_frame_length(f.data, &len), 0, "both streams at the cap fit one frame");
	cr_assert_eq(f.len, BH_CHAN_HEADER - 1u + len);
	struct chan_ask ask = {.request = BH_CHAN_EXEC, .output_cap = BH_MAX_OUTPUT_CAP};
	char why[256];
	cr_assert_null(chan_check_reply(&ask, BH_CHAN_DONE, f.data + BH_CHAN_HEADER + 8,
					f.len - BH_CHAN_HEADER - 8, why, sizeof why),
		       "%s", why);
	buf_free(&f);
	/* One byte more in each stream and no frame can carry them. */
	cr_assert_eq(proto_put_header(&f, BH_CHAN_DONE,
				      BH_CHAN_DONE_FIXED + 2ull * (BH_MAX_OUTPUT_CAP + 1u)),
		     -EMSGSIZE);
	cr_assert_eq(f.len, 0);
	cr_assert_leq(BH_MAX_CELL_OUTPUT_CAP, BH_MAX_OUTPUT_CAP);
}

static struct bh_exec_request exec_asking(uint32_t output_cap)
{
	static const char *const argv[] = {"/bin/true", NULL};
	return (struct bh_exec_request){.argv = argv, .output_cap = output_cap};
}

Test(proto, the_engine_refuses_an_output_cap_the_init_cannot_honour)
{
	bh_error *err = NULL;
	struct bh_exec_request req = exec_asking(BH_MAX_OUTPUT_CAP);
	cr_assert_eq(exec_request_check(&req, &err), 0, "%s", err ? err->msg : "");
	/* Above it the init would keep less than asked without a word; 16 MiB
	 * was the engine's limit before the two sides shared one. */
	uint32_t over[] = {BH_MAX_OUTPUT_CAP + 1u, 16u * 1024u * 1024u};
	for (size_t i = 0; i < 2; i++) {
		req = exec_asking(over[i]);
		cr_assert_eq(exec_request_check(&req, &err), -1, "a cap of %u", over[i]);
		cr_assert_eq(err->code, BH_E_NOT_DISPATCHED);
		cr_assert_eq(err->refusal, BH_REFUSAL_REQUEST);
		char want[96];
		snprintf(want, sizeof want, "output cap %u is above the %u maximum", over[i],
			 BH_MAX_OUTPUT_CAP);
		cr_assert_str_eq(err->msg, want);
		bh_error_free(err);
		err = NULL;
	}
}

Test(proto, the_reader_refuses_to_read_past_the_end_and_stays_refused)
{
	struct buf b = {0};
	proto_put_u32(&b, 0xdeadbeef);
	proto_put_str(&b, "abc", 3);
	proto_put_u8(&b, 9);
	struct proto_cursor c = proto_cursor(b.data, b.len);
	uint32_t v, n;
	uint64_t big;
	uint8_t byte;
	const uint8_t *s;
	cr_assert_eq(proto_get_u32(&c, &v), 0);
	cr_assert_eq(v, 0xdeadbeef);
	cr_assert_eq(proto_get_str(&c, &s, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(memcmp(s, "abc", 3), 0);
	/* One byte left: a u64 is refused, nothing is consumed, *out is 0. */
	cr_assert_eq(proto_get_u64(&c, &big), -EPROTO);
	cr_assert_eq(big, 0);
	cr_assert(c.bad);
	cr_assert_eq(c.left, 1);
	cr_assert_eq(proto_get_u8(&c, &byte), -EPROTO, "a bad cursor stays bad");
	buf_free(&b);

	/* A string whose length runs past the frame. */
	proto_put_u32(&b, 100);
	proto_put_u32(&b, 0);
	c = proto_cursor(b.data, b.len);
	cr_assert_eq(proto_get_str(&c, &s, &n), -EPROTO);
	cr_assert_null(s);
	cr_assert_eq(c.left, 8, "nothing consumed");
	buf_free(&b);

	uint8_t hdr[4] = {0};
	uint32_t len;
	cr_assert_eq(proto_frame_length(hdr, &len), -EPROTO, "a frame has at least its type");
	hdr[3] = 0x01; /* 16 MiB + 0 ... */
	hdr[0] = 0x01; /* ... + 1 */
	cr_assert_eq(proto_frame_length(hdr, &len), -EPROTO);
}

Test(proto, one_path_rule_for_the_engine_the_init_and_the_wire)
{
	static const struct {
		const char *path;
		unsigned flags;
		enum proto_path_problem want;
	} cases[] = {
		{"a/b.txt", 0, PROTO_PATH_OK},
		{"", 0, PROTO_PATH_EMPTY},
		{"", PROTO_PATH_ALLOW_EMPTY, PROTO_PATH_OK},
		{"/etc/passwd", 0, PROTO_PATH_ABSOLUTE},
		{"a\tb", 0, PROTO_PATH_CONTROL},
		{"a\x7f", 0, PROTO_PATH_CONTROL},
		{"a//b", 0, PROTO_PATH_EMPTY_PART},
		{"dir/", 0, PROTO_PATH_EMPTY_PART},
		{"../up", 0, PROTO_PATH_DOT_PART},
		{"a/./b", 0, PROTO_PATH_DOT_PART},
		{"..a/b..", 0, PROTO_PATH_OK},
		{"a\\b", 0, PROTO_PATH_OK},
		{"a\\b", PROTO_PATH_STRICT, PROTO_PATH_BACKSLASH},
		{"a\xc2\x85", 0, PROTO_PATH_OK},
		{"a\xc2\x85", PROTO_PATH_STRICT, PROTO_PATH_CONTROL},
		/* Characters are judged before components. */
		{"../a\x01", 0, PROTO_PATH_CONTROL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		cr_assert_eq(proto_path_check(cases[i].path, strlen(cases[i].path), cases[i].flags),
			     cases[i].want, "\"%s\"", cases[i].path);
	cr_assert_eq(proto_path_check("a\0b", 3, 0), PROTO_PATH_CONTROL, "a NUL inside");

	char long_path[BH_MAX_PATH_BYTES + 2];
	memset(long_path, 'a', sizeof long_path);
	cr_assert_eq(proto_path_check(long_path, BH_MAX_PATH_BYTES, 0), PROTO_PATH_OK);
	enum proto_path_problem too_long = proto_path_check(long_path, BH_MAX_PATH_BYTES + 1, 0);
	cr_assert_eq(too_long, PROTO_PATH_TOO_LONG);
	cr_assert_eq(proto_path_errno(too_long), ENAMETOOLONG);
	cr_assert_eq(proto_path_errno(PROTO_PATH_DOT_PART), EINVAL);
	cr_assert_eq(proto_path_errno(PROTO_PATH_OK), 0);
	cr_assert_str_eq(proto_path_problem_text(PROTO_PATH_DOT_PART), "has a . or .. part");
	cr_assert_str_eq(proto_path_problem_text(too_long), "is longer than 4096 bytes");
}
