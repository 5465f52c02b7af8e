/* The transport: libcurl's multi socket interface driven from the host's
 * loop. libcurl says which sockets it wants watched (a small table kept
 * here) and when to wake it (a one-shot timer); the host polls, and every
 * finished exchange is handed to its callback from bh_client_process*.
 * Each exchange is one POST with Connect's headers, the bearer token and a
 * fresh request id; what came back is judged by the layers above. */
#include "client_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

struct xfer {
	bh_client *c;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	char request_id[CLIENT_REQUEST_ID_LEN + 1];
	char *answer;
	size_t len, cap;
	unsigned echoes;           /* Plimsoll-Request-Id headers in the final answer */
	bool echo_matches;         /* ... and every one equal to ours */
	char mark[32];
	bool too_large;
	char errbuf[CURL_ERROR_SIZE];
	bh_client_http_cb cb;
	void *arg;
	struct xfer *prev, *next;
	char procedure[40]; /* ---- hops ---- for the tap */
	char tls_why[CURL_ERROR_SIZE + 256]; /* ---- tls: the reason, naming the host ---- */
};

/* ---- libcurl's wishes: sockets and the timer ---- */

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy, (void)socketp;
	bh_client *c = userp;
	size_t i = 0;
	while (i < c->n_watch && c->watch[i].fd != fd)
		i++;
	if (what == CURL_POLL_REMOVE) {
		if (i < c->n_watch)
			c->watch[i] = c->watch[--c->n_watch];
		return 0;
	}
	if (i == c->n_watch) {
		if (c->n_watch == c->cap_watch) {
			c->cap_watch = c->cap_watch ? 2 * c->cap_watch : 8;
			c->watch = realloc(c->watch, c->cap_watch * sizeof *c->watch);
			if (!c->watch)
				abort();
		}
		c->n_watch++;
	}
	c->watch[i].fd = fd;
	c->watch[i].events = (short)((what & CURL_POLL_IN ? POLLIN : 0) |
				     (what & CURL_POLL_OUT ? POLLOUT : 0));
	return 0;
}

/* One-shot: -1 cancels it, 0 means now. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	bh_client *c = userp;
	c->timer_ms = timeout_ms;
	c->timer_set_at_ms = now_mono_ms();
	return 0;
}

size_t bh_client_pollfds(bh_client *c, struct pollfd *fds, size_t max)
{
	for (size_t i = 0; i < c->n_watch && i < max; i++)
		fds[i] = (struct pollfd){.fd = c->watch[i].fd, .events = c->watch[i].events};
	return c->n_watch;
}

int bh_client_timeout_ms(bh_client *c)
{
	if (c->timer_ms < 0)
		return -1;
	uint64_t elapsed = now_mono_ms() - c->timer_set_at_ms;
	if (elapsed >= (uint64_t)c->timer_ms)
		return 0;
	uint64_t left = (uint64_t)c->timer_ms - elapsed;
	return left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* ---- finished exchanges ---- */

static void xfer_unlink(bh_client *c, struct xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		c->xfers = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
}

static void xfer_free(struct xfer *x)
{
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	free(x->body);
	free(x->answer);
	free(x);
}

/* Whether a failed exchange can have delivered a byte of the request: only
 * a failure to reach the daemon at all proves it did not. */
static bool never_sent(CURLcode rc, CURL *easy)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return true;
	default:
		break;
	}
	long sent = 0;
	return curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK && sent == 0;
}

/* ---- tls ---- */
/* The host:port of the base URL, for messages. */
static const char *base_host(const bh_client *c)
{
	const char *h = strstr(c->base, "://");
	return h ? h + 3 : c->base;
}

/* A failure whose cause is TLS (or its absence) says so with the host in
 * it; any other keeps libcurl's words. */
