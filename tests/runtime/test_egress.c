/* Egress, the sandbox side (issue 18), on both tiers: the broker's socket
 * mounted at /run/host-api.sock, the init's loopback relay, the proxy and
 * CA variables only where a profile may be used, and the holds the engine
 * takes and gives back.
 *
 * The broker is the real one (src/broker) with a real TLS upstream and a
 * test CA (tests/support/test_broker.h): the engine's calls of it are
 * recorded on their way (open, hold, release, close) and every request it
 * carried or refused is in its notes, which become the engine's events. The
 * engine, the runtimes, the init's relay and the clients inside (Python
 * requests and urllib, Node's fetch) are the real ones. The broker's own
 * rules (TLS, routes, credentials) are tested in its own suite. */
#include "harness.h"
#include "egress.h"
#include "metrics.h"
#include "test_broker.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- the suite ---- */

static struct harness h;
static struct test_broker broker;

static void setup(void)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	tb_init(&broker, root && *root ? root : "/tmp");
	harness_open_egress(&h, &tb_ops, &broker);
	tb_engine(&broker, h.e); /* its notes are the engine's events, as in the daemon */
}

static void teardown(void)
{
	tb_engine(&broker, NULL);
	harness_close(&h);
	tb_fini(&broker);
}

#define EGRESS_TEST(name)                                                                          \
	static void name##_check(enum bh_tier tier);                                               \
	Test(egress_container, name, .init = setup, .fini = teardown)                              \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_CONTAINER);                                       \
		name##_check(BH_TIER_CONTAINER);                                                   \
	}                                                                                          \
	Test(egress_kernel, name, .init = setup, .fini = teardown)                                 \
	{                                                                                          \
		harness_require_tier(&h, BH_TIER_KERNEL);                                          \
		name##_check(BH_TIER_KERNEL);                                                      \
	}                                                                                          \
	static void name##_check(enum bh_tier tier)

struct open_wait {
	bool done;
	char *err;
};

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct open_wait *w = arg;
	w->done = true;
	if (err)
		w->err = strdup(err->msg);
}

static bh_session *profile_session(enum bh_tier tier, const char *profile)
{
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN, .principal = "test",
				    .egress_profile = profile};
	struct open_wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, on_open, &w, &s, &err), 0, "open: %s", err ? err->msg : "?");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0);
	cr_assert_null(w.err, "the session did not open: %s\n%s", w.err, h.log);
	return s;
}

static struct cell_outcome *ok(bh_session *s, enum bh_language l, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, l, code, 30000);
	cr_assert(o->answered, "no answer to %s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, 0, "%s: exit %d\nstdout: %s\nstderr: %s\nbroker:\n%s", code,
		     o->r.exit_code, o->out, o->errout, tb_dump(&broker));
	return o;
}

/* Every process's environment the sandbox user can read holds the
 * sandbox's names and, where a profile may be used, the proxy's exactly:
 * the relay's address and the CA file, never anything else. */
static const char *ENV_CHECK =
	"import os, glob\n"
	"allowed = {'PATH','HOME','LANG','TMPDIR','PYTHONDONTWRITEBYTECODE','PYTHONUNBUFFERED',"
	"'MPLBACKEND','MPLCONFIGDIR','MATPLOTLIBRC'}\n"
	"proxy = {'HTTP_PROXY','HTTPS_PROXY','http_proxy','https_proxy','NO_PROXY','no_proxy',"
	"'SSL_CERT_FILE','REQUESTS_CA_BUNDLE','PIP_CERT','NODE_EXTRA_CA_CERTS','NODE_OPTIONS'}\n"
	"seen = set(); extra = set()\n"
	"for p in glob.glob('/proc/[0-9]*/environ'):\n"
	"    try: data = open(p,'rb').read()\n"
	"    except OSError: continue\n"
	"    for kv in data.split(b'\\0'):\n"
	"        if not kv: continue\n"
	"        k, _, v = kv.decode().partition('=')\n"
	"        if k in proxy: seen.add(kv.decode())\n"
	"        elif k not in allowed: extra.add(k)\n"
	"print(sorted(seen)); print('extra', sorted(extra))\n";

/* The upstream's last request line ("GET /v1/items/7 HTTP/1.1"). */
static const char *upstream_line(void)
{
	static char line[1024];
	upstream_last(&broker.f.api, line, sizeof line, NULL, 0);
	return line;
}

