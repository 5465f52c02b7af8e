/* `bulkhead serve --fleet`: three real daemons (their own state
 * directories and sockets, one clients file, one shared images directory)
 * on a real three-node nats-server cluster, driven through the C client and
 * the C manager. The acceptance: a session opened through one host
 * runs its cells through the others with its state and one chain; a host
 * killed with a hibernated and a live session (the first answers through
 * another host with its variables, the second host_lost and the manager's
 * retry elsewhere); a NATS node killed during a stream of calls (every
 * answered record is in some host's store, no sandbox nobody lists). Every
 * test stops what it started in its .fini, even when it fails. */
#include "base.h"
#include "client.h"
#include "daemon_harness.h"
#include "fleet.h"
#include "harness.h"
#include "manager.h"
#include "nats_cluster.h"
#include "wire.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOSTS 3
#define HEARTBEAT_MS 200
#define GONE_MS 1500

static struct {
	struct nats_cluster *nats;
	struct daemon host[HOSTS];
	char images[4096];
	bh_fleet *watch; /* an observer: what the directory says */
	const char *tier_of[HOSTS]; /* --tier of a host (NULL: the strongest offered) */
} F;

static const char *host_id(int i)
{
	static const char *const ids[HOSTS] = {"host-a", "host-b", "host-c"};
	return ids[i];
}

/* ---- the fleet's directory, as an observer reads it ---- */

static void pump(int ms)
{
	uint64_t until = now_mono_ms() + (uint64_t)ms;
	do {
		struct pollfd p = {.fd = bh_fleet_fd(F.watch), .events = POLLIN};
		poll(&p, 1, 20);
		bh_fleet_process(F.watch);
	} while (now_mono_ms() < until);
}

/* Live, and publishing the tiers it proved (placement needs them). */
static size_t proven_hosts(void)
{
	struct bh_fleet_host *h = NULL;
	size_t n = bh_fleet_hosts(F.watch, &h), live = 0;
	for (size_t i = 0; i < n; i++)
		live += !h[i].gone && h[i].tiers;
	free(h);
	return live;
}

static void wait_live_hosts(size_t want)
{
	for (int i = 0; i < 600 && proven_hosts() != want; i++)
		pump(50);
	cr_assert_eq(proven_hosts(), want, "the fleet shows %zu live proven hosts, not %zu",
		     proven_hosts(), want);
}

static bool host_gone(const char *id)
{
	struct bh_fleet_host h;
	return bh_fleet_host(F.watch, id, &h) < 0 || h.gone;
}

/* Waits until the directory's entry of fp is in state (on host, when not NULL). */
static void wait_entry(const char *fp, enum bh_fleet_entry_state state, const char *host,
		       struct bh_fleet_entry *out)
{
	struct bh_fleet_entry e = {0};
	bool ok = false;
	for (int i = 0; i < 300 && !ok; i++) {
		ok = bh_fleet_lookup(F.watch, fp, &e) == 0 && e.state == state &&
		     (!host || !strcmp(e.host, host));
		if (!ok)
			pump(50);
	}
	cr_assert(ok, "the directory never said %s on %s for %.12s (it says %s on %s)",
		  bh_fleet_entry_state_name(state), host ? host : "any host", fp,
		  bh_fleet_entry_state_name(e.state), e.host);
	if (out)
		*out = e;
}

static void set_drain(const char *id, bool on)
{
	cr_assert_eq(bh_fleet_set_drain(F.watch, id, on, NULL, NULL), 0);
	for (int i = 0; i < 200 && bh_fleet_draining(F.watch, id) != on; i++)
		pump(50);
	cr_assert_eq(bh_fleet_draining(F.watch, id), on);
	/* The host reads it and publishes draining with its next heartbeat. */
	for (int i = 0; i < 200; i++) {
		struct bh_fleet_host h;
		if (bh_fleet_host(F.watch, id, &h) == 0 && h.draining == on)
			return;
		pump(50);
	}
	cr_assert_fail("host %s never published draining=%d", id, on);
}

/* ---- the hosts ---- */

