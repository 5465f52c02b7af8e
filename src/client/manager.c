/* The conversation manager (manager.h): entries keyed by run, each holding
 * at most one session. An entry lives until it is disposed (by the host, an
 * idle close or a cap) and its last callback has run; a disposed entry is
 * forgotten at once, so the key's next call opens a new sandbox while the
 * old one is still closing. */
#include "manager_priv.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_OUTPUT_CHARS 16000
#define DEFAULT_IDLE_CLOSE_MS (10u * 60 * 1000)
#define DEFAULT_PER_OWNER 3

void bh_manager_defaults(struct bh_manager_options *o)
{
	memset(o, 0, sizeof *o);
	o->floor = BH_TIER_KERNEL;
	o->languages = (1u << BH_LANG_PYTHON) | (1u << BH_LANG_JAVASCRIPT);
	o->idle_close_ms = DEFAULT_IDLE_CLOSE_MS;
	o->max_per_owner = DEFAULT_PER_OWNER;
	o->max_output_chars = DEFAULT_OUTPUT_CHARS;
}

void bh_owner_digest(const char *token, const char *owner, char out[65])
{
	static const char prefix[] = "bulkhead owner digest v1\n";
	unsigned char key[SHA256_DIGEST_LENGTH], mac[EVP_MAX_MD_SIZE];
	size_t tlen = token ? strlen(token) : 0;
	char *material = xzalloc(sizeof prefix + tlen);
	memcpy(material, prefix, sizeof prefix - 1);
	if (tlen)
		memcpy(material + sizeof prefix - 1, token, tlen);
	unsigned int klen = 0;
	EVP_Digest(material, sizeof prefix - 1 + tlen, key, &klen, EVP_sha256(), NULL);
	explicit_bzero(material, sizeof prefix + tlen);
	free(material);
	unsigned int n = 0;
	HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *)owner, strlen(owner), mac, &n);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	explicit_bzero(key, sizeof key);
}

int bh_manager_new(const struct bh_manager_options *o, bh_manager **out,
		   struct bh_client_error **err)
{
	if (!o || (!o->client == !o->engine))
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "the manager needs a client or an engine (one)"));
	bh_manager *m = xzalloc(sizeof *m);
	m->o = *o;
	m->o.token = NULL;
	m->be = o->client ? &mgr_client_backend : &mgr_engine_backend;
	m->token = o->token ? xstrdup(o->token) : NULL;
	if (m->o.floor == BH_TIER_UNKNOWN)
		m->o.floor = BH_TIER_KERNEL;
	if (!m->o.languages)
		m->o.languages = (1u << BH_LANG_PYTHON) | (1u << BH_LANG_JAVASCRIPT);
	if (!m->o.max_output_chars)
		m->o.max_output_chars = DEFAULT_OUTPUT_CHARS;
	*out = m;
	return 0;
}

/* ---- calls and entries ---- */

static void call_free(struct call *c)
{
	if (!c)
		return;
	free(c->key);
	free(c->owner);
	free(c->code);
	for (size_t i = 0; i < c->n_files; i++) {
		free((char *)c->files[i].path);
		free((uint8_t *)c->files[i].content);
	}
	free(c->files);
	free(c);
}

static void fail_call(struct call *c, struct bh_client_error *err)
{
	c->cb(c->arg, NULL, err);
	bh_client_error_free(err);
	call_free(c);
}

static struct entry *find(bh_manager *m, const char *key)
{
	for (struct entry *e = m->live; e; e = e->next)
		if (!strcmp(e->key, key))
			return e;
	return NULL;
}

static void unlink_from(struct entry **list, struct entry *e)
{
	for (struct entry **pp = list; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			e->next = NULL;
			return;
		}
}

static void entry_free(struct entry *e)
{
	if (e->h)
		e->m->be->release(e->m, e);
	free(e->key);
	free(e->owner);
	free(e->grant_profile); /* ---- profiles ---- */
	free(e);
}

/* A disposed entry goes once nothing of it is in flight. */
static void maybe_release(struct entry *e)
{
	if (!e->disposed || e->opening || e->closing || e->busy || e->pinned)
		return;
	unlink_from(&e->m->leaving, e);
	entry_free(e);
}

void mgr_closed(struct entry *e)
{
	/* An ended session's close reports its end; nothing to do either way. */
	e->closing = false;
	maybe_release(e);
}

