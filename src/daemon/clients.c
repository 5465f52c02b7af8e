#include "clients.h"
#include "base.h"
#include "why.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_PREFIX "bh_"
#define TOKEN_RANDOM_BYTES 32
#define DIGEST_PREFIX "sha256:"

struct clients {
	pthread_rwlock_t lock; /* guards v and n */
	char *path;
	struct client_entry *v;
	size_t n;
};

static const struct {
	const char *name;
	enum client_scope bit;
} scope_names[] = {
	{"code:run", CLIENT_SCOPE_CODE_RUN},
	{"operator", CLIENT_SCOPE_OPERATOR},
};
#define N_SCOPES (sizeof scope_names / sizeof scope_names[0])

/* ---- names, scopes, digests ---- */

static bool name_char(char ch, bool first)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return true;
	return !first && (ch == '.' || ch == '_' || ch == '-' || ch == '@');
}

static bool name_ok(const char *s, size_t len)
{
	if (len == 0 || len > CLIENTS_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i], i == 0))
			return false;
	return true;
}

#define NAME_RULE "1-64 letters, digits, '.', '_', '-' or '@', starting with a letter or a digit"

int clients_check_name(const char *name, char **why)
{
	if (!name || !name_ok(name, strlen(name)))
		return why_set(why, "a client name must be " NAME_RULE);
	if (!strncmp(name, TOKEN_PREFIX, strlen(TOKEN_PREFIX)))
		return why_set(why, "a client name may not start with \"" TOKEN_PREFIX
				    "\": that is how tokens start");
	return 0;
}

/* Shows an unknown scope only when it is short and plain, so a token pasted
 * into the wrong field is never echoed back. */
static int unknown_scope(char **why, const char *s, size_t len)
{
	bool plain = len <= 24;
	for (size_t i = 0; plain && i < len; i++)
		plain = (s[i] >= 'a' && s[i] <= 'z') || s[i] == ':' || s[i] == '*' || s[i] == '_';
	if (plain)
		return why_set(why, "unknown scope \"%.*s\" (known: code:run, operator)", (int)len, s);
	return why_set(why, "unknown scope of %zu characters (known: code:run, operator)", len);
}

static int scopes_parse_n(const char *list, size_t len, unsigned *scopes, char **why)
{
	unsigned bits = 0;
	size_t at = 0;
	for (;;) {
		const char *item = list + at;
		const char *comma = memchr(item, ',', len - at);
		size_t n = comma ? (size_t)(comma - item) : len - at;
		if (n == 0)
			return why_set(why, "empty scope in the scope list (scopes are separated by single commas)");
		size_t k = 0;
		while (k < N_SCOPES &&
		       !(strlen(scope_names[k].name) == n && !memcmp(scope_names[k].name, item, n)))
			k++;
		if (k == N_SCOPES)
			return unknown_scope(why, item, n);
		bits |= scope_names[k].bit;
		if (!comma)
			break;
		at += n + 1;
	}
	*scopes = bits;
	return 0;
}

int clients_scopes_parse(const char *list, unsigned *scopes, char **why)
{
	if (!list || !*list)
		return why_set(why, "no scope given (known: code:run, operator)");
	return scopes_parse_n(list, strlen(list), scopes, why);
}

size_t clients_scopes_format(unsigned scopes, char *buf, size_t size)
{
	size_t len = 0;
	if (size)
		buf[0] = '\0';
	for (size_t k = 0; k < N_SCOPES; k++) {
		if (!(scopes & scope_names[k].bit))
			continue;
		int w = snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, "%s%s",
				 len ? "," : "", scope_names[k].name);
		len += (size_t)w;
	}
	return len;
}

void clients_token_digest(const char *token, size_t len, unsigned char digest[CLIENTS_DIGEST_LEN])
{
	unsigned int mdlen = 0;
	EVP_Digest(token, len, digest, &mdlen, EVP_sha256(), NULL);
}

