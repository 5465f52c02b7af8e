/* libbulkhead-fleet (include/bulkhead/fleet.h): open and close, the
 * caller's queue of callbacks, status. The threads and what each owns are
 * described in fleet_priv.h. */
#include "fleet_priv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---- */

void fleet_key(char *out, size_t outlen, const char *prefix, const char *name)
{
	snprintf(out, outlen, "%s%s", prefix, name);
}

const char *fleet_nats_why(natsStatus s)
{
	static __thread char buf[512];
	natsStatus st;
	const char *last = nats_GetLastError(&st);
	if (last && *last && st == s)
		snprintf(buf, sizeof buf, "%s", last);
	else
		snprintf(buf, sizeof buf, "%s", natsStatus_GetText(s));
	return buf;
}

void fleet_wake_locked(bh_fleet *f)
{
	if (f->woken)
		return;
	f->woken = true;
	uint64_t one = 1;
	ssize_t n = write(f->efd, &one, sizeof one);
	(void)n; /* an eventfd at its limit is readable anyway */
}

void fleet_queue_event_locked(bh_fleet *f, struct fleet_event *ev)
{
	ev->next = NULL;
	*f->ev_tail = ev;
	f->ev_tail = &ev->next;
	fleet_wake_locked(f);
}

/* Logs go through the caller's queue too: the caller's log function is
 * never run on a thread of ours or libnats's. */
void fleet_log(bh_fleet *f, enum bh_log_level level, const char *fmt, ...)
{
	if (!f->log)
		return;
	struct fleet_event *ev = xzalloc(sizeof *ev);
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&ev->why, fmt, ap) < 0)
		abort();
	va_end(ap);
	ev->kind = EV_LOG;
	ev->level = level;
	pthread_mutex_lock(&f->lock);
	fleet_queue_event_locked(f, ev);
	pthread_mutex_unlock(&f->lock);
}

void fleet_set_error(bh_fleet *f, const char *fmt, ...)
{
	char msg[sizeof f->last_error];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&f->lock);
	snprintf(f->last_error, sizeof f->last_error, "%s", msg);
	pthread_mutex_unlock(&f->lock);
	fleet_log(f, BH_LOG_WARN, "fleet: %s", msg);
}

/* ---- connection events (libnats's thread) ---- */

static void on_disconnected(natsConnection *nc, void *arg)
{
	fleet_set_error(arg, "disconnected from the NATS server; reconnecting");
}

static void on_reconnected(natsConnection *nc, void *arg)
{
	char url[256] = "";
	natsConnection_GetConnectedUrl(nc, url, sizeof url);
	fleet_log(arg, BH_LOG_INFO, "fleet: reconnected to %s", url);
}

static void on_closed(natsConnection *nc, void *arg)
{
	bh_fleet *f = arg;
	pthread_mutex_lock(&f->lock);
	f->closed_cb_done = true;
	pthread_cond_broadcast(&f->watch_cond);
	pthread_mutex_unlock(&f->lock);
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *arg)
{
	bh_fleet *f = arg;
	if (err == NATS_MISSED_HEARTBEAT) {
		/* the watch's consumer may be lost (its server cut off or dead) */
		pthread_mutex_lock(&f->lock);
		f->watch_suspect = true;
		pthread_mutex_unlock(&f->lock);
	}
	fleet_set_error(f, "NATS: %s", natsStatus_GetText(err));
}

/* ---- open ---- */

static int parse_servers(const char *list, char ***out, int *n, char **why)
{
	cleanup_free char *copy = xstrdup(list);
	char **urls = NULL;
	int count = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		size_t len = strlen(tok);
		while (len && tok[len - 1] == ' ')
			tok[--len] = '\0';
		if (!len)
			continue;
		bool ok = len < 240;
		for (size_t i = 0; ok && i < len; i++)
			ok = tok[i] > 0x20 && tok[i] < 0x7f;
		if (!ok) {
			for (int i = 0; i < count; i++)
				free(urls[i]);
			free(urls);
			return why_set(why, "the fleet's server list has an entry that is no URL");
		}
		urls = realloc(urls, sizeof *urls * (size_t)(count + 1));
		if (!urls)
			abort();
		urls[count++] = strstr(tok, "://") ? xstrdup(tok) : xasprintf("nats://%s", tok);
	}
	if (!count)
		return why_set(why, "the fleet names no NATS server");
	*out = urls;
	*n = count;
	return 0;
}