static void host_extra(int i, char *out, size_t n)
{
	snprintf(out, n,
		 "--fleet '%s' --host-id %s --images-dir '%s' --fleet-heartbeat-ms %d "
		 "--fleet-gone-ms %d --shutdown hibernate%s%s",
		 nats_cluster_urls(F.nats), host_id(i), F.images, HEARTBEAT_MS, GONE_MS,
		 F.tier_of[i] ? " --tier " : "", F.tier_of[i] ? F.tier_of[i] : "");
}

/* Hosts after the first share its clients file and tokens: every host of a
 * fleet has the same one. */
static void host_start(int i)
{
	char extra[8192];
	host_extra(i, extra, sizeof extra);
	struct daemon *d = &F.host[i];
	if (i == 0) {
		daemon_start(d, extra);
		return;
	}
	const struct daemon *first = &F.host[0];
	memset(d, 0, sizeof *d);
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(d->dir, sizeof d->dir, "%s/daemon-XXXXXX", root && *root ? root : "/tmp/bulkhead-tests");
	cr_assert_not_null(mkdtemp(d->dir));
	chmod(d->dir, 0711);
	char dir[sizeof d->dir];
	memcpy(dir, d->dir, sizeof dir);
	snprintf(d->sock, sizeof d->sock, "%s/sock", dir);
	char cmd[12000];
	snprintf(cmd, sizeof cmd, "cp '%s/clients' '%s/clients'", first->dir, d->dir);
	cr_assert_eq(system(cmd), 0);
	memcpy(d->run_token, first->run_token, sizeof d->run_token);
	memcpy(d->op_token, first->op_token, sizeof d->op_token);
	memcpy(d->both_token, first->both_token, sizeof d->both_token);
	memcpy(d->other_token, first->other_token, sizeof d->other_token);
	daemon_restart(d, extra);
}

static void fleet_up(void)
{
	F.nats = nats_cluster_start(3);
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(F.images, sizeof F.images, "%s/images-XXXXXX", root && *root ? root : "/tmp/bulkhead-tests");
	cr_assert_not_null(mkdtemp(F.images));
	chmod(F.images, 0711);
	struct bh_fleet_config fc = {.servers = nats_cluster_urls(F.nats)};
	char *why = NULL;
	cr_assert_eq(bh_fleet_open(&fc, &F.watch, &why), 0, "observer: %s", why);
	for (int i = 0; i < HOSTS; i++)
		host_start(i);
	wait_live_hosts(HOSTS);
}

static void fleet_down(void)
{
	for (int i = 0; i < HOSTS; i++)
		if (F.host[i].dir[0])
			daemon_stop(&F.host[i]);
	if (F.watch)
		bh_fleet_close(F.watch);
	F.watch = NULL;
	if (F.nats)
		nats_cluster_stop(F.nats);
	F.nats = NULL;
	if (F.images[0])
		harness_remove_dir(F.images);
	F.images[0] = '\0';
	memset(F.tier_of, 0, sizeof F.tier_of);
}

/* kill -9: nothing of the host's own shutdown runs. */
static void host_kill(int i)
{
	struct daemon *d = &F.host[i];
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	d->pid = 0;
}

TestSuite(fleet_daemon, .init = NULL, .fini = fleet_down, .timeout = 300);

/* ---- clients ---- */

static bh_client *client_for(int i, const char *token)
{
	struct bh_client_options o = {.target = F.host[i].sock, .token = token};
	bh_client *c = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_new(&o, &c, &err), 0, "client: %s", err ? err->message : "");
	return c;
}

/* One python cell; its stdout. */
static char *cell(bh_client_session *s, const char *code)
{
	struct bh_client_cell c = {.language = BH_LANG_PYTHON, .code = code};
	struct wire_session_run_response r;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_run(s, &c, &r, &err), 0, "cell %s: %s", code,
		     err ? err->message : "");
	cr_assert(r.has_run);
	char *out = strndup((const char *)r.run.result.out, r.run.result.out_len);
	wire_session_run_response_free(&r);
	return out;
}