void clients_digest_hex(const unsigned char digest[CLIENTS_DIGEST_LEN], char out[65])
{
	hex(digest, CLIENTS_DIGEST_LEN, out);
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static bool digest_parse(const char *s, size_t len, unsigned char digest[CLIENTS_DIGEST_LEN])
{
	size_t plen = strlen(DIGEST_PREFIX);
	if (len != plen + 2 * CLIENTS_DIGEST_LEN || memcmp(s, DIGEST_PREFIX, plen))
		return false;
	s += plen;
	for (size_t i = 0; i < CLIENTS_DIGEST_LEN; i++) {
		int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		digest[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

int clients_token_new(char token[CLIENTS_TOKEN_LEN + 1], char **why)
{
	static const char b64url[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char raw[TOKEN_RANDOM_BYTES + 1] = {0}; /* one spare zero byte for the last group */
	if (RAND_bytes(raw, TOKEN_RANDOM_BYTES) != 1)
		return why_set(why, "cannot draw random bytes for a token (OpenSSL RAND_bytes failed)");
	char *o = token;
	memcpy(o, TOKEN_PREFIX, strlen(TOKEN_PREFIX));
	o += strlen(TOKEN_PREFIX);
	/* 32 bytes = 10 groups of 3 (40 characters) + 2 bytes (3 characters), no padding. */
	for (size_t i = 0; i < TOKEN_RANDOM_BYTES; i += 3) {
		uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 |
			     (i + 2 < TOKEN_RANDOM_BYTES ? raw[i + 2] : 0);
		size_t chars = TOKEN_RANDOM_BYTES - i >= 3 ? 4 : TOKEN_RANDOM_BYTES - i + 1;
		for (size_t k = 0; k < chars; k++)
			*o++ = b64url[(v >> (18 - 6 * k)) & 63];
	}
	*o = '\0';
	OPENSSL_cleanse(raw, sizeof raw);
	return 0;
}

/* ---- the file ---- */

int clients_read_file(const char *path, char **text, size_t *len, bool *missing, char **why)
{
	if (missing)
		*missing = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT && missing)
			*missing = true;
		return why_errno(why, errno, "cannot open the clients file %s", path);
	}
	struct stat st;
	int rc = -1;
	char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		why_errno(why, errno, "cannot stat the clients file %s", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		why_set(why, "the clients file %s is not a regular file", path);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		why_set(why,
			"refusing the clients file %s: it is owned by uid %u, neither root nor us (uid %u)",
			path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		why_set(why,
			"refusing the clients file %s: it is %s-writable (mode %04o); anyone who can "
			"write it can let themselves in (chmod go-w %s)",
			path, st.st_mode & S_IWOTH ? "world" : "group", (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if ((uintmax_t)st.st_size > CLIENTS_FILE_MAX) {
		why_set(why, "refusing the clients file %s: %jd bytes is more than the %u allowed", path,
			(intmax_t)st.st_size, CLIENTS_FILE_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 2);
	if (!buf)
		abort();
	size_t got = 0;
	for (;;) {
		/* Reads one byte past the size stat gave, to notice a file that grew. */
		ssize_t r = read(fd, buf + got, (size_t)st.st_size + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			why_errno(why, errno, "cannot read the clients file %s", path);
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > (size_t)st.st_size) {
			why_set(why, "the clients file %s changed while it was read; try again", path);
			goto out;
		}
	}
	buf[got] = '\0';
	*text = buf;
	buf = NULL;
	if (len)
		*len = got;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

struct field {
	const char *s;
	size_t len;
};

/* Splits one line into at most `max` fields; returns how many there were
 * (counting past max, so "too many" can be reported). */
static size_t split(const char *line, size_t len, struct field *f, size_t max)
{
	size_t n = 0, i = 0;
	for (;;) {
		while (i < len && blank(line[i]))
			i++;
		if (i == len || line[i] == '#')
			return n;
		size_t start = i;
		while (i < len && !blank(line[i]))
			i++;
		if (n < max)
			f[n] = (struct field){line + start, i - start};
		n++;
	}
}

static bool looks_like_token(const struct field *f)
{
	return f->len >= strlen(TOKEN_PREFIX) && !memcmp(f->s, TOKEN_PREFIX, strlen(TOKEN_PREFIX));
}

/* ---- approvals ---- */
/* The fourth field: "approval=required" or "approval=none"; any other key
 * or value is refused, so a typo never leaves a client unheld. */
static int approval_parse(const struct field *f, enum client_approval *out, unsigned lineno,
			  char **why)
{
	static const char key[] = "approval=";
	if (f->len < strlen(key) || memcmp(f->s, key, strlen(key))) {
		const char *eq = memchr(f->s, '=', f->len);
		int klen = (int)(eq ? (size_t)(eq - f->s) : f->len);
		if (klen > 32)
			klen = 32;
		return why_set(why,
			       "line %u: unknown option \"%.*s\" (after the scopes come only "
			       "approval=required or approval=none, and subject=DN)",
			       lineno, klen, f->s);
	}
	const char *v = f->s + strlen(key);
	size_t vlen = f->len - strlen(key);
	if (vlen == 8 && !memcmp(v, "required", 8))
		*out = CLIENT_APPROVAL_REQUIRED;
	else if (vlen == 4 && !memcmp(v, "none", 4))
		*out = CLIENT_APPROVAL_NONE;
	else
		return why_set(why, "line %u: approval must be \"required\" or \"none\"", lineno);
	return 0;
}

/* ---- tls ---- */
/* "subject=DN": a printable DN without blanks (RFC 4514, as GnuTLS prints a
 * certificate's subject). */
static int subject_parse(const struct field *f, char *out, unsigned lineno, char **why)
{
	static const char key[] = "subject=";
	size_t klen = strlen(key);
	const char *v = f->s + klen;
	size_t vlen = f->len - klen;
	if (vlen == 0 || vlen > CLIENTS_SUBJECT_MAX)
		return why_set(why, "line %u: subject= needs a certificate subject of 1 to %u bytes "
				    "(e.g. subject=CN=worker-1,O=Example)", lineno, CLIENTS_SUBJECT_MAX);
	for (size_t i = 0; i < vlen; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] == 0x7f)
			return why_set(why, "line %u: the subject holds a control character", lineno);
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return 0;
}

static bool is_subject(const struct field *f)
{
	return f->len >= 8 && !memcmp(f->s, "subject=", 8);
}

static int parse_line(const char *line, size_t len, unsigned lineno, struct client_entry *e,
		      char **why)
{
	struct field f[5];
	size_t n = split(line, len, f, 5);
	if (n < 3 || n > 5) {
		for (size_t i = 0; i < n && i < 5; i++)
			if (looks_like_token(&f[i]))
				goto token;
		return why_set(why,
			       "line %u: expected NAME sha256:DIGEST SCOPES [approval=required|none] "
			       "[subject=DN], found %zu field%s",
			       lineno, n, n == 1 ? "" : "s");
	}
	for (size_t i = 0; i < n; i++)
		if (i != 2 && looks_like_token(&f[i]))
			goto token;
	if (!name_ok(f[0].s, f[0].len))
		return why_set(why, "line %u: the client name must be " NAME_RULE, lineno);
	memcpy(e->name, f[0].s, f[0].len);
	e->name[f[0].len] = '\0';
	e->no_token = f[1].len == 1 && f[1].s[0] == '-'; /* ---- tls: certificate only ---- */
	if (!e->no_token && !digest_parse(f[1].s, f[1].len, e->digest))
		return why_set(why,
			       "line %u: the second field must be \"sha256:\" and the 64 hex digits of "
			       "the SHA-256 of the client's token",
			       lineno);
	if (scopes_parse_n(f[2].s, f[2].len, &e->scopes, why) < 0) {
		why_prefix(why, "line %u", lineno);
		return -1;
	}
	e->approval = CLIENT_APPROVAL_DEFAULT;
	bool approval = false;
	for (size_t i = 3; i < n; i++) {
		if (is_subject(&f[i])) {
			if (e->subject[0])
				return why_set(why, "line %u: subject= is given twice", lineno);
			if (subject_parse(&f[i], e->subject, lineno, why) < 0)
				return -1;
			continue;
		}
		if (approval && f[i].len >= 9 && !memcmp(f[i].s, "approval=", 9))
			return why_set(why, "line %u: approval= is given twice", lineno);
		if (approval_parse(&f[i], &e->approval, lineno, why) < 0)
			return -1;
		approval = true;
	}
	if (e->no_token && !e->subject[0])
		return why_set(why, "line %u: a client without a token (DIGEST \"-\") needs a "
				    "subject=DN its certificate proves", lineno);
	e->line = lineno;
	return 0;
token:
	return why_set(why,
		       "line %u: this looks like a token, not its digest; the clients file holds only "
		       "sha256: digests (treat that token as exposed: revoke it and create a new one)",
		       lineno);
}

int clients_parse(const char *text, size_t len, struct client_entry **out, size_t *n, char **why)
{
	struct client_entry *v = NULL;
	size_t count = 0, cap = 0;
	unsigned lineno = 0;
	for (size_t at = 0; at < len;) {
		lineno++;
		const char *line = text + at;
		const char *nl = memchr(line, '\n', len - at);
		size_t llen = nl ? (size_t)(nl - line) : len - at;
		at += llen + (nl ? 1 : 0);
		if (memchr(line, '\0', llen)) {
			why_set(why, "line %u: contains a NUL byte", lineno);
			goto fail;
		}
		struct field probe;
		if (split(line, llen, &probe, 1) == 0)
			continue; /* blank or comment */
		if (count == cap) {
			cap = cap ? 2 * cap : 16;
			struct client_entry *nv = realloc(v, cap * sizeof *v);
			if (!nv)
				abort();
			v = nv;
		}
		struct client_entry *e = &v[count];
		memset(e, 0, sizeof *e);
		if (parse_line(line, llen, lineno, e, why) < 0)
			goto fail;
		for (size_t i = 0; i < count; i++) {
			if (!strcmp(v[i].name, e->name)) {
				why_set(why, "line %u: client \"%s\" is already defined on line %u", lineno,
					e->name, v[i].line);
				goto fail;
			}
			/* ---- tls ---- */
			if (e->subject[0] && !strcmp(v[i].subject, e->subject)) {
				why_set(why, "line %u: client \"%s\" has the same subject as \"%s\" on "
					"line %u; a certificate names one client", lineno, e->name,
					v[i].name, v[i].line);
				goto fail;
			}
			if (!e->no_token && !v[i].no_token &&
			    !memcmp(v[i].digest, e->digest, CLIENTS_DIGEST_LEN)) {
				why_set(why,
					"line %u: client \"%s\" has the same token digest as \"%s\" on line "
					"%u; every client needs its own token",
					lineno, e->name, v[i].name, v[i].line);
				goto fail;
			}
		}
		count++;
	}
	*out = v;
	*n = count;
	return 0;
fail:
	free(v);
	return -1;
}

/* Reads, checks and parses path; errors name the file. */
static int load_entries(const char *path, struct client_entry **v, size_t *n, char **why)
{
	char *text = NULL;
	size_t len = 0;
	if (clients_read_file(path, &text, &len, NULL, why) < 0)
		return -1;
	int rc = clients_parse(text, len, v, n, why);
	free(text);
	if (rc < 0)
		why_prefix(why, "%s", path);
	return rc;
}

/* ---- the table ---- */

int clients_load(const char *path, struct clients **out, char **why)
{
	struct client_entry *v = NULL;
	size_t n = 0;
	if (load_entries(path, &v, &n, why) < 0)
		return -1;
	struct clients *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	pthread_rwlock_init(&c->lock, NULL);
	c->path = strdup(path);
	if (!c->path)
		abort();
	c->v = v;
	c->n = n;
	*out = c;
	return 0;
}

int clients_reload(struct clients *c, char **why)
{
	struct client_entry *v = NULL;
	size_t n = 0;
	if (load_entries(c->path, &v, &n, why) < 0) {
		why_prefix(why, "kept the clients loaded before");
		return -1;
	}
	pthread_rwlock_wrlock(&c->lock);
	struct client_entry *old = c->v;
	c->v = v;
	c->n = n;
	pthread_rwlock_unlock(&c->lock);
	free(old);
	return 0;
}

void clients_free(struct clients *c)
{
	if (!c)
		return;
	pthread_rwlock_destroy(&c->lock);
	free(c->v);
	free(c->path);
	free(c);
}

size_t clients_count(struct clients *c)
{
	pthread_rwlock_rdlock(&c->lock);
	size_t n = c->n;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

const char *clients_path(const struct clients *c)
{
	return c->path;
}

/* 1 when x is zero, 0 otherwise, without a branch. */
static size_t is_zero(unsigned x)
{
	return (size_t)(1u ^ ((x | (0u - x)) >> (sizeof x * 8 - 1)));
}

int clients_authenticate(struct clients *c, const char *token, size_t len,
			 struct client_principal *who)
{
	if (!token || len == 0 || len > CLIENTS_TOKEN_MAX)
		return -1;
	unsigned char digest[CLIENTS_DIGEST_LEN];
	clients_token_digest(token, len, digest);
	pthread_rwlock_rdlock(&c->lock);
	size_t found = 0, at = 0;
	for (size_t i = 0; i < c->n; i++) {
		size_t eq = is_zero((unsigned)CRYPTO_memcmp(digest, c->v[i].digest, CLIENTS_DIGEST_LEN)) &
			    (size_t)!c->v[i].no_token; /* ---- tls: no token, no match ---- */
		size_t mask = (size_t)0 - eq;
		found |= eq;
		at = (at & ~mask) | (i & mask);
	}
	int rc = -1;
	if (found) {
		memcpy(who->name, c->v[at].name, sizeof who->name);
		who->scopes = c->v[at].scopes;
		who->approval = c->v[at].approval;
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	OPENSSL_cleanse(digest, sizeof digest);
	return rc;
}

/* ---- tls ---- */
int clients_by_subject(struct clients *c, const char *subject, struct client_principal *who)
{
	if (!subject || !*subject)
		return -1;
	pthread_rwlock_rdlock(&c->lock);
	int rc = -1;
	for (size_t i = 0; i < c->n && rc < 0; i++) {
		if (!c->v[i].subject[0] || strcmp(c->v[i].subject, subject))
			continue;
		memcpy(who->name, c->v[i].name, sizeof who->name);
		who->scopes = c->v[i].scopes;
		who->approval = c->v[i].approval;
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int clients_bearer_token(const char *header, const char **token, size_t *len)
{
	static const char scheme[] = "Bearer";
	if (!header || strncasecmp(header, scheme, strlen(scheme)))
		return -1;
	const char *p = header + strlen(scheme);
	if (*p != ' ' && *p != '\t')
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strlen(p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (p[i] == ' ' || p[i] == '\t' || (unsigned char)p[i] < 0x21 || p[i] == 0x7f)
			return -1;
	*token = p;
	*len = n;
	return 0;
}
