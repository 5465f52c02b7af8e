/* ---- project: the engine's judge of a project runner's report
 * (src/engine/project.c), which the sandbox writes and nothing vouches
 * for. The input follows the plan's nonce, so the fuzzer reaches the
 * report itself; the judge must accept or refuse it, never crash, read out
 * of bounds or leak, and whatever it accepts must digest. ---- */
#include "project_priv.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct project_call *pc;
	if (!pc) {
		static const struct bh_file files[] = {{"a.txt", (const uint8_t *)"a", 1}};
		static const char *const steps[] = {"true", "echo two", "false"};
		static const char *const artifacts[] = {"a.txt", "out/b.bin"};
		struct bh_project req = {.files = files, .n_files = 1, .steps = steps, .n_steps = 3,
					 .artifacts = artifacts, .n_artifacts = 2};
		pc = project_call_new(&req);
	}
	uint8_t *buf = malloc(BH_PROJECT_NONCE + size);
	memcpy(buf, pc->nonce, BH_PROJECT_NONCE);
	if (size)
		memcpy(buf + BH_PROJECT_NONCE, data, size);
	struct project_outcome o;
	project_judge(pc, buf, BH_PROJECT_NONCE + size, false, false, 0, &o);
	struct bh_result_fields rf;
	project_result_fields(&o, &rf);
	char digest[65];
	bh_result_digest(&rf, digest);
	project_outcome_free(&o);
	free(buf);
	return 0;
}
