/* The operator's profiles file (src/egress): what it accepts, canonically,
 * and every refusal with the line it names; then the file itself and what a
 * profile points at (owners, modes, the daemon's environment). */
#include "egress_priv.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GOOD_HEAD "profile p\n  principals *\n"

static bh_egress_profiles *parsed(const char *text)
{
	bh_egress_profiles *set = NULL;
	char *why = NULL;
	int rc = egress_profiles_parse(text, strlen(text), &set, &why);
	cr_assert_eq(rc, 0, "refused: %s\n--- text\n%s", why ? why : "(no reason)", text);
	cr_assert_null(why);
	return set;
}

/* The refusal's text (static; the next call overwrites it). */
static const char *refusal(const char *text)
{
	static char out[1024];
	bh_egress_profiles *set = NULL;
	char *why = NULL;
	int rc = egress_profiles_parse(text, strlen(text), &set, &why);
	cr_assert_eq(rc, -1, "accepted:\n%s", text);
	cr_assert_null(set);
	cr_assert_not_null(why);
	snprintf(out, sizeof out, "%s", why);
	free(why);
	return out;
}

#define assert_refused(text, expected) \
	cr_assert_str_eq(refusal(text), expected, "for:\n%s", text)

/* The refusal starts with prefix (the line and the gist; the rest is advice). */
#define assert_refused_at(text, prefix)                                                        \
	do {                                                                                   \
		const char *_r = refusal(text);                                                \
		cr_assert(!strncmp(_r, prefix, strlen(prefix)), "for:\n%s\ngot: %s\nwanted: %s…", \
			  text, _r, prefix);                                                   \
	} while (0)

Test(egress_profiles, a_full_profile_reads_back_canonically_with_its_defaults)
{
	bh_egress_profiles *set = parsed(
		"# the operator's profiles\n"
		"\n"
		"profile github-issues\n"
		"  description  Read the project's issues — nothing else\n"
		"  origin       https://api.github.com\n"
		"  origin       https://uploads.github.com:8443\n"
		"  route        GET /repos/bulkhead/bulkhead/issues\n"
		"  route        * /repos/*/issues/*\n"
		"  route        GET /\n"
		"  route        GET /simple/*/\n"
		"  credential   env BH_TEST_UNUSED\n"
		"  header       Authorization   Bearer {credential}  \n"
		"  header       X-GitHub-Api-Version 2022-11-28\n"
		"  principals   ci agent@team\n"
		"  allow-in-sessions yes\n"
		"profile untrusted\n"
		"  principals *\n");
	cr_assert_eq(bh_egress_profiles_count(set), 2);
	const struct bh_egress_profile *p = bh_egress_profiles_find(set, "github-issues");
	cr_assert_not_null(p);
	cr_assert_eq(p, bh_egress_profiles_at(set, 0));
	cr_assert_str_eq(p->description, "Read the project's issues — nothing else");
	cr_assert_eq(p->n_origins, 2);
	cr_assert_str_eq(p->origins[0], "https://api.github.com:443");
	cr_assert_str_eq(p->origins[1], "https://uploads.github.com:8443");
	cr_assert_eq(p->n_routes, 4);
	cr_assert_str_eq(p->routes[3].pattern, "/simple/*/", "one trailing '/' is its own resource");
	cr_assert_str_eq(p->routes[1].method, "*");
	cr_assert_str_eq(p->routes[1].pattern, "/repos/*/issues/*");
	cr_assert_eq(p->credential.source, BH_EGRESS_CREDENTIAL_ENV);
	cr_assert_str_eq(p->credential.env, "BH_TEST_UNUSED");
	cr_assert_eq(p->n_headers, 2);
	cr_assert_str_eq(p->headers[0].name, "Authorization");
	cr_assert_str_eq(p->headers[0].template, "Bearer {credential}");
	cr_assert_eq(p->budgets.max_calls, 256);
	cr_assert_eq(p->budgets.max_request_bytes, 1u << 20);
	cr_assert_eq(p->budgets.max_response_bytes, 4u << 20);
	cr_assert_eq(p->budgets.max_bytes_out, 0);
	cr_assert_eq(p->budgets.max_bytes_in, 0);
	cr_assert_eq(p->budgets.max_in_flight, 16);
	cr_assert_eq(p->budgets.upstream_timeout_ms, 60000);
	cr_assert(p->allow_in_sessions);
	cr_assert(bh_egress_profile_allows(p, "ci"));
	cr_assert(bh_egress_profile_allows(p, "agent@team"));
	cr_assert_not(bh_egress_profile_allows(p, "agent"));
	cr_assert_not(bh_egress_profile_allows(p, NULL), "an unauthenticated caller is nobody");

	const struct bh_egress_profile *u = bh_egress_profiles_find(set, "untrusted");
	cr_assert_eq(u->n_origins + u->n_routes + u->n_headers, 0, "untrusted reaches nothing");
	cr_assert_str_eq(u->description, "");
	cr_assert_not(u->allow_in_sessions, "sessions are off unless the profile says yes");
	cr_assert(bh_egress_profile_allows(u, "anyone"));
	cr_assert_not(bh_egress_profile_allows(u, NULL));
	cr_assert_null(bh_egress_profiles_find(set, "Untrusted"), "names are exact");
	bh_egress_profiles_unref(set);
}

