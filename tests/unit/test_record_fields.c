/* bulkhead's run-record encoder against an independent, deliberately naive
 * re-implementation of plimsoll's record encoding (its specification's
 * Appendix A, "Appendix A" in the messages below), written here from the
 * text alone:
 *
 *   every value = 8-byte big-endian length, then the bytes;
 *   digest = lowercase hex SHA-256 of (domain value, then name value +
 *   content value for every field, in the listed order);
 *   integers decimal ASCII (leading '-'), booleans true/false, strings UTF-8,
 *   output and file contents raw bytes;
 *   a repeated group = a field named after the group whose content is the
 *   decimal count, followed by its members' fields.
 *
 * The expected field lists in the case tests are spelled out literally
 * (names, numbers as text) so that nothing is derived from record.c. The
 * struct-driven naive encoders further down serve the "every field counts"
 * tests, where the expected list has to follow a mutated struct. */
#include "record.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

/* ---- the naive encoder ------------------------------------------------- */

struct stream {
	uint8_t *b;
	size_t n, cap;
};

static void put_raw(struct stream *s, const void *p, size_t n)
{
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->n + n)
			cap *= 2;
		s->b = realloc(s->b, cap);
		cr_assert_not_null(s->b);
		s->cap = cap;
	}
	if (n)
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

/* A value: 8-byte big-endian length, then the bytes. */
static void put_value(struct stream *s, const void *p, size_t n)
{
	uint8_t len[8];
	uint64_t v = n;
	for (int i = 7; i >= 0; i--) {
		len[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
	put_raw(s, len, 8);
	put_raw(s, p, n);
}

static void hex_of(const uint8_t md[32], char out[65])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[64] = '\0';
}

static void sha256_hex_of(const void *p, size_t n, char out[65])
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	SHA256(p, n, md);
	hex_of(md, out);
}

/* One field as the appendix lists it: a name and its content bytes. */
struct fld {
	const char *name;
	const void *p;
	size_t n;
};

#define S(name, str) ((struct fld){(name), (str), strlen(str)})
#define B(name, ptr, len) ((struct fld){(name), (ptr), (len)})
#define NF(arr) (sizeof(arr) / sizeof((arr)[0]))

static void naive_stream(struct stream *s, const char *domain, const struct fld *f, size_t nf)
{
	put_value(s, domain, strlen(domain));
	for (size_t i = 0; i < nf; i++) {
		put_value(s, f[i].name, strlen(f[i].name));
		put_value(s, f[i].p, f[i].n);
	}
}

static void naive_digest(const char *domain, const struct fld *f, size_t nf, char out[65])
{
	struct stream s = {0};
	naive_stream(&s, domain, f, nf);
	sha256_hex_of(s.b, s.n, out);
	free(s.b);
}

static void assert_lower_hex64(const char *h)
{
	cr_assert_eq(strlen(h), 64, "a digest is 64 characters, got %zu", strlen(h));
	for (int i = 0; i < 64; i++)
		cr_assert(strchr("0123456789abcdef", h[i]) && h[i],
			  "a digest is lowercase hex; char %d is %#x", i, (unsigned char)h[i]);
}

/* For every pair of fields that differ, the naive stream with the two
 * swapped must not reproduce bulkhead's digest: bulkhead's order is the
 * listed order and the order counts. */
static void assert_every_swap_differs(const char *domain, const struct fld *f, size_t nf,
				      const char *bulkhead, const char *what)
{
	struct fld *g = malloc(nf * sizeof *g);
	cr_assert_not_null(g);
	size_t swaps = 0;
	for (size_t i = 0; i < nf; i++)
		for (size_t j = i + 1; j < nf; j++) {
			bool same = !strcmp(f[i].name, f[j].name) && f[i].n == f[j].n &&
				    (!f[i].n || !memcmp(f[i].p, f[j].p, f[i].n));
			if (same)
				continue;
			memcpy(g, f, nf * sizeof *g);
			g[i] = f[j];
			g[j] = f[i];
			char d[65];
			naive_digest(domain, g, nf, d);
			cr_assert_str_neq(d, bulkhead,
					  "%s: swapping fields %zu (%s) and %zu (%s) still gives bulkhead's digest",
					  what, i, f[i].name, j, f[j].name);
			swaps++;
		}
	cr_assert_gt(swaps, 0);
	free(g);
}

/* ---- the naive encoder checked on its own ------------------------------ */

/* The golden stream written out byte by byte, no encoder at all. */
static const char golden_stream[] =
	"\0\0\0\0\0\0\0\x17" "plimsoll.run-request.v1"
	"\0\0\0\0\0\0\0\x08" "protocol"
	"\0\0\0\0\0\0\0\x01" "1"
	"\0\0\0\0\0\0\0\x11" "minimum_isolation"
	"\0\0\0\0\0\0\0\x09" "container"
	"\0\0\0\0\0\0\0\x0a" "timeout_ms"
	"\0\0\0\0\0\0\0\x04" "5000"
	"\0\0\0\0\0\0\0\x04" "kind"
	"\0\0\0\0\0\0\0\x0a" "javascript"
	"\0\0\0\0\0\0\0\x04" "code"
	"\0\0\0\0\0\0\0\x10" "console.log(1+1)"
	"\0\0\0\0\0\0\0\x0d" "grant_profile"
	"\0\0\0\0\0\0\0\x00";

#define GOLDEN "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc"

static const struct fld golden_fields[] = {
	{"protocol", "1", 1},
	{"minimum_isolation", "container", 9},
	{"timeout_ms", "5000", 4},
	{"kind", "javascript", 10},
	{"code", "console.log(1+1)", 16},
	{"grant_profile", "", 0},
};