static void start_close(struct entry *e)
{
	if (!e->h || e->closing)
		return;
	struct bh_client_error *err = NULL;
	e->closing = true;
	e->pinned++;
	if (e->m->be->close(e->m, e, &err) < 0) {
		e->closing = false;
		bh_client_error_free(err);
	}
	e->pinned--;
}

/* Forgets the key now; the session closes after its calls in flight (a
 * session runs its calls in order, the close last). */
static void dispose_entry(struct entry *e)
{
	bh_manager *m = e->m;
	if (e->disposed)
		return;
	unlink_from(&m->live, e);
	e->disposed = true;
	e->next = m->leaving;
	m->leaving = e;
	while (e->waiting) {
		struct call *c = e->waiting;
		e->waiting = c->next;
		fail_call(c, client_error(WIRE_CANCELED, WIRE_REFUSAL_REQUEST,
					  "the sandbox for this run was disposed before it opened"));
	}
	e->waiting_tail = NULL;
	start_close(e); /* nothing to close while it opens: mgr_opened closes it */
	maybe_release(e);
}

static unsigned held_by(bh_manager *m, const char *owner)
{
	unsigned n = 0;
	for (struct entry *e = m->live; e; e = e->next)
		if (!owner || (e->owner && !strcmp(e->owner, owner)))
			n++;
	return n;
}

/* The least recently used entry whose turn can be taken now (none of its
 * calls in flight or waiting, not opening), of owner (NULL: any). */
static struct entry *idle_victim(bh_manager *m, const char *owner)
{
	struct entry *best = NULL;
	for (struct entry *e = m->live; e; e = e->next) {
		if (e->opening || e->busy || e->waiting || !e->h)
			continue;
		if (owner && (!e->owner || strcmp(e->owner, owner)))
			continue;
		if (!best || e->used < best->used)
			best = e;
	}
	return best;
}

/* Makes room for one more entry of owner. A warm never closes anything. */
static int make_room(bh_manager *m, const char *owner, bool may_close,
		     struct bh_client_error **err)
{
	if (owner && m->o.max_per_owner) {
		while (held_by(m, owner) >= m->o.max_per_owner) {
			struct entry *v = may_close ? idle_victim(m, owner) : NULL;
			if (!v)
				return client_fail(err, client_error(WIRE_RESOURCE_EXHAUSTED,
								     WIRE_REFUSAL_CAPACITY,
								     "this owner already holds %u busy sandboxes",
								     m->o.max_per_owner));
			dispose_entry(v);
		}
	}
	if (m->o.max_sessions) {
		while (held_by(m, NULL) >= m->o.max_sessions) {
			struct entry *v = may_close ? idle_victim(m, NULL) : NULL;
			if (!v)
				return client_fail(err, client_error(WIRE_RESOURCE_EXHAUSTED,
								     WIRE_REFUSAL_CAPACITY,
								     "all %u sandboxes are busy",
								     m->o.max_sessions));
			dispose_entry(v);
		}
	}
	return 0;
}

static void dispatch(struct entry *e, struct call *c);

void mgr_opened(struct entry *e, void *h, const struct bh_client_error *err)
{
	e->opening = false;
	e->h = h;
	e->idle_since_ms = now_mono_ms();
	if (err) {
		/* Nothing is held: forget the key, and tell every waiting call. */
		if (!e->disposed) {
			unlink_from(&e->m->live, e);
			e->disposed = true;
			e->next = e->m->leaving;
			e->m->leaving = e;
		}
		while (e->waiting) {
			struct call *c = e->waiting;
			e->waiting = c->next;
			fail_call(c, bh_client_error_dup(err));
		}
		e->waiting_tail = NULL;
		maybe_release(e);
		return;
	}
	if (e->disposed) {
		/* Disposed while it opened: nobody will use it. */
		start_close(e);
		maybe_release(e);
		return;
	}
	e->pinned++;
	while (e->waiting && !e->disposed) {
		struct call *c = e->waiting;
		e->waiting = c->next;
		c->next = NULL;
		if (!e->waiting)
			e->waiting_tail = NULL;
		dispatch(e, c);
	}
	e->pinned--;
	maybe_release(e);
}

