/* A fleet on NATS (issue 20): the hosts from the fleet's bucket, read as an
 * observer (bh_fleet_open with no host id), and for every live host an
 * attached source on the operator API it publishes. The views ask this one
 * source; it asks the hosts and merges their answers: every host's sandboxes
 * with the host that holds each, the leaks of every host and the fleet's own
 * (a directory entry whose host is gone, a sandbox no entry lists, an image
 * nobody's entry names), the records and events of all of them. An action
 * on a sandbox goes to the host that holds it.
 *
 * A host that does not answer is never dropped: its last rows stay, marked
 * stale (host_stale: drawn dim), and the hosts view says why. */
#include "source.h"
#include "base.h"
#include "client.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A host whose API refused to attach is tried again after this long. */
#define RETRY_ATTACH_MS 3000u
/* A sandbox younger than this may not be in the directory yet (its host
 * writes the entry after the open): not a leak. */
#define UNLISTED_GRACE_MS 5000

struct fhost {
	struct ui_host u;
	struct ui_source *src;   /* attached to u.h.api; NULL until it answers */
	char attached_api[256];  /* the api src was made for */
	uint64_t retry_mono_ms;  /* no attach before */
	struct ui_session *rows; /* the last sessions it answered */
	size_t n_rows;
	bool have_rows;
	struct bh_leak *leaks;   /* the last leaks it answered (a reap goes back to it) */
	size_t n_leaks;
};

struct fleet_src {
	struct ui_source base;
	bh_fleet *f;
	char servers[512];
	char token[512], cacert[1024], cert[1024], key[1024];
	char images_dir[1024];
	struct fhost **hosts; /* each its own allocation: a gather's part points at one */
	size_t n_hosts;
	int pending;
	char err[256]; /* the fleet library's last complaint */
	char silent[512]; /* the hosts the last merged answer lacked ("" none) */
	char down_since[16]; /* the link went down then (HH:MM:SS UTC); "" up */
};

static struct fleet_src *F(struct ui_source *s)
{
	return (struct fleet_src *)s;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the hosts: the bucket's, each with its attached source ---- */

static struct fhost *host_by_id(struct fleet_src *m, const char *id)
{
	for (size_t i = 0; i < m->n_hosts; i++)
		if (!strcmp(m->hosts[i]->u.h.id, id))
			return m->hosts[i];
	return NULL;
}

static int host_cmp(const void *a, const void *b)
{
	const struct fhost *x = *(struct fhost *const *)a, *y = *(struct fhost *const *)b;
	return strcmp(x->u.h.id, y->u.h.id);
}

static void attach_host(struct fleet_src *m, struct fhost *h)
{
	struct bh_client_options o = {
		.target = h->u.h.api,
		.token = *m->token ? m->token : NULL,
		.cacert = *m->cacert ? m->cacert : NULL,
		.client_cert = *m->cert ? m->cert : NULL,
		.client_key = *m->key ? m->key : NULL,
		.connect_timeout_ms = 2000,
	};
	char *why = NULL;
	struct ui_source *src = ui_source_attached_with(&o, &why);
	if (!src) {
		snprintf(h->u.why, sizeof h->u.why, "%s", why ? why : "its API did not answer");
		free(why);
		h->u.answering = false;
		h->retry_mono_ms = mono_ms() + RETRY_ATTACH_MS;
		return;
	}
	/* A host that came back on another address: the old source is kept
	 * (its calls out still answer into it) but asked nothing again. */
	h->src = src;
	snprintf(h->attached_api, sizeof h->attached_api, "%s", h->u.h.api);
	h->u.answering = true;
	h->u.why[0] = '\0';
}

/* The bucket's hosts into m->hosts: new ones added, gone ones marked, one
 * that left the bucket kept as left. A live host with an API and no source
 * is attached to (at most every RETRY_ATTACH_MS). */
static void sync_hosts(struct fleet_src *m)
{
	struct bh_fleet_host *hs = NULL;
	size_t n = bh_fleet_hosts(m->f, &hs);
	/* A copy that is not current judges nobody gone: each host keeps
	 * what was last known of it. */
	struct bh_fleet_status st;
	bh_fleet_get_status(m->f, &st);
	for (size_t i = 0; i < m->n_hosts; i++)
		m->hosts[i]->u.left = st.fresh;
	for (size_t i = 0; i < n; i++) {
		struct fhost *h = host_by_id(m, hs[i].id);
		if (h && !st.fresh) {
			bool was_gone = h->u.h.gone;
			h->u.h = hs[i];
			h->u.h.gone = was_gone;
			continue;
		}
		if (!h) {
			m->hosts = realloc(m->hosts, (m->n_hosts + 1) * sizeof *m->hosts);
			if (!m->hosts)
				abort();
			h = m->hosts[m->n_hosts++] = xzalloc(sizeof *h);
		}
		h->u.h = hs[i];
		h->u.left = false;
		/* A console just opened has seen every value "now": a host
		 * whose own clock says its last heartbeat is older than the
		 * gone time is gone without waiting that long to see it. */
		if (st.fresh && hs[i].heartbeat_unix_ms > 0 &&
		    wall_ms() - hs[i].heartbeat_unix_ms > (int64_t)BH_FLEET_GONE_MS)
			h->u.h.gone = true;
	}
	free(hs);
	for (size_t i = 0; i < m->n_hosts; i++)
		if (m->hosts[i]->u.left)
			m->hosts[i]->u.h.gone = true;
	qsort(m->hosts, m->n_hosts, sizeof *m->hosts, host_cmp);
	uint64_t now = mono_ms();
	for (size_t i = 0; i < m->n_hosts; i++) {
		struct fhost *h = m->hosts[i];
		if (h->u.h.gone) {
			h->u.answering = false;
			if (!*h->u.why)
				snprintf(h->u.why, sizeof h->u.why, "%s",
					 h->u.left ? "it left the fleet" : "no heartbeat");
			continue;
		}
		if (!*h->u.h.api) {
			snprintf(h->u.why, sizeof h->u.why, "it publishes no API address");
			h->u.answering = false;
			continue;
		}
		bool moved = h->src && strcmp(h->attached_api, h->u.h.api);
		if ((!h->src || moved) && now >= h->retry_mono_ms)
			attach_host(m, h);
	}
}

/* The live host whose source answers asks, or NULL. */
static struct ui_source *host_src(struct fhost *h)
{
	if (!h || h->u.h.gone || !h->src || strcmp(h->attached_api, h->u.h.api))
		return NULL;
	return h->src;
}

/* The host that holds a session: the one whose last answer listed it, else
 * the directory's entry. */
static struct fhost *holder_of(struct fleet_src *m, const char *fp)
{
	for (size_t i = 0; i < m->n_hosts; i++)
		for (size_t r = 0; r < m->hosts[i]->n_rows; r++)
			if (!strcmp(m->hosts[i]->rows[r].fp, fp) ||
			    !strcmp(m->hosts[i]->rows[r].sandbox, fp))
				return m->hosts[i];
	/* A finding's sandbox (capture from :leaks): the host that found it. */
	for (size_t i = 0; i < m->n_hosts; i++)
		for (size_t r = 0; r < m->hosts[i]->n_leaks; r++)
			if (!strcmp(m->hosts[i]->leaks[r].sandbox, fp) ||
			    (*m->hosts[i]->leaks[r].fingerprint &&
			     !strcmp(m->hosts[i]->leaks[r].fingerprint, fp)))
				return m->hosts[i];
	struct bh_fleet_entry e;
	if (fp && bh_fleet_lookup(m->f, fp, &e) == 0)
		return host_by_id(m, e.host);
	return NULL;
}

/* Why a session's host cannot be asked (into buf), or NULL when it can. */
static const char *route(struct fleet_src *m, const char *fp, struct ui_source **out, char *buf,
			 size_t n)
{
	struct fhost *h = holder_of(m, fp);
	*out = host_src(h);
	if (*out)
		return NULL;
	if (!h)
		snprintf(buf, n, "no host of the fleet lists session %.12s", fp ? fp : "");
	else
		snprintf(buf, n, "session %.12s is on host %s, which is not answering (%s)", fp,
			 h->u.h.id, *h->u.why ? h->u.why : "gone");
	return buf;
}

/* ---- the loop ---- */

static void describe(struct ui_source *s, char *buf, size_t n)
{
	struct fleet_src *m = F(s);
	size_t live = 0, gone = 0, silent = 0;
	for (size_t i = 0; i < m->n_hosts; i++) {
		if (m->hosts[i]->u.h.gone)
			gone++;
		else if (!m->hosts[i]->u.answering)
			silent++;
		else
			live++;
	}
	struct bh_fleet_status st;
	bh_fleet_get_status(m->f, &st);
	char extra[64] = "";
	size_t used = 0;
	if (gone)
		used += (size_t)snprintf(extra + used, sizeof extra - used, ", %zu gone", gone);
	if (silent && used < sizeof extra)
		snprintf(extra + used, sizeof extra - used, ", %zu not answering", silent);
	snprintf(buf, n, "fleet %s: %zu host%s up%s%s", st.connected ? st.server : m->servers, live,
		 live == 1 ? "" : "s", extra, st.connected ? "" : ", NATS DOWN");
}

static void tier_summary(struct ui_source *s, char *buf, size_t n)
{
	struct fleet_src *m = F(s);
	uint32_t tiers = 0;
	for (size_t i = 0; i < m->n_hosts; i++)
		if (!m->hosts[i]->u.h.gone)
			tiers |= m->hosts[i]->u.h.tiers;
	size_t used = 0;
	buf[0] = '\0';
	for (int t = BH_TIER_VM; t >= BH_TIER_CONTAINER; t--)
		if (tiers & (1u << t))
			used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s",
						 used ? " " : "", bh_tier_name((enum bh_tier)t));
	if (!used)
		snprintf(buf, n, "...");
}