Test(egress_profiles, budgets_credentials_and_lifetimes_take_their_units)
{
	bh_egress_profiles *set = parsed(
		"profile mint\n"
		"origin https://127.0.0.1:9443\n"
		"origin https://[::1]:9443\n"
		"route POST /v1/items\n"
		"credential command /usr/bin/printf %s token-for-test\n"
		"credential-lifetime 15m\n"
		"header X-Api-Key {credential}\n"
		"max-calls 100000\n"
		"max-request-bytes 64MiB\n"
		"max-response-bytes 1GiB\n"
		"max-bytes-out 512KiB\n"
		"max-bytes-in 0\n"
		"max-in-flight 1\n"
		"upstream-timeout 250ms\n"
		"principals ci\n"
		"allow-in-sessions no\n"
		"profile file\n"
		"credential file /etc/bulkhead/credentials/x\n"
		"header Authorization token {credential}\n"
		"principals ci\n");
	const struct bh_egress_profile *p = bh_egress_profiles_find(set, "mint");
	cr_assert_str_eq(p->origins[0], "https://127.0.0.1:9443");
	cr_assert_str_eq(p->origins[1], "https://[::1]:9443");
	cr_assert_eq(p->credential.source, BH_EGRESS_CREDENTIAL_COMMAND);
	cr_assert_str_eq(p->credential.argv[0], "/usr/bin/printf");
	cr_assert_str_eq(p->credential.argv[1], "%s");
	cr_assert_str_eq(p->credential.argv[2], "token-for-test");
	cr_assert_null(p->credential.argv[3]);
	cr_assert_eq(p->credential.lifetime_s, 900);
	cr_assert_eq(p->budgets.max_calls, 100000);
	cr_assert_eq(p->budgets.max_request_bytes, 64ull << 20);
	cr_assert_eq(p->budgets.max_response_bytes, 1ull << 30);
	cr_assert_eq(p->budgets.max_bytes_out, 512u << 10);
	cr_assert_eq(p->budgets.max_in_flight, 1);
	cr_assert_eq(p->budgets.upstream_timeout_ms, 250);
	cr_assert_not(p->allow_in_sessions);
	const struct bh_egress_profile *f = bh_egress_profiles_find(set, "file");
	cr_assert_eq(f->credential.source, BH_EGRESS_CREDENTIAL_FILE);
	cr_assert_str_eq(f->credential.file, "/etc/bulkhead/credentials/x");
	bh_egress_profiles_unref(set);
}

