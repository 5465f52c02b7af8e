/* One HTTP request through libmicrohttpd: its header checked (listener
 * rules, size, auth, admission), its body gathered within the limits, its
 * procedure dispatched, and its answer sent — at once, or after the engine
 * called back, with the connection suspended meanwhile. */
#include "daemon_priv.h"
#include "front_door.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SANDBOX_PREFIX "/plimsoll.v1.SandboxService/"
#define OPERATOR_PREFIX "/bulkhead.v1.OperatorService/"

/* ---- answers ---- */

void call_answer_text(struct call *c, unsigned status, const char *content_type, char *text)
{
	if (c->answered) {
		free(text);
		return;
	}
	c->answered = true;
	c->status = status;
	c->content_type = content_type;
	c->answer = text;
	c->answer_len = text ? strlen(text) : 0;
}

void call_answer_json(struct call *c, char *json)
{
	c->code = WIRE_OK;
	call_answer_text(c, 200, "application/json", json);
}

void call_answer_error(struct call *c, const struct wire_error *err)
{
	c->code = err->code;
	if (err->not_dispatched && err->reason < 8)
		c->srv->metrics.refusals[err->reason]++;
	call_answer_text(c, (unsigned)wire_code_http_status(err->code), "application/json",
			 wire_encode_error(err));
}

void call_refuse(struct call *c, enum wire_code code, enum wire_refusal reason, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct wire_error err = {
		.code = code,
		.message = msg,
		.not_dispatched = reason != WIRE_REFUSAL_UNSPECIFIED,
		.reason = reason,
	};
	call_answer_error(c, &err);
}

void call_answer_bh(struct call *c, const bh_error *err, const struct bh_record *unanswered)
{
	struct wire_error e;
	wire_error_from_bh(err, unanswered, &e);
	call_answer_error(c, &e);
	wire_error_free(&e);
}

void call_not_started(struct call *c, bh_error *err)
{
	c->engine_pending = false;
	call_answer_bh(c, err, NULL);
	bh_error_free(err);
}

void call_pending(struct call *c, void *ctx, void (*ctx_free)(void *))
{
	c->ctx = ctx;
	c->ctx_free = ctx_free;
	c->engine_pending = true;
}

static void call_free(struct call *c)
{
	struct server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->ctx_free)
		c->ctx_free(c->ctx);
	if (c->admitted)
		ratelimit_release(s->rl, c->who.name);
	free(c->body);
	free(c->answer);
	free(c->relay);
	free(c);
}

static void deliver_headless(struct call *c);
static void check_header(struct call *c, const char *url, const char *method);
static void dispatch(struct call *c, const char *url);
static struct call *call_alloc(struct server *s, struct listener *l, const char *url);
static struct call *call_enlist(struct call *c);

void call_wake(struct call *c)
{
	c->engine_pending = false;
	if (c->headless) { /* ---- fleet: back to the host that forwarded it ---- */
		if (!c->in_dispatch)
			deliver_headless(c);
		return;
	}
	if (c->gone) {
		call_free(c);
		return;
	}
	if (c->suspended) {
		c->suspended = false;
		if (c->watch) {
			c->watch->phase = CONN_BODY; /* answering: libmicrohttpd's timeout applies */
			c->watch->since_ms = now_mono_ms();
		}
		MHD_resume_connection(c->conn);
	}
}

/* ---- fleet: an answer relayed from the session's owner, byte for byte ---- */
#define RELAY_HEADERS 16u
struct call_relay {
	size_t n;
	const char *names[RELAY_HEADERS], *values[RELAY_HEADERS];
	char buf[]; /* the strings */
};

void call_answer_relayed(struct call *c, unsigned status, size_t n_headers,
			 const char *const *names, const char *const *values, const uint8_t *body,
			 size_t body_len)
{
	if (c->answered)
		return;
	if (n_headers > RELAY_HEADERS)
		n_headers = RELAY_HEADERS;
	size_t need = 0;
	for (size_t i = 0; i < n_headers; i++)
		need += strlen(names[i]) + strlen(values[i]) + 2;
	struct call_relay *r = malloc(sizeof *r + need);
	char *answer = malloc(body_len + 1);
	if (!r || !answer)
		abort();
	char *p = r->buf;
	r->n = 0;
	for (size_t i = 0; i < n_headers; i++) {
		size_t ln = strlen(names[i]) + 1, lv = strlen(values[i]) + 1;
		r->names[r->n] = memcpy(p, names[i], ln);
		p += ln;
		r->values[r->n++] = memcpy(p, values[i], lv);
		p += lv;
	}
	if (body_len)
		memcpy(answer, body, body_len);
	answer[body_len] = '\0';
	free(c->relay);
	c->relay = r;
	c->answered = true;
	c->status = status;
	c->content_type = NULL; /* the relayed headers carry it */
	c->answer = answer;
	c->answer_len = body_len;
	/* For the metrics and the audit line: the code the owner answered. */
	if (status == 200) {
		c->code = WIRE_OK;
	} else {
		struct wire_error e;
		wire_decode_error((int)status, answer, body_len, &e);
		c->code = e.code;
		wire_error_free(&e);
	}
}

