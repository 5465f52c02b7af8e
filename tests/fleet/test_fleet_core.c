/* libbulkhead-fleet against a real nats-server cluster on loopback
 * (tests/fleet/nats_cluster.h): hosts and their heartbeats, the session
 * directory and its claims, forwarded calls, and the bucket through a NATS
 * node's death and a partition. Each test has its own cluster, its own
 * ports and its own directory under $BULKHEAD_TEST_ROOT, and leaves none of
 * them behind (the harness stops its nodes at exit if a test fails). */
#include "fleet.h"
#include "nats_cluster.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <nats/nats.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#define HB 100u    /* the tests' heartbeat */

/* Every callback runs on the caller's thread (inside bh_fleet_process),
 * never on one of libnats's or the library's: each callback checks. */
static pthread_t caller;
static bool caller_set, off_thread;

static void on_caller_thread(void)
{
	if (!caller_set) {
		caller = pthread_self();
		caller_set = true;
	} else if (!pthread_equal(caller, pthread_self())) {
		off_thread = true;
	}
}
#define GONE 600u  /* and their gone time */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The library's log lines, on stderr with the test's (BH_FLEET_TEST_LOG=1). */
static void test_log(void *arg, enum bh_log_level level, const char *msg)
{
	on_caller_thread();
	if (getenv("BH_FLEET_TEST_LOG"))
		fprintf(stderr, "[%llu] %s: %s\n", (unsigned long long)(mono_ms() % 100000), (const char *)arg, msg);
}

static bh_fleet *open_fleet(const char *servers, const char *id)
{
	on_caller_thread(); /* the test's own thread is the caller */
	struct bh_fleet_config cfg = {.servers = servers,
				      .host_id = id,
				      .heartbeat_ms = HB,
				      .gone_ms = GONE,
				      .connect_timeout_ms = 15000,
				      .log = test_log,
				      .log_arg = (void *)(id ? id : "observer")};
	bh_fleet *f = NULL;
	char *why = NULL;
	int rc = bh_fleet_open(&cfg, &f, &why);
	cr_assert_eq(rc, 0, "bh_fleet_open(%s): %s", id ? id : "observer", why ? why : "?");
	return f;
}

/* Runs every fleet's due callbacks until cond(arg) holds or timeout_ms
 * passes; whether it held. */
static bool pump_until(bh_fleet **fs, size_t n, bool (*cond)(void *), void *arg, unsigned timeout_ms)
{
	uint64_t until = mono_ms() + timeout_ms;
	for (;;) {
		if (cond && cond(arg))
			return true;
		if (mono_ms() >= until)
			return false;
		struct pollfd p[8];
		int t = 20;
		for (size_t i = 0; i < n; i++) {
			p[i] = (struct pollfd){.fd = bh_fleet_fd(fs[i]), .events = POLLIN};
			int ft = bh_fleet_timeout_ms(fs[i]);
			if (ft >= 0 && ft < t)
				t = ft;
		}
		poll(p, n, t);
		for (size_t i = 0; i < n; i++)
			bh_fleet_process(fs[i]);
	}
}

struct seen {
	bh_fleet *f;
	const char *id;
	bool want_gone;
};

static bool host_is(void *arg)
{
	struct seen *s = arg;
	struct bh_fleet_host h;
	if (bh_fleet_host(s->f, s->id, &h) < 0)
		return s->want_gone;
	return h.gone == s->want_gone;
}

static bool host_present_live(bh_fleet *f, const char *id, unsigned timeout_ms)
{
	struct seen s = {f, id, false};
	return pump_until(&f, 1, host_is, &s, timeout_ms);
}

/* ---- a member in a process of its own (tests/fleet/fleet_member.c) ---- */

struct member_proc {
	pid_t pid;
	int in; /* its stdin: closing it is a clean close */
	FILE *out;
	char line[512];
};