Test(egress_profiles, the_file_and_its_keys_are_refused_with_their_line)
{
	assert_refused("\n\nprofile p\nprincipals *\ncolour blue\n",
		       "line 5: unknown key \"colour\" (known: profile, description, origin, route, "
		       "credential, credential-lifetime, header, max-calls, max-request-bytes, "
		       "max-response-bytes, max-bytes-out, max-bytes-in, max-in-flight, "
		       "upstream-timeout, principals, allow-in-sessions)");
	assert_refused_at("profile p\nprincipals *\nghp_Secret0123456789abcdefghijklmnopqrstuvwxyz\n",
			  "line 3: unknown key of 46 characters (known:");
	assert_refused("origin https://a.example\n",
		       "line 1: origin comes before any profile (start one with `profile NAME`)");
	assert_refused("profile p\nprincipals *\nprincipals ci\n",
		       "line 3: principals is already set for profile \"p\" on line 2");
	assert_refused("profile p\nprincipals *\nprofile p\nprincipals *\n",
		       "line 3: profile \"p\" is already defined on line 1");
	assert_refused_at("profile Big\n", "line 1: a profile's name is 1-64 of a-z");
	assert_refused("profile\n", "line 1: expected profile NAME, found 1 field");
	assert_refused("profile p\nprincipals *\nmax-calls 5 # five\n",
		       "line 3: expected max-calls VALUE, found 4 fields");
	assert_refused("profile p\r\nprincipals *\n",
		       "line 1: contains a carriage return (CR); write the file with \\n line ends "
		       "and no CR anywhere");
	assert_refused("profile p\nprincipals *\ndescription a\x01z\n",
		       "line 3: contains the control character 0x01");
	assert_refused("profile p\nprincipals *\ndescription caf\xc3\n", "line 3: is not valid UTF-8");
	const char nul[] = "profile p\nprincipals *\ndescription a\0b\n";
	bh_egress_profiles *set = NULL;
	char *why = NULL;
	cr_assert_eq(egress_profiles_parse(nul, sizeof nul - 1, &set, &why), -1);
	cr_assert_str_eq(why, "line 3: contains a NUL byte");
	free(why);
}

Test(egress_profiles, origins_must_be_canonical_https)
{
	static const struct {
		const char *origin, *why;
	} cases[] = {
		{"http://127.0.0.1:8080", "origins are https:// only: the broker makes its own TLS "
					  "connection to the upstream"},
		{"ftp://a.example", "an origin is https://host or https://host:port"},
		{"https://a.example/", "an origin has no path, not even \"/\" (routes name the paths)"},
		{"https://a.example/v1", "an origin has no path, not even \"/\" (routes name the paths)"},
		{"https://user@a.example", "an origin has no user name or password"},
		{"https://a.example?x=1", "an origin has no query or fragment"},
		{"https://API.github.com", "write the host in lower case"},
		{"https://a..example", "the host has an empty label (\"..\", or a dot at either end)"},
		{"https://a.example.", "the host has an empty label (\"..\", or a dot at either end)"},
		{"https://-a.example", "a label of the host starts or ends with '-'"},
		{"https://a_b.example", "the host may hold only letters, digits, '-' and '.'"},
		{"https://127.000.0.1", "the host is an IPv4 address in another notation; write it as "
					"127.0.0.1"},
		{"https://2130706433", "the host is an IPv4 address in another notation; write it as "
				       "127.0.0.1"},
		{"https://1.2.3", "the host is an IPv4 address in another notation; write it as 1.2.0.3"},
		{"https://1.2.3.4.5", "the address is not an IPv4 address"},
		{"https://0x7f.1", "the host is an IPv4 address in another notation; write it as "
				   "127.0.0.1"},
		{"https://[::0001]", "write the address as ::1"},
		{"https://[::1", "an IPv6 host is written [address]"},
		{"https://a.example:0", "the port is 1 to 65535, in digits without a leading zero"},
		{"https://a.example:0443", "the port is 1 to 65535, in digits without a leading zero"},
		{"https://a.example:70000", "the port is 1 to 65535"},
		{"https://a.example:", "the port is 1 to 65535, in digits without a leading zero"},
		{"https://:443", "the origin names no host"},
		{"https://", "the origin names no host"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, GOOD_HEAD "route GET /\norigin %s\n", cases[i].origin);
		snprintf(want, sizeof want, "line 4: %s", cases[i].why);
		assert_refused(text, want);
	}
	assert_refused(GOOD_HEAD "route GET /\norigin https://a.example\norigin https://a.example:443\n",
		       "line 5: origin https://a.example:443 is listed twice in profile \"p\"");
	assert_refused(GOOD_HEAD "route GET /\norigin https://a.example https://b.example\n",
		       "line 4: expected origin https://HOST[:PORT], found 3 fields");
}

