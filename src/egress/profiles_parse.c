/* The profiles file's text -> a set of profiles.
 *
 * The format is the clients file's family (include/bulkhead/clients.h): one
 * statement a line, fields separated by spaces or tabs, blank lines and lines
 * starting with '#' ignored. A `profile NAME` line starts a profile; the lines
 * after it, up to the next one, say what it allows:
 *
 *     profile github-issues
 *       description  Read the project's issues
 *       origin       https://api.github.com
 *       route        GET /repos/bulkhead/bulkhead/issues
 *       route        GET /repos/bulkhead/bulkhead/issues/ *
 *       credential   file /etc/bulkhead/credentials/github
 *       header       Authorization Bearer {credential}
 *       principals   ci agent
 *       allow-in-sessions yes
 *
 * Every key is known or the file is refused, with the line; so is a key set
 * twice, a value out of its range and a profile whose parts do not fit
 * together (a credential no header sends, a header naming a credential the
 * profile has not). docs/api.md lists every key. Comments are whole lines
 * only: description and header take the rest of their line as it is. */
#include "egress_priv.h"

#include <stdio.h>
#include <string.h>

#define MAX_FIELDS (EGRESS_MAX_ARGS + 3) /* "credential command" and the argv */

struct field {
	const char *s;
	size_t len;
};

struct line {
	unsigned no;
	const char *text;
	size_t len;
	struct field f[MAX_FIELDS];
	size_t n; /* counted past MAX_FIELDS, so "too many" can be said */
};

enum key {
	K_PROFILE,
	K_DESCRIPTION,
	K_ORIGIN,
	K_ROUTE,
	K_CREDENTIAL,
	K_LIFETIME,
	K_HEADER,
	K_MAX_CALLS,
	K_REQUEST_BYTES,
	K_RESPONSE_BYTES,
	K_BYTES_OUT,
	K_BYTES_IN,
	K_IN_FLIGHT,
	K_TIMEOUT,
	K_PRINCIPALS,
	K_SESSIONS,
	K_COUNT
};

struct parse {
	struct bh_egress_profile *v;
	unsigned *line, *credential_line;
	size_t n, cap;
	struct bh_egress_profile *cur; /* the profile being read, or NULL before the first */
	unsigned at[K_COUNT];          /* where the current profile set each key (0: not yet) */
	unsigned first_placeholder;    /* the first header line using {credential} */
	size_t n_headers_cap, n_routes_cap, n_origins_cap;
};

static const char *const key_names[K_COUNT] = {
	"profile",           "description",        "origin",         "route",
	"credential",        "credential-lifetime", "header",        "max-calls",
	"max-request-bytes", "max-response-bytes", "max-bytes-out",  "max-bytes-in",
	"max-in-flight",     "upstream-timeout",   "principals",     "allow-in-sessions",
};

/* Keys a profile may set once; origin, route and header repeat. */
static bool key_once(enum key k)
{
	return k != K_ORIGIN && k != K_ROUTE && k != K_HEADER && k != K_PROFILE;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static void split(struct line *l)
{
	l->n = 0;
	for (size_t i = 0;;) {
		while (i < l->len && blank(l->text[i]))
			i++;
		if (i == l->len)
			return;
		size_t start = i;
		while (i < l->len && !blank(l->text[i]))
			i++;
		if (l->n < MAX_FIELDS)
			l->f[l->n] = (struct field){l->text + start, i - start};
		l->n++;
	}
}

/* The text after field k, without the blanks around it. */
static struct field rest_after(const struct line *l, size_t k)
{
	const char *s = l->f[k].s + l->f[k].len, *end = l->text + l->len;
	while (s < end && blank(*s))
		s++;
	while (end > s && blank(end[-1]))
		end--;
	return (struct field){s, (size_t)(end - s)};
}

static char *dup_field(const struct field *f)
{
	return xstrndup(f->s, f->len);
}

static bool field_is(const struct field *f, const char *word)
{
	return strlen(word) == f->len && !memcmp(f->s, word, f->len);
}

static int want_fields(const struct line *l, size_t n, const char *form, char **why)
{
	if (l->n == n)
		return 0;
	return why_set(why, "expected %s, found %zu field%s", form, l->n, l->n == 1 ? "" : "s");
}

/* Grows an array of elements of size sz so one more fits. */
static void *grow(void *v, size_t n, size_t *cap, size_t sz)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 4;
	void *nv = realloc(v, *cap * sz);
	if (!nv)
		abort();
	return nv;
}

