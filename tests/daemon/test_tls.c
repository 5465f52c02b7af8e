/* The daemon over TLS (issue 19, acceptance 1): `serve --listen
 * 127.0.0.2:PORT --tls-cert --tls-key` with a test CA, a session through
 * the C client, curl --cacert and the CLI; a wrong CA, an expired
 * certificate, TLS 1.1 and plain HTTP refused with words that say so; the
 * pair swapped on SIGHUP (a bad one kept out); client certificates naming a
 * clients line; allowed hosts and trusted proxies. One daemon carries every
 * check: they are independent of each other, and a start costs seconds. */
#include "broker_harness.h" /* run_cmd */
#include "client.h"
#include "daemon_harness.h"
#include "test_ca.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct daemon d;
static char pki[1024]; /* the CAs, certificates and the daemon's log */
static char base[64];  /* https://127.0.0.2:PORT */

#define SUBJECT "CN=worker-1,O=Example"

static char *sh_out(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh_out(int *rc, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return run_cmd(cmd, rc);
}

static void make_pki(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(pki, sizeof pki, "%s/tls-XXXXXX", root && *root ? root : "/tmp");
	cr_assert_not_null(mkdtemp(pki));
	test_ca_make(pki, "ca", "bulkhead TLS test CA");
	test_ca_make(pki, "other", "another test CA");
	const char *san = "IP:127.0.0.2,DNS:api.example";
	test_ca_cert(pki, &(struct test_cert){.ca = "ca", .name = "server", .subject = "/CN=first",
					      .san = san, .usage = "serverAuth"});
	test_ca_cert(pki, &(struct test_cert){.ca = "ca", .name = "second", .subject = "/CN=second",
					      .san = san, .usage = "serverAuth"});
	test_ca_cert(pki, &(struct test_cert){.ca = "ca", .name = "expired", .subject = "/CN=expired",
					      .san = san, .usage = "serverAuth", .expired = true});
	/* Written most general first, so RFC 4514 prints it CN first. */
	test_ca_cert(pki, &(struct test_cert){.ca = "ca", .name = "worker", .subject = "/O=Example/CN=worker-1",
					      .usage = "clientAuth"});
	test_ca_cert(pki, &(struct test_cert){.ca = "ca", .name = "nobody", .subject = "/O=Example/CN=nobody",
					      .usage = "clientAuth"});
	test_ca_cert(pki, &(struct test_cert){.ca = "other", .name = "forged", .subject = "/O=Example/CN=worker-1",
					      .usage = "clientAuth"});
	/* The pair the daemon serves: files it reads again on SIGHUP. */
	int rc;
	free(sh_out(&rc, "cd '%s' && cp server.pem live.pem && cp server.key live.key", pki));
	cr_assert_eq(rc, 0);
}

static void start(void)
{
	make_pki();
	char extra[16384];
	snprintf(extra, sizeof extra,
		 "--listen 127.0.0.2:0 --tls-cert '%s/live.pem' --tls-key '%s/live.key' "
		 "--tls-client-ca '%s/ca.pem' --allowed-host api.example --trusted-proxy 127.0.0.5 "
		 "2>'%s/serve.log'",
		 pki, pki, pki, pki);
	daemon_start(&d, extra);
	snprintf(base, sizeof base, "https://127.0.0.2:%d", d.port);
}

static void stop(void)
{
	daemon_stop(&d);
	int rc;
	free(sh_out(&rc, "rm -rf '%s'", pki));
}

static bh_client *client(const char *target, const char *token, const char *ca, const char *cert)
{
	char cafile[4200], certfile[4200], keyfile[4200];
	snprintf(cafile, sizeof cafile, "%s/%s.pem", pki, ca ? ca : "");
	snprintf(certfile, sizeof certfile, "%s/%s.pem", pki, cert ? cert : "");
	snprintf(keyfile, sizeof keyfile, "%s/%s.key", pki, cert ? cert : "");
	struct bh_client_options o = {.target = target, .token = token, .cacert = ca ? cafile : NULL,
				      .client_cert = cert ? certfile : NULL,
				      .client_key = cert ? keyfile : NULL};
	bh_client *c = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_new(&o, &c, &err), 0, "%s", err ? err->message : "");
	return c;
}

/* Describe through c: NULL when it answered, else the error's words (caller frees). */
static char *describe_error(bh_client *c)
{
	struct wire_describe_response info;
	struct bh_client_error *err = NULL;
	if (bh_client_describe(c, &info, &err) == 0) {
		wire_describe_response_free(&info);
		return NULL;
	}
	char *m = strdup(err->message);
	bh_client_error_free(err);
	return m;
}