static struct entry *entry_open(bh_manager *m, const char *key, const char *owner,
				struct bh_client_error **err)
{
	struct entry *e = xzalloc(sizeof *e);
	e->m = m;
	e->key = xstrdup(key);
	e->owner = owner ? xstrdup(owner) : NULL;
	if (owner)
		bh_owner_digest(m->token, owner, e->owner_digest);
	/* ---- profiles: fixed for the sandbox's life, asked once per open ---- */
	const char *profile = m->o.grant_profile_for
				      ? m->o.grant_profile_for(m->o.grant_profile_arg, key, owner)
				      : m->o.grant_profile;
	e->grant_profile = profile && *profile ? xstrdup(profile) : NULL;
	e->opening = true;
	e->used = ++m->clock;
	e->next = m->live;
	m->live = e;
	e->pinned++;
	int r = m->be->open(m, e, err);
	e->pinned--;
	if (r < 0) {
		unlink_from(&m->live, e);
		entry_free(e);
		return NULL;
	}
	return e;
}

/* ---- answers ---- */

char *mgr_text(const uint8_t *p, size_t n, size_t max, bool *cut)
{
	char *out = xzalloc(n * 3 + 1);
	size_t o = 0, chars = 0, i = 0;
	while (i < n) {
		if (chars == max) {
			*cut = true;
			break;
		}
		uint8_t b = p[i];
		size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
		bool ok = len && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (p[i + k] & 0xC0) == 0x80;
		if (ok) {
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
		chars++;
	}
	out[o] = '\0';
	return out;
}

void bh_exec_output_from(const struct wire_session_run_response *res, enum bh_language language,
			 bool fresh_sandbox, size_t max_chars, struct bh_exec_output *out)
{
	const struct bh_result_fields *r = &res->run.result;
	bool cut = false;
	if (!max_chars)
		max_chars = DEFAULT_OUTPUT_CHARS;
	memset(out, 0, sizeof *out);
	out->language = language;
	out->exit_code = r->exit_code;
	out->timed_out = r->timed_out;
	out->stdout_text = mgr_text(r->out, r->out_len, max_chars, &cut);
	out->stderr_text = mgr_text(r->err, r->err_len, max_chars, &cut);
	out->truncated = cut || r->stdout_truncated || r->stderr_truncated;
	bool ended = res->ended != WIRE_END_OPEN;
	out->state_kept = !r->interpreter_ended && !ended;
	out->files_persist = !ended;
	out->fresh_interpreter = r->interpreter_started;
	out->fresh_sandbox = fresh_sandbox;
	snprintf(out->isolation, sizeof out->isolation, "%s", res->run.isolation);
	snprintf(out->record_sha256, sizeof out->record_sha256, "%s",
		 res->run.record.record_sha256);
}

static void call_done(struct entry *e)
{
	e->busy--;
	e->used = ++e->m->clock;
	if (!e->busy)
		e->idle_since_ms = now_mono_ms();
}

void mgr_failed(struct call *c, const struct bh_client_error *err)
{
	struct entry *e = c->e;
	bh_manager *m = c->m;
	call_done(e);
	e->pinned++; /* disposing it below must not free it under us */
	bool retry = err->session_ended && err->not_dispatched && !c->retried && !e->disposed;
	/* An ended session, or one whose chain can no longer be checked,
	 * serves no further call: the next one opens a new sandbox. */
	if (err->session_ended || m->be->stopped(m, e))
		dispose_entry(e);
	if (retry) {
		/* Refused as ended and nothing ran: once, in a new sandbox. */
		c->retried = true;
		c->e = NULL;
		struct bh_client_error *oerr = NULL;
		struct entry *fresh = find(m, c->key);
		if (!fresh && make_room(m, c->owner, true, &oerr) == 0)
			fresh = entry_open(m, c->key, c->owner, &oerr);
		if (!fresh) {
			fail_call(c, oerr);
		} else if (fresh->opening) {
			if (fresh->waiting_tail)
				fresh->waiting_tail->next = c;
			else
				fresh->waiting = c;
			fresh->waiting_tail = c;
		} else {
			dispatch(fresh, c);
		}
		e->pinned--;
		maybe_release(e);
		return;
	}
	c->cb(c->arg, NULL, err);
	call_free(c);
	e->pinned--;
	maybe_release(e);
}

void mgr_answered(struct call *c, struct bh_exec_output *out, bool ended)
{
	struct entry *e = c->e;
	call_done(e);
	e->pinned++;
	out->fresh_sandbox = !e->answered_once;
	out->retried = c->retried;
	e->answered_once = true;
	if (ended) {
		out->state_kept = false;
		out->files_persist = false;
		dispose_entry(e);
	}
	c->cb(c->arg, out, NULL);
	bh_exec_output_free(out);
	call_free(c);
	e->pinned--;
	maybe_release(e);
}

static void dispatch(struct entry *e, struct call *c)
{
	c->e = e;
	e->busy++;
	e->used = ++e->m->clock;
	struct bh_client_error *err = NULL;
	e->pinned++;
	int r = e->m->be->run(e->m, c, &err);
	e->pinned--;
	if (r < 0) {
		mgr_failed(c, err); /* as if answered so: the same retry rule */
		bh_client_error_free(err);
	}
}

/* ---- the API ---- */

void bh_manager_warm(bh_manager *m, const char *key, const char *owner)
{
	if (!key || !*key || find(m, key))
		return;
	if (make_room(m, owner, false, NULL) < 0)
		return;
	struct bh_client_error *err = NULL;
	if (!entry_open(m, key, owner, &err))
		bh_client_error_free(err); /* the call that needs it will open and say why */
}

int bh_manager_run_async(bh_manager *m, const char *key, const char *owner,
			 const struct bh_exec_input *in, bh_manager_run_cb cb, void *arg,
			 struct bh_client_error **err)
{
	if (!key || !*key)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a call needs the run's key"));
	if (owner && !*owner)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "the owner is empty"));
	if (!in || !in->code)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a call needs code"));
	if (!(m->o.languages & (1u << in->language)))
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "%s is not one of this manager's languages",
						     bh_language_name(in->language)));
	struct entry *e = find(m, key);
	if (!e) {
		if (make_room(m, owner, true, err) < 0)
			return -1;
		e = entry_open(m, key, owner, err);
		if (!e)
			return -1;
	}
	struct call *c = xzalloc(sizeof *c);
	c->m = m;
	c->key = xstrdup(key);
	c->owner = owner ? xstrdup(owner) : NULL;
	c->language = in->language;
	c->code = xstrdup(in->code);
	c->cb = cb;
	c->arg = arg;
	if (in->n_files) {
		c->files = xzalloc(in->n_files * sizeof *c->files);
		for (size_t i = 0; i < in->n_files; i++) {
			uint8_t *copy = xzalloc(in->files[i].len + 1);
			memcpy(copy, in->files[i].content, in->files[i].len);
			c->files[i].path = xstrdup(in->files[i].path);
			c->files[i].content = copy;
			c->files[i].len = in->files[i].len;
		}
		c->n_files = in->n_files;
	}
	if (e->opening) {
		if (e->waiting_tail)
			e->waiting_tail->next = c;
		else
			e->waiting = c;
		e->waiting_tail = c;
	} else {
		dispatch(e, c);
	}
	return 0;
}