/* Continues a session's chain through another host's client. */
static bh_client_session *adopt_on(bh_client *c, const char *id, const bh_client_session *from)
{
	struct bh_client_session_view v;
	uint64_t calls = 0;
	const char *last = "";
	if (from) {
		bh_client_session_get(from, &v);
		cr_assert_null(v.stopped, "the chain stopped: %s", v.stopped);
		calls = v.calls;
		last = v.last_record_sha256;
	}
	bh_client_session *s = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_adopt(c, id, calls, last, BH_TIER_UNKNOWN, &s, &err), 0,
		     "adopt: %s", err ? err->message : "");
	return s;
}

static long metric(int i, const char *name)
{
	struct answer *a = daemon_get_as(&F.host[i], F.host[i].op_token, "/metrics");
	cr_assert_eq(a->status, 200);
	long v = 0;
	const char *p = strstr(a->body, name);
	while (p && p > a->body && p[-1] != '\n')
		p = strstr(p + 1, name);
	if (p)
		v = atol(p + strlen(name) + 1);
	answer_free(a);
	return v;
}

static long forwarded_everywhere(void)
{
	long n = 0;
	for (int i = 0; i < HOSTS; i++)
		if (F.host[i].pid > 0)
			n += metric(i, "bulkhead_fleet_served_total");
	return n;
}

/* ---- (1) one session, three hosts, one chain ---- */

Test(fleet_daemon, a_session_opened_through_one_host_keeps_its_state_and_chain_through_the_others)
{
	fleet_up();
	struct daemon_session ds;
	daemon_open_session(&F.host[0], &ds);
	struct bh_fleet_entry where;
	wait_entry(ds.fp, BH_FLEET_LIVE, NULL, &where);

	bh_client *ca = client_for(0, F.host[0].run_token);
	bh_client *cb = client_for(1, F.host[1].run_token);
	bh_client *cc = client_for(2, F.host[2].run_token);
	bh_client_session *sa = adopt_on(ca, ds.id, NULL);
	char *out = cell(sa, "x = 41\nprint(x)");
	cr_assert_str_eq(out, "41\n");
	free(out);
	bh_client_session *sb = adopt_on(cb, ds.id, sa);
	out = cell(sb, "x += 1\nprint(x)");
	cr_assert_str_eq(out, "42\n", "the variable did not survive the hop to host B: %s", out);
	free(out);
	bh_client_session *sc = adopt_on(cc, ds.id, sb);
	out = cell(sc, "print(x * 2)");
	cr_assert_str_eq(out, "84\n");
	free(out);
	/* The close's count and last digest must be the chain C saw: one chain. */
	struct wire_close_session_response cr;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_close(sc, &cr, &err), 0, "close: %s", err ? err->message : "");
	cr_assert_eq(cr.calls, 3, "the owner counts %llu calls", (unsigned long long)cr.calls);
	wire_close_session_response_free(&cr);
	struct bh_client_session_view v;
	bh_client_session_get(sc, &v);
	cr_assert_null(v.stopped, "C's chain check stopped: %s", v.stopped);
	cr_assert_eq(v.calls, 3);
	/* Two of the three cells (at least) were another host's to answer. */
	cr_assert_geq(forwarded_everywhere(), 2, "calls were not forwarded to the owner %s",
		      where.host);
	bh_client_session_free(sa);
	bh_client_session_free(sb);
	bh_client_session_free(sc);
	bh_client_free(ca);
	bh_client_free(cb);
	bh_client_free(cc);
	/* Ended: out of the directory. */
	for (int i = 0; i < 100 && bh_fleet_lookup(F.watch, ds.fp, &where) == 0; i++)
		pump(50);
	cr_assert_neq(bh_fleet_lookup(F.watch, ds.fp, &where), 0, "a closed session stays listed");
}

/* ---- an unknown id answers the same from every host ---- */