/* ---- what a line may be ---- */

/* The line must be valid UTF-8 with no control character but the tab (a CR
 * in a header's value would start a header of the file's choosing). */
static int line_bytes_check(const char *s, size_t n, char **why)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\0')
			return why_set(why, "contains a NUL byte");
		if (c == '\r')
			return why_set(why, "contains a carriage return (CR); write the file with "
					    "\\n line ends and no CR anywhere");
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return why_set(why, "contains the control character 0x%02x", c);
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
		if (!k || c > 0xf4 || n - i < k)
			return why_set(why, "is not valid UTF-8");
		uint32_t cp = c & (0xff >> (k + 1));
		for (size_t j = 1; j < k; j++) {
			unsigned char d = (unsigned char)s[i + j];
			if ((d & 0xc0) != 0x80)
				return why_set(why, "is not valid UTF-8");
			cp = cp << 6 | (d & 0x3f);
		}
		if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return why_set(why, "is not valid UTF-8");
		i += k;
	}
	return 0;
}

/* A key we do not know is named only when it is short and plain, so a
 * secret pasted at the start of a line never reaches a log. */
static int unknown_key(const struct field *f, char **why)
{
	bool plain = f->len <= 32;
	for (size_t i = 0; plain && i < f->len; i++)
		plain = (f->s[i] >= 'a' && f->s[i] <= 'z') || f->s[i] == '-' || f->s[i] == '_';
	char known[512] = "";
	for (size_t k = 0; k < K_COUNT; k++)
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
			 key_names[k]);
	if (plain)
		return why_set(why, "unknown key \"%.*s\" (known: %s)", (int)f->len, f->s, known);
	return why_set(why, "unknown key of %zu characters (known: %s)", f->len, known);
}

/* ---- the keys ---- */

static int count_parse(const struct field *f, uint64_t lo, uint64_t hi, uint64_t *out,
		       const char *what, char **why)
{
	uint64_t v = 0;
	bool ok = f->len > 0 && f->len <= 9 && !(f->len > 1 && f->s[0] == '0');
	for (size_t i = 0; ok && i < f->len; i++) {
		ok = f->s[i] >= '0' && f->s[i] <= '9';
		v = v * 10 + (uint64_t)(f->s[i] - '0');
	}
	if (!ok || v < lo || v > hi)
		return why_set(why, "%s is a whole number from %llu to %llu", what,
			       (unsigned long long)lo, (unsigned long long)hi);
	*out = v;
	return 0;
}

static int size_in(const struct field *f, uint64_t lo, uint64_t hi, uint64_t *out,
		   const char *what, char **why)
{
	uint64_t v;
	if (egress_size_parse(f->s, f->len, &v, why) < 0)
		return -1;
	if (v < lo || v > hi) {
		if (lo == 0)
			return why_set(why, "%s is at most %llu MiB (0: no cap)", what,
				       (unsigned long long)(hi >> 20));
		return why_set(why, "%s is from %llu bytes to %llu MiB", what,
			       (unsigned long long)lo, (unsigned long long)(hi >> 20));
	}
	*out = v;
	return 0;
}

static int key_profile(struct parse *p, const struct line *l, char **why);

static int key_description(struct parse *p, const struct line *l, char **why)
{
	struct field r = rest_after(l, 0);
	if (r.len == 0 || r.len > EGRESS_DESCRIPTION_MAX)
		return why_set(why, "a description is 1 to %u bytes of text after the key",
			       EGRESS_DESCRIPTION_MAX);
	p->cur->description = dup_field(&r);
	return 0;
}

static int key_origin(struct parse *p, const struct line *l, char **why)
{
	struct bh_egress_profile *c = p->cur;
	char *o = NULL;
	if (want_fields(l, 2, "origin https://HOST[:PORT]", why) < 0 ||
	    egress_origin_canonical(l->f[1].s, l->f[1].len, &o, why) < 0)
		return -1;
	for (size_t i = 0; i < c->n_origins; i++)
		if (!strcmp(c->origins[i], o)) {
			why_set(why, "origin %s is listed twice in profile \"%s\"", o, c->name);
			free(o);
			return -1;
		}
	if (c->n_origins == EGRESS_MAX_ORIGINS) {
		free(o);
		return why_set(why, "a profile lists at most %u origins", EGRESS_MAX_ORIGINS);
	}
	c->origins = grow(c->origins, c->n_origins, &p->n_origins_cap, sizeof *c->origins);
	c->origins[c->n_origins++] = o;
	return 0;
}

