/* The writer thread: every bucket write, in the order queued, and a
 * member's heartbeat (host.<id> put every heartbeat_ms). A write that fails
 * while the bucket elects a leader (a NATS node lost) is retried for
 * FLEET_WRITE_RETRY_MS before its callback hears why; a claim is a
 * compare-and-swap on the revision its claimer saw, so of two claimers
 * exactly one wins, and a retried claim whose first try did land (its
 * acknowledgement lost) is recognised as won by its value. */
#include "fleet_priv.h"

#include <string.h>
#include <time.h>

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static bool stopping(bh_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	bool s = f->stopping;
	pthread_mutex_unlock(&f->lock);
	return s;
}

char *fleet_my_host_value(bh_fleet *f)
{
	struct fleet_host_value v = {.h = f->me};
	snprintf(v.h.id, sizeof v.h.id, "%s", f->host_id);
	v.h.incarnation = f->incarnation;
	v.h.started_unix_ms = f->started_unix_ms;
	v.h.heartbeat_unix_ms = (int64_t)now_real_ms();
	v.heartbeat_ms = f->heartbeat_ms;
	v.beat = ++f->beat;
	return fleet_host_encode(&v);
}

static bool retry_due(bh_fleet *f, uint64_t until)
{
	if (stopping(f) || now_mono_ms() >= until)
		return false;
	sleep_ms(200);
	return true;
}

natsStatus fleet_put_in(bh_fleet *f, kvStore *kv, const char *key, const char *value, uint64_t *rev)
{
	uint64_t until = now_mono_ms() + FLEET_WRITE_RETRY_MS;
	natsStatus s;
	do
		s = kvStore_Put(rev, kv, key, value, (int)strlen(value));
	while (s != NATS_OK && s != NATS_INVALID_ARG && retry_due(f, until));
	return s;
}

natsStatus fleet_put(bh_fleet *f, const char *key, const char *value, uint64_t *rev)
{
	return fleet_put_in(f, f->kv, key, value, rev);
}

static natsStatus delete_key(bh_fleet *f, const char *key)
{
	uint64_t until = now_mono_ms() + FLEET_WRITE_RETRY_MS;
	natsStatus s;
	do
		s = kvStore_Delete(f->kv, key);
	while (s != NATS_OK && s != NATS_INVALID_ARG && retry_due(f, until));
	return s;
}

/* Who holds the entry now, for a lost claim's why. */
static void claim_lost_why(bh_fleet *f, const char *key, const char *mine, char **why)
{
	kvEntry *e = NULL;
	if (kvStore_Get(&e, f->kv, key) != NATS_OK || !e) {
		why_set(why, "the entry changed since it was seen (it is gone now)");
		return;
	}
	struct bh_fleet_entry cur;
	char *derr = NULL;
	if (kvEntry_ValueLen(e) == (int)strlen(mine) && !memcmp(kvEntry_Value(e), mine, strlen(mine))) {
		kvEntry_Destroy(e);
		return; /* ours: an earlier try landed */
	}
	const char *fp = strchr(key, '.') + 1;
	if (fleet_entry_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), fp, &cur, &derr) == 0)
		why_set(why, "host %s's claim came first (revision %llu)", cur.host,
			(unsigned long long)kvEntry_Revision(e));
	else
		why_set(why, "the entry changed since it was seen (to a value that does not check: %s)", derr);
	free(derr);
	kvEntry_Destroy(e);
}

/* The first of the claims under prefix ("c.<fp>.<rev>." or
 * "h.<id>.<rev>.") in the stream's order: its revision, and its name (the
 * part after the prefix) in first. Only claims made within
 * FLEET_CLAIM_WINDOW_MS before mine count (by the servers' clock, which
 * stamps both): a claimer that died between its claim and its write blocks
 * the others that long, not for ever. 0 when the claims cannot be read
 * whole, or mine is not among them. */