static bool bucket_name_ok(const char *b)
{
	size_t n = strlen(b);
	if (n == 0 || n > 56) /* and "_claims" */
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') || (b[i] >= '0' && b[i] <= '9') ||
		      b[i] == '_' || b[i] == '-'))
			return false;
	return true;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A bucket, bound or created (JetStream may still be electing its leader
 * right after the servers start: retried until the deadline). Replicas:
 * the configured number, or 3 stepping down to what the cluster has (a
 * client may name one server of three: the cluster, not the list, says how
 * many replicas fit). */
static int open_one(bh_fleet *f, kvStore **kv, const char *name, const char *description, int replicas,
		    int64_t ttl_ns, uint64_t deadline, char **why)
{
	natsStatus s;
	bool step_down = replicas == 0;
	int r = replicas ? replicas : 3;
	for (;;) {
		s = js_KeyValue(kv, f->js, name);
		if (s == NATS_OK)
			return 0;
		if (s == NATS_NOT_FOUND) {
			kvConfig kc;
			kvConfig_Init(&kc);
			kc.Bucket = name;
			kc.Description = description;
			kc.History = 1;
			kc.Replicas = r;
			kc.StorageType = js_FileStorage;
			kc.MaxValueSize = FLEET_VALUE_MAX;
			kc.TTL = ttl_ns;
			s = js_CreateKeyValue(kv, f->js, &kc);
			if (s == NATS_OK)
				return 0;
			const char *text = fleet_nats_why(s);
			if (step_down && r > 1 && (strstr(text, "replicas") || strstr(text, "insufficient resources"))) {
				r--;
				continue;
			}
		}
		if (now_mono_ms() >= deadline)
			break;
		sleep_ms(250);
	}
	*kv = NULL;
	return why_set(why, "cannot open the fleet's bucket %s (JetStream enabled on the servers? -js): %s", name,
		       fleet_nats_why(s));
}

static int open_bucket(bh_fleet *f, int replicas, uint64_t deadline, char **why)
{
	char claims[80];
	snprintf(claims, sizeof claims, "%s_claims", f->bucket);
	if (open_one(f, &f->kv, f->bucket, "bulkhead fleet: hosts, the session directory, drains", replicas, 0,
		     deadline, why) < 0)
		return -1;
	return open_one(f, &f->claims, claims, "bulkhead fleet: the order of claims", replicas, FLEET_CLAIMS_TTL_NS,
			deadline, why);
}

/* The latest revision of key, its delete marker's included; 0: it never was. */
static uint64_t key_revision(bh_fleet *f, const char *key)
{
	kvEntryList list = {0};
	kvWatchOptions wo;
	kvWatchOptions_Init(&wo);
	wo.Timeout = 5000;
	if (kvStore_History(&list, f->kv, key, &wo) != NATS_OK)
		return 0;
	uint64_t rev = list.Count > 0 ? kvEntry_Revision(list.Entries[list.Count - 1]) : 0;
	kvEntryList_Destroy(&list);
	return rev;
}

/* Whether this incarnation's claim of the id at revision rev is the first
 * (the compare-and-swap of host.<id> alone cannot say: fleet_writer.c's
 * claims, nats-server#4320). */
static bool first_to_claim_id(bh_fleet *f, uint64_t rev)
{
	char prefix[200], key[240], inc[17], first[BH_FLEET_ID_MAX + 1] = "";
	snprintf(prefix, sizeof prefix, "h.%s.%llu.", f->host_id, (unsigned long long)rev);
	snprintf(inc, sizeof inc, "%016llx", (unsigned long long)f->incarnation);
	snprintf(key, sizeof key, "%s%s", prefix, inc);
	uint64_t mine = 0;
	if (fleet_put_in(f, f->claims, key, "{\"v\":1}", &mine) != NATS_OK)
		return false;
	return fleet_first_claim(f, prefix, mine, first) == mine && !strcmp(first, inc);
}

/* A member's id: refused when another incarnation heartbeats under it;
 * its key taken when absent, left, or stale for gone_ms. */
