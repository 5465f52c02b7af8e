/* The broker's life and the engine's ops: one poll thread over every
 * session's listening socket and every idle connection, and a bounded pool
 * of workers, each carrying one request at a time (request.c). An idle
 * session is one fd in the poll set, no thread. */
#include "broker_priv.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CONNS_PER_SESSION 64
#define DEFAULT_WORKERS 16
#define DEFAULT_CLIENT_TIMEOUT_MS 10000
#define DEFAULT_IDLE_TIMEOUT_MS 30000

void broker_wake(struct bh_broker *b)
{
	uint64_t one = 1;
	ssize_t r = write(b->wake_fd, &one, sizeof one);
	(void)r;
}

/* The open session of that fingerprint: one being closed is gone already
 * to the engine (a hibernated session's close and the wake's open of the
 * same fingerprint may follow each other before the poller frees it). */
static struct session *session_find(struct bh_broker *b, const char *fp)
{
	for (struct session *s = b->sessions; s; s = s->next)
		if (!s->closing && !strcmp(s->fp, fp))
			return s;
	return NULL;
}

/* ---- holds ---- */

struct hold *session_hold_get(struct bh_broker *b, struct session *s)
{
	pthread_mutex_lock(&b->mu);
	struct hold *h = s->n_holds && !s->closing ? s->holds[s->n_holds - 1] : NULL;
	if (h)
		h->refs++;
	pthread_mutex_unlock(&b->mu);
	return h;
}

static void hold_free(struct hold *h)
{
	profile_free(h->profile);
	for (size_t i = 0; i < ARRAY_SIZE(h->backoff); i++)
		free(h->backoff[i].origin);
	if (h->credential) {
		OPENSSL_cleanse(h->credential, strlen(h->credential));
		free(h->credential);
	}
	pthread_mutex_destroy(&h->mint_mu);
	free(h);
}

void hold_put(struct bh_broker *b, struct hold *h)
{
	pthread_mutex_lock(&b->mu);
	bool last = --h->refs == 0;
	pthread_mutex_unlock(&b->mu);
	if (last)
		hold_free(h);
}

/* Cuts what is in flight under a hold (all of the session's when hold_id
 * is 0): the sockets are shut down, not closed, so the worker that owns
 * them sees the end and closes them itself. Under b->mu. */
static void cut_conns(struct session *s, uint64_t hold_id)
{
	for (struct conn *c = s->conns; c; c = c->next) {
		if (hold_id && c->hold_id != hold_id)
			continue;
		c->cut = true;
		if (c->busy) {
			shutdown(c->st.fd, SHUT_RDWR);
			if (c->up_fd >= 0)
				shutdown(c->up_fd, SHUT_RDWR);
		}
	}
}

