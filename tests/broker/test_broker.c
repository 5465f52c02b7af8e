/* The broker against real TLS upstreams on loopback: each case says what
 * the sandbox's client got and what the upstream saw (issue 18's hostile
 * list, the broker's part). */
#include "broker_harness.h"

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct fixture fx;

static void setup(void)
{
	fixture_init(&fx);
}

static void teardown(void)
{
	fixture_fini(&fx);
}

TestSuite(broker, .init = setup, .fini = teardown, .timeout = 60);

/* A GET for the upstream's path, absolute-form (what HTTP_PROXY clients send). */
static char *get(const char *path, int *status)
{
	char req[2048];
	snprintf(req, sizeof req, "GET https://api.test:%u%s HTTP/1.1\r\nHost: api.test:%u\r\n\r\n",
		 fx.api.port, path, fx.api.port);
	return client_request(&fx, req, status);
}

/* Sends a request (printf-style) on a fresh connection and asserts the
 * answer's status and that it holds `has` (NULL: anything). */
static void expect(int status, const char *has, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void expect(int status, const char *has, const char *fmt, ...)
{
	char req[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(req, sizeof req, fmt, ap);
	va_end(ap);
	int st;
	char *got = client_request(&fx, req, &st);
	cr_assert_eq(st, status, "%s\n->\n%s", req, got);
	if (has)
		cr_assert(strstr(got, has), "%s\n-> no \"%s\" in\n%s", req, has, got);
	free(got);
}

static void start_held(void)
{
	fixture_start(&fx);
	fixture_hold(&fx, 1);
}

/* Nothing of the credential in what the sandbox got, the notes or the logs. */
static void assert_no_credential(const char *got)
{
	cr_assert_null(strstr(got, TEST_CREDENTIAL), "the sandbox got the credential:\n%s", got);
	cr_assert_null(strstr(fx.notes, TEST_CREDENTIAL));
	cr_assert_null(strstr(fx.logs, TEST_CREDENTIAL), "logged: %s", fx.logs);
}

Test(broker, an_allowed_route_is_carried_with_the_credential_added)
{
	start_held();
	int st;
	char *got = get("/v1/items/42?token=querysecret", &st);
	cr_assert_eq(st, 200, "%s", got);
	cr_assert(strstr(got, "hello from upstream"));
	char line[1024], headers[16384];
	upstream_last(&fx.api, line, sizeof line, headers, sizeof headers);
	cr_assert_str_eq(line, "GET /v1/items/42?token=querysecret HTTP/1.1");
	cr_assert(strstr(headers, "Authorization: Bearer " TEST_CREDENTIAL), "%s", headers);
	char host[64];
	snprintf(host, sizeof host, "Host: api.test:%u", fx.api.port);
	cr_assert(strstr(headers, host), "%s", headers);
	/* hop-by-hop and cookies from the upstream do not reach the sandbox */
	cr_assert(strstr(got, "X-Upstream: yes"));
	cr_assert_null(strstr(got, "Keep-Alive"), "%s", got);
	cr_assert_null(strstr(got, "Set-Cookie"), "%s", got);
	assert_no_credential(got);
	/* the note has the route's pattern, never the query */
	char want[256];
	snprintf(want, sizeof want, "200 - GET https://api.test:%u /v1/items/* 0 19\n", fx.api.port);
	cr_assert(fixture_wait_notes(&fx, 1));
	cr_assert_str_eq(fx.notes, want);
	cr_assert_null(strstr(fx.logs, "querysecret"));
	free(got);
}

Test(broker, the_sandboxs_own_authorization_is_dropped)
{
	start_held();
	char req[1024];
	snprintf(req, sizeof req,
		 "GET https://api.test:%u/v1/items HTTP/1.1\r\nHost: api.test:%u\r\n"
		 "authorization: Bearer from-the-sandbox\r\nProxy-Authorization: x\r\n"
		 "Connection: close, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n",
		 fx.api.port, fx.api.port);
	int st;
	free(client_request(&fx, req, &st));
	cr_assert_eq(st, 200);
	char headers[16384];
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert_null(strstr(headers, "from-the-sandbox"), "%s", headers);
	cr_assert_null(strstr(headers, "Proxy-Authorization"), "%s", headers);
	cr_assert_null(strstr(headers, "X-Drop"), "%s", headers);
	cr_assert(strstr(headers, "X-Keep: 2"), "%s", headers);
	cr_assert(strstr(headers, "Authorization: Bearer " TEST_CREDENTIAL));
}

Test(broker, an_ip_literal_the_profile_does_not_name_is_refused)
{
	start_held();
	expect(403, "X-Bulkhead-Refusal: IP literal not named by the profile",
	       "GET https://127.0.0.2:%u/v1/items HTTP/1.1\r\nHost: 127.0.0.2:%u\r\n\r\n", fx.api.port,
	       fx.api.port);
	/* 2130706434 is 127.0.0.2 to a resolver: an IP literal too */
	expect(403, "IP literal", "GET https://2130706434:%u/v1/items HTTP/1.1\r\n\r\n", fx.api.port);
	expect(403, "IP literal", "CONNECT 127.0.0.2:%u HTTP/1.1\r\n\r\n", fx.api.port);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	/* each refusal is a note, with why and no route */
	cr_assert(fixture_wait_notes(&fx, 3));
	char want[128];
	snprintf(want, sizeof want, "403 IP literal not named by the profile CONNECT https://127.0.0.2:%u - 0 0\n",
		 fx.api.port);
	cr_assert(strstr(fx.notes, want), "%s", fx.notes);
}

Test(broker, a_name_that_resolves_elsewhere_gets_nothing)
{
	start_held();
	/* alias.test resolves to the allowed upstream's address, but the
	 * profile does not name it */
	expect(403, "X-Bulkhead-Refusal: origin not allowed",
	       "GET https://alias.test:%u/v1/items HTTP/1.1\r\n\r\n", fx.api.port);
	/* rebind.test is named, and resolves to a server that cannot prove it
	 * is rebind.test: the TLS check stops it before a byte of the request */
	expect(502, "upstream certificate not valid for the host",
	       "GET https://rebind.test:%u/v1/items HTTP/1.1\r\n\r\n", fx.other.port);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	cr_assert_eq(upstream_hits(&fx.other), 0);
}

Test(broker, a_host_header_that_differs_from_the_target_is_refused)
{
	start_held();
	expect(400, "the Host header differs from the request target",
	       "GET https://api.test:%u/v1/items HTTP/1.1\r\nHost: evil.test\r\n\r\n", fx.api.port);
	expect(400, "more than one Host header",
	       "GET /v1/items HTTP/1.1\r\nHost: api.test:%u\r\nHost: evil.test\r\n\r\n", fx.api.port);
	cr_assert_eq(upstream_hits(&fx.api), 0);
}

Test(broker, connect_is_intercepted_and_the_inner_request_carried)
{
	start_held();
	char target[64], inner[256];
	snprintf(target, sizeof target, "api.test:%u", fx.api.port);
	snprintf(inner, sizeof inner, "GET /v1/echo HTTP/1.1\r\nHost: api.test:%u\r\n\r\n", fx.api.port);
	int st;
	char *got = client_connect_tls(&fx, target, "api.test", inner, &st);
	cr_assert_eq(st, 200, "%s", got ? got : "(handshake failed)");
	/* the upstream saw the credential and echoed it; the sandbox did not get it */
	char headers[16384];
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert(strstr(headers, "Authorization: Bearer " TEST_CREDENTIAL));
	cr_assert(strstr(got, "{\"you_sent\":\"[redacted]\"}"), "%s", got);
	cr_assert(strstr(got, "X-Echo-Auth: [redacted]"), "%s", got);
	cr_assert_null(strstr(got, "\r\nAuthorization:"), "%s", got);
	assert_no_credential(got);
	free(got);
}

Test(broker, an_sni_or_inner_host_unlike_the_connect_target_gets_nothing)
{
	start_held();
	char target[64], inner[256];
	snprintf(target, sizeof target, "api.test:%u", fx.api.port);
	snprintf(inner, sizeof inner, "GET /v1/items HTTP/1.1\r\nHost: api.test:%u\r\n\r\n", fx.api.port);
	int st;
	char *got = client_connect_tls(&fx, target, "other.test", inner, &st);
	cr_assert_eq(st, -1, "a wrong SNI was accepted: %s", got ? got : "");
	free(got);
	snprintf(inner, sizeof inner, "GET /v1/items HTTP/1.1\r\nHost: rebind.test:%u\r\n\r\n",
		 fx.other.port);
	got = client_connect_tls(&fx, target, "api.test", inner, &st);
	cr_assert_eq(st, 403, "%s", got);
	cr_assert(strstr(got, "Host differs from the CONNECT target"), "%s", got);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	cr_assert_eq(upstream_hits(&fx.other), 0);
	free(got);
}

Test(broker, connect_to_another_port_is_refused)
{
	start_held();
	int st;
	char *got = client_connect_tls(&fx, "api.test:1", "api.test", "", &st);
	cr_assert_eq(st, 403, "%s", got);
	cr_assert(strstr(got, "origin not allowed"), "%s", got);
	free(got);
	got = client_connect_tls(&fx, "api.test", "api.test", "", &st);
	cr_assert_eq(st, 400, "a CONNECT without a port: %s", got);
	free(got);
	cr_assert_eq(upstream_hits(&fx.api), 0);
}

Test(broker, a_redirect_is_returned_as_is_and_never_followed)
{
	start_held();
	int st;
	char *got = get("/v1/redirect", &st);
	cr_assert_eq(st, 302, "%s", got);
	cr_assert(strstr(got, "Location: https://evil.test/steal"), "%s", got);
	cr_assert_eq(upstream_hits(&fx.api), 1);
	free(got);
	/* following it is the client's next request, judged on its own */
	got = client_request(&fx, "GET https://evil.test/steal HTTP/1.1\r\n\r\n", &st);
	cr_assert_eq(st, 403, "%s", got);
	cr_assert(strstr(got, "origin not allowed"));
	cr_assert_eq(upstream_hits(&fx.api), 1);
	free(got);
}

Test(broker, path_tricks_against_route_patterns_are_refused)
{
	start_held();
	static const char *const tricks[] = {
		"/v1/items/../admin",    "/v1/items/%2e%2e/admin", "/v1/items/%2E%2E/admin",
		"/v1//items",            "/v1/items/a%2Fb/detail", "/v1/items/a%2fb",
		"/v1/items/.",           "/v1/items/a\\b",        "/v1/%69tems",
		"/v1/items/%0D%0AX:%20y",
	};
	for (size_t i = 0; i < sizeof tricks / sizeof tricks[0]; i++) {
		int st;
		char *got = get(tricks[i], &st);
		cr_assert_eq(st, 403, "%s: %s", tricks[i], got);
		cr_assert(strstr(got, "path not canonical"), "%s: %s", tricks[i], got);
		free(got);
	}
	/* case: patterns compare exactly */
	int st;
	char *got = get("/V1/items", &st);
	cr_assert_eq(st, 403);
	cr_assert(strstr(got, "no route allows this request"), "%s", got);
	free(got);
	/* "*" is one whole segment, never two */
	got = get("/v1/items/a/b", &st);
	cr_assert_eq(st, 403, "%s", got);
	free(got);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	/* a method the route does not name */
	expect(403, "no route allows this request", "DELETE https://api.test:%u/v1/items HTTP/1.1\r\n\r\n",
	       fx.api.port);
	cr_assert_eq(upstream_hits(&fx.api), 0);
}

Test(broker, header_injection_and_smuggling_are_refused)
{
	start_held();
	char base[128];
	snprintf(base, sizeof base, "GET https://api.test:%u/v1/items HTTP/1.1\r\n", fx.api.port);
	static const char *const bad[] = {
		"X-A: b\nAuthorization: Bearer stolen\r\n\r\n",
		"X-A: b\rAuthorization: Bearer stolen\r\n\r\n",
		"X-A: b\r\n Authorization: folded\r\n\r\n",
		"X A: b\r\n\r\n",
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		"Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"Transfer-Encoding: gzip, chunked\r\n\r\n",
		"Content-Length: +5\r\n\r\n",
		"X-A: \x01\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect(400, "malformed request", "%s%s", base, bad[i]);
	expect(400, "malformed request", "GET  /v1/items HTTP/1.1\r\n\r\n");
	expect(400, "HTTP/1.0 is taken for CONNECT only", "GET /v1/items HTTP/1.0\r\n\r\n");
	cr_assert_eq(upstream_hits(&fx.api), 0);
}

Test(broker, oversized_bodies_and_heads_are_refused_both_ways)
{
	start_held();
	/* a request body over the profile's 64 KiB */
	expect(413, "request body over its cap",
	       "POST https://api.test:%u/v1/upload HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", fx.api.port);
	int st;
	char *got;
	/* the same, chunked, so the cap is found while reading */
	size_t big = 70000;
	char *chunked = malloc(big + 512);
	int n = snprintf(chunked, 512,
			 "POST https://api.test:%u/v1/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "%zx\r\n",
			 fx.api.port, big);
	memset(chunked + n, 'a', big);
	memcpy(chunked + n + big, "\r\n0\r\n\r\n", 7);
	int fd = client_connect(&fx);
	got = client_exchange(fd, chunked, (size_t)n + big + 7, &st, 10000);
	close(fd);
	cr_assert_eq(st, 413, "%s", got);
	free(got);
	free(chunked);
	/* a head over 32 KiB */
	char *head = malloc(40000);
	n = snprintf(head, 200, "GET https://api.test:%u/v1/items HTTP/1.1\r\nX-Big: ", fx.api.port);
	memset(head + n, 'b', 36000);
	memcpy(head + n + 36000, "\r\n\r\n", 5);
	got = client_request(&fx, head, &st);
	cr_assert_eq(st, 400, "%s", got);
	cr_assert(strstr(got, "32 KiB"), "%s", got);
	free(got);
	free(head);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	/* an answer over the profile's 1 MiB */
	got = get("/v1/big", &st);
	cr_assert_eq(st, 502, "%.300s", got);
	cr_assert(strstr(got, "response body over its cap"), "%.300s", got);
	cr_assert_lt(strlen(got), 1000);
	free(got);
	/* a body within the caps goes through, counted in the note */
	expect(200, "got 5 bytes",
	       "POST https://api.test:%u/v1/upload HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", fx.api.port);
	cr_assert(fixture_wait_notes(&fx, 5));
	cr_assert(strstr(fx.notes, "200 - POST"), "%s", fx.notes);
}

Test(broker, a_chunked_answer_is_framed_again_for_the_sandbox)
{
	start_held();
	int st;
	char *got = get("/v1/chunked", &st);
	cr_assert_eq(st, 200, "%s", got);
	cr_assert(strstr(got, "Content-Length: 6\r\n"), "%s", got);
	cr_assert(strstr(got, "\r\n\r\nabcdef"), "%s", got);
	cr_assert_null(strstr(got, "Transfer-Encoding"));
	free(got);
	/* a coded body could hide an echoed credential: refused */
	got = get("/v1/gzip", &st);
	cr_assert_eq(st, 502, "%s", got);
	free(got);
}

Test(broker, a_slow_client_is_cut_and_does_not_hold_the_broker)
{
	fx.cfg.client_timeout_ms = 500;
	start_held();
	/* half a head, then nothing */
	int slow = client_connect(&fx);
	const char part[] = "GET https://api.test";
	cr_assert_eq(send(slow, part, sizeof part - 1, 0), (ssize_t)(sizeof part - 1));
	/* meanwhile another connection is served */
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
	got = client_exchange(slow, "", 0, &st, 5000);
	cr_assert_eq(st, 408, "%s", got);
	free(got);
	close(slow);
}

Test(broker, a_slow_upstream_times_out_and_others_go_on)
{
	fx.profile.budgets.upstream_timeout_ms = 300;
	fx.api.slow_ms = 2000;
	start_held();
	int fd = client_connect(&fx);
	char req[512];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/slow HTTP/1.1\r\n\r\n", fx.api.port);
	cr_assert_gt(send(fd, req, strlen(req), 0), 0);
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
	got = client_exchange(fd, "", 0, &st, 5000);
	cr_assert_eq(st, 504, "%s", got);
	cr_assert(strstr(got, "upstream timed out"));
	free(got);
	close(fd);
}

Test(broker, budgets_crossed_mid_hold_are_refused)
{
	fx.profile.budgets.max_calls = 3;
	start_held();
	for (int i = 0; i < 3; i++) {
		int st;
		free(get("/v1/items", &st));
		cr_assert_eq(st, 200);
	}
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 429, "%s", got);
	cr_assert(strstr(got, "call budget spent"));
	cr_assert_eq(upstream_hits(&fx.api), 3);
	free(got);
	/* a new hold starts a new budget */
	fixture_release(&fx, 1);
	fixture_hold(&fx, 2);
	got = get("/v1/items", &st);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
}

Test(broker, the_bytes_in_budget_is_kept_across_requests)
{
	fx.profile.budgets.max_bytes_in = 30; /* one answer of 19 bytes, not two */
	start_held();
	int st;
	free(get("/v1/items", &st));
	cr_assert_eq(st, 200);
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 429, "%s", got);
	cr_assert(strstr(got, "bytes-in budget spent"));
	cr_assert_null(strstr(got, "hello from upstream"));
	free(got);
}

Test(broker, nothing_is_served_without_a_hold_or_after_release)
{
	fixture_start(&fx);
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 503, "%s", got);
	cr_assert(strstr(got, "no profile is held now"));
	free(got);
	fixture_hold(&fx, 7);
	/* a connection kept alive from the call */
	int kept = client_connect(&fx);
	char req[512];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/items HTTP/1.1\r\n\r\n", fx.api.port);
	got = client_exchange(kept, req, strlen(req), &st, 5000);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
	fixture_release(&fx, 7);
	/* what the call left behind gets nothing, on the old connection or a new one */
	/* (the old connection is answered 503, or closed when the release
	 * found its last answer still being finished) */
	got = client_exchange(kept, req, strlen(req), &st, 5000);
	cr_assert(st == 503 || (st == 0 && !got[0]), "%d %s", st, got);
	free(got);
	close(kept);
	got = get("/v1/items", &st);
	cr_assert_eq(st, 503, "%s", got);
	free(got);
	cr_assert_eq(upstream_hits(&fx.api), 1);
}

