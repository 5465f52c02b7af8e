/* Host uid regions (issue 21, src/engine/uid_region.c): an engine that runs
 * sandboxes claims a region of 2048 uid ranges for its life, the next free
 * one when another engine holds the one its state directory prefers; its
 * sandboxes map uids in it; the warden keeps the claim; with every region
 * held, the engine refuses to open and says why. Each test claims in a
 * directory of its own, holding regions there as "other engines", so the
 * host's real claims are never touched. */
#include "harness.h"
#include "testhook.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define REGIONS 31 /* (65536 - 16) / 2048 */
#define KEPT_FREE 7

static struct harness h;
static char dir[4096];
static int held[REGIONS];

static void setup(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT") ? getenv("BULKHEAD_TEST_ROOT") : "/tmp";
	snprintf(dir, sizeof dir, "%s/uid-regions-XXXXXX", root);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	for (int i = 0; i < REGIONS; i++)
		held[i] = -1;
}

static void teardown(void)
{
	harness_close(&h);
	for (int i = 0; i < REGIONS; i++)
		if (held[i] >= 0)
			close(held[i]);
	harness_sh("rm -rf '%s'", dir);
}

/* Holds region r as another engine would. */
static void hold(int r)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%d", dir, r);
	held[r] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(held[r], 0);
	cr_assert_eq(flock(held[r], LOCK_EX | LOCK_NB), 0, "region %d: %s", r, strerror(errno));
}

static long long first_host_uid_of_a_sandbox(void)
{
	bh_session *s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	const char *uid = harness_sh("sed -n 's/.*\"uidMappings\":\\[{[^}]*\"hostID\":\\([0-9]*\\).*/\\1/p' "
			       "'%s/bundles/%s/config.json'",
			       h.state_dir, info.sandbox);
	return atoll(uid);
}

Test(uid_region, an_engine_takes_the_free_region_when_others_hold_theirs_and_its_sandboxes_map_uids_there,
     .init = setup, .fini = teardown)
{
	for (int r = 0; r < REGIONS; r++)
		if (r != KEPT_FREE)
			hold(r);
	harness_open_uid_regions(&h, dir);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	char *claim = harness_sh("cat '%s/%d'", dir, KEPT_FREE);
	char want[4200];
	snprintf(want, sizeof want, "%d %s\n", (int)getpid(), h.state_dir);
	cr_assert_str_eq(claim, want, "the claim of region %d names: %s", KEPT_FREE, claim);
	long long base = 65536LL * (16 + KEPT_FREE * 2048);
	long long uid = first_host_uid_of_a_sandbox();
	cr_assert(uid >= base && uid < base + 65536LL * 2048 && uid % 65536 == 0,
		  "a sandbox maps host uid %lld, outside region %d (%lld..)", uid, KEPT_FREE, base);
}

Test(uid_region, the_warden_holds_the_engines_claim, .init = setup, .fini = teardown)
{
	harness_open_uid_regions(&h, dir);
	/* Some process other than this one (the warden) has the claimed
	 * region's file open as its descriptor 3. */
	char *holders = harness_sh("for p in /proc/[0-9]*; do [ \"${p#/proc/}\" = %d ] && continue; "
				   "l=$(readlink $p/fd/3 2>/dev/null); case \"$l\" in '%s'/*) echo "
				   "\"$l\";; esac; done",
				   (int)getpid(), dir);
	cr_assert_neq(holders[0], '\0', "no warden holds a region claimed in %s", dir);
}

Test(uid_region, with_every_region_held_the_engine_refuses_to_open_and_says_why, .init = setup,
     .fini = teardown)
{
	for (int r = 0; r < REGIONS; r++)
		hold(r);
	/* An empty cgroup of somebody else's at a hierarchy's root: an open
	 * refused before the engine has a cgroup parent must not take it for
	 * one of its own (it once removed every empty cgroup on the host). */
	char canary[256];
	snprintf(canary, sizeof canary, "/sys/fs/cgroup/memory/bh-canary-%d", (int)getpid());
	cr_assert_eq(mkdir(canary, 0755), 0, "mkdir %s: %s", canary, strerror(errno));
	char state[4200];
	const char *root = getenv("BULKHEAD_TEST_ROOT") ? getenv("BULKHEAD_TEST_ROOT") : "/tmp";
	snprintf(state, sizeof state, "%s/state-XXXXXX", root);
	cr_assert_not_null(mkdtemp(state));
	struct bh_config cfg = {.state_dir = state, .init_path = BH_TEST_INIT, .interp_dir = BH_TEST_INTERP};
	struct bh_test_hooks hooks = {.uid_region_dir = dir};
	bh_engine *e = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_open_hooked(&cfg, &hooks, &e, &err), -1, "an engine opened with no region");
	cr_assert_not_null(err);
	cr_assert_eq(err->code, BH_E_LOCKED, "%s", err->msg);
	cr_assert(strstr(err->msg, "every one of the host's 31 uid regions") && strstr(err->msg, dir),
		  "%s", err->msg);
	bh_error_free(err);
	struct stat st;
	bool kept = stat(canary, &st) == 0;
	rmdir(canary);
	cr_assert(kept, "a refused open removed another program's empty cgroup %s", canary);
	harness_sh("rm -rf '%s'", state);
}