Test(fleet_daemon, an_unknown_or_foreign_session_id_answers_the_same_from_every_host)
{
	fleet_up();
	struct daemon_session ds;
	daemon_open_session(&F.host[0], &ds);
	wait_entry(ds.fp, BH_FLEET_LIVE, NULL, NULL);
	char *bodies[2] = {daemon_cell_body("0123456789abcdef0123456789abcdef", "python", "print(1)"),
			   daemon_cell_body(ds.id, "python", "print(1)")};
	char *first[2] = {NULL, NULL};
	for (int i = 0; i < HOSTS; i++) {
		for (int k = 0; k < 2; k++) {
			/* The unknown id as the owner; the real one as a stranger. */
			const char *tok = k == 0 ? F.host[i].run_token : F.host[i].other_token;
			struct answer *a = daemon_call(&F.host[i], tok,
						       "plimsoll.v1.SandboxService/SessionRun", bodies[k]);
			cr_assert_eq(a->status, 404, "host %d: %ld %s", i, a->status, a->body);
			if (!first[k])
				first[k] = strdup(a->body);
			cr_assert_str_eq(a->body, first[k], "host %d answers otherwise: %s", i, a->body);
			answer_free(a);
		}
	}
	cr_assert_str_eq(first[0], first[1], "a stranger learns the id exists");
	free(first[0]);
	free(first[1]);
	free(bodies[0]);
	free(bodies[1]);
}

/* ---- (2) a host killed with a hibernated and a live session ---- */

static void manager_run(bh_manager *m, const char *code, struct bh_exec_output *out)
{
	struct bh_exec_input in = {.language = BH_LANG_PYTHON, .code = code};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_run(m, "run-1", "alice", &in, out, &err), 0, "manager: %s",
		     err ? err->message : "");
}

Test(fleet_daemon, a_killed_host_s_hibernated_session_is_adopted_and_its_live_one_ends_host_lost)
{
	fleet_up();
	/* Everything on host A: the others drain while the sessions open. */
	set_drain(host_id(1), true);
	set_drain(host_id(2), true);
	/* H: opened through A, a variable set, hibernated. */
	struct daemon_session h;
	daemon_open_session(&F.host[0], &h);
	wait_entry(h.fp, BH_FLEET_LIVE, host_id(0), NULL);
	bh_client *ca = client_for(0, F.host[0].run_token);
	bh_client_session *ha = adopt_on(ca, h.id, NULL);
	char *out = cell(ha, "kept = 'the variables of host A'\nprint(len(kept))");
	cr_assert_str_eq(out, "23\n");
	free(out);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", h.fp);
	struct answer *a = daemon_call(&F.host[0], F.host[0].op_token,
				       "bulkhead.v1.OperatorService/Hibernate", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	wait_entry(h.fp, BH_FLEET_HIBERNATED, host_id(0), NULL);
	/* L: the manager's conversation, through host B, placed on A. */
	bh_client *mb = client_for(1, F.host[1].run_token);
	struct bh_manager_options mo;
	bh_manager_defaults(&mo);
	mo.client = mb;
	mo.token = F.host[1].run_token;
	bh_manager *m = NULL;
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_manager_new(&mo, &m, &err), 0);
	struct bh_exec_output o1 = {0};
	manager_run(m, "n = 7\nprint(n)", &o1);
	cr_assert_str_eq(o1.stdout_text, "7\n");
	bh_exec_output_free(&o1);
	set_drain(host_id(1), false);
	set_drain(host_id(2), false);

	host_kill(0);
	for (int i = 0; i < 200 && !host_gone(host_id(0)); i++)
		pump(50);
	cr_assert(host_gone(host_id(0)), "host A is still listed live after its death");

	/* H answers through B with its variables, its chain going on. */
	bh_client *cb = client_for(1, F.host[1].run_token);
	bh_client_session *hb = adopt_on(cb, h.id, ha);
	out = cell(hb, "print(kept)");
	cr_assert_str_eq(out, "the variables of host A\n", "adopted without its state: %s", out);
	free(out);
	struct bh_client_session_view v;
	bh_client_session_get(hb, &v);
	cr_assert_null(v.stopped, "the chain broke at adoption: %s", v.stopped);
	cr_assert_eq(v.calls, 2);
	/* Awake on its new host, which the directory now names. */
	struct bh_fleet_entry e;
	wait_entry(h.fp, BH_FLEET_LIVE, host_id(1), &e);
	cr_assert_geq(metric(1, "bulkhead_fleet_adoptions_total") +
			      metric(2, "bulkhead_fleet_adoptions_total"), 1);

	/* L: refused host_lost; the manager's one retry opens a fresh sandbox
	 * on a live host. */
	struct bh_exec_output o2 = {0};
	manager_run(m, "print('after')", &o2);
	cr_assert(o2.retried, "the manager did not retry after host_lost");
	cr_assert(o2.fresh_sandbox);
	cr_assert_str_eq(o2.stdout_text, "after\n");
	bh_exec_output_free(&o2);
	struct bh_manager_entry me;
	cr_assert_eq(bh_manager_entries(m, &me, 1), 1);
	struct bh_fleet_entry fresh;
	wait_entry(me.fingerprint, BH_FLEET_LIVE, NULL, &fresh);
	cr_assert_str_neq(fresh.host, host_id(0), "the retry landed on the dead host");
	cr_assert_geq(metric(1, "bulkhead_fleet_host_lost_total"), 1);

	bh_manager_dispose_all(m);
	bool done = false;
	bh_manager_wait(m, &done, 2000);
	bh_manager_free(m);
	bh_client_session_free(ha);
	bh_client_session_free(hb);
	bh_client_free(ca);
	bh_client_free(cb);
	bh_client_free(mb);
	/* The dead host comes back with its id: its lost entries say host_lost
	 * and its leftovers are gc'd by daemon_stop. */
	char extra[8192];
	host_extra(0, extra, sizeof extra);
	daemon_restart(&F.host[0], extra);
	wait_live_hosts(HOSTS);
}