static int poll_fds(struct ui_source *s, struct pollfd *fds, int max)
{
	struct fleet_src *m = F(s);
	int used = 0;
	if (max > 0 && bh_fleet_fd(m->f) >= 0)
		fds[used++] = (struct pollfd){.fd = bh_fleet_fd(m->f), .events = POLLIN};
	for (size_t i = 0; i < m->n_hosts && used < max; i++)
		if (m->hosts[i]->src)
			used += m->hosts[i]->src->ops->poll_fds(m->hosts[i]->src, fds + used, max - used);
	return used;
}

static int timeout_ms(struct ui_source *s)
{
	struct fleet_src *m = F(s);
	int t = bh_fleet_timeout_ms(m->f);
	/* The hosts' heartbeats change what is shown: looked at every 500 ms. */
	if (t < 0 || t > 500)
		t = 500;
	for (size_t i = 0; i < m->n_hosts; i++) {
		if (!m->hosts[i]->src)
			continue;
		int h = m->hosts[i]->src->ops->timeout_ms(m->hosts[i]->src);
		if (h >= 0 && h < t)
			t = h;
	}
	return t;
}

static void process(struct ui_source *s)
{
	struct fleet_src *m = F(s);
	bh_fleet_process(m->f);
	for (size_t i = 0; i < m->n_hosts; i++)
		if (m->hosts[i]->src)
			m->hosts[i]->src->ops->process(m->hosts[i]->src);
	sync_hosts(m);
}

static int pending(struct ui_source *s)
{
	struct fleet_src *m = F(s);
	int n = m->pending;
	/* A gone host's calls out are not waited for (a gather that asked
	 * it is, in m->pending, until the transport says it failed). */
	for (size_t i = 0; i < m->n_hosts; i++)
		if (host_src(m->hosts[i]))
			n += m->hosts[i]->src->ops->pending(m->hosts[i]->src);
	return n;
}

/* ---- asking every host: one gather per request, answered once every host
 * has (a host that cannot be asked answers at once, with why) ---- */

