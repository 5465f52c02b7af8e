/* The watcher thread: a watch of the whole bucket (kvStore_WatchAll) keeps
 * the local copy the readers use (hosts, the directory, drains), so no read
 * waits on the network. A value that does not check is skipped and counted
 * (bh_fleet_status.rejected), never trusted. A host's liveness is this
 * reader's: each new revision of host.<id> is a heartbeat seen now, by this
 * reader's monotonic clock; the writer's wall clock is only shown.
 *
 * The watch is remade when it fails, and, for a member, when its own
 * heartbeats stop coming back through it while the connection is up (a
 * consumer lost with a NATS node): the bucket is replayed and the copy
 * brought up to date (newer revisions win; deleted keys are replayed as
 * deletes, the bucket keeping its latest marker). */
#include "fleet_priv.h"

#include <string.h>
#include <time.h>

/* ---- the local copy (f->lock held) ---- */

static size_t host_index(bh_fleet *f, const char *id, bool *found)
{
	size_t lo = 0, hi = f->n_hosts;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(f->hosts[mid].h.id, id);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct fleet_host_rec *fleet_host_find_locked(bh_fleet *f, const char *id)
{
	bool found;
	size_t i = host_index(f, id, &found);
	return found ? &f->hosts[i] : NULL;
}

bool fleet_host_gone_locked(bh_fleet *f, const struct fleet_host_rec *r, uint64_t now_ms)
{
	/* never sooner than three of the host's own heartbeats: a host set to
	 * beat slower than this reader's gone time is not gone between beats */
	uint64_t gone = f->gone_ms > 3ull * r->heartbeat_ms ? f->gone_ms : 3ull * r->heartbeat_ms;
	return r->left || now_ms - (uint64_t)r->h.seen_mono_ms >= gone;
}

static size_t entry_index(bh_fleet *f, const char *fp, bool *found)
{
	size_t lo = 0, hi = f->n_entries;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(f->entries[mid].fingerprint, fp);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return arr;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *p = realloc(arr, n * size);
	if (!p)
		abort();
	*cap = n;
	return p;
}

static void reject_locked(bh_fleet *f, const char *key, const char *why)
{
	f->rejected++;
	snprintf(f->last_error, sizeof f->last_error, "skipped %.100s: %.140s", key, why);
}

static void apply_host(bh_fleet *f, const char *key, const char *id, kvEntry *e, bool del, uint64_t rev)
{
	bool found;
	size_t i = host_index(f, id, &found);
	if (found && rev <= f->hosts[i].revision)
		return; /* a replay of what is known */
	if (del) {
		if (found) {
			f->hosts[i].left = true;
			f->hosts[i].revision = rev;
		}
		return;
	}
	struct fleet_host_value v;
	char *why = NULL;
	if (fleet_host_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), id, &v, &why) < 0) {
		reject_locked(f, key, why);
		free(why);
		return; /* its last good heartbeat stays, and goes stale */
	}
	if (!found) {
		f->hosts = grow(f->hosts, &f->cap_hosts, f->n_hosts + 1, sizeof *f->hosts);
		memmove(&f->hosts[i + 1], &f->hosts[i], (f->n_hosts - i) * sizeof *f->hosts);
		f->n_hosts++;
	}
	struct fleet_host_rec *r = &f->hosts[i];
	memset(r, 0, sizeof *r);
	r->h = v.h;
	r->h.seen_mono_ms = (int64_t)now_mono_ms();
	r->heartbeat_ms = v.heartbeat_ms;
	r->beat = v.beat;
	r->revision = rev;
	if (f->member && f->own_seen_mono_ms && !strcmp(id, f->host_id) && v.h.incarnation == f->incarnation)
		f->own_seen_mono_ms = now_mono_ms();
}