static char code_buf[4096];
/* code with every "ORIGIN" replaced by the upstream's https://api.test:PORT */
static const char *at_upstream(const char *code)
{
	size_t o = 0;
	for (const char *p = code; *p && o + 64 < sizeof code_buf;) {
		if (!strncmp(p, "ORIGIN", 6)) {
			o += (size_t)snprintf(code_buf + o, sizeof code_buf - o, "%s", broker.origin);
			p += 6;
		} else {
			code_buf[o++] = *p++;
		}
	}
	code_buf[o] = '\0';
	return code_buf;
}

EGRESS_TEST(a_session_with_a_profile_reaches_the_broker_with_requests_urllib_and_node_fetch)
{
	bh_session *s = profile_session(tier, "weather");
	const char *fp = bh_session_fingerprint(s);
	cr_assert_eq(tb_count(&broker, "open", NULL), 1, "%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "hold", "1 weather"), 1, "the profile is held from open:\n%s",
		     tb_dump(&broker));

	/* requests where the host has it (scripts/setup.sh installs
	 * python3-requests; the sandbox sees the host's /usr). */
	bool have_requests = system("/usr/bin/python3 -c 'import requests' 2>/dev/null") == 0;
	struct cell_outcome *py = ok(s, BH_LANG_PYTHON, at_upstream(
				     "import urllib.request\n"
				     "try:\n"
				     "    import requests\n"
				     "    print(requests.get('ORIGIN/v1/items/7', timeout=20).text)\n"
				     "except ImportError: print('no requests here')\n"
				     "print(urllib.request.urlopen('ORIGIN/v1/items/8', timeout=20).read().decode())\n"
				     "print(urllib.request.urlopen('ORIGIN/v1/items/9'.replace('https', 'http'), timeout=20).read().decode())\n"));
	if (have_requests)
		cr_assert(!strncmp(py->out, "hello from upstream\n", 20), "%s", py->out);
	else
		cr_log_warn("python3-requests is not installed on this host: requests not tried");
	cr_assert_not_null(strstr(py->out, "\nhello from upstream\nhello from upstream\n"), "%s %s",
			   py->out, py->errout);
	cr_assert_str_eq(upstream_line(), "GET /v1/items/9 HTTP/1.1", "http:// goes upstream over TLS too");
	struct cell_outcome *js = ok(s, BH_LANG_JAVASCRIPT, at_upstream(
				     "const r = await fetch('ORIGIN/v1/items/x?q=1');\n"
				     "console.log(r.status, await r.text())"));
	cr_assert_str_eq(js->out, "200 hello from upstream\n", "%s %s", js->out, js->errout);
	cr_assert_str_eq(upstream_line(), "GET /v1/items/x?q=1 HTTP/1.1", "the query goes as sent");
	/* Straight through the mounted socket too (plimsoll's path). */
	struct cell_outcome *raw = ok(s, BH_LANG_PYTHON, at_upstream(
				      "import socket, os, stat\n"
				      "st = os.stat('/run/host-api.sock'); print(stat.S_ISSOCK(st.st_mode))\n"
				      "c = socket.socket(socket.AF_UNIX); c.connect('/run/host-api.sock')\n"
				      "c.sendall(b'GET ORIGIN/v1/items HTTP/1.1\\r\\nHost: ORIGIN\\r\\n\\r\\n'.replace(b'Host: https://', b'Host: '))\n"
				      "print(c.recv(4096).split(b'\\r\\n')[0].decode())\n"
				      "print(os.environ['HTTPS_PROXY'], os.environ['SSL_CERT_FILE'])\n"
				      "print('BEGIN CERTIFICATE' in open(os.environ['SSL_CERT_FILE']).read())\n"));
	cr_assert_str_eq(raw->out,
			 "True\nHTTP/1.1 200 OK\nhttp://127.0.0.1:3128 /run/host-api-ca.pem\nTrue\n", "%s",
			 raw->errout);
	struct cell_outcome *env = ok(s, BH_LANG_PYTHON, ENV_CHECK);
	cr_assert_not_null(strstr(env->out, "'HTTP_PROXY=http://127.0.0.1:3128'"), "%s", env->out);
	cr_assert_not_null(strstr(env->out, "\nextra []\n"), "%s", env->out);
	/* Every request passed the broker under the session's profile. */
	cr_assert_eq(tb_count(&broker, "request", "[weather] GET https://api.test:"),
		     have_requests ? 5u : 4u, "%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "request", "-> 200 -"), have_requests ? 5u : 4u, "%s",
		     tb_dump(&broker));

	harness_close_session(&h, s, NULL, NULL);
	cr_assert_eq(tb_count(&broker, "release", "1"), 1, "released at close:\n%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "close", NULL), 1, "%s", tb_dump(&broker));
	(void)fp;
	cell_outcome_free(py), cell_outcome_free(js), cell_outcome_free(raw), cell_outcome_free(env);
}

EGRESS_TEST(a_session_without_a_profile_has_no_proxy_and_no_hold)
{
	bh_session *s = harness_session(&h, tier, 0);
	struct cell_outcome *o = ok(s, BH_LANG_PYTHON, at_upstream(
				    "import os, socket\n"
				    "print(sorted(k for k in os.environ if 'proxy' in k.lower() or 'CERT' in k))\n"
				    "c = socket.socket(socket.AF_UNIX); c.connect('/run/host-api.sock')\n"
				    "c.sendall(b'GET ORIGIN/v1/items HTTP/1.1\\r\\n\\r\\n')\n"
				    "print(c.recv(4096).split(b'\\r\\n')[0].decode())\n"));
	cr_assert_str_eq(o->out, "[]\nHTTP/1.1 503 Service Unavailable\n", "%s %s", o->out, o->errout);
	struct cell_outcome *env = ok(s, BH_LANG_PYTHON, ENV_CHECK);
	cr_assert_str_eq(env->out, "[]\nextra []\n");
	cr_assert_eq(tb_count(&broker, "hold", NULL), 0, "%s", tb_dump(&broker));
	/* refused before its target is read: no origin in the note */
	cr_assert_eq(tb_count(&broker, "request", "[] GET - - -> 503 no profile is held now"), 1, "%s",
		     tb_dump(&broker));
	cr_assert_eq(upstream_hits(&broker.f.api), 0, "the upstream was reached");
	cell_outcome_free(o), cell_outcome_free(env);
}

struct grant_wait {
	bool done;
	size_t releases_at_answer;
	struct cell_outcome o;
};

static void on_granted(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct grant_wait *w = arg;
	w->done = true;
	w->releases_at_answer = tb_count(&broker, "release", NULL);
	if (err) {
		w->o.err_msg = strdup(err->msg);
		w->o.refusal = err->refusal;
		return;
	}
	w->o.answered = true;
	w->o.r.exit_code = r->exit_code;
	w->o.out = strndup((const char *)r->out, r->out_len);
	w->o.errout = strndup((const char *)r->errout, r->errout_len);
}

EGRESS_TEST(a_granted_snippet_holds_its_profile_for_the_call_only)
{
	bh_session *s = harness_session(&h, tier, 0);
	/* A process of the session's, left running: the interpreter. */
	cell_outcome_free(ok(s, BH_LANG_PYTHON, at_upstream("import socket\n"
			      "def ask(path):\n"
			      "    c = socket.socket(socket.AF_UNIX); c.connect('/run/host-api.sock')\n"
			      "    c.sendall(b'GET ORIGIN/v1/items/' + path + b' HTTP/1.1\\r\\n\\r\\n')\n"
			      "    return c.recv(4096).split(b'\\r\\n')[0].decode()\n")));
	char code[sizeof code_buf]; /* whole: a cut cell would fail for another reason */
	snprintf(code, sizeof code, "%s", at_upstream("fetch('ORIGIN/v1/items/granted').then(async r => "
			   "console.log(r.status, await r.text(), process.env.HTTP_PROXY))"));
	struct bh_cell c = {.language = BH_LANG_JAVASCRIPT, .code = code, .code_len = strlen(code),
			    .floor = BH_TIER_UNKNOWN, .fresh_process = true, .grant_profile = "maps",
			    .timeout_ms = 30000};
	struct grant_wait w = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_run(s, &c, on_granted, &w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 60000, &err), 0);
	cr_assert(w.o.answered, "%s", w.o.err_msg);
	cr_assert_str_eq(w.o.out, "200 hello from upstream http://127.0.0.1:3128\n", "%s %s\n%s", w.o.out,
			 w.o.errout, tb_dump(&broker));
	cr_assert_str_eq(upstream_line(), "GET /v1/items/granted HTTP/1.1");
	cr_assert_eq(tb_count(&broker, "hold", " maps"), 1, "%s", tb_dump(&broker));
	cr_assert_eq(w.releases_at_answer, 1, "the grant was released before the answer:\n%s",
		     tb_dump(&broker));
	/* What is left running finds the broker serving nothing, and the
	 * interpreters never had the proxy. */
	struct cell_outcome *after = ok(s, BH_LANG_PYTHON,
					"import os\nprint(ask(b'after'), 'HTTP_PROXY' in os.environ)");
	cr_assert_str_eq(after->out, "HTTP/1.1 503 Service Unavailable False\n", "%s", after->errout);
	cr_assert_eq(tb_count(&broker, "request", "[] GET - - -> 503 no profile is held now"), 1, "%s",
		     tb_dump(&broker));
	cr_assert_eq(upstream_hits(&broker.f.api), 1, "the upstream saw only the granted call");
	/* A cell in an interpreter carries no grant. */
	struct bh_cell bad = {.language = BH_LANG_PYTHON, .code = "1", .code_len = 1,
			      .floor = BH_TIER_UNKNOWN, .grant_profile = "maps"};
	cr_assert_lt(bh_session_run(s, &bad, on_granted, &w, &err), 0);
	cr_assert_eq(err->refusal, BH_REFUSAL_REQUEST, "%s", err->msg);
	bh_error_free(err);
	free(w.o.out), free(w.o.errout), free(w.o.err_msg);
	cell_outcome_free(after);
}