static int key_route(struct parse *p, const struct line *l, char **why)
{
	struct bh_egress_profile *c = p->cur;
	if (want_fields(l, 3, "route METHOD /PATH/PATTERN", why) < 0 ||
	    egress_method_check(l->f[1].s, l->f[1].len, why) < 0 ||
	    egress_pattern_check(l->f[2].s, l->f[2].len, why) < 0)
		return -1;
	for (size_t i = 0; i < c->n_routes; i++)
		if (field_is(&l->f[1], c->routes[i].method) && field_is(&l->f[2], c->routes[i].pattern))
			return why_set(why, "route %s %s is listed twice in profile \"%s\"",
				       c->routes[i].method, c->routes[i].pattern, c->name);
	if (c->n_routes == EGRESS_MAX_ROUTES)
		return why_set(why, "a profile lists at most %u routes", EGRESS_MAX_ROUTES);
	c->routes = grow(c->routes, c->n_routes, &p->n_routes_cap, sizeof *c->routes);
	c->routes[c->n_routes++] = (struct bh_egress_route){dup_field(&l->f[1]), dup_field(&l->f[2])};
	return 0;
}

static int key_credential(struct parse *p, const struct line *l, char **why)
{
	struct bh_egress_credential *cr = &p->cur->credential;
	static const char form[] = "credential none | file PATH | env NAME | command PATH [ARG...]";
	if (l->n < 2)
		return why_set(why, "expected %s", form);
	const struct field *kind = &l->f[1];
	if (field_is(kind, "none"))
		return want_fields(l, 2, "credential none", why);
	if (field_is(kind, "file")) {
		if (want_fields(l, 3, "credential file PATH", why) < 0 ||
		    egress_abs_path_check("a credential file", l->f[2].s, l->f[2].len, why) < 0)
			return -1;
		cr->source = BH_EGRESS_CREDENTIAL_FILE;
		cr->file = dup_field(&l->f[2]);
		return 0;
	}
	if (field_is(kind, "env")) {
		if (want_fields(l, 3, "credential env NAME", why) < 0 ||
		    egress_env_name_check(l->f[2].s, l->f[2].len, why) < 0)
			return -1;
		cr->source = BH_EGRESS_CREDENTIAL_ENV;
		cr->env = dup_field(&l->f[2]);
		return 0;
	}
	if (field_is(kind, "command")) {
		if (l->n < 3)
			return why_set(why, "expected credential command PATH [ARG...]");
		if (l->n - 2 > EGRESS_MAX_ARGS)
			return why_set(why, "a credential command has at most %u words",
				       EGRESS_MAX_ARGS);
		if (egress_abs_path_check("a credential command", l->f[2].s, l->f[2].len, why) < 0)
			return -1;
		cr->source = BH_EGRESS_CREDENTIAL_COMMAND;
		cr->argv = xzalloc((l->n - 1) * sizeof *cr->argv);
		for (size_t i = 2; i < l->n; i++)
			cr->argv[i - 2] = dup_field(&l->f[i]);
		return 0;
	}
	return why_set(why, "expected %s", form);
}

static int key_lifetime(struct parse *p, const struct line *l, char **why)
{
	uint64_t ms = 0;
	if (want_fields(l, 2, "credential-lifetime DURATION", why) < 0)
		return -1;
	if (!field_is(&l->f[1], "0") && egress_duration_ms_parse(l->f[1].s, l->f[1].len, &ms, why) < 0)
		return -1;
	if (ms % 1000 || ms > (uint64_t)EGRESS_CEILING_LIFETIME_S * 1000)
		return why_set(why, "credential-lifetime is whole seconds up to 24h (0: a fresh "
				    "credential for every hold)");
	p->cur->credential.lifetime_s = (uint32_t)(ms / 1000);
	return 0;
}

