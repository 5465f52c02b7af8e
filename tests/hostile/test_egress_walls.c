/* The egress mount as a wall (issue 18), on both tiers: with a broker, a
 * session's sandbox has its own socket at /run/host-api.sock and nothing
 * more. The mount is read-only (nothing can be added to, removed from or
 * changed in the host's directory), another session's socket cannot be
 * reached by its host path, and on the kernel tier runsc's --host-uds=open
 * reaches no host socket but the one mounted (none of those the sandbox's
 * /proc/net/unix lists, nor the host's abstract canary). The broker here is
 * the real one, its calls and notes recorded (tests/support/test_broker.h);
 * it must note no request on the other session's socket. */
#include "hostile.h"
#include "test_broker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct test_broker broker;
static char code[8192];

static void body(void)
{
	bh_session *a = hostile_session();
	bh_session *b = hostile_session();
	char a_fp[65];
	snprintf(a_fp, sizeof a_fp, "%s", bh_session_fingerprint(a));
	const char *a_sock = tb_socket_of(&broker, a_fp);
	cr_assert_str_neq(a_sock, "", "session A's socket is open:\n%s", tb_dump(&broker));
	case_begin("egress mount: read-only, its own socket only");
	snprintf(code, sizeof code,
		 "def conn(path):\n"
		 "    c = socket.socket(socket.AF_UNIX); c.settimeout(2)\n"
		 "    try: c.connect(path)\n"
		 "    finally: c.close()\n"
		 "tryop('create in /run', lambda: open('/run/planted', 'w'))\n"
		 "tryop('unlink the socket', lambda: os.unlink('/run/host-api.sock'))\n"
		 "tryop('rename the CA bundle', lambda: os.rename('/run/host-api-ca.pem', '/run/x'))\n"
		 "tryop('append to the CA bundle', lambda: open('/run/host-api-ca.pem', 'a'))\n"
		 "tryop('symlink in /run', lambda: os.symlink('/etc/passwd', '/run/l'))\n"
		 "tryop('another session by host path', lambda: conn('%s'))\n"
		 "tryop('host abstract canary', lambda: conn('\\0%s'))\n"
		 "others = []\n"
		 "for line in open('/proc/net/unix').read().splitlines()[1:]:\n"
		 "    f = line.split()\n"
		 "    if len(f) >= 8 and f[7].startswith('/') and f[7] != '/run/host-api.sock': others.append(f[7])\n"
		 "reached = 0\n"
		 "for p in set(others):\n"
		 "    try: conn(p); reached += 1\n"
		 "    except OSError: pass\n"
		 "print('listed sockets reached', 'OK' if reached else 'none of %%d' %% len(set(others)))\n"
		 "tryop('own socket', lambda: conn('/run/host-api.sock'))\n"
		 "print('run holds', sorted(os.listdir('/run')))\n",
		 a_sock, canary_abstract());
	struct cell_outcome *o = py(b, code, 30000);
	const char *const names[] = {"create in /run", "unlink the socket", "rename the CA bundle",
				     "append to the CA bundle", "symlink in /run",
				     "another session by host path", "host abstract canary",
				     "listed sockets reached", NULL};
	assert_blocked(o->out, names);
	char v[256];
	cr_assert_not_null(probe(o->out, "own socket", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "OK", "its own socket answers: %s", o->out);
	cr_assert_not_null(probe(o->out, "run holds", v, sizeof v), "%s", o->out);
	cr_assert_str_eq(v, "['host-api-ca.pem', 'host-api.sock']", "%s", o->out);
	char a12[32];
	snprintf(a12, sizeof a12, "request %.12s", a_fp);
	cr_assert_eq(tb_count(&broker, a12, NULL), 0, "A's socket saw B:\n%s", tb_dump(&broker));
	case_saw("/run read-only, A's socket unreachable from B, only its own answers");
	cell_outcome_free(o);
	case_end();
}

static void fini(void)
{
	hostile_teardown();
	tb_fini(&broker);
}

static void start(enum bh_tier t)
{
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	tb_init(&broker, root && *root ? root : "/tmp");
	hostile_setup_egress(t, &tb_ops, &broker);
}

Test(hostile_container, the_egress_mount_is_read_only_and_reaches_only_its_own_socket, .fini = fini)
{
	start(BH_TIER_CONTAINER);
	body();
}

Test(hostile_kernel, the_egress_mount_is_read_only_and_reaches_only_its_own_socket, .fini = fini)
{
	start(BH_TIER_KERNEL);
	body();
}