/* ---- a restarted host with the same id ---- */

Test(fleet_daemon, a_host_restarted_with_its_id_rejoins_and_says_host_lost_of_its_lost_sessions)
{
	fleet_up();
	set_drain(host_id(1), true);
	set_drain(host_id(2), true);
	struct daemon_session l;
	daemon_open_session(&F.host[0], &l);
	wait_entry(l.fp, BH_FLEET_LIVE, host_id(0), NULL);
	set_drain(host_id(1), false);
	set_drain(host_id(2), false);
	host_kill(0);
	for (int i = 0; i < 200 && !host_gone(host_id(0)); i++)
		pump(50);
	cr_assert(host_gone(host_id(0)));
	char extra[8192];
	host_extra(0, extra, sizeof extra);
	/* The same id, once its old heartbeat is stale. */
	daemon_restart(&F.host[0], extra);
	wait_live_hosts(HOSTS);
	wait_entry(l.fp, BH_FLEET_ENDED, NULL, NULL);
	for (int i = 0; i < HOSTS; i++) {
		char *b = daemon_cell_body(l.id, "python", "print(1)");
		struct answer *a = daemon_call(&F.host[i], F.host[i].run_token,
					       "plimsoll.v1.SandboxService/SessionRun", b);
		free(b);
		cr_assert_eq(a->status, 400, "host %d: %ld %s", i, a->status, a->body);
		cr_assert(strstr(a->body, "host_lost") || strstr(a->body, "host-a"),
			  "host %d: %s", i, a->body);
		answer_free(a);
	}
}

/* ---- (3) a NATS node killed during a stream of calls ---- */