Test(egress_profiles, routes_are_whole_segment_patterns_of_canonical_paths)
{
	static const struct {
		const char *route, *why;
	} cases[] = {
		{"get /", "the method is * or one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS "
			  "(upper case)"},
		{"CONNECT /", "a route may not allow CONNECT or TRACE (the broker handles CONNECT "
			      "itself)"},
		{"GET v1", "a route's pattern starts with '/'"},
		{"GET /v1//items", "a route's pattern has no empty segment (\"//\")"},
		{"GET /v1//", "a route's pattern has no empty segment (\"//\")"},
		{"GET /v1/../admin", "a route's pattern has no \".\" or \"..\" segment"},
		{"GET /./v1", "a route's pattern has no \".\" or \"..\" segment"},
		{"GET /v1/item*", "'*' matches a whole segment: write \"/*/\", never a part of one"},
		{"GET /v1/%2e%2e", "a route's pattern is written decoded: no %-escapes"},
		{"GET /v1?x=1", "a route matches the path alone: no query or fragment"},
		{"GET /v1/\"x\"", "a route's pattern may hold only letters, digits and "
				  "-._~!$&'()+,;=:@ between its slashes"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, GOOD_HEAD "origin https://a.example\nroute %s\n",
			 cases[i].route);
		snprintf(want, sizeof want, "line 4: %s", cases[i].why);
		assert_refused(text, want);
	}
	assert_refused(GOOD_HEAD "origin https://a.example\nroute GET /a\nroute GET /a\n",
		       "line 5: route GET /a is listed twice in profile \"p\"");
	assert_refused(GOOD_HEAD "origin https://a.example\nroute GET\n",
		       "line 4: expected route METHOD /PATH/PATTERN, found 2 fields");
}

Test(egress_profiles, headers_refuse_hop_by_hop_names_and_stray_placeholders)
{
	static const struct {
		const char *header, *why;
	} cases[] = {
		{"Connection close", "connection is a hop-by-hop or framing header the broker sets "
				     "itself; a profile may not add it"},
		{"transfer-encoding chunked", "transfer-encoding is a hop-by-hop or framing header the "
					      "broker sets itself; a profile may not add it"},
		{"Host evil.example", "host is a hop-by-hop or framing header the broker sets itself; "
				      "a profile may not add it"},
		{"Proxy-Authorization Basic x", "proxy-authorization is a hop-by-hop or framing header "
						"the broker sets itself; a profile may not add it"},
		{"X(y) 1", "a header's name is an HTTP token (letters, digits and "
			   "!#$%&'*+-.^_`|~)"},
		{"X-Key {token}", "the one placeholder a header's value may hold is {credential}"},
		{"X-Key {credential}{credential}", "{credential} appears more than once in one header"},
		{"X-Key a}b", "a stray '}' in a header's value (the one placeholder is {credential})"},
		{"X-Key caf\xc3\xa9", "a header's value is visible ASCII, spaces and tabs"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, GOOD_HEAD "header %s\n", cases[i].header);
		snprintf(want, sizeof want, "line 3: %s", cases[i].why);
		assert_refused(text, want);
	}
	assert_refused(GOOD_HEAD "header X-Key\n",
		       "line 3: expected header NAME VALUE (the value may hold {credential})");
	assert_refused(GOOD_HEAD "header X-A 1\nheader x-a 2\n",
		       "line 4: header X-A is set twice in profile \"p\"");
	/* A CR that would end the header early never gets past the line rule. */
	assert_refused(GOOD_HEAD "header X-A 1\rInjected: yes\n",
		       "line 3: contains a carriage return (CR); write the file with \\n line ends "
		       "and no CR anywhere");
}