static int claim_host_id(bh_fleet *f, uint64_t deadline_extra, char **why)
{
	char key[160];
	fleet_key(key, sizeof key, "host.", f->host_id);
	uint64_t start = now_mono_ms();
	uint64_t rev0 = 0;
	bool had = false;
	for (;;) {
		pthread_mutex_lock(&f->lock);
		struct fleet_host_rec *r = fleet_host_find_locked(f, f->host_id);
		bool present = r && !r->left;
		/* the revision claimed: the record's, or its delete marker's (0: it never was) */
		uint64_t claim_rev = r ? r->revision : UINT64_MAX;
		uint64_t rev = present ? r->revision : 0, inc = present ? r->h.incarnation : 0;
		int64_t hb_unix = present ? r->h.heartbeat_unix_ms : 0;
		bool stale = present && fleet_host_gone_locked(f, r, now_mono_ms());
		cleanup_free char *value = fleet_my_host_value(f);
		pthread_mutex_unlock(&f->lock);
		if (present && had && rev != rev0)
			return why_set(why,
				       "the host id %s is live: another host heartbeats under it (incarnation %016llx, "
				       "its heartbeat %lld ms ago by its clock)",
				       f->host_id, (unsigned long long)inc, (long long)(now_real_ms() - hb_unix));
		if (claim_rev == UINT64_MAX)
			claim_rev = key_revision(f, key); /* a key deleted before this reader began */
		if ((!present || stale) && !first_to_claim_id(f, claim_rev)) {
			/* another start under this id claimed it first: look again */
			had = false;
			sleep_ms(100);
			continue;
		}
		if (!present || stale) {
			uint64_t newrev = 0;
			natsStatus s = present ? kvStore_Update(&newrev, f->kv, key, value, (int)strlen(value), rev)
					       : kvStore_Create(&newrev, f->kv, key, value, (int)strlen(value));
			if (s == NATS_OK)
				return 0;
			if (now_mono_ms() - start > f->gone_ms + deadline_extra)
				return why_set(why, "cannot take the host id %s: %s", f->host_id, fleet_nats_why(s));
			/* another host raced us to it, or the bucket is electing: look again */
			had = false;
			sleep_ms(100);
			continue;
		}
		if (!had) {
			had = true;
			rev0 = rev;
		}
		if (now_mono_ms() - start > 2ull * f->gone_ms + deadline_extra)
			return why_set(why, "the host id %s: its record neither changes nor goes stale", f->host_id);
		sleep_ms(50);
	}
}

static void free_fleet(bh_fleet *f)
{
	fleet_requests_free(f);
	if (f->call_sub)
		natsSubscription_Destroy(f->call_sub);
	if (f->inbox_sub)
		natsSubscription_Destroy(f->inbox_sub);
	if (f->kv)
		kvStore_Destroy(f->kv);
	if (f->claims)
		kvStore_Destroy(f->claims);
	if (f->js)
		jsCtx_Destroy(f->js);
	if (f->nc)
		natsConnection_Destroy(f->nc);
	for (struct fleet_event *ev = f->ev_head, *next; ev; ev = next) {
		next = ev->next;
		if (ev->msg)
			natsMsg_Destroy(ev->msg);
		free(ev->why);
		free(ev);
	}
	for (struct fleet_pending *p = f->pending, *next; p; p = next) {
		next = p->next;
		if (p->msg)
			natsMsg_Destroy(p->msg);
		free(p);
	}
	if (f->efd >= 0)
		close(f->efd);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->writer_cond);
	pthread_cond_destroy(&f->sender_cond);
	pthread_cond_destroy(&f->watch_cond);
	fleet_keys_free(f);
	free(f->hosts);
	free(f->entries);
	free(f->drains);
	free(f->servers);
	free(f);
}

static void stop_all(bh_fleet *f);

