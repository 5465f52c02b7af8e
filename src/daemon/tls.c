/* The daemon's TLS (tls.h). */
#include "tls.h"
#include "log.h"
#include "why.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHAIN_MAX 16

/* One certificate chain and its key, as the handshake takes them. */
struct pair {
	gnutls_pcert_st chain[CHAIN_MAX];
	unsigned n;
	gnutls_privkey_t key;
};

struct daemon_tls {
	char *cert_path, *key_path;
	char *client_ca; /* PEM text, kept: libmicrohttpd reads it at start */
	pthread_mutex_t mu;
	struct pair *now;
	/* The pair before the last reload: a handshake that took it may still
	 * be signing with it (handshakes advance across loop turns). */
	struct pair *before;
};

/* GnuTLS's certificate callback takes no argument of ours: one daemon a
 * process, so the one serving is kept here. */
static struct daemon_tls *serving;
static pthread_mutex_t serving_mu = PTHREAD_MUTEX_INITIALIZER;

static void pair_free(struct pair *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->n; i++)
		gnutls_pcert_deinit(&p->chain[i]);
	if (p->key)
		gnutls_privkey_deinit(p->key);
	free(p);
}

/* A whole regular file of at most DAEMON_TLS_FILE_MAX bytes, NUL-ended. */
static int read_pem(const char *what, const char *path, gnutls_datum_t *out, char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return why_errno(why, errno, "%s %s", what, path);
	struct stat st;
	int rc = -1;
	if (fstat(fd, &st) < 0) {
		why_errno(why, errno, "%s %s", what, path);
	} else if (!S_ISREG(st.st_mode)) {
		why_set(why, "%s %s is not a regular file", what, path);
	} else if ((uintmax_t)st.st_size > DAEMON_TLS_FILE_MAX) {
		why_set(why, "%s %s: %jd bytes is more than the %u allowed", what, path,
			(intmax_t)st.st_size, DAEMON_TLS_FILE_MAX);
	} else {
		unsigned char *buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			abort();
		ssize_t got = read(fd, buf, (size_t)st.st_size + 1);
		if (got < 0) {
			why_errno(why, errno, "%s %s", what, path);
			free(buf);
		} else if (got == 0 || (size_t)got > (size_t)st.st_size) {
			why_set(why, "%s %s is empty or changed while it was read", what, path);
			free(buf);
		} else {
			buf[got] = '\0';
			*out = (gnutls_datum_t){.data = buf, .size = (unsigned)got};
			rc = 0;
		}
	}
	close(fd);
	return rc;
}

static void datum_wipe(gnutls_datum_t *d)
{
	if (d->data) {
		explicit_bzero(d->data, d->size);
		free(d->data);
	}
	d->data = NULL;
}

/* The key's public half must be the leaf's: a mismatched pair would start
 * and then fail every handshake. */
static bool key_matches(struct pair *p)
{
	gnutls_pubkey_t pub;
	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	unsigned char a[64], b[64];
	size_t la = sizeof a, lb = sizeof b;
	bool ok = gnutls_pubkey_import_privkey(pub, p->key, 0, 0) == 0 &&
		  gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, a, &la) == 0 &&
		  gnutls_pubkey_get_key_id(p->chain[0].pubkey, GNUTLS_KEYID_USE_SHA256, b, &lb) == 0 &&
		  la == lb && !memcmp(a, b, la);
	gnutls_pubkey_deinit(pub);
	return ok;
}

/* Says (a warning, not a refusal) when the leaf is outside its validity:
 * every client will refuse it, and the operator should hear it from us. */
