/* bulkhead fleet status|hosts|drain HOST|undrain HOST|leaks|records: a fleet
 * on NATS seen from outside it (issue 20). The fleet library is opened as an
 * observer (no heartbeat, no calls served); what only a host knows (its
 * records, its leaks) is asked of each host's operator API, the address it
 * publishes, and a host that does not answer is named, never skipped in
 * silence. */
#include "cli.h"
#include "cli_out.h"
#include "console.h"
#include "fleet.h"
#include "record.h"
#include "wire_operator.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
	"usage: bulkhead fleet status|hosts|leaks|records [--fleet URLS] [OPTION...]\n"
	"       bulkhead fleet drain|undrain HOST [--fleet URLS] [--wait-s N]\n"
	"\n"
	"A fleet of bulkhead hosts on NATS (serve --fleet), seen from outside it.\n"
	"  status              the NATS connection and the hosts in a line each kind\n"
	"  hosts               every host: state, tiers, sessions, memory, load, pool,\n"
	"                      the age of its last heartbeat and its operator API\n"
	"  drain HOST          ask HOST to place nothing new and hibernate what it can;\n"
	"                      waits until it heartbeats that it is draining\n"
	"  undrain HOST        ask HOST to place sessions again; waits likewise\n"
	"  leaks               every host's leaks (asked of its API) and the fleet's own:\n"
	"                      a directory entry whose host is gone, a sandbox a host\n"
	"                      runs that the directory does not list, and with\n"
	"                      --images-dir an image no entry names\n"
	"  records             the run records of every host, asked of each host's API\n"
	"                      (ListRecords), merged by time; the hosts that did not\n"
	"                      answer are named\n"
	"  --fleet URLS        the NATS servers (nats://HOST:PORT,...);\n"
	"                      else $BULKHEAD_FLEET\n"
	"  --token-file FILE   the hosts' operator token (else $BULKHEAD_TOKEN)\n"
	"  --cacert FILE       with https APIs: the CA of the hosts' certificates\n"
	"  --cert FILE, --key FILE\n"
	"                      with https APIs: a client certificate and its key\n"
	"  --session FP        records: only this session's\n"
	"  --images-dir DIR    leaks: the fleet's shared images directory\n"
	"  --wait-s N          drain, undrain: how long to wait for the host (30)\n"
	"Exit: 0 done; 1 a host did not answer (records, leaks: what the others said is\n"
	"printed), the host is not in the fleet or did not drain in time; 2 usage; 125\n"
	"NATS could not be reached.\n";