int bh_fleet_open(const struct bh_fleet_config *cfg, bh_fleet **out, char **why)
{
	*out = NULL;
	if (!cfg || !cfg->servers || !*cfg->servers)
		return why_set(why, "the fleet names no NATS server");
	if (cfg->host_id && !fleet_id_ok(cfg->host_id))
		return why_set(why, "the host id must be 1 to %u of A-Z a-z 0-9 . _ - (not . or ..)", BH_FLEET_ID_MAX);
	const char *bucket = cfg->bucket ? cfg->bucket : BH_FLEET_BUCKET;
	if (!bucket_name_ok(bucket))
		return why_set(why, "the fleet bucket's name must be 1 to 56 of A-Z a-z 0-9 _ -");
	uint32_t hb = cfg->heartbeat_ms ? cfg->heartbeat_ms : BH_FLEET_HEARTBEAT_MS;
	uint32_t gone = cfg->gone_ms ? cfg->gone_ms : BH_FLEET_GONE_MS;
	if (hb < 50 || hb > 600000)
		return why_set(why, "the fleet heartbeat must be from 50 ms to 10 minutes");
	if (gone < 3ull * hb)
		return why_set(why, "the fleet's gone time (%u ms) must be at least 3 heartbeats (%u ms)", gone, 3 * hb);
	uint32_t ctimeout = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 5000;

	char **urls = NULL;
	int n_urls = 0;
	if (parse_servers(cfg->servers, &urls, &n_urls, why) < 0)
		return -1;

	bh_fleet *f = xzalloc(sizeof *f);
	f->efd = -1;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->writer_cond, NULL);
	pthread_cond_init(&f->sender_cond, NULL);
	pthread_cond_init(&f->watch_cond, NULL);
	f->ev_tail = &f->ev_head;
	f->job_tail = &f->job_head;
	f->send_tail = &f->send_head;
	f->servers = xstrdup(cfg->servers);
	f->member = cfg->host_id != NULL;
	snprintf(f->host_id, sizeof f->host_id, "%s", cfg->host_id ? cfg->host_id : "");
	snprintf(f->bucket, sizeof f->bucket, "%s", bucket);
	f->heartbeat_ms = hb;
	f->gone_ms = gone;
	f->log = cfg->log;
	f->log_arg = cfg->log_arg;
	f->started_unix_ms = (int64_t)now_real_ms();
	char inc[17];
	if (random_hex(8, inc) < 0)
		abort();
	f->incarnation = strtoull(inc, NULL, 16);
	f->me.best_tier = BH_TIER_UNKNOWN;
	f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (f->efd < 0) {
		why_errno(why, errno, "eventfd");
		goto fail_early;
	}

	natsOptions *opts = NULL;
	natsStatus s = natsOptions_Create(&opts);
	if (s == NATS_OK)
		s = natsOptions_SetServers(opts, (const char **)urls, n_urls);
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(opts, -1); /* for ever, across the servers named */
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(opts, 250);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectJitter(opts, 100, 1000);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(opts, ctimeout);
	if (s == NATS_OK)
		s = natsOptions_SetPingInterval(opts, 2000); /* a dead server noticed in seconds */
	if (s == NATS_OK)
		s = natsOptions_SetMaxPingsOut(opts, 2);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectBufSize(opts, 32 << 20);
	/* A forwarded call and its answer are each one message someone waits
	 * for: sent at once, not left to libnats's flusher, which sleeps a
	 * millisecond before each flush (two of those a forwarded call). */
	if (s == NATS_OK)
		s = natsOptions_SetSendAsap(opts, true);
	if (s == NATS_OK) {
		char name[128];
		snprintf(name, sizeof name, "bulkhead-fleet %s", f->member ? f->host_id : "(observer)");
		s = natsOptions_SetName(opts, name);
	}
	if (s == NATS_OK)
		s = natsOptions_SetDisconnectedCB(opts, on_disconnected, f);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectedCB(opts, on_reconnected, f);
	if (s == NATS_OK)
		s = natsOptions_SetClosedCB(opts, on_closed, f);
	if (s == NATS_OK)
		s = natsOptions_SetErrorHandler(opts, on_async_error, f);
	if (s == NATS_OK)
		s = natsConnection_Connect(&f->nc, opts);
	natsOptions_Destroy(opts);
	for (int i = 0; i < n_urls; i++)
		free(urls[i]);
	free(urls);
	urls = NULL;
	if (s != NATS_OK) {
		why_set(why, "cannot reach any NATS server of %s: %s", cfg->servers, fleet_nats_why(s));
		f->nc = NULL;
		goto fail_early;
	}
	uint64_t deadline = now_mono_ms() + ctimeout;
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = 2000;
	s = natsConnection_JetStream(&f->js, f->nc, &jo);
	if (s != NATS_OK) {
		why_set(why, "JetStream: %s", fleet_nats_why(s));
		goto fail;
	}
	int replicas = (int)cfg->replicas; /* 0: 3, or what the cluster has */
	if (open_bucket(f, replicas, deadline, why) < 0)
		goto fail;
	uint64_t left = deadline > now_mono_ms() ? deadline - now_mono_ms() : 1000;
	if (fleet_watch_start(f, (uint32_t)left, why) < 0 || fleet_forward_start(f, why) < 0)
		goto fail;
	if (f->member && claim_host_id(f, ctimeout, why) < 0)
		goto fail;
	if (fleet_writer_start(f, why) < 0)
		goto fail;
	int64_t max = natsConnection_GetMaxPayload(f->nc);
	if (max > 0 && max < FLEET_MAX_PAYLOAD_NEEDED)
		fleet_log(f, BH_LOG_WARN,
			  "fleet: the NATS server's max_payload is %lld bytes: a forwarded call or answer larger "
			  "is refused (run nats-server with max_payload of at least %u: bulkhead's bodies go to 8 MiB)",
			  (long long)max, FLEET_MAX_PAYLOAD_NEEDED);
	*out = f;
	return 0;
fail:
	stop_all(f);
	free_fleet(f);
	return -1;
fail_early:
	for (int i = 0; urls && i < n_urls; i++)
		free(urls[i]);
	free(urls);
	free_fleet(f);
	return -1;
}

