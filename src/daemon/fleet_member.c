/* serve --fleet: this daemon as one host of a fleet on NATS. It joins at
 * start (or refuses to start), publishes its capacity as the loop turns,
 * keeps the session directory's entries of its own sessions current
 * (following the engine: LIVE while a session is awake, HIBERNATED with
 * what adopting it takes, deleted once it ended), logs hosts joining and
 * going, and drains when an operator asks. Routing (fleet_route.c) and the
 * calls other hosts forward here (fleet_serve.c) share its state. */
#include "daemon_priv.h"
#include "daemon_fleet.h"
#include "why.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TICK_MS 200u           /* capacity and the directory at most this often */
#define RESTART_SWEEP_MS 1u /* at the first tick: bh_fleet_open read the whole bucket */

static void fleet_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (!strncmp(msg, "fleet: ", 7)) /* the component says so already */
		msg += 7;
	if (level >= BH_LOG_INFO)
		daemon_log(level, "fleet", "%s", msg);
}

/* Where consoles reach this host: --advertise, else the TCP listener, else
 * the socket (absolute). */
static void api_of(const struct server *s, char *out, size_t n)
{
	const struct bh_daemon_config *cfg = s->cfg;
	if (cfg->fleet.advertise) {
		snprintf(out, n, "%s", cfg->fleet.advertise);
	} else if (s->n_ls > 1) {
		char host[256];
		snprintf(host, sizeof host, "%s", cfg->listen);
		char *colon = strrchr(host, ':');
		if (colon && host[0] != '[')
			*colon = '\0';
		else if (host[0] == '[' && strchr(host, ']'))
			strchr(host, ']')[1] = '\0';
		snprintf(out, n, "%s://%.200s:%d", s->tls ? "https" : "http", host, s->ls[1].port);
	} else if (s->socket_path[0] == '/') {
		snprintf(out, n, "%s", s->socket_path);
	} else {
		char cwd[4096];
		if (!getcwd(cwd, sizeof cwd))
			cwd[0] = '\0';
		snprintf(out, n, "%.120s/%.120s", cwd, s->socket_path);
	}
}

int daemon_fleet_start(struct server *s, char **why)
{
	const struct bh_daemon_config *cfg = s->cfg;
	if (!cfg->fleet.servers)
		return 0;
	uint32_t hb = cfg->fleet.heartbeat_ms ? cfg->fleet.heartbeat_ms : BH_FLEET_HEARTBEAT_MS;
	uint32_t gone = cfg->fleet.gone_ms ? cfg->fleet.gone_ms : BH_FLEET_GONE_MS;
	if (gone < 3 * hb)
		return why_set(why, "--fleet-gone-ms %u is less than three heartbeats (--fleet-heartbeat-ms "
				    "%u): one late heartbeat would make a live host gone", gone, hb);
	struct daemon_fleet *df = calloc(1, sizeof *df);
	if (!df)
		abort();
	s->fleet = df;
	df->srv = s;
	if (cfg->fleet.host_id) {
		snprintf(df->self, sizeof df->self, "%s", cfg->fleet.host_id);
	} else if (gethostname(df->self, sizeof df->self - 1) < 0 || !df->self[0]) {
		return why_set(why, "--fleet: this machine has no hostname to be its host id; give "
				    "--host-id NAME");
	}
	df->self[sizeof df->self - 1] = '\0';
	api_of(s, df->api, sizeof df->api);
	struct bh_fleet_config fc = {
		.servers = cfg->fleet.servers,
		.host_id = df->self,
		.heartbeat_ms = cfg->fleet.heartbeat_ms,
		.gone_ms = cfg->fleet.gone_ms,
		.log = fleet_log,
	};
	char *reason = NULL;
	if (bh_fleet_open(&fc, &df->f, &reason) < 0) {
		why_set(why, "--fleet %s: cannot join as %s: %s", cfg->fleet.servers, df->self,
			reason ? reason : "no reason given");
		free(reason);
		return -1;
	}
	/* Published before the first call can be placed here. */
	daemon_fleet_publish(s);
	bh_fleet_serve(df->f, daemon_fleet_on_forwarded, s);
	df->restart_sweep_ms = now_mono_ms() + RESTART_SWEEP_MS;
	daemon_log(BH_LOG_INFO, "fleet", "joined the fleet on %s as host %s (api %s)",
		   cfg->fleet.servers, df->self, df->api);
	if (!cfg->engine.images_dir)
		daemon_log(BH_LOG_WARN, "fleet", "no --images-dir: this host's hibernated sessions are "
			   "in its state directory, where no other host can adopt them if it dies");
	return 0;
}