Test(fleet_daemon, a_nats_node_killed_during_calls_loses_no_answered_record_and_leaks_nothing)
{
	fleet_up();
	struct daemon_session ds;
	daemon_open_session(&F.host[0], &ds);
	struct bh_fleet_entry where;
	wait_entry(ds.fp, BH_FLEET_LIVE, NULL, &where);
	int owner = -1;
	for (int i = 0; i < HOSTS; i++)
		if (!strcmp(where.host, host_id(i)))
			owner = i;
	cr_assert_geq(owner, 0);
	char digests[24][65];
	int answered = 0;
	char last_refusal[600] = ""; /* what the first unanswered call got, for the message */
	for (int k = 0; k < 24; k++) {
		if (k == 8)
			nats_cluster_kill(F.nats, 0);
		int via = (owner + 1 + k % 2) % HOSTS; /* never the owner: forwarded */
		char code[64];
		snprintf(code, sizeof code, "print(%d)", k);
		struct answer *a = daemon_cell(&F.host[via], F.host[via].run_token, ds.id, "python", code);
		if (a->status == 200) {
			struct wire_session_run_response r;
			struct wire_status st;
			cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s",
				     st.msg);
			cr_assert(r.run.has_record);
			snprintf(digests[answered++], 65, "%s", r.run.record.record_sha256);
			wire_session_run_response_free(&r);
		} else if (!last_refusal[0]) {
			snprintf(last_refusal, sizeof last_refusal, "call %d through host %d: %ld %.500s",
				 k, via, a->status, a->body);
		}
		answer_free(a);
	}
	fprintf(stderr, "%d of 24 calls answered with a NATS node killed after the 8th\n", answered);
	cr_assert_geq(answered, 20, "only %d of 24 calls were answered with a NATS node down; %s",
		      answered, last_refusal);
	/* Every answered record is in the owner's store, and its chain verifies. */
	char cmd[16384];
	snprintf(cmd, sizeof cmd, "BULKHEAD_INTERP='%s' %s verify --state '%s/state' >/dev/null 2>&1",
		 BH_TEST_INTERP, BH_TEST_CLI, F.host[owner].dir);
	cr_assert_eq(system(cmd), 0, "bulkhead verify failed on the owner's store");
	char sessions[4096];
	snprintf(sessions, sizeof sessions, "{\"session\":\"%s\",\"limit\":100}", ds.fp);
	struct answer *a = daemon_call(&F.host[owner], F.host[owner].op_token,
				       "bulkhead.v1.OperatorService/ListRecords", sessions);
	cr_assert_eq(a->status, 200, "%s", a->body);
	for (int k = 0; k < answered; k++)
		cr_assert_not_null(strstr(a->body, digests[k]), "answered record %s is in no store",
				   digests[k]);
	answer_free(a);
	/* No sandbox that no host lists: every host's sandboxes are its
	 * sessions (the owner's one), nothing else. */
	for (int i = 0; i < HOSTS; i++) {
		a = daemon_call(&F.host[i], F.host[i].op_token, "bulkhead.v1.OperatorService/Leftovers",
				"{}");
		cr_assert_eq(a->status, 200, "%s", a->body);
		cr_assert_null(strstr(a->body, "\"kind\""), "host %d has leftovers: %s", i, a->body);
		answer_free(a);
	}
}

/* ---- joining ---- */