const char *call_header(const struct call *c, const char *name)
{
	if (!c->headless)
		return c->conn ? MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, name) : NULL;
	for (size_t i = 0; i < c->n_in_headers; i++)
		if (!strcasecmp(c->in_header_names[i], name))
			return c->in_header_values[i];
	return NULL;
}

/* What every answer counts and writes, however it leaves. */
static void answer_counted(struct call *c)
{
	c->srv->metrics.calls[metrics_procedure(c->procedure)][c->code < 17 ? c->code : 2]++;
	audit_call(c->srv, c);
}

static enum MHD_Result send_answer(struct call *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(c->answer_len, c->answer,
								 MHD_RESPMEM_MUST_FREE);
	if (!r)
		return MHD_NO;
	c->answer = NULL; /* the response owns it now */
	if (c->relay) { /* ---- fleet: the owner's headers, as it sent them ---- */
		for (size_t i = 0; i < c->relay->n; i++)
			MHD_add_response_header(r, c->relay->names[i], c->relay->values[i]);
	} else {
		if (c->content_type)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, c->content_type);
		if (c->request_id[0] && !c->request_id_minted) /* ---- ci: attribution ---- */
			MHD_add_response_header(r, "Plimsoll-Request-Id", c->request_id);
		if (c->not_dispatched)
			MHD_add_response_header(r, "Plimsoll-Not-Dispatched", c->not_dispatched);
	}
	enum MHD_Result ret = MHD_queue_response(c->conn, c->status, r);
	MHD_destroy_response(r);
	answer_counted(c);
	return ret;
}

/* ---- fleet: a forwarded call's answer goes back through its deliver,
 * with the headers send_answer would have added; then it is freed ---- */
static void deliver_headless(struct call *c)
{
	if (!c->answered)
		call_refuse(c, WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "the call ended without an answer");
	answer_counted(c);
	c->deliver(c);
	call_free(c);
}

void call_run_headless(struct server *s, const char *path, size_t n_headers,
		       const char *const *names, const char *const *values, const uint8_t *body,
		       size_t body_len, void (*deliver)(struct call *c), void *arg)
{
	/* Through the unix listener's rules: the host that forwarded it judged
	 * its connection (Host, Origin, proxies); here it is authenticated,
	 * admitted and handled as any call. */
	struct call *c = call_alloc(s, &s->ls[0], path);
	c->headless = true;
	c->n_in_headers = n_headers;
	c->in_header_names = names;
	c->in_header_values = values;
	c->deliver = deliver;
	c->deliver_arg = arg;
	call_enlist(c);
	c->in_dispatch = true;
	if (body_len > DAEMON_MAX_BODY) {
		call_refuse_early(c, 413, WIRE_RESOURCE_EXHAUSTED, "request",
				  "the body is larger than 8 MiB");
	} else {
		c->body = malloc(body_len + 1);
		if (!c->body)
			abort();
		if (body_len)
			memcpy(c->body, body, body_len);
		c->body[body_len] = '\0';
		c->body_len = body_len;
		c->body_cap = body_len + 1;
		check_header(c, path, "POST");
		if (!c->answered)
			dispatch(c, path);
	}
	c->in_dispatch = false;
	if (!c->engine_pending)
		deliver_headless(c);
}

/* A refusal made before the handler: no detail, so the header carries the
 * mark (Plimsoll-Not-Dispatched: plimsoll's clients read it when an error has
 * no detail; docs/api.md, Errors). */
void call_refuse_early(struct call *c, unsigned status, enum wire_code code, const char *mark,
		       const char *msg)
{
	c->not_dispatched = mark;
	struct wire_error err = {.code = code, .message = msg};
	c->code = code;
	call_answer_text(c, status, "application/json", wire_encode_error(&err));
}

