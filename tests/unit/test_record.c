#include "record.h"

#include <criterion/criterion.h>
#include <string.h>

Test(record, the_golden_vector_reproduces)
{
	/* plimsoll's record/testdata/golden.json: a v1 JavaScript request. */
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
	char out[65];
	bh_request_digest(&r, out);
	cr_assert_str_eq(out, "585a1b46c55ebacc1dfdd4336e302328c32ed3e2e7e8a8b460d252d0454be8fc");
}

static struct bh_record sample(void)
{
	struct bh_record rec = {
		.version = 2,
		.provider = "bulkhead-crun",
		.isolation = "container",
		.environment = "bulkhead-sandbox:sha256:00",
		.policy = "",
		.software_identity = "",
		.software_rule_id = "",
		.started_unix_ms = 1700000000000,
		.ended_unix_ms = 1700000000042,
		.sequence = 1,
	};
	strcpy(rec.request_sha256, "aa");
	strcpy(rec.result_sha256, "bb");
	bh_fingerprint_of("0123456789abcdef0123456789abcdef", rec.session);
	return rec;
}

Test(record, a_sealed_record_verifies_and_any_changed_field_does_not)
{
	struct bh_record rec = sample();
	bh_record_seal(&rec);
	cr_assert(bh_record_verify(&rec));
	struct bh_record t = rec;
	t.sequence = 2;
	cr_assert_not(bh_record_verify(&t));
	t = rec;
	t.isolation = "kernel";
	cr_assert_not(bh_record_verify(&t));
	t = rec;
	t.ended_unix_ms++;
	cr_assert_not(bh_record_verify(&t));
	t = rec;
	strcpy(t.previous_sha256, "cc");
	cr_assert_not(bh_record_verify(&t));
}

Test(record, version_three_names_the_unanswered_code_and_has_no_result)
{
	struct bh_record rec = sample();
	rec.version = 3;
	rec.result_sha256[0] = '\0';
	rec.unanswered = "unknown";
	bh_record_seal(&rec);
	char v3[65];
	strcpy(v3, rec.record_sha256);
	rec.unanswered = "deadline_exceeded";
	bh_record_seal(&rec);
	cr_assert_str_neq(rec.record_sha256, v3, "unanswered enters the digest");
}

Test(record, cell_results_digest_the_interpreter_flags)
{
	struct bh_result_fields r = {.kind = "cell", .exit_code = 0, .out = (const uint8_t *)"2\n",
				     .out_len = 2, .interpreter_started = true};
	char a[65], b[65];
	bh_result_digest(&r, a);
	r.interpreter_started = false;
	bh_result_digest(&r, b);
	cr_assert_str_neq(a, b);
	r.kind = "javascript";
	bh_result_digest(&r, a);
	r.interpreter_started = true;
	bh_result_digest(&r, b);
	cr_assert_str_eq(a, b, "a javascript result has no interpreter fields");
}

Test(record, the_fingerprint_is_the_sha256_of_the_id_string)
{
	char fp[65];
	bh_fingerprint_of("abc", fp);
	cr_assert_str_eq(fp, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* ---- fleet (issue 20): a chain adopted from another store walks on from
 * the record there it follows, and from nothing else ---- */
Test(record, a_walk_begun_after_an_adopted_record_takes_its_successor_only)
{
	const char *head = "ab00000000000000000000000000000000000000000000000000000000000000";
	struct bh_record rec = sample();
	rec.sequence = 6;
	strcpy(rec.previous_sha256, head);
	bh_record_seal(&rec);
	struct bh_chain_walk fresh = {0};
	cr_assert_eq(bh_chain_step(&fresh, &rec), BH_CHAIN_LINK, "from the start it breaks");
	struct bh_chain_walk w = {0};
	bh_chain_begin_after(&w, rec.session, 5, head);
	cr_assert_eq(bh_chain_step(&w, &rec), BH_CHAIN_OK);
	struct bh_chain_walk other = {0};
	bh_chain_begin_after(&other, rec.session, 4, head);
	cr_assert_eq(bh_chain_step(&other, &rec), BH_CHAIN_LINK, "not the next sequence");
	bh_chain_begin_after(&other, rec.session, 5, "cd");
	cr_assert_eq(bh_chain_step(&other, &rec), BH_CHAIN_LINK, "not the digest it names");
}