struct fleet_args {
	const char *servers, *token_file, *cacert, *cert, *key;
	const char *session, *images_dir;
	const char *verb, *host;
	int wait_s;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The fleet's loop for ms, or until *done. */
static void pump(bh_fleet *f, int ms, const bool *done)
{
	uint64_t end = mono_ms() + (uint64_t)ms;
	while ((!done || !*done) && mono_ms() < end) {
		struct pollfd p = {.fd = bh_fleet_fd(f), .events = POLLIN};
		int t = bh_fleet_timeout_ms(f);
		if (t < 0 || t > 50)
			t = 50;
		poll(&p, p.fd >= 0 ? 1 : 0, t);
		bh_fleet_process(f);
	}
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A reader just opened has seen every host's value "now": the library
 * judges a host gone only after watching it gone_ms. A command that looks
 * once also reads the host's own clock at its last heartbeat: older than
 * the gone time by this machine's clock (a fleet's clocks are kept by NTP),
 * it is gone. */
static void judge_gone(struct bh_fleet_host *hs, size_t n)
{
	int64_t now = wall_ms();
	for (size_t i = 0; i < n; i++)
		if (hs[i].heartbeat_unix_ms > 0 && now - hs[i].heartbeat_unix_ms > (int64_t)BH_FLEET_GONE_MS)
			hs[i].gone = true;
}

static size_t fleet_hosts(bh_fleet *f, struct bh_fleet_host **out)
{
	size_t n = bh_fleet_hosts(f, out);
	judge_gone(*out, n);
	return n;
}

static int fleet_host(bh_fleet *f, const char *id, struct bh_fleet_host *out)
{
	if (bh_fleet_host(f, id, out) < 0)
		return -1;
	judge_gone(out, 1);
	return 0;
}

static bh_fleet *open_observer(const struct fleet_args *a)
{
	struct bh_fleet_config cfg = {.servers = a->servers};
	bh_fleet *f = NULL;
	char *why = NULL;
	if (bh_fleet_open(&cfg, &f, &why) < 0) {
		cli_error("fleet: %s", why ? why : "cannot reach NATS");
		free(why);
		return NULL;
	}
	/* The watch's first values arrive on the loop: until the copy is
	 * current (3 s at most; status says when it is not). */
	pump(f, 300, NULL);
	for (int i = 0; i < 27; i++) {
		struct bh_fleet_status st;
		bh_fleet_get_status(f, &st);
		if (st.fresh)
			break;
		pump(f, 100, NULL);
	}
	return f;
}

static const char *host_state(const struct bh_fleet_host *h)
{
	return h->gone ? "gone" : h->draining ? "draining" : "live";
}

/* The heartbeat's age by the host's clock (a one-look reader's best). */
static void age_text(char *buf, size_t n, const struct bh_fleet_host *h)
{
	int64_t age = wall_ms() - h->heartbeat_unix_ms;
	if (h->heartbeat_unix_ms <= 0)
		snprintf(buf, n, "-");
	else if (age < 0)
		snprintf(buf, n, "0.0s");
	else if (age < 60000)
		snprintf(buf, n, "%.1fs", (double)age / 1000.0);
	else
		snprintf(buf, n, "%lldm", (long long)(age / 60000));
}

static int do_status(bh_fleet *f)
{
	struct bh_fleet_status st;
	bh_fleet_get_status(f, &st);
	if (st.connected)
		printf("NATS: connected to %s (%llu reconnects, %llu values refused, %llu writes queued)%s\n",
		       cli_out_field(stdout, st.server), (unsigned long long)st.reconnects,
		       (unsigned long long)st.rejected, (unsigned long long)st.queued,
		       st.fresh ? "" : "; the fleet's view is NOT current: who is gone is not known");
	else
		printf("NATS: not connected%s%s\n", *st.last_error ? ": " : "",
		       cli_out_field(stdout, st.last_error));
	struct bh_fleet_host *hs = NULL;
	size_t n = fleet_hosts(f, &hs);
	size_t live = 0, gone = 0, draining = 0;
	uint64_t sessions = 0, hibernated = 0;
	for (size_t i = 0; i < n; i++) {
		gone += hs[i].gone;
		draining += !hs[i].gone && hs[i].draining;
		live += !hs[i].gone && !hs[i].draining;
		if (!hs[i].gone) {
			sessions += hs[i].sessions;
			hibernated += hs[i].hibernated;
		}
	}
	printf("hosts: %zu (%zu live, %zu draining, %zu gone)\n", n, live, draining, gone);
	struct bh_fleet_entry *es = NULL;
	size_t ne = bh_fleet_entries(f, &es);
	printf("sessions: %llu live, %llu hibernated; directory: %zu entries\n",
	       (unsigned long long)sessions, (unsigned long long)hibernated, ne);
	free(es);
	free(hs);
	return st.connected && st.fresh ? 0 : 1;
}

static int do_hosts(bh_fleet *f)
{
	struct bh_fleet_host *hs = NULL;
	size_t n = fleet_hosts(f, &hs);
	printf("%-12s %-8s %-16s %4s %3s %-11s %5s %4s %6s %s\n", "HOST", "STATE", "TIERS", "SESS",
	       "HIB", "MEMORY", "LOAD", "POOL", "BEAT", "API");
	for (size_t i = 0; i < n; i++) {
		const struct bh_fleet_host *h = &hs[i];
		char tiers[64], mem[32], age[32];
		bh_tier_set_text(h->tiers, tiers, sizeof tiers);
		snprintf(mem, sizeof mem, "%u/%uM", h->memory_used_mb, h->memory_budget_mb);
		age_text(age, sizeof age, h);
		printf("%-12s %-8s %-16s %4u %3u %-11s %5.2f %4u %6s %s\n", cli_out_field(stdout, h->id),
		       host_state(h), tiers, h->sessions, h->hibernated, mem, h->load1, h->pool_ready,
		       age, cli_out_field(stdout, *h->api ? h->api : "-"));
	}
	if (!n)
		printf("(no host in the fleet)\n");
	free(hs);
	return 0;
}

struct drain_wait {
	bool done;
	char why[256];
};

static void drain_written(void *arg, const char *why)
{
	struct drain_wait *w = arg;
	w->done = true;
	snprintf(w->why, sizeof w->why, "%s", why ? why : "");
}

static int do_drain(bh_fleet *f, const struct fleet_args *a, bool on)
{
	struct bh_fleet_host h;
	if (fleet_host(f, a->host, &h) < 0) {
		cli_error("fleet %s: no host \"%s\" in the fleet (bulkhead fleet hosts lists them)",
			  a->verb, a->host);
		return 1;
	}
	if (h.gone) {
		cli_error("fleet %s: host %s is gone (no heartbeat): nothing would say it %s", a->verb,
			  a->host, on ? "drains" : "places again");
		return 1;
	}
	struct drain_wait w = {0};
	if (bh_fleet_set_drain(f, a->host, on, drain_written, &w) < 0) {
		cli_error("fleet %s: the request could not be queued", a->verb);
		return 1;
	}
	uint64_t end = mono_ms() + (uint64_t)a->wait_s * 1000u;
	pump(f, (int)(end - mono_ms()), &w.done);
	if (!w.done || *w.why) {
		cli_error("fleet %s: %s", a->verb, w.done ? w.why : "NATS did not take the request in time");
		return 1;
	}
	/* Written: now the host's own heartbeat must say so. */
	while (mono_ms() < end) {
		if (fleet_host(f, a->host, &h) == 0 && !h.gone && h.draining == on) {
			printf("host %s is %s (%u sessions, %u hibernated)\n", cli_out_field(stdout, a->host),
			       on ? "draining" : "placing again", h.sessions, h.hibernated);
			return 0;
		}
		pump(f, 100, NULL);
	}
	cli_error("fleet %s: asked, but host %s did not heartbeat that it is %s within %d s", a->verb,
		  a->host, on ? "draining" : "undrained", a->wait_s);
	return 1;
}

/* ---- records: every host's ListRecords ---- */

/* What a line shows of a record, copied out of its host's page. */
struct host_record {
	char host[BH_FLEET_ID_MAX + 1];
	int64_t id, started_ms;
	char session[65], record[65], language[16], isolation[16];
	uint64_t sequence;
	int exit_code;
};

static int record_cmp(const void *x, const void *y)
{
	const struct host_record *a = x, *b = y;
	return a->started_ms < b->started_ms ? -1 : a->started_ms > b->started_ms;
}

static bh_client *host_client(const struct fleet_args *a, const char *api, const char *token,
			      char *why, size_t n)
{
	struct bh_client_options o = {.target = api, .token = token, .cacert = a->cacert,
				      .client_cert = a->cert, .client_key = a->key,
				      .connect_timeout_ms = 3000, .call_timeout_ms = 30000};
	bh_client *c = NULL;
	struct bh_client_error *err = NULL;
	if (bh_client_new(&o, &c, &err) < 0) {
		snprintf(why, n, "%s", err && err->message ? err->message : "no client");
		bh_client_error_free(err);
		return NULL;
	}
	return c;
}

static void silent_add(char *buf, size_t n, const char *host, const char *why)
{
	size_t used = strlen(buf);
	snprintf(buf + used, n > used ? n - used : 0, "%s%s (%s)", used ? "; " : "", host, why);
}

static int do_records(bh_fleet *f, const struct fleet_args *a, const char *token)
{
	struct bh_fleet_host *hs = NULL;
	size_t nh = fleet_hosts(f, &hs);
	struct host_record *all = NULL;
	size_t n = 0, cap = 0;
	char silent[2048] = "";
	size_t answered = 0;
	for (size_t i = 0; i < nh; i++) {
		const struct bh_fleet_host *h = &hs[i];
		if (h->gone) {
			silent_add(silent, sizeof silent, h->id, "gone: no heartbeat");
			continue;
		}
		if (!*h->api) {
			silent_add(silent, sizeof silent, h->id, "it publishes no API address");
			continue;
		}
		char why[512];
		bh_client *c = host_client(a, h->api, token, why, sizeof why);
		if (!c) {
			silent_add(silent, sizeof silent, h->id, why);
			continue;
		}
		int64_t after = 0;
		int failed = 0;
		for (;;) {
			struct wire_operator_records page;
			struct bh_client_error *err = NULL;
			if (bh_client_list_records(c, a->session, after, 500, &page, &err) < 0) {
				silent_add(silent, sizeof silent, h->id,
					   err && err->message ? err->message : "no answer");
				bh_client_error_free(err);
				failed++;
				break;
			}
			for (size_t r = 0; r < page.n; r++) {
				if (n == cap) {
					cap = cap ? 2 * cap : 64;
					all = realloc(all, cap * sizeof *all);
					if (!all)
						abort();
				}
				const struct wire_operator_record_row *w = &page.rows[r];
				struct host_record *o = &all[n++];
				snprintf(o->host, sizeof o->host, "%s", h->id);
				o->id = w->id;
				o->started_ms = w->record.started_unix_ms;
				snprintf(o->session, sizeof o->session, "%s", w->record.session);
				snprintf(o->record, sizeof o->record, "%s", w->record.record_sha256);
				snprintf(o->language, sizeof o->language, "%s", w->language ? w->language : "");
				snprintf(o->isolation, sizeof o->isolation, "%s", w->record.isolation ? w->record.isolation : "");
				o->sequence = w->record.sequence;
				o->exit_code = w->exit_code;
			}
			bool more = page.n == 500 && page.next_after_id > after;
			after = page.next_after_id;
			wire_operator_records_free(&page);
			if (!more) {
				answered += failed == 0;
				break;
			}
		}
		bh_client_free(c);
	}
	if (n > 1)
		qsort(all, n, sizeof *all, record_cmp);
	printf("%-12s %-6s %-12s %5s  %-10s %-9s %-8s %.16s\n", "HOST", "ID", "SESSION", "SEQ",
	       "LANGUAGE", "ISOLATION", "EXIT", "RECORD");
	for (size_t i = 0; i < n; i++) {
		const struct host_record *r = &all[i];
		char session[13], digest[17];
		snprintf(session, sizeof session, "%s", cli_out_field(stdout, *r->session ? r->session : "-"));
		snprintf(digest, sizeof digest, "%s", cli_out_field(stdout, r->record));
		printf("%-12s %-6lld %-12.12s %5llu  %-10s %-9s exit %-3d %.16s\n",
		       cli_out_field(stdout, r->host), (long long)r->id, session,
		       (unsigned long long)r->sequence, cli_out_field(stdout, r->language),
		       cli_out_field(stdout, r->isolation), r->exit_code, digest);
	}
	printf("%zu records from %zu of %zu hosts\n", n, answered, nh);
	free(all);
	free(hs);
	if (*silent) {
		cli_error("fleet records: hosts that did not answer: %s", silent);
		return 1;
	}
	return 0;
}

/* ---- leaks: the console's fleet source, without a screen ---- */

static int do_leaks(const struct fleet_args *a, const char *token)
{
	struct bh_client_options o = {.token = token, .cacert = a->cacert, .client_cert = a->cert,
				      .client_key = a->key};
	char *why = NULL;
	struct ui_source *src = ui_source_fleet(a->servers, &o, a->images_dir, &why);
	if (!src) {
		cli_error("fleet leaks: %s", why ? why : "cannot reach NATS");
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	struct bh_leak *l = NULL;
	size_t n = 0;
	char *silent = NULL;
	int rc = ui_fleet_leaks(src, 60000, &l, &n, &silent, &why);
	if (rc == 0) {
		printf("%-12s %-24s %-12s %s\n", "KIND", "SANDBOX", "SESSION", "REASON / HOLDER");
		for (size_t i = 0; i < n; i++)
			printf("%-12s %-24s %-12.12s %s; %s\n", bh_leak_kind_name(l[i].kind),
			       cli_out_field(stdout, *l[i].sandbox ? l[i].sandbox : "-"),
			       cli_out_field(stdout, *l[i].fingerprint ? l[i].fingerprint : "-"),
			       cli_out_field(stdout, l[i].reason), cli_out_field(stdout, l[i].holder));
		printf("%zu findings\n", n);
	} else {
		cli_error("fleet leaks: %s", why ? why : "no answer");
	}
	if (silent && *silent) {
		cli_error("fleet leaks: hosts that did not answer: %s", silent);
		rc = -1;
	}
	free(l);
	free(silent);
	free(why);
	ui_source_free(src);
	return rc == 0 ? 0 : 1;
}

int cmd_fleet(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct fleet_args a = {.wait_s = 30};
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char **slot = !strcmp(s, "--fleet")        ? &a.servers
				    : !strcmp(s, "--token-file") ? &a.token_file
				    : !strcmp(s, "--cacert")     ? &a.cacert
				    : !strcmp(s, "--cert")       ? &a.cert
				    : !strcmp(s, "--key")        ? &a.key
				    : !strcmp(s, "--session")    ? &a.session
				    : !strcmp(s, "--images-dir") ? &a.images_dir
								 : NULL;
		if (slot) {
			if (i + 1 >= argc)
				return cli_usage_error(usage, "fleet: %s needs a value", s);
			*slot = argv[++i];
		} else if (!strcmp(s, "--wait-s") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 3600)
				return cli_usage_error(usage, "fleet: --wait-s takes 1 to 3600 seconds, not \"%s\"",
						       argv[i]);
			a.wait_s = (int)v;
		} else if (!a.verb && s[0] != '-') {
			a.verb = s;
		} else if (a.verb && !a.host && s[0] != '-' &&
			   (!strcmp(a.verb, "drain") || !strcmp(a.verb, "undrain"))) {
			a.host = s;
		} else {
			return cli_usage_error(usage, "fleet: unexpected \"%s\"", s);
		}
	}
	static const char *const verbs[] = {"status", "hosts", "drain", "undrain", "leaks", "records"};
	bool known = false;
	for (size_t i = 0; a.verb && i < sizeof verbs / sizeof verbs[0]; i++)
		known = known || !strcmp(a.verb, verbs[i]);
	if (!known)
		return cli_usage_error(usage, a.verb ? "fleet: no subcommand \"%s\"" : "fleet: which? %s",
				       a.verb ? a.verb : "status, hosts, drain, undrain, leaks or records");
	bool drain = !strcmp(a.verb, "drain"), undrain = !strcmp(a.verb, "undrain");
	if ((drain || undrain) && !a.host)
		return cli_usage_error(usage, "fleet %s: which host?", a.verb);
	if (!a.servers)
		a.servers = getenv("BULKHEAD_FLEET");
	if (!a.servers || !*a.servers)
		return cli_usage_error(usage, "fleet: name the NATS servers with --fleet URLS or $BULKHEAD_FLEET");
	char *token = NULL;
	struct bh_client_error *terr = NULL;
	if (bh_client_token(a.token_file, &token, &terr) < 0) {
		cli_error("fleet: %s", terr && terr->message ? terr->message : "the token file");
		bh_client_error_free(terr);
		return CLI_EXIT_USAGE;
	}
	int rc;
	if (!strcmp(a.verb, "leaks")) {
		rc = do_leaks(&a, token);
	} else {
		bh_fleet *f = open_observer(&a);
		if (!f) {
			rc = CLI_EXIT_BULKHEAD;
		} else {
			if (!strcmp(a.verb, "status"))
				rc = do_status(f);
			else if (!strcmp(a.verb, "hosts"))
				rc = do_hosts(f);
			else if (drain || undrain)
				rc = do_drain(f, &a, drain);
			else
				rc = do_records(f, &a, token);
			bh_fleet_close(f);
		}
	}
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	return rc;
}