/* ---- the header ---- */

static bool request_id_ok(const char *v)
{
	size_t n = strlen(v);
	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      ch == '-'))
			return false;
	}
	return true;
}

static bool scope_for(const struct call *c, unsigned *scope)
{
	/* It tells how busy every tenant is: an operator's, unless the
	 * operator chose to serve it to anyone (serve --metrics-open). */
	if (!strcmp(c->procedure, "metrics") && !c->srv->cfg->metrics_open) {
		*scope = CLIENT_SCOPE_OPERATOR;
		return true;
	}
	/* The prefix without its leading '/': the procedure is named without it. */
	if (!strncmp(c->procedure, &SANDBOX_PREFIX[1], strlen(SANDBOX_PREFIX) - 1)) {
		*scope = CLIENT_SCOPE_CODE_RUN;
		return true;
	}
	if (!strncmp(c->procedure, &OPERATOR_PREFIX[1], strlen(OPERATOR_PREFIX) - 1)) {
		*scope = CLIENT_SCOPE_OPERATOR;
		return true;
	}
	return false;
}

/* Auth and admission, once the header is in. False when answered. */
static bool admit(struct call *c)
{
	struct server *s = c->srv;
	unsigned scope = 0;
	if (!scope_for(c, &scope))
		return true; /* health, readiness: no principal */
	if (!s->clients) {
		snprintf(c->who.name, sizeof c->who.name, "anonymous");
		c->who.scopes = CLIENT_SCOPE_CODE_RUN | CLIENT_SCOPE_OPERATOR;
	} else {
		const char *h = call_header(c, MHD_HTTP_HEADER_AUTHORIZATION);
		const char *tok = NULL;
		size_t len = 0;
		/* ---- tls: a verified client certificate names a client, with
		 * or instead of a token; both must then name the same one ---- */
		struct client_principal by_cert;
		char cert_why[320];
		int cert = front_door_certificate(c, &by_cert, cert_why, sizeof cert_why);
		if (cert < 0) {
			s->metrics.unauthenticated++;
			call_refuse(c, WIRE_UNAUTHENTICATED, WIRE_REFUSAL_PERMISSION, "%s", cert_why);
			return false;
		}
		if (cert > 0 && !h) {
			c->who = by_cert;
		} else if (!h || clients_bearer_token(h, &tok, &len) < 0 ||
		    clients_authenticate(s->clients, tok, len, &c->who) < 0) {
			s->metrics.unauthenticated++;
			call_refuse(c, WIRE_UNAUTHENTICATED, WIRE_REFUSAL_PERMISSION,
				    h ? "the bearer token is not valid" : "a bearer token is required");
			return false;
		} else if (cert > 0 && strcmp(by_cert.name, c->who.name)) {
			s->metrics.unauthenticated++;
			call_refuse(c, WIRE_UNAUTHENTICATED, WIRE_REFUSAL_PERMISSION,
				    "the bearer token and the client certificate name different clients");
			return false;
		}
	}
	if (!client_has_scope(&c->who, (enum client_scope)scope)) {
		call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_PERMISSION,
			    "this token lacks the %s scope",
			    scope == CLIENT_SCOPE_OPERATOR ? "operator" : "code:run");
		return false;
	}
	uint64_t retry = 0;
	enum ratelimit_verdict v = ratelimit_admit(s->rl, c->who.name, now_mono_ms(), &retry);
	if (v != RATELIMIT_ADMIT) {
		call_refuse(c, WIRE_RESOURCE_EXHAUSTED, WIRE_REFUSAL_CAPACITY,
			    "too many calls (%s)%s", ratelimit_verdict_name(v),
			    v == RATELIMIT_RATE ? "; retry later" : "");
		return false;
	}
	c->admitted = true;
	return true;
}

static struct call *call_alloc(struct server *s, struct listener *l, const char *url)
{
	struct call *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->srv = s;
	c->via = l;
	c->t0_us = now_mono_us();
	c->received_unix_ms = (int64_t)now_real_ms();
	c->code = WIRE_OK;
	snprintf(c->procedure, sizeof c->procedure, "%s", url[0] == '/' ? url + 1 : url);
	return c;
}

