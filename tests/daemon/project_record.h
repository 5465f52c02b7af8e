/* ---- project: a project answer's record checked as a plimsoll client
 * checks it, its two digests also recomputed by
 * tests/support/plimsoll_digest.py (plimsoll's encoding from its
 * documentation alone). Shared by the project suites (test_project.c,
 * test_project_grants.c). ---- */
#ifndef BH_TEST_PROJECT_RECORD_H
#define BH_TEST_PROJECT_RECORD_H

#include "wire.h"

/* The independent digests of what was sent (the request's JSON) and what
 * came back (the RunResponse's JSON). */
void independent_digests(const char *request, const char *response, char req[65], char res[65]);
/* `response` is the RunResponse's JSON (inside SessionRunResponse.run for a
 * session); r the same decoded. */
void check_record(const char *request, const char *response, const struct wire_run_response *r);

#endif