void daemon_fleet_stop(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	if (!df)
		return;
	if (df->f) {
		bh_fleet_close(df->f);
		daemon_log(BH_LOG_INFO, "fleet", "left the fleet (host %s)", df->self);
	}
	free(df->published);
	free(df->drained);
	free(df->hosts);
	free(df->lost);
	free(df->retries);
	free(df);
	s->fleet = NULL;
}

int daemon_fleet_fd(struct server *s)
{
	return s->fleet ? bh_fleet_fd(s->fleet->f) : -1;
}

int daemon_fleet_timeout_ms(struct server *s)
{
	if (!s->fleet)
		return -1;
	int t = bh_fleet_timeout_ms(s->fleet->f);
	if (s->fleet->n_retries && (t < 0 || t > 50))
		t = 50;
	return t < 0 || t > (int)TICK_MS ? (int)TICK_MS : t;
}

void daemon_fleet_process(struct server *s)
{
	if (!s->fleet)
		return;
	bh_fleet_process(s->fleet->f);
	if (s->fleet->n_retries)
		daemon_fleet_retry_due(s);
}

/* ---- capacity ---- */

void daemon_fleet_publish(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	bh_engine *e = s->e;
	struct bh_fleet_host me = {0};
	enum bh_tier served = daemon_served_tier(s);
	const struct bh_tier_report *tr = NULL;
	size_t nt = bh_engine_tiers(e, &tr);
	/* A floor is met by the tier this host gives its sessions: what it
	 * offers up to that one. */
	for (size_t i = 0; i < nt; i++)
		if (tr[i].offered && tr[i].tier <= served && tr[i].tier < 32)
			me.tiers |= 1u << tr[i].tier;
	me.best_tier = served;
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(e, &list);
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (info.state == BH_SESSION_HIBERNATED)
			me.hibernated++;
		else if (info.state != BH_SESSION_ENDED)
			me.sessions++;
	}
	free(list);
	const struct bh_policy *p = bh_engine_policy(e);
	me.max_sessions = p->max_sessions ? p->max_sessions : 64;
	struct bh_host_usage hu = {0};
	struct bh_session_usage *usage = NULL;
	bh_engine_usage(e, &hu, &usage);
	free(usage);
	me.memory_budget_mb = (uint32_t)(hu.budget_bytes >> 20);
	me.memory_used_mb = (uint32_t)(hu.budget_held_bytes >> 20);
	me.load1 = hu.load_milli[0] / 1000.0;
	me.pool_ready = served > BH_TIER_NONE ? (uint32_t)bh_engine_pool_ready(e, served) : 0;
	me.draining = s->draining || df->draining;
	snprintf(me.api, sizeof me.api, "%s", df->api);
	snprintf(me.version, sizeof me.version, "%s", BULKHEAD_VERSION);
	bh_fleet_set_host(df->f, &me);
}

/* ---- the directory: this host's own entries follow the engine ---- */

static struct published *published_find(struct daemon_fleet *df, const char *fp)
{
	for (size_t i = 0; i < df->n_published; i++)
		if (!strcmp(df->published[i].fp, fp))
			return &df->published[i];
	return NULL;
}

static struct published *published_add(struct daemon_fleet *df, const char *fp)
{
	if (df->n_published == df->cap_published) {
		size_t cap = df->cap_published ? 2 * df->cap_published : 16;
		struct published *p = realloc(df->published, cap * sizeof *p);
		if (!p)
			abort();
		df->published = p;
		df->cap_published = cap;
	}
	struct published *p = &df->published[df->n_published++];
	memset(p, 0, sizeof *p);
	snprintf(p->fp, sizeof p->fp, "%s", fp);
	return p;
}