/* The request id the client sent, else one of ours; then the call is listed. */
static struct call *call_enlist(struct call *c)
{
	struct server *s = c->srv;
	const char *rid = call_header(c, "Plimsoll-Request-Id");
	if (rid && request_id_ok(rid))
		snprintf(c->request_id, sizeof c->request_id, "%s", rid);
	/* ---- ci: attribution: every call has a request id the audit line and
	 * the events it causes share; one the client did not send is not echoed ---- */
	else if (call_mint_request_id(c->request_id, sizeof c->request_id) == 0)
		c->request_id_minted = true;
	c->next = s->calls;
	if (s->calls)
		s->calls->prev = c;
	s->calls = c;
	return c;
}

static struct call *call_new(struct listener *l, struct MHD_Connection *conn, const char *url)
{
	struct call *c = call_alloc(l->srv, l, url);
	c->conn = conn;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	c->watch = ci ? ci->socket_context : NULL;
	if (c->watch) {
		c->watch->phase = CONN_BODY;
		c->watch->since_ms = now_mono_ms();
	}
	return call_enlist(c);
}

/* Everything that can be judged from the header alone. */
static void check_header(struct call *c, const char *url, const char *method)
{
	struct server *s = c->srv;
	if (c->via->tcp) {
		const char *why = front_door_refusal(c); /* ---- tls: allowed hosts, proxies ---- */
		if (why) {
			call_refuse_early(c, 403, WIRE_PERMISSION_DENIED, "permission", why);
			return;
		}
	}
	bool rpc = !strncmp(url, SANDBOX_PREFIX, strlen(SANDBOX_PREFIX)) ||
		   !strncmp(url, OPERATOR_PREFIX, strlen(OPERATOR_PREFIX));
	if (!rpc) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			call_refuse_early(c, 404, WIRE_UNIMPLEMENTED, "unsupported", "no such procedure");
		else if (!strcmp(url, "/metrics"))
			admit(c); /* the operator's token, unless --metrics-open */
		return; /* health, readiness, metrics: answered at the end */
	}
	if (strcmp(method, "POST")) {
		call_refuse_early(c, 405, WIRE_UNIMPLEMENTED, "unsupported",
			     "procedures are called with POST (Connect unary)");
		return;
	}
	if (s->draining) {
		call_refuse(c, WIRE_UNAVAILABLE, WIRE_REFUSAL_CAPACITY,
			    "the daemon is shutting down; nothing ran");
		return;
	}
	const char *ct = call_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strncasecmp(ct, "application/json", 16) || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
		call_refuse_early(c, 415, WIRE_INVALID_ARGUMENT, "request",
			     "the body must be Connect JSON (Content-Type: application/json)");
		return;
	}
	const char *cpv = call_header(c, "Connect-Protocol-Version");
	if (cpv && strcmp(cpv, "1")) {
		call_refuse_early(c, 400, WIRE_INVALID_ARGUMENT, "request",
			     "Connect-Protocol-Version must be 1");
		return;
	}
	const char *cl = call_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > DAEMON_MAX_BODY) {
		call_refuse_early(c, 413, WIRE_RESOURCE_EXHAUSTED, "request",
			     "the body is larger than 8 MiB");
		return;
	}
	admit(c);
}

static void dispatch(struct call *c, const char *url)
{
	c->dispatched = true;
	if (!strncmp(url, SANDBOX_PREFIX, strlen(SANDBOX_PREFIX)))
		sandbox_service(c, url + strlen(SANDBOX_PREFIX));
	else if (!strncmp(url, OPERATOR_PREFIX, strlen(OPERATOR_PREFIX)))
		operator_service(c, url + strlen(OPERATOR_PREFIX));
	else
		health_endpoint(c, url);
}

enum MHD_Result daemon_on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	(void)version;
	struct listener *l = cls;
	struct call *c = *con_cls;
	if (!c) {
		c = call_new(l, conn, url);
		*con_cls = c;
		check_header(c, url, method);
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (c->answered)
			return MHD_YES; /* refused already: the body is read and dropped */
		if (c->body_len + n > DAEMON_MAX_BODY)
			return MHD_NO; /* announced nothing and sent too much: drop the connection */
		if (c->body_len + n + 1 > c->body_cap) {
			size_t cap = c->body_cap ? c->body_cap : 4096;
			while (cap < c->body_len + n + 1)
				cap *= 2;
			char *b = realloc(c->body, cap);
			if (!b)
				return MHD_NO;
			c->body = b;
			c->body_cap = cap;
		}
		memcpy(c->body + c->body_len, upload_data, n);
		c->body_len += n;
		c->body[c->body_len] = '\0';
		return MHD_YES;
	}
	if (!c->answered && !c->dispatched)
		dispatch(c, url);
	if (c->answered)
		return send_answer(c);
	/* The engine answers later: park the connection. */
	c->suspended = true;
	if (c->watch)
		c->watch->phase = CONN_WAITING;
	MHD_suspend_connection(conn);
	return MHD_YES;
}