struct gather {
	struct fleet_src *m;
	int waiting;
	size_t size;        /* of one row */
	unsigned char *rows;
	size_t n, cap;
	size_t asked, answered;
	char silent[512];   /* "h2 (why); h3 (why)": the hosts that did not answer */
	void (*finish)(struct gather *g);
	void *cb;           /* the view's callback, as its type's (cast back in finish) */
	void *arg;
	size_t limit;       /* a page's: at most this many of the newest/oldest */
	bool newest;
};

struct part {
	struct gather *g;
	struct fhost *h;
};

static struct gather *gather_new(struct fleet_src *m, size_t size, void (*finish)(struct gather *),
				 void *cb, void *arg)
{
	struct gather *g = xzalloc(sizeof *g);
	*g = (struct gather){.m = m, .waiting = 1, .size = size, .finish = finish, .cb = cb, .arg = arg};
	m->pending++;
	return g;
}

static void gather_end(struct gather *g)
{
	if (--g->waiting > 0)
		return;
	g->m->pending--;
	snprintf(g->m->silent, sizeof g->m->silent, "%s", g->silent);
	g->finish(g);
	free(g->rows);
	free(g);
}

static void gather_silent(struct gather *g, const char *host, const char *why)
{
	size_t used = strlen(g->silent);
	snprintf(g->silent + used, sizeof g->silent - used, "%s%s (%.100s)", used ? "; " : "", host,
		 why && *why ? why : "no answer");
}

static void gather_add(struct gather *g, const void *rows, size_t n)
{
	if (g->n + n > g->cap) {
		g->cap = (g->n + n) * 2 + 8;
		g->rows = realloc(g->rows, g->cap * g->size);
		if (!g->rows)
			abort();
	}
	if (n)
		memcpy(g->rows + g->n * g->size, rows, n * g->size);
	g->n += n;
}

static struct part *part_new(struct gather *g, struct fhost *h)
{
	struct part *p = xzalloc(sizeof *p);
	p->g = g;
	p->h = h;
	g->waiting++;
	g->asked++;
	return p;
}

/* A part's answer: rows kept (err NULL) or the host named as silent. */
static struct gather *part_answer(struct part *p, const void *rows, size_t n, const char *err)
{
	struct gather *g = p->g;
	if (err)
		gather_silent(g, p->h->u.h.id, err);
	else {
		g->answered++;
		gather_add(g, rows, n);
	}
	free(p);
	return g;
}

/* Every host that can be asked gets ask(src, part); those that cannot are
 * named silent at once. */
static void gather_ask(struct gather *g, void (*ask)(struct ui_source *src, struct part *p))
{
	struct fleet_src *m = g->m;
	for (size_t i = 0; i < m->n_hosts; i++) {
		struct fhost *h = m->hosts[i];
		struct ui_source *src = host_src(h);
		if (!src) {
			if (!h->u.h.gone)
				gather_silent(g, h->u.h.id, h->u.why);
			continue;
		}
		ask(src, part_new(g, h));
	}
	gather_end(g);
}

/* The error a merged answer carries: none while some host answered (the
 * silent ones are in the hosts view and the rows of theirs drawn dim). */
static const char *gather_error(struct gather *g, char *buf, size_t n)
{
	if (g->answered || !g->asked) {
		if (!g->asked && *g->silent) {
			snprintf(buf, n, "no host of the fleet answers: %s", g->silent);
			return buf;
		}
		return NULL;
	}
	snprintf(buf, n, "no host of the fleet answered: %s", g->silent);
	return buf;
}

/* ---- sessions: every host's, each row naming its host ---- */

static void sessions_part(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	struct part *p = arg;
	struct fhost *h = p->h;
	if (!err) {
		free(h->rows);
		h->rows = xzalloc((n ? n : 1) * sizeof *rows);
		if (n)
			memcpy(h->rows, rows, n * sizeof *rows);
		h->n_rows = n;
		h->have_rows = true;
		h->u.answering = true;
		h->u.why[0] = '\0';
		h->u.rows = n;
	} else {
		h->u.answering = false;
		snprintf(h->u.why, sizeof h->u.why, "%s", err);
	}
	struct gather *g = p->g;
	free(p);
	if (err)
		gather_silent(g, h->u.h.id, err);
	else
		g->answered++;
	gather_end(g);
}

static void sessions_ask(struct ui_source *src, struct part *p)
{
	src->ops->sessions(src, sessions_part, p);
}

static void sessions_finish(struct gather *g)
{
	struct fleet_src *m = g->m;
	size_t n = 0;
	for (size_t i = 0; i < m->n_hosts; i++)
		n += m->hosts[i]->n_rows;
	struct ui_session *rows = xzalloc((n ? n : 1) * sizeof *rows);
	size_t k = 0;
	for (size_t i = 0; i < m->n_hosts; i++) {
		struct fhost *h = m->hosts[i];
		for (size_t r = 0; r < h->n_rows; r++) {
			rows[k] = h->rows[r];
			snprintf(rows[k].host, sizeof rows[k].host, "%s", h->u.h.id);
			rows[k].host_stale = h->u.h.gone || !h->u.answering;
			k++;
		}
	}
	char why[600];
	const char *err = gather_error(g, why, sizeof why);
	/* Rows of hosts that did not answer are still the fleet's last word:
	 * shown (dim), not an error, while any is known. */
	if (err && n)
		err = NULL;
	((ui_sessions_fn)g->cb)(g->arg, rows, n, err);
	free(rows);
}

static void sessions(struct ui_source *s, ui_sessions_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	sync_hosts(m);
	gather_ask(gather_new(m, sizeof(struct ui_session), sessions_finish, (void *)cb, arg),
		   sessions_ask);
}

/* ---- usage: every host's sessions' figures; the header's host figures
 * are the fleet's sums (memory, budget) and its busiest load ---- */

struct usage_ctx {
	ui_usage_fn cb;
	void *arg;
	struct ui_usage u;
	bool have;
};

