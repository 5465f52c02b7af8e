/* The profiles file's values, one checker each. Every rule refuses rather
 * than repairs: the broker compares what a sandbox asks for with these texts
 * byte for byte, so a file that says one thing must mean one thing. Nothing
 * here echoes a value it refuses at length (a secret pasted into the wrong
 * field must not reach a log). */
#include "egress_priv.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- errors (why_set and its kin are the base's) ---- */

int egress_fail(bh_error **err, char **why)
{
	if (err) {
		bh_error *e = xzalloc(sizeof *e);
		e->code = BH_E_INVALID;
		e->msg = *why ? steal_ptr(*why) : xstrdup("the profiles file is not valid");
		bh_error_free(*err);
		*err = e;
	}
	free(steal_ptr(*why));
	return -1;
}

/* ---- names ---- */

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool egress_profile_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > EGRESS_NAME_MAX || !lower_alnum(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

bool egress_principal_ok(const char *s, size_t n)
{
	if (n == 1 && s[0] == '*')
		return true;
	if (n == 0 || n > 64 || !alnum(s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-' && s[i] != '@')
			return false;
	return true;
}

/* ---- origins ---- */

static bool digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* A DNS name as the broker will resolve it: lowercase labels of letters,
 * digits and inner hyphens, no trailing dot. Not all digits and dots (that
 * is an address, checked as one). */
static int dns_name_check(const char *h, size_t n, char **why)
{
	if (n > 253)
		return why_set(why, "the host is longer than 253 characters");
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || h[i] == '.') {
			if (label == 0)
				return why_set(why,
					       "the host has an empty label (\"..\", or a dot at "
					       "either end)");
			if (label > 63)
				return why_set(why,
					       "a label of the host is longer than 63 characters");
			if (h[i - 1] == '-' || h[i - label] == '-')
				return why_set(why, "a label of the host starts or ends with '-'");
			label = 0;
			continue;
		}
		char c = h[i];
		if (c >= 'A' && c <= 'Z')
			return why_set(why, "write the host in lower case");
		if (!lower_alnum(c) && c != '-')
			return why_set(why, "the host may hold only letters, digits, '-' and '.'");
		label++;
	}
	return 0;
}

/* An address literal, only in the form inet_ntop writes it (no leading
 * zeros, IPv6 compressed and lowercase), so one address has one spelling. */
static int address_check(int family, const char *h, size_t n, char **why)
{
	char in[INET6_ADDRSTRLEN + 1], back[INET6_ADDRSTRLEN];
	unsigned char bin[16];
	if (n >= sizeof in)
		return why_set(why, "the address is not an IP%s address",
			       family == AF_INET ? "v4" : "v6");
	memcpy(in, h, n);
	in[n] = '\0';
	struct in_addr a;
	if (inet_pton(family, in, bin) != 1 && family == AF_INET && inet_aton(in, &a))
		return why_set(why,
			       "the host is an IPv4 address in another notation; write it "
			       "as %s",
			       inet_ntoa(a));
	if (inet_pton(family, in, bin) != 1)
		return why_set(why, "the address is not an IP%s address",
			       family == AF_INET ? "v4" : "v6");
	if (!inet_ntop(family, bin, back, sizeof back) || strcmp(back, in))
		return why_set(why, "write the address as %s", back);
	return 0;
}

/* inet_aton (and so the resolver) reads "0x7f.1" or "017.0.0.1" as an
 * address: a host written so is an address in disguise. */
static int other_notation_check(const char *h, size_t n, char **why)
{
	char in[64];
	struct in_addr a;
	if (n >= sizeof in)
		return 0;
	memcpy(in, h, n);
	in[n] = '\0';
	if (inet_aton(in, &a))
		return why_set(why,
			       "the host is an IPv4 address in another notation; write it "
			       "as %s",
			       inet_ntoa(a));
	return 0;
}

int egress_origin_canonical(const char *s, size_t n, char **out, char **why)
{
	static const char https[] = "https://";
	const size_t pre = sizeof https - 1;
	if (n >= 7 && !strncasecmp(s, "http://", 7))
		return why_set(why, "origins are https:// only: the broker makes its own TLS "
				    "connection to the upstream");
	if (n < pre || memcmp(s, https, pre))
		return why_set(why, "an origin is https://host or https://host:port");
	const char *h = s + pre, *end = s + n;
	for (const char *p = h; p < end; p++) {
		if (*p == '/')
			return why_set(why,
				       "an origin has no path, not even \"/\" (routes name the "
				       "paths)");
		if (*p == '@')
			return why_set(why, "an origin has no user name or password");
		if (*p == '?' || *p == '#')
			return why_set(why, "an origin has no query or fragment");
	}
	const char *host = h, *host_end, *port = NULL;
	if (h < end && *h == '[') {
		const char *close = memchr(h, ']', (size_t)(end - h));
		if (!close)
			return why_set(why, "an IPv6 host is written [address]");
		if (address_check(AF_INET6, h + 1, (size_t)(close - h - 1), why) < 0)
			return -1;
		host_end = close + 1;
		if (host_end < end && *host_end != ':')
			return why_set(why, "only \":port\" may follow ]");
	} else {
		host_end = memchr(h, ':', (size_t)(end - h));
		if (!host_end)
			host_end = end;
		size_t hn = (size_t)(host_end - h);
		if (hn == 0)
			return why_set(why, "the origin names no host");
		bool numeric = true;
		for (size_t i = 0; numeric && i < hn; i++)
			numeric = (h[i] >= '0' && h[i] <= '9') || h[i] == '.';
		if (numeric) {
			if (address_check(AF_INET, h, hn, why) < 0)
				return -1;
		} else if (dns_name_check(h, hn, why) < 0 || other_notation_check(h, hn, why) < 0) {
			return -1;
		}
	}
	unsigned long pv = 443;
	if (host_end < end) {
		port = host_end + 1;
		size_t pn = (size_t)(end - port);
		if (!digits(port, pn) || pn > 5 || port[0] == '0')
			return why_set(why,
				       "the port is 1 to 65535, in digits without a leading zero");
		pv = strtoul(port, NULL, 10);
		if (pv > 65535)
			return why_set(why, "the port is 1 to 65535");
	}
	*out = xasprintf("https://%.*s:%lu", (int)(host_end - host), host, pv);
	return 0;
}

/* ---- routes ---- */

int egress_method_check(const char *s, size_t n, char **why)
{
	static const char *const methods[] = {"*", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
					      "OPTIONS"};
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (strlen(methods[i]) == n && !memcmp(methods[i], s, n))
			return 0;
	if ((n == 7 && !strncasecmp(s, "CONNECT", 7)) || (n == 5 && !strncasecmp(s, "TRACE", 5)))
		return why_set(why, "a route may not allow CONNECT or TRACE (the broker handles "
				    "CONNECT itself)");
	return why_set(why, "the method is * or one of GET, HEAD, POST, PUT, PATCH, DELETE, "
			    "OPTIONS (upper case)");
}

/* RFC 3986's pchar without '%': what a decoded, canonical segment holds. */
static bool pchar(char c)
{
	return alnum(c) || strchr("-._~!$&'()+,;=:@", c) != NULL;
}

int egress_pattern_check(const char *s, size_t n, char **why)
{
	if (n == 0 || s[0] != '/')
		return why_set(why, "a route's pattern starts with '/'");
	if (n > EGRESS_PATTERN_MAX)
		return why_set(why, "a route's pattern is at most %u bytes", EGRESS_PATTERN_MAX);
	if (n == 1)
		return 0;
	size_t at = 1;
	while (at <= n) {
		const char *seg = s + at;
		const char *slash = memchr(seg, '/', n - at);
		size_t len = slash ? (size_t)(slash - seg) : n - at;
		/* One trailing '/' names its own resource ("/simple/requests/"
		 * is not "/simple/requests"); an empty segment inside never does. */
		if (len == 0 && at == n)
			break;
		if (len == 0)
			return why_set(why, "a route's pattern has no empty segment (\"//\")");
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return why_set(why, "a route's pattern has no \".\" or \"..\" segment");
		bool star = len == 1 && seg[0] == '*';
		for (size_t i = 0; !star && i < len; i++) {
			char c = seg[i];
			if (c == '*')
				return why_set(why,
					       "'*' matches a whole segment: write \"/*/\", never "
					       "a part of one");
			if (c == '%')
				return why_set(why, "a route's pattern is written decoded: no "
						    "%%-escapes");
			if (c == '?' || c == '#')
				return why_set(why, "a route matches the path alone: no query or "
						    "fragment");
			if (!pchar(c))
				return why_set(why,
					       "a route's pattern may hold only letters, digits "
					       "and -._~!$&'()+,;=:@ between its slashes");
		}
		at += len + 1;
	}
	return 0;
}

/* ---- headers ---- */

static bool tchar(char c)
{
	return alnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int egress_header_name_check(const char *s, size_t n, char **why)
{
	/* Hop-by-hop headers belong to one connection (the broker's own with
	 * the upstream), the framing ones to the broker: a profile adding any
	 * of them could split or smuggle a request. */
	static const char *const refused[] = {
		"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
		"proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
		"content-length",
	};
	if (n == 0 || n > 64)
		return why_set(why, "a header's name is 1 to 64 characters");
	for (size_t i = 0; i < n; i++)
		if (!tchar(s[i]))
			return why_set(why, "a header's name is an HTTP token (letters, digits and "
					    "!#$%%&'*+-.^_`|~)");
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		if (strlen(refused[i]) == n && !strncasecmp(refused[i], s, n))
			return why_set(why,
				       "%s is a hop-by-hop or framing header the broker sets "
				       "itself; a profile may not add it",
				       refused[i]);
	return 0;
}

#define PLACEHOLDER "{credential}"

int egress_template_check(const char *s, size_t n, bool *uses, char **why)
{
	*uses = false;
	if (n == 0)
		return why_set(why, "a header needs a value after its name");
	if (n > EGRESS_TEMPLATE_MAX)
		return why_set(why, "a header's value is at most %u bytes", EGRESS_TEMPLATE_MAX);
	const size_t pl = sizeof PLACEHOLDER - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\r' || c == '\n')
			return why_set(why, "a header's value may not hold CR or LF");
		if ((c < 0x20 && c != '\t') || c >= 0x7f)
			return why_set(why, "a header's value is visible ASCII, spaces and tabs");
		if (c == '}')
			return why_set(why, "a stray '}' in a header's value (the one placeholder "
					    "is " PLACEHOLDER ")");
		if (c != '{')
			continue;
		if (n - i < pl || memcmp(s + i, PLACEHOLDER, pl))
			return why_set(
				why,
				"the one placeholder a header's value may hold is " PLACEHOLDER);
		if (*uses)
			return why_set(why, PLACEHOLDER " appears more than once in one header");
		*uses = true;
		i += pl - 1;
	}
	return 0;
}

/* ---- what a credential names ---- */

int egress_abs_path_check(const char *what, const char *s, size_t n, char **why)
{
	if (n == 0 || s[0] != '/')
		return why_set(why, "%s must be an absolute path", what);
	if (n > EGRESS_PATH_MAX)
		return why_set(why, "%s is longer than %u bytes", what, EGRESS_PATH_MAX);
	if (n == 1)
		return why_set(why, "%s must name a file, not /", what);
	for (size_t at = 1; at <= n;) {
		const char *seg = s + at;
		const char *slash = memchr(seg, '/', n - at);
		size_t len = slash ? (size_t)(slash - seg) : n - at;
		if (len == 0 || (len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return why_set(why,
				       "%s must be written plainly: no \"//\", \".\", \"..\" or "
				       "trailing '/'",
				       what);
		at += len + 1;
	}
	return 0;
}

int egress_env_name_check(const char *s, size_t n, char **why)
{
	bool ok = n > 0 && n <= 128 && !(s[0] >= '0' && s[0] <= '9');
	for (size_t i = 0; ok && i < n; i++)
		ok = alnum(s[i]) || s[i] == '_';
	return ok ? 0
		  : why_set(why, "an environment variable's name is letters, digits and '_', "
				 "not starting with a digit");
}

/* ---- numbers ---- */

static int leading_number(const char *s, size_t n, uint64_t *v, size_t *used)
{
	size_t i = 0;
	uint64_t x = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9') {
		if (i >= 15)
			return -1; /* far past any limit here, and far from overflowing */
		x = x * 10 + (uint64_t)(s[i] - '0');
		i++;
	}
	if (i == 0 || (i > 1 && s[0] == '0'))
		return -1;
	*v = x;
	*used = i;
	return 0;
}

int egress_size_parse(const char *s, size_t n, uint64_t *out, char **why)
{
	static const struct {
		const char *unit;
		unsigned shift;
	} units[] = {{"", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}};
	uint64_t v;
	size_t used;
	if (leading_number(s, n, &v, &used) == 0)
		for (size_t i = 0; i < ARRAY_SIZE(units); i++)
			if (strlen(units[i].unit) == n - used && !memcmp(units[i].unit, s + used, n - used)) {
				*out = v << units[i].shift;
				return 0;
			}
	return why_set(why, "a size is a number of bytes, or a number with KiB, MiB or GiB "
			    "(\"4MiB\")");
}

int egress_duration_ms_parse(const char *s, size_t n, uint64_t *out, char **why)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
	uint64_t v;
	size_t used;
	if (leading_number(s, n, &v, &used) == 0)
		for (size_t i = 0; i < ARRAY_SIZE(units); i++)
			if (strlen(units[i].unit) == n - used && !memcmp(units[i].unit, s + used, n - used)) {
				*out = v * units[i].ms;
				return 0;
			}
	return why_set(why, "a duration is a number with ms, s, m or h (\"30s\")");
}