void daemon_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)toe;
	struct call *c = *con_cls;
	*con_cls = NULL;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_watch *w = ci ? ci->socket_context : NULL;
	if (w) {
		w->phase = CONN_HEADER; /* the next request's header is due */
		w->since_ms = now_mono_ms();
	}
	if (!c)
		return;
	if (c->engine_pending) {
		c->gone = true; /* the engine's callback frees it */
		c->conn = NULL;
		return;
	}
	call_free(c);
}

/* Over its peer's limit: told so in plain HTTP, then closed (libmicrohttpd
 * sees the end of the stream and frees the slot at once). Nothing of it
 * was read. */
static void refuse_connection(struct server *s, struct conn_watch *w)
{
	char who[96], msg[224], head[400];
	peer_describe(&w->peer, who, sizeof who);
	int n = snprintf(msg, sizeof msg,
			 "too many connections from %s: at most %u at once on this listener\n", who,
			 s->per_peer);
	int h = snprintf(head, sizeof head,
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
			 "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
			 n, msg);
	if (write(w->fd, head, (size_t)h) < 0) {
		/* It is closed either way. */
	}
	shutdown(w->fd, SHUT_RDWR);
	w->fd = -1;
	w->refused = true;
	s->metrics.peer_refusals[w->via->tcp]++;
	/* One line at most every 10 s: a flood must not flood the log. */
	s->peer_refusals_unlogged++;
	uint64_t now = now_mono_ms();
	if (now - s->peer_refusal_logged_ms >= 10000) {
		daemon_log(BH_LOG_WARN, "http",
			   "refused %llu connection(s) over the per-peer limit of %u "
			   "(the last from %s on the %s listener)",
			   (unsigned long long)s->peer_refusals_unlogged, s->per_peer, who,
			   w->via->tcp ? "TCP" : "unix");
		s->peer_refusals_unlogged = 0;
		s->peer_refusal_logged_ms = now;
	}
}

void daemon_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct listener *l = cls;
	struct server *s = l->srv;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		struct conn_watch *w = calloc(1, sizeof *w);
		if (!w)
			abort();
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		w->fd = ci ? ci->connect_fd : -1;
		w->phase = CONN_HEADER;
		w->since_ms = now_mono_ms();
		w->via = l;
		peer_identify(w->fd, l->tcp, &w->peer);
		/* One local user, or one remote address, must not hold every
		 * slot of a listener. */
		unsigned held = 0;
		for (const struct conn_watch *o = s->conns; o; o = o->next)
			held += o->via == l && !o->refused && peer_same(&o->peer, &w->peer);
		if (held >= s->per_peer)
			refuse_connection(s, w);
		w->next = s->conns;
		if (s->conns)
			s->conns->prev = w;
		s->conns = w;
		*socket_context = w;
		return;
	}
	struct conn_watch *w = *socket_context;
	if (!w)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		s->conns = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w);
	*socket_context = NULL;
}

/* Called every second: a connection past its phase's deadline is shut down
 * (libmicrohttpd then sees the end of its stream and closes it). */
void daemon_enforce_deadlines(struct server *s)
{
	uint64_t now = now_mono_ms();
	for (struct conn_watch *w = s->conns; w; w = w->next) {
		uint64_t limit = w->phase == CONN_HEADER ? DAEMON_HEADER_DEADLINE_MS
			       : w->phase == CONN_BODY  ? DAEMON_BODY_DEADLINE_MS
							: 0;
		if (limit && w->fd >= 0 && now - w->since_ms > limit) {
			shutdown(w->fd, SHUT_RDWR);
			w->fd = -1;
		}
	}
}

/* ---- ci: attribution ---- */
int call_mint_request_id(char *out, size_t n)
{
	unsigned char r[8];
	if (n < 20 || getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return -1;
	snprintf(out, n, "bh-");
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(out + 3 + 2 * i, n - 3 - 2 * i, "%02x", r[i]);
	return 0;
}
