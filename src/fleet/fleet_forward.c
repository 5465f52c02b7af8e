/* Forwarding: a call to the host that holds its session, by request-reply
 * on bulkhead.fleet.call.<id>. The metadata rides in NATS message headers
 * (fleet_values.h names them), the body raw (binary-safe). Answers come to
 * one wildcard subscription on an inbox of this fleet's, <inbox>.<token>;
 * each forward waits in f->pending for its answer, its deadline, or NATS's
 * no-responders status (a host that is gone or not serving answers at once,
 * not after the whole timeout). The sender thread publishes, so a large
 * body never stalls the caller on a socket. */
#include "fleet_priv.h"

#include <string.h>
#include <time.h>

/* ---- the sender ---- */

static void answer_pending_locked(bh_fleet *f, uint64_t token, natsMsg *msg, char *why)
{
	for (struct fleet_pending **pp = &f->pending; *pp; pp = &(*pp)->next) {
		struct fleet_pending *p = *pp;
		if (p->token != token)
			continue;
		*pp = p->next;
		if (p->msg)
			natsMsg_Destroy(p->msg);
		struct fleet_event *ev = xzalloc(sizeof *ev);
		ev->kind = EV_ANSWER;
		ev->answer = p->cb;
		ev->arg = p->arg;
		ev->msg = msg;
		ev->why = why;
		snprintf(ev->host, sizeof ev->host, "%s", p->host);
		free(p);
		fleet_queue_event_locked(f, ev);
		return;
	}
	/* too late (its deadline passed): nobody waits for it */
	if (msg)
		natsMsg_Destroy(msg);
	free(why);
}

static void *sender_main(void *arg)
{
	bh_fleet *f = arg;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct fleet_send *s = f->send_head;
		if (!s) {
			if (f->stopping)
				break;
			pthread_cond_wait(&f->sender_cond, &f->lock);
			continue;
		}
		f->send_head = s->next;
		if (!f->send_head)
			f->send_tail = &f->send_head;
		pthread_mutex_unlock(&f->lock);
		natsStatus st = natsConnection_PublishMsg(f->nc, s->msg);
		char *why = st == NATS_OK ? NULL : xasprintf("the call could not be sent: %s", fleet_nats_why(st));
		pthread_mutex_lock(&f->lock);
		/* a forward's request goes back to its pending call, for a resend */
		struct fleet_pending *p = NULL;
		if (s->token && !why)
			for (p = f->pending; p && p->token != s->token; p = p->next)
				;
		if (p && !p->msg)
			p->msg = s->msg;
		else
			natsMsg_Destroy(s->msg);
		if (why && s->token)
			answer_pending_locked(f, s->token, NULL, why);
		else if (why) {
			snprintf(f->last_error, sizeof f->last_error, "an answer could not be sent: %s", why);
			free(why);
		}
		free(s);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void queue_send(bh_fleet *f, natsMsg *msg, uint64_t token)
{
	struct fleet_send *s = xzalloc(sizeof *s);
	s->msg = msg;
	s->token = token;
	*f->send_tail = s;
	f->send_tail = &s->next;
	pthread_cond_signal(&f->sender_cond);
}

/* ---- answers arriving (libnats's thread) ---- */

static void on_sub_complete(void *arg)
{
	bh_fleet *f = arg;
	pthread_mutex_lock(&f->lock);
	f->subs_open--;
	pthread_cond_broadcast(&f->watch_cond);
	pthread_mutex_unlock(&f->lock);
}

static void on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
	bh_fleet *f = arg;
	const char *subj = natsMsg_GetSubject(msg);
	const char *dot = strrchr(subj, '.');
	char *end = NULL;
	uint64_t token = dot ? strtoull(dot + 1, &end, 10) : 0;
	if (!token || !end || *end) {
		natsMsg_Destroy(msg);
		return;
	}
	char *why = NULL;
	pthread_mutex_lock(&f->lock);
	if (natsMsg_IsNoResponders(msg)) {
		natsMsg_Destroy(msg);
		msg = NULL;
		/* A host the fleet holds live may not be known across the routes
		 * yet (it just started serving): sent again for a moment. A dead
		 * or gone one answers at once. */
		struct fleet_pending *p;
		for (p = f->pending; p && p->token != token; p = p->next)
			;
		uint64_t now = now_mono_ms();
		struct fleet_host_rec *r = p ? fleet_host_find_locked(f, p->host) : NULL;
		if (p && r && !fleet_host_gone_locked(f, r, now) && now - r->h.seen_mono_ms < 2ull * f->heartbeat_ms &&
		    now - p->first_sent_mono_ms < FLEET_NO_RESPONDER_RETRY_MS && now + 100 < p->deadline_mono_ms) {
			p->resend_mono_ms = now + 100;
			pthread_mutex_unlock(&f->lock);
			return;
		}
		why = xstrdup("no responder: NATS says no host serves that id (it is gone or not serving)");
	}
	answer_pending_locked(f, token, msg, why);
	pthread_mutex_unlock(&f->lock);
}