static void apply_entry(bh_fleet *f, const char *key, const char *fp, kvEntry *e, bool del, uint64_t rev)
{
	bool found;
	size_t i = entry_index(f, fp, &found);
	if (found && rev <= f->entries[i].revision)
		return;
	struct bh_fleet_entry en;
	char *why = NULL;
	if (!del && fleet_entry_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), fp, &en, &why) < 0) {
		reject_locked(f, key, why);
		free(why);
		del = true; /* the bucket no longer says what the old entry said: drop it */
	}
	if (del) {
		if (found) {
			memmove(&f->entries[i], &f->entries[i + 1], (f->n_entries - i - 1) * sizeof *f->entries);
			f->n_entries--;
		}
		return;
	}
	en.revision = rev;
	if (!found) {
		f->entries = grow(f->entries, &f->cap_entries, f->n_entries + 1, sizeof *f->entries);
		memmove(&f->entries[i + 1], &f->entries[i], (f->n_entries - i) * sizeof *f->entries);
		f->n_entries++;
	}
	f->entries[i] = en;
}

static void apply_drain(bh_fleet *f, const char *key, const char *id, kvEntry *e, bool del)
{
	bool drain = false;
	char *why = NULL;
	if (!del && fleet_drain_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), &drain, &why) < 0) {
		reject_locked(f, key, why);
		free(why);
		drain = false;
	}
	size_t i;
	for (i = 0; i < f->n_drains; i++)
		if (strcmp(f->drains[i], id) >= 0)
			break;
	bool found = i < f->n_drains && !strcmp(f->drains[i], id);
	if (drain && !found) {
		f->drains = grow(f->drains, &f->cap_drains, f->n_drains + 1, sizeof *f->drains);
		memmove(&f->drains[i + 1], &f->drains[i], (f->n_drains - i) * sizeof *f->drains);
		snprintf(f->drains[i], sizeof f->drains[i], "%s", id);
		f->n_drains++;
	} else if (!drain && found) {
		memmove(&f->drains[i], &f->drains[i + 1], (f->n_drains - i - 1) * sizeof *f->drains);
		f->n_drains--;
	}
}

/* The set of keys the watch delivered, a value or a delete marker each: with
 * history 1 the bucket holds one message per key, so a watch that is whole
 * knows as many keys as the bucket has messages. */
static uint64_t key_hash(const char *k)
{
	uint64_t h = 1469598103934665603ull;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ull;
	return h;
}

static void key_seen_locked(bh_fleet *f, const char *key)
{
	if (2 * (f->n_keys + 1) > f->cap_keys) {
		size_t cap = f->cap_keys ? f->cap_keys * 2 : 64;
		char **nk = xzalloc(cap * sizeof *nk);
		for (size_t i = 0; i < f->cap_keys; i++) {
			if (!f->keys[i])
				continue;
			size_t j = key_hash(f->keys[i]) & (cap - 1);
			while (nk[j])
				j = (j + 1) & (cap - 1);
			nk[j] = f->keys[i];
		}
		free(f->keys);
		f->keys = nk;
		f->cap_keys = cap;
	}
	size_t j = key_hash(key) & (f->cap_keys - 1);
	while (f->keys[j]) {
		if (!strcmp(f->keys[j], key))
			return;
		j = (j + 1) & (f->cap_keys - 1);
	}
	f->keys[j] = xstrdup(key);
	f->n_keys++;
}

void fleet_keys_free(bh_fleet *f)
{
	for (size_t i = 0; i < f->cap_keys; i++)
		free(f->keys[i]);
	free(f->keys);
	f->keys = NULL;
	f->n_keys = f->cap_keys = 0;
}

static void apply(bh_fleet *f, kvEntry *e)
{
	const char *key = kvEntry_Key(e);
	kvOperation op = kvEntry_Operation(e);
	bool del = op == kvOp_Delete || op == kvOp_Purge;
	uint64_t rev = kvEntry_Revision(e);
	char name[BH_FLEET_ID_MAX + 1];
	pthread_mutex_lock(&f->lock);
	if (rev > f->highest_rev)
		f->highest_rev = rev;
	if (key)
		key_seen_locked(f, key);
	switch (fleet_key_parse(key, name)) {
	case FLEET_KEY_HOST:
		apply_host(f, key, name, e, del, rev);
		break;
	case FLEET_KEY_SESSION:
		apply_entry(f, key, name, e, del, rev);
		break;
	case FLEET_KEY_DRAIN:
		apply_drain(f, key, name, e, del);
		break;
	case FLEET_KEY_BAD:
		if (!del)
			reject_locked(f, key ? key : "(no key)", "a key that is no host., session. or drain. key");
		break;
	}
	pthread_mutex_unlock(&f->lock);
}