Test(fleet_daemon, a_daemon_that_cannot_reach_nats_refuses_to_start_saying_why)
{
	/* A loopback port nobody listens on: bound, then closed. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sl), 0);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	int port = ntohs(sa.sin_port);
	close(fd);
	char dir[4096];
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(dir, sizeof dir, "%s/nojoin-XXXXXX", root && *root ? root : "/tmp/bulkhead-tests");
	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0711);
	char cmd[16384];
	snprintf(cmd, sizeof cmd,
		 "BULKHEAD_INTERP='%s' timeout 60 %s serve --state '%s/state' --socket '%s/sock' "
		 "--open --no-config --fleet nats://127.0.0.1:%d --host-id lonely 2>&1 </dev/null",
		 BH_TEST_INTERP, BH_TEST_CLI, dir, dir, port);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char out[8192] = "";
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	harness_remove_dir(dir);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 124,
		  "serve started without its fleet: %s", out);
	cr_assert_null(strstr(out, "ready "), "%s", out);
	char want[64];
	snprintf(want, sizeof want, "127.0.0.1:%d", port);
	cr_assert(strstr(out, "cannot join") && strstr(out, want), "the reason is not given: %s", out);
}

/* ---- drain ---- */

Test(fleet_daemon, a_drained_host_hibernates_its_idle_sessions_and_new_ones_open_elsewhere)
{
	fleet_up();
	set_drain(host_id(0), true);
	set_drain(host_id(2), true);
	struct daemon_session ds;
	daemon_open_session(&F.host[1], &ds); /* placed on B, the one undrained */
	wait_entry(ds.fp, BH_FLEET_LIVE, host_id(1), NULL);
	answer_free(daemon_cell(&F.host[1], F.host[1].run_token, ds.id, "python", "y = 5"));
	set_drain(host_id(0), false);
	set_drain(host_id(2), false);
	set_drain(host_id(1), true);
	/* Its idle kernel-tier session goes to disk, by the drain's name. */
	wait_entry(ds.fp, BH_FLEET_HIBERNATED, host_id(1), NULL);
	struct answer *a = daemon_call(&F.host[1], F.host[1].op_token,
				       "bulkhead.v1.OperatorService/ListEvents", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "fleet:drain"), "no event names the drain: %s", a->body);
	answer_free(a);
	/* A session opened through the drained host is placed on another. */
	struct daemon_session other;
	daemon_open_session(&F.host[1], &other);
	struct bh_fleet_entry e;
	wait_entry(other.fp, BH_FLEET_LIVE, NULL, &e);
	cr_assert_str_neq(e.host, host_id(1), "a drained host still takes new sessions");
	/* Live state did not move: the hibernated one wakes on its host with its variable. */
	a = daemon_cell(&F.host[0], F.host[0].run_token, ds.id, "python", "print(y)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.run.result.out_len == 2 && !memcmp(r.run.result.out, "5\n", 2),
		  "y is not 5 after the drain: %s", a->body);
	wire_session_run_response_free(&r);
	answer_free(a);
}

/* ---- placement by floor: the container tier where it matters ---- */

Test(fleet_daemon, an_open_whose_floor_its_host_cannot_meet_is_placed_on_a_host_that_can)
{
	F.tier_of[1] = "container"; /* host B gives the container tier only */
	fleet_up();
	struct answer *a = daemon_call(&F.host[1], F.host[1].run_token,
				       "plimsoll.v1.SandboxService/OpenSession",
				       "{\"protocol\":3,\"minimumIsolation\":\"kernel\"}");
	cr_assert_eq(a->status, 200, "a kernel floor through a container host: %s", a->body);
	struct wire_open_session_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_open_session_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert_str_eq(r.isolation, "kernel");
	struct bh_fleet_entry e;
	wait_entry(r.session, BH_FLEET_LIVE, NULL, &e);
	cr_assert_str_neq(e.host, host_id(1), "placed on the host that cannot meet its floor");
	/* Its cells through B reach it there. */
	char id[64];
	snprintf(id, sizeof id, "%s", r.session_id);
	wire_open_session_response_free(&r);
	answer_free(a);
	a = daemon_cell(&F.host[1], F.host[1].run_token, id, "python", "print(6 * 7)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	/* A fresh Run stays on B, at B's tier. */
	a = daemon_call(&F.host[1], F.host[1].run_token, "plimsoll.v1.SandboxService/Run",
			"{\"protocol\":3,\"javascript\":{\"code\":\"console.log(1)\"}}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\"container\""), "%s", a->body);
	answer_free(a);
	cr_assert_eq(metric(1, "bulkhead_fleet_served_total"), 0, "B served a forwarded call");
}