Test(broker, a_request_in_flight_at_release_is_cut)
{
	fx.api.slow_ms = 1500;
	start_held();
	int fd = client_connect(&fx);
	char req[512];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/slow HTTP/1.1\r\n\r\n", fx.api.port);
	cr_assert_gt(send(fd, req, strlen(req), 0), 0);
	while (upstream_hits(&fx.api) == 0)
		usleep(10000);
	fixture_release(&fx, 1);
	int st;
	char *got = client_exchange(fd, "", 0, &st, 5000);
	cr_assert(st == 503 || st == 0, "the answer outlived the hold: %d %s", st, got);
	cr_assert_null(strstr(got, "late"));
	free(got);
	close(fd);
}

Test(broker, an_unknown_profile_is_refused_with_the_one_text)
{
	fixture_start(&fx);
	bh_error *err = NULL;
	cr_assert_lt(fx.ops->hold(fx.broker, "sess-1", 1, "nope", &err), 0);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	cr_assert_str_eq(err->msg, "grant profile nope is unknown or not available to this caller");
	bh_error_free(err);
}

Test(broker, the_ca_is_made_once_and_kept)
{
	fixture_start(&fx);
	char key[400], pem[400];
	snprintf(key, sizeof key, "%s/broker-ca/ca.key", fx.dir);
	snprintf(pem, sizeof pem, "%s/broker-ca/ca.pem", fx.dir);
	cr_assert_str_eq(fx.ops->ca_cert_path(fx.broker), pem);
	struct stat st;
	cr_assert_eq(stat(key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "sha256sum < '%s'", pem);
	char *before = run_cmd(cmd, NULL);
	fx.ops->close_session(fx.broker, "sess-1");
	bh_broker_stop(fx.broker);
	fx.broker = NULL;
	fixture_start(&fx);
	char *after = run_cmd(cmd, NULL);
	cr_assert_str_eq(before, after, "the CA changed across a restart");
	free(before);
	free(after);
	/* a key others can read is refused, not used */
	fx.ops->close_session(fx.broker, "sess-1");
	bh_broker_stop(fx.broker);
	fx.broker = NULL;
	chmod(key, 0644);
	bh_broker *b = NULL;
	bh_error *err = NULL;
	cr_assert_lt(bh_broker_start(&fx.cfg, &b, &err), 0);
	cr_assert(strstr(err->msg, "mode 0600"), "%s", err->msg);
	bh_error_free(err);
}

Test(broker, curl_reaches_the_upstream_through_the_socket)
{
	start_held();
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "curl -sS --max-time 10 --unix-socket '%s' http://api.test:%u/v1/items/7 2>&1",
		 fx.sock, fx.api.port);
	int rc;
	char *out = run_cmd(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_str_eq(out, "hello from upstream");
	char line[1024];
	upstream_last(&fx.api, line, sizeof line, NULL, 0);
	cr_assert_str_eq(line, "GET /v1/items/7 HTTP/1.1");
	free(out);
}

Test(broker, pythons_http_client_tunnels_with_connect_and_trusts_the_broker_ca)
{
	start_held();
	char script[400];
	snprintf(script, sizeof script, "%s/client.py", fx.dir);
	FILE *f = fopen(script, "w");
	fprintf(f,
		"import http.client, socket, ssl, sys\n"
		"class Unix(http.client.HTTPSConnection):\n"
		"    def connect(self):\n"
		"        s = socket.socket(socket.AF_UNIX)\n"
		"        s.connect(sys.argv[1])\n"
		"        self.sock = s\n"
		"        self._tunnel()\n"
		"        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._tunnel_host)\n"
		"ctx = ssl.create_default_context(cafile=sys.argv[2])\n"
		"c = Unix('proxy', context=ctx)\n"
		"c.set_tunnel('api.test', int(sys.argv[3]))\n"
		"for path in ('/v1/items', '/v1/echo'):\n"
		"    c.request('GET', path)\n"
		"    r = c.getresponse()\n"
		"    print(r.status, r.read().decode())\n");
	fclose(f);
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s/broker-ca/ca.pem' %u 2>&1", script, fx.sock,
		 fx.dir, fx.api.port);
	int rc;
	char *out = run_cmd(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_str_eq(out, "200 hello from upstream\n200 {\"you_sent\":\"[redacted]\"}\n");
	cr_assert_eq(upstream_hits(&fx.api), 2);
	assert_no_credential(out);
	free(out);
}

static void set_file_credential(const char *path)
{
	free(fx.profile.credential.env);
	fx.profile.credential = (struct bh_egress_credential){
		.source = BH_EGRESS_CREDENTIAL_FILE, .file = strdup(path)};
}

Test(broker, a_file_credential_is_read_at_hold_time_and_refused_when_others_can_read_it)
{
	char path[400];
	snprintf(path, sizeof path, "%s/cred", fx.dir);
	FILE *f = fopen(path, "w");
	fputs("file-token-abcdef\n", f);
	fclose(f);
	chmod(path, 0600);
	set_file_credential(path);
	start_held();
	int st;
	free(get("/v1/items", &st));
	cr_assert_eq(st, 200);
	char headers[16384];
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert(strstr(headers, "Authorization: Bearer file-token-abcdef\r\n"), "%s", headers);
	fixture_release(&fx, 1);
	chmod(path, 0644);
	fixture_hold(&fx, 2);
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 502, "%s", got);
	cr_assert(strstr(got, "the credential could not be minted"), "%s", got);
	cr_assert_null(strstr(got, "file-token"));
	cr_assert(strstr(fx.logs, "readable by others"), "%s", fx.logs);
	cr_assert_eq(upstream_hits(&fx.api), 1);
	free(got);
}