Test(record_fields, the_hand_written_golden_stream_hashes_to_the_golden_digest)
{
	char d[65];
	sha256_hex_of(golden_stream, sizeof golden_stream - 1, d);
	cr_assert_str_eq(d, GOLDEN, "Appendix A's golden vector, bytes spelled out by hand");
}

Test(record_fields, the_naive_encoder_builds_the_hand_written_golden_stream_byte_for_byte)
{
	struct stream s = {0};
	naive_stream(&s, "plimsoll.run-request.v1", golden_fields, NF(golden_fields));
	cr_assert_eq(s.n, sizeof golden_stream - 1);
	cr_assert_arr_eq(s.b, golden_stream, s.n);
	free(s.b);
}

Test(record_fields, the_naive_encoder_writes_lengths_above_one_byte_big_endian)
{
	static uint8_t big[70000];
	struct stream s = {0};
	put_value(&s, big, 300);
	put_value(&s, big, sizeof big);
	const uint8_t want300[8] = {0, 0, 0, 0, 0, 0, 0x01, 0x2c};
	const uint8_t want70000[8] = {0, 0, 0, 0, 0, 0x01, 0x11, 0x70};
	cr_assert_arr_eq(s.b, want300, 8);
	cr_assert_arr_eq(s.b + 8 + 300, want70000, 8);
	free(s.b);
}

/* ---- requests ---------------------------------------------------------- */

Test(record_fields, the_golden_v1_javascript_request_matches_the_naive_stream)
{
	const char *code = "console.log(1+1)";
	struct bh_request_fields r = {
		.protocol = 1,
		.minimum_isolation = "container",
		.timeout_ms = 5000,
		.kind = "javascript",
		.code = (const uint8_t *)code,
		.code_len = strlen(code),
		.grant_profile = "",
	};
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v1", golden_fields, NF(golden_fields), want);
	assert_lower_hex64(got);
	cr_assert_str_eq(want, GOLDEN);
	cr_assert_str_eq(got, want, "request v1 javascript: bulkhead %s, Appendix A %s", got, want);
}

/* Two files, the second longer than 255 bytes and binary. */
static uint8_t data_bin[300];
static const char cell_code[] = "import data\nprint(open('data.bin','rb').read()[:4])\n";
static const char py_file[] = "x = 1\n";

static void fill_data_bin(void)
{
	for (size_t i = 0; i < sizeof data_bin; i++)
		data_bin[i] = (uint8_t)(i * 7 + 0xf0);
	data_bin[0] = 0;
	data_bin[1] = 0xff;
}

static struct bh_file cell_files[2];

static struct bh_request_fields cell_request_two_files(void)
{
	fill_data_bin();
	cell_files[0] = (struct bh_file){"data.py", (const uint8_t *)py_file, strlen(py_file)};
	cell_files[1] = (struct bh_file){"sub/data.bin", data_bin, sizeof data_bin};
	return (struct bh_request_fields){
		.protocol = 2,
		.minimum_isolation = "gvisor",
		.timeout_ms = 12000,
		.software_mode = "",
		.kind = "cell",
		.language = "python",
		.code = (const uint8_t *)cell_code,
		.code_len = strlen(cell_code),
		.files = cell_files,
		.n_files = 2,
	};
}

static const struct fld *cell_two_files_expected(size_t *nf)
{
	static struct fld f[13];
	size_t i = 0;
	f[i++] = S("protocol", "2");
	f[i++] = S("minimum_isolation", "gvisor");
	f[i++] = S("timeout_ms", "12000");
	f[i++] = S("software_mode", "");
	f[i++] = S("software_identities", "0");
	f[i++] = S("kind", "cell");
	f[i++] = S("language", "python");
	f[i++] = B("code", cell_code, strlen(cell_code));
	f[i++] = S("files", "2");
	f[i++] = S("file_path", "data.py");
	f[i++] = B("file_content", py_file, strlen(py_file));
	f[i++] = S("file_path", "sub/data.bin");
	f[i++] = B("file_content", data_bin, sizeof data_bin);
	*nf = i;
	return f;
}