struct run_waiter {
	bool done;
	struct bh_exec_output *out;
	struct bh_client_error *err;
};

static void on_run_blocking(void *arg, struct bh_exec_output *out,
			    const struct bh_client_error *err)
{
	struct run_waiter *w = arg;
	w->done = true;
	if (err) {
		w->err = bh_client_error_dup(err);
		return;
	}
	*w->out = *out;
	memset(out, 0, sizeof *out); /* moved */
}

int bh_manager_run(bh_manager *m, const char *key, const char *owner,
		   const struct bh_exec_input *in, struct bh_exec_output *out,
		   struct bh_client_error **err)
{
	struct run_waiter w = {.out = out};
	memset(out, 0, sizeof *out);
	if (bh_manager_run_async(m, key, owner, in, on_run_blocking, &w, err) < 0)
		return -1;
	if (bh_manager_wait(m, &w.done, -1) < 0 && !w.done)
		return client_fail(err, client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
						     "the client's loop stopped before the answer"));
	if (w.err)
		return client_fail(err, w.err);
	return 0;
}

void bh_manager_dispose(bh_manager *m, const char *key)
{
	struct entry *e = key ? find(m, key) : NULL;
	if (e)
		dispose_entry(e);
}

void bh_manager_dispose_all(bh_manager *m)
{
	while (m->live)
		dispose_entry(m->live);
}

