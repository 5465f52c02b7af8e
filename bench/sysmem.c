#include "sysmem.h"

#include <dirent.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

long long mem_available_kib(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	long long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "MemAvailable:", 13))
			kib = strtoll(line + 13, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

static long long field_kib(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char line[256];
	size_t kl = strlen(key);
	long long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl)) {
			kib = strtoll(line + kl, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return kib;
}

#define MAX_PIDS 512

static bool add_pid(int *pids, int *n, int pid)
{
	for (int i = 0; i < *n; i++)
		if (pids[i] == pid)
			return false;
	if (*n >= MAX_PIDS)
		return false;
	pids[(*n)++] = pid;
	return true;
}

static void pids_in(const char *path, int *pids, int *n)
{
	FILE *f = fopen(path, "re");
	int pid;
	while (f && fscanf(f, "%d", &pid) == 1)
		add_pid(pids, n, pid);
	if (f)
		fclose(f);
}

/* The cmdline with NULs turned to spaces. */
static bool cmdline_names(int pid, const char *name)
{
	char path[64], buf[8192];
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return strstr(buf, name) != NULL;
}

void sandbox_pss(const char *cgroup_parent, const char *name, struct pss_total *t)
{
	static const char *const hier[] = {"memory", "pids", "cpu,cpuacct", "freezer", "devices",
					   "blkio", "cpuset"};
	int pids[MAX_PIDS], n = 0;
	char path[8192];
	for (size_t i = 0; i < sizeof hier / sizeof hier[0]; i++) {
		snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/%s/cgroup.procs", hier[i],
			 cgroup_parent, name);
		pids_in(path, pids, &n);
	}
	snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/%s/memory.usage_in_bytes", cgroup_parent,
		 name);
	FILE *f = fopen(path, "re");
	long long bytes;
	if (f && fscanf(f, "%lld", &bytes) == 1)
		t->cgroup_kib += bytes / 1024;
	if (f)
		fclose(f);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		if (cmdline_names((int)pid, name))
			add_pid(pids, &n, (int)pid);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pids[i]);
		long long pss = field_kib(path, "Pss:");
		long long rss = field_kib(path, "Rss:");
		if (pss < 0)
			continue;
		t->pss_kib += pss;
		t->rss_kib += rss > 0 ? rss : 0;
		t->procs++;
	}
}

static uint64_t du_apparent, du_disk;

static int du_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)p;
	(void)flag;
	(void)ftw;
	du_apparent += (uint64_t)st->st_size;
	du_disk += (uint64_t)st->st_blocks * 512u;
	return 0;
}

void du(const char *path, uint64_t *apparent, uint64_t *on_disk)
{
	du_apparent = du_disk = 0;
	nftw(path, du_one, 16, FTW_PHYS);
	*apparent = du_apparent;
	*on_disk = du_disk;
}
