/* The broker's interception CA: made once in its directory (the key 0600),
 * kept across restarts so the sandboxes' trust stays valid, and the leaf
 * certificates it signs for the hosts a CONNECT names. */
#include "broker_priv.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LEAF_DAYS 7
#define LEAF_REMINT_MS (24ull * 3600 * 1000)

struct ca_leaf {
	char *host;
	X509 *cert;
	uint64_t made_ms;
	struct ca_leaf *next;
};

static EVP_PKEY *new_key(void)
{
	return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	int r = X509_add_ext(cert, ext, -1) ? 0 : -1;
	X509_EXTENSION_free(ext);
	return r;
}

static int random_serial(X509 *cert)
{
	unsigned char raw[16];
	if (RAND_bytes(raw, sizeof raw) != 1)
		return -1;
	raw[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(raw, sizeof raw, NULL);
	int r = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) ? 0 : -1;
	BN_free(bn);
	return r;
}

/* A certificate for key, named cn, valid from an hour ago for days;
 * signed by issuer (NULL: by itself). */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days, X509 *issuer, EVP_PKEY *issuer_key)
{
	X509 *cert = X509_new();
	if (!cert)
		return NULL;
	X509_NAME *name = X509_get_subject_name(cert);
	bool ok = X509_set_version(cert, 2) && random_serial(cert) == 0 &&
		  X509_gmtime_adj(X509_getm_notBefore(cert), -3600) &&
		  X509_gmtime_adj(X509_getm_notAfter(cert), (long)days * 24 * 3600) &&
		  X509_set_pubkey(cert, key) &&
		  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn,
					     -1, -1, 0) &&
		  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
	if (ok && !issuer) {
		ok = add_ext(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == 0 &&
		     add_ext(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") == 0 &&
		     add_ext(cert, cert, NID_subject_key_identifier, "hash") == 0 &&
		     add_ext(cert, cert, NID_authority_key_identifier, "keyid:always") == 0;
	} else if (ok) {
		/* An IP-literal origin a profile names gets an IP name (a client
		 * checks an address against iPAddress names only). */
		size_t cl = strlen(cn);
		cleanup_free char *san = cn[0] == '[' ? xasprintf("IP:%.*s", (int)(cl - 2), cn + 1)
				       : strspn(cn, "0123456789.") == cl ? xasprintf("IP:%s", cn)
									  : xasprintf("DNS:%s", cn);
		ok = add_ext(cert, issuer, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
		     add_ext(cert, issuer, NID_key_usage, "critical,digitalSignature") == 0 &&
		     add_ext(cert, issuer, NID_ext_key_usage, "serverAuth") == 0 &&
		     add_ext(cert, issuer, NID_subject_alt_name, san) == 0 &&
		     add_ext(cert, issuer, NID_subject_key_identifier, "hash") == 0 &&
		     add_ext(cert, issuer, NID_authority_key_identifier, "keyid:always") == 0;
	}
	if (ok)
		ok = X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()) > 0;
	if (!ok) {
		X509_free(cert);
		return NULL;
	}
	return cert;
}

static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	int ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
		     : PEM_write_X509(f, cert);
	if (fflush(f) != 0 || fsync(fd) != 0)
		ok = 0;
	fclose(f);
	return ok ? 0 : -1;
}

static int make_ca(struct ca *ca, const char *key_path, bh_error **err)
{
	ca->key = new_key();
	char tag[17];
	if (!ca->key || random_hex(8, tag) < 0)
		return broker_fail(err, BH_E_SYSTEM, 0, "broker CA: no key could be made");
	cleanup_free char *cn = xasprintf("bulkhead broker CA %s", tag);
	ca->cert = new_cert(ca->key, cn, 3650, NULL, NULL);
	if (!ca->cert)
		return broker_fail(err, BH_E_SYSTEM, 0, "broker CA: the certificate could not be made");
	/* The certificate first: a crash between the two leaves a cert without
	 * a key, which the next start reports rather than silently replacing
	 * the trust the sandboxes were given. */
	if (write_pem(ca->pem_path, 0644, NULL, ca->cert) < 0)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker CA: writing %s", ca->pem_path);
	if (write_pem(key_path, 0600, ca->key, NULL) < 0)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker CA: writing %s", key_path);
	return 0;
}

static int load_ca(struct ca *ca, const char *key_path, bh_error **err)
{
	struct stat st;
	cleanup_file FILE *kf = fopen(key_path, "re");
	if (!kf || fstat(fileno(kf), &st) < 0)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker CA: opening %s", key_path);
	if ((st.st_mode & 077) || st.st_uid != geteuid())
		return broker_fail(err, BH_E_INVALID, 0,
				   "broker CA: %s must be ours and mode 0600 (it is %04o)", key_path,
				   (unsigned)(st.st_mode & 07777));
	ca->key = PEM_read_PrivateKey(kf, NULL, NULL, NULL);
	cleanup_file FILE *cf = fopen(ca->pem_path, "re");
	if (cf)
		ca->cert = PEM_read_X509(cf, NULL, NULL, NULL);
	ERR_clear_error();
	if (!ca->key || !ca->cert || X509_check_private_key(ca->cert, ca->key) != 1) {
		ERR_clear_error();
		return broker_fail(err, BH_E_INVALID, 0,
				   "broker CA: %s and %s are not a key and its certificate", key_path,
				   ca->pem_path);
	}
	return 0;
}

int ca_open(struct ca *ca, const char *dir, bh_error **err)
{
	memset(ca, 0, sizeof *ca);
	pthread_mutex_init(&ca->mu, NULL);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return broker_fail(err, BH_E_SYSTEM, errno, "broker CA: making %s", dir);
	cleanup_free char *key_path = xasprintf("%s/ca.key", dir);
	ca->pem_path = xasprintf("%s/ca.pem", dir);
	struct stat st;
	bool have_key = lstat(key_path, &st) == 0, have_cert = lstat(ca->pem_path, &st) == 0;
	int r;
	if (!have_key && !have_cert)
		r = make_ca(ca, key_path, err);
	else
		r = load_ca(ca, key_path, err);
	if (r < 0)
		return r;
	ca->leaf_key = new_key();
	if (!ca->leaf_key)
		return broker_fail(err, BH_E_SYSTEM, 0, "broker CA: no leaf key could be made");
	return 0;
}

void ca_close(struct ca *ca)
{
	for (struct ca_leaf *l = ca->leaves, *next; l; l = next) {
		next = l->next;
		free(l->host);
		X509_free(l->cert);
		free(l);
	}
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	free(ca->pem_path);
	pthread_mutex_destroy(&ca->mu);
	memset(ca, 0, sizeof *ca);
}

X509 *ca_leaf(struct ca *ca, const char *host)
{
	pthread_mutex_lock(&ca->mu);
	uint64_t now = now_mono_ms();
	struct ca_leaf *l = ca->leaves;
	while (l && strcmp(l->host, host))
		l = l->next;
	if (l && now - l->made_ms > LEAF_REMINT_MS) {
		X509_free(l->cert);
		l->cert = NULL;
	}
	if (!l) {
		l = xzalloc(sizeof *l);
		l->host = xstrdup(host);
		l->next = ca->leaves;
		ca->leaves = l;
	}
	if (!l->cert) {
		l->cert = new_cert(ca->leaf_key, host, LEAF_DAYS, ca->cert, ca->key);
		l->made_ms = now;
	}
	X509 *out = l->cert;
	if (out)
		X509_up_ref(out);
	pthread_mutex_unlock(&ca->mu);
	return out;
}