static void assert_has(const char *text, const char *words)
{
	cr_assert(text && strstr(text, words), "expected \"%s\" in: %s", words, text ? text : "(nothing)");
}

static void assert_refused(bh_client *c, const char *words)
{
	char *m = describe_error(c);
	assert_has(m, words);
	free(m);
	bh_client_free(c);
}

/* The daemon's log, whole (caller frees). */
static char *serve_log(void)
{
	int rc;
	return sh_out(&rc, "cat '%s/serve.log'", pki);
}

static int count(const char *text, const char *words)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, words)); p += strlen(words))
		n++;
	return n;
}

/* Waits (stated slack 10 s) until the log holds words once more than it
 * did when the caller looked (seen). */
static void wait_log_more(const char *words, int seen)
{
	for (int i = 0; i < 200; i++) {
		char *log = serve_log();
		bool found = count(log, words) > seen;
		free(log);
		if (found)
			return;
		usleep(50 * 1000);
	}
	char *log = serve_log();
	cr_assert_fail("\"%s\" never came in the daemon's log:\n%s", words, log);
}

/* The subject of the certificate the listener serves now. */
static char *served_subject(void)
{
	int rc;
	return sh_out(&rc, "curl -sS -v --cacert '%s/ca.pem' %s/healthz 2>&1 >/dev/null | "
			   "sed -n 's/^\\*  *subject: //p'", pki, base);
}

static int log_count(const char *words)
{
	char *log = serve_log();
	int n = count(log, words);
	free(log);
	return n;
}

/* `bulkhead ls` attached to the daemon over TLS with ca's certificate. */
static char *cli_ls(const char *ca, int *rc)
{
	return sh_out(rc, "BULKHEAD_TOKEN='%s' %s ls --attach %s --cacert '%s/%s.pem' 2>&1", d.both_token,
		      BH_TEST_CLI, base, pki, ca);
}

static void reload(const char *pair, const char *words)
{
	int seen = log_count(words);
	int rc;
	free(sh_out(&rc, "cd '%s' && cat %s.pem > live.pem && cat %s.key > live.key", pki, pair, pair));
	cr_assert_eq(rc, 0);
	kill(d.pid, SIGHUP);
	wait_log_more(words, seen);
}