Test(egress_profiles, a_profiles_parts_must_fit_together_said_at_its_line)
{
	assert_refused("profile p\nprincipals *\norigin https://a.example\n",
		       "line 1: profile \"p\" lists origins but no route, so it reaches nothing; add a "
		       "route, or drop the origins");
	assert_refused("profile a\nprincipals *\nprofile p\nprincipals *\nroute GET /\nprofile z\n",
		       "line 3: profile \"p\" lists routes but no origin");
	assert_refused("profile p\ndescription nobody\n",
		       "line 1: profile \"p\" names no principals (add `principals NAME...`, or "
		       "`principals *` for every client)");
	assert_refused("profile p\nprincipals *\ncredential env TOKEN\n",
		       "line 1: profile \"p\" has a credential (line 3) that no header sends: add a "
		       "header whose value holds {credential}");
	assert_refused("profile p\nprincipals *\nheader Authorization Bearer {credential}\n",
		       "line 1: profile \"p\": the header on line 3 sends {credential}, but the "
		       "profile has no credential");
	assert_refused("profile p\nprincipals *\ncredential env T\nheader A {credential}\n"
		       "credential-lifetime 1m\n",
		       "line 1: profile \"p\": credential-lifetime (line 5) applies only to a "
		       "credential command");
}

Test(egress_profiles, credentials_budgets_and_principals_refuse_out_of_range_values)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{"credential vault x", "expected credential none | file PATH | env NAME | command "
				       "PATH [ARG...]"},
		{"credential file relative/path", "a credential file must be an absolute path"},
		{"credential file /etc/../etc/x", "a credential file must be written plainly: no "
						  "\"//\", \".\", \"..\" or trailing '/'"},
		{"credential env 1TOKEN", "an environment variable's name is letters, digits and '_', "
					  "not starting with a digit"},
		{"credential command mint", "a credential command must be an absolute path"},
		{"credential none extra", "expected credential none, found 3 fields"},
		{"credential-lifetime 1500ms", "credential-lifetime is whole seconds up to 24h (0: a "
					       "fresh credential for every hold)"},
		{"credential-lifetime 25h", "credential-lifetime is whole seconds up to 24h (0: a fresh "
					    "credential for every hold)"},
		{"max-calls 0", "max-calls is a whole number from 1 to 100000"},
		{"max-calls 100001", "max-calls is a whole number from 1 to 100000"},
		{"max-calls 08", "max-calls is a whole number from 1 to 100000"},
		{"max-in-flight 65", "max-in-flight is a whole number from 1 to 64"},
		{"max-request-bytes 65MiB", "max-request-bytes is from 1 bytes to 64 MiB"},
		{"max-request-bytes 0", "max-request-bytes is from 1 bytes to 64 MiB"},
		{"max-response-bytes 2GiB", "max-response-bytes is from 1 bytes to 1024 MiB"},
		{"max-bytes-in 65GiB", "max-bytes-in is at most 65536 MiB (0: no cap)"},
		{"max-bytes-out 4MB", "a size is a number of bytes, or a number with KiB, MiB or GiB "
				      "(\"4MiB\")"},
		{"upstream-timeout 50ms", "upstream-timeout is from 100ms to 5m"},
		{"upstream-timeout 6m", "upstream-timeout is from 100ms to 5m"},
		{"upstream-timeout 30", "a duration is a number with ms, s, m or h (\"30s\")"},
		{"allow-in-sessions true", "allow-in-sessions is yes or no"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512], want[512];
		snprintf(text, sizeof text, GOOD_HEAD "%s\n", cases[i].line);
		snprintf(want, sizeof want, "line 3: %s", cases[i].why);
		assert_refused(text, want);
	}
	assert_refused("profile p\nprincipals ci -bad\n",
		       "line 2: principal 2 is not a client name (1-64 letters, digits, '.', '_', '-' "
		       "or '@', starting with a letter or a digit) nor *");
	assert_refused("profile p\nprincipals ci ci\n", "line 2: principal ci is named twice");
	assert_refused("profile p\nprincipals ci *\n",
		       "line 2: * already means every principal: name it alone");
}