Test(broker, a_command_credential_is_minted_once_per_hold)
{
	char script[400];
	snprintf(script, sizeof script, "%s/mint.sh", fx.dir);
	FILE *f = fopen(script, "w");
	fprintf(f, "#!/bin/sh\nc='%s/count'\nn=$(cat \"$c\" 2>/dev/null || echo 0)\nn=$((n+1))\n"
		   "echo $n > \"$c\"\necho minted-token-$n\n",
		fx.dir);
	fclose(f);
	chmod(script, 0700);
	free(fx.profile.credential.env);
	fx.profile.credential = (struct bh_egress_credential){.source = BH_EGRESS_CREDENTIAL_COMMAND};
	fx.profile.credential.argv = calloc(2, sizeof(char *));
	fx.profile.credential.argv[0] = strdup(script);
	start_held();
	char headers[16384];
	int st;
	for (int i = 0; i < 2; i++) {
		free(get("/v1/items", &st));
		cr_assert_eq(st, 200);
		upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
		cr_assert(strstr(headers, "Authorization: Bearer minted-token-1\r\n"), "%s", headers);
	}
	fixture_release(&fx, 1);
	fixture_hold(&fx, 2);
	char *got = get("/v1/echo", &st);
	cr_assert_eq(st, 200);
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert(strstr(headers, "Authorization: Bearer minted-token-2\r\n"), "%s", headers);
	cr_assert_null(strstr(got, "minted-token"), "%s", got);
	free(got);
}