static void note_validity(const struct pair *p, const char *path)
{
	gnutls_x509_crt_t crt;
	if (gnutls_x509_crt_init(&crt) < 0)
		return;
	if (gnutls_x509_crt_import(crt, &p->chain[0].cert, GNUTLS_X509_FMT_DER) == 0) {
		time_t now = time(NULL);
		time_t until = gnutls_x509_crt_get_expiration_time(crt);
		time_t from = gnutls_x509_crt_get_activation_time(crt);
		if (until != (time_t)-1 && until < now)
			daemon_log(BH_LOG_WARN, "tls",
				   "the certificate %s expired %lld seconds ago: clients will refuse it",
				   path, (long long)(now - until));
		else if (from != (time_t)-1 && from > now)
			daemon_log(BH_LOG_WARN, "tls",
				   "the certificate %s is not valid for another %lld seconds", path,
				   (long long)(from - now));
	}
	gnutls_x509_crt_deinit(crt);
}

static int pair_load(const char *cert_path, const char *key_path, struct pair **out, char **why)
{
	gnutls_datum_t cert = {0}, key = {0};
	if (read_pem("the TLS certificate", cert_path, &cert, why) < 0)
		return -1;
	if (read_pem("the TLS key", key_path, &key, why) < 0) {
		datum_wipe(&cert);
		return -1;
	}
	struct pair *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	int rc = -1;
	p->n = CHAIN_MAX;
	int g = gnutls_pcert_list_import_x509_raw(p->chain, &p->n, &cert, GNUTLS_X509_FMT_PEM, 0);
	if (g < 0 || p->n == 0) {
		p->n = 0;
		why_set(why, "the TLS certificate %s: no PEM certificate chain in it (%s)", cert_path,
			g < 0 ? gnutls_strerror(g) : "empty");
		goto out;
	}
	if ((g = gnutls_privkey_init(&p->key)) < 0 ||
	    (g = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		why_set(why, "the TLS key %s: no unencrypted PEM private key in it (%s)", key_path,
			gnutls_strerror(g));
		goto out;
	}
	if (!key_matches(p)) {
		why_set(why, "the TLS key %s is not the key of the certificate %s", key_path, cert_path);
		goto out;
	}
	note_validity(p, cert_path);
	*out = p;
	p = NULL;
	rc = 0;
out:
	pair_free(p);
	datum_wipe(&cert);
	datum_wipe(&key);
	return rc;
}

/* gnutls_certificate_retrieve_function2: every handshake takes the pair
 * current when it starts. */
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
		    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
		    gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
	(void)session, (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
	pthread_mutex_lock(&serving_mu);
	struct daemon_tls *t = serving;
	int rc = -1;
	if (t) {
		pthread_mutex_lock(&t->mu);
		*pcert = t->now->chain;
		*pcert_length = t->now->n;
		*privkey = t->now->key;
		pthread_mutex_unlock(&t->mu);
		rc = 0;
	}
	pthread_mutex_unlock(&serving_mu);
	return rc;
}

int daemon_tls_load(const struct bh_daemon_tls *cfg, struct daemon_tls **out, char **why)
{
	if (!cfg->cert_path != !cfg->key_path)
		return why_set(why, "TLS needs both --tls-cert and --tls-key");
	if (!cfg->cert_path)
		return why_set(why, "--tls-client-ca needs --tls-cert and --tls-key");
	struct daemon_tls *t = calloc(1, sizeof *t);
	if (!t)
		abort();
	pthread_mutex_init(&t->mu, NULL);
	t->cert_path = strdup(cfg->cert_path);
	t->key_path = strdup(cfg->key_path);
	if (!t->cert_path || !t->key_path)
		abort();
	if (pair_load(t->cert_path, t->key_path, &t->now, why) < 0)
		goto fail;
	if (cfg->client_ca_path) {
		gnutls_datum_t ca = {0};
		if (read_pem("the client CA file", cfg->client_ca_path, &ca, why) < 0)
			goto fail;
		/* Checked here so a bad file stops the start with its name. */
		gnutls_x509_crt_t list[CHAIN_MAX];
		unsigned n = CHAIN_MAX;
		int g = gnutls_x509_crt_list_import(list, &n, &ca, GNUTLS_X509_FMT_PEM, 0);
		for (int i = 0; i < g; i++)
			gnutls_x509_crt_deinit(list[i]);
		if (g <= 0) {
			why_set(why, "the client CA file %s: no PEM certificate in it (%s)",
				cfg->client_ca_path, g < 0 ? gnutls_strerror(g) : "empty");
			datum_wipe(&ca);
			goto fail;
		}
		t->client_ca = (char *)ca.data;
	}
	pthread_mutex_lock(&serving_mu);
	serving = t;
	pthread_mutex_unlock(&serving_mu);
	*out = t;
	return 0;
fail:
	daemon_tls_free(t);
	return -1;
}

int daemon_tls_reload(struct daemon_tls *t, char **why)
{
	struct pair *p = NULL;
	if (pair_load(t->cert_path, t->key_path, &p, why) < 0)
		return -1;
	pthread_mutex_lock(&t->mu);
	struct pair *gone = t->before;
	t->before = t->now;
	t->now = p;
	pthread_mutex_unlock(&t->mu);
	pair_free(gone);
	return 0;
}

void daemon_tls_free(struct daemon_tls *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&serving_mu);
	if (serving == t)
		serving = NULL;
	pthread_mutex_unlock(&serving_mu);
	pair_free(t->now);
	pair_free(t->before);
	free(t->client_ca);
	free(t->cert_path);
	free(t->key_path);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

size_t daemon_tls_mhd_options(struct daemon_tls *t, struct MHD_OptionItem *ops, size_t max)
{
	size_t n = 0;
	if (max < 4)
		return 0;
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)retrieve};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
					   (void *)DAEMON_TLS_PRIORITIES};
	/* With a trust list libmicrohttpd asks every client for a certificate
	 * (GNUTLS_CERT_REQUEST: asked, not required). */
	if (t->client_ca)
		ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, t->client_ca};
	ops[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	return n;
}