static void put_live(struct daemon_fleet *df, const struct bh_session_info *info)
{
	struct bh_fleet_entry en = {.state = BH_FLEET_LIVE, .updated_unix_ms = (int64_t)now_real_ms()};
	snprintf(en.fingerprint, sizeof en.fingerprint, "%s", info->fingerprint);
	snprintf(en.host, sizeof en.host, "%s", df->self);
	/* Whose it is, so that after this host is lost only its principal
	 * learns host_lost (any other gets not_found, as today). */
	snprintf(en.hib.fingerprint, sizeof en.hib.fingerprint, "%s", info->fingerprint);
	snprintf(en.hib.principal, sizeof en.hib.principal, "%s", info->principal ? info->principal : "");
	en.hib.tier = info->tier;
	en.hib.floor = info->floor;
	if (bh_fleet_put_entry(df->f, &en) < 0)
		daemon_log(BH_LOG_WARN, "fleet", "could not queue the directory entry of session %.12s",
			   info->fingerprint);
}

static bool put_hibernated(struct daemon_fleet *df, bh_session *s, const char *fp)
{
	struct bh_fleet_entry en = {.state = BH_FLEET_HIBERNATED,
				    .updated_unix_ms = (int64_t)now_real_ms()};
	bh_error *err = NULL;
	if (bh_session_hibernated(s, &en.hib, &err) < 0) {
		daemon_log(BH_LOG_WARN, "fleet", "session %.12s is hibernated but cannot be published "
			   "for adoption: %s", fp, err ? err->msg : "");
		bh_error_free(err);
		return false;
	}
	snprintf(en.fingerprint, sizeof en.fingerprint, "%s", fp);
	snprintf(en.host, sizeof en.host, "%s", df->self);
	return bh_fleet_put_entry(df->f, &en) == 0;
}

/* A host restarted with its own id: the entries it left that its engine
 * no longer holds were live when it died (the hibernated ones its engine
 * took back from its state directory): they end host_lost, so every host
 * answers the same about them. */
static void restart_sweep(struct daemon_fleet *df, bh_session **list, size_t n)
{
	struct bh_fleet_entry *all = NULL;
	size_t ne = bh_fleet_entries(df->f, &all);
	for (size_t i = 0; i < ne; i++) {
		struct bh_fleet_entry *en = &all[i];
		if (strcmp(en->host, df->self) || en->state == BH_FLEET_ENDED)
			continue;
		bool held = false;
		for (size_t j = 0; j < n && !held; j++)
			held = !strcmp(bh_session_fingerprint(list[j]), en->fingerprint);
		if (held)
			continue;
		struct bh_fleet_entry ended = *en;
		ended.state = BH_FLEET_ENDED;
		ended.end_reason = BH_END_HOST_LOST;
		ended.updated_unix_ms = (int64_t)now_real_ms();
		snprintf(ended.end_detail, sizeof ended.end_detail,
			 "host %s stopped while it held the session (it restarted and no longer has it)",
			 df->self);
		bh_fleet_put_entry(df->f, &ended);
		struct lost_entry *more = realloc(df->lost, (df->n_lost + 1) * sizeof *more);
		if (!more)
			abort();
		df->lost = more;
		snprintf(df->lost[df->n_lost].fp, sizeof df->lost[0].fp, "%s", en->fingerprint);
		snprintf(df->lost[df->n_lost++].detail, sizeof df->lost[0].detail, "%s", ended.end_detail);
		daemon_log(BH_LOG_WARN, "fleet", "session %.12s of this host's last run is gone: its "
			   "directory entry now says host_lost", en->fingerprint);
	}
	free(all);
}

/* The directory says another host holds a session this engine still has
 * (it adopted the image while this host was cut off and counted gone), or
 * that it ended host_lost: every host answers so, and this host holds
 * nothing nobody can reach. Its sandbox is ended here; true when so. */
static bool superseded(struct daemon_fleet *df, bh_session *s, const struct bh_session_info *info,
		       struct published *p)
{
	struct bh_fleet_entry en;
	if (bh_fleet_lookup(df->f, info->fingerprint, &en) < 0)
		return false;
	bool lost = en.state == BH_FLEET_ENDED;
	/* Another live host's claim (a gone host's entry is what this host
	 * just adopted, before its own claim reached this copy). */
	struct bh_fleet_host h;
	bool theirs = !lost && strcmp(en.host, df->self) && bh_fleet_host(df->f, en.host, &h) == 0 &&
		      !h.gone;
	if (!lost && !theirs)
		return false;
	daemon_log(BH_LOG_WARN, "fleet", "session %.12s: the directory says %s; ending it here",
		   info->fingerprint, lost ? "it ended host_lost" : "another host holds it");
	struct bh_actor who = {.name = "fleet:superseded"};
	bh_session_kill_as(s, &who);
	p->put = false; /* the entry is not this host's to delete */
	return true;
}