Test(broker, a_credential_with_a_line_break_is_never_sent)
{
	setenv(TEST_CRED_ENV, "abc\r\nX-Evil: 1", 1);
	start_held();
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 502, "%s", got);
	cr_assert(strstr(fx.logs, "control byte"), "%s", fx.logs);
	cr_assert_eq(upstream_hits(&fx.api), 0);
	free(got);
}

Test(broker, one_sessions_trickling_clients_leave_workers_for_the_others)
{
	fx.cfg.workers = 2;
	fx.cfg.client_timeout_ms = 3000;
	start_held();
	bh_error *err = NULL;
	char sock2[400];
	snprintf(sock2, sizeof sock2, "%s/second.sock", fx.dir);
	cr_assert_eq(fx.ops->open_session(fx.broker, "sess-2", sock2, &err), 0);
	cr_assert_eq(fx.ops->hold(fx.broker, "sess-2", 1, "brokered", &err), 0);
	/* sess-1 opens four connections that each send half a head */
	int slow[4];
	for (int i = 0; i < 4; i++) {
		slow[i] = client_connect(&fx);
		cr_assert_gt(send(slow[i], "GET https://", 12, 0), 0);
	}
	usleep(100000);
	/* sess-2 is answered before sess-1's clients time out (3 s; the
	 * deadline here is 1.5 s), not after */
	char saved[300];
	memcpy(saved, fx.sock, sizeof saved);
	memcpy(fx.sock, sock2, sizeof fx.sock);
	int fd = client_connect(&fx);
	memcpy(fx.sock, saved, sizeof fx.sock);
	char req[256];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/items HTTP/1.1\r\n\r\n", fx.api.port);
	int st;
	char *got = client_exchange(fd, req, strlen(req), &st, 1500);
	close(fd);
	cr_assert_eq(st, 200, "sess-2 waited for sess-1's trickling clients: %s", got);
	free(got);
	for (int i = 0; i < 4; i++)
		close(slow[i]);
	fx.ops->close_session(fx.broker, "sess-2");
}