uint64_t fleet_first_claim(bh_fleet *f, const char *prefix, uint64_t mine, char first[BH_FLEET_ID_MAX + 1])
{
	char filter[256];
	snprintf(filter, sizeof filter, "%s>", prefix);
	size_t plen = strlen(prefix);
	kvWatchOptions wo;
	kvWatchOptions_Init(&wo);
	wo.Timeout = 5000;
	kvWatcher *w = NULL;
	if (kvStore_Watch(&w, f->claims, filter, &wo) != NATS_OK)
		return 0;
	struct seen_claim {
		uint64_t rev;
		int64_t created;
		char name[BH_FLEET_ID_MAX + 1];
	} claims[64];
	size_t n = 0;
	bool whole = false;
	uint64_t until = now_mono_ms() + 5000;
	for (;;) {
		kvEntry *e = NULL;
		natsStatus s = kvWatcher_Next(&e, w, 1000);
		if (s == NATS_TIMEOUT && now_mono_ms() < until)
			continue;
		if (s != NATS_OK)
			break;
		if (!e) {
			whole = true; /* every claim there is */
			break;
		}
		const char *key = kvEntry_Key(e);
		if (kvEntry_Operation(e) == kvOp_Put && strlen(key) > plen && fleet_id_ok(key + plen) &&
		    n < ARRAY_SIZE(claims)) {
			claims[n].rev = kvEntry_Revision(e);
			claims[n].created = kvEntry_Created(e);
			snprintf(claims[n].name, sizeof claims[n].name, "%s", key + plen);
			n++;
		}
		kvEntry_Destroy(e);
	}
	kvWatcher_Stop(w);
	kvWatcher_Destroy(w);
	int64_t my_created = -1;
	for (size_t i = 0; i < n; i++)
		if (claims[i].rev == mine)
			my_created = claims[i].created;
	if (!whole || my_created < 0)
		return 0;
	uint64_t lowest = 0;
	int64_t window_ns = (int64_t)FLEET_CLAIM_WINDOW_MS * 1000000;
	for (size_t i = 0; i < n; i++)
		if (claims[i].created >= my_created - window_ns && (!lowest || claims[i].rev < lowest)) {
			lowest = claims[i].rev;
			snprintf(first, BH_FLEET_ID_MAX + 1, "%s", claims[i].name);
		}
	return lowest;
}

/* A claim in two steps, because a compare-and-swap alone is not enough:
 * nats-server before 2.9.21 checks a clustered stream's expected last
 * subject sequence before the write's consensus, not in it, so two
 * concurrent updates from one revision can both be accepted
 * (nats-server#4320). So each claimer first appends its claim to the
 * claims bucket (c.<fp>.<seen revision>.<host>) and reads every claim of
 * that revision: the stream orders them, and only the first goes on, to
 * the compare-and-swap of the entry itself (which still refuses when the
 * entry changed since it was seen). Of two claimers at most one writes the
 * entry; exactly one wins unless the entry changed under both. */
static void run_claim(bh_fleet *f, struct fleet_job *job, bool *won, char **why)
{
	*won = false;
	const char *fp = job->key + strlen("session.");
	char ckey[220];
	snprintf(ckey, sizeof ckey, "c.%s.%llu.%s", fp, (unsigned long long)job->last, f->host_id);
	uint64_t mine = 0;
	natsStatus s = fleet_put_in(f, f->claims, ckey, "{\"v\":1}", &mine);
	if (s != NATS_OK) {
		why_set(why, "the claim could not be written: %s", fleet_nats_why(s));
		return;
	}
	char first[BH_FLEET_ID_MAX + 1] = "", prefix[200];
	snprintf(prefix, sizeof prefix, "c.%s.%llu.", fp, (unsigned long long)job->last);
	uint64_t lowest, until_read = now_mono_ms() + FLEET_WRITE_RETRY_MS;
	while (!(lowest = fleet_first_claim(f, prefix, mine, first)) && retry_due(f, until_read))
		;
	if (!lowest) {
		why_set(why, "the claims could not be read back");
		return;
	}
	if (lowest != mine || strcmp(first, f->host_id)) {
		why_set(why, "host %s's claim came first", first);
		return;
	}
	uint64_t until = now_mono_ms() + FLEET_WRITE_RETRY_MS;
	bool tried = false;
	for (;;) {
		s = kvStore_Update(NULL, f->kv, job->key, job->value, (int)strlen(job->value), job->last);
		if (s == NATS_OK) {
			*won = true;
			return;
		}
		const char *text = fleet_nats_why(s);
		if (strstr(text, "wrong last sequence") || strstr(text, "10071")) {
			claim_lost_why(f, job->key, job->value, why);
			/* lost unless it was our own earlier try that landed */
			*won = tried && !*why;
			if (!*won && !*why)
				why_set(why, "the entry changed since it was seen");
			return;
		}
		tried = true;
		if (!retry_due(f, until)) {
			why_set(why, "the claim could not be written: %s", text);
			return;
		}
	}
}

static void run_job(bh_fleet *f, struct fleet_job *job, bool give_up)
{
	struct fleet_event *ev = xzalloc(sizeof *ev);
	ev->arg = job->arg;
	natsStatus s = NATS_OK;
	if (give_up) {
		/* closing, and past its bound: not tried (nobody hears; counted in the log) */
		fleet_log(f, BH_LOG_WARN, "fleet: %s was not written: the fleet closed first", job->key);
		pthread_mutex_lock(&f->lock);
		f->jobs_queued--;
		pthread_mutex_unlock(&f->lock);
		free(ev);
		return;
	}
	switch (job->kind) {
	case JOB_PUT:
		s = fleet_put(f, job->key, job->value, NULL);
		break;
	case JOB_DELETE:
		s = delete_key(f, job->key);
		break;
	case JOB_CLAIM:
		ev->kind = EV_CLAIM;
		ev->claim = job->claim;
		run_claim(f, job, &ev->won, &ev->why);
		break;
	}
	if (job->kind != JOB_CLAIM) {
		ev->kind = EV_DONE;
		ev->done = job->done;
		if (s != NATS_OK) {
			ev->why = xasprintf("the fleet bucket's %s of %s failed: %s",
					    job->kind == JOB_PUT ? "write" : "delete", job->key, fleet_nats_why(s));
			fleet_set_error(f, "%s", ev->why);
		}
	}
	pthread_mutex_lock(&f->lock);
	if (ev->done || ev->claim)
		fleet_queue_event_locked(f, ev);
	else {
		free(ev->why);
		free(ev);
	}
	f->jobs_queued--;
	pthread_mutex_unlock(&f->lock);
}

