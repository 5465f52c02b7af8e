/* The approval desk: code calls held for a person's decision (docs/api.md,
 * Approvals). A held call is parked before the engine sees it — no sandbox
 * is touched, nothing runs — with its connection suspended, so the agent's
 * client simply waits. Approved, it is dispatched by its procedure's own
 * handler as if it had just arrived (its answer and record are exactly those
 * of a call never held); denied or past its deadline, it is refused not
 * dispatched (permission) with the reason in the message. Every step is an
 * "approval" event in the engine's store, naming the request digest the
 * call's record carries, so the record view finds who decided. */
#include "daemon_priv.h"

#include "record.h"
#include "wire_operator.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 60000u
#define DEFAULT_CAP 64u
#define DEFAULT_CAP_PER_PRINCIPAL 8u

struct held {
	struct call *c;
	struct wire_operator_approval row;         /* owned strings */
	struct wire_operator_approval_file *files; /* owned */
	size_t n_files;
	uint64_t deadline_ms; /* monotonic */
	struct held *next;
};

struct approvals {
	struct held *list; /* oldest first */
	size_t n;
	unsigned cap, cap_per_principal;
	uint32_t timeout_ms;
	bool required; /* serve --approval required */
};

struct approvals *approvals_new(const struct bh_daemon_config *cfg)
{
	struct approvals *a = xzalloc(sizeof *a);
	a->cap = cfg->approval_cap ? cfg->approval_cap : DEFAULT_CAP;
	a->cap_per_principal = cfg->approval_cap_per_principal ? cfg->approval_cap_per_principal
							       : DEFAULT_CAP_PER_PRINCIPAL;
	a->timeout_ms = cfg->approval_timeout_ms ? cfg->approval_timeout_ms : DEFAULT_TIMEOUT_MS;
	a->required = cfg->approval_required;
	return a;
}

static void held_free(struct held *h)
{
	wire_operator_approval_clear(&h->row);
	for (size_t i = 0; i < h->n_files; i++)
		wire_operator_approval_file_clear(&h->files[i]);
	free(h->files);
	free(h);
}

void approvals_free(struct approvals *a)
{
	if (!a)
		return;
	while (a->list) {
		struct held *h = a->list;
		a->list = h->next;
		held_free(h);
	}
	free(a);
}

bool approvals_wanted(const struct server *s, const struct call *c)
{
	if (!s->approvals || c->approved)
		return false;
	switch (c->who.approval) {
	case CLIENT_APPROVAL_REQUIRED:
		return true;
	case CLIENT_APPROVAL_NONE:
		return false;
	case CLIENT_APPROVAL_DEFAULT:
		break;
	}
	return s->approvals->required;
}

bool approvals_waiting(const struct server *s)
{
	return s->approvals && s->approvals->n > 0;
}

/* "60 s", or "1500 ms" when it is not whole seconds. */
static void span_text(uint32_t ms, char *out, size_t n)
{
	if (ms % 1000)
		snprintf(out, n, "%u ms", ms);
	else
		snprintf(out, n, "%u s", ms / 1000);
}

/* One step as an event: what happened, then the request digest (within a
 * reader's first 200 bytes whatever the names: the record view matches on
 * it), the call, and last the reason, the one part of any length. The store
 * failing loses the event, never the call: the audit log still has the
 * call's line (and stderr says so). */
/* ---- remote: who took the step (NULL: the held call's own principal and
 * request) ---- */
static void note_why(struct server *s, const struct held *h, const char *what, const char *reason,
		     const struct bh_actor *by)
{
	struct bh_actor caller = call_actor(h->c);
	char detail[1024];
	snprintf(detail, sizeof detail, "%s; request %s; %s call %s of %s%s%s", what,
		 h->row.request_sha256, h->row.procedure, h->row.id, h->row.principal,
		 reason && *reason ? "; reason: " : "", reason ? reason : "");
	bh_error *err = NULL;
	if (bh_engine_note_approval_by(s->e, h->row.session, detail, by ? by : &caller, &err) < 0) {
		daemon_log(BH_LOG_ERROR, "approvals", "%s", err->msg);
		bh_error_free(err);
	}
}

static void note(struct server *s, const struct held *h, const char *what)
{
	note_why(s, h, what, NULL, NULL);
}

static unsigned held_by(const struct approvals *a, const char *principal)
{
	unsigned n = 0;
	for (const struct held *h = a->list; h; h = h->next)
		n += !strcmp(h->row.principal, principal);
	return n;
}