Test(fleet_daemon, a_call_through_a_container_host_for_a_lost_hibernated_session_is_adopted_by_a_kernel_host)
{
	F.tier_of[1] = "container";
	fleet_up();
	set_drain(host_id(1), true);
	set_drain(host_id(2), true);
	struct daemon_session h;
	daemon_open_session(&F.host[0], &h);
	wait_entry(h.fp, BH_FLEET_LIVE, host_id(0), NULL);
	struct answer *a = daemon_cell(&F.host[0], F.host[0].run_token, h.id, "python", "z = 'kept'");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", h.fp);
	a = daemon_call(&F.host[0], F.host[0].op_token, "bulkhead.v1.OperatorService/Hibernate", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	wait_entry(h.fp, BH_FLEET_HIBERNATED, host_id(0), NULL);
	set_drain(host_id(1), false);
	set_drain(host_id(2), false);
	host_kill(0);
	for (int i = 0; i < 200 && !host_gone(host_id(0)); i++)
		pump(50);
	/* B cannot restore a kernel image: C, which can, adopts it. */
	a = daemon_cell(&F.host[1], F.host[1].run_token, h.id, "python", "print(z)");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_session_run_response r;
	struct wire_status st;
	cr_assert_eq(wire_decode_session_run_response(a->body, a->len, &r, &st), 0, "%s", st.msg);
	cr_assert(r.run.result.out_len == 5 && !memcmp(r.run.result.out, "kept\n", 5), "%s", a->body);
	cr_assert_str_eq(r.run.isolation, "kernel");
	wire_session_run_response_free(&r);
	answer_free(a);
	wait_entry(h.fp, BH_FLEET_LIVE, host_id(2), NULL);
	cr_assert_eq(metric(2, "bulkhead_fleet_adoptions_total"), 1);
	char extra[8192];
	host_extra(0, extra, sizeof extra);
	daemon_restart(&F.host[0], extra);
}

/* ---- a host killed in the middle of a call ---- */

struct cell_wait {
	bool done;
	bool answered;
	struct bh_client_error *err;
};

static void on_cell_done(void *arg, struct wire_session_run_response *res,
			 const struct bh_client_error *err)
{
	struct cell_wait *w = arg;
	w->done = true;
	w->answered = res != NULL;
	if (res)
		wire_session_run_response_free(res);
	if (err)
		w->err = bh_client_error_dup(err);
}

Test(fleet_daemon, a_call_in_flight_on_a_host_killed_meanwhile_is_answered_host_lost_within_gone_ms)
{
	fleet_up();
	set_drain(host_id(1), true);
	set_drain(host_id(2), true);
	struct daemon_session ds;
	daemon_open_session(&F.host[0], &ds);
	wait_entry(ds.fp, BH_FLEET_LIVE, host_id(0), NULL);
	set_drain(host_id(1), false);
	set_drain(host_id(2), false);
	bh_client *cb = client_for(1, F.host[1].run_token);
	bh_client_session *s = adopt_on(cb, ds.id, NULL);
	struct bh_client_cell cell = {.language = BH_LANG_PYTHON,
				      .code = "import time\ntime.sleep(60)\nprint('never')"};
	struct cell_wait w = {0};
	struct bh_client_error *err = NULL;
	cr_assert_eq(bh_client_session_run_async(s, &cell, on_cell_done, &w, &err), 0);
	bh_client_wait(cb, &w.done, 2000); /* the cell runs on A, through B */
	cr_assert(!w.done, "the cell ended before its host was killed");
	uint64_t killed = now_mono_ms();
	host_kill(0);
	bh_client_wait(cb, &w.done, 20000);
	uint64_t took = now_mono_ms() - killed;
	cr_assert(w.done, "the call through B still waits on its dead host");
	cr_assert(!w.answered);
	cr_assert_not_null(w.err);
	cr_assert(w.err->session_ended && !w.err->not_dispatched, "%s", w.err->message);
	cr_assert_not_null(strstr(w.err->end_detail, "host_lost"), "%s", w.err->end_detail);
	cr_assert_lt(took, (uint64_t)GONE_MS + 5000, "answered %llu ms after the kill",
		     (unsigned long long)took);
	bh_client_error_free(w.err);
	/* The next call, on any host, says host_lost too (nothing ran). */
	char *b = daemon_cell_body(ds.id, "python", "print(1)");
	struct answer *a = daemon_call(&F.host[2], F.host[2].run_token,
				       "plimsoll.v1.SandboxService/SessionRun", b);
	free(b);
	cr_assert_eq(a->status, 400, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "host_lost"), "%s", a->body);
	answer_free(a);
	bh_client_session_free(s);
	bh_client_free(cb);
	char extra[8192];
	host_extra(0, extra, sizeof extra);
	daemon_restart(&F.host[0], extra);
}
