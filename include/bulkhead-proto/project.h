/* A project run (plimsoll's ProjectRun) inside a sandbox: the plan the
 * engine writes on the runner's stdin and the report the runner writes on
 * its stdout. The runner is bulkhead-init started as `BH_INIT_SANDBOX_PATH
 * BH_INIT_PROJECT` by one EXEC (channel.h), so no frame is added: the EXEC's
 * DONE carries the report as its stdout, and the sweep after it ends
 * whatever a step left behind.
 *
 * Every step runs as the runner's uid, so any step could reach for the
 * runner's stdout. The runner makes itself undumpable before it reads the
 * plan (its /proc files, descriptors and memory are then closed to a
 * process of the same uid), gives each step its own pipes, and opens the
 * report with the plan's nonce: a report without it is not the runner's
 * (plimsoll authenticates its runner's report with a key in the plan for
 * the same reason). The engine also demands that stdout is exactly one
 * report, so bytes written around it make the run a protocol error.
 *
 * Integers little-endian, strings u32 length | bytes (codec.h).
 *
 *   plan   := nonce[BH_PROJECT_NONCE] | u32 budget_ms | u32 step_output_cap
 *             | u32 artifact_budget | u32 nfiles | nfiles x (string path | string content)
 *             | u32 nsteps | nsteps x string command
 *             | u32 nartifacts | nartifacts x string path
 *   report := nonce[BH_PROJECT_NONCE] | u8 setup_failed | string detail
 *             | u32 nsteps | nsteps x (i32 exit_code | u8 flags | u64 duration_us
 *                                       | string stdout | string stderr)
 *             | u8 artifacts_truncated | u32 n | n x (u32 index | string content)
 *
 * Files are written first, under /work, never through a link; one that
 * cannot be written stops the run before any step (setup_failed, with the
 * path and the errno in detail). Steps run in order by /bin/sh -c in /work,
 * stdin /dev/null, stopping after the first that does not exit 0; each may
 * use what is left of budget_ms (one that reaches it is killed with its
 * process group: exit 124, BH_PROJECT_STEP_TIMED_OUT). Artifacts are read
 * after the steps, whatever they did: a path that is missing, a link, or
 * not a regular file is left out; index names the path in the plan (in
 * increasing order); once the next would pass artifact_budget none is read
 * further and artifacts_truncated is set. */
#ifndef BH_PROTO_PROJECT_H
#define BH_PROTO_PROJECT_H

#include "channel.h"

#define BH_INIT_PROJECT "--project"

#define BH_PROJECT_NONCE 32u

/* plimsoll's limits (its sandbox.Validate*): 1 to 20 steps of at most
 * 16 KiB, at most 100 artifacts; files as a cell's (channel.h). */
#define BH_PROJECT_MAX_STEPS 20u
#define BH_PROJECT_MAX_STEP_BYTES (16u * 1024u)
#define BH_PROJECT_MAX_ARTIFACTS 100u
/* Kept per step and stream (plimsoll's docker default), and the artifacts'
 * bytes in all. */
#define BH_PROJECT_STEP_OUTPUT_CAP (64u * 1024u)
#define BH_PROJECT_ARTIFACT_BUDGET (4u * 1024u * 1024u)
/* The report's detail (a setup failure's words). */
#define BH_PROJECT_DETAIL_MAX 1024u
/* The time budget: plimsoll's docker project default and maximum. */
#define BH_PROJECT_DEFAULT_TIMEOUT_MS 30000u
#define BH_PROJECT_MAX_TIMEOUT_MS 120000u
/* The EXEC's own deadline is the budget plus this, so the runner reports a
 * step's timeout itself; past it the run is timed out with no report. */
#define BH_PROJECT_RUNNER_GRACE_MS 3000u

enum bh_project_step_flags {
	BH_PROJECT_STEP_TIMED_OUT = 1u << 0,
	BH_PROJECT_STEP_STDOUT_TRUNCATED = 1u << 1,
	BH_PROJECT_STEP_STDERR_TRUNCATED = 1u << 2,
};

/* The largest report: every step's streams at the cap, every artifact's
 * index, the budget, the detail and the fixed parts. It is the EXEC's
 * output cap, so it must fit one DONE. */
#define BH_PROJECT_REPORT_CAP                                                                      \
	(BH_PROJECT_NONCE + 1u + 4u + BH_PROJECT_DETAIL_MAX + 4u +                                 \
	 BH_PROJECT_MAX_STEPS * (4u + 1u + 8u + 4u + 4u + 2u * BH_PROJECT_STEP_OUTPUT_CAP) + 1u + \
	 4u + BH_PROJECT_MAX_ARTIFACTS * (4u + 4u) + BH_PROJECT_ARTIFACT_BUDGET)
_Static_assert(BH_PROJECT_REPORT_CAP <= BH_MAX_OUTPUT_CAP, "a project's report must fit one DONE");

/* The largest plan: it is the EXEC's stdin. */
#define BH_PROJECT_PLAN_MAX                                                                        \
	(BH_PROJECT_NONCE + 4u * 4u + BH_MAX_FILES * (8u + BH_MAX_PATH_BYTES) + BH_MAX_FILES_BYTES + \
	 4u + BH_PROJECT_MAX_STEPS * (4u + BH_PROJECT_MAX_STEP_BYTES) + 4u +                       \
	 BH_PROJECT_MAX_ARTIFACTS * (4u + BH_MAX_PATH_BYTES))

#endif
