/* bulkhead serve: the engine behind HTTP until SIGTERM. */
#include "cli.h"
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
	"usage: bulkhead serve [--state DIR] [--socket PATH] [--listen HOST:PORT] [--clients FILE]\n"
	"                      [--open] [--audit FILE] [--tier container|kernel] [--idle DUR] [--hibernate-after DUR]\n"
	"                      [--lifetime DUR] [--retention DUR] [--per-owner N] [--max-sessions N]\n"
	"                      [--per-principal N] [--per-peer N] [--metrics-open]\n"
	"                      [--shutdown close|hibernate] [--drain DUR] [--rate N]\n"
	"                      [--pool N] [--pool-age DUR] [--memory-budget MiB] [--sandbox-memory MiB]\n"
	"                      [--min-free MiB] [--session-disk MiB] [--reap-leftovers]\n"
	"                      [--approval required|none] [--approval-timeout DUR]\n"
	"                      [--approval-cap N] [--approval-cap-per-principal N]\n"
	"                      [--profiles FILE] [--upstream-ca PEM]\n"
	"                      [--capture-root DIR]\n"
	"DUR is a number with ms, s, m or h (\"500ms\", \"5m\").\n"
	"Admission: every open session, Run call in flight and pooled sandbox holds a place.\n"
	"  --max-sessions N    places in all (default 64)\n"
	"  --memory-budget MiB their memory limits summed, hibernated sessions aside (default 16384)\n"
	"  --per-principal N   places one token may hold (default: a quarter of what the budget\n"
	"                      and --max-sessions admit, at least 1; 8 with the defaults)\n"
	"Listeners: each takes 256 connections at most.\n"
	"  --per-peer N        connections one local user (uid) may hold on each (default 64)\n"
	"  --metrics-open      serve /metrics without a token (default: the operator scope)\n"
	"Approvals: code calls held until an operator decides (bulkhead approvals).\n"
	"  --approval required hold every principal's calls, but those whose clients line\n"
	"                      says approval=none (default none: only approval=required lines)\n"
	"  --approval-timeout  how long a call waits before it is refused (default 60s, at most 5m)\n"
	"  --approval-cap N    calls held at once in all (default 64); per principal (default 8)\n"
	"Egress: what a sandbox may reach, through the broker, with the operator's credentials.\n"
	"  --profiles FILE     the egress profiles (docs/api.md; data/profiles/profiles.example),\n"
	"                      reloaded on SIGHUP; without it every grant is refused\n"
	"  --upstream-ca PEM   the CAs the broker trusts for upstreams (default: the system's)\n"
	"Leftovers: what a dead engine left here (sandboxes, rows, images, cgroups, interrupted\n"
	"  calls) is kept as evidence (`bulkhead leaks`, `bulkhead gc`, the console's :leaks).\n"
	"  --reap-leftovers    reap them at start instead, as the daemon takes over\n"
	"  --capture-root DIR  an operator's Capture (the console's v) writes evidence folders\n"
	"                      only below DIR, on this host (default: no captures over the API)\n"
	/* ---- tls ---- */
	"Off the machine: --listen may be any address once TLS is given (TLS 1.2 or newer).\n"
	"  --tls-cert FILE     the PEM certificate chain the TCP listener serves (read again on SIGHUP)\n"
	"  --tls-key FILE      its PEM private key (read again on SIGHUP)\n"
	"  --tls-client-ca FILE ask callers for a certificate signed by these CAs; its subject\n"
	"                      names a client (a clients line's subject=DN), with or instead of a token\n"
	"  --insecure-cleartext listen off loopback WITHOUT TLS (tokens and code in cleartext)\n"
	"  --allowed-host NAME a Host the daemon answers to besides loopback names (repeatable)\n"
	"  --trusted-proxy ADDR a peer whose X-Forwarded-For/-Proto/-Host are believed (repeatable)\n";