Test(broker, an_upstream_that_answers_429_is_left_alone_for_its_retry_after)
{
	start_held();
	int st;
	char *got = get("/v1/busy", &st);
	cr_assert_eq(st, 429, "the upstream's own answer is returned: %s", got);
	cr_assert(strstr(got, "slow down"));
	free(got);
	/* within its 2 s, the broker answers for it (stated slack: the next
	 * request is sent at once) */
	got = get("/v1/items", &st);
	cr_assert_eq(st, 503, "%s", got);
	cr_assert(strstr(got, "X-Bulkhead-Refusal: upstream asked to back off"), "%s", got);
	cr_assert_eq(upstream_hits(&fx.api), 1);
	free(got);
	/* a new hold starts with no backoff */
	fixture_release(&fx, 1);
	fixture_hold(&fx, 2);
	got = get("/v1/items", &st);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
}

Test(broker, a_session_closed_and_opened_again_at_once_is_served_afresh)
{
	/* a hibernated session gives its socket back and takes it again at wake */
	start_held();
	fx.ops->close_session(fx.broker, "sess-1");
	bh_error *err = NULL;
	cr_assert_eq(fx.ops->open_session(fx.broker, "sess-1", fx.sock, &err), 0, "%s",
		     err ? err->msg : "");
	int st;
	char *got = get("/v1/items", &st);
	cr_assert_eq(st, 503, "the old session's hold outlived its close: %s", got);
	free(got);
	fixture_hold(&fx, 2);
	got = get("/v1/items", &st);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
}

