/* The engine's test hooks: what a test needs to crash the engine at a
 * named point or to build sandboxes without a wall, so it can prove what
 * survives and that the smoke test and the posture check notice. They are
 * not in bh_config: no production caller can set them. Test programs reach
 * this header through tests/support/engine_internals.h; product code never
 * includes it (tests/unit/test_layering.c). */
#ifndef BH_ENGINE_TESTHOOK_H
#define BH_ENGINE_TESTHOOK_H

#include "bulkhead.h"

struct bh_test_hooks {
	/* SIGKILL the process at a named point ("open", "cell", "commit",
	 * "pause", "hibernate", "hibernated", "close"; "point:N" for its Nth
	 * time), to prove what survives a crash there. */
	const char *crash_at;
	/* Build every sandbox without this wall ("seccomp", "userns", "netns",
	 * "readonly-root", "caps", "seccomp-masks": the 64-bit deny-list of
	 * before issue 14, "seccomp-unknown-name": a profile name no runtime
	 * knows), to prove the smoke test notices. */
	const char *drop_wall;
	/* Like drop_wall, but only for sandboxes opened after a tier was proven
	 * (its evidence stands): the drift only the posture check on every
	 * sandbox start can catch. */
	const char *drop_wall_after_proof;
	/* ---- usage ---- */
	/* No usage sampler on the loop's tick (bh_engine_usage still reads
	 * the cgroups when asked): the bench's control for what sampling costs
	 * the warm cell. */
	bool usage_off;
	/* ---- stream ---- */
	/* Cells ask their init for no OUTPUT frames (relay_ms 0): the bench's
	 * warm cell with streaming off, against on. */
	bool no_output_relay;
	/* ---- density ---- */
	/* Where host uid regions are claimed, instead of UID_REGION_DIR: a
	 * test can hold regions there without taking them from the host's
	 * other engines. */
	const char *uid_region_dir;
};

/* bh_engine_open with hooks (NULL: none, the same as bh_engine_open). */
int bh_engine_open_hooked(const struct bh_config *cfg, const struct bh_test_hooks *hooks,
			  bh_engine **out, bh_error **err);

#endif