static const char *transport_reason(bh_client *c, struct xfer *x, CURLcode rc)
{
	const char *curl_why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
	bool https = !strncmp(c->base, "https://", 8);
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
		snprintf(x->tls_why, sizeof x->tls_why,
			 "the TLS certificate of %s does not verify: %s", base_host(c), curl_why);
		return x->tls_why;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_SHUTDOWN_FAILED:
		snprintf(x->tls_why, sizeof x->tls_why, "TLS with %s failed: %s", base_host(c), curl_why);
		return x->tls_why;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
		if (https || c->unix_path)
			break;
		snprintf(x->tls_why, sizeof x->tls_why,
			 "%s (%s closed the connection without an HTTP answer: if it serves TLS, "
			 "attach with https://)", curl_why, base_host(c));
		return x->tls_why;
	default:
		break;
	}
	return curl_why;
}

static void finish(bh_client *c, struct xfer *x, CURLcode rc)
{
	curl_multi_remove_handle(c->multi, x->easy);
	xfer_unlink(c, x);
	long status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	struct bh_client_http a = {
		.status = rc == CURLE_OK ? status : 0, /* a cut answer is no answer */
		.body = x->answer ? x->answer : "",
		.len = rc == CURLE_OK ? x->len : 0,
		.bound = x->echoes == 1 && x->echo_matches,
		.request_id = x->request_id,
		.mark = x->mark,
		.too_large = x->too_large || rc == CURLE_FILESIZE_EXCEEDED,
		.timed_out = rc == CURLE_OPERATION_TIMEDOUT,
		.transport_error = "",
	};
	if (rc != CURLE_OK) {
		a.body = "";
		a.unsent = never_sent(rc, x->easy);
		a.transport_error = transport_reason(c, x, rc); /* ---- tls ---- */
	}
	if (c->tap) /* ---- hops ---- */
		c->tap(c->tap_arg, x->procedure, x->body, a.status, a.body);
	x->cb(x->arg, &a);
	xfer_free(x);
}

static void drain(bh_client *c)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct xfer *x = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		finish(c, x, m->data.result);
	}
}

void bh_client_process(bh_client *c, int fd, short revents)
{
	int flags = 0, running = 0;
	if (revents & (POLLIN | POLLHUP))
		flags |= CURL_CSELECT_IN; /* a hang-up is read to find the end */
	if (revents & POLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (POLLERR | POLLNVAL))
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(c->multi, fd, flags, &running);
	drain(c);
}

void bh_client_process_timeout(bh_client *c)
{
	int running = 0;
	c->timer_ms = -1; /* spent: libcurl sets a new one if it wants */
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	drain(c);
}

void bh_client_process_pollfds(bh_client *c, const struct pollfd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].revents)
			bh_client_process(c, fds[i].fd, fds[i].revents);
	if (bh_client_timeout_ms(c) == 0)
		bh_client_process_timeout(c);
}

size_t bh_client_pending(const bh_client *c)
{
	size_t n = c->queued;
	for (const struct xfer *x = c->xfers; x; x = x->next)
		n++;
	return n;
}

int bh_client_wait(bh_client *c, const bool *done, int timeout_ms)
{
	uint64_t until = timeout_ms < 0 ? 0 : now_mono_ms() + (uint64_t)timeout_ms;
	struct pollfd *fds = NULL;
	size_t cap = 0;
	int rc = 0;
	while (!*done) {
		if (!bh_client_pending(c)) {
			rc = -1; /* nothing could ever set *done */
			break;
		}
		size_t n = bh_client_pollfds(c, fds, cap);
		if (n > cap) {
			cap = n;
			fds = realloc(fds, cap * sizeof *fds);
			if (!fds)
				abort();
			n = bh_client_pollfds(c, fds, cap);
		}
		int t = bh_client_timeout_ms(c);
		if (timeout_ms >= 0) {
			uint64_t now = now_mono_ms();
			if (now >= until) {
				rc = -1;
				break;
			}
			int left = (int)(until - now);
			t = t < 0 || t > left ? left : t;
		}
		if (poll(fds, n, t) < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		bh_client_process_pollfds(c, fds, n);
	}
	free(fds);
	return rc;
}

/* ---- starting an exchange ---- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (x->len + len > BH_CLIENT_MAX_ANSWER) {
		x->too_large = true;
		return 0; /* libcurl stops the transfer */
	}
	if (x->len + len + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 4096;
		while (cap < x->len + len + 1)
			cap *= 2;
		x->answer = realloc(x->answer, cap);
		if (!x->answer)
			abort();
		x->cap = cap;
	}
	memcpy(x->answer + x->len, p, len);
	x->len += len;
	x->answer[x->len] = '\0';
	return len;
}

