/* report: an orphan planted for a test — a container the runtime runs
 * that no registry row names — made from a real sandbox's bundle, the way
 * an operator would find one (the runtime suites' capture tests, the
 * console's :leaks screens). One definition of the shell it takes. */
#ifndef BH_TEST_PLANT_H
#define BH_TEST_PLANT_H

#include <stdbool.h>

/* Writes to out_json a copy of STATE/bundles/SANDBOX/config.json that runs
 * /bin/sleep 300 in a cgroup named ORPHAN below cgroup_parent (the
 * engine's, so the leak finder looks there). Take it while the sandbox's
 * bundle is still there: an engine removes it with the sandbox. */
void plant_orphan_bundle(const char *state, const char *cgroup_parent, const char *sandbox,
			 const char *orphan, const char *out_json);
/* Runs ORPHAN from that config (its bundle STATE/bundles/ORPHAN) under the
 * runtime root, paused when asked; fails the test naming crun's error. */
void plant_orphan_start(const char *state, const char *runtime_root, const char *orphan,
			const char *config_json, bool paused);
/* Kills and deletes it (nothing when it is gone). */
void plant_orphan_remove(const char *runtime_root, const char *orphan);

#endif
