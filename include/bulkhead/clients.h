/* The clients file: who may call the daemon, and with which scopes.
 *
 * One client per line, fields separated by spaces or tabs:
 *
 *     # NAME  DIGEST (64 hex digits of the SHA-256 of the client's token)  SCOPES
 *     ci      sha256:3f7a09c4...                                             code:run
 *     console sha256:91be22d0...                                             code:run,operator
 *
 * A fourth field may set the client's approval policy (the approval desk,
 * docs/api.md): `approval=required` holds its code calls for a person's
 * decision, `approval=none` never holds them, whatever `serve --approval`
 * says; without it the daemon's default applies.
 *
 * ---- tls ---- `subject=DN` (a fourth or fifth field) names the client whose
 * verified certificate (serve --tls-client-ca) has that subject, written as
 * RFC 4514 prints it, most specific first: `subject=CN=worker-1,O=Example`
 * (no blanks). Such a client may leave its token out: a DIGEST of `-` means
 * "certificate only". Any other key is refused.
 *
 * Blank lines and lines starting with '#' are ignored; a field starting with
 * '#' ends the line. The file holds digests only, never a token. Tokens are
 * "bh_" + 43 base64url characters (32 random bytes); they are shown once, by
 * `bulkhead token create`, and never appear in any text this module returns.
 *
 * A loaded table (struct clients) may be shared between threads:
 * clients_authenticate() takes a read lock, clients_reload() swaps the table
 * under a write lock and keeps the old one when the new file is bad. */
#ifndef BH_DAEMON_CLIENTS_H
#define BH_DAEMON_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>

#define CLIENTS_DEFAULT_PATH "/etc/bulkhead/clients"
#define CLIENTS_NAME_MAX 64         /* bytes in a client name */
#define CLIENTS_TOKEN_LEN 46        /* "bh_" + 43 base64url characters */
#define CLIENTS_TOKEN_MAX 1024      /* longer bearer values are refused unhashed */
#define CLIENTS_FILE_MAX (1u << 20) /* a bigger file is refused */
#define CLIENTS_DIGEST_LEN 32       /* SHA-256 */
#define CLIENTS_SUBJECT_MAX 255     /* ---- tls: bytes of a subject=DN */

enum client_scope {
	CLIENT_SCOPE_CODE_RUN = 1u << 0, /* "code:run": the plimsoll.v1 SandboxService */
	CLIENT_SCOPE_OPERATOR = 1u << 1, /* "operator": the bulkhead.v1 OperatorService */
};

/* ---- approvals ---- */
enum client_approval {
	CLIENT_APPROVAL_DEFAULT = 0, /* the daemon's (serve --approval) */
	CLIENT_APPROVAL_REQUIRED,    /* "approval=required" */
	CLIENT_APPROVAL_NONE,        /* "approval=none" */
};

/* One line of the file. */
struct client_entry {
	char name[CLIENTS_NAME_MAX + 1];
	unsigned char digest[CLIENTS_DIGEST_LEN]; /* SHA-256 of the token */
	unsigned scopes;                          /* enum client_scope bits */
	unsigned line;                            /* 1-based line in the file it came from */
	enum client_approval approval;
	/* ---- tls: the certificate subject that names it ("" none); no_token:
	 * DIGEST was "-", only the certificate lets it in ---- */
	char subject[CLIENTS_SUBJECT_MAX + 1];
	bool no_token;
};

/* Who a token belongs to: a copy, valid after the table is reloaded or freed. */
struct client_principal {
	char name[CLIENTS_NAME_MAX + 1];
	unsigned scopes;
	enum client_approval approval;
};

struct clients;

/* Reads and checks the file at path (see clients_read_file) and parses it. */
int clients_load(const char *path, struct clients **out, char **why);
/* Re-reads the file the table was loaded from. On any error the old table
 * stays in use and *why says what is wrong with the new file. For SIGHUP:
 * call it from the daemon's loop, never from the signal handler. */
int clients_reload(struct clients *c, char **why);
void clients_free(struct clients *c);
size_t clients_count(struct clients *c);
const char *clients_path(const struct clients *c);

/* Finds the client whose digest is SHA-256(token). The digest is compared
 * with CRYPTO_memcmp against every entry, with no early exit, so the time
 * taken does not say which entry (if any) matched. Returns 0 and fills *who,
 * or -1 when the token is empty, too long or nobody's. */
int clients_authenticate(struct clients *c, const char *token, size_t len,
			 struct client_principal *who);
/* ---- tls: the client whose subject= is exactly subject (compared as
 * bytes, case and all). 0 and *who, or -1 when no line names it. ---- */
int clients_by_subject(struct clients *c, const char *subject, struct client_principal *who);

/* Takes the token out of an Authorization header value ("Bearer TOKEN",
 * the scheme matched case-insensitively). Returns 0 and points *token into
 * header, or -1 when the header is not a bearer credential. */
int clients_bearer_token(const char *header, const char **token, size_t *len);

static inline bool client_has_scope(const struct client_principal *who, enum client_scope s)
{
	return (who->scopes & (unsigned)s) == (unsigned)s;
}

/* ---- pieces shared with `bulkhead token` ---- */

/* Opens path and refuses it unless it is a regular file owned by root or by
 * us, not group- or world-writable, at most CLIENTS_FILE_MAX bytes. Returns
 * 0 with the malloc'd contents (NUL-terminated) in *text; *missing (when not
 * NULL) is set when the only trouble is that the file does not exist. */
int clients_read_file(const char *path, char **text, size_t *len, bool *missing, char **why);
/* Parses a whole file. Errors start with "line N: ". */
int clients_parse(const char *text, size_t len, struct client_entry **out, size_t *n,
		  char **why);
/* 1-64 of [A-Za-z0-9._@-], starting with a letter or a digit. */
int clients_check_name(const char *name, char **why);
/* "code:run,operator" -> bits; refuses empty items and unknown scopes. */
int clients_scopes_parse(const char *list, unsigned *scopes, char **why);
/* bits -> "code:run,operator" (in that order); returns the length. */
size_t clients_scopes_format(unsigned scopes, char *buf, size_t size);
/* A fresh token from RAND_bytes: "bh_" + 43 base64url characters + NUL. */
int clients_token_new(char token[CLIENTS_TOKEN_LEN + 1], char **why);
void clients_token_digest(const char *token, size_t len, unsigned char digest[CLIENTS_DIGEST_LEN]);
/* 64 lowercase hex digits + NUL. */
void clients_digest_hex(const unsigned char digest[CLIENTS_DIGEST_LEN], char hex[65]);

#endif