/* ---- close ---- */

static void stop_all(bh_fleet *f)
{
	fleet_watch_stop(f);
	fleet_writer_stop(f);
	fleet_forward_stop(f);
	if (!f->nc)
		return;
	if (natsConnection_Status(f->nc) == NATS_CONN_STATUS_CONNECTED)
		natsConnection_FlushTimeout(f->nc, 1000); /* the answers sent reach the server */
	natsConnection_Close(f->nc);
	/* No callback of libnats's may run once f is freed: wait for the
	 * closed callback and every subscription's completion. */
	pthread_mutex_lock(&f->lock);
	uint64_t until = now_mono_ms() + 5000;
	while ((!f->closed_cb_done || f->subs_open) && now_mono_ms() < until) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&f->watch_cond, &f->lock, &ts);
	}
	pthread_mutex_unlock(&f->lock);
}

void bh_fleet_close(bh_fleet *f)
{
	if (!f)
		return;
	stop_all(f);
	free_fleet(f);
}

/* ---- the caller's loop ---- */

int bh_fleet_fd(bh_fleet *f)
{
	return f->efd;
}

int bh_fleet_timeout_ms(bh_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	uint64_t nearest = 0;
	for (struct fleet_pending *p = f->pending; p; p = p->next)
		if (!nearest || p->deadline_mono_ms < nearest)
			nearest = p->deadline_mono_ms;
	pthread_mutex_unlock(&f->lock);
	if (!nearest)
		return -1;
	uint64_t now = now_mono_ms();
	return nearest <= now ? 0 : (int)(nearest - now);
}

void bh_fleet_process(bh_fleet *f)
{
	uint64_t v;
	ssize_t n = read(f->efd, &v, sizeof v);
	(void)n;
	pthread_mutex_lock(&f->lock);
	f->woken = false;
	fleet_expire_locked(f, now_mono_ms());
	struct fleet_event *ev = f->ev_head;
	f->ev_head = NULL;
	f->ev_tail = &f->ev_head;
	f->woken = false;
	pthread_mutex_unlock(&f->lock);
	while (ev) {
		struct fleet_event *next = ev->next;
		switch (ev->kind) {
		case EV_DONE:
			if (ev->done)
				ev->done(ev->arg, ev->why);
			break;
		case EV_CLAIM:
			if (ev->claim)
				ev->claim(ev->arg, ev->won, ev->why);
			break;
		case EV_ANSWER:
			fleet_run_answer(f, ev);
			break;
		case EV_REQUEST:
			fleet_run_request(f, ev);
			break;
		case EV_LOG:
			if (f->log)
				f->log(f->log_arg, ev->level, ev->why);
			break;
		}
		if (ev->msg)
			natsMsg_Destroy(ev->msg);
		free(ev->why);
		free(ev);
		ev = next;
	}
}

const char *bh_fleet_host_id(const bh_fleet *f)
{
	return f->member ? f->host_id : NULL;
}

void bh_fleet_get_status(bh_fleet *f, struct bh_fleet_status *out)
{
	memset(out, 0, sizeof *out);
	out->connected = natsConnection_Status(f->nc) == NATS_CONN_STATUS_CONNECTED;
	if (out->connected)
		natsConnection_GetConnectedUrl(f->nc, out->server, sizeof out->server);
	natsStatistics *st = NULL;
	if (natsStatistics_Create(&st) == NATS_OK) {
		uint64_t reconnects = 0;
		if (natsConnection_GetStats(f->nc, st) == NATS_OK)
			natsStatistics_GetCounts(st, NULL, NULL, NULL, NULL, &reconnects);
		out->reconnects = reconnects;
		natsStatistics_Destroy(st);
	}
	pthread_mutex_lock(&f->lock);
	uint64_t seen = f->fresh_mono_ms > f->own_seen_mono_ms ? f->fresh_mono_ms : f->own_seen_mono_ms;
	uint64_t window = f->gone_ms > 3 * FLEET_RESYNC_MS ? f->gone_ms : 3 * FLEET_RESYNC_MS;
	out->fresh = out->connected && seen && now_mono_ms() - seen < window;
	/* a member's copy is current only while the bucket takes its heartbeats
	 * (a server cut off from the others may still answer reads a while) */
	if (f->member)
		out->fresh = out->fresh && f->own_written_mono_ms && now_mono_ms() - f->own_written_mono_ms < window;
	out->rejected = f->rejected;
	out->id_taken = f->id_taken;
	out->queued = f->jobs_queued;
	snprintf(out->last_error, sizeof out->last_error, "%s", f->last_error);
	pthread_mutex_unlock(&f->lock);
}