struct snippet_wait {
	bool done;
	size_t releases_at_answer;
	char *out, *err;
};

static void on_snippet(void *arg, const struct bh_snippet_result *r, const bh_error *err)
{
	struct snippet_wait *w = arg;
	w->done = true;
	w->releases_at_answer = tb_count(&broker, "release", NULL);
	if (err)
		w->err = strdup(err->msg);
	else
		w->out = strndup((const char *)r->out, r->out_len);
}

EGRESS_TEST(a_fresh_run_with_a_grant_fetches_and_is_released_before_its_answer)
{
	char code[sizeof code_buf]; /* whole: a cut cell would fail for another reason */
	snprintf(code, sizeof code, "%s", at_upstream("const r = await fetch('ORIGIN/v1/items/run'); "
						      "console.log(r.status, await r.text())"));
	struct bh_snippet sn = {.tier = tier, .floor = BH_TIER_UNKNOWN, .code = code,
				.code_len = strlen(code), .principal = "test", .grant_profile = "maps"};
	struct snippet_wait w = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_run_javascript(h.e, &sn, on_snippet, &w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 60000, &err), 0);
	cr_assert_null(w.err, "%s\n%s", w.err, h.log);
	cr_assert_str_eq(w.out, "200 hello from upstream\n", "%s\n%s", w.out, tb_dump(&broker));
	cr_assert_str_eq(upstream_line(), "GET /v1/items/run HTTP/1.1");
	cr_assert_eq(w.releases_at_answer, 1, "%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "close", NULL), 1, "%s", tb_dump(&broker));
	/* Without a grant, a fresh run has no socket at all. */
	const char *probe = "console.log(require('fs').existsSync('/run/host-api.sock'), process.env.HTTP_PROXY)";
	struct bh_snippet plain = {.tier = tier, .floor = BH_TIER_UNKNOWN, .code = probe,
				   .code_len = strlen(probe), .principal = "test"};
	struct snippet_wait w2 = {0};
	cr_assert_eq(bh_run_javascript(h.e, &plain, on_snippet, &w2, &err), 0);
	cr_assert_eq(bh_engine_wait(h.e, &w2.done, 60000, &err), 0);
	cr_assert_str_eq(w2.out, "false undefined\n", "%s", w2.err);
	free(w.out), free(w2.out);
}