Test(tls, a_session_runs_over_https_and_what_does_not_verify_is_refused_in_words, .init = start,
     .fini = stop, .timeout = 240)
{
	/* ---- the C client: a whole session over TLS ---- */
	bh_client *c = client(base, d.both_token, "ca", NULL);
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	struct bh_client_open_opts oo = {.floor = BH_TIER_CONTAINER};
	cr_assert_eq(bh_client_open(c, &oo, &s, &err), 0, "%s", err ? err->message : "");
	struct bh_client_cell cell = {.language = BH_LANG_PYTHON, .code = "print(6 * 7)"};
	struct wire_session_run_response r;
	cr_assert_eq(bh_client_session_run(s, &cell, &r, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(r.run.result.out_len, 3);
	cr_assert_eq(memcmp(r.run.result.out, "42\n", 3), 0);
	wire_session_run_response_free(&r);
	struct wire_close_session_response closed;
	cr_assert_eq(bh_client_session_close(s, &closed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(closed.calls, 1);
	wire_close_session_response_free(&closed);
	bh_client_session_free(s);
	bh_client_free(c);

	/* ---- curl --cacert, and the CLI's --attach https:// --cacert ---- */
	int rc;
	char *out = sh_out(&rc, "curl -sS --cacert '%s/ca.pem' %s/healthz 2>&1", pki, base);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_str_eq(out, "ok\n");
	free(out);
	out = cli_ls("ca", &rc);
	cr_assert_eq(rc, 0, "%s", out);
	assert_has(out, "SESSION");
	free(out);

	/* ---- refusals, each naming the host and the reason ---- */
	char host[64];
	snprintf(host, sizeof host, "127.0.0.2:%d", d.port);
	char words[160];
	snprintf(words, sizeof words, "the TLS certificate of %s does not verify", host);
	assert_refused(client(base, d.both_token, "other", NULL), words);
	assert_refused(client(base, d.both_token, NULL, NULL), words); /* the system's CAs */
	out = cli_ls("other", &rc);
	cr_assert_neq(rc, 0);
	assert_has(out, words);
	free(out);
	out = sh_out(&rc, "curl -sS --cacert '%s/other.pem' %s/healthz 2>&1", pki, base);
	cr_assert_neq(rc, 0);
	assert_has(out, "SSL certificate problem");
	free(out);
	/* Plain HTTP to the TLS port. */
	char plain[64];
	snprintf(plain, sizeof plain, "http://127.0.0.2:%d", d.port);
	char speaks[128];
	snprintf(speaks, sizeof speaks, "this port speaks TLS: call https://%s/", host);
	c = client(plain, d.both_token, NULL, NULL);
	struct wire_describe_response info;
	cr_assert_eq(bh_client_describe(c, &info, &err), -1);
	assert_has(err->message, speaks);
	cr_assert(err->not_dispatched, "the refusal lost its mark: %s", err->message);
	bh_client_error_free(err);
	err = NULL;
	bh_client_free(c);
	out = sh_out(&rc, "curl -sS -w ' HTTP %%{http_code}' %s/healthz 2>&1", plain);
	assert_has(out, speaks);
	assert_has(out, "HTTP 400");
	free(out);
	/* Older than TLS 1.2. */
	out = sh_out(&rc, "curl -sS --tlsv1.1 --tls-max 1.1 --cacert '%s/ca.pem' %s/healthz 2>&1", pki,
		     base);
	cr_assert_neq(rc, 0, "TLS 1.1 was served: %s", out);
	free(out);

	/* ---- SIGHUP: a new pair for new handshakes; a broken one kept out;
	 * an expired one served (with a warning) is refused by every client ---- */
	out = served_subject();
	assert_has(out, "CN=first");
	free(out);
	reload("second", "SIGHUP: new handshakes use");
	out = served_subject();
	assert_has(out, "CN=second");
	free(out);
	free(sh_out(&rc, "cd '%s' && cp second.pem live.pem && cp worker.key live.key", pki));
	kill(d.pid, SIGHUP);
	wait_log_more("SIGHUP: kept the certificate in use", 0);
	char *log = serve_log();
	assert_has(log, "is not the key of the certificate");
	free(log);
	out = served_subject();
	assert_has(out, "CN=second");
	free(out);
	reload("expired", "expired");
	c = client(base, d.both_token, "ca", NULL);
	char *m = describe_error(c);
	assert_has(m, words);
	assert_has(m, "expired");
	free(m);
	bh_client_free(c);
	out = sh_out(&rc, "curl -sS --cacert '%s/ca.pem' %s/healthz 2>&1", pki, base);
	cr_assert_neq(rc, 0);
	assert_has(out, "expired");
	free(out);
	reload("server", "SIGHUP: new handshakes use");
	c = client(base, d.both_token, "ca", NULL);
	m = describe_error(c);
	cr_assert_null(m, "a fresh pair again, yet: %s", m);
	bh_client_free(c);
}

/* The audit lines of the calls to procedure (caller frees). */
static char *audit_of(const char *procedure)
{
	int rc;
	return sh_out(&rc, "grep -h '\"procedure\":\"%s\"' '%s/audit.log'", procedure, d.dir);
}

/* A curl call through the listener: its output with the HTTP status last. */
static char *curl_call(const char *opts, const char *path, const char *token)
{
	int rc;
	char auth[256] = "";
	if (token)
		snprintf(auth, sizeof auth, "-H 'Authorization: Bearer %s'", token);
	return sh_out(&rc, "cd '%s' && curl -sS --cacert ca.pem %s %s -H 'Content-Type: application/json' "
			   "-d '{}' -w ' HTTP %%{http_code}' %s/%s 2>&1",
		      pki, auth, opts, base, path);
}

#define DESCRIBE "plimsoll.v1.SandboxService/Describe"

Test(tls, client_certificates_name_clients_and_only_trusted_proxies_forward, .init = start,
     .fini = stop, .timeout = 240)
{
	/* A certificate-only client, and the runner's token line given the
	 * worker's subject too: loaded on SIGHUP like any clients change. */
	int rc;
	free(sh_out(&rc, "printf 'worker-1 - code:run subject=" SUBJECT "\\n' >> '%s/clients'", d.dir));
	cr_assert_eq(rc, 0);
	int seen = log_count("clients loaded");
	kill(d.pid, SIGHUP);
	wait_log_more("clients loaded", seen);

	/* ---- the certificate alone names worker-1 ---- */
	bh_client *c = client(base, NULL, "ca", "worker");
	char *m = describe_error(c);
	cr_assert_null(m, "the worker's certificate was refused: %s", m);
	bh_client_free(c);
	char *audit = audit_of(DESCRIBE);
	assert_has(audit, "\"principal\":\"worker-1\"");
	free(audit);
	/* ... and with the worker's certificate another client's token is refused */
	assert_refused(client(base, d.run_token, "ca", "worker"),
		       "the bearer token and the client certificate name different clients");
	/* unmapped, or signed by another CA: refused like a bad token */
	c = client(base, NULL, "ca", "nobody");
	m = describe_error(c);
	assert_has(m, "the client certificate's subject (CN=nobody,O=Example) is no client's");
	free(m);
	bh_client_free(c);
	assert_refused(client(base, d.run_token, "ca", "forged"), "the client certificate is not valid");
	/* without a certificate the token still works */
	c = client(base, d.run_token, "ca", NULL);
	m = describe_error(c);
	cr_assert_null(m, "%s", m);
	bh_client_free(c);
	/* the clients file refuses a certificate-only line without a subject */
	free(sh_out(&rc, "printf 'loose - code:run\\n' >> '%s/clients'", d.dir));
	seen = log_count("kept the old clients");
	kill(d.pid, SIGHUP);
	wait_log_more("kept the old clients", seen);
	char *log = serve_log();
	assert_has(log, "a client without a token (DIGEST \"-\") needs a subject=DN");
	free(log);

	/* ---- Host: loopback names, the listen address, --allowed-host ---- */
	char opts[256];
	snprintf(opts, sizeof opts, "-H 'Host: api.example:%d'", d.port);
	char *out = curl_call(opts, DESCRIBE, d.run_token);
	assert_has(out, "HTTP 200");
	free(out);
	out = curl_call("-H 'Host: evil.example'", DESCRIBE, d.run_token);
	assert_has(out, "HTTP 403");
	assert_has(out, "the Host header must name this daemon");
	free(out);
	out = curl_call("-H 'Origin: https://api.example'", DESCRIBE, d.run_token);
	assert_has(out, "HTTP 403");
	assert_has(out, "an Origin header");
	free(out);

	/* ---- forwarded headers: believed from 127.0.0.5 only ---- */
	const char *fwd = "-H 'X-Forwarded-For: 198.51.100.9, 203.0.113.7' "
			  "-H 'X-Forwarded-Proto: https' -H 'X-Forwarded-Host: api.example'";
	snprintf(opts, sizeof opts, "--interface 127.0.0.5 %s", fwd);
	out = curl_call(opts, DESCRIBE, d.run_token);
	assert_has(out, "HTTP 200");
	free(out);
	out = curl_call(fwd, DESCRIBE, d.run_token); /* from 127.0.0.1: the headers are ignored */
	assert_has(out, "HTTP 200");
	free(out);
	audit = audit_of(DESCRIBE);
	assert_has(audit, "\"client\":\"203.0.113.7\",\"tls\":true,\"forwardedProto\":\"https\"");
	cr_assert_eq(count(audit, "\"client\":\"203.0.113.7\""), 1, "%s", audit);
	cr_assert_eq(count(audit, "\"forwardedProto\""), 1, "%s", audit);
	free(audit);
	/* a trusted proxy's X-Forwarded-Host is checked as the Host would be */
	out = curl_call("--interface 127.0.0.5 -H 'X-Forwarded-Host: evil.example'", DESCRIBE,
			d.run_token);
	assert_has(out, "HTTP 403");
	assert_has(out, "the proxy's X-Forwarded-Host must name this daemon");
	free(out);
	/* ... and nobody else's is looked at */
	out = curl_call("-H 'X-Forwarded-Host: evil.example'", DESCRIBE, d.run_token);
	assert_has(out, "HTTP 200");
	free(out);
}

/* Off loopback without TLS: refused before anything listens (192.0.2.1
 * is TEST-NET-1, never this machine's), and with --insecure-cleartext the
 * refusal is a loud line instead (the bind then fails: not our address). */
Test(tls, a_listener_off_loopback_without_tls_is_refused_before_it_binds)
{
	int rc;
	char *out = sh_out(&rc, "%s serve --state /nonexistent/state --socket /nonexistent/sock --clients "
			  "/nonexistent/clients --listen 192.0.2.1:8443 2>&1", BH_TEST_CLI);
	cr_assert_neq(rc, 0);
	assert_has(out, "--listen 192.0.2.1:8443 is off loopback without TLS: give --tls-cert and --tls-key");
	free(out);
	out = sh_out(&rc, "%s serve --state /nonexistent/state --socket /nonexistent/sock --clients "
			  "/nonexistent/clients --listen 192.0.2.1:8443 --tls-cert /nonexistent/c.pem "
			  "--tls-key /nonexistent/k.pem 2>&1", BH_TEST_CLI);
	cr_assert_neq(rc, 0);
	assert_has(out, "the TLS certificate /nonexistent/c.pem");
	free(out);
	out = sh_out(&rc, "%s serve --state /nonexistent/state --socket /nonexistent/sock --clients "
			  "/nonexistent/clients --listen 192.0.2.1:8443 --insecure-cleartext 2>&1",
		     BH_TEST_CLI);
	cr_assert_neq(rc, 0);
	assert_has(out, "error: tls: --insecure-cleartext: listening on 192.0.2.1:8443 WITHOUT TLS");
	free(out);
}