Test(record_fields, a_v2_cell_request_with_two_files_a_floor_and_a_timeout_matches)
{
	struct bh_request_fields r = cell_request_two_files();
	size_t nf;
	const struct fld *f = cell_two_files_expected(&nf);
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", f, nf, want);
	assert_lower_hex64(got);
	cr_assert_str_eq(got, want, "request v2 cell with files: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, a_protocol_3_request_uses_the_v2_domain)
{
	struct bh_request_fields r = cell_request_two_files();
	r.protocol = 3;
	size_t nf;
	const struct fld *f = cell_two_files_expected(&nf);
	struct fld g[13];
	memcpy(g, f, nf * sizeof *g);
	g[0] = S("protocol", "3");
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", g, nf, want);
	cr_assert_str_eq(got, want, "protocol 3 request: bulkhead %s, Appendix A (v2 domain) %s", got, want);
}

Test(record_fields, a_v2_cell_request_without_files_and_timeout_zero_matches)
{
	const char *code = "1+1";
	struct bh_request_fields r = {
		.protocol = 2,
		.minimum_isolation = "",
		.timeout_ms = 0,
		.software_mode = "",
		.kind = "cell",
		.language = "python",
		.code = (const uint8_t *)code,
		.code_len = 3,
	};
	const struct fld f[] = {
		S("protocol", "2"),
		S("minimum_isolation", ""),
		S("timeout_ms", "0"),
		S("software_mode", ""),
		S("software_identities", "0"),
		S("kind", "cell"),
		S("language", "python"),
		S("code", "1+1"),
		S("files", "0"),
	};
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", f, NF(f), want);
	cr_assert_str_eq(got, want, "request v2 cell, no files, timeout 0: bulkhead %s, Appendix A %s",
			 got, want);
}

static const char *const two_ids[] = {
	"oci-manifest:linux/amd64@sha256:1111111111111111111111111111111111111111111111111111111111111111",
	"oci-manifest:linux/arm64@sha256:2222222222222222222222222222222222222222222222222222222222222222",
};

static struct bh_request_fields js_request_with_rule(void)
{
	static const char code[] = "console.log('rule')";
	return (struct bh_request_fields){
		.protocol = 2,
		.minimum_isolation = "container",
		.timeout_ms = 30000,
		.software_mode = "approved",
		.software_identities = two_ids,
		.n_identities = 2,
		.kind = "javascript",
		.code = (const uint8_t *)code,
		.code_len = strlen(code),
		.grant_profile = "npm-readonly",
	};
}

static const struct fld js_rule_expected[] = {
	{"protocol", "2", 1},
	{"minimum_isolation", "container", 9},
	{"timeout_ms", "30000", 5},
	{"software_mode", "approved", 8},
	{"software_identities", "2", 1},
	{"software_identity",
	 "oci-manifest:linux/amd64@sha256:1111111111111111111111111111111111111111111111111111111111111111",
	 32 + 64},
	{"software_identity",
	 "oci-manifest:linux/arm64@sha256:2222222222222222222222222222222222222222222222222222222222222222",
	 32 + 64},
	{"kind", "javascript", 10},
	{"code", "console.log('rule')", 19},
	{"grant_profile", "npm-readonly", 12},
};

Test(record_fields, a_software_rule_with_two_identities_is_mode_count_then_each_identity)
{
	struct bh_request_fields r = js_request_with_rule();
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", js_rule_expected, NF(js_rule_expected), want);
	cr_assert_str_eq(got, want, "request v2 with software rule: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, a_protocol_1_request_carries_no_software_fields)
{
	struct bh_request_fields r = js_request_with_rule();
	r.protocol = 1;
	const struct fld f[] = {
		S("protocol", "1"),
		S("minimum_isolation", "container"),
		S("timeout_ms", "30000"),
		S("kind", "javascript"),
		S("code", "console.log('rule')"),
		S("grant_profile", "npm-readonly"),
	};
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v1", f, NF(f), want);
	cr_assert_str_eq(got, want, "request v1 must omit software_*: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, a_request_with_no_payload_has_an_empty_kind_and_nothing_after)
{
	struct bh_request_fields r = {
		.protocol = 2,
		.minimum_isolation = "container",
		.timeout_ms = 1,
		.software_mode = "",
		.kind = "",
	};
	const struct fld f[] = {
		S("protocol", "2"),         S("minimum_isolation", "container"),
		S("timeout_ms", "1"),       S("software_mode", ""),
		S("software_identities", "0"), S("kind", ""),
	};
	char got[65], want[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", f, NF(f), want);
	cr_assert_str_eq(got, want, "request with kind none: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, negative_timeouts_are_decimal_with_a_leading_minus)
{
	static const struct {
		int64_t v;
		const char *text;
	} cases[] = {
		{-1, "-1"},
		{-5000, "-5000"},
		{INT64_MIN, "-9223372036854775808"},
		{INT64_MAX, "9223372036854775807"},
	};
	for (size_t c = 0; c < NF(cases); c++) {
		const char *code = "0";
		struct bh_request_fields r = {
			.protocol = 1,
			.minimum_isolation = "",
			.timeout_ms = cases[c].v,
			.kind = "javascript",
			.code = (const uint8_t *)code,
			.code_len = 1,
			.grant_profile = "",
		};
		const struct fld f[] = {
			S("protocol", "1"),           S("minimum_isolation", ""),
			S("timeout_ms", cases[c].text), S("kind", "javascript"),
			S("code", "0"),               S("grant_profile", ""),
		};
		char got[65], want[65];
		bh_request_digest(&r, got);
		naive_digest("plimsoll.run-request.v1", f, NF(f), want);
		cr_assert_str_eq(got, want, "timeout_ms %s: bulkhead %s, Appendix A %s", cases[c].text, got,
				 want);
	}
}

/* ---- results ----------------------------------------------------------- */

static const uint8_t bin_out[] = {'a', 0x00, 'b', 0xff, 0x00, 0xfe, '\n', 0xff};
static const uint8_t bin_err[] = {0xff, 0xff, 0x00, 'e', 'r', 'r'};

Test(record_fields, a_cell_result_with_binary_stdout_and_every_flag_set_matches)
{
	struct bh_result_fields r = {
		.kind = "cell",
		.exit_code = 3,
		.timed_out = true,
		.out = bin_out,
		.out_len = sizeof bin_out,
		.err = bin_err,
		.err_len = sizeof bin_err,
		.stdout_truncated = true,
		.stderr_truncated = true,
		.interpreter_started = true,
		.interpreter_ended = true,
	};
	const struct fld f[] = {
		S("kind", "cell"),
		S("exit_code", "3"),
		S("timed_out", "true"),
		B("stdout", bin_out, sizeof bin_out),
		B("stderr", bin_err, sizeof bin_err),
		S("stdout_truncated", "true"),
		S("stderr_truncated", "true"),
		S("interpreter_started", "true"),
		S("interpreter_ended", "true"),
	};
	char got[65], want[65];
	bh_result_digest(&r, got);
	naive_digest("plimsoll.run-result.v1", f, NF(f), want);
	assert_lower_hex64(got);
	cr_assert_str_eq(got, want, "cell result, binary output, all flags: bulkhead %s, Appendix A %s",
			 got, want);
}

Test(record_fields, a_cell_result_with_every_flag_clear_says_false)
{
	struct bh_result_fields r = {.kind = "cell", .exit_code = 0, .out = (const uint8_t *)"2\n",
				     .out_len = 2};
	const struct fld f[] = {
		S("kind", "cell"),
		S("exit_code", "0"),
		S("timed_out", "false"),
		S("stdout", "2\n"),
		S("stderr", ""),
		S("stdout_truncated", "false"),
		S("stderr_truncated", "false"),
		S("interpreter_started", "false"),
		S("interpreter_ended", "false"),
	};
	char got[65], want[65];
	bh_result_digest(&r, got);
	naive_digest("plimsoll.run-result.v1", f, NF(f), want);
	cr_assert_str_eq(got, want, "cell result, flags clear: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, a_javascript_result_has_no_interpreter_fields)
{
	struct bh_result_fields r = {
		.kind = "javascript",
		.exit_code = 0,
		.timed_out = false,
		.out = (const uint8_t *)"2\n",
		.out_len = 2,
		.err = (const uint8_t *)"warn\n",
		.err_len = 5,
		.stdout_truncated = false,
		.stderr_truncated = true,
		/* set, but a javascript result must not carry them */
		.interpreter_started = true,
		.interpreter_ended = true,
	};
	const struct fld f[] = {
		S("kind", "javascript"),
		S("exit_code", "0"),
		S("timed_out", "false"),
		S("stdout", "2\n"),
		S("stderr", "warn\n"),
		S("stdout_truncated", "false"),
		S("stderr_truncated", "true"),
	};
	char got[65], want[65];
	bh_result_digest(&r, got);
	naive_digest("plimsoll.run-result.v1", f, NF(f), want);
	cr_assert_str_eq(got, want, "javascript result: bulkhead %s, Appendix A %s", got, want);
}

Test(record_fields, negative_exit_codes_are_decimal_with_a_leading_minus)
{
	static const struct {
		int v;
		const char *text;
	} cases[] = {
		{-1, "-1"},
		{-9, "-9"},
		{-137, "-137"},
		{INT_MIN, "-2147483648"},
		{INT_MAX, "2147483647"},
	};
	for (size_t c = 0; c < NF(cases); c++) {
		struct bh_result_fields r = {.kind = "javascript", .exit_code = cases[c].v};
		const struct fld f[] = {
			S("kind", "javascript"),
			S("exit_code", cases[c].text),
			S("timed_out", "false"),
			S("stdout", ""),
			S("stderr", ""),
			S("stdout_truncated", "false"),
			S("stderr_truncated", "false"),
		};
		char got[65], want[65];
		bh_result_digest(&r, got);
		naive_digest("plimsoll.run-result.v1", f, NF(f), want);
		cr_assert_str_eq(got, want, "exit_code %s: bulkhead %s, Appendix A %s", cases[c].text, got,
				 want);
	}
}

Test(record_fields, outputs_longer_than_65535_bytes_encode_their_full_length)
{
	size_t n = 70000;
	uint8_t *out = malloc(n);
	cr_assert_not_null(out);
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(i ^ (i >> 8));
	struct bh_result_fields r = {.kind = "javascript", .exit_code = 0, .out = out, .out_len = n,
				     .stdout_truncated = true};
	const struct fld f[] = {
		S("kind", "javascript"),
		S("exit_code", "0"),
		S("timed_out", "false"),
		B("stdout", out, n),
		S("stderr", ""),
		S("stdout_truncated", "true"),
		S("stderr_truncated", "false"),
	};
	char got[65], want[65];
	bh_result_digest(&r, got);
	naive_digest("plimsoll.run-result.v1", f, NF(f), want);
	cr_assert_str_eq(got, want, "70000-byte stdout: bulkhead %s, Appendix A %s", got, want);
	free(out);
}

/* ---- records ----------------------------------------------------------- */

#define PREV "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define SESSION_ID "0123456789abcdef0123456789abcdef"

static struct bh_record session_record(void)
{
	struct bh_record rec = {
		.version = 2,
		.provider = "bulkhead-crun",
		.isolation = "container",
		.environment = "bulkhead-sandbox:sha256:00ff",
		.policy = "",
		.software_identity = "oci-manifest:linux/amd64@sha256:"
				     "1111111111111111111111111111111111111111111111111111111111111111",
		.software_rule_id = "exact:"
				    "oci-manifest:linux/amd64@sha256:"
				    "1111111111111111111111111111111111111111111111111111111111111111",
		.started_unix_ms = 1700000000000,
		.ended_unix_ms = 1700000000042,
		.sequence = 7,
	};
	struct bh_request_fields req = cell_request_two_files();
	bh_request_digest(&req, rec.request_sha256);
	struct bh_result_fields res = {.kind = "cell", .exit_code = 0, .out = bin_out,
				       .out_len = sizeof bin_out, .interpreter_started = true};
	bh_result_digest(&res, rec.result_sha256);
	bh_fingerprint_of(SESSION_ID, rec.session);
	strcpy(rec.previous_sha256, PREV);
	return rec;
}

Test(record_fields, the_session_fingerprint_is_the_sha256_hex_of_the_id)
{
	char got[65], want[65];
	bh_fingerprint_of(SESSION_ID, got);
	sha256_hex_of(SESSION_ID, strlen(SESSION_ID), want);
	cr_assert_str_eq(got, want);
}

Test(record_fields, a_v2_session_record_matches_with_request_and_result_digests_chained)
{
	struct bh_record rec = session_record();

	/* The request and result digests, recomputed naively. */
	size_t nf;
	const struct fld *rf = cell_two_files_expected(&nf);
	char req[65], res[65], fp[65];
	naive_digest("plimsoll.run-request.v2", rf, nf, req);
	const struct fld resf[] = {
		S("kind", "cell"),
		S("exit_code", "0"),
		S("timed_out", "false"),
		B("stdout", bin_out, sizeof bin_out),
		S("stderr", ""),
		S("stdout_truncated", "false"),
		S("stderr_truncated", "false"),
		S("interpreter_started", "true"),
		S("interpreter_ended", "false"),
	};
	naive_digest("plimsoll.run-result.v1", resf, NF(resf), res);
	sha256_hex_of(SESSION_ID, strlen(SESSION_ID), fp);
	cr_assert_str_eq(rec.request_sha256, req);
	cr_assert_str_eq(rec.result_sha256, res);

	const struct fld f[] = {
		S("request_sha256", req),
		S("result_sha256", res),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", ""),
		S("software_identity", "oci-manifest:linux/amd64@sha256:"
				       "1111111111111111111111111111111111111111111111111111111111111111"),
		S("software_rule_id", "exact:oci-manifest:linux/amd64@sha256:"
				      "1111111111111111111111111111111111111111111111111111111111111111"),
		S("started_unix_ms", "1700000000000"),
		S("ended_unix_ms", "1700000000042"),
		S("session", fp),
		S("sequence", "7"),
		S("previous_sha256", PREV),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v2", f, NF(f), want);
	bh_record_seal(&rec);
	assert_lower_hex64(rec.record_sha256);
	cr_assert_str_eq(rec.record_sha256, want, "record v2 session: bulkhead %s, Appendix A %s",
			 rec.record_sha256, want);
	cr_assert(bh_record_verify(&rec));
}

Test(record_fields, a_v3_record_names_the_unanswered_code_after_an_empty_result_digest)
{
	struct bh_record rec = session_record();
	rec.version = 3;
	rec.result_sha256[0] = '\0';
	rec.unanswered = "deadline_exceeded";
	const struct fld f[] = {
		S("request_sha256", rec.request_sha256),
		S("result_sha256", ""),
		S("unanswered", "deadline_exceeded"),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", ""),
		S("software_identity", rec.software_identity),
		S("software_rule_id", rec.software_rule_id),
		S("started_unix_ms", "1700000000000"),
		S("ended_unix_ms", "1700000000042"),
		S("session", rec.session),
		S("sequence", "7"),
		S("previous_sha256", PREV),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v3", f, NF(f), want);
	bh_record_seal(&rec);
	cr_assert_str_eq(rec.record_sha256, want, "record v3 unanswered: bulkhead %s, Appendix A %s",
			 rec.record_sha256, want);
	cr_assert(bh_record_verify(&rec));
}

Test(record_fields, a_single_run_record_has_empty_session_fields_and_sequence_zero)
{
	struct bh_record rec = session_record();
	rec.session[0] = '\0';
	rec.previous_sha256[0] = '\0';
	rec.sequence = 0;
	rec.policy = "openshell-policy:sha256:abcd";
	rec.software_identity = "";
	rec.software_rule_id = "";
	const struct fld f[] = {
		S("request_sha256", rec.request_sha256),
		S("result_sha256", rec.result_sha256),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", "openshell-policy:sha256:abcd"),
		S("software_identity", ""),
		S("software_rule_id", ""),
		S("started_unix_ms", "1700000000000"),
		S("ended_unix_ms", "1700000000042"),
		S("session", ""),
		S("sequence", "0"),
		S("previous_sha256", ""),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v2", f, NF(f), want);
	bh_record_seal(&rec);
	cr_assert_str_eq(rec.record_sha256, want, "record v2 single run: bulkhead %s, Appendix A %s",
			 rec.record_sha256, want);
}

Test(record_fields, a_v1_record_carries_no_software_fields)
{
	struct bh_record rec = session_record();
	rec.version = 1;
	const struct fld f[] = {
		S("request_sha256", rec.request_sha256),
		S("result_sha256", rec.result_sha256),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", ""),
		S("started_unix_ms", "1700000000000"),
		S("ended_unix_ms", "1700000000042"),
		S("session", rec.session),
		S("sequence", "7"),
		S("previous_sha256", PREV),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v1", f, NF(f), want);
	bh_record_seal(&rec);
	cr_assert_str_eq(rec.record_sha256, want, "record v1: bulkhead %s, Appendix A %s",
			 rec.record_sha256, want);
}

Test(record_fields, negative_record_times_are_decimal_with_a_leading_minus)
{
	struct bh_record rec = session_record();
	rec.started_unix_ms = -1;
	rec.ended_unix_ms = INT64_MIN;
	const struct fld f[] = {
		S("request_sha256", rec.request_sha256),
		S("result_sha256", rec.result_sha256),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", ""),
		S("software_identity", rec.software_identity),
		S("software_rule_id", rec.software_rule_id),
		S("started_unix_ms", "-1"),
		S("ended_unix_ms", "-9223372036854775808"),
		S("session", rec.session),
		S("sequence", "7"),
		S("previous_sha256", PREV),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v2", f, NF(f), want);
	bh_record_seal(&rec);
	cr_assert_str_eq(rec.record_sha256, want, "record negative times: bulkhead %s, Appendix A %s",
			 rec.record_sha256, want);
}

/* ---- order: swapping any two fields breaks the match ------------------- */

Test(record_fields, swapping_any_two_request_fields_breaks_the_match)
{
	char got[65];
	struct bh_request_fields r = cell_request_two_files();
	size_t nf;
	const struct fld *f = cell_two_files_expected(&nf);
	bh_request_digest(&r, got);
	assert_every_swap_differs("plimsoll.run-request.v2", f, nf, got, "cell request");

	r = js_request_with_rule();
	bh_request_digest(&r, got);
	assert_every_swap_differs("plimsoll.run-request.v2", js_rule_expected, NF(js_rule_expected), got,
				  "javascript request with rule");
}

Test(record_fields, swapping_any_two_result_fields_breaks_the_match)
{
	struct bh_result_fields r = {.kind = "cell", .exit_code = -2, .timed_out = true, .out = bin_out,
				     .out_len = sizeof bin_out, .err = bin_err, .err_len = sizeof bin_err,
				     .stderr_truncated = true, .interpreter_started = true};
	const struct fld f[] = {
		S("kind", "cell"),
		S("exit_code", "-2"),
		S("timed_out", "true"),
		B("stdout", bin_out, sizeof bin_out),
		B("stderr", bin_err, sizeof bin_err),
		S("stdout_truncated", "false"),
		S("stderr_truncated", "true"),
		S("interpreter_started", "true"),
		S("interpreter_ended", "false"),
	};
	char got[65], want[65];
	bh_result_digest(&r, got);
	naive_digest("plimsoll.run-result.v1", f, NF(f), want);
	cr_assert_str_eq(got, want);
	assert_every_swap_differs("plimsoll.run-result.v1", f, NF(f), got, "cell result");
}

Test(record_fields, swapping_any_two_record_fields_breaks_the_match)
{
	struct bh_record rec = session_record();
	rec.version = 3;
	rec.result_sha256[0] = '\0';
	rec.unanswered = "unavailable";
	rec.policy = "openshell-policy:sha256:abcd";
	const struct fld f[] = {
		S("request_sha256", rec.request_sha256),
		S("result_sha256", ""),
		S("unanswered", "unavailable"),
		S("provider", "bulkhead-crun"),
		S("isolation", "container"),
		S("environment", "bulkhead-sandbox:sha256:00ff"),
		S("policy", "openshell-policy:sha256:abcd"),
		S("software_identity", rec.software_identity),
		S("software_rule_id", rec.software_rule_id),
		S("started_unix_ms", "1700000000000"),
		S("ended_unix_ms", "1700000000042"),
		S("session", rec.session),
		S("sequence", "7"),
		S("previous_sha256", PREV),
	};
	char want[65];
	naive_digest("plimsoll.run-record.v3", f, NF(f), want);
	bh_record_seal(&rec);
	cr_assert_str_eq(rec.record_sha256, want);
	assert_every_swap_differs("plimsoll.run-record.v3", f, NF(f), rec.record_sha256, "v3 record");
}

Test(record_fields, a_group_count_goes_before_its_members_not_after)
{
	struct bh_request_fields r = cell_request_two_files();
	size_t nf;
	const struct fld *f = cell_two_files_expected(&nf);
	/* files(2) moved from before the members to after them */
	struct fld g[13];
	memcpy(g, f, nf * sizeof *g);
	struct fld count = g[8];
	memmove(&g[8], &g[9], 4 * sizeof *g);
	g[12] = count;
	/* and the count left out altogether */
	struct fld h[12];
	memcpy(h, f, 8 * sizeof *h);
	memcpy(&h[8], &f[9], 4 * sizeof *h);
	char got[65], after[65], none[65];
	bh_request_digest(&r, got);
	naive_digest("plimsoll.run-request.v2", g, nf, after);
	naive_digest("plimsoll.run-request.v2", h, nf - 1, none);
	cr_assert_str_neq(got, after);
	cr_assert_str_neq(got, none);
}

/* ---- every field counts ------------------------------------------------ */

/* Struct-driven naive encoders, straight from Appendix A's lists, for the
 * mutation tests. Numbers go through snprintf here (the literal tests above
 * cover the text form). */

#define MAXF 64

struct flist {
	struct fld f[MAXF];
	char num[MAXF][24];
	size_t n;
};

static void add(struct flist *l, const char *name, const void *p, size_t n)
{
	cr_assert_lt(l->n, MAXF);
	l->f[l->n++] = (struct fld){name, p, n};
}

static void add_s(struct flist *l, const char *name, const char *s)
{
	add(l, name, s ? s : "", s ? strlen(s) : 0);
}

static void add_i(struct flist *l, const char *name, long long v)
{
	snprintf(l->num[l->n], sizeof l->num[0], "%lld", v);
	add_s(l, name, l->num[l->n]);
}

static void add_b(struct flist *l, const char *name, bool v)
{
	add_s(l, name, v ? "true" : "false");
}

static void naive_request(const struct bh_request_fields *r, char out[65])
{
	struct flist l = {.n = 0};
	add_i(&l, "protocol", r->protocol);
	add_s(&l, "minimum_isolation", r->minimum_isolation);
	add_i(&l, "timeout_ms", r->timeout_ms);
	if (r->protocol >= 2) {
		add_s(&l, "software_mode", r->software_mode);
		add_i(&l, "software_identities", (long long)r->n_identities);
		for (size_t i = 0; i < r->n_identities; i++)
			add_s(&l, "software_identity", r->software_identities[i]);
	}
	add_s(&l, "kind", r->kind);
	if (!strcmp(r->kind, "javascript")) {
		add(&l, "code", r->code, r->code_len);
		add_s(&l, "grant_profile", r->grant_profile);
	} else if (!strcmp(r->kind, "cell")) {
		add_s(&l, "language", r->language);
		add(&l, "code", r->code, r->code_len);
		add_i(&l, "files", (long long)r->n_files);
		for (size_t i = 0; i < r->n_files; i++) {
			add_s(&l, "file_path", r->files[i].path);
			add(&l, "file_content", r->files[i].content, r->files[i].len);
		}
	}
	naive_digest(r->protocol >= 2 ? "plimsoll.run-request.v2" : "plimsoll.run-request.v1", l.f, l.n,
		     out);
}

static void naive_result(const struct bh_result_fields *r, char out[65])
{
	struct flist l = {.n = 0};
	add_s(&l, "kind", r->kind);
	add_i(&l, "exit_code", r->exit_code);
	add_b(&l, "timed_out", r->timed_out);
	add(&l, "stdout", r->out, r->out_len);
	add(&l, "stderr", r->err, r->err_len);
	add_b(&l, "stdout_truncated", r->stdout_truncated);
	add_b(&l, "stderr_truncated", r->stderr_truncated);
	if (!strcmp(r->kind, "cell")) {
		add_b(&l, "interpreter_started", r->interpreter_started);
		add_b(&l, "interpreter_ended", r->interpreter_ended);
	}
	naive_digest("plimsoll.run-result.v1", l.f, l.n, out);
}

static void naive_record(const struct bh_record *rec, char out[65])
{
	struct flist l = {.n = 0};
	add_s(&l, "request_sha256", rec->request_sha256);
	add_s(&l, "result_sha256", rec->result_sha256);
	if (rec->version == 3)
		add_s(&l, "unanswered", rec->unanswered);
	add_s(&l, "provider", rec->provider);
	add_s(&l, "isolation", rec->isolation);
	add_s(&l, "environment", rec->environment);
	add_s(&l, "policy", rec->policy);
	if (rec->version >= 2) {
		add_s(&l, "software_identity", rec->software_identity);
		add_s(&l, "software_rule_id", rec->software_rule_id);
	}
	add_i(&l, "started_unix_ms", rec->started_unix_ms);
	add_i(&l, "ended_unix_ms", rec->ended_unix_ms);
	add_s(&l, "session", rec->session);
	snprintf(l.num[l.n], sizeof l.num[0], "%llu", (unsigned long long)rec->sequence);
	add_s(&l, "sequence", l.num[l.n]);
	add_s(&l, "previous_sha256", rec->previous_sha256);
	char domain[40];
	snprintf(domain, sizeof domain, "plimsoll.run-record.v%d", rec->version);
	naive_digest(domain, l.f, l.n, out);
}

/* Digests seen so far in one mutation test: each must be new. */
struct seen {
	char d[64][65];
	const char *what[64];
	size_t n;
};

static void see(struct seen *s, const char *d, const char *what)
{
	for (size_t i = 0; i < s->n; i++)
		cr_assert_str_neq(s->d[i], d, "changing %s gives the same digest as %s", what, s->what[i]);
	cr_assert_lt(s->n, 64);
	strcpy(s->d[s->n], d);
	s->what[s->n++] = what;
}

static void request_mutant(struct seen *s, const struct bh_request_fields *r, const char *what)
{
	char got[65], want[65];
	bh_request_digest(r, got);
	naive_request(r, want);
	cr_assert_str_eq(got, want, "after changing %s: bulkhead %s, Appendix A %s", what, got, want);
	see(s, got, what);
}

Test(record_fields, changing_any_one_request_field_changes_the_digest)
{
	struct seen s = {.n = 0};
	static const char *const other_ids[] = {
		"oci-manifest:linux/amd64@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"oci-manifest:linux/arm64@sha256:3333333333333333333333333333333333333333333333333333333333333333",
	};
	static const uint8_t other_content[] = "x = 2\n";
	static struct bh_file other_files[2];

	struct bh_request_fields base = cell_request_two_files();
	base.software_mode = "approved";
	base.software_identities = two_ids;
	base.n_identities = 2;
	request_mutant(&s, &base, "nothing (the cell base)");

	struct bh_request_fields m;
#define MUT(stmt, what)                        \
	do {                                   \
		m = base;                      \
		stmt;                          \
		request_mutant(&s, &m, what);  \
	} while (0)
	MUT(m.protocol = 3, "protocol");
	MUT(m.protocol = 1, "protocol to 1 (domain v1, no software fields)");
	MUT(m.minimum_isolation = "container", "minimum_isolation");
	MUT(m.minimum_isolation = "", "minimum_isolation to none");
	MUT(m.timeout_ms = 12001, "timeout_ms");
	MUT(m.timeout_ms = -12000, "timeout_ms sign");
	MUT(m.timeout_ms = 0, "timeout_ms to 0");
	MUT(m.software_mode = "exact", "software_mode");
	MUT(m.software_mode = "", "software_mode to empty");
	MUT(m.n_identities = 1, "software_identities count");
	MUT(m.software_identities = other_ids, "the second software_identity");
	MUT(m.language = "javascript", "language");
	MUT(m.code_len = m.code_len - 1, "code");
	MUT(m.n_files = 1, "files count");
	MUT(m.n_files = 0, "files count to 0");
	memcpy(other_files, cell_files, sizeof other_files);
	other_files[0].path = "datb.py";
	MUT(m.files = other_files, "file_path");
	memcpy(other_files, cell_files, sizeof other_files);
	other_files[0].content = other_content;
	MUT(m.files = other_files, "file_content");
	memcpy(other_files, cell_files, sizeof other_files);
	other_files[1].len = 299;
	MUT(m.files = other_files, "the second file_content's length");
	MUT(m.kind = "", "kind to none");

	/* javascript payload */
	base = js_request_with_rule();
	request_mutant(&s, &base, "nothing (the javascript base)");
	MUT(m.grant_profile = "", "grant_profile");
	MUT(m.code_len = 7, "javascript code");
	MUT(m.kind = "cell", "kind javascript to cell");
#undef MUT
}

static void result_mutant(struct seen *s, const struct bh_result_fields *r, const char *what)
{
	char got[65], want[65];
	bh_result_digest(r, got);
	naive_result(r, want);
	cr_assert_str_eq(got, want, "after changing %s: bulkhead %s, Appendix A %s", what, got, want);
	see(s, got, what);
}

Test(record_fields, changing_any_one_result_field_changes_the_digest)
{
	struct seen s = {.n = 0};
	static const uint8_t other_out[] = {'a', 0x00, 'b', 0xff, 0x00, 0xfe, '\n', 0xfe};
	struct bh_result_fields base = {
		.kind = "cell",
		.exit_code = 1,
		.timed_out = false,
		.out = bin_out,
		.out_len = sizeof bin_out,
		.err = bin_err,
		.err_len = sizeof bin_err,
	};
	result_mutant(&s, &base, "nothing (the cell base)");
	struct bh_result_fields m;
#define MUT(stmt, what)                       \
	do {                                  \
		m = base;                     \
		stmt;                         \
		result_mutant(&s, &m, what);  \
	} while (0)
	MUT(m.kind = "javascript", "kind");
	MUT(m.exit_code = -1, "exit_code sign");
	MUT(m.exit_code = 0, "exit_code");
	MUT(m.timed_out = true, "timed_out");
	MUT(m.out = other_out, "a stdout byte after a NUL");
	MUT(m.out_len = 7, "stdout length");
	MUT(m.err_len = 0, "stderr");
	MUT(m.stdout_truncated = true, "stdout_truncated");
	MUT(m.stderr_truncated = true, "stderr_truncated");
	MUT(m.interpreter_started = true, "interpreter_started");
	MUT(m.interpreter_ended = true, "interpreter_ended");
	/* stdout and stderr swapped: same bytes, different fields */
	MUT((m.out = bin_err, m.out_len = sizeof bin_err, m.err = bin_out, m.err_len = sizeof bin_out),
	    "stdout and stderr swapped");
#undef MUT
}

static void record_mutant(struct seen *s, const struct bh_record *sealed, struct bh_record *m,
			  const char *what)
{
	/* the old digest must no longer verify */
	strcpy(m->record_sha256, sealed->record_sha256);
	cr_assert_not(bh_record_verify(m), "changing %s left the record verifying", what);
	bh_record_seal(m);
	char want[65];
	naive_record(m, want);
	cr_assert_str_eq(m->record_sha256, want, "after changing %s: bulkhead %s, Appendix A %s", what,
			 m->record_sha256, want);
	cr_assert(bh_record_verify(m));
	see(s, m->record_sha256, what);
}

Test(record_fields, changing_any_one_record_field_changes_the_digest)
{
	struct seen s = {.n = 0};
	struct bh_record base = session_record();
	base.policy = "openshell-policy:sha256:abcd";
	bh_record_seal(&base);
	char want[65];
	naive_record(&base, want);
	cr_assert_str_eq(base.record_sha256, want);
	see(&s, base.record_sha256, "nothing (the v2 base)");

	struct bh_record m;
#define MUT(stmt, what)                             \
	do {                                        \
		m = base;                           \
		stmt;                               \
		record_mutant(&s, &base, &m, what); \
	} while (0)
	MUT(m.version = 1, "version to 1");
	MUT((m.version = 3, m.unanswered = "unknown"), "version to 3");
	MUT(m.request_sha256[0] ^= 1, "request_sha256");
	MUT(m.result_sha256[63] ^= 1, "result_sha256");
	MUT(m.result_sha256[0] = '\0', "result_sha256 to empty");
	MUT(m.provider = "bulkhead-runsc", "provider");
	MUT(m.isolation = "gvisor", "isolation");
	MUT(m.environment = "bulkhead-sandbox:sha256:00fe", "environment");
	MUT(m.policy = "", "policy");
	MUT(m.software_identity = "", "software_identity");
	MUT(m.software_rule_id = "", "software_rule_id");
	MUT(m.started_unix_ms--, "started_unix_ms");
	MUT(m.ended_unix_ms++, "ended_unix_ms");
	MUT(m.started_unix_ms = -m.started_unix_ms, "started_unix_ms sign");
	MUT(m.session[10] ^= 1, "session");
	MUT(m.session[0] = '\0', "session to empty");
	MUT(m.sequence = 8, "sequence");
	MUT(m.sequence = 0, "sequence to 0");
	MUT(m.previous_sha256[5] ^= 1, "previous_sha256");
	MUT(m.previous_sha256[0] = '\0', "previous_sha256 to empty");

	/* a v3 base: the unanswered code counts too */
	base.version = 3;
	base.unanswered = "deadline_exceeded";
	base.result_sha256[0] = '\0';
	bh_record_seal(&base);
	naive_record(&base, want);
	cr_assert_str_eq(base.record_sha256, want);
	see(&s, base.record_sha256, "nothing (the v3 base)");
	MUT(m.unanswered = "unavailable", "unanswered");
	MUT(m.unanswered = "", "unanswered to empty");
#undef MUT
}
