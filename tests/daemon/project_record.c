/* ---- project: project_record.h says what this is. ---- */
#include "project_record.h"
#include "record.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void independent_digests(const char *request, const char *response, char req[65], char res[65])
{
	char tmpl[] = "/tmp/bh-project-digest.XXXXXX";
	int fd = mkstemp(tmpl);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "{\"request\":%s,\"response\":%s}", request, response);
	fclose(f);
	char cmd[8300];
	snprintf(cmd, sizeof cmd, "python3 '%s' < '%s'", BH_PLIMSOLL_DIGEST_PY, tmpl);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char out[256] = "";
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	cr_assert_eq(sscanf(out, "%64s %64s", req, res), 2, "plimsoll_digest.py said: %s", out);
	cr_assert_eq(status, 0, "plimsoll_digest.py failed on %s", tmpl);
	unlink(tmpl);
}

void check_record(const char *request, const char *response, const struct wire_run_response *r)
{
	cr_assert(r->has_record, "the answer carries no record");
	cr_assert_str_eq(r->result.kind, "project");
	char want[65], req[65], res[65];
	bh_result_digest(&r->result, want);
	cr_assert_str_eq(r->record.result_sha256, want, "the result digest is not what was received");
	independent_digests(request, response, req, res);
	cr_assert_str_eq(r->record.request_sha256, req, "plimsoll's request digest differs");
	cr_assert_str_eq(r->record.result_sha256, res, "plimsoll's result digest differs");
	cr_assert(bh_record_verify(&r->record), "the record digest does not verify");
	cr_assert_str_eq(r->record.provider, r->sandbox);
	cr_assert_str_eq(r->record.isolation, r->isolation);
}