static void usage_part(void *arg, const struct ui_usage *u, const char *err)
{
	struct part *p = arg;
	struct gather *g = p->g;
	struct usage_ctx *c = g->arg;
	if (!err && u) {
		if (!c->have) {
			c->u.host = u->host;
			snprintf(c->u.version, sizeof c->u.version, "%s", u->version);
			c->have = true;
		} else {
			struct bh_host_usage *h = &c->u.host;
			h->mem_total_bytes += u->host.mem_total_bytes;
			h->mem_available_bytes += u->host.mem_available_bytes;
			h->budget_bytes += u->host.budget_bytes;
			h->budget_held_bytes += u->host.budget_held_bytes;
			h->images_bytes += u->host.images_bytes;
			h->images_budget_bytes += u->host.images_budget_bytes;
			for (int i = 0; i < 3; i++)
				if (u->host.load_milli[i] > h->load_milli[i])
					h->load_milli[i] = u->host.load_milli[i];
			if (u->host.started_unix_ms && u->host.started_unix_ms < h->started_unix_ms)
				h->started_unix_ms = u->host.started_unix_ms;
		}
	}
	part_answer(p, err || !u ? NULL : u->sessions, err || !u ? 0 : u->n, err);
	gather_end(g);
}

static void usage_ask(struct ui_source *src, struct part *p)
{
	if (src->ops->usage)
		src->ops->usage(src, usage_part, p);
	else
		usage_part(p, NULL, "no usage");
}

static void usage_finish(struct gather *g)
{
	struct usage_ctx *c = g->arg;
	char why[600];
	const char *err = gather_error(g, why, sizeof why);
	c->u.sessions = (const struct bh_session_usage *)g->rows;
	c->u.n = g->n;
	c->cb(c->arg, err ? NULL : &c->u, err);
	free(c);
}

static void usage(struct ui_source *s, ui_usage_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	struct usage_ctx *c = xzalloc(sizeof *c);
	c->cb = cb;
	c->arg = arg;
	gather_ask(gather_new(m, sizeof(struct bh_session_usage), usage_finish, NULL, c), usage_ask);
}

/* ---- rows of one kind from every host, merged: the typed trampolines ---- */

#define ROWS_PART(NAME, T)                                                                         \
	static void NAME##_part(void *arg, const T *rows, size_t n, const char *err)               \
	{                                                                                          \
		gather_end(part_answer(arg, rows, n, err));                                        \
	}

ROWS_PART(records, struct ui_record)
ROWS_PART(events, struct ui_event)
ROWS_PART(tiers, struct ui_tier)
ROWS_PART(hits, struct ui_search_hit)

static int record_cmp(const void *a, const void *b)
{
	const struct ui_record *x = a, *y = b;
	return x->started_ms < y->started_ms ? -1 : x->started_ms > y->started_ms;
}

static int event_cmp(const void *a, const void *b)
{
	const struct ui_event *x = a, *y = b;
	return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

static int hit_cmp(const void *a, const void *b)
{
	const struct ui_search_hit *x = a, *y = b;
	return x->started_ms > y->started_ms ? -1 : x->started_ms < y->started_ms; /* newest first */
}

/* Sorted by cmp; a page keeps its limit's newest (or oldest) rows. */
static void merge_rows(struct gather *g, int (*cmp)(const void *, const void *))
{
	if (g->n > 1)
		qsort(g->rows, g->n, g->size, cmp);
	if (g->limit && g->n > g->limit) {
		if (g->newest)
			memmove(g->rows, g->rows + (g->n - g->limit) * g->size, g->limit * g->size);
		g->n = g->limit;
	}
}

static void records_finish(struct gather *g)
{
	merge_rows(g, record_cmp);
	char why[600];
	((ui_records_fn)g->cb)(g->arg, (const struct ui_record *)g->rows, g->n,
			       gather_error(g, why, sizeof why));
}

static void events_finish(struct gather *g)
{
	merge_rows(g, event_cmp);
	char why[600];
	((ui_events_fn)g->cb)(g->arg, (const struct ui_event *)g->rows, g->n,
			      gather_error(g, why, sizeof why));
}

static void hits_finish(struct gather *g)
{
	merge_rows(g, hit_cmp);
	char why[600];
	((ui_search_fn)g->cb)(g->arg, (const struct ui_search_hit *)g->rows, g->n,
			      gather_error(g, why, sizeof why));
}

/* Tiers: each tier once, offered when any host offers it. */
static void tiers_finish(struct gather *g)
{
	struct ui_tier *t = (struct ui_tier *)g->rows;
	size_t k = 0;
	for (size_t i = 0; i < g->n; i++) {
		size_t j = 0;
		while (j < k && strcmp(t[j].tier, t[i].tier))
			j++;
		if (j == k)
			t[k++] = t[i];
		else if (t[i].offered && !t[j].offered)
			t[j] = t[i];
	}
	char why[600];
	((ui_tiers_fn)g->cb)(g->arg, t, k, gather_error(g, why, sizeof why));
}

/* A page's request, kept for every host's ask. */
struct page_ask {
	char session[65];
	struct ui_page page;
};

static struct page_ask *cur_page; /* set around gather_ask (one thread) */

/* Every host numbers its own history: a page past the newest (before or
 * after an id) means nothing across hosts. */
#define UI_FLEET_NO_PAGING                                                                         \
	"each host numbers its own history: the fleet shows the newest of all; to page back, "    \
	"open the console on the host (bulkhead console --attach API, the API :hosts shows)"

static bool pages_back(const struct ui_page *page)
{
	return page->newest ? page->before != 0 : page->after != 0;
}

static void records_ask(struct ui_source *src, struct part *p)
{
	src->ops->records(src, *cur_page->session ? cur_page->session : NULL, &cur_page->page,
			  records_part, p);
}

static void records(struct ui_source *s, const char *session, const struct ui_page *page,
		    ui_records_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	if (session && *session) { /* one session's: its host has them all */
		struct ui_source *src;
		char why[512];
		if (route(m, session, &src, why, sizeof why)) {
			cb(arg, NULL, 0, why);
			return;
		}
		src->ops->records(src, session, page, cb, arg);
		return;
	}
	if (pages_back(page)) {
		cb(arg, NULL, 0, UI_FLEET_NO_PAGING);
		return;
	}
	struct page_ask pa = {.page = *page};
	struct gather *g = gather_new(m, sizeof(struct ui_record), records_finish, (void *)cb, arg);
	g->limit = page->limit ? page->limit : 1000;
	g->newest = page->newest;
	cur_page = &pa;
	gather_ask(g, records_ask);
	cur_page = NULL;
}

static void record_at(struct ui_source *s, const char *session, uint64_t sequence, ui_records_fn cb,
		      void *arg)
{
	struct ui_source *src;
	char why[512];
	if (route(F(s), session, &src, why, sizeof why)) {
		cb(arg, NULL, 0, why);
		return;
	}
	src->ops->record_at(src, session, sequence, cb, arg);
}

static void events_ask(struct ui_source *src, struct part *p)
{
	src->ops->events(src, &cur_page->page, events_part, p);
}

static void events(struct ui_source *s, const struct ui_page *page, ui_events_fn cb, void *arg)
{
	if (pages_back(page)) {
		cb(arg, NULL, 0, UI_FLEET_NO_PAGING);
		return;
	}
	struct page_ask pa = {.page = *page};
	struct gather *g = gather_new(F(s), sizeof(struct ui_event), events_finish, (void *)cb, arg);
	g->limit = page->limit ? page->limit : 1000;
	g->newest = page->newest;
	cur_page = &pa;
	gather_ask(g, events_ask);
	cur_page = NULL;
}

static void tiers_ask(struct ui_source *src, struct part *p)
{
	src->ops->tiers(src, tiers_part, p);
}

static void tiers(struct ui_source *s, ui_tiers_fn cb, void *arg)
{
	gather_ask(gather_new(F(s), sizeof(struct ui_tier), tiers_finish, (void *)cb, arg), tiers_ask);
}

static const char *cur_query;

static void hits_ask(struct ui_source *src, struct part *p)
{
	src->ops->search(src, cur_query, hits_part, p);
}

static void search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg)
{
	struct gather *g = gather_new(F(s), sizeof(struct ui_search_hit), hits_finish, (void *)cb, arg);
	g->limit = BH_SEARCH_MAX;
	cur_query = query;
	gather_ask(g, hits_ask);
	cur_query = NULL;
}