void approvals_hold(struct call *c, const struct approval_subject *what)
{
	struct server *s = c->srv;
	struct approvals *a = s->approvals;
	if (a->n >= a->cap) {
		call_refuse(c, WIRE_RESOURCE_EXHAUSTED, WIRE_REFUSAL_CAPACITY,
			    "%zu calls already wait for approval, the most this daemon holds "
			    "(serve --approval-cap); nothing ran, retry later",
			    a->n);
		return;
	}
	if (held_by(a, c->who.name) >= a->cap_per_principal) {
		call_refuse(
			c, WIRE_RESOURCE_EXHAUSTED, WIRE_REFUSAL_CAPACITY,
			"%u of your calls already wait for approval, the most one principal may "
			"have held (serve --approval-cap-per-principal); nothing ran, retry later",
			a->cap_per_principal);
		return;
	}
	struct held *h = xzalloc(sizeof *h);
	char id[13];
	if (random_hex(6, id) < 0)
		abort(); /* getrandom does not fail once the system has booted */
	struct bh_session_info info = {0};
	if (what->session)
		bh_session_get_info(what->session, &info);
	cleanup_free char *code = xstrndup(what->code ? what->code : "", what->code_len);
	uint64_t now_real = now_real_ms();
	struct wire_operator_approval row = {
		.id = id,
		.procedure = what->procedure,
		.principal = c->who.name,
		.run_key = info.run_key,
		.owner = info.owner,
		.session = info.fingerprint,
		.isolation = bh_tier_name(what->tier),
		.kind = what->kind,
		/* ---- egress: a project's steps are commands, in no one language ---- */
		.language = strcmp(what->kind, "project") ? bh_language_name(what->language) : "",
		.code = code,
		.held_unix_ms = (int64_t)now_real,
		.deadline_unix_ms = (int64_t)(now_real + a->timeout_ms),
		.n_files = (uint32_t)what->n_files,
		.code_bytes = what->code_len,
	};
	snprintf(row.request_sha256, sizeof row.request_sha256, "%s", what->request_sha256);
	wire_operator_approval_copy(&h->row, &row);
	h->files = xzalloc((what->n_files ? what->n_files : 1) * sizeof *h->files);
	h->n_files = what->n_files;
	size_t shown = 0;
	for (size_t i = 0; i < what->n_files; i++) {
		struct wire_operator_approval_file *f = &h->files[i];
		wire_operator_approval_file_of(f, id, what->files[i].path, what->files[i].content,
					       what->files[i].len);
		/* Two hundred files of 64 KiB would make one call's listing
		 * large: past the call's budget a file is named, not shown. */
		size_t len = strlen(f->text);
		if (shown + len > WIRE_APPROVAL_FILES_TEXT_MAX) {
			free((char *)f->text);
			f->text = xstrdup("");
			f->truncated = len > 0 || f->truncated;
			len = 0;
		}
		shown += len;
	}
	h->c = c;
	h->deadline_ms = now_mono_ms() + a->timeout_ms;
	struct held **tail = &a->list;
	while (*tail)
		tail = &(*tail)->next;
	*tail = h;
	a->n++;
	s->metrics.approvals_waiting = a->n;
	call_pending(c, NULL, NULL); /* parked: the connection waits, the engine has nothing */
	char span[32], what_text[96];
	span_text(a->timeout_ms, span, sizeof span);
	snprintf(what_text, sizeof what_text, "held (waits up to %s)", span);
	note(s, h, what_text);
}

/* The figures /metrics shows: held now, and how each wait ended. */
static void count(struct server *s, enum metrics_approval outcome)
{
	s->metrics.approvals[outcome]++;
	s->metrics.approvals_waiting = s->approvals->n;
}

static struct held *unlink_id(struct approvals *a, const char *id)
{
	for (struct held **p = &a->list; *p; p = &(*p)->next)
		if (!strcmp((*p)->row.id, id)) {
			struct held *h = *p;
			*p = h->next;
			a->n--;
			return h;
		}
	return NULL;
}

/* Refuses a held call not dispatched and lets its connection answer. */
static void refuse_held(struct held *h, enum wire_code code, enum wire_refusal reason,
			const char *msg)
{
	struct call *c = h->c;
	if (!c->gone)
		call_refuse(c, code, reason, "%s", msg);
	call_wake(c); /* frees a call whose client went away */
}

/* A suspended connection is not watched by libmicrohttpd: a client that
 * hung up while its call was held is seen here, on its socket. */