Test(broker, a_chunked_body_goes_upstream_framed_by_length_and_head_gets_no_body)
{
	start_held();
	char req[512];
	snprintf(req, sizeof req,
		 "POST https://api.test:%u/v1/upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		 "Expect: 100-continue\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
		 fx.api.port);
	int st;
	char *got = client_request(&fx, req, &st);
	cr_assert_eq(st, 200, "%s", got);
	cr_assert(strstr(got, "got 7 bytes"), "%s", got);
	char headers[16384];
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert(strstr(headers, "Content-Length: 7\r\n"), "%s", headers);
	cr_assert_null(strcasestr(headers, "transfer-encoding"), "%s", headers);
	cr_assert_null(strcasestr(headers, "expect"), "%s", headers);
	free(got);
	snprintf(req, sizeof req, "HEAD https://api.test:%u/v1/items HTTP/1.1\r\n\r\n", fx.api.port);
	int fd = client_connect(&fx);
	got = client_exchange(fd, req, strlen(req), &st, 3000);
	close(fd);
	cr_assert_eq(st, 200, "%s", got);
	cr_assert(strstr(got, "Content-Length: 19\r\n"), "%s", got);
	cr_assert_null(strstr(got, "hello"), "%s", got);
	free(got);
}

Test(broker, an_ip_literal_the_profile_names_is_reached_and_verified_as_an_address)
{
	char o[64];
	snprintf(o, sizeof o, "https://127.0.0.2:%u", fx.api.port);
	free(fx.profile.origins[1]);
	fx.profile.origins[1] = strdup(o);
	start_held();
	expect(200, "hello from upstream", "GET https://127.0.0.2:%u/v1/items HTTP/1.1\r\n\r\n",
	       fx.api.port);
	char target[64], inner[256];
	snprintf(target, sizeof target, "127.0.0.2:%u", fx.api.port);
	snprintf(inner, sizeof inner, "GET /v1/items HTTP/1.1\r\nHost: 127.0.0.2:%u\r\n\r\n", fx.api.port);
	int st;
	char *got = client_connect_tls(&fx, target, NULL, inner, &st);
	cr_assert_eq(st, 200, "%s", got ? got : "(handshake failed)");
	free(got);
	/* a name for the address is still another origin */
	got = client_connect_tls(&fx, target, "api.test", inner, &st);
	cr_assert_eq(st, -1, "an SNI unlike the CONNECT's address was accepted");
	free(got);
	cr_assert_eq(upstream_hits(&fx.api), 2);
}

