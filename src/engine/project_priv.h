/* ---- project: what a fresh run (project.c) and a session's
 * (session_project.c) share: the checked copy of a request, its plan, and
 * the judge of the runner's report (include/bulkhead-proto/project.h). ---- */
#ifndef BH_ENGINE_PROJECT_PRIV_H
#define BH_ENGINE_PROJECT_PRIV_H

#include "engine_priv.h"
#include "project.h"
#include "record.h"
#include "store.h"

struct project_call {
	struct bh_file *files;
	size_t n_files;
	char **steps;
	size_t n_steps;
	char **artifacts;
	size_t n_artifacts;
	char *grant_profile;
	enum bh_tier floor;
	uint32_t budget_ms;      /* the run's budget */
	int64_t sent_timeout_ms; /* for the request digest */
	uint8_t nonce[BH_PROJECT_NONCE];
	struct buf plan;         /* the runner's stdin */
	char *summary;           /* "$ step\n" per step: the stored record's code */
	size_t summary_len;
	bh_project_cb cb;
	void *arg;
};

/* A judged report: steps and artifacts point into the DONE's stdout (and
 * the call's own step commands), valid while it is. */
struct project_outcome {
	enum bh_project_outcome outcome;
	char detail[BH_PROJECT_DETAIL_MAX + 64];
	struct bh_project_step steps[BH_PROJECT_MAX_STEPS];
	size_t n_steps;
	struct bh_artifact artifacts[BH_PROJECT_MAX_ARTIFACTS];
	size_t n_artifacts;
	bool artifacts_truncated;
	int last_exit;           /* the last step's exit code; -1 when none ran */
	struct buf out, err;     /* every step's streams, one after another: the stored copy */
};

/* Refuses what plimsoll's limits refuse (not dispatched, request). */
int project_check(const struct bh_project *req, bh_error **err);
/* A checked request's own copy, its plan and summary made. */
struct project_call *project_call_new(const struct bh_project *req);
void project_call_free(struct project_call *pc);

/* Judges the runner's EXEC answer: its stdout, whether it was cut, whether
 * the EXEC's own deadline ended it, and its exit code. */
void project_judge(const struct project_call *pc, const uint8_t *out, size_t out_len,
		   bool out_truncated, bool exec_timed_out, int exit_code,
		   struct project_outcome *o);
void project_outcome_free(struct project_outcome *o);

void project_request_fields(const struct project_call *pc, struct bh_request_fields *rf);
void project_result_fields(const struct project_outcome *o, struct bh_result_fields *rf);
/* The answer over a judged outcome (durations left to the caller). */
void project_result_of(const struct project_outcome *o, enum bh_tier tier,
		       const struct bh_record *rec, struct bh_project_result *r);
/* The store's forensic copy: language "project", the steps as code, the
 * outcome in flags. */
void project_store_extra(const struct project_call *pc, const struct project_outcome *o,
			 uint64_t duration_us, char *flags, size_t flags_len,
			 struct store_record_extra *x);

#endif
