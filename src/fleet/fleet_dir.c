/* The readers (hosts, placement, the directory, drains) answer from the
 * local copy the watch keeps, never waiting on the network; the writers
 * queue to the writer thread and answer through a callback. */
#include "fleet_priv.h"

#include <string.h>

/* ---- hosts ---- */

void bh_fleet_set_host(bh_fleet *f, const struct bh_fleet_host *me)
{
	if (!f->member || !me)
		return;
	pthread_mutex_lock(&f->lock);
	f->me = *me;
	/* the library's own: */
	snprintf(f->me.id, sizeof f->me.id, "%s", f->host_id);
	f->me.incarnation = f->incarnation;
	f->me.tiers &= (1u << BH_TIER_COUNT) - 1;
	if (f->me.best_tier < BH_TIER_UNKNOWN || f->me.best_tier >= BH_TIER_COUNT ||
	    (f->me.best_tier != BH_TIER_UNKNOWN && !(f->me.tiers & (1u << f->me.best_tier))))
		f->me.best_tier = BH_TIER_UNKNOWN;
	/* texts another reader will check: what would not check is not sent */
	if (!fleet_text_ok(f->me.api, sizeof f->me.api - 1))
		f->me.api[0] = '\0';
	if (!fleet_text_ok(f->me.version, sizeof f->me.version - 1))
		f->me.version[0] = '\0';
	pthread_mutex_unlock(&f->lock);
}

static void host_out_locked(bh_fleet *f, const struct fleet_host_rec *r, uint64_t now, struct bh_fleet_host *out)
{
	*out = r->h;
	out->gone = fleet_host_gone_locked(f, r, now);
}

size_t bh_fleet_hosts(bh_fleet *f, struct bh_fleet_host **out)
{
	pthread_mutex_lock(&f->lock);
	size_t n = f->n_hosts;
	struct bh_fleet_host *hs = xzalloc((n ? n : 1) * sizeof *hs);
	uint64_t now = now_mono_ms();
	for (size_t i = 0; i < n; i++)
		host_out_locked(f, &f->hosts[i], now, &hs[i]);
	pthread_mutex_unlock(&f->lock);
	*out = hs;
	return n;
}

int bh_fleet_host(bh_fleet *f, const char *id, struct bh_fleet_host *out)
{
	if (!id || !fleet_id_ok(id))
		return -1;
	pthread_mutex_lock(&f->lock);
	struct fleet_host_rec *r = fleet_host_find_locked(f, id);
	if (r)
		host_out_locked(f, r, now_mono_ms(), out);
	pthread_mutex_unlock(&f->lock);
	return r ? 0 : -1;
}

static bool proves(uint32_t tiers, enum bh_tier floor)
{
	for (int t = 0; t < BH_TIER_COUNT; t++)
		if ((tiers & (1u << t)) && bh_tier_meets((enum bh_tier)t, floor))
			return true;
	return false;
}

static bool drained_locked(bh_fleet *f, const char *id)
{
	for (size_t i = 0; i < f->n_drains; i++)
		if (!strcmp(f->drains[i], id))
			return true;
	return false;
}

/* Memory left: what admission has not handed out (an unknown budget counts as none left). */
static uint64_t room(const struct bh_fleet_host *h)
{
	return h->memory_budget_mb > h->memory_used_mb ? h->memory_budget_mb - h->memory_used_mb : 0;
}

static bool placeable(bh_fleet *f, const struct bh_fleet_host *h, enum bh_tier floor)
{
	return !h->draining && !drained_locked(f, h->id) && proves(h->tiers, floor) &&
	       (!h->max_sessions || h->sessions < h->max_sessions);
}

/* a better than b */
static bool better(const struct bh_fleet_host *a, const struct bh_fleet_host *b)
{
	if (room(a) != room(b))
		return room(a) > room(b);
	return a->sessions < b->sessions;
}

int bh_fleet_place(bh_fleet *f, enum bh_tier floor, char out[BH_FLEET_ID_MAX + 1])
{
	pthread_mutex_lock(&f->lock);
	uint64_t now = now_mono_ms();
	const struct bh_fleet_host *best = NULL;
	/* this member by its current figures, not the last heartbeat read back */
	if (f->member && placeable(f, &f->me, floor))
		best = &f->me;
	for (size_t i = 0; i < f->n_hosts; i++) {
		const struct fleet_host_rec *r = &f->hosts[i];
		if (f->member && !strcmp(r->h.id, f->host_id))
			continue;
		if (fleet_host_gone_locked(f, r, now) || !placeable(f, &r->h, floor))
			continue;
		if (!best || better(&r->h, best)) /* ties: the first kept (this member, then by id) */
			best = &r->h;
	}
	if (best)
		snprintf(out, BH_FLEET_ID_MAX + 1, "%s", best->id);
	pthread_mutex_unlock(&f->lock);
	return best ? 0 : -1;
}