Test(broker, requests_and_urllib_work_unchanged_through_a_relayed_proxy)
{
	start_held();
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s/broker-ca/ca.pem' %u 2>&1",
		 BH_BROKER_TESTS "/relay_clients.py", fx.sock, fx.dir, fx.api.port);
	int rc;
	char *out = run_cmd(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_str_eq(out, "requests https 200 {\"you_sent\":\"[redacted]\"}\n"
			      "requests http 200 hello from upstream\n"
			      "requests refused 403 no route allows this request\n"
			      "urllib https 200 hello from upstream\n");
	cr_assert_eq(upstream_hits(&fx.api), 3);
	char headers[16384];
	upstream_last(&fx.api, NULL, 0, headers, sizeof headers);
	cr_assert(strstr(headers, "Authorization: Bearer " TEST_CREDENTIAL), "%s", headers);
	assert_no_credential(out);
	free(out);
}

Test(broker, pip_downloads_from_an_allowed_index_through_a_relayed_proxy, .timeout = 150)
{
	start_held();
	char cmd[1600];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s/broker-ca/ca.pem' %u pip '%s/index' '%s/out' 2>&1",
		 BH_BROKER_TESTS "/relay_clients.py", fx.sock, fx.dir, fx.api.port, fx.dir, fx.dir);
	int rc;
	char *out = run_cmd(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_str_eq(out, "pip 0 ['bhdemo-1.0-py3-none-any.whl']\n");
	cr_assert(fixture_wait_notes(&fx, 2));
	cr_assert(strstr(fx.notes, "/simple/*/"), "%s", fx.notes);
	cr_assert(strstr(fx.notes, "/files/*"), "%s", fx.notes);
	free(out);
}

Test(broker, stopping_cuts_what_is_in_flight_and_removes_the_socket)
{
	fx.api.slow_ms = 20000;
	start_held();
	int fd = client_connect(&fx);
	char req[512];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/slow HTTP/1.1\r\n\r\n", fx.api.port);
	cr_assert_gt(send(fd, req, strlen(req), 0), 0);
	while (upstream_hits(&fx.api) == 0)
		usleep(10000);
	/* stop returns well before the upstream would answer: the deadline
	 * is 5 s against the upstream's 20 */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fx.ops->close_session(fx.broker, "sess-1");
	bh_broker_stop(fx.broker);
	fx.broker = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 5, "stop waited for the upstream");
	int st;
	char *got = client_exchange(fd, "", 0, &st, 100);
	cr_assert_null(strstr(got, "late"), "%s", got);
	free(got);
	close(fd);
	cr_assert_eq(access(fx.sock, F_OK), -1, "the socket is still there");
}