Test(egress_profiles, a_long_principal_list_and_the_limits_on_counts)
{
	/* More names than a line keeps fields: read from the text itself. */
	char text[8192] = "profile p\nprincipals";
	for (int i = 0; i < 100; i++)
		snprintf(text + strlen(text), sizeof text - strlen(text), " c%d", i);
	strcat(text, "\n");
	bh_egress_profiles *set = parsed(text);
	const struct bh_egress_profile *p = bh_egress_profiles_at(set, 0);
	cr_assert_eq(p->n_principals, 100);
	cr_assert_str_eq(p->principals[99], "c99");
	bh_egress_profiles_unref(set);

	char big[16384] = GOOD_HEAD "origin https://a.example\n";
	for (int i = 0; i <= EGRESS_MAX_HEADERS; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "header X-%d v\n", i);
	char want[128];
	snprintf(want, sizeof want, "line %d: a profile sets at most %u headers",
		 4 + EGRESS_MAX_HEADERS, EGRESS_MAX_HEADERS);
	assert_refused(big, want);
}

/* ---- the file and what it points at ---- */

static char dir[] = "/tmp/bh-egress-test-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[sizeof dir + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

static const char *put(const char *name, mode_t mode, const char *text)
{
	static char path[8][256];
	static int next;
	char *p = path[next++ % 8];
	snprintf(p, 256, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(p, mode), 0);
	return p;
}

/* The load's refusal (static), or "" when it loaded. */
static const char *load(const char *path, bh_egress_profiles **out)
{
	static char msg[1024];
	bh_error *err = NULL;
	*out = NULL;
	if (bh_egress_profiles_load(path, out, &err) == 0) {
		cr_assert_null(err);
		return "";
	}
	cr_assert_null(*out);
	cr_assert_eq(err->code, BH_E_INVALID);
	snprintf(msg, sizeof msg, "%s", err->msg);
	bh_error_free(err);
	return msg;
}

TestSuite(egress_file, .init = setup, .fini = teardown);

Test(egress_file, a_root_owned_file_loads_with_its_credential_file)
{
	const char *cred = put("github", 0600, "token-that-stays-on-the-host\n");
	char text[1024];
	snprintf(text, sizeof text,
		 "profile gh\norigin https://api.github.com\nroute GET /rate_limit\n"
		 "credential file %s\nheader Authorization Bearer {credential}\nprincipals ci\n",
		 cred);
	bh_egress_profiles *set;
	cr_assert_str_eq(load(put("profiles", 0644, text), &set), "");
	cr_assert_eq(bh_egress_profiles_count(set), 1);
	/* References: a reload swaps the set; a call in flight keeps its own. */
	bh_egress_profiles *held = bh_egress_profiles_ref(set);
	bh_egress_profiles_unref(set);
	cr_assert_str_eq(bh_egress_profiles_at(held, 0)->name, "gh");
	bh_egress_profiles_unref(held);
}