/* ---- the thread ---- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static natsStatus watch_create(bh_fleet *f)
{
	kvWatchOptions wo;
	kvWatchOptions_Init(&wo);
	wo.Timeout = 2000;
	kvWatcher *w = NULL;
	natsStatus s = kvStore_WatchAll(&w, f->kv, &wo);
	if (s == NATS_OK) {
		pthread_mutex_lock(&f->lock);
		f->watcher = w;
		pthread_mutex_unlock(&f->lock);
	}
	return s;
}

static void watch_remake(bh_fleet *f, const char *why)
{
	pthread_mutex_lock(&f->lock);
	kvWatcher *old = f->watcher;
	f->watcher = NULL;
	bool stop = f->stopping;
	pthread_mutex_unlock(&f->lock);
	if (old) {
		kvWatcher_Stop(old);
		kvWatcher_Destroy(old);
	}
	if (stop)
		return;
	pthread_mutex_lock(&f->lock);
	bool say = now_mono_ms() - f->remake_logged_mono_ms >= 10000 || !f->remake_logged_mono_ms;
	if (say)
		f->remake_logged_mono_ms = now_mono_ms();
	snprintf(f->last_error, sizeof f->last_error, "the bucket's watch is remade (%s)", why);
	pthread_mutex_unlock(&f->lock);
	if (say)
		fleet_log(f, BH_LOG_WARN, "fleet: the bucket's watch is remade (%s)", why);
	while (!stop) {
		natsStatus s = watch_create(f);
		if (s == NATS_OK)
			break;
		sleep_ms(500);
		pthread_mutex_lock(&f->lock);
		stop = f->stopping;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_lock(&f->lock);
	if (f->own_seen_mono_ms)
		f->own_seen_mono_ms = now_mono_ms(); /* the new watch is given its own time */
	pthread_mutex_unlock(&f->lock);
}

/* The bucket's last sequence now (0 when it cannot be read) and how many
 * messages it holds. */
static uint64_t bucket_last_seq(bh_fleet *f, uint64_t *msgs)
{
	char stream[96];
	snprintf(stream, sizeof stream, "KV_%s", f->bucket);
	jsStreamInfo *si = NULL;
	*msgs = 0;
	if (js_GetStreamInfo(&si, f->js, stream, NULL, NULL) != NATS_OK || !si)
		return 0;
	uint64_t last = si->State.LastSeq;
	*msgs = si->State.Msgs;
	jsStreamInfo_Destroy(si);
	return last;
}