/* ---- remote ---- */
static bool capture_root_ok(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A number from lo to hi written in digits only; -1 otherwise ("8x" is not
 * 8, "" is not 0). */
static long number_in(const char *s, long lo, long hi)
{
	if (!*s || s[strspn(s, "0123456789")] || strlen(s) > 9)
		return -1;
	long v = atol(s);
	return v >= lo && v <= hi ? v : -1;
}

/* "500ms", "2s", "5m", "1h" -> milliseconds; -1 when it is none of those. */
static long long duration_ms(const char *s)
{
	/* Digits first (strtoll would take " 5" and "+5"), and few enough that
	 * hours in milliseconds cannot overflow. */
	if (*s < '0' || *s > '9' || strspn(s, "0123456789") > 9)
		return -1;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (!strcmp(end, "ms"))
		return v;
	if (!strcmp(end, "s") || !*end)
		return v * 1000;
	if (!strcmp(end, "m"))
		return v * 60000;
	if (!strcmp(end, "h"))
		return v * 3600000;
	return -1;
}

static void on_ready(void *arg, const char *socket_path, int port)
{
	(void)arg;
	if (port)
		fprintf(stderr, "bulkhead serve: listening on %s and 127.0.0.1:%d\n", socket_path, port);
	else
		fprintf(stderr, "bulkhead serve: listening on %s\n", socket_path);
	/* A line on stdout a supervisor or a test can wait for. */
	printf("ready %s %d\n", socket_path, port);
	fflush(stdout);
}

int cmd_serve(int argc, char **argv)
{
	struct cli_common common = {0};
	struct bh_daemon_config cfg = {.on_ready = on_ready};
	uint32_t sandbox_memory = 0;
	bool reap_leftovers = false; /* inflight */
	for (int i = 1; i < argc; i++) {
		int r = cli_common_opt(&common, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
		if (!strcmp(a, "--open")) {
			cfg.open = true;
			continue;
		}
		if (!strcmp(a, "--metrics-open")) {
			cfg.metrics_open = true;
			continue;
		}
		/* ---- inflight: a daemon restarted on a dead one's directory
		 * takes it over (the lock, its hibernated sessions) but keeps
		 * what the dead one left — its sandboxes, rows, images, cgroups
		 * and interrupted calls are an incident's evidence, and nothing
		 * at open can tell a crash worth a look from one that is not.
		 * They are logged, listed by `bulkhead leaks` and reaped by `gc`
		 * or the console; an unattended restart (a supervisor's loop)
		 * asks for the old take-over with --reap-leftovers. ---- */
		if (!strcmp(a, "--reap-leftovers")) {
			reap_leftovers = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		/* ---- tls ---- */
		if (!strcmp(a, "--insecure-cleartext")) {
			cfg.insecure_cleartext = true;
			continue;
		}
		if (i + 1 < argc && (!strcmp(a, "--tls-cert") || !strcmp(a, "--tls-key") ||
				     !strcmp(a, "--tls-client-ca") || !strcmp(a, "--allowed-host") ||
				     !strcmp(a, "--trusted-proxy"))) {
			const char *v = argv[++i];
			bool host = !strcmp(a, "--allowed-host"), proxy = !strcmp(a, "--trusted-proxy");
			unsigned *n = host ? &cfg.n_allowed_hosts : &cfg.n_trusted_proxies;
			if (!*v || ((host || proxy) && *n == DAEMON_MAX_NAMES)) {
				cli_error("serve: %s %s: %s", a, v,
					  *v ? "given too many times (16 at most)" : "needs a value");
				return CLI_EXIT_USAGE;
			}
			if (!strcmp(a, "--tls-cert"))
				cfg.tls.cert_path = v;
			else if (!strcmp(a, "--tls-key"))
				cfg.tls.key_path = v;
			else if (!strcmp(a, "--tls-client-ca"))
				cfg.tls.client_ca_path = v;
			else if (host)
				cfg.allowed_hosts[(*n)++] = v;
			else
				cfg.trusted_proxies[(*n)++] = v;
			continue;
		}
		if (i + 1 >= argc || a[0] != '-') {
			cli_error("serve: unexpected \"%s\"\n%s", a, usage);
			return CLI_EXIT_USAGE;
		}
		const char *v = argv[++i];
		long long ms = duration_ms(v);
		long n;
		struct bh_policy *p = &cfg.engine.policy;
		if (!strcmp(a, "--socket"))
			cfg.socket_path = v;
		else if (!strcmp(a, "--listen"))
			cfg.listen = v;
		else if (!strcmp(a, "--clients"))
			cfg.clients_path = v;
		else if (!strcmp(a, "--profiles")) /* ---- profiles ---- */
			cfg.profiles_path = v;
		else if (!strcmp(a, "--upstream-ca"))
			cfg.broker_upstream_ca = v;
		else if (!strcmp(a, "--tier") && bh_tier_parse(v, &cfg.tier) == 0 &&
			 (cfg.tier == BH_TIER_CONTAINER || cfg.tier == BH_TIER_KERNEL))
			;
		else if (!strcmp(a, "--audit"))
			cfg.audit_path = v;
		else if (!strcmp(a, "--shutdown") && (!strcmp(v, "close") || !strcmp(v, "hibernate")))
			p->shutdown_hibernate = !strcmp(v, "hibernate");
		else if (!strcmp(a, "--per-owner") && (n = number_in(v, 1, 1000000)) > 0)
			p->max_per_owner = (uint32_t)n;
		else if (!strcmp(a, "--max-sessions") && (n = number_in(v, 1, 1000000)) > 0)
			p->max_sessions = (uint32_t)n;
		else if (!strcmp(a, "--per-principal") && (n = number_in(v, 1, 1000000)) > 0)
			p->max_per_principal = (uint32_t)n;
		else if (!strcmp(a, "--per-peer") && (n = number_in(v, 1, 256)) > 0)
			cfg.max_per_peer = (unsigned)n;
		/* Admission: sessions are refused (capacity) once another sandbox's
		 * memory limit would take the sum past the budget (default 16384 MiB,
		 * 32 sandboxes of the default 512 MiB). */
		/* Files a session may keep in /work, /tmp and /dev/shm (plimsoll's
		 * SANDBOX_SESSION_DISK_MB): past it the session ends disk_exceeded. */
		else if (!strcmp(a, "--session-disk") && (n = number_in(v, 1, 1048576)) > 0)
			p->disk_budget_mb = (uint32_t)n;
		else if (!strcmp(a, "--min-free") && (n = number_in(v, 1, 1048576)) > 0)
			p->state_min_free_mb = (uint32_t)n;
		else if (!strcmp(a, "--memory-budget") && (n = number_in(v, 1, 1 << 30)) > 0)
			p->memory_budget_mb = (uint32_t)n;
		/* Each sandbox's memory.max (default 512 MiB). */
		else if (!strcmp(a, "--sandbox-memory") && (n = number_in(v, 64, 65536)) > 0)
			sandbox_memory = (uint32_t)n;
		else if (!strcmp(a, "--pool") && (n = number_in(v, 0, 16)) >= 0) /* 0: no pool */
			p->pool_size = (uint32_t)n;
		else if (ms > 0 && ms <= 0xffffffffLL && !strcmp(a, "--pool-age"))
			p->pool_max_age_ms = (uint32_t)ms;
		else if (!strcmp(a, "--rate") && (n = number_in(v, 1, 1000000)) > 0)
			cfg.rate_per_minute = (unsigned)n;
		else if (ms > 0 && ms <= 0xffffffffLL && !strcmp(a, "--idle"))
			p->idle_ms = (uint32_t)ms;
		else if (ms > 0 && ms <= 0xffffffffLL && !strcmp(a, "--hibernate-after"))
			p->hibernate_after_ms = (uint32_t)ms;
		else if (ms > 0 && ms <= 12LL * 3600000 && !strcmp(a, "--lifetime"))
			p->lifetime_ms = (uint32_t)ms;
		else if (ms > 0 && !strcmp(a, "--retention"))
			p->retention_ms = (uint64_t)ms;
		else if (ms > 0 && ms <= 0xffffffffLL && !strcmp(a, "--drain"))
			cfg.drain_ms = (uint32_t)ms;
		/* ---- approvals ---- */
		else if (!strcmp(a, "--approval") && (!strcmp(v, "required") || !strcmp(v, "none")))
			cfg.approval_required = !strcmp(v, "required");
		/* At most plimsoll's RPC ceiling: a client gives up on a call by then. */
		else if (ms > 0 && ms <= 5LL * 60000 && !strcmp(a, "--approval-timeout"))
			cfg.approval_timeout_ms = (uint32_t)ms;
		else if (!strcmp(a, "--approval-cap") && (n = number_in(v, 1, 4096)) > 0)
			cfg.approval_cap = (unsigned)n;
		else if (!strcmp(a, "--approval-cap-per-principal") && (n = number_in(v, 1, 4096)) > 0)
			cfg.approval_cap_per_principal = (unsigned)n;
		/* ---- remote: absolute, a directory that exists (resolved again
		 * at each Capture) ---- */
		else if (!strcmp(a, "--capture-root") && v[0] == '/' && capture_root_ok(v))
			cfg.capture_root = v;
		else {
			cli_error("serve: %s %s: not an option, or not a valid value for it\n%s", a, v,
				  usage);
			return CLI_EXIT_USAGE;
		}
	}
	/* The pool serves the tier this daemon opens sessions on. */
	if (cfg.engine.policy.pool_size && cfg.tier > BH_TIER_NONE)
		cfg.engine.policy.pool_tiers = 1u << cfg.tier;
	struct bh_policy policy = cfg.engine.policy;
	if (cli_engine_config(&common, &cfg.engine) < 0)
		return CLI_EXIT_BULKHEAD;
	cfg.engine.policy = policy;
	cfg.engine.memory_limit_mb = sandbox_memory;
	cfg.engine.keep_leftovers = !reap_leftovers; /* inflight */
	char *why = NULL;
	if (bh_daemon_serve(&cfg, &why) < 0) {
		cli_error("serve: %s", why);
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	return 0;
}