enum daemon_peer_cert daemon_tls_peer(const struct daemon_tls *t, struct MHD_Connection *conn,
				      char *subject, size_t n)
{
	subject[0] = '\0';
	if (!t || !t->client_ca)
		return DAEMON_PEER_NO_CERT;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return DAEMON_PEER_NO_CERT;
	gnutls_session_t s = ci->tls_session;
	unsigned len = 0;
	const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &len);
	if (!certs || len == 0)
		return DAEMON_PEER_NO_CERT;
	unsigned status = 0;
	int g = gnutls_certificate_verify_peers2(s, &status);
	if (g < 0 || status) {
		gnutls_datum_t text = {0};
		if (g < 0)
			snprintf(subject, n, "%s", gnutls_strerror(g));
		else if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text,
									0) == 0) {
			snprintf(subject, n, "%s", (const char *)text.data);
			gnutls_free(text.data);
		} else {
			snprintf(subject, n, "it does not verify (status 0x%x)", status);
		}
		return DAEMON_PEER_INVALID;
	}
	gnutls_x509_crt_t crt;
	enum daemon_peer_cert v = DAEMON_PEER_INVALID;
	if (gnutls_x509_crt_init(&crt) < 0) {
		snprintf(subject, n, "out of memory");
		return v;
	}
	gnutls_datum_t dn = {0};
	if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 &&
	    gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
		if (dn.size < n && !memchr(dn.data, '\0', dn.size)) {
			memcpy(subject, dn.data, dn.size);
			subject[dn.size] = '\0';
			v = DAEMON_PEER_VERIFIED;
		} else {
			snprintf(subject, n, "its subject is longer than %zu bytes", n - 1);
		}
		gnutls_free(dn.data);
	} else {
		snprintf(subject, n, "its subject cannot be read");
	}
	gnutls_x509_crt_deinit(crt);
	return v;
}

bool daemon_listen_is_loopback(const char *listen)
{
	char host[256];
	snprintf(host, sizeof host, "%s", listen);
	if (host[0] == '[') {
		char *end = strchr(host, ']');
		if (end)
			*end = '\0';
		struct in6_addr a6;
		return inet_pton(AF_INET6, host + 1, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	char *colon = strrchr(host, ':');
	if (colon)
		*colon = '\0';
	if (!strcasecmp(host, "localhost"))
		return true;
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}