/* Only the final answer's headers count: a status line starts them over. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		x->echoes = 0;
		x->echo_matches = true;
		x->mark[0] = '\0';
		return len;
	}
	const char *colon = memchr(p, ':', len);
	if (!colon)
		return len;
	size_t name_len = (size_t)(colon - p);
	const char *v = colon + 1, *end = p + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vlen = (size_t)(end - v);
	if (name_len == 19 && !strncasecmp(p, "Plimsoll-Request-Id", 19)) {
		x->echoes++;
		if (vlen != CLIENT_REQUEST_ID_LEN || memcmp(v, x->request_id, vlen))
			x->echo_matches = false;
	} else if (name_len == 23 && !strncasecmp(p, "Plimsoll-Not-Dispatched", 23)) {
		snprintf(x->mark, sizeof x->mark, "%.*s", (int)(vlen < 31 ? vlen : 31), v);
	}
	return len;
}

static int new_request_id(char out[CLIENT_REQUEST_ID_LEN + 1])
{
	uint8_t r[CLIENT_REQUEST_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

static void add_header(struct xfer *x, const char *h)
{
	struct curl_slist *l = curl_slist_append(x->headers, h);
	if (!l)
		abort();
	x->headers = l;
}

static void count_procedure(bh_client *c, const char *path)
{
	const char *name = strrchr(path, '/');
	name = name ? name + 1 : path;
	size_t i = 0;
	while (i < c->n_counts && strcmp(c->counts[i].name, name))
		i++;
	if (i == c->n_counts) {
		if (c->n_counts == sizeof c->counts / sizeof c->counts[0])
			return;
		snprintf(c->counts[i].name, sizeof c->counts[i].name, "%s", name);
		c->n_counts++;
	}
	c->counts[i].n++;
}

uint64_t bh_client_procedure_count(const bh_client *c, const char *procedure)
{
	for (size_t i = 0; i < c->n_counts; i++)
		if (!strcmp(c->counts[i].name, procedure))
			return c->counts[i].n;
	return 0;
}

struct xfer *xfer_start(bh_client *c, const char *path, const char *json, bh_client_http_cb cb,
			void *arg, struct bh_client_error **err)
{
	count_procedure(c, path);
	struct xfer *x = xzalloc(sizeof *x);
	x->c = c;
	x->cb = cb;
	x->arg = arg;
	x->echo_matches = true;
	if (new_request_id(x->request_id) < 0) {
		free(x);
		client_fail(err, client_error(WIRE_UNAVAILABLE, WIRE_REFUSAL_ENVIRONMENT,
					      "no randomness for a request id: %s", strerror(errno)));
		return NULL;
	}
	x->easy = curl_easy_init();
	if (!x->easy)
		abort();
	x->body = xstrdup(json);
	const char *procedure = strrchr(path, '/'); /* ---- hops ---- */
	snprintf(x->procedure, sizeof x->procedure, "%s", procedure ? procedure + 1 : path);
	cleanup_free char *url = xasprintf("%s/%s", c->base, path[0] == '/' ? path + 1 : path);
	cleanup_free char *rid = xasprintf("Plimsoll-Request-Id: %s", x->request_id);
	add_header(x, "Content-Type: application/json");
	add_header(x, "Connect-Protocol-Version: 1");
	add_header(x, rid);
	add_header(x, "Expect:"); /* no 100-continue round trip before the body */
	if (c->auth)
		add_header(x, c->auth);
	CURL *e = x->easy;
	curl_easy_setopt(e, CURLOPT_URL, url);
	if (c->unix_path)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(x->body));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	/* A Connect call is never redirected: a redirect is the answer. */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)BH_CLIENT_MAX_ANSWER);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->call_timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)x);
	/* ---- tls: the daemon's CA and our certificate; verification stays on ---- */
	if (c->cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->cacert);
	if (c->client_cert)
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->client_cert);
	if (c->client_key)
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->client_key);
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	CURLMcode mrc = curl_multi_add_handle(c->multi, e);
	if (mrc != CURLM_OK) {
		client_fail(err, client_error(WIRE_UNAVAILABLE, WIRE_REFUSAL_ENVIRONMENT, "libcurl: %s",
					      curl_multi_strerror(mrc)));
		xfer_free(x);
		return NULL;
	}
	x->next = c->xfers;
	if (c->xfers)
		c->xfers->prev = x;
	c->xfers = x;
	return x;
}

