/* Where a daemon is and how to prove who we are: a target string (a unix
 * socket or a loopback URL) and the token from a file or the environment
 * (the socket a daemon left in its state directory: discover.c). */
#include "client_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The bearer token travels in cleartext over HTTP: only to this machine. */
static bool loopback_host(const char *host, size_t len)
{
	char h[256];
	if (len == 0 || len >= sizeof h)
		return false;
	memcpy(h, host, len);
	h[len] = '\0';
	if (!strcasecmp(h, "localhost") || !strcmp(h, "[::1]"))
		return true;
	struct in_addr a;
	/* An address, never a prefix: 127.evil.example is a name. */
	return inet_pton(AF_INET, h, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

int client_parse_target(const char *target, char **base, char **unix_path,
			struct bh_client_error **err)
{
	if (!target || !*target)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "no daemon to attach to: give a socket path or "
						     "http://127.0.0.1:PORT"));
	if (!strncmp(target, "http://", 7)) {
		const char *host = target + 7;
		size_t n = strcspn(host, "/?#");
		if (host[n] && strcmp(host + n, "/"))
			return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
							     "%s: give the daemon's address without a "
							     "path, query or fragment", target));
		if (memchr(host, '@', n))
			return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
							     "%s: no user information in the address",
							     target));
		const char *colon = host[0] == '[' ? memchr(host, ']', n) : memchr(host, ':', n);
		size_t hlen = colon ? (size_t)(colon - host) + (host[0] == '[') : n;
		if (!loopback_host(host, hlen))
			return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
							     "%s: cleartext HTTP carries the token, so "
							     "only a loopback daemon is reached this way",
							     target));
		*base = xasprintf("http://%.*s", (int)n, host);
		*unix_path = NULL;
		return 0;
	}
	if (!strncmp(target, "https://", 8)) {
		*base = xstrdup(target);
		size_t len = strlen(*base);
		while (len > 8 && (*base)[len - 1] == '/')
			(*base)[--len] = '\0';
		*unix_path = NULL;
		return 0;
	}
	const char *path = !strncmp(target, "unix:", 5) ? target + 5 : target;
	if (strstr(target, "://"))
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "%s: not a socket path or an http:// address",
						     target));
	if (!*path)
		return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
						     "unix: needs a socket path"));
	/* The Host a unix socket's daemon sees: a loopback name. */
	*base = xstrdup("http://localhost");
	*unix_path = xstrdup(path);
	return 0;
}

/* The first line of a file, trailing whitespace removed; NULL with errno. */
static char *first_line(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	if (n < 0) {
		free(line);
		errno = ENODATA; /* an empty file */
		return NULL;
	}
	while (n > 0 && strchr(" \t\r\n", line[n - 1]))
		line[--n] = '\0';
	return line;
}

int bh_client_token(const char *token_file, char **out, struct bh_client_error **err)
{
	*out = NULL;
	if (token_file) {
		char *t = first_line(token_file);
		if (!t)
			return client_fail(err, client_error(WIRE_INVALID_ARGUMENT, WIRE_REFUSAL_REQUEST,
							     "cannot read the token from %s: %s",
							     token_file, strerror(errno)));
		*out = t;
		return 0;
	}
	const char *env = getenv(BH_CLIENT_TOKEN_ENV);
	if (env && *env)
		*out = xstrdup(env);
	return 0;
}