static void directory_sync(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(s->e, &list);
	if (df->restart_sweep_ms && now_mono_ms() >= df->restart_sweep_ms) {
		df->restart_sweep_ms = 0;
		restart_sweep(df, list, n);
	}
	for (size_t i = 0; i < df->n_published; i++)
		df->published[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (info.state == BH_SESSION_ENDED)
			continue; /* not seen: its entry is deleted below */
		struct published *p = published_find(df, info.fingerprint);
		if (!p)
			p = published_add(df, info.fingerprint);
		p->seen = true;
		if (superseded(df, list[i], &info, p))
			continue;
		bool hib = info.state == BH_SESSION_HIBERNATED;
		if (p->put && p->hibernated == hib)
			continue;
		if (hib ? put_hibernated(df, list[i], info.fingerprint) : (put_live(df, &info), true)) {
			p->put = true;
			p->hibernated = hib;
		}
	}
	free(list);
	for (size_t i = 0; i < df->n_published;) {
		if (df->published[i].seen) {
			i++;
			continue;
		}
		/* Ended (or adopted by nobody and gone from the engine): out of
		 * the directory. A tombstone another host wrote is not ours to
		 * delete: only entries this host put are. */
		if (df->published[i].put)
			bh_fleet_delete_entry(df->f, df->published[i].fp);
		df->published[i] = df->published[--df->n_published];
	}
}

void daemon_fleet_session_changed(struct server *s)
{
	if (s->fleet && s->e)
		directory_sync(s);
}

/* ---- hosts joining and going, in the log ---- */

static void watch_hosts(struct daemon_fleet *df)
{
	/* Cut off from NATS, every other host looks gone: nothing is said of
	 * them until this host's view is current again. */
	struct bh_fleet_status fs;
	bh_fleet_get_status(df->f, &fs);
	if (!fs.fresh)
		return;
	struct bh_fleet_host *hosts = NULL;
	size_t n = bh_fleet_hosts(df->f, &hosts);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(hosts[i].id, df->self))
			continue;
		struct known_host *k = NULL;
		for (size_t j = 0; j < df->n_hosts && !k; j++)
			if (!strcmp(df->hosts[j].id, hosts[i].id))
				k = &df->hosts[j];
		if (!k) {
			struct known_host *more = realloc(df->hosts, (df->n_hosts + 1) * sizeof *more);
			if (!more)
				abort();
			df->hosts = more;
			k = &df->hosts[df->n_hosts++];
			snprintf(k->id, sizeof k->id, "%s", hosts[i].id);
			k->gone = !hosts[i].gone; /* so that the line below is written */
		}
		if (k->gone != hosts[i].gone) {
			k->gone = hosts[i].gone;
			if (k->gone)
				daemon_log(BH_LOG_WARN, "fleet", "host %s is gone (it left, or its heartbeat "
					   "stopped); its live "
					   "sessions answer host_lost, its hibernated ones are adopted on "
					   "their next call", hosts[i].id);
			else
				daemon_log(BH_LOG_INFO, "fleet", "host %s joined (%u sessions)",
					   hosts[i].id, hosts[i].sessions);
		}
	}
	free(hosts);
}

/* ---- drain: place nothing new here, hibernate what can be ---- */

static bool drained_already(struct daemon_fleet *df, const char *fp)
{
	for (size_t i = 0; i < df->n_drained; i++)
		if (!strcmp(df->drained[i], fp))
			return true;
	return false;
}

static void on_drain_hibernated(void *arg, const bh_error *err)
{
	char *fp = arg;
	if (err)
		daemon_log(BH_LOG_WARN, "fleet", "drain: session %.12s not hibernated: %s", fp, err->msg);
	else
		daemon_log(BH_LOG_INFO, "fleet", "drain: session %.12s hibernated", fp);
	free(fp);
}

static void on_stop_hibernated(void *arg, const bh_error *err)
{
	char *fp = arg;
	if (err)
		daemon_log(BH_LOG_WARN, "fleet", "stop: session %.12s not hibernated: %s", fp, err->msg);
	else
		daemon_log(BH_LOG_INFO, "fleet", "stop: session %.12s hibernated, adoptable by the "
			   "other hosts", fp);
	free(fp);
}