/* ---- leaks: every host's, and the fleet's own ---- */

static void leaks_part(void *arg, const struct bh_leak *rows, size_t n, const char *err)
{
	struct part *p = arg;
	struct fhost *h = p->h;
	if (!err) {
		free(h->leaks);
		h->leaks = xzalloc((n ? n : 1) * sizeof *rows);
		if (n)
			memcpy(h->leaks, rows, n * sizeof *rows);
		h->n_leaks = n;
	}
	/* Each finding says whose it is. */
	struct bh_leak *tagged = xzalloc((n ? n : 1) * sizeof *rows);
	for (size_t i = 0; i < n; i++) {
		tagged[i] = rows[i];
		char holder[sizeof tagged[i].holder];
		snprintf(holder, sizeof holder, "host %.64s: %.440s", h->u.h.id, rows[i].holder);
		memcpy(tagged[i].holder, holder, sizeof holder);
	}
	gather_end(part_answer(p, err ? NULL : tagged, err ? 0 : n, err));
	free(tagged);
}

static void leaks_ask(struct ui_source *src, struct part *p)
{
	src->ops->leaks(src, leaks_part, p);
}

static void fleet_finding(struct gather *g, enum bh_leak_kind kind, const char *sandbox,
			  const char *fp, const char *holder, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void fleet_finding(struct gather *g, enum bh_leak_kind kind, const char *sandbox,
			  const char *fp, const char *holder, const char *fmt, ...)
{
	struct bh_leak l = {.kind = kind, .first_seen_ms = wall_ms()};
	snprintf(l.sandbox, sizeof l.sandbox, "%s", sandbox ? sandbox : "");
	snprintf(l.fingerprint, sizeof l.fingerprint, "%s", fp ? fp : "");
	snprintf(l.runtime, sizeof l.runtime, "fleet");
	snprintf(l.holder, sizeof l.holder, "%s", holder);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l.reason, sizeof l.reason, fmt, ap);
	va_end(ap);
	gather_add(g, &l, 1);
}