struct found {
	char detail[1024];
	char sandbox[40];
	int n;
};

static int on_event(void *arg, const struct bh_event *ev)
{
	struct found *f = arg;
	if (strcmp(ev->kind, "egress") || !strstr(ev->detail, "https://api.test:"))
		return 0;
	f->n++;
	snprintf(f->detail, sizeof f->detail, "%s", ev->detail);
	snprintf(f->sandbox, sizeof f->sandbox, "%s", ev->sandbox);
	return 0;
}

struct counts {
	uint64_t ok, refused, bytes_in;
};

static void on_count(void *arg, const struct bh_egress_count *c)
{
	struct counts *k = arg;
	if (strcmp(c->profile, "weather"))
		return;
	if (c->status == 200)
		k->ok += c->requests, k->bytes_in += c->bytes_in;
	if (c->status == 403)
		k->refused += c->requests;
}

EGRESS_TEST(the_brokers_notes_are_events_of_the_session_and_counts)
{
	bh_session *s = profile_session(tier, "weather");
	/* One request the profile allows and one it does not, through the
	 * real broker: its notes are what the engine records. */
	struct cell_outcome *o = ok(s, BH_LANG_PYTHON, at_upstream(
				    "import urllib.request, urllib.error\n"
				    "print(urllib.request.urlopen('ORIGIN/v1/items', timeout=20).read().decode())\n"
				    "try: urllib.request.urlopen('ORIGIN/admin', timeout=20)\n"
				    "except urllib.error.HTTPError as e: print(e.code, e.headers['X-Bulkhead-Refusal'])\n"));
	cr_assert_str_eq(o->out, "hello from upstream\n403 no route allows this request\n", "%s",
			 o->errout);
	cell_outcome_free(o);
	struct found f = {0};
	for (int i = 0; i < 100 && f.n < 2; i++) {
		bool never = false;
		bh_engine_wait(h.e, &never, 50, NULL);
		f = (struct found){0};
		bh_engine_events(h.e, 0, 0, on_event, &f, NULL);
	}
	cr_assert_eq(f.n, 2, "both requests are events:\n%s", tb_dump(&broker));
	char want[256];
	snprintf(want, sizeof want, "GET %s -> 403, refused: no route allows this request; "
		 "out 0 B, in 0 B, ", broker.origin);
	cr_assert(!strncmp(f.detail, want, strlen(want)), "%s", f.detail);
	cr_assert(strstr(f.detail, " ms; profile weather"), "%s", f.detail);
	cr_assert_str_neq(f.sandbox, "", "the event names the session's sandbox");
	struct counts k = {0};
	bh_engine_egress_counts(h.e, on_count, &k);
	cr_assert_eq(k.ok, 1);
	cr_assert_eq(k.refused, 1);
	cr_assert_eq(k.bytes_in, 19, "the upstream's body, \"hello from upstream\"");
	/* And /metrics, as the daemon renders it. */
	struct metrics m = {0};
	char *text = metrics_render(&m, h.e);
	cr_assert_not_null(strstr(text, "bulkhead_egress_requests_total{profile=\"weather\",status=\"200\"} 1\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "bulkhead_egress_requests_total{profile=\"weather\",status=\"403\"} 1\n"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "bulkhead_egress_response_bytes_total{profile=\"weather\",status=\"200\"} 19\n"),
			   "%s", text);
	free(text);
}

/* ---- without a broker ---- */

static void plain_setup(void) { harness_open(&h, NULL); }
static void plain_teardown(void) { harness_close(&h); }

Test(egress_none, a_profile_is_refused_and_nothing_is_mounted, .init = plain_setup,
     .fini = plain_teardown)
{
	enum bh_tier tier = bh_engine_best_tier(h.e);
	if (tier == BH_TIER_UNKNOWN)
		cr_skip_test("no tier offered here");
	struct bh_session_opts o = {.tier = tier, .floor = BH_TIER_UNKNOWN, .principal = "test",
				    .egress_profile = "weather"};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_lt(bh_session_open(h.e, &o, on_open, &(struct open_wait){0}, &s, &err), 0);
	cr_assert_eq(err->code, BH_E_NOT_DISPATCHED);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	cr_assert_str_eq(err->msg, "grant profile weather is unknown or not available to this caller");
	bh_error_free(err), err = NULL;
	struct bh_snippet sn = {.tier = tier, .floor = BH_TIER_UNKNOWN, .code = "1", .code_len = 1,
				.grant_profile = "weather"};
	cr_assert_lt(bh_run_javascript(h.e, &sn, on_snippet, NULL, &err), 0);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	bh_error_free(err), err = NULL;
	s = harness_session(&h, tier, 0);
	struct bh_cell c = {.language = BH_LANG_JAVASCRIPT, .code = "1", .code_len = 1,
			    .floor = BH_TIER_UNKNOWN, .fresh_process = true, .grant_profile = "weather"};
	cr_assert_lt(bh_session_run(s, &c, on_granted, NULL, &err), 0);
	cr_assert_eq(err->refusal, BH_REFUSAL_PERMISSION);
	bh_error_free(err);
	struct cell_outcome *x = harness_cell(&h, s, BH_LANG_PYTHON,
					      "import os, socket\n"
					      "print(os.path.exists('/run/host-api.sock'), os.listdir('/run'))\n"
					      "try:\n"
					      "    socket.create_connection(('127.0.0.1', 3128), timeout=2); print('open')\n"
					      "except OSError as e: print(type(e).__name__)\n",
					      0);
	cr_assert(x->answered, "%s", x->err_msg);
	cr_assert_str_eq(x->out, "False []\nConnectionRefusedError\n", "%s", x->errout);
	cell_outcome_free(x);
}

/* ---- hibernation (the kernel tier's) ---- */

static void on_action(void *arg, const bh_error *err)
{
	struct open_wait *w = arg;
	w->done = true;
	if (err)
		w->err = strdup(err->msg);
}

Test(egress_kernel, a_hibernated_session_gives_its_socket_back_and_holds_again_at_wake,
     .init = setup, .fini = teardown)
{
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = profile_session(BH_TIER_KERNEL, "weather");
	struct cell_outcome *a = ok(s, BH_LANG_PYTHON,
				    at_upstream("import urllib.request\n"
				    "get = lambda p: urllib.request.urlopen('ORIGIN/v1/items/' + p, timeout=20).read().decode()\n"
				    "print(get('before'))"));
	cr_assert_str_eq(a->out, "hello from upstream\n");
	cr_assert_str_eq(upstream_line(), "GET /v1/items/before HTTP/1.1");
	struct open_wait w = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_hibernate(s, on_action, &w, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 60000, &err), 0);
	cr_assert_null(w.err, "%s", w.err);
	cr_assert_eq(tb_count(&broker, "release", NULL), 1, "%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "close", NULL), 1, "no socket while on disk:\n%s", tb_dump(&broker));
	/* The next cell restores it: the socket is open again, the profile
	 * held again, and the relay the init kept carries on. */
	struct cell_outcome *b = ok(s, BH_LANG_PYTHON, "print(get('after'))");
	cr_assert_str_eq(b->out, "hello from upstream\n", "%s", b->errout);
	cr_assert_str_eq(upstream_line(), "GET /v1/items/after HTTP/1.1");
	cr_assert_eq(tb_count(&broker, "open", NULL), 2, "%s", tb_dump(&broker));
	cr_assert_eq(tb_count(&broker, "hold", "1 weather"), 2, "%s", tb_dump(&broker));
	cell_outcome_free(a), cell_outcome_free(b);
}

/* ---- a dead engine's directories ---- */

/* What a dead engine's sandboxes left under STATE/egress goes at the next
 * open (an engine taking over), and a link planted there is removed, never
 * followed. */
Test(egress_container, a_dead_engines_socket_directories_go_at_open_and_a_planted_link_is_not_followed,
     .init = setup, .fini = teardown)
{
	char dir[4096], canary[4200], out[256];
	snprintf(dir, sizeof dir, "%s", h.state_dir);
	snprintf(canary, sizeof canary, "%s/../egress-canary-%d", dir, (int)getpid());
	cr_assert_eq(harness_sh_into(out, sizeof out,
				     "mkdir -p '%s/egress/bh-00000000000000aa' '%s' && "
				     "echo x > '%s/egress/bh-00000000000000aa/host-api-ca.pem' && "
				     "echo keep > '%s/file' && ln -s '%s' '%s/egress/planted' && echo ok",
				     dir, canary, dir, canary, canary, dir),
		     0, "%s", out);
	bh_engine_close(h.e);
	h.e = NULL;
	harness_open_at(&h, dir, NULL);
	harness_sh_into(out, sizeof out, "ls -A '%s/egress'; cat '%s/file'", dir, canary);
	cr_assert_str_eq(out, "keep\n", "what is left: %s", out);
	harness_sh("rm -rf -- '%s'", canary);
}