/* ---- drains ---- */

static struct fleet_job *job_new(enum fleet_job_kind kind, const char *prefix, const char *name)
{
	struct fleet_job *j = xzalloc(sizeof *j);
	j->kind = kind;
	fleet_key(j->key, sizeof j->key, prefix, name);
	return j;
}

int bh_fleet_set_drain(bh_fleet *f, const char *host, bool drain, bh_fleet_done_cb cb, void *arg)
{
	if (!host || !fleet_id_ok(host))
		return -1;
	struct fleet_job *j = job_new(drain ? JOB_PUT : JOB_DELETE, "drain.", host);
	if (drain)
		j->value = fleet_drain_encode(true, f->member ? f->host_id : "", (int64_t)now_real_ms());
	j->done = cb;
	j->arg = arg;
	fleet_queue_job(f, j);
	return 0;
}

bool bh_fleet_draining(bh_fleet *f, const char *host)
{
	if (!host)
		return false;
	pthread_mutex_lock(&f->lock);
	bool d = drained_locked(f, host);
	pthread_mutex_unlock(&f->lock);
	return d;
}

/* ---- the directory ---- */

int bh_fleet_lookup(bh_fleet *f, const char *fingerprint, struct bh_fleet_entry *out)
{
	if (!fleet_fingerprint_ok(fingerprint))
		return -1;
	int rc = -1;
	pthread_mutex_lock(&f->lock);
	size_t lo = 0, hi = f->n_entries;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(f->entries[mid].fingerprint, fingerprint);
		if (!c) {
			*out = f->entries[mid];
			rc = 0;
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

size_t bh_fleet_entries(bh_fleet *f, struct bh_fleet_entry **out)
{
	pthread_mutex_lock(&f->lock);
	size_t n = f->n_entries;
	struct bh_fleet_entry *es = xzalloc((n ? n : 1) * sizeof *es);
	if (n) /* f->entries is NULL while the directory is empty */
		memcpy(es, f->entries, n * sizeof *es);
	pthread_mutex_unlock(&f->lock);
	*out = es;
	return n;
}

/* This member's value of e (host set to it), or NULL when e would not
 * check at another reader (it is refused here rather than skipped there). */
static char *entry_value(bh_fleet *f, const struct bh_fleet_entry *e)
{
	if (!f->member || !e || !fleet_fingerprint_ok(e->fingerprint))
		return NULL;
	struct bh_fleet_entry mine = *e;
	snprintf(mine.host, sizeof mine.host, "%s", f->host_id);
	if (!mine.updated_unix_ms)
		mine.updated_unix_ms = (int64_t)now_real_ms();
	char *value = fleet_entry_encode(&mine);
	struct bh_fleet_entry check;
	char *why = NULL;
	if (fleet_entry_decode(value, strlen(value), mine.fingerprint, &check, &why) < 0) {
		fleet_log(f, BH_LOG_WARN, "fleet: an entry of ours that would not check is not written: %s", why);
		free(why);
		free(value);
		return NULL;
	}
	return value;
}

int bh_fleet_put_entry(bh_fleet *f, const struct bh_fleet_entry *e)
{
	char *value = entry_value(f, e);
	if (!value)
		return -1;
	struct fleet_job *j = job_new(JOB_PUT, "session.", e->fingerprint);
	j->value = value;
	fleet_queue_job(f, j);
	return 0;
}

int bh_fleet_delete_entry(bh_fleet *f, const char *fingerprint)
{
	if (!fleet_fingerprint_ok(fingerprint))
		return -1;
	fleet_queue_job(f, job_new(JOB_DELETE, "session.", fingerprint));
	return 0;
}

int bh_fleet_claim(bh_fleet *f, const struct bh_fleet_entry *seen, const struct bh_fleet_entry *mine,
		   bh_fleet_claim_cb cb, void *arg)
{
	if (!seen || !mine || strcmp(seen->fingerprint, mine->fingerprint))
		return -1;
	char *value = entry_value(f, mine);
	if (!value)
		return -1;
	struct fleet_job *j = job_new(JOB_CLAIM, "session.", mine->fingerprint);
	j->value = value;
	j->last = seen->revision;
	j->claim = cb;
	j->arg = arg;
	fleet_queue_job(f, j);
	return 0;
}