static int key_header(struct parse *p, const struct line *l, char **why)
{
	struct bh_egress_profile *c = p->cur;
	if (l->n < 3)
		return why_set(why, "expected header NAME VALUE (the value may hold {credential})");
	const struct field *name = &l->f[1];
	struct field value = rest_after(l, 1);
	bool uses = false;
	if (egress_header_name_check(name->s, name->len, why) < 0 ||
	    egress_template_check(value.s, value.len, &uses, why) < 0)
		return -1;
	for (size_t i = 0; i < c->n_headers; i++)
		if (strlen(c->headers[i].name) == name->len &&
		    !strncasecmp(c->headers[i].name, name->s, name->len))
			return why_set(why, "header %s is set twice in profile \"%s\"",
				       c->headers[i].name, c->name);
	if (c->n_headers == EGRESS_MAX_HEADERS)
		return why_set(why, "a profile sets at most %u headers", EGRESS_MAX_HEADERS);
	if (uses && !p->first_placeholder)
		p->first_placeholder = l->no;
	c->headers = grow(c->headers, c->n_headers, &p->n_headers_cap, sizeof *c->headers);
	c->headers[c->n_headers++] = (struct bh_egress_header){dup_field(name), dup_field(&value)};
	return 0;
}

static int key_budget(struct parse *p, const struct line *l, enum key k, char **why)
{
	struct bh_egress_budgets *b = &p->cur->budgets;
	const char *what = key_names[k];
	char form[64];
	snprintf(form, sizeof form, "%s VALUE", what);
	if (want_fields(l, 2, form, why) < 0)
		return -1;
	const struct field *f = &l->f[1];
	uint64_t v = 0;
	switch (k) {
	case K_MAX_CALLS:
		if (count_parse(f, 1, EGRESS_CEILING_MAX_CALLS, &v, what, why) < 0)
			return -1;
		b->max_calls = (uint32_t)v;
		return 0;
	case K_IN_FLIGHT:
		if (count_parse(f, 1, EGRESS_CEILING_IN_FLIGHT, &v, what, why) < 0)
			return -1;
		b->max_in_flight = (uint32_t)v;
		return 0;
	case K_REQUEST_BYTES:
		return size_in(f, 1, EGRESS_CEILING_REQUEST_BYTES, &b->max_request_bytes, what, why);
	case K_RESPONSE_BYTES:
		return size_in(f, 1, EGRESS_CEILING_RESPONSE_BYTES, &b->max_response_bytes, what, why);
	case K_BYTES_OUT:
		return size_in(f, 0, EGRESS_CEILING_HOLD_BYTES, &b->max_bytes_out, what, why);
	case K_BYTES_IN:
		return size_in(f, 0, EGRESS_CEILING_HOLD_BYTES, &b->max_bytes_in, what, why);
	case K_TIMEOUT:
		if (egress_duration_ms_parse(f->s, f->len, &v, why) < 0)
			return -1;
		if (v < EGRESS_FLOOR_TIMEOUT_MS || v > EGRESS_CEILING_TIMEOUT_MS)
			return why_set(why, "upstream-timeout is from 100ms to 5m");
		b->upstream_timeout_ms = (uint32_t)v;
		return 0;
	default:
		return why_set(why, "%s is not a budget", what);
	}
}

static int key_principals(struct parse *p, const struct line *l, char **why)
{
	struct bh_egress_profile *c = p->cur;
	if (l->n < 2)
		return why_set(why, "expected principals NAME... (client names from the clients "
				    "file, or *)");
	if (l->n - 1 > EGRESS_MAX_PRINCIPALS)
		return why_set(why, "a profile names at most %u principals", EGRESS_MAX_PRINCIPALS);
	c->principals = xzalloc((l->n - 1) * sizeof *c->principals);
	/* Read the names from the text itself: a long list has more fields
	 * than struct line keeps. */
	const char *s = l->f[0].s + l->f[0].len, *end = l->text + l->len;
	while (s < end) {
		while (s < end && blank(*s))
			s++;
		if (s == end)
			break;
		const char *start = s;
		while (s < end && !blank(*s))
			s++;
		size_t n = (size_t)(s - start);
		if (!egress_principal_ok(start, n))
			return why_set(why,
				       "principal %zu is not a client name (1-64 letters, digits, "
				       "'.', '_', '-' or '@', starting with a letter or a "
				       "digit) nor *",
				       c->n_principals + 1);
		for (size_t i = 0; i < c->n_principals; i++)
			if (strlen(c->principals[i]) == n && !memcmp(c->principals[i], start, n))
				return why_set(why, "principal %s is named twice",
					       c->principals[i]);
		c->principals[c->n_principals++] = xstrndup(start, n);
	}
	if (c->n_principals > 1)
		for (size_t i = 0; i < c->n_principals; i++)
			if (!strcmp(c->principals[i], "*"))
				return why_set(why,
					       "* already means every principal: name it alone");
	return 0;
}