/* An image name as bulkhead makes them (bh-<hex>), and nothing else. */
static bool image_name(const char *n)
{
	if (strncmp(n, "bh-", 3))
		return false;
	size_t len = strlen(n);
	if (len < 4 || len > 63)
		return false;
	for (const char *p = n + 3; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-'))
			return false;
	return true;
}

/* What only the fleet can see: the directory against the hosts. */
static void fleet_findings(struct gather *g)
{
	struct fleet_src *m = g->m;
	struct bh_fleet_entry *es = NULL;
	size_t ne = bh_fleet_entries(m->f, &es);
	int64_t now = wall_ms();
	/* A live or hibernated entry whose host is gone (or not in the
	 * bucket): no one will answer for it until a host adopts it. */
	for (size_t i = 0; i < ne; i++) {
		if (es[i].state == BH_FLEET_ENDED)
			continue;
		struct fhost *h = host_by_id(m, es[i].host);
		if (h && !h->u.h.gone)
			continue;
		char holder[160];
		snprintf(holder, sizeof holder, "directory: session.%.12s", es[i].fingerprint);
		fleet_finding(g, BH_LEAK_GHOST, es[i].state == BH_FLEET_HIBERNATED ? es[i].hib.sandbox : "",
			      es[i].fingerprint, holder,
			      "fleet: a %s directory entry on host %s, which is %s",
			      bh_fleet_entry_state_name(es[i].state), es[i].host,
			      h ? "gone (no heartbeat)" : "not in the fleet");
	}
	/* A sandbox an answering host runs that the directory does not list
	 * as that host's (past a grace: the entry follows the open). */
	for (size_t i = 0; i < m->n_hosts; i++) {
		struct fhost *h = m->hosts[i];
		if (h->u.h.gone || !h->u.answering)
			continue;
		for (size_t r = 0; r < h->n_rows; r++) {
			const struct ui_session *s = &h->rows[r];
			if (!strcmp(s->state, "ended") || !strcmp(s->state, "opening"))
				continue;
			if (s->created_ms && now - s->created_ms < UNLISTED_GRACE_MS)
				continue;
			struct bh_fleet_entry e;
			bool listed = bh_fleet_lookup(m->f, s->fp, &e) == 0;
			if (listed && !strcmp(e.host, h->u.h.id) && e.state != BH_FLEET_ENDED)
				continue;
			char holder[160];
			snprintf(holder, sizeof holder, "host %s", h->u.h.id);
			if (listed)
				fleet_finding(g, BH_LEAK_ORPHAN, s->sandbox, s->fp, holder,
					      "fleet: host %s runs it, the directory says %s (%s)",
					      h->u.h.id, e.host, bh_fleet_entry_state_name(e.state));
			else
				fleet_finding(g, BH_LEAK_ORPHAN, s->sandbox, s->fp, holder,
					      "fleet: host %s runs it, the directory does not list it",
					      h->u.h.id);
		}
	}
	/* An image in the shared directory no hibernated entry names. */
	if (*m->images_dir) {
		DIR *d = opendir(m->images_dir);
		if (!d) {
			fleet_finding(g, BH_LEAK_STALE_IMAGE, "", "", m->images_dir,
				      "fleet: the shared images directory cannot be read");
		} else {
			struct dirent *de;
			while ((de = readdir(d))) {
				if (!image_name(de->d_name))
					continue;
				bool named = false;
				for (size_t i = 0; i < ne && !named; i++)
					named = es[i].state == BH_FLEET_HIBERNATED &&
						!strcmp(es[i].hib.sandbox, de->d_name);
				/* A live session's host may still be writing it. */
				for (size_t i = 0; i < m->n_hosts && !named; i++)
					for (size_t r = 0; r < m->hosts[i]->n_rows && !named; r++)
						named = !strcmp(m->hosts[i]->rows[r].sandbox, de->d_name);
				if (named)
					continue;
				char holder[sizeof ((struct bh_leak *)0)->holder];
				snprintf(holder, sizeof holder, "%.400s/%.63s", m->images_dir, de->d_name);
				fleet_finding(g, BH_LEAK_STALE_IMAGE, de->d_name, "", holder,
					      "fleet: an image in the shared images directory that no "
					      "directory entry names");
			}
			closedir(d);
		}
	}
	free(es);
}

static void leaks_finish(struct gather *g)
{
	fleet_findings(g);
	char why[600];
	const char *err = gather_error(g, why, sizeof why);
	if (err && g->n)
		err = NULL; /* the fleet's own findings stand */
	((ui_leaks_fn)g->cb)(g->arg, (const struct bh_leak *)g->rows, g->n, err);
}

static void leaks(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	sync_hosts(m);
	gather_ask(gather_new(m, sizeof(struct bh_leak), leaks_finish, (void *)cb, arg), leaks_ask);
}

/* A reap goes to the hosts whose findings were chosen, each its own (as it
 * found them); the fleet's own findings are not a host's to reap. */
static void reaped_part(void *arg, const struct bh_leak *rows, size_t n, const char *err)
{
	gather_end(part_answer(arg, rows, n, err));
}

static void reaped_finish(struct gather *g)
{
	char why[600];
	const char *err = *g->silent ? g->silent : NULL;
	(void)why;
	((ui_leaks_fn)g->cb)(g->arg, (const struct bh_leak *)g->rows, g->n, err);
}

static bool same_finding(const struct bh_leak *a, const struct bh_leak *b)
{
	return a->kind == b->kind && !strcmp(a->sandbox, b->sandbox) &&
	       !strcmp(a->fingerprint, b->fingerprint);
}

static void reap_chosen(struct ui_source *s, const struct bh_leak *chosen, size_t n, ui_leaks_fn cb,
			void *arg)
{
	struct fleet_src *m = F(s);
	struct gather *g = gather_new(m, sizeof(struct bh_leak), reaped_finish, (void *)cb, arg);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(chosen[i].runtime, "fleet"))
			gather_silent(g, "fleet", "a fleet finding is no host's to reap: drain or "
						  "restart the host, or delete the entry");
	for (size_t hi = 0; hi < m->n_hosts; hi++) {
		struct fhost *h = m->hosts[hi];
		struct bh_leak *mine = xzalloc((n ? n : 1) * sizeof *mine);
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < h->n_leaks; j++)
				if (same_finding(&chosen[i], &h->leaks[j])) {
					mine[k++] = h->leaks[j];
					break;
				}
		struct ui_source *src = host_src(h);
		if (k && !src)
			gather_silent(g, h->u.h.id, h->u.why);
		else if (k && src->ops->reap_chosen)
			src->ops->reap_chosen(src, mine, k, reaped_part, part_new(g, h));
		else if (k)
			src->ops->reap(src, reaped_part, part_new(g, h));
		free(mine);
	}
	gather_end(g);
}

static void reap_all_ask(struct ui_source *src, struct part *p)
{
	src->ops->reap(src, reaped_part, p);
}

static void reap(struct ui_source *s, ui_leaks_fn cb, void *arg)
{
	gather_ask(gather_new(F(s), sizeof(struct bh_leak), reaped_finish, (void *)cb, arg),
		   reap_all_ask);
}

/* ---- one session's: to the host that holds it ---- */

#define ROUTED(fp, cb_call)                                                                        \
	struct ui_source *src;                                                                     \
	char why[512];                                                                             \
	if (route(F(s), fp, &src, why, sizeof why)) {                                              \
		cb_call;                                                                           \
		return;                                                                            \
	}

static void action(struct ui_source *s, const char *verb, const char *fp, ui_done_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, why))
	src->ops->action(src, verb, fp, cb, arg);
}

static void run(struct ui_source *s, const char *fp, const char *language, const char *code,
		ui_answer_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, NULL, why))
	src->ops->run(src, fp, language, code, cb, arg);
}

static void session_detail(struct ui_source *s, const char *fp, ui_detail_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, NULL, NULL, why))
	src->ops->session_detail(src, fp, cb, arg);
}

static void processes(struct ui_source *s, const char *fp, ui_processes_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, NULL, 0, false, why))
	src->ops->processes(src, fp, cb, arg);
}

