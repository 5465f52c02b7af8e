/* Issue 18's hostile cases that need a sandbox, on both tiers, against the
 * real broker (src/broker) and a real TLS upstream with a test CA
 * (tests/support/test_broker.h over tests/broker/broker_harness.c: api.test
 * on 127.0.0.2, the credential added as Authorization):
 *  - a process left behind after a granted call finds the broker serving
 *    nothing (503) and the upstream sees nothing more;
 *  - a session without a profile has no proxy variables, and neither its
 *    socket nor the relay carries anything anywhere;
 *  - a session with a profile dialling the upstream's address itself, or its
 *    name, reaches nothing: the broker is the only way out.
 * Each asserts what the upstream saw and what the sandbox got; the
 * credential appears in none of the sandbox's output. The broker's own
 * hostile cases (host side, tier-independent) are tests/broker/test_broker.c. */
#include "hostile.h"
#include "test_broker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct test_broker broker; /* the real broker, recorded (test_broker.h) */
static struct fixture *const fx = &broker.f;
static char code[8192];

/* Raw requests for an allowed route through the socket and the relay, as
 * a process that never had the proxy variables would send them. */
static const char raw_probes[] =
	"def raw(connect):\n"
	"    c = connect(); c.settimeout(10)\n"
	"    c.sendall(b'GET https://api.test:%u/v1/items HTTP/1.1\\r\\nHost: api.test:%u\\r\\n\\r\\n')\n"
	"    got = b''\n"
	"    while b'\\r\\n\\r\\n' not in got:\n"
	"        b = c.recv(4096)\n"
	"        if not b: break\n"
	"        got += b\n"
	"    head = got.split(b'\\r\\n\\r\\n')[0].decode().split('\\r\\n')\n"
	"    why = [l.split(': ', 1)[1] for l in head[1:] if l.lower().startswith('x-bulkhead-refusal:')]\n"
	"    return head[0].split(' ', 1)[1] + (' / ' + why[0] if why else '')\n"
	"def via_socket():\n"
	"    c = socket.socket(socket.AF_UNIX); c.connect('/run/host-api.sock'); return c\n"
	"def via_relay(): return socket.create_connection(('127.0.0.1', 3128), timeout=5)\n";

static char probes[2048]; /* raw_probes for this test's upstream */

static void start(enum bh_tier t)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	tb_init(&broker, root && *root ? root : "/tmp");
	hostile_setup_egress(t, &tb_ops, &broker);
	snprintf(probes, sizeof probes, raw_probes, fx->api.port, fx->api.port);
}

static void fini(void)
{
	hostile_teardown(); /* the engine closes its sessions' sockets */
	tb_fini(&broker);   /* then the broker stops, the upstreams go */
}

#define BROKER_TEST(name)                                                                         \
	static void name##_body(void);                                                              \
	Test(hostile_container, name, .fini = fini)                                                 \
	{                                                                                           \
		start(BH_TIER_CONTAINER);                                                           \
		name##_body();                                                                      \
	}                                                                                           \
	Test(hostile_kernel, name, .fini = fini)                                                    \
	{                                                                                           \
		start(BH_TIER_KERNEL);                                                              \
		name##_body();                                                                      \
	}                                                                                           \
	static void name##_body(void)

static void assert_no_credential(const struct cell_outcome *o)
{
	cr_assert_null(strstr(o->out ? o->out : "", TEST_CREDENTIAL), "%s", o->out);
	cr_assert_null(strstr(o->errout ? o->errout : "", TEST_CREDENTIAL), "%s", o->errout);
}

struct call_wait {
	bool done;
	char *out, *err;
};

static void on_call(void *arg, const struct bh_cell_result *r, const bh_error *err)
{
	struct call_wait *w = arg;
	w->done = true;
	if (err)
		w->err = strdup(err->msg);
	else
		w->out = strndup((const char *)r->out, r->out_len);
}