int bh_manager_timeout_ms(bh_manager *m)
{
	if (!m->o.idle_close_ms)
		return -1;
	uint64_t now = now_mono_ms();
	int64_t best = -1;
	for (struct entry *e = m->live; e; e = e->next) {
		if (!e->h || e->opening || e->busy || e->waiting)
			continue;
		uint64_t due = e->idle_since_ms + m->o.idle_close_ms;
		int64_t left = due > now ? (int64_t)(due - now) : 0;
		if (best < 0 || left < best)
			best = left;
	}
	return best > 0x7fffffff ? 0x7fffffff : (int)best;
}

void bh_manager_process_timeout(bh_manager *m)
{
	if (!m->o.idle_close_ms)
		return;
	uint64_t now = now_mono_ms();
	struct entry *e = m->live;
	while (e) {
		struct entry *next = e->next;
		if (e->h && !e->opening && !e->busy && !e->waiting &&
		    e->idle_since_ms + m->o.idle_close_ms <= now)
			dispose_entry(e);
		e = next;
	}
}

int bh_manager_wait(bh_manager *m, const bool *done, int timeout_ms)
{
	uint64_t until = timeout_ms < 0 ? 0 : now_mono_ms() + (uint64_t)timeout_ms;
	bool never = false;
	if (!done)
		done = &never;
	for (;;) {
		bh_manager_process_timeout(m);
		if (*done)
			return 0;
		int t = bh_manager_timeout_ms(m);
		if (timeout_ms >= 0) {
			uint64_t now = now_mono_ms();
			if (now >= until)
				return -1;
			int left = (int)(until - now);
			t = t < 0 || t > left ? left : t;
		}
		if (!m->be->wait(m, done, t) && t < 0)
			return -1; /* nothing in flight and no timer: *done can never be set */
	}
}

size_t bh_manager_entries(bh_manager *m, struct bh_manager_entry *out, size_t max)
{
	size_t n = 0;
	for (struct entry *e = m->live; e; e = e->next, n++) {
		if (n >= max)
			continue;
		out[n] = (struct bh_manager_entry){
			.key = e->key,
			.owner = e->owner,
			.opening = e->opening,
			.ready = e->h != NULL,
			.busy = e->busy,
			.fingerprint = e->h ? m->be->fingerprint(m, e) : "",
		};
	}
	return n;
}

void bh_manager_free(bh_manager *m)
{
	if (!m)
		return;
	struct entry *lists[] = {m->live, m->leaving};
	for (size_t i = 0; i < 2; i++) {
		struct entry *e = lists[i];
		while (e) {
			struct entry *next = e->next;
			while (e->waiting) {
				struct call *c = e->waiting;
				e->waiting = c->next;
				call_free(c);
			}
			entry_free(e);
			e = next;
		}
	}
	if (m->token) {
		explicit_bzero(m->token, strlen(m->token));
		free(m->token);
	}
	free(m);
}

/* ---- the tool's answer ---- */

void bh_exec_output_free(struct bh_exec_output *o)
{
	if (!o)
		return;
	free(o->stdout_text);
	free(o->stderr_text);
	o->stdout_text = o->stderr_text = NULL;
}

char *bh_exec_output_json(const struct bh_exec_output *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "language", bh_language_name(o->language));
	cJSON_AddNumberToObject(j, "exitCode", o->exit_code);
	cJSON_AddBoolToObject(j, "timedOut", o->timed_out);
	cJSON_AddStringToObject(j, "stdout", o->stdout_text ? o->stdout_text : "");
	cJSON_AddStringToObject(j, "stderr", o->stderr_text ? o->stderr_text : "");
	cJSON_AddBoolToObject(j, "truncated", o->truncated);
	cJSON_AddBoolToObject(j, "stateKept", o->state_kept);
	cJSON_AddBoolToObject(j, "freshInterpreter", o->fresh_interpreter);
	cJSON_AddBoolToObject(j, "filesPersist", o->files_persist);
	cJSON_AddBoolToObject(j, "freshSandbox", o->fresh_sandbox);
	cJSON_AddStringToObject(j, "isolation", o->isolation);
	cJSON_AddStringToObject(j, "recordSha256", o->record_sha256);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}
