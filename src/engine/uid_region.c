/* Host uid ranges: each sandbox runs as its own 65536 host uids (its user
 * namespace's mapping), so two sandboxes never share a uid on the host,
 * even across engines.
 *
 * The host's 2^32 uids hold 65536 ranges; the first 16 (uids under 2^20:
 * the host's own users) are never given out. The rest are cut into regions
 * of UID_REGION_SLOTS ranges, and an engine that runs sandboxes claims one
 * region for its life with a lock file in UID_REGION_DIR: two live engines
 * can never hold the same uids. The region tried first is the state
 * directory's (its key, modulo the region count), so an engine reopened on
 * the same directory gets its region back and with it the uids its dead
 * predecessor's kept sandboxes and bundles name; when another engine holds
 * that one, the next free one is taken. The warden keeps the claim while it
 * stops a dead engine's sandboxes (it inherits the lock's descriptor), so
 * no new engine is given their uids while they still run.
 *
 * Until issue 21 an engine had 256 ranges at a region fixed by its key
 * (250 regions, unclaimed: two engines could meet in one); 2048 now hold
 * a thousand idle sessions on a host that has the memory for them. */
#include "engine_priv.h"
#include "sandbox_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define UID_RANGE 65536u
#define UID_RESERVED_RANGES 16u
#define UID_REGIONS ((65536u - UID_RESERVED_RANGES) / UID_REGION_SLOTS)

static uint32_t preferred_region(const bh_engine *e)
{
	char head[7];
	memcpy(head, e->state_key, 6);
	head[6] = '\0';
	return (uint32_t)strtoul(head, NULL, 16) % UID_REGIONS;
}

int uid_region_claim(bh_engine *e, bool claim, bh_error **err)
{
	e->uid_region = preferred_region(e);
	e->uid_region_fd = -1;
	if (!claim)
		return 0; /* reading, not running: the key's region names what it finds */
	const char *dir = e->uid_region_dir ? e->uid_region_dir : UID_REGION_DIR;
	if (mkdir_p(dir, 0700) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno,
			       "create %s, where engines claim their host uid ranges", dir);
	for (uint32_t i = 0; i < UID_REGIONS; i++) {
		uint32_t r = (e->uid_region + i) % UID_REGIONS;
		char path[4096];
		snprintf(path, sizeof path, "%s/%u", dir, r);
		int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "open %s", path);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			char who[600];
			int n = snprintf(who, sizeof who, "%d %s\n", (int)getpid(), e->state_dir);
			if (ftruncate(fd, 0) < 0 || pwrite(fd, who, (size_t)n, 0) < 0) {
				/* the lock is the claim; the text only tells an operator whose */
			}
			if (i)
				bh_log(e, BH_LOG_INFO,
				       "host uid region %u is another engine's: this one takes region %u",
				       e->uid_region, r);
			e->uid_region = r;
			e->uid_region_fd = fd;
			return 0;
		}
		int saved = errno;
		close(fd);
		if (saved != EWOULDBLOCK)
			return bh_fail(err, BH_E_SYSTEM, saved, "lock %s", path);
	}
	return bh_fail(err, BH_E_LOCKED, 0,
		       "every one of the host's %u uid regions in %s is held by a live engine", UID_REGIONS,
		       dir);
}

void uid_region_release(bh_engine *e)
{
	if (e->uid_region_fd >= 0)
		close(e->uid_region_fd);
	e->uid_region_fd = -1;
	free(e->uid_region_dir);
	e->uid_region_dir = NULL;
}

int uid_slot_take(bh_engine *e)
{
	for (int i = 0; i < UID_REGION_SLOTS; i++) {
		if (!e->uid_slots[i]) {
			e->uid_slots[i] = 1;
			return i;
		}
	}
	return -1;
}

uint32_t sandbox_uid_base(bh_engine *e, int slot)
{
	return UID_RANGE * (UID_RESERVED_RANGES + e->uid_region * UID_REGION_SLOTS + (uint32_t)slot);
}

/* ---- inflight: the slot a host uid range belongs to (-1: none of this
 * engine's), so a dead engine's kept sandboxes keep theirs ---- */
int uid_slot_of(bh_engine *e, uint32_t host_uid_base)
{
	uint32_t first = sandbox_uid_base(e, 0);
	if (host_uid_base < first || host_uid_base % UID_RANGE)
		return -1;
	uint32_t slot = (host_uid_base - first) / UID_RANGE;
	return slot < UID_REGION_SLOTS ? (int)slot : -1;
}

void uid_slot_hold(bh_engine *e, int slot)
{
	if (slot >= 0 && slot < UID_REGION_SLOTS)
		e->uid_slots[slot] = 1;
}