BROKER_TEST(egress_a_process_left_behind_after_a_granted_call_gets_nothing)
{
	case_begin("egress: a process left behind after a granted call");
	bh_session *s = hostile_session();
	/* The poller a granted snippet leaves behind: it waits for the call to
	 * be answered, then tries the allowed route through the proxy it
	 * inherited and straight through the socket, writing what it got. */
	snprintf(code, sizeof code,
		 "open('/tmp/poller.py', 'w').write(r'''\n"
		 "import socket, time, urllib.request, urllib.error\n"
		 "%s"
		 "print('started', flush=True)\n"
		 "time.sleep(1.5)\n"
		 "for i in range(8):\n"
		 "    try: st = str(urllib.request.urlopen('https://api.test:%u/v1/items', timeout=5).status)\n"
		 "    except Exception as e: st = type(e).__name__ + ':' + str(getattr(e, 'reason', e))[:60]\n"
		 "    try: rw = raw(via_socket)\n"
		 "    except Exception as e: rw = type(e).__name__\n"
		 "    open('/tmp/poller.log', 'a').write(st + ' | ' + rw + chr(10))\n"
		 "    time.sleep(0.3)\n"
		 "''')\n"
		 "print('written')\n",
		 probes, fx->api.port);
	struct cell_outcome *w = py(s, code, 30000);
	cr_assert_str_eq(w->out, "written\n", "%s", w->errout);

	snprintf(code, sizeof code,
		 "fetch('https://api.test:%u/v1/items').then(async r => {\n"
		 "  const body = await r.text();\n"
		 "  const p = require('child_process').spawn('/usr/bin/python3', ['/tmp/poller.py'],\n"
		 "    {detached: true, stdio: ['ignore', 'pipe', 'ignore']});\n"
		 "  p.stdout.once('data', d => {\n" /* the call answers once the poller runs */
		 "    console.log('call', r.status, body, d.toString().trim());\n"
		 "    p.stdout.destroy(); p.unref();\n"
		 "  });\n"
		 "})",
		 fx->api.port);
	struct bh_cell c = {.language = BH_LANG_JAVASCRIPT, .code = code, .code_len = strlen(code),
			    .floor = BH_TIER_UNKNOWN, .fresh_process = true,
			    .grant_profile = "weather", .timeout_ms = 30000};
	struct call_wait cw = {0};
	bh_error *err = NULL;
	cr_assert_eq(bh_session_run(s, &c, on_call, &cw, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &cw.done, 60000, &err), 0);
	cr_assert_null(cw.err, "%s", cw.err);
	cr_assert_str_eq(cw.out, "call 200 hello from upstream started\n", "%s\n%s", cw.out, tb_dump(&broker));
	int hits = upstream_hits(&fx->api);
	cr_assert_eq(hits, 1, "the granted call reached the upstream once");

	/* After the answer: the poller's tries (if the sweep left it), and the
	 * session's interpreter, a process that outlived the call as well. */
	snprintf(code, sizeof code,
		 "%s"
		 "time.sleep(5)\n"
		 "log = open('/tmp/poller.log').read().splitlines() if os.path.exists('/tmp/poller.log') else []\n"
		 "print('poller tries', len(log))\n"
		 "print('poller passed', sum(l.split(' | ')[0] == '200' or l.split(' | ')[-1].startswith('200') for l in log))\n"
		 "print('poller got', sorted(set(log)))\n"
		 "print('interpreter socket', raw(via_socket))\n"
		 "print('interpreter relay', raw(via_relay))\n",
		 probes);
	struct cell_outcome *o = py(s, code, 30000);
	assert_no_credential(o);
	char v[512];
	cr_assert_not_null(probe(o->out, "poller passed", v, sizeof v), "%s %s", o->out, o->errout);
	cr_assert_str_eq(v, "0", "a leftover reached the upstream: %s", o->out);
	cr_assert_not_null(probe(o->out, "interpreter socket", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "503 Service Unavailable / no profile is held now", "%s", o->out);
	cr_assert_not_null(probe(o->out, "interpreter relay", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "503 Service Unavailable / no profile is held now", "%s", o->out);
	cr_assert_eq(upstream_hits(&fx->api), hits, "the upstream saw a request after the call:\n%s",
		     tb_dump(&broker));
	char tries[32], got[300];
	probe(o->out, "poller tries", tries, sizeof tries);
	probe(o->out, "poller got", got, sizeof got);
	case_saw("call 200, its poller started; after the answer the poller %s tries %s; interpreter socket and relay 503 no profile is held "
		 "now; upstream hits %d (the call's only)",
		 tries, atoi(tries) ? got : "(swept with its call)", upstream_hits(&fx->api));
	cell_outcome_free(w);
	cell_outcome_free(o);
	free(cw.out);
	case_end();
}

BROKER_TEST(egress_a_session_without_a_profile_has_no_proxy_and_no_route)
{
	case_begin("egress: a session without a profile");
	bh_session *s = hostile_session();
	snprintf(code, sizeof code,
		 "%s"
		 "print('proxy env', sorted(k for k in os.environ if 'proxy' in k.lower() or 'CERT' in k) or 'none')\n"
		 "print('socket', raw(via_socket))\n"
		 "print('relay', raw(via_relay))\n"
		 "tryop('upstream address', lambda: socket.create_connection(('127.0.0.2', %u), timeout=3))\n"
		 "tryop('upstream name', lambda: socket.getaddrinfo('api.test', %u))\n",
		 probes, fx->api.port, fx->api.port);
	struct cell_outcome *o = py(s, code, 30000);
	assert_no_credential(o);
	char v[256];
	cr_assert_not_null(probe(o->out, "proxy env", v, sizeof v), "%s %s", o->out, o->errout);
	cr_assert_str_eq(v, "none", "%s", o->out);
	cr_assert_not_null(probe(o->out, "socket", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "503 Service Unavailable / no profile is held now", "%s", o->out);
	cr_assert_not_null(probe(o->out, "relay", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "503 Service Unavailable / no profile is held now", "%s", o->out);
	const char *const names[] = {"upstream address", "upstream name", NULL};
	assert_blocked(o->out, names);
	cr_assert_eq(upstream_hits(&fx->api), 0, "the upstream was reached:\n%s", tb_dump(&broker));
	for (int i = 0; i < 500 && tb_count(&broker, "request", "-> 503 no profile is held now") < 2; i++)
		usleep(10000); /* noted once the answer is written */
	cr_assert_eq(tb_count(&broker, "request", "-> 503 no profile is held now"), 2,
		     "the broker noted both refusals: %s", tb_dump(&broker));
	case_saw("no proxy variables; socket and relay 503 no profile is held now; upstream hits 0");
	cell_outcome_free(o);
	case_end();
}

static void on_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct call_wait *w = arg;
	w->done = true;
	if (err)
		w->err = strdup(err->msg);
}

BROKER_TEST(egress_a_profile_session_dialling_the_upstream_itself_reaches_nothing)
{
	case_begin("egress: the upstream's address dialled directly");
	struct bh_session_opts so = {.tier = tier, .floor = BH_TIER_UNKNOWN, .principal = "test",
				     .egress_profile = "weather"};
	struct call_wait w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &so, on_open, &w, &s, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0);
	cr_assert_null(w.err, "%s", w.err);
	snprintf(code, sizeof code,
		 "import urllib.request, ssl\n"
		 "u = 'https://api.test:%u/v1/items'\n"
		 "print('through the broker', urllib.request.urlopen(u, timeout=20).read().decode())\n"
		 "direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
		 "tryop('tcp 127.0.0.2', lambda: socket.create_connection(('127.0.0.2', %u), timeout=3))\n"
		 "tryop('https by address, no proxy', lambda: direct.open('https://127.0.0.2:%u/v1/items', timeout=5))\n"
		 "tryop('https by name, no proxy', lambda: direct.open(u, timeout=5))\n"
		 "tryop('host loopback 127.0.0.1', lambda: socket.create_connection(('127.0.0.1', %u), timeout=3))\n",
		 fx->api.port, fx->api.port, fx->api.port, fx->api.port);
	struct cell_outcome *o = py(s, code, 60000);
	assert_no_credential(o);
	char v[256];
	cr_assert_not_null(probe(o->out, "through the broker", v, sizeof v), "%s %s", o->out, o->errout);
	cr_assert_str_eq(v, "hello from upstream", "%s", o->out);
	const char *const names[] = {"tcp 127.0.0.2", "https by address, no proxy",
				     "https by name, no proxy", "host loopback 127.0.0.1", NULL};
	assert_blocked(o->out, names);
	cr_assert_eq(upstream_hits(&fx->api), 1, "only the broker's request reached it:\n%s", tb_dump(&broker));
	char head[16384];
	upstream_last(&fx->api, NULL, 0, head, sizeof head);
	char want[128];
	snprintf(want, sizeof want, "Authorization: Bearer %s", TEST_CREDENTIAL);
	cr_assert(strcasestr(head, want), "%s", head);
	case_saw("through the broker 200 (the upstream saw the credential); upstream hits 1");
	cell_outcome_free(o);
	case_end();
}