static int key_sessions(struct parse *p, const struct line *l, char **why)
{
	if (want_fields(l, 2, "allow-in-sessions yes|no", why) < 0)
		return -1;
	if (field_is(&l->f[1], "yes"))
		p->cur->allow_in_sessions = true;
	else if (field_is(&l->f[1], "no"))
		p->cur->allow_in_sessions = false;
	else
		return why_set(why, "allow-in-sessions is yes or no");
	return 0;
}

/* ---- a profile's parts together ---- */

/* Said at the line that started the profile. */
static int profile_check(const struct parse *p, char **why)
{
	const struct bh_egress_profile *c = p->cur;
	const unsigned *at = p->at;
	int rc = 0;
	if (c->n_origins && !c->n_routes)
		rc = why_set(why,
			     "profile \"%s\" lists origins but no route, so it reaches "
			     "nothing; add a route, or drop the origins",
			     c->name);
	else if (c->n_routes && !c->n_origins)
		rc = why_set(why, "profile \"%s\" lists routes but no origin", c->name);
	else if (!c->n_principals)
		rc = why_set(why,
			     "profile \"%s\" names no principals (add `principals NAME...`, "
			     "or `principals *` for every client)",
			     c->name);
	else if (c->credential.source != BH_EGRESS_CREDENTIAL_NONE && !p->first_placeholder)
		rc = why_set(why,
			     "profile \"%s\" has a credential (line %u) that no header "
			     "sends: add a header whose value holds {credential}",
			     c->name, at[K_CREDENTIAL]);
	else if (c->credential.source == BH_EGRESS_CREDENTIAL_NONE && p->first_placeholder)
		rc = why_set(why,
			     "profile \"%s\": the header on line %u sends {credential}, but "
			     "the profile has no credential",
			     c->name, p->first_placeholder);
	else if (at[K_LIFETIME] && c->credential.source != BH_EGRESS_CREDENTIAL_COMMAND)
		rc = why_set(why,
			     "profile \"%s\": credential-lifetime (line %u) applies only to "
			     "a credential command",
			     c->name, at[K_LIFETIME]);
	return rc;
}

static void profile_defaults(struct bh_egress_profile *c)
{
	c->budgets = (struct bh_egress_budgets){
		.max_calls = EGRESS_DEFAULT_MAX_CALLS,
		.max_request_bytes = EGRESS_DEFAULT_REQUEST_BYTES,
		.max_response_bytes = EGRESS_DEFAULT_RESPONSE_BYTES,
		.max_in_flight = EGRESS_DEFAULT_IN_FLIGHT,
		.upstream_timeout_ms = EGRESS_DEFAULT_TIMEOUT_MS,
	};
}

/* Ends the profile being read: checked, then kept. */
static int profile_end(struct parse *p, char **why)
{
	if (!p->cur)
		return 0;
	if (profile_check(p, why) < 0) {
		why_prefix(why, "line %u", p->at[K_PROFILE]);
		return -1;
	}
	if (!p->cur->description)
		p->cur->description = xstrdup("");
	p->credential_line[p->n] = p->at[K_CREDENTIAL];
	p->n++;
	p->cur = NULL;
	return 0;
}

static int key_profile(struct parse *p, const struct line *l, char **why)
{
	if (want_fields(l, 2, "profile NAME", why) < 0)
		return -1;
	const struct field *name = &l->f[1];
	if (!egress_profile_name_ok(name->s, name->len))
		return why_set(why, "a profile's name is 1-64 of a-z, 0-9, '.', '_' and '-', "
				    "starting with a letter or a digit");
	for (size_t i = 0; i < p->n; i++)
		if (field_is(name, p->v[i].name))
			return why_set(why, "profile \"%s\" is already defined on line %u",
				       p->v[i].name, p->line[i]);
	if (p->n == EGRESS_MAX_PROFILES)
		return why_set(why, "a file defines at most %u profiles", EGRESS_MAX_PROFILES);
	if (p->n == p->cap) {
		size_t cap = p->cap;
		p->v = grow(p->v, p->n, &cap, sizeof *p->v);
		cap = p->cap;
		p->line = grow(p->line, p->n, &cap, sizeof *p->line);
		p->credential_line = grow(p->credential_line, p->n, &p->cap, sizeof *p->credential_line);
	}
	p->cur = &p->v[p->n];
	memset(p->cur, 0, sizeof *p->cur);
	profile_defaults(p->cur);
	p->cur->name = dup_field(name);
	p->line[p->n] = l->no;
	memset(p->at, 0, sizeof p->at);
	p->at[K_PROFILE] = l->no;
	p->first_placeholder = 0;
	p->n_headers_cap = p->n_routes_cap = p->n_origins_cap = 0;
	return 0;
}