Test(broker, a_credential_echoed_in_base64_is_scrubbed_too)
{
	start_held();
	int st;
	char *got = get("/v1/echo64", &st);
	cr_assert_eq(st, 200, "%s", got);
	/* what the upstream sent: base64 of "Bearer <credential>" */
	static const char bearer[] = "Bearer " TEST_CREDENTIAL;
	unsigned char enc[200];
	EVP_EncodeBlock(enc, (const unsigned char *)bearer, (int)strlen(bearer));
	cr_assert_null(strstr(got, (char *)enc), "%s", got);
	cr_assert(strstr(got, "[redacted]"), "%s", got);
	/* what is left is its first characters, which encode "Bearer " alone */
	cr_assert(strstr(got, "{\"you_sent_b64\":\"QmVhcmVy"), "%s", got);
	for (size_t k = 0; k < 3; k++) {
		unsigned char part[200];
		size_t whole = (strlen(TEST_CREDENTIAL) - k) / 3 * 3;
		EVP_EncodeBlock(part, (const unsigned char *)TEST_CREDENTIAL + k, (int)whole);
		cr_assert_null(strstr(got, (char *)part), "alignment %zu: %s", k, got);
	}
	free(got);
}

/* ---- egress: an upstream that echoes the credential percent-encoded (every
 * byte or some, either case), in hex (either case) or base64 alone, in its
 * headers and its body: the sandbox gets none of them; hex that is not the
 * credential is left alone. ---- */
Test(broker, a_credential_echoed_percent_encoded_or_in_hex_is_scrubbed_in_headers_and_body)
{
	start_held();
	int st;
	char *got = get("/v1/echoenc", &st);
	cr_assert_eq(st, 200, "%s", got);
	char forms[ECHO_FORMS][ECHO_FORM_MAX];
	echo_encodings("Bearer " TEST_CREDENTIAL, forms);
	cr_assert(!strncmp(forms[0], "%42%65%61", 9) && !strncmp(forms[4], "426561", 6),
		  "the encodings are not what the test means: %s %s", forms[0], forms[4]);
	for (int k = 0; k < ECHO_FORMS; k++) {
		cr_assert_null(strstr(got, forms[k]), "form %d (%s) reached the sandbox: %s", k,
			       forms[k], got);
		char header[64], field[64];
		/* base64's last group encodes what follows too: it may stay */
		snprintf(header, sizeof header, "X-Echo-%d: [redacted]", k);
		snprintf(field, sizeof field, "\"form%d\":\"[redacted]", k);
		cr_assert(strstr(got, header), "form %d's header: %s", k, got);
		cr_assert(strstr(got, field), "form %d's body field: %s", k, got);
	}
	cr_assert_null(strstr(got, TEST_CREDENTIAL), "%s", got);
	cr_assert(strstr(got, "{\"plain_hex\":\"deadbeef\""), "other hex was scrubbed: %s", got);
	free(got);
}

/* ---- egress: a credential whose base64 holds '+' and '/' (so its base64url
 * differs): echoed in either alphabet, it is scrubbed too. ---- */
Test(broker, a_credential_echoed_in_base64url_is_scrubbed_as_its_base64_is)
{
	static const char cred[] = "s3cr3t~~~?>?token-7f1d";
	setenv(TEST_CRED_ENV, cred, 1); /* read at the hold (fixture_init set the usual one) */
	start_held();
	int st;
	char *got = get("/v1/echoenc", &st);
	cr_assert_eq(st, 200, "%s", got);
	char forms[ECHO_FORMS][ECHO_FORM_MAX];
	echo_encodings("Bearer s3cr3t~~~?>?token-7f1d", forms);
	cr_assert(strpbrk(forms[5], "+/") && strpbrk(forms[6], "-_"),
		  "the credential's base64 does not tell the alphabets apart: %s %s", forms[5], forms[6]);
	for (int k = 0; k < ECHO_FORMS; k++) {
		cr_assert_null(strstr(got, forms[k]), "form %d (%s) reached the sandbox: %s", k,
			       forms[k], got);
		char header[64];
		snprintf(header, sizeof header, "X-Echo-%d: [redacted]", k);
		cr_assert(strstr(got, header), "form %d's header: %s", k, got);
	}
	cr_assert_null(strstr(got, cred), "%s", got);
	free(got);
}

Test(broker, calls_in_flight_past_the_budget_are_refused)
{
	fx.profile.budgets.max_in_flight = 1;
	fx.api.slow_ms = 1500;
	start_held();
	int fd = client_connect(&fx);
	char req[512];
	snprintf(req, sizeof req, "GET https://api.test:%u/v1/slow HTTP/1.1\r\n\r\n", fx.api.port);
	cr_assert_gt(send(fd, req, strlen(req), 0), 0);
	while (upstream_hits(&fx.api) == 0)
		usleep(10000);
	expect(429, "too many calls in flight", "GET https://api.test:%u/v1/items HTTP/1.1\r\n\r\n",
	       fx.api.port);
	int st;
	char *got = client_exchange(fd, "", 0, &st, 5000);
	cr_assert_eq(st, 200, "%s", got);
	free(got);
	close(fd);
	/* once it ended, the next is carried */
	expect(200, "hello from upstream", "GET https://api.test:%u/v1/items HTTP/1.1\r\n\r\n",
	       fx.api.port);
	cr_assert_eq(upstream_hits(&fx.api), 2);
}
