/* Usage: what each live session's sandbox uses (CPU, memory, pids, disk,
 * calls a minute) and what the host has, for the operator (bulkhead.h's
 * bh_engine_usage, the console's columns, /metrics).
 *
 * Cheap by construction: the loop's existing one-second tick samples every
 * BH_USAGE_SAMPLE_MS (no thread, no timer per session), reading five small
 * host-owned cgroup files per sandbox into a ring of BH_USAGE_HISTORY
 * points; a call costs the session one counter bump; the disk figure is the
 * one the init already puts in every DONE frame. bh_engine_usage reads the
 * cgroups again when asked, so what an operator sees is current; its CPU
 * figure is the delta since the last sample (it needs an interval). */
#include "session_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_TICKS 5 /* BH_USAGE_SAMPLE_MS over the engine's 1 s tick */

struct usage_now {
	bool ok;
	uint64_t cpu_ns, memory, peak, limit;
	uint32_t pids;
};

/* A sandbox that has processes: a hibernated one is an image, one opening
 * or ending may have no cgroup yet or any more (a read fails: not ok). */
static const struct sandbox *live_sandbox(const bh_session *s)
{
	if (!s->sb || s->state == BH_SESSION_HIBERNATED || s->state == BH_SESSION_ENDED)
		return NULL;
	return s->sb;
}

static bool read_value(const bh_engine *e, const char *controller, const char *leaf,
		       const char *file, uint64_t *out)
{
	long long v = cgroups_read_ll(&e->cg, controller, leaf, file);
	if (v == -1) { /* v2's "max": no limit */
		*out = UINT64_MAX;
		return true;
	}
	if (v < 0)
		return false;
	*out = (uint64_t)v;
	return true;
}

/* cgroup v2 keeps CPU time in cpu.stat's usage_usec. */
static bool read_cpu_v2(const bh_engine *e, const char *leaf, uint64_t *ns)
{
	cleanup_free char *p = cgroups_file(&e->cg, "", leaf, "cpu.stat");
	cleanup_free char *v = read_file(p, 4096, NULL);
	const char *k = v ? strstr(v, "usage_usec ") : NULL;
	if (!k)
		return false;
	*ns = strtoull(k + 11, NULL, 10) * 1000u;
	return true;
}

/* full: everything an operator is shown; not full: what the sampler's
 * ring keeps (CPU time and memory), two reads instead of five a session. */
static struct usage_now read_now(const bh_engine *e, const struct sandbox *sb, bool full)
{
	struct usage_now u = {0};
	uint64_t pids = 0;
	const char *leaf = sb->name;
	if (e->cg.pure_v2) {
		u.ok = read_cpu_v2(e, leaf, &u.cpu_ns) &&
		       read_value(e, "", leaf, "memory.current", &u.memory) &&
		       (!full || (read_value(e, "", leaf, "memory.max", &u.limit) &&
				  read_value(e, "", leaf, "pids.current", &pids)));
		/* memory.peak is newer than some v2 kernels: the usage then. */
		if (u.ok && full && !read_value(e, "", leaf, "memory.peak", &u.peak))
			u.peak = u.memory;
	} else {
		u.ok = read_value(e, "cpuacct", leaf, "cpuacct.usage", &u.cpu_ns) &&
		       read_value(e, "memory", leaf, "memory.usage_in_bytes", &u.memory) &&
		       (!full ||
			(read_value(e, "memory", leaf, "memory.max_usage_in_bytes", &u.peak) &&
			 read_value(e, "memory", leaf, "memory.limit_in_bytes", &u.limit) &&
			 read_value(e, "pids", leaf, "pids.current", &pids)));
	}
	u.pids = pids > UINT32_MAX ? UINT32_MAX : (uint32_t)pids;
	return u;
}