Test(egress_file, the_file_is_refused_when_others_could_change_it)
{
	bh_egress_profiles *set;
	char want[512];
	const char *p = put("profiles", 0664, "profile u\nprincipals *\n");
	snprintf(want, sizeof want,
		 "refusing the profiles file %s: it is group-writable (mode 0664; chmod go-w %s)", p, p);
	cr_assert_str_eq(load(p, &set), want);
	cr_assert_eq(chmod(p, 0646), 0);
	snprintf(want, sizeof want,
		 "refusing the profiles file %s: it is world-writable (mode 0646; chmod go-w %s)", p, p);
	cr_assert_str_eq(load(p, &set), want);
	cr_assert_eq(chmod(p, 0644), 0);
	cr_assert_eq(chown(p, 65534, 65534), 0);
	snprintf(want, sizeof want,
		 "refusing the profiles file %s: it is owned by uid 65534, neither root nor us (uid %u)",
		 p, (unsigned)geteuid());
	cr_assert_str_eq(load(p, &set), want);
	snprintf(want, sizeof want, "cannot open the profiles file %s/none: No such file or directory",
		 dir);
	char missing[256];
	snprintf(missing, sizeof missing, "%s/none", dir);
	cr_assert_str_eq(load(missing, &set), want);
}

Test(egress_file, a_parse_error_names_the_file_and_the_line)
{
	bh_egress_profiles *set;
	const char *p = put("profiles", 0600, "profile u\nprincipals *\nmax-calls lots\n");
	char want[512];
	snprintf(want, sizeof want, "%s: line 3: max-calls is a whole number from 1 to 100000", p);
	cr_assert_str_eq(load(p, &set), want);
}

static const char *load_with_credential(const char *credential_line)
{
	char text[2048];
	snprintf(text, sizeof text,
		 "profile u\nprincipals *\n\n\n%s\nheader X-Key {credential}\n", credential_line);
	bh_egress_profiles *set;
	const char *why = load(put("profiles", 0600, text), &set);
	bh_egress_profiles_unref(set);
	return why;
}

Test(egress_file, what_a_credential_names_must_be_private_and_present)
{
	char line[512], want[1024];
	const char *cred = put("cred", 0640, "secret\n");
	snprintf(line, sizeof line, "credential file %s", cred);
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": refusing the credential file %s: it is "
		 "group-readable (mode 0640; chmod go-r %s)",
		 dir, cred, cred);
	cr_assert_str_eq(load_with_credential(line), want);

	cr_assert_eq(chmod(cred, 0600), 0);
	cr_assert_str_eq(load_with_credential(line), "");
	cr_assert_eq(chown(cred, 65534, 0), 0);
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": refusing the credential file %s: it is owned "
		 "by uid 65534, neither root nor us (uid %u)",
		 dir, cred, (unsigned)geteuid());
	cr_assert_str_eq(load_with_credential(line), want);

	char link[256];
	snprintf(link, sizeof link, "%s/link", dir);
	cr_assert_eq(symlink("/etc/hostname", link), 0);
	snprintf(line, sizeof line, "credential file %s", link);
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": the credential file %s is a symbolic link; name "
		 "the file itself",
		 dir, link);
	cr_assert_str_eq(load_with_credential(line), want);

	const char *empty = put("empty", 0600, "");
	snprintf(line, sizeof line, "credential file %s", empty);
	snprintf(want, sizeof want, "%s/profiles: line 5: profile \"u\": the credential file %s is empty",
		 dir, empty);
	cr_assert_str_eq(load_with_credential(line), want);

	unsetenv("BH_TEST_EGRESS_CREDENTIAL");
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": the daemon's environment has no "
		 "BH_TEST_EGRESS_CREDENTIAL (credential env BH_TEST_EGRESS_CREDENTIAL)",
		 dir);
	cr_assert_str_eq(load_with_credential("credential env BH_TEST_EGRESS_CREDENTIAL"), want);
	setenv("BH_TEST_EGRESS_CREDENTIAL", "value-never-shown", 1);
	cr_assert_str_eq(load_with_credential("credential env BH_TEST_EGRESS_CREDENTIAL"), "");
	unsetenv("BH_TEST_EGRESS_CREDENTIAL");

	const char *mint = put("mint", 0777, "#!/bin/sh\necho t\n");
	snprintf(line, sizeof line, "credential command %s --audience x", mint);
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": refusing the credential command %s: it is "
		 "world-writable (mode 0777; chmod go-w %s)",
		 dir, mint, mint);
	cr_assert_str_eq(load_with_credential(line), want);
	cr_assert_eq(chmod(mint, 0644), 0);
	snprintf(want, sizeof want,
		 "%s/profiles: line 5: profile \"u\": the credential command %s is not executable: "
		 "Permission denied",
		 dir, mint);
	/* Even root may execute only a file with some x bit. */
	cr_assert_str_eq(load_with_credential(line), want);
	cr_assert_eq(chmod(mint, 0755), 0);
	cr_assert_str_eq(load_with_credential(line), "");
}