static int statement(struct parse *p, const struct line *l, char **why)
{
	size_t k = 0;
	while (k < K_COUNT && !field_is(&l->f[0], key_names[k]))
		k++;
	if (k == K_COUNT)
		return unknown_key(&l->f[0], why);
	if (k == K_PROFILE)
		return profile_end(p, why) < 0 ? -2 : key_profile(p, l, why);
	if (!p->cur)
		return why_set(why, "%s comes before any profile (start one with `profile NAME`)",
			       key_names[k]);
	if (key_once(k) && p->at[k])
		return why_set(why, "%s is already set for profile \"%s\" on line %u", key_names[k],
			       p->cur->name, p->at[k]);
	p->at[k] = l->no;
	switch ((enum key)k) {
	case K_DESCRIPTION:
		return key_description(p, l, why);
	case K_ORIGIN:
		return key_origin(p, l, why);
	case K_ROUTE:
		return key_route(p, l, why);
	case K_CREDENTIAL:
		return key_credential(p, l, why);
	case K_LIFETIME:
		return key_lifetime(p, l, why);
	case K_HEADER:
		return key_header(p, l, why);
	case K_PRINCIPALS:
		return key_principals(p, l, why);
	case K_SESSIONS:
		return key_sessions(p, l, why);
	default:
		return key_budget(p, l, (enum key)k, why);
	}
}

/* ---- the whole text ---- */

void egress_profile_clear(struct bh_egress_profile *c)
{
	free(c->name);
	free(c->description);
	for (size_t i = 0; i < c->n_origins; i++)
		free(c->origins[i]);
	free(c->origins);
	for (size_t i = 0; i < c->n_routes; i++) {
		free(c->routes[i].method);
		free(c->routes[i].pattern);
	}
	free(c->routes);
	free(c->credential.file);
	free(c->credential.env);
	for (char **a = c->credential.argv; a && *a; a++)
		free(*a);
	free(c->credential.argv);
	for (size_t i = 0; i < c->n_headers; i++) {
		free(c->headers[i].name);
		free(c->headers[i].template);
	}
	free(c->headers);
	for (size_t i = 0; i < c->n_principals; i++)
		free(c->principals[i]);
	free(c->principals);
	memset(c, 0, sizeof *c);
}

static void parse_free(struct parse *p)
{
	size_t n = p->n + (p->cur ? 1 : 0);
	for (size_t i = 0; i < n; i++)
		egress_profile_clear(&p->v[i]);
	free(p->v);
	free(p->line);
	free(p->credential_line);
}

int egress_profiles_parse(const char *text, size_t len, bh_egress_profiles **out, char **why)
{
	struct parse p = {0};
	struct line l = {0};
	for (size_t at = 0; at < len;) {
		l.no++;
		l.text = text + at;
		const char *nl = memchr(l.text, '\n', len - at);
		l.len = nl ? (size_t)(nl - l.text) : len - at;
		at += l.len + (nl ? 1 : 0);
		if (line_bytes_check(l.text, l.len, why) < 0)
			goto fail_line;
		split(&l);
		if (l.n == 0 || l.f[0].s[0] == '#')
			continue;
		int rc = statement(&p, &l, why);
		if (rc == -2)
			goto fail; /* profile_end said where */
		if (rc < 0)
			goto fail_line;
	}
	if (profile_end(&p, why) < 0)
		goto fail;
	bh_egress_profiles *set = xzalloc(sizeof *set);
	atomic_init(&set->refs, 1);
	set->v = p.v;
	set->n = p.n;
	set->credential_line = p.credential_line;
	free(p.line);
	*out = set;
	return 0;
fail_line:
	why_prefix(why, "line %u", l.no);
fail:
	parse_free(&p);
	return -1;
}