uint64_t fleet_expire_locked(bh_fleet *f, uint64_t now_ms)
{
	uint64_t nearest = 0;
	for (;;) {
		struct fleet_pending *p;
		for (p = f->pending; p; p = p->next)
			if (p->deadline_mono_ms <= now_ms)
				break;
		if (!p)
			break;
		answer_pending_locked(f, p->token, NULL,
				      xasprintf("host %s did not answer in time (its deadline passed)", p->host));
	}
	for (struct fleet_pending *p = f->pending; p; p = p->next)
		if (!nearest || p->deadline_mono_ms < nearest)
			nearest = p->deadline_mono_ms;
	return nearest;
}

void fleet_resend_locked(bh_fleet *f, uint64_t now_ms)
{
	for (struct fleet_pending *p = f->pending; p; p = p->next)
		if (p->resend_mono_ms && p->resend_mono_ms <= now_ms && p->msg) {
			p->resend_mono_ms = 0;
			queue_send(f, steal_ptr(p->msg), p->token);
		}
}

int fleet_forward_start(bh_fleet *f, char **why)
{
	natsInbox *inbox = NULL;
	natsStatus s = natsInbox_Create(&inbox);
	if (s != NATS_OK)
		return why_set(why, "an inbox: %s", fleet_nats_why(s));
	snprintf(f->inbox, sizeof f->inbox, "%s", (const char *)inbox);
	natsInbox_Destroy(inbox);
	char subj[160];
	snprintf(subj, sizeof subj, "%s.*", f->inbox);
	s = natsConnection_Subscribe(&f->inbox_sub, f->nc, subj, on_answer, f);
	if (s == NATS_OK) {
		/* the answers are the caller's to bound (its timeouts), not NATS's */
		natsSubscription_SetPendingLimits(f->inbox_sub, -1, -1);
		pthread_mutex_lock(&f->lock);
		f->subs_open++;
		pthread_mutex_unlock(&f->lock);
		if (natsSubscription_SetOnCompleteCB(f->inbox_sub, on_sub_complete, f) != NATS_OK) {
			pthread_mutex_lock(&f->lock);
			f->subs_open--;
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (s != NATS_OK)
		return why_set(why, "cannot subscribe to the fleet's answers: %s", fleet_nats_why(s));
	int r = pthread_create(&f->sender_thread, NULL, sender_main, f);
	if (r)
		return why_errno(why, r, "the fleet's sender thread");
	f->sender_started = true;
	return 0;
}

void fleet_forward_stop(bh_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_cond_broadcast(&f->sender_cond);
	pthread_mutex_unlock(&f->lock);
	if (f->sender_started)
		pthread_join(f->sender_thread, NULL); /* what was queued is sent first */
	f->sender_started = false;
	if (f->call_sub)
		natsSubscription_Unsubscribe(f->call_sub);
	if (f->inbox_sub)
		natsSubscription_Unsubscribe(f->inbox_sub);
}

/* ---- building a message ---- */

/* The NATS header bytes a message will carry (NATS counts them against
 * max_payload with the body). */
static size_t header_bytes(natsMsg *m)
{
	const char **keys = NULL;
	int n = 0;
	size_t total = 12; /* "NATS/1.0\r\n" ... "\r\n" */
	if (natsMsgHeader_Keys(m, &keys, &n) != NATS_OK)
		return total;
	for (int i = 0; i < n; i++) {
		const char **vals = NULL;
		int nv = 0;
		if (natsMsgHeader_Values(m, keys[i], &vals, &nv) == NATS_OK) {
			for (int k = 0; k < nv; k++)
				total += strlen(keys[i]) + strlen(vals[k]) + 4;
			free((void *)vals);
		}
	}
	free((void *)keys);
	return total;
}

/* A copy of s without the spaces and tabs around it (HTTP's optional
 * whitespace is no part of a header's value). */
static char *trimmed(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return xstrndup(s, n);
}

/* The message for m: headers checked, body raw. NULL and *why when a field
 * would not check at the other end, or the whole is over max_payload. */
static natsMsg *build(bh_fleet *f, const char *subject, const char *reply, const struct bh_fleet_msg *m, bool request,
		      char **why)
{
	if (m->body_len > BH_FLEET_BODY_MAX) {
		why_set(why, "a body of %zu bytes is over the fleet's %u", m->body_len, BH_FLEET_BODY_MAX);
		return NULL;
	}
	if (m->n_headers > BH_FLEET_MAX_HEADERS) {
		why_set(why, "%zu headers (at most %u)", m->n_headers, BH_FLEET_MAX_HEADERS);
		return NULL;
	}
	if (request && !fleet_path_ok(m->path)) {
		why_set(why, "the path is not one URL path (/, printable ASCII, at most %u bytes)", FLEET_PATH_MAX);
		return NULL;
	}
	if (!request && (m->status < 100 || m->status > 599)) {
		why_set(why, "an answer's status %u is no HTTP status", m->status);
		return NULL;
	}
	natsMsg *msg = NULL;
	natsStatus s = natsMsg_Create(&msg, subject, reply, (const char *)m->body, (int)m->body_len);
	if (s != NATS_OK) {
		why_set(why, "a message: %s", fleet_nats_why(s));
		return NULL;
	}
	s = natsMsgHeader_Set(msg, "Bh-V", "1");
	if (s == NATS_OK && request) {
		s = natsMsgHeader_Set(msg, "Bh-Path", m->path);
		if (s == NATS_OK && f->member)
			s = natsMsgHeader_Set(msg, "Bh-From", f->host_id);
	}
	if (s == NATS_OK && !request) {
		char st[8];
		snprintf(st, sizeof st, "%u", m->status);
		s = natsMsgHeader_Set(msg, "Bh-Status", st);
	}
	for (size_t i = 0; s == NATS_OK && i < m->n_headers; i++) {
		cleanup_free char *value = trimmed(m->header_values[i] ? m->header_values[i] : "");
		if (!fleet_header_name_ok(m->header_names[i]) || !fleet_header_value_ok(value)) {
			natsMsg_Destroy(msg);
			why_set(why, "header %zu is not one HTTP header (a token name; a value without CR, LF or NUL, "
				     "at most %u bytes)",
				i + 1, FLEET_HEADER_VALUE_MAX);
			return NULL;
		}
		cleanup_free char *line = xasprintf("%s: %s", m->header_names[i], value);
		s = natsMsgHeader_Add(msg, "Bh-Header", line);
	}
	if (s != NATS_OK) {
		natsMsg_Destroy(msg);
		why_set(why, "a message's headers: %s", fleet_nats_why(s));
		return NULL;
	}
	int64_t max = natsConnection_GetMaxPayload(f->nc);
	size_t total = m->body_len + header_bytes(msg);
	if (max > 0 && total > (size_t)max) {
		natsMsg_Destroy(msg);
		why_set(why,
			"a message of %zu bytes is over the NATS server's max_payload of %lld bytes (run nats-server "
			"with max_payload of at least %u: bulkhead's bodies go to 8 MiB)",
			total, (long long)max, FLEET_MAX_PAYLOAD_NEEDED);
		return NULL;
	}
	return msg;
}

/* ---- reading a message: every field is another host's word ---- */

struct decoded {
	struct bh_fleet_msg m;
	const char *names[BH_FLEET_MAX_HEADERS], *values[BH_FLEET_MAX_HEADERS];
	char *text; /* the header lines, split in place */
	char path[FLEET_PATH_MAX + 1];
	char from[BH_FLEET_ID_MAX + 1];
	char error[512];
};

static int decode(natsMsg *msg, bool request, struct decoded *d, char **why)
{
	memset(d, 0, sizeof *d);
	const char *v = NULL;
	if (natsMsgHeader_Get(msg, "Bh-V", &v) != NATS_OK || !v || strcmp(v, "1"))
		return why_set(why, "no Bh-V: 1 header");
	if (!request && natsMsgHeader_Get(msg, "Bh-Error", &v) == NATS_OK && v) {
		snprintf(d->error, sizeof d->error, "%s", fleet_text_ok(v, 500) ? v : "(unprintable)");
		return 0;
	}
	if (request) {
		if (natsMsgHeader_Get(msg, "Bh-Path", &v) != NATS_OK || !fleet_path_ok(v))
			return why_set(why, "no Bh-Path that is a URL path");
		snprintf(d->path, sizeof d->path, "%s", v);
		d->m.path = d->path;
		if (natsMsgHeader_Get(msg, "Bh-From", &v) == NATS_OK) {
			if (!fleet_id_ok(v))
				return why_set(why, "a Bh-From that is no host id");
			snprintf(d->from, sizeof d->from, "%s", v);
		}
	} else {
		if (natsMsgHeader_Get(msg, "Bh-Status", &v) != NATS_OK || fleet_status_parse(v, &d->m.status) < 0)
			return why_set(why, "no Bh-Status that is an HTTP status");
	}
	const char **vals = NULL;
	int n = 0;
	natsStatus s = natsMsgHeader_Values(msg, "Bh-Header", &vals, &n);
	if (s != NATS_OK && s != NATS_NOT_FOUND)
		return why_set(why, "its headers: %s", fleet_nats_why(s));
	if (n > (int)BH_FLEET_MAX_HEADERS) {
		free((void *)vals);
		return why_set(why, "%d headers (at most %u)", n, BH_FLEET_MAX_HEADERS);
	}
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += strlen(vals[i]) + 1;
	d->text = xzalloc(total + 1);
	char *p = d->text;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(vals[i]);
		memcpy(p, vals[i], len + 1);
		if (fleet_header_split(p, &d->names[i], &d->values[i]) < 0) {
			free((void *)vals);
			return why_set(why, "header %d is not one HTTP header", i + 1);
		}
		p += len + 1;
	}
	free((void *)vals);
	d->m.n_headers = (size_t)n;
	for (int i = 0; i < n; i++) {
		d->m.header_names[i] = d->names[i];
		d->m.header_values[i] = d->values[i];
	}
	int len = natsMsg_GetDataLength(msg);
	if (len < 0 || (size_t)len > BH_FLEET_BODY_MAX)
		return why_set(why, "a body over %u bytes", BH_FLEET_BODY_MAX);
	d->m.body = (const uint8_t *)natsMsg_GetData(msg);
	d->m.body_len = (size_t)len;
	return 0;
}

/* ---- the forwarding side ---- */

int bh_fleet_forward(bh_fleet *f, const char *host, const struct bh_fleet_msg *req, uint32_t timeout_ms,
		     bh_fleet_answer_cb cb, void *arg, char **why)
{
	if (!host || !fleet_id_ok(host))
		return why_set(why, "no such host: the id is not a host id");
	if (!req || !cb)
		return why_set(why, "a forward needs a request and a callback");
	char subject[160], reply[192];
	snprintf(subject, sizeof subject, FLEET_CALL_SUBJECT "%s", host);
	pthread_mutex_lock(&f->lock);
	uint64_t token = ++f->next_token;
	struct fleet_host_rec *r = fleet_host_find_locked(f, host);
	bool known = r != NULL;
	bool gone = r && fleet_host_gone_locked(f, r, now_mono_ms());
	pthread_mutex_unlock(&f->lock);
	if (!known)
		return why_set(why, "no host %s in the fleet", host);
	snprintf(reply, sizeof reply, "%s.%llu", f->inbox, (unsigned long long)token);
	natsMsg *msg = build(f, subject, reply, req, true, why);
	if (!msg)
		return -1;
	struct fleet_pending *p = xzalloc(sizeof *p);
	p->token = token;
	snprintf(p->host, sizeof p->host, "%s", host);
	p->first_sent_mono_ms = now_mono_ms();
	p->deadline_mono_ms = p->first_sent_mono_ms + (timeout_ms ? timeout_ms : FLEET_DEFAULT_TIMEOUT_MS);
	p->cb = cb;
	p->arg = arg;
	pthread_mutex_lock(&f->lock);
	p->next = f->pending;
	f->pending = p;
	if (gone) {
		/* no need to wait for its timeout: the fleet already says so */
		answer_pending_locked(f, token, NULL,
				      xasprintf("host %s is gone (no heartbeat seen for %u ms, or it left)", host,
						f->gone_ms));
		natsMsg_Destroy(msg);
	} else {
		queue_send(f, msg, token);
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void fleet_run_answer(bh_fleet *f, struct fleet_event *ev)
{
	if (!ev->answer)
		return;
	if (ev->why || !ev->msg) {
		ev->answer(ev->arg, NULL, ev->why ? ev->why : "no answer");
		return;
	}
	struct decoded d;
	char *why = NULL;
	if (decode(ev->msg, false, &d, &why) < 0) {
		pthread_mutex_lock(&f->lock);
		f->rejected++;
		pthread_mutex_unlock(&f->lock);
		cleanup_free char *text = xasprintf("a malformed answer from host %s: %s", ev->host, why);
		ev->answer(ev->arg, NULL, text);
	} else if (*d.error) {
		cleanup_free char *text = xasprintf("host %s refused the call: %s", ev->host, d.error);
		ev->answer(ev->arg, NULL, text);
	} else {
		ev->answer(ev->arg, &d.m, NULL);
	}
	free(why);
	free(d.text);
}

/* ---- the serving side ---- */

static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *arg)
{
	bh_fleet *f = arg;
	struct fleet_event *ev = xzalloc(sizeof *ev);
	ev->kind = EV_REQUEST;
	ev->msg = msg;
	pthread_mutex_lock(&f->lock);
	fleet_queue_event_locked(f, ev);
	pthread_mutex_unlock(&f->lock);
}

static void refuse(bh_fleet *f, const char *reply, const char *text)
{
	natsMsg *m = NULL;
	if (natsMsg_Create(&m, reply, NULL, NULL, 0) != NATS_OK)
		return;
	natsMsgHeader_Set(m, "Bh-V", "1");
	natsMsgHeader_Set(m, "Bh-Error", text);
	pthread_mutex_lock(&f->lock);
	queue_send(f, m, 0);
	pthread_mutex_unlock(&f->lock);
}

void fleet_run_request(bh_fleet *f, struct fleet_event *ev)
{
	const char *reply = natsMsg_GetReply(ev->msg);
	if (!reply || !*reply || strlen(reply) >= sizeof ((struct bh_fleet_request *)0)->reply) {
		pthread_mutex_lock(&f->lock);
		f->rejected++;
		pthread_mutex_unlock(&f->lock);
		return; /* nobody to answer */
	}
	if (!f->serve_fn) {
		refuse(f, reply, "this host serves no forwarded calls");
		return;
	}
	struct decoded d;
	char *why = NULL;
	if (decode(ev->msg, true, &d, &why) < 0) {
		pthread_mutex_lock(&f->lock);
		f->rejected++;
		pthread_mutex_unlock(&f->lock);
		cleanup_free char *text = xasprintf("a malformed request: %s", why);
		refuse(f, reply, text);
		free(why);
		free(d.text);
		return;
	}
	struct bh_fleet_request *r = xzalloc(sizeof *r);
	r->msg = steal_ptr(ev->msg);
	snprintf(r->reply, sizeof r->reply, "%s", reply);
	snprintf(r->from, sizeof r->from, "%s", d.from);
	snprintf(r->path, sizeof r->path, "%s", d.path);
	r->header_text = d.text;
	memcpy(r->names, d.names, sizeof r->names);
	memcpy(r->values, d.values, sizeof r->values);
	r->req = d.m;
	r->req.path = r->path;
	for (size_t i = 0; i < r->req.n_headers; i++) {
		r->req.header_names[i] = r->names[i];
		r->req.header_values[i] = r->values[i];
	}
	r->next = f->requests;
	if (r->next)
		r->next->prev = r;
	f->requests = r;
	f->serve_fn(f->serve_arg, r, &r->req);
}

static void request_free(bh_fleet *f, struct bh_fleet_request *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		f->requests = r->next;
	if (r->next)
		r->next->prev = r->prev;
	natsMsg_Destroy(r->msg);
	free(r->header_text);
	free(r);
}

void fleet_requests_free(bh_fleet *f)
{
	while (f->requests)
		request_free(f, f->requests);
}

void bh_fleet_serve(bh_fleet *f, bh_fleet_request_fn fn, void *arg)
{
	f->serve_fn = fn;
	f->serve_arg = arg;
	if (!f->member || f->call_sub || !fn)
		return;
	char subj[160];
	snprintf(subj, sizeof subj, FLEET_CALL_SUBJECT "%s", f->host_id);
	natsStatus s = natsConnection_Subscribe(&f->call_sub, f->nc, subj, on_request, f);
	if (s != NATS_OK) {
		fleet_set_error(f, "cannot serve %s: %s", subj, fleet_nats_why(s));
		f->call_sub = NULL;
		return;
	}
	natsSubscription_SetPendingLimits(f->call_sub, -1, -1);
	/* Once, at the start of serving: the servers know the subscription when
	 * this returns (a forward right after gets it, not "no responders"). */
	natsConnection_FlushTimeout(f->nc, 2000);
	pthread_mutex_lock(&f->lock);
	f->subs_open++;
	pthread_mutex_unlock(&f->lock);
	if (natsSubscription_SetOnCompleteCB(f->call_sub, on_sub_complete, f) != NATS_OK) {
		pthread_mutex_lock(&f->lock);
		f->subs_open--;
		pthread_mutex_unlock(&f->lock);
	}
}

int bh_fleet_reply(bh_fleet *f, struct bh_fleet_request *r, const struct bh_fleet_msg *ans)
{
	char *why = NULL;
	natsMsg *m = ans ? build(f, r->reply, NULL, ans, false, &why) : NULL;
	int rc = 0;
	if (!m) {
		rc = -1;
		cleanup_free char *text = xasprintf("its answer could not be sent: %s", why ? why : "no answer");
		fleet_log(f, BH_LOG_WARN, "fleet: a forwarded call's answer could not be sent: %s", why ? why : "none");
		refuse(f, r->reply, text);
	} else {
		pthread_mutex_lock(&f->lock);
		queue_send(f, m, 0);
		pthread_mutex_unlock(&f->lock);
	}
	free(why);
	request_free(f, r);
	return rc;
}

const char *bh_fleet_request_from(const struct bh_fleet_request *r)
{
	return r->from;
}