void xfer_abandon(bh_client *c, struct xfer *x)
{
	curl_multi_remove_handle(c->multi, x->easy);
	xfer_unlink(c, x);
	xfer_free(x);
}

int bh_client_call_async(bh_client *c, const char *path, const char *json, bh_client_http_cb cb,
			 void *arg, struct bh_client_error **err)
{
	return xfer_start(c, path, json, cb, arg, err) ? 0 : -1;
}

/* ---- hops ---- */
void bh_client_set_tap(bh_client *c, bh_client_tap_cb cb, void *arg)
{
	c->tap = cb;
	c->tap_arg = arg;
}

/* ---- the client ---- */

void bh_client_free(bh_client *c)
{
	if (!c)
		return;
	while (c->xfers)
		xfer_abandon(c, c->xfers);
	curl_multi_cleanup(c->multi);
	free(c->watch);
	free(c->target);
	free(c->base);
	free(c->unix_path);
	free(c->cacert); /* ---- tls ---- */
	free(c->client_cert);
	free(c->client_key);
	if (c->auth) {
		explicit_bzero(c->auth, strlen(c->auth));
		free(c->auth);
	}
	free(c);
}

const char *bh_client_target(const bh_client *c)
{
	return c->target;
}

/* target.c */
int client_parse_target(const char *target, char **base, char **unix_path,
			struct bh_client_error **err);

int bh_client_new(const struct bh_client_options *opts, bh_client **out,
		  struct bh_client_error **err)
{
	static bool curl_ready;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return client_fail(err, client_error(WIRE_UNAVAILABLE, WIRE_REFUSAL_ENVIRONMENT,
							     "libcurl could not start"));
		curl_ready = true;
	}
	const char *tok = opts->token;
	if (tok && *tok && strpbrk(tok, "\r\n \t"))
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "the token holds whitespace or a line break"));
	bh_client *c = xzalloc(sizeof *c);
	if (client_parse_target(opts->target, &c->base, &c->unix_path, err) < 0) {
		free(c);
		return -1;
	}
	c->target = xstrdup(opts->target);
	/* ---- tls ---- */
	if (!opts->client_cert != !opts->client_key) {
		bh_client_free(c);
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "a client certificate needs its key (and a key "
						     "its certificate)"));
	}
	c->cacert = opts->cacert && *opts->cacert ? xstrdup(opts->cacert) : NULL;
	c->client_cert = opts->client_cert ? xstrdup(opts->client_cert) : NULL;
	c->client_key = opts->client_key ? xstrdup(opts->client_key) : NULL;
	if (tok && *tok)
		c->auth = xasprintf("Authorization: Bearer %s", tok);
	c->connect_timeout_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 10000;
	c->call_timeout_ms = opts->call_timeout_ms ? opts->call_timeout_ms : 6 * 60 * 1000;
	c->timer_ms = -1;
	c->multi = curl_multi_init();
	if (!c->multi)
		abort();
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	*out = c;
	return 0;
}