Test(egress_profiles, the_shipped_examples_parse)
{
	FILE *f = fopen(BH_SOURCE_DIR "/data/profiles/profiles.example", "r");
	cr_assert_not_null(f);
	static char text[65536];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	bh_egress_profiles *set = parsed(text);
	static const char *const names[] = {"untrusted", "gateway-only", "github-issues",
					    "internal-api", "package-index"};
	cr_assert_eq(bh_egress_profiles_count(set), 5);
	for (size_t i = 0; i < 5; i++)
		cr_assert_not_null(bh_egress_profiles_find(set, names[i]), "%s", names[i]);
	cr_assert_eq(bh_egress_profiles_find(set, "untrusted")->n_origins, 0);
	cr_assert_eq(bh_egress_profiles_find(set, "internal-api")->credential.lifetime_s, 900);
	cr_assert_not(bh_egress_profiles_find(set, "github-issues")->allow_in_sessions);
	bh_egress_profiles_unref(set);
}

/* `bulkhead profiles check FILE`: stdout, stderr and the exit status. */
static int check_cli(const char *path, char *out, size_t n)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s profiles check '%s' 2>&1", BH_TEST_CLI, path);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t got = fread(out, 1, n - 1, f);
	out[got] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(egress_file, profiles_check_says_what_each_profile_allows_or_the_line_that_is_wrong)
{
	setenv("BH_TEST_GATEWAY_KEY", "never-printed", 1);
	const char *p = put("profiles", 0600,
			    "profile gateway-only\n  description  The gateway\n"
			    "  origin https://ai-gateway.vercel.sh\n  route POST /v1/chat/completions\n"
			    "  credential env BH_TEST_GATEWAY_KEY\n  header Authorization Bearer {credential}\n"
			    "  principals *\n  allow-in-sessions yes\n"
			    "profile untrusted\n  principals ci agent\n");
	char out[4096], want[4096];
	cr_assert_eq(check_cli(p, out, sizeof out), 0, "%s", out);
	snprintf(want, sizeof want,
		 "%s: 2 profiles, valid\n"
		 "gateway-only\n"
		 "  The gateway\n"
		 "  origin https://ai-gateway.vercel.sh:443\n"
		 "  route  POST /v1/chat/completions\n"
		 "  credential an environment variable; headers Authorization\n"
		 "  budgets: 256 calls, 16 in flight, 60000 ms per upstream call\n"
		 "  principals *; sessions yes\n"
		 "untrusted\n"
		 "  reaches nothing: every request is refused and recorded\n"
		 "  credential none\n"
		 "  budgets: 256 calls, 16 in flight, 60000 ms per upstream call\n"
		 "  principals ci agent; sessions no\n",
		 p);
	cr_assert_str_eq(out, want);
	cr_assert_null(strstr(out, "never-printed"));

	p = put("profiles", 0600, "profile x\n  principals *\n  origin https://a.example/\n");
	cr_assert_eq(check_cli(p, out, sizeof out), 125, "%s", out);
	snprintf(want, sizeof want,
		 "bulkhead: profiles: %s: line 3: an origin has no path, not even \"/\" (routes name the "
		 "paths)\n",
		 p);
	cr_assert_str_eq(out, want);
	unsetenv("BH_TEST_GATEWAY_KEY");
}