void conn_set_upstream(struct bh_broker *b, struct conn *c, int fd, uint64_t hold_id)
{
	pthread_mutex_lock(&b->mu);
	c->up_fd = fd;
	if (hold_id)
		c->hold_id = hold_id;
	bool cut = c->cut;
	pthread_mutex_unlock(&b->mu);
	if (cut && fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

/* ---- the engine's ops ---- */

static int op_open_session(void *arg, const char *session_fp, const char *socket_path,
			   bh_error **err)
{
	struct bh_broker *b = arg;
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof addr.sun_path)
		return broker_fail(err, BH_E_INVALID, 0, "broker: socket path %s is too long",
				   socket_path);
	strcpy(addr.sun_path, socket_path);
	cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker: socket");
	unlink(socket_path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker: binding %s", socket_path);
	/* The sandbox's uid (a mapped one) must connect; who may reach the
	 * socket at all is the engine's directory's business. */
	if (chmod(socket_path, 0666) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		unlink(socket_path);
		return broker_fail(err, BH_E_SYSTEM, e, "broker: listening on %s", socket_path);
	}
	pthread_mutex_lock(&b->mu);
	if (session_find(b, session_fp)) {
		pthread_mutex_unlock(&b->mu);
		unlink(socket_path);
		return broker_fail(err, BH_E_INVALID, 0, "broker: session %s is open already",
				   session_fp);
	}
	struct session *s = xzalloc(sizeof *s);
	s->fp = xstrdup(session_fp);
	s->path = xstrdup(socket_path);
	s->listen_fd = steal_fd(fd);
	s->next = b->sessions;
	b->sessions = s;
	pthread_mutex_unlock(&b->mu);
	broker_wake(b);
	return 0;
}

static int op_hold(void *arg, const char *session_fp, uint64_t hold, const char *profile,
		   bh_error **err)
{
	struct bh_broker *b = arg;
	void *keep = NULL;
	const struct bh_egress_profile *p = b->cfg.lookup(b->cfg.lookup_arg, profile, &keep);
	struct bh_egress_profile *copy = p ? profile_copy(p) : NULL;
	if (b->cfg.unkeep)
		b->cfg.unkeep(b->cfg.lookup_arg, keep);
	if (!copy) {
		bh_error *e = NULL;
		broker_fail(&e, BH_E_NOT_DISPATCHED, 0, BH_EGRESS_REFUSED_FMT, profile);
		e->refusal = BH_REFUSAL_PERMISSION;
		if (err) {
			bh_error_free(*err);
			*err = e;
		} else {
			bh_error_free(e);
		}
		return -1;
	}
	struct hold *h = xzalloc(sizeof *h);
	h->id = hold;
	h->profile = copy;
	h->refs = 1;
	pthread_mutex_init(&h->mint_mu, NULL);
	pthread_mutex_lock(&b->mu);
	struct session *s = session_find(b, session_fp);
	if (!s) {
		pthread_mutex_unlock(&b->mu);
		hold_free(h);
		return broker_fail(err, BH_E_INVALID, 0, "broker: no session %s is open",
				   session_fp);
	}
	s->holds = realloc(s->holds, (s->n_holds + 1) * sizeof *s->holds);
	if (!s->holds)
		abort();
	s->holds[s->n_holds++] = h;
	pthread_mutex_unlock(&b->mu);
	broker_log(b, BH_LOG_DEBUG, "broker: session %s holds profile %s (hold %llu)", session_fp,
		   profile, (unsigned long long)hold);
	return 0;
}

static void op_release(void *arg, const char *session_fp, uint64_t hold)
{
	struct bh_broker *b = arg;
	struct hold *gone = NULL;
	pthread_mutex_lock(&b->mu);
	struct session *s = session_find(b, session_fp);
	for (size_t i = 0; s && i < s->n_holds; i++) {
		if (s->holds[i]->id != hold)
			continue;
		gone = s->holds[i];
		memmove(&s->holds[i], &s->holds[i + 1], (s->n_holds - i - 1) * sizeof *s->holds);
		s->n_holds--;
		gone->released = true;
		/* A request still in flight under it was started by something
		 * the call left behind, or is about to outlive the call: cut. */
		cut_conns(s, hold);
		break;
	}
	pthread_mutex_unlock(&b->mu);
	if (gone)
		hold_put(b, gone);
}

static void op_close_session(void *arg, const char *session_fp)
{
	struct bh_broker *b = arg;
	pthread_mutex_lock(&b->mu);
	struct session *s = session_find(b, session_fp);
	if (s) {
		s->closing = true;
		unlink(s->path);
		cut_conns(s, 0);
	}
	pthread_mutex_unlock(&b->mu);
	broker_wake(b);
}

static const char *op_ca_cert_path(void *arg)
{
	struct bh_broker *b = arg;
	return b->ca.pem_path;
}

static const struct bh_egress_ops broker_ops = {
	.open_session = op_open_session,
	.hold = op_hold,
	.release = op_release,
	.close_session = op_close_session,
	.ca_cert_path = op_ca_cert_path,
};

const struct bh_egress_ops *bh_broker_ops(void)
{
	return &broker_ops;
}

/* ---- connections ---- */

static void conn_free(struct conn *c)
{
	if (c->st.ssl) {
		SSL_free(c->st.ssl);
		c->st.ssl = NULL;
	}
	if (c->st.fd >= 0)
		close(c->st.fd);
	buf_free(&c->in);
	target_free(&c->tunnel);
	free(c);
}

/* Takes the conn out of its session's list. Under b->mu. */
static void conn_unlink(struct conn *c)
{
	struct session *s = c->s;
	for (struct conn **pp = &s->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	s->n_conns--;
}

static void session_free(struct session *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	free(s->fp);
	free(s->path);
	free(s->holds);
	free(s);
}

/* Hands a conn to the workers. Under b->mu. */
static void conn_ready(struct bh_broker *b, struct conn *c)
{
	c->busy = true;
	c->s->n_busy++;
	c->next_ready = NULL;
	if (b->ready_tail)
		b->ready_tail->next_ready = c;
	else
		b->ready = c;
	b->ready_tail = c;
	pthread_cond_signal(&b->ready_cv);
}

/* A write to a peer that went away must come back as EPIPE, not kill the
 * process: OpenSSL writes to its sockets without MSG_NOSIGNAL, and a
 * library may not set the process's disposition, so the broker's own
 * threads block the signal. */
static void block_sigpipe(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void *worker_main(void *arg)
{
	struct bh_broker *b = arg;
	block_sigpipe();
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->ready && !b->stopping)
			pthread_cond_wait(&b->ready_cv, &b->mu);
		if (b->stopping)
			break;
		struct conn *c = b->ready;
		b->ready = c->next_ready;
		if (!b->ready)
			b->ready_tail = NULL;
		pthread_mutex_unlock(&b->mu);

		bool keep = request_serve(b, c);

		pthread_mutex_lock(&b->mu);
		c->hold_id = 0;
		c->up_fd = -1;
		c->s->n_busy--;
		if (keep && !c->cut && !c->s->closing && (c->in.len || stream_pending(&c->st))) {
			/* A pipelined request is already here: serve it next. */
			conn_ready(b, c);
			continue;
		}
		c->busy = false;
		if (!keep || c->cut || c->s->closing) {
			conn_unlink(c);
			pthread_mutex_unlock(&b->mu);
			conn_free(c);
			pthread_mutex_lock(&b->mu);
		} else {
			c->idle_since_ms = now_mono_ms();
		}
		broker_wake(b);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

static void accept_all(struct bh_broker *b, struct session *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (s->n_conns >= CONNS_PER_SESSION) {
			static const char full[] = "HTTP/1.1 503 Service Unavailable\r\n"
						   "Content-Length: 0\r\nConnection: close\r\n\r\n";
			ssize_t r = send(fd, full, sizeof full - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)r;
			close(fd);
			broker_log(b, BH_LOG_WARN, "broker: session %s has %d connections already",
				   s->fp, CONNS_PER_SESSION);
			continue;
		}
		struct conn *c = xzalloc(sizeof *c);
		c->s = s;
		c->st.fd = fd;
		c->up_fd = -1;
		c->idle_since_ms = now_mono_ms();
		c->next = s->conns;
		s->conns = c;
		s->n_conns++;
	}
}

static void *poller_main(void *arg)
{
	struct bh_broker *b = arg;
	block_sigpipe();
	struct pollfd *pfds = NULL;
	void **what = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&b->mu);
	while (!b->stopping) {
		/* Sessions being closed go once no worker holds one of theirs. */
		uint64_t now = now_mono_ms();
		for (struct session **sp = &b->sessions; *sp;) {
			struct session *s = *sp;
			for (struct conn *c = s->conns, *next; c; c = next) {
				next = c->next;
				if (!c->busy && (s->closing || now - c->idle_since_ms >=
									b->cfg.idle_timeout_ms)) {
					conn_unlink(c);
					conn_free(c);
				}
			}
			if (s->closing && !s->n_busy && !s->conns) {
				*sp = s->next;
				for (size_t i = 0; i < s->n_holds; i++) {
					s->holds[i]->released = true;
					if (--s->holds[i]->refs == 0)
						hold_free(s->holds[i]);
				}
				session_free(s);
				continue;
			}
			sp = &s->next;
		}
		size_t n = 1;
		for (struct session *s = b->sessions; s; s = s->next)
			n += 1 + s->n_conns;
		if (n > cap) {
			cap = n * 2;
			pfds = realloc(pfds, cap * sizeof *pfds);
			what = realloc(what, cap * sizeof *what);
			if (!pfds || !what)
				abort();
		}
		size_t k = 0;
		pfds[k] = (struct pollfd){.fd = b->wake_fd, .events = POLLIN};
		what[k++] = NULL;
		/* One session's connections never take every worker: a sandbox
		 * that trickles its requests (each may hold a worker up to the
		 * client timeout) slows itself, not its neighbours. */
		size_t per_session = (b->cfg.workers + 1) / 2;
		for (struct session *s = b->sessions; s; s = s->next) {
			if (s->closing)
				continue;
			pfds[k] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN};
			what[k++] = s;
			for (struct conn *c = s->conns; c; c = c->next) {
				if (c->busy || s->n_busy >= per_session)
					continue;
				pfds[k] = (struct pollfd){.fd = c->st.fd, .events = POLLIN};
				what[k++] = c;
			}
		}
		pthread_mutex_unlock(&b->mu);
		int r = poll(pfds, k, 1000);
		pthread_mutex_lock(&b->mu);
		if (r <= 0)
			continue;
		if (pfds[0].revents) {
			uint64_t v;
			ssize_t rr = read(b->wake_fd, &v, sizeof v);
			(void)rr;
		}
		/* Sessions and conns only go away on this thread, so the
		 * pointers gathered above are still good. */
		for (size_t i = 1; i < k; i++) {
			if (!pfds[i].revents)
				continue;
			bool is_session = false;
			for (struct session *s = b->sessions; s; s = s->next)
				if ((void *)s == what[i]) {
					is_session = true;
					if (!s->closing)
						accept_all(b, s);
					break;
				}
			if (is_session)
				continue;
			struct conn *c = what[i];
			if (!c->busy && !c->s->closing && c->s->n_busy < per_session)
				conn_ready(b, c);
		}
	}
	pthread_mutex_unlock(&b->mu);
	free(pfds);
	free(what);
	return NULL;
}

/* ---- start and stop ---- */

static int alpn_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";
	if (SSL_select_next_proto((unsigned char **)out, outlen, h11, sizeof h11 - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	return SSL_TLSEXT_ERR_OK;
}

/* The SNI a sandbox's client sends after CONNECT must name the CONNECT's
 * host: a client that asks for one host by CONNECT and another by SNI is
 * probing for a gap between the two. */
static int sni_check(SSL *ssl, int *alert, void *arg)
{
	const struct conn *c = SSL_get_app_data(ssl);
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	/* A client names an address by no SNI at all (RFC 6066). */
	bool ok = c && (sni ? !strcasecmp(sni, c->tunnel.host) : c->tunnel.ip_literal);
	if (!ok) {
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

static int tls_setup(struct bh_broker *b, bh_error **err)
{
	b->server_ctx = SSL_CTX_new(TLS_server_method());
	b->upstream_ctx = SSL_CTX_new(TLS_client_method());
	if (!b->server_ctx || !b->upstream_ctx)
		return broker_fail(err, BH_E_SYSTEM, 0, "broker: no TLS context");
	SSL_CTX_set_min_proto_version(b->server_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(b->upstream_ctx, TLS1_2_VERSION);
	SSL_CTX_set_tlsext_servername_callback(b->server_ctx, sni_check);
	SSL_CTX_set_alpn_select_cb(b->server_ctx, alpn_http11, NULL);
	SSL_CTX_set_verify(b->upstream_ctx, SSL_VERIFY_PEER, NULL);
	int ok = b->upstream_ca_file
			 ? SSL_CTX_load_verify_locations(b->upstream_ctx, b->upstream_ca_file, NULL)
			 : SSL_CTX_set_default_verify_paths(b->upstream_ctx);
	if (ok != 1) {
		ERR_clear_error();
		return broker_fail(err, BH_E_INVALID, 0, "broker: the upstream CAs %s could not be read",
				   b->upstream_ca_file ? b->upstream_ca_file : "(system store)");
	}
	static const unsigned char h11[] = "\x08http/1.1";
	SSL_CTX_set_alpn_protos(b->upstream_ctx, h11, sizeof h11 - 1);
	return 0;
}

int bh_broker_start(const struct bh_broker_config *cfg, bh_broker **out, bh_error **err)
{
	if (!cfg->ca_dir || !cfg->lookup)
		return broker_fail(err, BH_E_INVALID, 0, "broker: a CA directory and a lookup are needed");
	struct bh_broker *b = xzalloc(sizeof *b);
	b->cfg = *cfg;
	b->ca_dir = xstrdup(cfg->ca_dir);
	b->upstream_ca_file = cfg->upstream_ca_file ? xstrdup(cfg->upstream_ca_file) : NULL;
	b->cfg.ca_dir = b->ca_dir;
	b->cfg.upstream_ca_file = b->upstream_ca_file;
	if (!b->cfg.workers)
		b->cfg.workers = DEFAULT_WORKERS;
	if (!b->cfg.client_timeout_ms)
		b->cfg.client_timeout_ms = DEFAULT_CLIENT_TIMEOUT_MS;
	if (!b->cfg.idle_timeout_ms)
		b->cfg.idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->ready_cv, NULL);
	b->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->wake_fd < 0) {
		broker_fail(err, BH_E_SYSTEM, errno, "broker: eventfd");
		goto fail;
	}
	if (ca_open(&b->ca, b->ca_dir, err) < 0 || tls_setup(b, err) < 0)
		goto fail;
	b->workers = xzalloc(b->cfg.workers * sizeof *b->workers);
	if (pthread_create(&b->poller, NULL, poller_main, b) != 0) {
		broker_fail(err, BH_E_SYSTEM, 0, "broker: no thread");
		goto fail;
	}
	for (; b->n_workers < b->cfg.workers; b->n_workers++)
		if (pthread_create(&b->workers[b->n_workers], NULL, worker_main, b) != 0)
			break;
	if (!b->n_workers) {
		bh_broker_stop(b);
		return broker_fail(err, BH_E_SYSTEM, 0, "broker: no worker thread");
	}
	*out = b;
	return 0;
fail:
	if (b->wake_fd >= 0)
		close(b->wake_fd);
	SSL_CTX_free(b->server_ctx);
	SSL_CTX_free(b->upstream_ctx);
	if (b->ca.pem_path || b->ca.key)
		ca_close(&b->ca);
	free(b->workers);
	free(b->ca_dir);
	free(b->upstream_ca_file);
	free(b);
	return -1;
}

void bh_broker_stop(bh_broker *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	for (struct session *s = b->sessions; s; s = s->next) {
		if (!s->closing)
			unlink(s->path);
		s->closing = true;
		cut_conns(s, 0);
	}
	pthread_mutex_unlock(&b->mu);
	/* Workers finish the request they carry (cut above, so soon). */
	pthread_mutex_lock(&b->mu);
	while (b->sessions && ({
		       bool busy = false;
		       for (struct session *s = b->sessions; s; s = s->next)
			       busy |= s->n_busy > 0;
		       busy;
	       })) {
		pthread_mutex_unlock(&b->mu);
		broker_wake(b);
		usleep(10000);
		pthread_mutex_lock(&b->mu);
	}
	b->stopping = true;
	pthread_cond_broadcast(&b->ready_cv);
	pthread_mutex_unlock(&b->mu);
	broker_wake(b);
	pthread_join(b->poller, NULL);
	for (unsigned i = 0; i < b->n_workers; i++)
		pthread_join(b->workers[i], NULL);
	/* Conns queued for a worker that never took them. */
	for (struct session *s = b->sessions, *next; s; s = next) {
		next = s->next;
		for (struct conn *c = s->conns, *cn; c; c = cn) {
			cn = c->next;
			conn_free(c);
		}
		for (size_t i = 0; i < s->n_holds; i++)
			if (--s->holds[i]->refs == 0)
				hold_free(s->holds[i]);
		session_free(s);
	}
	close(b->wake_fd);
	SSL_CTX_free(b->server_ctx);
	SSL_CTX_free(b->upstream_ctx);
	ca_close(&b->ca);
	free(b->workers);
	free(b->ca_dir);
	free(b->upstream_ca_file);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->ready_cv);
	free(b);
}