static uint32_t millicores(uint64_t ns_before, uint64_t us_before, uint64_t ns_now, uint64_t us_now)
{
	if (us_now <= us_before || ns_now < ns_before)
		return 0;
	/* ns of CPU per us of wall, /1000 per core, x1000 for milli: ns/us. */
	uint64_t m = (ns_now - ns_before) / (us_now - us_before);
	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static void sample(bh_session *s, uint64_t now_us, int64_t now_ms)
{
	struct session_usage *u = &s->usage;
	const struct sandbox *sb = live_sandbox(s);
	struct usage_now n = sb ? read_now(s->e, sb, false) : (struct usage_now){0};
	if (!n.ok) {
		u->cpu_known = false; /* the next interval starts over */
		return;
	}
	u->cpu_millicores =
		u->cpu_known ? millicores(u->cpu_ns, u->cpu_at_us, n.cpu_ns, now_us) : 0;
	u->prev_ns = u->cpu_known ? u->cpu_ns : 0;
	u->prev_at_us = u->cpu_known ? u->cpu_at_us : 0;
	u->cpu_ns = n.cpu_ns;
	u->cpu_at_us = now_us;
	u->cpu_known = true;
	u->ring[u->head] = (struct bh_usage_point){.at_unix_ms = now_ms,
						   .cpu_millicores = u->cpu_millicores,
						   .memory_bytes = n.memory};
	u->head = (uint8_t)((u->head + 1) % BH_USAGE_HISTORY);
	if (u->n < BH_USAGE_HISTORY)
		u->n++;
}

/* Each tick samples one in SAMPLE_TICKS of the sessions (by position), so
 * each is sampled every BH_USAGE_SAMPLE_MS as before but no tick reads
 * them all at once: with a thousand sessions held, reading five thousand
 * cgroup files in one tick stalled the loop (and every call waiting on it)
 * for over 100 ms every five seconds (bench/density.c). A session opened
 * meanwhile shifts the positions by one; its next sample is a tick early or
 * late, and its CPU figure is over the interval actually measured. */
void usage_tick(bh_engine *e)
{
	if (e->usage_off)
		return;
	/* The first slice on the fifth tick, as the whole round was before. */
	uint32_t phase = ++e->usage_ticks % SAMPLE_TICKS;
	uint64_t now_us = now_mono_us();
	int64_t now_ms = (int64_t)now_real_ms();
	uint32_t i = 0;
	for (bh_session *s = e->sessions; s; s = s->next, i++)
		if (i % SAMPLE_TICKS == phase)
			sample(s, now_us, now_ms);
	/* ---- light: figures a console shows moved, once a round: on the
	 * tick that samples the first slice (with one session, its only one:
	 * the sample and the change on one tick, as before the slices) ---- */
	if (e->sessions && phase == 0)
		e->usage_sampled_ms = now_ms;
}

/* ---- light ---- */
void bh_engine_change_token(bh_engine *e, struct bh_change_token *out)
{
	*out = (struct bh_change_token){.started_unix_ms = e->started_unix_ms,
					.generation = e->generation,
					.usage_sampled_unix_ms = e->usage_sampled_ms};
}

void usage_note_call(bh_session *s)
{
	int64_t sec = (int64_t)(now_real_ms() / 1000u);
	size_t i = (size_t)(sec % 60);
	if (s->usage.second[i] != sec) {
		s->usage.second[i] = sec;
		s->usage.calls[i] = 0;
	}
	s->usage.calls[i]++;
}

void usage_note_disk(bh_session *s, uint64_t bytes)
{
	s->usage.disk_bytes = bytes;
	s->usage.disk_unix_ms = (int64_t)now_real_ms();
}

static uint32_t calls_last_minute(const struct session_usage *u, int64_t now_ms)
{
	int64_t sec = now_ms / 1000;
	uint64_t sum = 0;
	for (size_t i = 0; i < 60; i++)
		if (u->second[i] > sec - 60 && u->second[i] <= sec)
			sum += u->calls[i];
	return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

static void session_usage(const bh_session *s, uint64_t now_us, int64_t now_ms,
			  struct bh_session_usage *out)
{
	const struct session_usage *u = &s->usage;
	memset(out, 0, sizeof *out);
	snprintf(out->fingerprint, sizeof out->fingerprint, "%s", s->fp);
	out->tier = s->tier;
	out->state = s->state;
	out->disk_bytes = u->disk_bytes;
	out->disk_unix_ms = u->disk_unix_ms;
	out->calls_last_minute = calls_last_minute(u, now_ms);
	for (size_t k = 0; k < u->n; k++)
		out->history[k] =
			u->ring[(u->head + BH_USAGE_HISTORY - u->n + k) % BH_USAGE_HISTORY];
	out->n_history = u->n;
	const struct sandbox *sb = live_sandbox(s);
	struct usage_now n = sb ? read_now(s->e, sb, true) : (struct usage_now){0};
	if (!n.ok)
		return;
	out->measured = true;
	out->sampled_unix_ms = now_ms;
	/* CPU over a window that ends now: since the last sample, or, when
	 * that is less than a second (too short to say much), since the one
	 * before; with neither, the last sample's own figure. */
	if (u->cpu_known && now_us >= u->cpu_at_us + 1000000u)
		out->cpu_millicores = millicores(u->cpu_ns, u->cpu_at_us, n.cpu_ns, now_us);
	else if (u->cpu_known && u->prev_at_us)
		out->cpu_millicores = millicores(u->prev_ns, u->prev_at_us, n.cpu_ns, now_us);
	else
		out->cpu_millicores = u->cpu_millicores;
	out->memory_bytes = n.memory;
	out->memory_limit_bytes = n.limit;
	out->memory_peak_bytes = n.peak;
	out->pids = n.pids;
}

/* "MemTotal:  24683584 kB" */
static uint64_t meminfo_bytes(const char *text, const char *name)
{
	const char *k = text ? strstr(text, name) : NULL;
	return k ? strtoull(k + strlen(name), NULL, 10) * 1024u : 0;
}

static void host_usage(bh_engine *e, struct bh_host_usage *h)
{
	memset(h, 0, sizeof *h);
	cleanup_free char *load = read_file("/proc/loadavg", 4096, NULL);
	double l[3] = {0};
	if (load && sscanf(load, "%lf %lf %lf", &l[0], &l[1], &l[2]) == 3)
		for (int i = 0; i < 3; i++)
			h->load_milli[i] =
				l[i] > 0 && l[i] < 4e6 ? (uint32_t)(l[i] * 1000 + 0.5) : 0;
	cleanup_free char *mem = read_file("/proc/meminfo", 1 << 16, NULL);
	h->mem_total_bytes = meminfo_bytes(mem, "MemTotal:");
	h->mem_available_bytes = meminfo_bytes(mem, "MemAvailable:");
	/* Admission's own count: every sandbox with processes holds its limit. */
	struct census c = {0};
	sessions_census(e, "", &c);
	execs_census(e, "", &c);
	pool_census(e, &c);
	h->budget_held_bytes = (uint64_t)c.memory * e->memory_limit_mb * 1048576u;
	h->budget_bytes = (uint64_t)e->policy.memory_budget_mb * 1048576u;
	for (bh_session *s = e->sessions; s; s = s->next)
		if (s->state == BH_SESSION_HIBERNATED)
			h->images_bytes += s->image_bytes;
	h->images_budget_bytes = (uint64_t)e->policy.images_budget_mb * 1048576u;
	h->started_unix_ms = e->started_unix_ms;
	h->now_unix_ms = (int64_t)now_real_ms();
}

size_t bh_engine_usage(bh_engine *e, struct bh_host_usage *host, struct bh_session_usage **out)
{
	struct bh_host_usage h;
	host_usage(e, &h);
	size_t n = 0;
	for (bh_session *s = e->sessions; s; s = s->next)
		n += s->state != BH_SESSION_ENDED;
	struct bh_session_usage *list = xzalloc((n ? n : 1) * sizeof *list);
	uint64_t now_us = now_mono_us();
	size_t i = 0;
	for (bh_session *s = e->sessions; s && i < n; s = s->next) {
		if (s->state == BH_SESSION_ENDED)
			continue;
		session_usage(s, now_us, h.now_unix_ms, &list[i]);
		h.sandboxes_used_bytes += list[i].memory_bytes;
		i++;
	}
	if (host)
		*host = h;
	*out = list;
	return n;
}