static void member_spawn(struct member_proc *m, const char *servers, const char *id, bool echo)
{
	int in[2], out[2];
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	char hb[16], gone[16];
	snprintf(hb, sizeof hb, "%u", HB);
	snprintf(gone, sizeof gone, "%u", GONE);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(BH_FLEET_MEMBER, "fleet_member", "--servers", servers, "--id", id, "--heartbeat-ms", hb,
		      "--gone-ms", gone, echo ? "--echo" : NULL, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	m->pid = pid;
	m->in = in[1];
	m->out = fdopen(out[0], "r");
	cr_assert_not_null(fgets(m->line, sizeof m->line, m->out), "fleet_member %s said nothing", id);
}

static void member_kill9(struct member_proc *m)
{
	kill(m->pid, SIGKILL);
	waitpid(m->pid, NULL, 0);
	close(m->in);
	fclose(m->out);
	m->pid = 0;
}

static void member_close(struct member_proc *m)
{
	close(m->in);
	int st = 0;
	waitpid(m->pid, &st, 0);
	fclose(m->out);
	m->pid = 0;
}

/* ---- writing the bucket directly (as a hostile or broken host would) ---- */

static void raw_put(const char *servers, const char *key, const char *value)
{
	natsOptions *o = NULL;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	kvStore *kv = NULL;
	natsOptions_Create(&o);
	cr_assert_eq(natsOptions_SetURL(o, servers), NATS_OK);
	cr_assert_eq(natsConnection_Connect(&nc, o), NATS_OK);
	cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	cr_assert_eq(js_KeyValue(&kv, js, BH_FLEET_BUCKET), NATS_OK);
	cr_assert_eq(kvStore_PutString(NULL, kv, key, value), NATS_OK, "put %s", key);
	kvStore_Destroy(kv);
	jsCtx_Destroy(js);
	natsConnection_Close(nc);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(o);
}

/* ---- entries ---- */

static void fp_of(char out[65], int n)
{
	snprintf(out, 65, "%064x", n);
}

static struct bh_fleet_entry hibernated_entry(int n)
{
	struct bh_fleet_entry e = {0};
	fp_of(e.fingerprint, n);
	e.state = BH_FLEET_HIBERNATED;
	struct bh_hibernated *h = &e.hib;
	snprintf(h->fingerprint, sizeof h->fingerprint, "%s", e.fingerprint);
	snprintf(h->sandbox, sizeof h->sandbox, "bh-test-%d", n);
	h->tier = BH_TIER_KERNEL;
	h->floor = BH_TIER_CONTAINER;
	snprintf(h->principal, sizeof h->principal, "alice");
	snprintf(h->owner, sizeof h->owner, "agent-7");
	snprintf(h->run_key, sizeof h->run_key, "run-%d", n);
	h->languages = 1u << BH_LANG_PYTHON;
	h->calls = 12;
	memset(h->last_record_sha256, 'a', 64);
	h->created_unix_ms = 1764650000000;
	h->last_call_unix_ms = 1764650001000;
	h->hibernated_unix_ms = 1764650002000;
	h->lifetime_ms = 3600000;
	h->awake_ms = 1234;
	return e;
}

struct lookup_arg {
	bh_fleet *f;
	const char *fp;
	const char *host;
	enum bh_fleet_entry_state state;
};

static bool entry_is(void *arg)
{
	struct lookup_arg *a = arg;
	struct bh_fleet_entry e;
	return bh_fleet_lookup(a->f, a->fp, &e) == 0 && !strcmp(e.host, a->host) && e.state == a->state;
}

/* ---- hosts ---- */

Test(fleet, two_members_and_an_observer_see_each_others_host_records, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(3);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "host-a");
	bh_fleet *b = open_fleet(nats_cluster_urls(c), "host-b");
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	cr_assert_null(bh_fleet_host_id(o), "an observer has no id");
	cr_assert_str_eq(bh_fleet_host_id(a), "host-a");
	struct bh_fleet_host me = {0};
	me.tiers = (1u << BH_TIER_CONTAINER) | (1u << BH_TIER_KERNEL);
	me.best_tier = BH_TIER_KERNEL;
	me.sessions = 3;
	me.memory_budget_mb = 4096;
	me.memory_used_mb = 1000;
	me.load1 = 0.25;
	snprintf(me.api, sizeof me.api, "http://127.0.0.1:9999");
	snprintf(me.version, sizeof me.version, "0.1.0");
	bh_fleet_set_host(a, &me);
	bh_fleet *all[] = {a, b, o};
	struct bh_fleet_host h, hb;
	bool ok = false;
	uint64_t until = mono_ms() + 10000;
	while (!ok && mono_ms() < until) {
		pump_until(all, 3, NULL, NULL, 50);
		ok = bh_fleet_host(o, "host-a", &h) == 0 && h.sessions == 3 && bh_fleet_host(o, "host-b", &hb) == 0;
	}
	cr_assert(ok, "the observer sees host-a's figures and host-b");
	cr_assert_eq(h.tiers, me.tiers);
	cr_assert_eq(h.best_tier, BH_TIER_KERNEL);
	cr_assert_eq(h.memory_budget_mb, 4096);
	cr_assert_eq(h.memory_used_mb, 1000);
	cr_assert_float_eq(h.load1, 0.25, 1e-9);
	cr_assert_str_eq(h.api, "http://127.0.0.1:9999");
	cr_assert_str_eq(h.version, "0.1.0");
	cr_assert_not(h.gone);
	cr_assert_neq(h.incarnation, 0);
	cr_assert(host_present_live(a, "host-b", 5000), "host-a sees host-b");
	cr_assert(host_present_live(b, "host-a", 5000), "host-b sees host-a");
	struct bh_fleet_host *list = NULL;
	size_t n = bh_fleet_hosts(o, &list);
	cr_assert_eq(n, 2, "two hosts, the observer none");
	cr_assert_str_eq(list[0].id, "host-a", "sorted by id");
	cr_assert_str_eq(list[1].id, "host-b");
	free(list);
	/* placement: the floor, then the most memory left */
	char where[BH_FLEET_ID_MAX + 1];
	cr_assert_eq(bh_fleet_place(o, BH_TIER_KERNEL, where), 0);
	cr_assert_str_eq(where, "host-a", "only host-a proves kernel");
	cr_assert_eq(bh_fleet_place(o, BH_TIER_VM, where), -1, "nobody proves vm");
	struct bh_fleet_status st;
	bh_fleet_get_status(a, &st);
	cr_assert(st.connected);
	cr_assert(st.fresh, "a member whose heartbeats come back is fresh");
	cr_assert(strstr(st.server, "nats://127.0.0.1:"), "connected to %s", st.server);
	bh_fleet_get_status(o, &st);
	cr_assert(st.fresh, "an observer that read the bucket is fresh");
	bh_fleet_close(o);
	bh_fleet_close(b);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

Test(fleet, a_killed_member_is_gone_after_gone_ms_and_a_clean_close_is_gone_at_once, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	struct member_proc m;
	member_spawn(&m, nats_cluster_urls(c), "doomed", false);
	cr_assert(!strncmp(m.line, "ready", 5), "fleet_member: %s", m.line);
	cr_assert(host_present_live(o, "doomed", 5000), "the observer sees the member live");
	member_kill9(&m);
	uint64_t killed = mono_ms();
	struct seen s = {o, "doomed", true};
	cr_assert(pump_until(&o, 1, host_is, &s, GONE * 4), "a killed member goes gone");
	uint64_t took = mono_ms() - killed;
	cr_assert_geq(took, GONE - 2 * HB, "gone after about gone_ms (%llu ms), not before", (unsigned long long)took);
	cr_assert_leq(took, GONE + 4 * HB, "gone after about gone_ms (%llu ms)", (unsigned long long)took);
	struct bh_fleet_host h;
	cr_assert_eq(bh_fleet_host(o, "doomed", &h), 0, "a gone host is still listed, gone");
	cr_assert(h.gone);

	struct member_proc lv;
	member_spawn(&lv, nats_cluster_urls(c), "leaver", false);
	cr_assert(host_present_live(o, "leaver", 5000));
	uint64_t closed = mono_ms();
	member_close(&lv); /* its stdin closed: bh_fleet_close */
	struct seen s2 = {o, "leaver", true};
	cr_assert(pump_until(&o, 1, host_is, &s2, GONE), "a clean close is seen at once");
	cr_assert_lt(mono_ms() - closed, GONE / 2, "well before gone_ms");
	bh_fleet_close(o);
	nats_cluster_stop(c);
}

Test(fleet, a_second_member_under_a_live_id_is_refused_and_a_stale_one_is_taken_over, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *first = open_fleet(nats_cluster_urls(c), "same");
	struct bh_fleet_config cfg = {.servers = nats_cluster_urls(c), .host_id = "same", .heartbeat_ms = HB,
				      .gone_ms = GONE};
	bh_fleet *second = NULL;
	char *why = NULL;
	/* first is heartbeating on this thread's behalf: its writer thread does not need process() */
	cr_assert_eq(bh_fleet_open(&cfg, &second, &why), -1, "two hosts never share an id");
	cr_assert_null(second);
	cr_assert(why && strstr(why, "same") && strstr(why, "live"), "why: %s", why);
	free(why);
	why = NULL;
	/* a clean leave frees the id at once */
	bh_fleet_close(first);
	uint64_t t0 = mono_ms();
	cr_assert_eq(bh_fleet_open(&cfg, &second, &why), 0, "after a clean close: %s", why ? why : "");
	cr_assert_lt(mono_ms() - t0, GONE, "no wait for a key that was deleted");
	bh_fleet_close(second);

	/* a host killed -9 and restarted with its id: its old heartbeat goes stale, then it is taken over */
	struct member_proc m;
	member_spawn(&m, nats_cluster_urls(c), "phoenix", false);
	cr_assert(!strncmp(m.line, "ready", 5), "%s", m.line);
	unsigned long long old_inc = strtoull(m.line + 6, NULL, 16);
	member_kill9(&m);
	bh_fleet *again = open_fleet(nats_cluster_urls(c), "phoenix");
	struct bh_fleet_host h;
	cr_assert_eq(bh_fleet_host(again, "phoenix", &h), 0);
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	uint64_t until = mono_ms() + 5000;
	while (mono_ms() < until && (bh_fleet_host(o, "phoenix", &h) < 0 || h.incarnation == old_inc))
		pump_until(&o, 1, NULL, NULL, 50);
	cr_assert_neq(h.incarnation, old_inc, "the new incarnation heartbeats under the id");
	cr_assert_not(h.gone);
	bh_fleet_close(o);
	bh_fleet_close(again);
	nats_cluster_stop(c);
}

struct racer {
	const char *servers;
	bh_fleet *f;
	char *why;
	int rc;
};

static void *race_open(void *arg)
{
	struct racer *r = arg;
	struct bh_fleet_config cfg = {.servers = r->servers, .host_id = "contested", .heartbeat_ms = HB,
				      .gone_ms = GONE, .connect_timeout_ms = 15000};
	r->rc = bh_fleet_open(&cfg, &r->f, &r->why);
	return NULL;
}

Test(fleet, of_two_hosts_starting_under_one_id_at_once_exactly_one_is_a_member, .timeout = 120)
{
	struct nats_cluster *c = nats_cluster_start(3);
	for (int round = 0; round < 3; round++) {
		struct racer r[2] = {{.servers = nats_cluster_url(c, 1)}, {.servers = nats_cluster_url(c, 2)}};
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			cr_assert_eq(pthread_create(&t[i], NULL, race_open, &r[i]), 0);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		cr_assert_neq(r[0].rc, r[1].rc, "exactly one opens (round %d: %d '%s', %d '%s')", round, r[0].rc,
			      r[0].why ? r[0].why : "", r[1].rc, r[1].why ? r[1].why : "");
		struct racer *loser = r[0].rc ? &r[0] : &r[1], *winner = r[0].rc ? &r[1] : &r[0];
		cr_assert(loser->why && strstr(loser->why, "live"), "why: %s", loser->why);
		free(loser->why);
		bh_fleet_close(winner->f); /* a clean leave: the next round starts from no record */
	}
	nats_cluster_stop(c);
}

/* ---- the directory ---- */

Test(fleet, an_entry_put_by_one_member_is_looked_up_by_another, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(3);
	bh_fleet *a = open_fleet(nats_cluster_url(c, 0), "a");
	bh_fleet *b = open_fleet(nats_cluster_url(c, 2), "b");
	struct bh_fleet_entry e = hibernated_entry(7);
	snprintf(e.host, sizeof e.host, "someone-else"); /* the library sets the member's own */
	cr_assert_eq(bh_fleet_put_entry(a, &e), 0);
	struct lookup_arg la = {b, e.fingerprint, "a", BH_FLEET_HIBERNATED};
	bh_fleet *all[] = {a, b};
	cr_assert(pump_until(all, 2, entry_is, &la, 10000), "b finds a's entry");
	struct bh_fleet_entry got;
	cr_assert_eq(bh_fleet_lookup(b, e.fingerprint, &got), 0);
	cr_assert_str_eq(got.host, "a");
	cr_assert_str_eq(got.hib.sandbox, "bh-test-7");
	cr_assert_str_eq(got.hib.fingerprint, e.fingerprint);
	cr_assert_eq(got.hib.tier, BH_TIER_KERNEL);
	cr_assert_eq(got.hib.floor, BH_TIER_CONTAINER);
	cr_assert_str_eq(got.hib.principal, "alice");
	cr_assert_str_eq(got.hib.owner, "agent-7");
	cr_assert_str_eq(got.hib.run_key, "run-7");
	cr_assert_eq(got.hib.calls, 12);
	cr_assert_eq(got.hib.awake_ms, 1234);
	cr_assert_eq(got.hib.lifetime_ms, 3600000);
	cr_assert_eq(got.hib.hibernated_unix_ms, 1764650002000);
	cr_assert_str_eq(got.hib.last_record_sha256, e.hib.last_record_sha256);
	cr_assert_gt(got.revision, 0);
	cr_assert_gt(got.updated_unix_ms, 0);
	/* ended: a tombstone with its reason */
	struct bh_fleet_entry t = got;
	t.state = BH_FLEET_ENDED;
	t.end_reason = BH_END_HOST_LOST;
	snprintf(t.end_detail, sizeof t.end_detail, "host b is gone");
	cr_assert_eq(bh_fleet_put_entry(b, &t), 0);
	struct lookup_arg lt = {a, e.fingerprint, "b", BH_FLEET_ENDED};
	cr_assert(pump_until(all, 2, entry_is, &lt, 10000));
	cr_assert_eq(bh_fleet_lookup(a, e.fingerprint, &got), 0);
	cr_assert_eq(got.end_reason, BH_END_HOST_LOST);
	cr_assert_str_eq(got.end_detail, "host b is gone");
	struct bh_fleet_entry *list = NULL;
	cr_assert_eq(bh_fleet_entries(a, &list), 1);
	free(list);
	/* deleted: gone from every copy */
	cr_assert_eq(bh_fleet_delete_entry(b, e.fingerprint), 0);
	uint64_t until = mono_ms() + 10000;
	while (bh_fleet_lookup(a, e.fingerprint, &got) == 0 && mono_ms() < until)
		pump_until(all, 2, NULL, NULL, 50);
	cr_assert_eq(bh_fleet_lookup(a, e.fingerprint, &got), -1);
	/* a reader opened now, on a bucket with delete markers, is whole and
	 * stays so: its watch is not remade over and over (the markers count) */
	bh_fleet *late = open_fleet(nats_cluster_urls(c), NULL);
	bh_fleet *three[] = {a, b, late};
	pump_until(three, 3, NULL, NULL, 5000);
	struct bh_fleet_status lst;
	bh_fleet_get_status(late, &lst);
	cr_assert(lst.fresh);
	cr_assert_null(strstr(lst.last_error, "remade"), "last error: %s", lst.last_error);
	cr_assert_eq(bh_fleet_lookup(late, e.fingerprint, &got), -1, "a deleted entry is no entry");
	bh_fleet_close(late);
	/* refused at once: what would not check at another host */
	struct bh_fleet_entry bad = hibernated_entry(8);
	snprintf(bad.hib.sandbox, sizeof bad.hib.sandbox, "../escape");
	cr_assert_eq(bh_fleet_put_entry(a, &bad), -1, "a sandbox name that is a path");
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	cr_assert_eq(bh_fleet_put_entry(o, &e), -1, "an observer writes no entry");
	bh_fleet_close(o);
	bh_fleet_close(b);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

struct claim_result {
	bool called, won;
	char why[256];
};

static void on_claim(void *arg, bool won, const char *why)
{
	on_caller_thread();
	struct claim_result *r = arg;
	r->called = true;
	r->won = won;
	snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

static bool both_called(void *arg)
{
	struct claim_result *r = arg;
	return r[0].called && r[1].called;
}

Test(fleet, of_two_members_claiming_one_entry_exactly_one_wins, .timeout = 120)
{
	struct nats_cluster *c = nats_cluster_start(3);
	bh_fleet *owner = open_fleet(nats_cluster_urls(c), "owner");
	bh_fleet *b = open_fleet(nats_cluster_url(c, 1), "claimer-b");
	bh_fleet *d = open_fleet(nats_cluster_url(c, 2), "claimer-c");
	bh_fleet *all[] = {owner, b, d};
	for (int round = 0; round < 5; round++) {
		struct bh_fleet_entry e = hibernated_entry(100 + round);
		cr_assert_eq(bh_fleet_put_entry(owner, &e), 0);
		struct lookup_arg l1 = {b, e.fingerprint, "owner", BH_FLEET_HIBERNATED};
		struct lookup_arg l2 = {d, e.fingerprint, "owner", BH_FLEET_HIBERNATED};
		cr_assert(pump_until(all, 3, entry_is, &l1, 10000));
		cr_assert(pump_until(all, 3, entry_is, &l2, 10000));
		struct bh_fleet_entry seen_b, seen_c;
		cr_assert_eq(bh_fleet_lookup(b, e.fingerprint, &seen_b), 0);
		cr_assert_eq(bh_fleet_lookup(d, e.fingerprint, &seen_c), 0);
		cr_assert_eq(seen_b.revision, seen_c.revision);
		cr_log_info("revision %llu", (unsigned long long)seen_b.revision);
		struct claim_result r[2] = {0};
		cr_assert_eq(bh_fleet_claim(b, &seen_b, &seen_b, on_claim, &r[0]), 0);
		cr_assert_eq(bh_fleet_claim(d, &seen_c, &seen_c, on_claim, &r[1]), 0);
		cr_assert(pump_until(all, 3, both_called, r, 20000), "both claims are answered");
		cr_assert_neq(r[0].won, r[1].won, "exactly one wins (round %d: b %d '%s', c %d '%s')", round, r[0].won,
			      r[0].why, r[1].won, r[1].why);
		const char *winner = r[0].won ? "claimer-b" : "claimer-c";
		const char *loser_why = r[0].won ? r[1].why : r[0].why;
		cr_assert(strstr(loser_why, winner), "the loser hears whose claim came first: %s", loser_why);
		struct lookup_arg lw = {owner, e.fingerprint, winner, BH_FLEET_HIBERNATED};
		cr_assert(pump_until(all, 3, entry_is, &lw, 10000), "the directory names the winner");
	}
	cr_assert_not(off_thread, "a callback ran off the caller's thread");
	bh_fleet_close(d);
	bh_fleet_close(b);
	bh_fleet_close(owner);
	nats_cluster_stop(c);
}

/* ---- forwarding ---- */

struct served {
	bh_fleet *f;
	int calls;
	char path[256], from[80];
	size_t body_len;
	bool body_ok;
	bool hold; /* never answer */
};

static uint8_t *pattern(size_t n)
{
	uint8_t *b = malloc(n);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131u + (i >> 8)) & 0xff);
	for (size_t i = 0; i < n; i += 4099)
		b[i] = 0; /* NULs among it */
	return b;
}

static void serve_echo(void *arg, struct bh_fleet_request *r, const struct bh_fleet_msg *req)
{
	on_caller_thread();
	struct served *s = arg;
	s->calls++;
	snprintf(s->path, sizeof s->path, "%s", req->path);
	snprintf(s->from, sizeof s->from, "%s", bh_fleet_request_from(r));
	s->body_len = req->body_len;
	uint8_t *want = pattern(req->body_len);
	s->body_ok = req->body_len == 0 || !memcmp(want, req->body, req->body_len);
	free(want);
	if (s->hold) {
		/* answered late, after the caller gave up: nobody waits for it */
		struct bh_fleet_msg ans = {.status = 504};
		bh_fleet_reply(s->f, r, &ans);
		return;
	}
	struct bh_fleet_msg ans = {.status = 201, .n_headers = req->n_headers + 1};
	for (size_t i = 0; i < req->n_headers; i++) {
		ans.header_names[i] = req->header_names[i];
		ans.header_values[i] = req->header_values[i];
	}
	ans.header_names[req->n_headers] = "X-Served-By";
	ans.header_values[req->n_headers] = bh_fleet_host_id(s->f);
	ans.body = req->body;
	ans.body_len = req->body_len;
	bh_fleet_reply(s->f, r, &ans);
}

struct answer {
	bool called;
	unsigned status;
	size_t n_headers;
	char names[BH_FLEET_MAX_HEADERS][64], values[BH_FLEET_MAX_HEADERS][256];
	uint8_t *body;
	size_t body_len;
	char why[512];
	uint64_t at_ms;
};

static void on_answer(void *arg, const struct bh_fleet_msg *ans, const char *why)
{
	on_caller_thread();
	struct answer *a = arg;
	a->called = true;
	a->at_ms = mono_ms();
	if (!ans) {
		snprintf(a->why, sizeof a->why, "%s", why ? why : "(no why)");
		return;
	}
	a->status = ans->status;
	a->n_headers = ans->n_headers;
	for (size_t i = 0; i < ans->n_headers; i++) {
		snprintf(a->names[i], sizeof a->names[i], "%s", ans->header_names[i]);
		snprintf(a->values[i], sizeof a->values[i], "%s", ans->header_values[i]);
	}
	a->body = malloc(ans->body_len ? ans->body_len : 1);
	memcpy(a->body, ans->body, ans->body_len);
	a->body_len = ans->body_len;
}

static bool answered(void *arg)
{
	return ((struct answer *)arg)->called;
}

Test(fleet, a_forwarded_call_with_a_binary_body_is_answered_byte_for_byte, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(3);
	bh_fleet *a = open_fleet(nats_cluster_url(c, 0), "front");
	bh_fleet *b = open_fleet(nats_cluster_url(c, 2), "owner");
	struct served s = {.f = b};
	bh_fleet_serve(b, serve_echo, &s);
	bh_fleet *all[] = {a, b};
	cr_assert(host_present_live(a, "owner", 5000));
	size_t n = 2u << 20;
	uint8_t *body = pattern(n);
	struct bh_fleet_msg req = {.path = "/plimsoll.v1.SandboxService/SessionRun", .n_headers = 3, .body = body,
				   .body_len = n};
	req.header_names[0] = "Content-Type";
	req.header_values[0] = "application/proto";
	req.header_names[1] = "Authorization";
	req.header_values[1] = "Bearer tok:en with spaces";
	req.header_names[2] = "X-Request-Id";
	req.header_values[2] = "";
	struct answer ans = {0};
	char *why = NULL;
	cr_assert_eq(bh_fleet_forward(a, "owner", &req, 10000, on_answer, &ans, &why), 0, "%s", why);
	cr_assert(pump_until(all, 2, answered, &ans, 15000), "answered");
	cr_assert_str_empty(ans.why, "why: %s", ans.why);
	cr_assert_eq(s.calls, 1);
	cr_assert_str_eq(s.path, "/plimsoll.v1.SandboxService/SessionRun");
	cr_assert_str_eq(s.from, "front", "the owner knows who forwarded it");
	cr_assert_eq(s.body_len, n);
	cr_assert(s.body_ok, "the owner got the body byte for byte");
	cr_assert_eq(ans.status, 201);
	cr_assert_eq(ans.body_len, n);
	cr_assert_eq(memcmp(ans.body, body, n), 0, "the answer's body byte for byte");
	cr_assert_eq(ans.n_headers, 4);
	cr_assert_str_eq(ans.names[0], "Content-Type");
	cr_assert_str_eq(ans.values[0], "application/proto");
	cr_assert_str_eq(ans.names[1], "Authorization");
	cr_assert_str_eq(ans.values[1], "Bearer tok:en with spaces");
	cr_assert_str_eq(ans.names[2], "X-Request-Id");
	cr_assert_str_eq(ans.values[2], "");
	cr_assert_str_eq(ans.names[3], "X-Served-By");
	cr_assert_str_eq(ans.values[3], "owner");
	free(ans.body);
	/* the largest body bulkhead sends, 8 MiB, fits the servers' max_payload */
	uint8_t *most = pattern(BH_FLEET_BODY_MAX);
	struct bh_fleet_msg full = {.path = "/p", .body = most, .body_len = BH_FLEET_BODY_MAX};
	struct answer ans8 = {0};
	cr_assert_eq(bh_fleet_forward(a, "owner", &full, 20000, on_answer, &ans8, &why), 0, "%s", why);
	cr_assert(pump_until(all, 2, answered, &ans8, 25000));
	cr_assert_eq(ans8.status, 201, "why: %s", ans8.why);
	cr_assert_eq(ans8.body_len, BH_FLEET_BODY_MAX);
	cr_assert_eq(memcmp(ans8.body, most, BH_FLEET_BODY_MAX), 0);
	free(ans8.body);
	free(most);
	/* an empty body too */
	struct answer ans2 = {0};
	struct bh_fleet_msg empty = {.path = "/x"};
	cr_assert_eq(bh_fleet_forward(a, "owner", &empty, 10000, on_answer, &ans2, &why), 0);
	cr_assert(pump_until(all, 2, answered, &ans2, 15000));
	cr_assert_eq(ans2.status, 201);
	cr_assert_eq(ans2.body_len, 0);
	free(ans2.body);
	/* refused at once: larger than bulkhead's bodies, a header that is two */
	struct bh_fleet_msg big = {.path = "/x", .body = body, .body_len = BH_FLEET_BODY_MAX + 1};
	cr_assert_eq(bh_fleet_forward(a, "owner", &big, 1000, on_answer, &ans2, &why), -1);
	cr_assert(why && strstr(why, "over"), "why: %s", why);
	free(why);
	why = NULL;
	struct bh_fleet_msg split = {.path = "/x", .n_headers = 1};
	split.header_names[0] = "X-A";
	split.header_values[0] = "v\r\nX-Injected: 1";
	cr_assert_eq(bh_fleet_forward(a, "owner", &split, 1000, on_answer, &ans2, &why), -1);
	cr_assert(why && strstr(why, "header"), "why: %s", why);
	free(why);
	why = NULL;
	cr_assert_eq(bh_fleet_forward(a, "nobody", &empty, 1000, on_answer, &ans2, &why), -1);
	cr_assert(why && strstr(why, "nobody"), "why: %s", why);
	free(why);
	free(body);
	cr_assert_not(off_thread, "a callback ran off the caller's thread");
	bh_fleet_close(b);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

Test(fleet, a_forward_to_a_gone_or_silent_host_answers_why_within_its_timeout, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "front");
	struct member_proc m;
	member_spawn(&m, nats_cluster_urls(c), "victim", true);
	cr_assert(!strncmp(m.line, "ready", 5), "%s", m.line);
	cr_assert(host_present_live(a, "victim", 5000));
	/* it answers while it lives */
	struct bh_fleet_msg req = {.path = "/p", .body = (const uint8_t *)"hi", .body_len = 2};
	struct answer live = {0};
	char *why = NULL;
	cr_assert_eq(bh_fleet_forward(a, "victim", &req, 5000, on_answer, &live, &why), 0);
	cr_assert(pump_until(&a, 1, answered, &live, 6000));
	cr_assert_eq(live.status, 200, "why: %s", live.why);
	free(live.body);
	/* killed: before it is gone, NATS says nobody serves it, at once */
	member_kill9(&m);
	sleep_ms(100);
	struct answer dead = {0};
	uint64_t t0 = mono_ms();
	cr_assert_eq(bh_fleet_forward(a, "victim", &req, 10000, on_answer, &dead, &why), 0);
	cr_assert(pump_until(&a, 1, answered, &dead, 11000));
	cr_assert_lt(dead.at_ms - t0, 2000, "answered in %llu ms, not after the whole timeout",
		     (unsigned long long)(dead.at_ms - t0));
	cr_assert(strstr(dead.why, "no responder") || strstr(dead.why, "gone"), "why: %s", dead.why);
	/* gone: the fleet says so without asking */
	struct seen s = {a, "victim", true};
	cr_assert(pump_until(&a, 1, host_is, &s, GONE * 4));
	struct answer gone = {0};
	t0 = mono_ms();
	cr_assert_eq(bh_fleet_forward(a, "victim", &req, 10000, on_answer, &gone, &why), 0);
	cr_assert(pump_until(&a, 1, answered, &gone, 11000));
	cr_assert_lt(gone.at_ms - t0, 200);
	cr_assert(strstr(gone.why, "victim is gone"), "why: %s", gone.why);
	/* live but silent: its deadline */
	bh_fleet *silent = open_fleet(nats_cluster_urls(c), "silent");
	struct served held = {.f = silent, .hold = true};
	bh_fleet_serve(silent, serve_echo, &held);
	bh_fleet *all[] = {a, silent};
	cr_assert(host_present_live(a, "silent", 5000));
	struct answer late = {0};
	t0 = mono_ms();
	cr_assert_eq(bh_fleet_forward(a, "silent", &req, 700, on_answer, &late, &why), 0);
	/* the silent host's loop is not run until the caller's deadline passed */
	cr_assert(pump_until(&a, 1, answered, &late, 3000));
	cr_assert_geq(late.at_ms - t0, 650, "not before its deadline (%llu ms: %s)", (unsigned long long)(late.at_ms - t0), late.why);
	cr_assert_lt(late.at_ms - t0, 1500, "at its deadline");
	cr_assert(strstr(late.why, "did not answer in time"), "why: %s", late.why);
	pump_until(all, 2, NULL, NULL, 300); /* its late answer finds nobody waiting */
	cr_assert_eq(held.calls, 1, "the silent host did get the call");
	cr_assert_not(off_thread, "a callback or a log line ran off the caller's thread");
	bh_fleet_close(silent);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

/* ---- the bucket through NATS's faults ---- */

struct done_result {
	int called, failed;
	char why[256];
};

static bool put_and_see(bh_fleet *writer, bh_fleet *reader, int n, const char *host, unsigned timeout_ms)
{
	struct bh_fleet_entry e = hibernated_entry(n);
	if (bh_fleet_put_entry(writer, &e) < 0)
		return false;
	struct lookup_arg l = {reader, e.fingerprint, host, BH_FLEET_HIBERNATED};
	bh_fleet *all[] = {writer, reader};
	return pump_until(all, 2, entry_is, &l, timeout_ms);
}

Test(fleet, the_bucket_keeps_working_with_one_of_three_nats_nodes_killed_and_after_it_restarts, .timeout = 180)
{
	struct nats_cluster *c = nats_cluster_start(3);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "a");
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	cr_assert(put_and_see(a, o, 1, "a", 10000));
	/* the node a is connected to dies */
	struct bh_fleet_status st;
	bh_fleet_get_status(a, &st);
	unsigned victim = 0;
	for (unsigned i = 0; i < 3; i++)
		if (!strcmp(st.server, nats_cluster_url(c, i)))
			victim = i;
	nats_cluster_kill(c, victim);
	cr_assert(put_and_see(a, o, 2, "a", 30000), "a write after node %u died is read", victim);
	bh_fleet_get_status(a, &st);
	cr_assert(st.connected);
	cr_assert_geq(st.reconnects, 1, "a reconnected to another node");
	cr_assert_str_neq(st.server, nats_cluster_url(c, victim));
	struct bh_fleet_host h;
	cr_assert(host_present_live(o, "a", 10000), "a's heartbeat goes on");
	nats_cluster_restart(c, victim);
	cr_assert(nats_cluster_wait_jetstream(c, 30000));
	cr_assert(put_and_see(a, o, 3, "a", 30000), "a write after node %u restarted is read", victim);
	/* and a reader on the restarted node alone sees all of it */
	bh_fleet *r = open_fleet(nats_cluster_url(c, victim), NULL);
	struct bh_fleet_entry *list = NULL;
	size_t n = bh_fleet_entries(r, &list);
	free(list);
	cr_assert_eq(n, 3, "the restarted node serves the whole bucket (%zu entries)", n);
	cr_assert_eq(bh_fleet_host(r, "a", &h), 0);
	bh_fleet_close(r);
	bh_fleet_close(o);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

Test(fleet, a_node_cut_off_from_its_routes_and_healed, .timeout = 180)
{
	struct nats_cluster *c = nats_cluster_start(3);
	/* a on node 0 only, b on node 1 only */
	bh_fleet *a = open_fleet(nats_cluster_url(c, 0), "a");
	bh_fleet *b = open_fleet(nats_cluster_url(c, 1), "b");
	bh_fleet *o = open_fleet(nats_cluster_url(c, 2), NULL);
	cr_assert(put_and_see(a, o, 1, "a", 10000));
	cr_assert_gt(nats_cluster_routes(c, 0), 0, "node 0 has routes");
	nats_cluster_cut(c, 0);
	cr_assert_eq(nats_cluster_routes(c, 0), 0, "cut: no route to or from node 0");
	cr_log_info("routes: node 1 %u, node 2 %u", nats_cluster_routes(c, 1), nats_cluster_routes(c, 2));
	/* the majority goes on */
	cr_assert(put_and_see(b, o, 2, "b", 30000), "the majority side writes and reads");
	/* the cut-off side: a's heartbeats cannot reach the others, so it goes gone for them */
	struct seen s = {o, "a", true};
	cr_assert(pump_until(&o, 1, host_is, &s, 30000), "a is gone for the majority while cut off");
	/* and a knows its own view is not current: it must judge nobody lost */
	struct bh_fleet_status st;
	uint64_t until = mono_ms() + 30000;
	do {
		bh_fleet_get_status(a, &st);
		if (st.fresh)
			pump_until(&a, 1, NULL, NULL, 100);
	} while (st.fresh && mono_ms() < until);
	cr_assert_not(st.fresh, "the cut-off side's copy is not fresh");
	until = mono_ms() + 15000;
	do {
		bh_fleet_get_status(o, &st);
		if (!st.fresh)
			pump_until(&o, 1, NULL, NULL, 100);
	} while (!st.fresh && mono_ms() < until);
	cr_assert(st.fresh, "the majority side's copy is fresh (once its bucket has a leader)");
	/* healed: a's heartbeat and writes come back */
	nats_cluster_heal(c, 0);
	cr_assert(host_present_live(o, "a", 60000), "a heartbeats again after the heal");
	cr_assert_gt(nats_cluster_routes(c, 0), 0, "healed: node 0 has routes again");
	cr_assert(put_and_see(a, o, 3, "a", 30000), "a writes again after the heal");
	bh_fleet *all[] = {a, b, o};
	struct lookup_arg l = {a, "", "b", BH_FLEET_HIBERNATED};
	char fp[65];
	fp_of(fp, 2);
	l.fp = fp;
	cr_assert(pump_until(all, 3, entry_is, &l, 30000), "a sees what b wrote while it was cut off");
	bh_fleet_close(o);
	bh_fleet_close(b);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

static bool rejected_at_least(void *arg)
{
	void **p = arg;
	struct bh_fleet_status st;
	bh_fleet_get_status(p[0], &st);
	return st.rejected >= (uint64_t)(uintptr_t)p[1];
}

Test(fleet, a_malformed_value_written_into_the_bucket_is_skipped_and_counted, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	char fp[65], key[100];
	fp_of(fp, 42);
	snprintf(key, sizeof key, "session.%s", fp);
	raw_put(nats_cluster_urls(c), key, "{\"v\":1,\"fingerprint\":");
	raw_put(nats_cluster_urls(c), "host.intruder", "{\"v\":2,\"id\":\"intruder\"}");
	raw_put(nats_cluster_urls(c), "host.liar",
		"{\"v\":1,\"id\":\"someone-else\",\"incarnation\":\"0000000000000001\",\"tiers\":[],\"best_tier\":\"\","
		"\"sessions\":0,\"hibernated\":0,\"max_sessions\":0,\"memory_budget_mb\":0,\"memory_used_mb\":0,"
		"\"pool_ready\":0,\"load1\":0,\"draining\":false,\"api\":\"\",\"version\":\"\",\"started_unix_ms\":0,"
		"\"heartbeat_unix_ms\":0,\"heartbeat_ms\":1000,\"beat\":1}");
	raw_put(nats_cluster_urls(c), "nonsense", "x");
	void *arg[2] = {o, (void *)(uintptr_t)4};
	cr_assert(pump_until(&o, 1, rejected_at_least, arg, 10000), "four values skipped and counted");
	struct bh_fleet_entry e;
	cr_assert_eq(bh_fleet_lookup(o, fp, &e), -1, "a value that does not check is no entry");
	struct bh_fleet_host h;
	cr_assert_eq(bh_fleet_host(o, "intruder", &h), -1);
	cr_assert_eq(bh_fleet_host(o, "liar", &h), -1, "a host value naming another id is refused");
	cr_assert_eq(bh_fleet_host(o, "someone-else", &h), -1);
	struct bh_fleet_status st;
	bh_fleet_get_status(o, &st);
	cr_assert_neq(st.last_error[0], '\0', "the status says what was skipped");
	/* a reader opened afterwards skips them as well, from the bucket's start */
	bh_fleet *o2 = open_fleet(nats_cluster_urls(c), NULL);
	bh_fleet_get_status(o2, &st);
	cr_assert_eq(st.rejected, 4, "rejected %llu", (unsigned long long)st.rejected);
	/* and a good value after a bad one is read */
	bh_fleet *m = open_fleet(nats_cluster_urls(c), "m");
	struct bh_fleet_entry good = hibernated_entry(42);
	cr_assert_eq(bh_fleet_put_entry(m, &good), 0);
	struct lookup_arg l = {o, fp, "m", BH_FLEET_HIBERNATED};
	bh_fleet *all[] = {m, o};
	cr_assert(pump_until(all, 2, entry_is, &l, 10000));
	bh_fleet_close(m);
	bh_fleet_close(o2);
	bh_fleet_close(o);
	nats_cluster_stop(c);
}

Test(fleet, drains_are_set_and_cleared_and_placement_skips_a_drained_host, .timeout = 90)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "a");
	bh_fleet *o = open_fleet(nats_cluster_urls(c), NULL);
	struct bh_fleet_host me = {.tiers = 1u << BH_TIER_CONTAINER, .best_tier = BH_TIER_CONTAINER,
				   .memory_budget_mb = 100};
	bh_fleet_set_host(a, &me);
	bh_fleet *all[] = {a, o};
	char where[BH_FLEET_ID_MAX + 1] = "";
	uint64_t until = mono_ms() + 5000;
	while (bh_fleet_place(o, BH_TIER_CONTAINER, where) < 0 && mono_ms() < until)
		pump_until(all, 2, NULL, NULL, 50);
	cr_assert_str_eq(where, "a");
	struct done_result d = {0};
	cr_assert_eq(bh_fleet_set_drain(o, "a", true, NULL, &d), 0);
	until = mono_ms() + 5000;
	while ((!bh_fleet_draining(a, "a") || !bh_fleet_draining(o, "a")) && mono_ms() < until)
		pump_until(all, 2, NULL, NULL, 50);
	cr_assert(bh_fleet_draining(a, "a"), "the member reads its own drain");
	cr_assert(bh_fleet_draining(o, "a"));
	cr_assert_eq(bh_fleet_place(o, BH_TIER_CONTAINER, where), -1, "nothing new is placed on a drained host");
	cr_assert_eq(bh_fleet_set_drain(o, "a", false, NULL, NULL), 0);
	until = mono_ms() + 5000;
	while (bh_fleet_draining(o, "a") && mono_ms() < until)
		pump_until(all, 2, NULL, NULL, 50);
	cr_assert_not(bh_fleet_draining(o, "a"));
	cr_assert_eq(bh_fleet_place(o, BH_TIER_CONTAINER, where), 0);
	bh_fleet_close(o);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

Test(fleet, open_refuses_what_it_cannot_use_and_says_why, .timeout = 60)
{
	bh_fleet *f = NULL;
	char *why = NULL;
	struct bh_fleet_config bad_id = {.servers = "nats://127.0.0.1:1", .host_id = "../x"};
	cr_assert_eq(bh_fleet_open(&bad_id, &f, &why), -1);
	cr_assert(strstr(why, "host id"), "%s", why);
	free(why);
	why = NULL;
	struct bh_fleet_config bad_gone = {.servers = "nats://127.0.0.1:1", .heartbeat_ms = 1000, .gone_ms = 2000};
	cr_assert_eq(bh_fleet_open(&bad_gone, &f, &why), -1);
	cr_assert(strstr(why, "3 heartbeats"), "%s", why);
	free(why);
	why = NULL;
	/* nobody listens on port 1 of loopback */
	struct bh_fleet_config nobody = {.servers = "127.0.0.1:1", .connect_timeout_ms = 1000};
	cr_assert_eq(bh_fleet_open(&nobody, &f, &why), -1);
	cr_assert(strstr(why, "cannot reach") && strstr(why, "127.0.0.1:1"), "%s", why);
	free(why);
}

Test(fleet, a_server_run_with_nats_default_max_payload_refuses_a_large_call_with_a_why, .timeout = 60)
{
	/* nats-server's default is 1 MiB; bulkhead's bodies go to 8 MiB */
	struct nats_cluster *c = nats_cluster_start_with(1, 1u << 20);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "front");
	bh_fleet *b = open_fleet(nats_cluster_urls(c), "owner");
	struct served s = {.f = b};
	bh_fleet_serve(b, serve_echo, &s);
	bh_fleet *all[] = {a, b};
	cr_assert(host_present_live(a, "owner", 5000));
	uint8_t *body = pattern(2u << 20);
	struct bh_fleet_msg req = {.path = "/p", .body = body, .body_len = 2u << 20};
	struct answer ans = {0};
	char *why = NULL;
	cr_assert_eq(bh_fleet_forward(a, "owner", &req, 5000, on_answer, &ans, &why), -1, "refused before it is sent");
	cr_assert(why && strstr(why, "max_payload") && strstr(why, "1048576"), "why: %s", why);
	free(why);
	why = NULL;
	/* what fits still goes */
	req.body_len = 512u << 10;
	cr_assert_eq(bh_fleet_forward(a, "owner", &req, 5000, on_answer, &ans, &why), 0, "%s", why);
	cr_assert(pump_until(all, 2, answered, &ans, 6000));
	cr_assert_eq(ans.status, 201, "why: %s", ans.why);
	cr_assert_eq(ans.body_len, 512u << 10);
	free(ans.body);
	cr_assert_eq(s.calls, 1, "the refused call never reached the owner");
	free(body);
	bh_fleet_close(b);
	bh_fleet_close(a);
	nats_cluster_stop(c);
}

Test(fleet, a_member_closing_while_nats_is_away_is_done_in_seconds, .timeout = 60)
{
	struct nats_cluster *c = nats_cluster_start(1);
	bh_fleet *a = open_fleet(nats_cluster_urls(c), "leaving");
	nats_cluster_kill(c, 0);
	for (int i = 0; i < 20; i++) {
		struct bh_fleet_entry e = hibernated_entry(500 + i);
		cr_assert_eq(bh_fleet_put_entry(a, &e), 0, "writes are queued while NATS is away");
	}
	struct bh_fleet_status st;
	bh_fleet_get_status(a, &st);
	cr_assert_gt(st.queued, 0, "the writes wait for the bucket");
	uint64_t t0 = mono_ms();
	bh_fleet_close(a);
	cr_assert_lt(mono_ms() - t0, 6000, "closed in %llu ms, not a write timeout per write",
		     (unsigned long long)(mono_ms() - t0));
	nats_cluster_stop(c);
}