static void list_files(struct ui_source *s, const char *fp, const char *path, ui_files_fn cb,
		       void *arg)
{
	ROUTED(fp, cb(arg, NULL, 0, false, why))
	src->ops->list_files(src, fp, path, cb, arg);
}

static void read_file(struct ui_source *s, const char *fp, const char *path, uint32_t max,
		      ui_file_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, NULL, 0, 0, false, why))
	src->ops->read_file(src, fp, path, max, cb, arg);
}

static void cells(struct ui_source *s, const char *fp, uint64_t before, size_t limit, ui_cells_fn cb,
		  void *arg)
{
	ROUTED(fp, cb(arg, NULL, 0, why))
	src->ops->cells(src, fp, before, limit, cb, arg);
}

static void follow(struct ui_source *s, const char *fp, uint64_t seq, uint64_t out_after,
		   uint64_t err_after, uint32_t wait_ms, ui_follow_fn cb, void *arg)
{
	ROUTED(fp, cb(arg, NULL, why))
	src->ops->follow(src, fp, seq, out_after, err_after, wait_ms, cb, arg);
}

static void capture(struct ui_source *s, const char *target, const char *dir, ui_captured_fn cb,
		    void *arg)
{
	ROUTED(target, cb(arg, NULL, NULL, why))
	src->ops->capture(src, target, dir, cb, arg);
}

static void inflight(struct ui_source *s, const char *fp, ui_inflight_fn cb, void *arg)
{
	if (!fp || !*fp) {
		cb(arg, NULL, 0, "in a fleet, the calls in flight are asked one session at a time");
		return;
	}
	ROUTED(fp, cb(arg, NULL, 0, why))
	src->ops->inflight(src, fp, cb, arg);
}

/* ---- the console's own sandboxes: opened where the fleet would place
 * them (the host with the most room that proves the floor) ---- */

static void open_session(struct ui_source *s, const char *tier, const char *floor, const char *owner,
			 ui_opened_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	enum bh_tier fl = BH_TIER_CONTAINER;
	if (floor && *floor && bh_tier_parse(floor, &fl) < 0)
		fl = BH_TIER_CONTAINER;
	char id[BH_FLEET_ID_MAX + 1];
	if (bh_fleet_place(m->f, fl, id) < 0) {
		cb(arg, NULL, "no live, undrained host of the fleet proves that floor");
		return;
	}
	struct ui_source *src = host_src(host_by_id(m, id));
	if (!src) {
		char why[300];
		snprintf(why, sizeof why, "the fleet places it on host %s, whose API is not answering", id);
		cb(arg, NULL, why);
		return;
	}
	src->ops->open(src, tier, floor, owner, cb, arg);
}

/* ---- approvals: each host holds its own ---- */

static void approvals(struct ui_source *s, ui_approvals_fn cb, void *arg)
{
	(void)s;
	cb(arg, NULL, 0,
	   "in a fleet, held calls wait on the host that holds their session: attach to it "
	   "(bulkhead console --attach API, the API :hosts shows)");
}

static void decide(struct ui_source *s, const char *id, bool approve, const char *reason,
		   ui_done_fn cb, void *arg)
{
	(void)s, (void)id, (void)approve, (void)reason;
	cb(arg, "in a fleet, decide on the host that holds the call (bulkhead console --attach API)");
}

struct count_ctx {
	ui_count_fn cb;
	void *arg;
	size_t sum;
};

static void count_part(void *arg, size_t n, const char *err)
{
	struct part *p = arg;
	struct gather *g = p->g;
	struct count_ctx *c = g->arg;
	if (!err)
		c->sum += n;
	gather_end(part_answer(p, NULL, 0, err));
}

static void count_ask(struct ui_source *src, struct part *p)
{
	if (src->ops->approvals_waiting)
		src->ops->approvals_waiting(src, count_part, p);
	else
		count_part(p, 0, NULL);
}

static void count_finish(struct gather *g)
{
	struct count_ctx *c = g->arg;
	c->cb(c->arg, c->sum, NULL);
	free(c);
}

static void approvals_waiting(struct ui_source *s, ui_count_fn cb, void *arg)
{
	struct count_ctx *c = xzalloc(sizeof *c);
	c->cb = cb;
	c->arg = arg;
	gather_ask(gather_new(F(s), 1, count_finish, NULL, c), count_ask);
}

static void forget_kept(struct ui_source *s)
{
	struct fleet_src *m = F(s);
	for (size_t i = 0; i < m->n_hosts; i++)
		if (m->hosts[i]->src && m->hosts[i]->src->ops->forget_kept)
			m->hosts[i]->src->ops->forget_kept(m->hosts[i]->src);
}

/* The link is NATS's: down while the fleet's connection is, or while its
 * copy of the bucket is not current (cut off, every host would look gone:
 * the rows are then the last known, and no host is judged lost by it). */
static bool link_down(struct ui_source *s, char *since, size_t since_n, char *why, size_t why_n)
{
	struct bh_fleet_status st;
	bh_fleet_get_status(F(s)->f, &st);
	struct fleet_src *m = F(s);
	if (st.connected && st.fresh) {
		m->down_since[0] = '\0';
		return false;
	}
	if (!*m->down_since) {
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(m->down_since, sizeof m->down_since, "%H:%M:%S", &tm);
	}
	snprintf(since, since_n, "%s", m->down_since);
	if (st.connected)
		snprintf(why, why_n, "NATS: the fleet's view is not current%s%s",
			 *st.last_error ? ": " : "", st.last_error);
	else
		snprintf(why, why_n, "NATS: %s", *st.last_error ? st.last_error : "not connected");
	return true;
}

/* ---- the hosts view ---- */

static void hosts(struct ui_source *s, ui_hosts_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	sync_hosts(m);
	struct ui_host *rows = xzalloc((m->n_hosts ? m->n_hosts : 1) * sizeof *rows);
	for (size_t i = 0; i < m->n_hosts; i++)
		rows[i] = m->hosts[i]->u;
	cb(arg, rows, m->n_hosts, NULL);
	free(rows);
}