static void heartbeat(bh_fleet *f)
{
	char key[160];
	fleet_key(key, sizeof key, "host.", f->host_id);
	pthread_mutex_lock(&f->lock);
	cleanup_free char *value = fleet_my_host_value(f);
	pthread_mutex_unlock(&f->lock);
	/* One try: the next heartbeat is the retry. */
	natsStatus s = kvStore_Put(NULL, f->kv, key, value, (int)strlen(value));
	if (s != NATS_OK) {
		pthread_mutex_lock(&f->lock);
		f->write_outage = true;
		pthread_mutex_unlock(&f->lock);
		fleet_set_error(f, "the heartbeat could not be written: %s", fleet_nats_why(s));
		return;
	}
	pthread_mutex_lock(&f->lock);
	f->own_written_mono_ms = now_mono_ms();
	/* The bucket takes writes again after it did not: what others wrote
	 * meanwhile may have reached this server by a snapshot its watch's
	 * consumer skipped, so the watch is read afresh. */
	if (f->write_outage)
		f->resync = true;
	f->write_outage = false;
	pthread_mutex_unlock(&f->lock);
}

static void *writer_main(void *arg)
{
	bh_fleet *f = arg;
	uint64_t next_beat = now_mono_ms() + f->heartbeat_ms;
	/* At close what is queued is written, within a bound: a fleet closing
	 * while NATS is away does not hold its caller a write timeout per write. */
	uint64_t stop_until = UINT64_MAX;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		uint64_t now = now_mono_ms();
		if (f->stopping && stop_until == UINT64_MAX) /* none at all when NATS is away */
			stop_until = natsConnection_Status(f->nc) == NATS_CONN_STATUS_CONNECTED ? now + FLEET_CLOSE_WRITES_MS
												 : now;
		if (f->member && !f->stopping && now >= next_beat) {
			pthread_mutex_unlock(&f->lock);
			heartbeat(f);
			next_beat = now + f->heartbeat_ms;
			pthread_mutex_lock(&f->lock);
			continue;
		}
		if (f->job_head) {
			struct fleet_job *job = f->job_head;
			f->job_head = job->next;
			if (!f->job_head)
				f->job_tail = &f->job_head;
			bool give_up = f->stopping && now_mono_ms() > stop_until;
			pthread_mutex_unlock(&f->lock);
			run_job(f, job, give_up);
			free(job->value);
			free(job);
			pthread_mutex_lock(&f->lock);
			continue;
		}
		if (f->stopping)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t wait = f->member ? next_beat - now : 1000;
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->writer_cond, &f->lock, &ts);
	}
	pthread_mutex_unlock(&f->lock);
	/* A clean leave: the others see this host gone at once (NATS away: they
	 * see it gone after gone_ms, as nothing can tell them sooner). */
	if (f->member && natsConnection_Status(f->nc) == NATS_CONN_STATUS_CONNECTED) {
		char key[160];
		fleet_key(key, sizeof key, "host.", f->host_id);
		natsStatus s = kvStore_Delete(f->kv, key);
		if (s != NATS_OK)
			fleet_log(f, BH_LOG_WARN, "fleet: could not delete %s at close: %s", key, fleet_nats_why(s));
	}
	return NULL;
}

int fleet_writer_start(bh_fleet *f, char **why)
{
	int r = pthread_create(&f->writer_thread, NULL, writer_main, f);
	if (r)
		return why_errno(why, r, "the fleet's writer thread");
	f->writer_started = true;
	pthread_mutex_lock(&f->lock);
	f->own_seen_mono_ms = now_mono_ms(); /* from now on its heartbeats must come back */
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void fleet_writer_stop(bh_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_cond_broadcast(&f->writer_cond);
	pthread_cond_broadcast(&f->sender_cond);
	pthread_mutex_unlock(&f->lock);
	if (f->writer_started)
		pthread_join(f->writer_thread, NULL);
	f->writer_started = false;
	/* jobs queued after the thread ended (none should be) are dropped */
	for (struct fleet_job *j = f->job_head, *next; j; j = next) {
		next = j->next;
		free(j->value);
		free(j);
	}
	f->job_head = NULL;
	f->job_tail = &f->job_head;
}

void fleet_queue_job(bh_fleet *f, struct fleet_job *job)
{
	pthread_mutex_lock(&f->lock);
	job->next = NULL;
	*f->job_tail = job;
	f->job_tail = &job->next;
	f->jobs_queued++;
	pthread_cond_signal(&f->writer_cond);
	pthread_mutex_unlock(&f->lock);
}