static void drain(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	bool asked = bh_fleet_draining(df->f, df->self);
	if (asked != df->draining) {
		df->draining = asked;
		daemon_log(BH_LOG_INFO, "fleet", asked ? "draining: new sessions are placed on other "
			   "hosts and idle kernel-tier sessions hibernate" : "no longer draining");
		if (!asked)
			df->n_drained = 0;
	}
	if (!asked)
		return;
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(s->e, &list);
	struct bh_actor who = {.name = "fleet:drain"};
	for (size_t i = 0; i < n; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (info.tier != BH_TIER_KERNEL ||
		    (info.state != BH_SESSION_READY && info.state != BH_SESSION_PAUSED) ||
		    drained_already(df, info.fingerprint))
			continue;
		char (*more)[65] = realloc(df->drained, (df->n_drained + 1) * sizeof *more);
		if (!more)
			abort();
		df->drained = more;
		snprintf(df->drained[df->n_drained++], 65, "%s", info.fingerprint);
		char *fp = strdup(info.fingerprint);
		bh_error *err = NULL;
		if (!fp || bh_session_hibernate_as(list[i], &who, on_drain_hibernated, fp, &err) < 0) {
			daemon_log(BH_LOG_WARN, "fleet", "drain: session %.12s not hibernated: %s",
				   info.fingerprint, err ? err->msg : "out of memory");
			bh_error_free(err);
			free(fp);
		}
	}
	free(list);
}

/* Before the engine closes at a stop: with shutdown = hibernate, the idle
 * kernel-tier sessions are hibernated now (not by the closing engine) so
 * that the directory says so before this host leaves, and another host can
 * adopt them. run_once turns the loop meanwhile. */
void daemon_fleet_before_close(struct server *s, void (*run_once)(struct server *s, int ms),
			       uint64_t until_ms)
{
	struct daemon_fleet *df = s->fleet;
	if (!df || !s->e)
		return;
	if (bh_engine_policy(s->e)->shutdown_hibernate) {
		bh_session **list = NULL;
		size_t n = bh_engine_sessions(s->e, &list);
		struct bh_actor who = {.name = "fleet:stop"};
		for (size_t i = 0; i < n; i++) {
			struct bh_session_info info;
			bh_session_get_info(list[i], &info);
			if (info.tier != BH_TIER_KERNEL ||
			    (info.state != BH_SESSION_READY && info.state != BH_SESSION_PAUSED))
				continue;
			char *fp = strdup(info.fingerprint);
			bh_error *err = NULL;
			if (!fp || bh_session_hibernate_as(list[i], &who, on_stop_hibernated, fp, &err) < 0) {
				bh_error_free(err);
				free(fp);
			}
		}
		free(list);
		for (bool busy = true; busy && now_mono_ms() < until_ms;) {
			run_once(s, 50);
			busy = false;
			n = bh_engine_sessions(s->e, &list);
			for (size_t i = 0; i < n; i++) {
				struct bh_session_info info;
				bh_session_get_info(list[i], &info);
				busy |= info.state == BH_SESSION_HIBERNATING || info.state == BH_SESSION_PAUSING;
			}
			free(list);
		}
	}
	directory_sync(s);
	/* The directory's writes are the library's to flush at close. */
}

void daemon_fleet_tick(struct server *s)
{
	struct daemon_fleet *df = s->fleet;
	if (!df || !s->e)
		return;
	uint64_t now = now_mono_ms();
	if (now < df->next_tick_ms)
		return;
	df->next_tick_ms = now + TICK_MS;
	drain(s);
	/* Usage reads every sandbox's cgroup: once a second is enough. */
	if (now >= df->next_publish_ms) {
		df->next_publish_ms = now + 1000;
		daemon_fleet_publish(s);
	}
	directory_sync(s);
	watch_hosts(df);
	daemon_fleet_forwards_check(s);
	if (now >= df->next_tally_ms) {
		df->next_tally_ms = now + 60000;
		const struct metrics *m = &s->metrics;
		if (m->fleet_forwarded != df->tallied_forwarded || m->fleet_served != df->tallied_served)
			daemon_log(BH_LOG_INFO, "fleet", "in the last minute: %llu calls forwarded to the "
				   "hosts holding their sessions, %llu served for other hosts",
				   (unsigned long long)(m->fleet_forwarded - df->tallied_forwarded),
				   (unsigned long long)(m->fleet_served - df->tallied_served));
		df->tallied_forwarded = m->fleet_forwarded;
		df->tallied_served = m->fleet_served;
	}
}