static bool hung_up(const struct call *c)
{
	int fd = c->watch ? c->watch->fd : -1;
	if (fd < 0)
		return false;
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The client hung up while its call was held: nobody waits for a decision,
 * so none is asked for (and an approval could run code no one reads). */
static void drop_gone(struct server *s)
{
	struct approvals *a = s->approvals;
	for (struct held **p = &a->list; *p;) {
		struct held *h = *p;
		if (!h->c->gone && !hung_up(h->c)) {
			p = &h->next;
			continue;
		}
		*p = h->next;
		a->n--;
		count(s, METRICS_DROPPED);
		note(s, h, "dropped: the client went away while it was held; nothing ran");
		refuse_held(h, WIRE_CANCELED, WIRE_REFUSAL_REQUEST,
			    "the client went away while the call was held; nothing ran");
		held_free(h);
	}
}

void approvals_tick(struct server *s)
{
	struct approvals *a = s->approvals;
	if (!a)
		return;
	drop_gone(s);
	uint64_t now = now_mono_ms();
	for (struct held **p = &a->list; *p;) {
		struct held *h = *p;
		if (h->deadline_ms > now) {
			p = &h->next;
			continue;
		}
		*p = h->next;
		a->n--;
		char span[32], msg[128];
		span_text(a->timeout_ms, span, sizeof span);
		snprintf(msg, sizeof msg, "no one approved within %s", span);
		count(s, METRICS_TIMED_OUT);
		struct bh_actor clock = {.name = BH_ACTOR_APPROVAL_CLOCK}; /* ---- remote ---- */
		note_why(s, h, msg, NULL, &clock);
		char answer[192];
		snprintf(answer, sizeof answer, "%s; nothing ran", msg);
		refuse_held(h, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION, answer);
		held_free(h);
	}
}

void approvals_refuse_all(struct server *s, const char *why)
{
	struct approvals *a = s->approvals;
	while (a && a->list) {
		struct held *h = a->list;
		a->list = h->next;
		a->n--;
		count(s, METRICS_DROPPED);
		note(s, h, why);
		refuse_held(h, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY, why);
		held_free(h);
	}
}

void approvals_list(const struct server *s, struct wire_operator_approvals *out)
{
	const struct approvals *a = s->approvals;
	memset(out, 0, sizeof *out);
	size_t n_files = 0, i = 0, f = 0;
	for (const struct held *h = a->list; h; h = h->next)
		n_files += h->n_files;
	out->approvals = xzalloc((a->n ? a->n : 1) * sizeof *out->approvals);
	out->files = xzalloc((n_files ? n_files : 1) * sizeof *out->files);
	size_t budget = WIRE_APPROVAL_ANSWER_TEXT_MAX;
	for (const struct held *h = a->list; h; h = h->next) {
		if (h->c->gone)
			continue; /* dropped at the next tick */
		/* Oldest first within the answer's budget: what does not fit is
		 * listed without its code and text (decide the older ones first). */
		size_t cost = wire_operator_json_string_cost(h->row.code);
		for (size_t k = 0; k < h->n_files; k++)
			cost += wire_operator_json_string_cost(h->files[k].text);
		bool fits = cost <= budget;
		budget -= fits ? cost : 0;
		out->approvals[i] = h->row;
		if (!fits) {
			out->approvals[i].code = "";
			out->approvals[i].code_omitted = true;
		}
		i++;
		for (size_t k = 0; k < h->n_files; k++) {
			out->files[f] = h->files[k];
			if (!fits) {
				out->files[f].text = "";
				out->files[f].truncated = true;
			}
			f++;
		}
	}
	out->n = i;
	out->n_files = f;
	out->cap_total = a->cap;
	out->cap_per_principal = a->cap_per_principal;
	out->timeout_ms = a->timeout_ms;
}

int approvals_decide(struct server *s, const struct wire_operator_decision *d,
		     const struct bh_actor *decider, enum wire_code *code, char *why, size_t why_len)
{
	const char *by = decider->name ? decider->name : BH_ACTOR_ENGINE;
	struct approvals *a = s->approvals;
	drop_gone(s);
	struct held *h = a ? unlink_id(a, d->id) : NULL;
	if (!h) {
		*code = WIRE_NOT_FOUND;
		snprintf(why, why_len,
			 "no call with id %s waits for approval (decided already, timed out, its "
			 "client went away, or never held)",
			 d->id);
		return -1;
	}
	struct call *c = h->c;
	bool approve = !strcmp(d->decision, "approve");
	count(s, approve ? METRICS_APPROVED : METRICS_DENIED);
	char who[CLIENTS_NAME_MAX + 32];
	snprintf(who, sizeof who, "%s by %s", approve ? "approved" : "denied", by);
	note_why(s, h, who, d->reason, decider);
	if (!approve) {
		char msg[WIRE_APPROVAL_REASON_MAX + 160];
		snprintf(msg, sizeof msg, "denied by %s: %s; nothing ran", by, d->reason);
		refuse_held(h, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION, msg);
		held_free(h);
		return 0;
	}
	/* As if it had just arrived: its own handler decodes it again and hands
	 * it to the engine. */
	char procedure[16];
	snprintf(procedure, sizeof procedure, "%s", h->row.procedure);
	held_free(h);
	c->approved = true;
	c->engine_pending = false;
	sandbox_service(c, procedure);
	if (!c->engine_pending)
		call_wake(c); /* answered at once (its session ended meanwhile, say) */
	return 0;
}
