/* Request targets judged against the profile's vocabulary (target.h). The
 * rule is "one spelling per resource": a path the broker would have to
 * normalise before matching is refused instead, so the upstream can never
 * read a path differently from the pattern that let it through. */
#include "target.h"

#include "base.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void target_free(struct target *t)
{
	free(t->host);
	free(t->origin);
	free(t->path);
	free(t->query);
	memset(t, 0, sizeof *t);
}

static int host_check(char *host, bool *ip_literal, const char **why)
{
	size_t n = strlen(host);
	if (!n || n > 253) {
		*why = "an empty or over-long host";
		return -1;
	}
	if (host[0] == '[') {
		char inner[64];
		if (host[n - 1] != ']' || n - 2 >= sizeof inner) {
			*why = "a malformed IPv6 literal";
			return -1;
		}
		memcpy(inner, host + 1, n - 2);
		inner[n - 2] = '\0';
		struct in6_addr a6;
		if (inet_pton(AF_INET6, inner, &a6) != 1) {
			*why = "a malformed IPv6 literal";
			return -1;
		}
		*ip_literal = true;
		return 0;
	}
	bool last_label_numeric = true;
	for (size_t i = 0; i < n; i++) {
		char c = (char)tolower((unsigned char)host[i]);
		host[i] = c;
		if (c == '.') {
			if (i == 0 || i == n - 1 || host[i - 1] == '.') {
				*why = "a host with an empty label";
				return -1;
			}
			last_label_numeric = true;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-') {
			*why = "a host with a byte no DNS name has";
			return -1;
		}
		if (!isdigit((unsigned char)c) && !(c == 'x' && i > 0 && host[i - 1] == '0'))
			last_label_numeric = false;
	}
	/* 127.0.0.1, but also 2130706433 or 0x7f.1: anything a resolver could
	 * read as an address is an IP literal, named or refused as one. */
	*ip_literal = last_label_numeric;
	return 0;
}

static void set_origin(struct target *t)
{
	free(t->origin);
	t->origin = xasprintf("https://%s:%u", t->host, (unsigned)t->port);
}

int target_authority(const char *authority, uint16_t default_port, struct target *out,
		     const char **why)
{
	memset(out, 0, sizeof *out);
	if (strchr(authority, '@')) {
		*why = "userinfo in the authority";
		return -1;
	}
	const char *colon = NULL;
	if (authority[0] == '[') {
		const char *close = strchr(authority, ']');
		if (close && close[1] == ':')
			colon = close + 1;
		else if (close && close[1]) {
			*why = "bytes after an IPv6 literal";
			return -1;
		}
	} else {
		colon = strchr(authority, ':');
	}
	size_t hlen = colon ? (size_t)(colon - authority) : strlen(authority);
	uint32_t port = default_port;
	if (colon) {
		const char *p = colon + 1;
		if (!*p || strlen(p) > 5 || *p == '0') {
			*why = "a port that is not 1-65535";
			return -1;
		}
		port = 0;
		for (; *p; p++) {
			if (!isdigit((unsigned char)*p)) {
				*why = "a port that is not 1-65535";
				return -1;
			}
			port = port * 10 + (uint32_t)(*p - '0');
		}
		if (port > 65535) {
			*why = "a port that is not 1-65535";
			return -1;
		}
	}
	if (!port) {
		*why = "no port";
		return -1;
	}
	out->host = xstrndup(authority, hlen);
	if (host_check(out->host, &out->ip_literal, why) < 0) {
		target_free(out);
		return -1;
	}
	out->port = (uint16_t)port;
	set_origin(out);
	return 0;
}

int target_origin_form(const char *t, struct target *out, const char **why)
{
	if (t[0] != '/') {
		*why = "a target that is not a path";
		return -1;
	}
	if (strchr(t, '#')) {
		*why = "a fragment in the target";
		return -1;
	}
	const char *q = strchr(t, '?');
	free(out->path);
	free(out->query);
	out->path = q ? xstrndup(t, (size_t)(q - t)) : xstrdup(t);
	out->query = q ? xstrdup(q + 1) : NULL;
	return 0;
}

int target_absolute(const char *t, struct target *out, const char **why)
{
	const char *rest;
	if (!strncasecmp(t, "https://", 8))
		rest = t + 8;
	else if (!strncasecmp(t, "http://", 7))
		rest = t + 7;
	else {
		*why = "a scheme other than http or https";
		return -1;
	}
	size_t alen = strcspn(rest, "/?#");
	cleanup_free char *authority = xstrndup(rest, alen);
	if (target_authority(authority, 443, out, why) < 0)
		return -1;
	const char *path = rest + alen;
	int r = *path ? target_origin_form(path, out, why) : target_origin_form("/", out, why);
	if (r < 0) {
		target_free(out);
		return -1;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int path_canonical(const char *path, const char **why)
{
	if (path[0] != '/') {
		*why = "a path that does not start with /";
		return -1;
	}
	const char *seg = path + 1;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if (!len && end) {
			*why = "an empty path segment (//)";
			return -1;
		}
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.')) {
			*why = "a dot segment in the path";
			return -1;
		}
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)seg[i];
			if (c == '%') {
				int hi = i + 2 < len ? hexval(seg[i + 1]) : -1;
				int lo = hi >= 0 ? hexval(seg[i + 2]) : -1;
				if (hi < 0 || lo < 0) {
					*why = "a percent sign that is not %XX in upper case";
					return -1;
				}
				int v = hi * 16 + lo;
				if (isalnum(v) || v == '-' || v == '.' || v == '_' || v == '~') {
					*why = "a percent-encoded byte that needs no encoding";
					return -1;
				}
				if (v == '/' || v == '\\') {
					*why = "an encoded slash in the path";
					return -1;
				}
				if (v < 0x20 || v == 0x7f) {
					*why = "an encoded control byte in the path";
					return -1;
				}
				i += 2;
				continue;
			}
			if (isalnum(c) || strchr("-._~!$&'()*+,;=:@", c))
				continue;
			*why = c == '\\' ? "a backslash in the path" : "a byte the path may not hold";
			return -1;
		}
		if (!end)
			return 0;
		seg = end + 1;
	}
}

bool route_matches(const char *pattern, const char *path)
{
	const char *p = pattern, *s = path;
	if (*p != '/' || *s != '/')
		return false;
	p++;
	s++;
	for (;;) {
		size_t pl = strcspn(p, "/"), sl = strcspn(s, "/");
		if (pl == 1 && p[0] == '*') {
			if (!sl)
				return false;
		} else if (pl != sl || memcmp(p, s, pl)) {
			return false;
		}
		bool pend = !p[pl], send = !s[sl];
		if (pend || send)
			return pend && send;
		p += pl + 1;
		s += sl + 1;
	}
}