static void *watch_main(void *arg)
{
	bh_fleet *f = arg;
	/* A watch can fall silent without an error (its consumer's server cut
	 * off, then caught up by a snapshot): every FLEET_RESYNC_MS the
	 * bucket's last sequence is read, and a watch that has not delivered
	 * up to the one read the time before is remade. */
	uint64_t next_check = now_mono_ms() + FLEET_RESYNC_MS, expect = 0;
	bool outage = false;
	uint64_t expect_msgs = 0;
	for (;;) {
		pthread_mutex_lock(&f->lock);
		kvWatcher *w = f->watcher;
		bool stop = f->stopping;
		uint64_t now = now_mono_ms();
		/* forwards past their deadline are answered even when the caller waits on the fd alone */
		struct fleet_pending *p;
		for (p = f->pending; p; p = p->next)
			if (p->deadline_mono_ms <= now)
				break;
		if (p)
			fleet_wake_locked(f);
		fleet_resend_locked(f, now);
		/* its heartbeats are acknowledged by the bucket, yet none came back */
		bool stale = f->member && f->own_seen_mono_ms &&
			     f->own_written_mono_ms > f->own_seen_mono_ms + f->gone_ms + f->heartbeat_ms;
		bool suspect = f->watch_suspect, resync = f->resync;
		f->watch_suspect = f->resync = false;
		uint64_t highest = f->highest_rev;
		pthread_mutex_unlock(&f->lock);
		if (stop)
			break;
		const char *remake = !w ? "it was lost"
				     : stale ? "its own heartbeats stopped coming back"
				     : suspect ? "its server's heartbeats were missed"
				     : resync	 ? "the bucket takes this host's heartbeats again after an outage"
						 : NULL;
		if (!remake && now >= next_check) {
			pthread_mutex_lock(&f->lock);
			size_t known = f->n_keys;
			pthread_mutex_unlock(&f->lock);
			if (expect && highest < expect)
				remake = "it fell behind the bucket";
			else if (expect && known < expect_msgs)
				remake = "it missed keys the bucket holds";
			else if (expect) {
				pthread_mutex_lock(&f->lock);
				f->fresh_mono_ms = now_mono_ms();
				pthread_mutex_unlock(&f->lock);
			}
			uint64_t msgs = 0;
			uint64_t last = bucket_last_seq(f, &msgs);
			expect_msgs = msgs;
			/* After an outage of the bucket as seen from here (this
			 * server cut off from the others, or no leader), the watch
			 * is read afresh: a consumer caught up by a snapshot may
			 * have skipped what others wrote meanwhile. */
			if (last && outage)
				remake = "the bucket answers again after an outage";
			outage = !last;
			expect = last;
			next_check = now_mono_ms() + FLEET_RESYNC_MS;
		}
		if (remake) {
			watch_remake(f, remake);
			expect = 0;
			next_check = now_mono_ms() + FLEET_RESYNC_MS;
			continue;
		}
		kvEntry *e = NULL;
		natsStatus s = kvWatcher_Next(&e, w, 50); /* the resends' and deadlines' tick */
		if (s == NATS_TIMEOUT)
			continue;
		if (s != NATS_OK) {
			pthread_mutex_lock(&f->lock);
			stop = f->stopping;
			pthread_mutex_unlock(&f->lock);
			if (stop)
				break;
			watch_remake(f, fleet_nats_why(s));
			continue;
		}
		if (!e) {
			pthread_mutex_lock(&f->lock);
			f->initial_done = true;
			f->fresh_mono_ms = now_mono_ms();
			pthread_cond_broadcast(&f->watch_cond);
			pthread_mutex_unlock(&f->lock);
			continue;
		}
		apply(f, e);
		kvEntry_Destroy(e);
	}
	return NULL;
}

int fleet_watch_start(bh_fleet *f, uint32_t timeout_ms, char **why)
{
	uint64_t until = now_mono_ms() + timeout_ms;
	natsStatus s;
	/* a busy cluster (a consumer being placed) may take a while: retried to the deadline */
	while ((s = watch_create(f)) != NATS_OK && now_mono_ms() < until)
		sleep_ms(250);
	if (s != NATS_OK)
		return why_set(why, "cannot watch the fleet's bucket %s: %s", f->bucket, fleet_nats_why(s));
	int r = pthread_create(&f->watch_thread, NULL, watch_main, f);
	if (r)
		return why_errno(why, r, "the fleet's watch thread");
	f->watch_started = true;
	/* The readers answer from the whole bucket from the start. */
	until = now_mono_ms() + timeout_ms;
	pthread_mutex_lock(&f->lock);
	while (!f->initial_done && now_mono_ms() < until) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->watch_cond, &f->lock, &ts);
	}
	bool done = f->initial_done;
	pthread_mutex_unlock(&f->lock);
	if (!done)
		return why_set(why, "the fleet's bucket %s was not read whole in %u ms", f->bucket, timeout_ms);
	return 0;
}

void fleet_watch_stop(bh_fleet *f)
{
	/* Stopped under the lock: the thread swaps a failed watcher under it. */
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	kvWatcher *w = f->watcher;
	if (w)
		kvWatcher_Stop(w);
	pthread_mutex_unlock(&f->lock);
	if (f->watch_started)
		pthread_join(f->watch_thread, NULL);
	f->watch_started = false;
	pthread_mutex_lock(&f->lock);
	w = f->watcher;
	f->watcher = NULL;
	pthread_mutex_unlock(&f->lock);
	if (w)
		kvWatcher_Destroy(w);
}
