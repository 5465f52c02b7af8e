/* The broker's pure pieces: the HTTP reader, targets, canonical paths,
 * route patterns and the scrub. */
#include "http.h"
#include "secrets.h"
#include "target.h"

#include <criterion/criterion.h>
#include <string.h>

static ssize_t req(const char *s, struct http_head *h, const char **why)
{
	return http_parse_request((const uint8_t *)s, strlen(s), h, why);
}

Test(broker_parse, a_plain_request_head_is_read_whole)
{
	struct http_head h;
	const char *why = NULL;
	const char *s = "POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
	cr_assert_eq(req(s, &h, &why), (ssize_t)strlen(s) - 3);
	cr_assert_str_eq(h.method, "POST");
	cr_assert_str_eq(h.target, "/a?b=1");
	cr_assert(h.has_length);
	cr_assert_eq(h.length, 3);
	cr_assert_str_eq(http_header_get(&h, "HOST"), "x");
	http_head_free(&h);
}

Test(broker_parse, a_head_in_pieces_asks_for_more)
{
	struct http_head h;
	const char *why = NULL;
	cr_assert_eq(req("GET / HTTP/1.1\r\nHost: x\r\n\r", &h, &why), 0);
	cr_assert_eq(req("GET / HTTP/1.1\r\nHost: x\r\n", &h, &why), 0);
}

Test(broker_parse, chunks_decode_and_a_cap_stops_them)
{
	struct http_chunked c = {0};
	struct buf out = {0};
	bool done = false;
	const char *why = NULL;
	const char *body = "4\r\nwiki\r\n5;ext\r\npedia\r\n0\r\nX-T: 1\r\n\r\n";
	cr_assert_eq(http_chunked_feed(&c, (const uint8_t *)body, strlen(body), &out, 100, &done, &why),
		     (ssize_t)strlen(body));
	cr_assert(done);
	cr_assert_eq(out.len, 9);
	cr_assert_eq(memcmp(out.data, "wikipedia", 9), 0);
	buf_free(&out);
	struct http_chunked c2 = {0};
	cr_assert_eq(http_chunked_feed(&c2, (const uint8_t *)body, strlen(body), &out, 5, &done, &why),
		     -2);
	buf_free(&out);
}

Test(broker_parse, targets_give_canonical_origins)
{
	struct target t;
	const char *why = NULL;
	cr_assert_eq(target_absolute("http://API.Test/x?y", &t, &why), 0);
	cr_assert_str_eq(t.origin, "https://api.test:443");
	cr_assert_str_eq(t.path, "/x");
	cr_assert_str_eq(t.query, "y");
	cr_assert_not(t.ip_literal);
	target_free(&t);
	cr_assert_eq(target_authority("[::1]:8443", 0, &t, &why), 0);
	cr_assert(t.ip_literal);
	cr_assert_str_eq(t.origin, "https://[::1]:8443");
	target_free(&t);
	cr_assert_lt(target_authority("user@api.test:443", 0, &t, &why), 0);
	cr_assert_lt(target_authority("api.test:0443", 0, &t, &why), 0);
	cr_assert_lt(target_authority("api.test.:443", 0, &t, &why), 0);
	cr_assert_lt(target_authority("api.test:70000", 0, &t, &why), 0);
	cr_assert_eq(target_authority("0x7f.1:443", 0, &t, &why), 0);
	cr_assert(t.ip_literal);
	target_free(&t);
}

Test(broker_parse, routes_match_whole_segments)
{
	cr_assert(route_matches("/v1/items/*", "/v1/items/42"));
	cr_assert(route_matches("/simple/*/", "/simple/requests/"));
	cr_assert_not(route_matches("/v1/items/*", "/v1/items/"));
	cr_assert_not(route_matches("/v1/items/*", "/v1/items/4/2"));
	cr_assert_not(route_matches("/v1/items", "/v1/items/"));
	cr_assert_not(route_matches("/v1/items", "/v1/Items"));
	cr_assert(route_matches("/", "/"));
	const char *why;
	cr_assert_eq(path_canonical("/simple/requests/", &why), 0);
	cr_assert_eq(path_canonical("/a%20b/c%25d", &why), 0);
	cr_assert_lt(path_canonical("/a%2", &why), 0);
	cr_assert_lt(path_canonical("/a%2g", &why), 0);
}

/* The scrub (secrets.c): a credential that holds '%' itself, echoed
 * percent-encoded, starts with "%25" — a byte the reading could take as
 * the credential's own '%' and then fail on: every reading is followed. */

static char *scrubbed(const char *cred, const char *body)
{
	struct bh_egress_header hdr = {.name = "Authorization", .template = "Bearer {credential}"};
	struct bh_egress_profile prof = {.headers = &hdr, .n_headers = 1};
	struct secrets sec = {0};
	secrets_fill(&sec, &prof, cred);
	struct buf out = {0};
	secrets_scrub(&sec, (const uint8_t *)body, strlen(body), &out);
	buf_append(&out, "", 1);
	secrets_free(&sec);
	return (char *)out.data;
}

Test(broker_parse, a_credential_holding_percent_is_scrubbed_when_its_percent_is_escaped_too)
{
	char *got = scrubbed("%3s3a", "x %25%33%73%33%61 y %253s3a z %3s3a w");
	cr_assert_str_eq(got, "x [redacted] y [redacted] z [redacted] w");
	free(got);
	got = scrubbed("tok%41en", "a tok%41en b tok%2541en c tok%25%34%31en d");
	cr_assert_str_eq(got, "a [redacted] b [redacted] c [redacted] d");
	free(got);
}