struct drain_ctx {
	struct fleet_src *m;
	ui_done_fn cb;
	void *arg;
};

static void drained(void *arg, const char *why)
{
	struct drain_ctx *c = arg;
	c->m->pending--;
	c->cb(c->arg, why);
	free(c);
}

static void drain(struct ui_source *s, const char *host, bool on, ui_done_fn cb, void *arg)
{
	struct fleet_src *m = F(s);
	struct drain_ctx *c = xzalloc(sizeof *c);
	*c = (struct drain_ctx){.m = m, .cb = cb, .arg = arg};
	m->pending++;
	if (bh_fleet_set_drain(m->f, host, on, drained, c) < 0) {
		m->pending--;
		free(c);
		cb(arg, "the drain could not be queued (is NATS reachable?)");
	}
}

static void source_free(struct ui_source *s)
{
	struct fleet_src *m = F(s);
	for (size_t i = 0; i < m->n_hosts; i++) {
		if (m->hosts[i]->src)
			m->hosts[i]->src->ops->free(m->hosts[i]->src);
		free(m->hosts[i]->rows);
		free(m->hosts[i]->leaks);
		free(m->hosts[i]);
	}
	free(m->hosts);
	bh_fleet_close(m->f);
	free(m);
}

static const struct ui_source_ops fleet_ops = {
	.kind = "fleet",
	.has_engine = true,
	.describe = describe,
	.tier_summary = tier_summary,
	.poll_fds = poll_fds,
	.timeout_ms = timeout_ms,
	.process = process,
	.pending = pending,
	.sessions = sessions,
	.records = records,
	.record_at = record_at,
	.events = events,
	.leaks = leaks,
	.reap = reap,
	.tiers = tiers,
	.action = action,
	.open = open_session,
	.run = run,
	.free = source_free,
	.session_detail = session_detail,
	.link_down = link_down,
	.processes = processes,
	.list_files = list_files,
	.read_file = read_file,
	.approvals = approvals,
	.decide = decide,
	.usage = usage,
	.cells = cells,
	.follow = follow,
	.capture = capture,
	.search = search,
	.approvals_waiting = approvals_waiting,
	.forget_kept = forget_kept,
	.reap_chosen = reap_chosen,
	.inflight = inflight,
	.hosts = hosts,
	.drain = drain,
};

static void fleet_log(void *arg, enum bh_log_level level, const char *msg)
{
	/* The screen is the console's: the library's complaints are kept for
	 * the header's description, never printed. */
	(void)level;
	struct fleet_src *m = arg;
	snprintf(m->err, sizeof m->err, "%s", msg ? msg : "");
}

struct ui_source *ui_source_fleet(const char *servers, const struct bh_client_options *o,
				  const char *images_dir, char **why)
{
	struct fleet_src *m = xzalloc(sizeof *m);
	m->base.ops = &fleet_ops;
	snprintf(m->servers, sizeof m->servers, "%s", servers);
	if (o) {
		snprintf(m->token, sizeof m->token, "%s", o->token ? o->token : "");
		snprintf(m->cacert, sizeof m->cacert, "%s", o->cacert ? o->cacert : "");
		snprintf(m->cert, sizeof m->cert, "%s", o->client_cert ? o->client_cert : "");
		snprintf(m->key, sizeof m->key, "%s", o->client_key ? o->client_key : "");
	}
	snprintf(m->images_dir, sizeof m->images_dir, "%s", images_dir ? images_dir : "");
	struct bh_fleet_config cfg = {.servers = servers, .log = fleet_log, .log_arg = m};
	if (bh_fleet_open(&cfg, &m->f, why) < 0) {
		free(m);
		return NULL;
	}
	sync_hosts(m);
	return &m->base;
}

/* ---- bulkhead fleet leaks: the same answer, without a screen ---- */

struct wait_leaks {
	bool done;
	struct bh_leak *l;
	size_t n;
	char err[600];
};

static void waited_sessions(void *arg, const struct ui_session *rows, size_t n, const char *err)
{
	(void)rows, (void)n, (void)err;
	*(bool *)arg = true;
}

static void waited_leaks(void *arg, const struct bh_leak *rows, size_t n, const char *err)
{
	struct wait_leaks *w = arg;
	w->done = true;
	if (err) {
		snprintf(w->err, sizeof w->err, "%s", err);
		return;
	}
	w->l = xzalloc((n ? n : 1) * sizeof *rows);
	if (n)
		memcpy(w->l, rows, n * sizeof *rows);
	w->n = n;
}

/* Runs the source's loop until *done or the deadline. */
static void run_until(struct ui_source *s, const bool *done, uint64_t deadline)
{
	while (!*done && mono_ms() < deadline) {
		struct pollfd fds[64];
		int n = s->ops->poll_fds(s, fds, 64);
		int t = s->ops->timeout_ms(s);
		if (t < 0 || t > 100)
			t = 100;
		poll(fds, (nfds_t)n, t);
		s->ops->process(s);
	}
}

int ui_fleet_leaks(struct ui_source *s, uint32_t timeout_ms, struct bh_leak **out, size_t *n,
		   char **silent, char **why)
{
	*out = NULL;
	*n = 0;
	*silent = NULL;
	if (strcmp(s->ops->kind, "fleet")) {
		*why = xstrdup("not a fleet's source");
		return -1;
	}
	uint64_t deadline = mono_ms() + timeout_ms;
	/* The hosts' sandboxes first: a sandbox no entry lists is found
	 * against them. */
	bool listed = false;
	s->ops->sessions(s, waited_sessions, &listed);
	run_until(s, &listed, deadline);
	struct wait_leaks w = {0};
	s->ops->leaks(s, waited_leaks, &w);
	run_until(s, &w.done, deadline);
	if (!w.done) {
		*why = xstrdup("the hosts did not answer in time");
		return -1;
	}
	*silent = xstrdup(F(s)->silent);
	if (*w.err) {
		*why = xstrdup(w.err);
		return -1;
	}
	*out = w.l;
	*n = w.n;
	return 0;
}
