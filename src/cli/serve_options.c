/* The one definition of `bulkhead serve`'s settings: each flag's name (also
 * its config file key), what its value may be, where it lands, its section
 * and help text, and its default as --print-config writes it. The defaults
 * named here are the engine's and the daemon's own (bulkhead.h, daemon.h):
 * an unset field is 0 and they apply theirs. */
#include "serve_settings.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#define AT(field) offsetof(struct serve_settings, field), sizeof(((struct serve_settings *)0)->field)
#define POLICY(field) AT(d.engine.policy.field)
#define LIST(field, count) AT(field), offsetof(struct serve_settings, count)
#define U32 0xffffffffLL
#define HOUR 3600000LL

const char *const serve_section_titles[SERVE_SECTION_COUNT] = {
	[SERVE_SECTION_WHERE] = "Where it listens and who may call.",
	[SERVE_SECTION_TLS] = "TLS and names, for a listener off this machine.",
	[SERVE_SECTION_ADMISSION] =
		"Admission: every open session, Run call in flight and pooled sandbox holds\n"
		"a place.",
	[SERVE_SECTION_SESSIONS] = "Sessions: how long they live.",
	[SERVE_SECTION_LISTENERS] = "Listeners: each takes 256 connections at most.",
	[SERVE_SECTION_APPROVALS] = "Approvals: code calls held until an operator decides (bulkhead approvals).",
	[SERVE_SECTION_EGRESS] =
		"Egress: what a sandbox may reach, through the broker, with the operator's\n"
		"credentials.",
	[SERVE_SECTION_LEFTOVERS] =
		"Leftovers: what a dead engine left here (sandboxes, rows, images, cgroups,\n"
		"interrupted calls) is kept as evidence (`bulkhead leaks`, `bulkhead gc`, the\n"
		"console's :leaks).",
	[SERVE_SECTION_SERVICE] = "The service: the config file, hardened mode, the log.",
};

const struct serve_option serve_options[] = {
	/* ---- where ---- */
	{"state", NULL, SERVE_STRING, 0, 0, NULL, AT(state_dir), 0, SERVE_SECTION_WHERE, "DIR",
	 "the state directory: the store, hibernated sessions, the tiers' proofs",
	 "(/var/lib/bulkhead, or $BULKHEAD_STATE)"},
	{"socket", NULL, SERVE_STRING, 0, 0, NULL, AT(d.socket_path), 0, SERVE_SECTION_WHERE, "PATH",
	 "the unix socket (0660 in a 0755 directory: the directory's group may call)",
	 DAEMON_DEFAULT_SOCKET},
	{"listen", NULL, SERVE_STRING, 0, 0, NULL, AT(d.listen), 0, SERVE_SECTION_WHERE, "HOST:PORT",
	 "listen on TCP too (HOST alone: port 8746); off loopback only with TLS\n"
	 "or --insecure-cleartext",
	 "(none: the unix socket only)"},
	{"clients", NULL, SERVE_STRING, 0, 0, NULL, AT(d.clients_path), 0, SERVE_SECTION_WHERE, "FILE",
	 "the clients file: a principal, its token's digest and scopes a line\n"
	 "(bulkhead token); reloaded on SIGHUP",
	 "/etc/bulkhead/clients"},
	{"open", NULL, SERVE_FLAG, 0, 0, NULL, AT(d.open), 0, SERVE_SECTION_WHERE, NULL,
	 "no authentication: anyone who can reach the unix socket calls (not with --listen)",
	 "false"},
	{"audit", NULL, SERVE_STRING, 0, 0, NULL, AT(d.audit_path), 0, SERVE_SECTION_WHERE, "FILE",
	 "the audit log: one JSON line a call", "(stderr)"},
	/* ---- tls: the daemon's side is the tls part's (server.c, tls.c) ---- */
	{"tls-cert", NULL, SERVE_STRING, 0, 0, NULL, AT(d.tls.cert_path), 0, SERVE_SECTION_TLS, "FILE",
	 "the certificate and its chain (PEM); with --tls-key every TCP listener speaks\n"
	 "TLS 1.2 or newer; both are read again on SIGHUP",
	 "(none: plain HTTP, on loopback only)"},
	{"tls-key", NULL, SERVE_STRING, 0, 0, NULL, AT(d.tls.key_path), 0, SERVE_SECTION_TLS, "FILE",
	 "the certificate's private key (PEM)", "(none)"},
	{"tls-client-ca", NULL, SERVE_STRING, 0, 0, NULL, AT(d.tls.client_ca_path), 0, SERVE_SECTION_TLS,
	 "FILE",
	 "ask for a client certificate signed by these CAs (PEM); a verified one whose\n"
	 "subject a clients line names is that principal",
	 "(none: no client certificates)"},
	{"insecure-cleartext", NULL, SERVE_FLAG, 0, 0, NULL, AT(d.insecure_cleartext), 0,
	 SERVE_SECTION_TLS, NULL,
	 "allow a listener off loopback without TLS (logged as an error at start)", "false"},
	{"allowed-host", NULL, SERVE_LIST, 0, DAEMON_MAX_NAMES, NULL,
	 LIST(d.allowed_hosts, d.n_allowed_hosts), SERVE_SECTION_TLS, "NAME",
	 "a name the Host check accepts besides loopback names and the listen address\n"
	 "(a reverse proxy's; repeat it, at most 16)",
	 "(none)"},
	{"trusted-proxy", NULL, SERVE_LIST, 0, DAEMON_MAX_NAMES, NULL,
	 LIST(d.trusted_proxies, d.n_trusted_proxies), SERVE_SECTION_TLS, "ADDR",
	 "a peer whose X-Forwarded-For, -Proto and -Host are believed (an IPv4 or IPv6\n"
	 "literal; repeat it, at most 16)",
	 "(none: forwarded headers are ignored)"},
	/* ---- admission ---- */
	{"tier", NULL, SERVE_CHOICE, 0, 0,
	 (const struct serve_choice[]){{"container", BH_TIER_CONTAINER}, {"kernel", BH_TIER_KERNEL}, {0}},
	 AT(d.tier), 0, SERVE_SECTION_ADMISSION, "container|kernel",
	 "the tier sessions and runs get (a request's floor only refuses)",
	 "(the strongest tier proven)"},
	{"max-sessions", NULL, SERVE_NUMBER, 1, 1000000, NULL, POLICY(max_sessions), 0,
	 SERVE_SECTION_ADMISSION, "N", "places in all", "64"},
	{"memory-budget", NULL, SERVE_NUMBER, 1, 1 << 30, NULL, POLICY(memory_budget_mb), 0,
	 SERVE_SECTION_ADMISSION, "MiB",
	 "the places' memory limits summed, hibernated sessions aside: past it a session\n"
	 "is refused (capacity)",
	 "16384"},
	{"per-principal", NULL, SERVE_NUMBER, 1, 1000000, NULL, POLICY(max_per_principal), 0,
	 SERVE_SECTION_ADMISSION, "N", "places one token may hold",
	 "(a quarter of what the budget and max-sessions admit, at least 1)"},
	{"per-owner", NULL, SERVE_NUMBER, 1, 1000000, NULL, POLICY(max_per_owner), 0,
	 SERVE_SECTION_ADMISSION, "N",
	 "sessions one owner may hold; its least recently used idle one is replaced", "4"},
	{"sandbox-memory", NULL, SERVE_NUMBER, 64, 65536, NULL, AT(d.engine.memory_limit_mb), 0,
	 SERVE_SECTION_ADMISSION, "MiB", "each sandbox's memory limit (memory.max)", "512"},
	{"session-disk", NULL, SERVE_NUMBER, 1, 1048576, NULL, POLICY(disk_budget_mb), 0,
	 SERVE_SECTION_ADMISSION, "MiB",
	 "files a session may keep in /work, /tmp and /dev/shm; past it the session ends\n"
	 "disk_exceeded",
	 "256"},
	{"min-free", NULL, SERVE_NUMBER, 1, 1048576, NULL, POLICY(state_min_free_mb), 0,
	 SERVE_SECTION_ADMISSION, "MiB",
	 "a new session is refused while the state directory's filesystem has less free", "16"},
	{"pool", NULL, SERVE_NUMBER, 0, 16, NULL, POLICY(pool_size), 0, SERVE_SECTION_ADMISSION, "N",
	 "never-used sandboxes kept ready, interpreters started (0: no pool)", "0"},
	{"pool-age", NULL, SERVE_DURATION, 1, U32, NULL, POLICY(pool_max_age_ms), 0,
	 SERVE_SECTION_ADMISSION, "DUR", "a pooled sandbox unused this long is replaced", "10m"},
	/* ---- sessions ---- */
	{"idle", NULL, SERVE_DURATION, 1, U32, NULL, POLICY(idle_ms), 0, SERVE_SECTION_SESSIONS, "DUR",
	 "no call for this long: the session is paused", "5m"},
	{"hibernate-after", NULL, SERVE_DURATION, 1, U32, NULL, POLICY(hibernate_after_ms), 0,
	 SERVE_SECTION_SESSIONS, "DUR",
	 "paused this long: hibernated (kernel tier) or closed (container tier)", "15m"},
	{"lifetime", NULL, SERVE_DURATION, 1, 12 * HOUR, NULL, POLICY(lifetime_ms), 0,
	 SERVE_SECTION_SESSIONS, "DUR", "the awake time a session may have (at most 12h)", "30m"},
	{"retention", NULL, SERVE_DURATION, 1, LLONG_MAX, NULL, POLICY(retention_ms), 0,
	 SERVE_SECTION_SESSIONS, "DUR", "hibernated this long: the session's image is deleted", "24h"},
	{"shutdown", NULL, SERVE_CHOICE, 0, 0,
	 (const struct serve_choice[]){{"close", false}, {"hibernate", true}, {0}},
	 POLICY(shutdown_hibernate), 0, SERVE_SECTION_SESSIONS, "close|hibernate",
	 "at SIGTERM, close the sessions, or hibernate the idle kernel-tier ones so the\n"
	 "next daemon on this directory continues them",
	 "close"},
	{"drain", NULL, SERVE_DURATION, 1, U32, NULL, AT(d.drain_ms), 0, SERVE_SECTION_SESSIONS, "DUR",
	 "at SIGTERM, how long the calls in flight may finish", "30s"},
	/* ---- listeners ---- */
	{"per-peer", NULL, SERVE_NUMBER, 1, 256, NULL, AT(d.max_per_peer), 0, SERVE_SECTION_LISTENERS, "N",
	 "connections one local user (uid) may hold on each", "64"},
	{"rate", NULL, SERVE_NUMBER, 1, 1000000, NULL, AT(d.rate_per_minute), 0, SERVE_SECTION_LISTENERS,
	 "N", "calls one principal may make a minute", "600"},
	{"metrics-open", NULL, SERVE_FLAG, 0, 0, NULL, AT(d.metrics_open), 0, SERVE_SECTION_LISTENERS,
	 NULL, "serve /metrics without a token (by default it wants the operator scope)", "false"},
	/* ---- approvals ---- */
	{"approval", NULL, SERVE_CHOICE, 0, 0,
	 (const struct serve_choice[]){{"required", true}, {"none", false}, {0}},
	 AT(d.approval_required), 0, SERVE_SECTION_APPROVALS, "required|none",
	 "required: hold every principal's calls but those whose clients line says\n"
	 "approval=none; none: hold only those of approval=required lines",
	 "none"},
	/* At most plimsoll's RPC ceiling: a client gives up on a call by then. */
	{"approval-timeout", NULL, SERVE_DURATION, 1, 5 * 60000LL, NULL, AT(d.approval_timeout_ms), 0,
	 SERVE_SECTION_APPROVALS, "DUR", "how long a call waits before it is refused (at most 5m)", "60s"},
	{"approval-cap", NULL, SERVE_NUMBER, 1, 4096, NULL, AT(d.approval_cap), 0,
	 SERVE_SECTION_APPROVALS, "N", "calls held at once in all", "64"},
	{"approval-cap-per-principal", NULL, SERVE_NUMBER, 1, 4096, NULL,
	 AT(d.approval_cap_per_principal), 0, SERVE_SECTION_APPROVALS, "N",
	 "calls one principal may have held at once", "8"},
	/* ---- egress ---- */
	{"profiles", NULL, SERVE_STRING, 0, 0, NULL, AT(d.profiles_path), 0, SERVE_SECTION_EGRESS, "FILE",
	 "the egress profiles (docs/api.md; data/profiles/profiles.example), reloaded\n"
	 "on SIGHUP; without it every grant is refused",
	 "(none)"},
	{"upstream-ca", NULL, SERVE_STRING, 0, 0, NULL, AT(d.broker_upstream_ca), 0, SERVE_SECTION_EGRESS,
	 "PEM", "the CAs the broker trusts for upstreams", "(the system's)"},
	/* ---- leftovers ---- */
	/* ---- inflight: a daemon restarted on a dead one's directory takes it
	 * over (the lock, its hibernated sessions) but keeps what the dead one
	 * left: an incident's evidence, and nothing at open can tell a crash
	 * worth a look from one that is not. An unattended restart (a
	 * supervisor's loop) asks for the old take-over. ---- */
	{"reap-leftovers", NULL, SERVE_FLAG, 0, 0, NULL, AT(reap_leftovers), 0, SERVE_SECTION_LEFTOVERS,
	 NULL, "reap them at start instead, as the daemon takes over", "false"},
	/* ---- remote: resolved again at each Capture ---- */
	{"capture-root", NULL, SERVE_DIR, 0, 0, NULL, AT(d.capture_root), 0, SERVE_SECTION_LEFTOVERS,
	 "DIR",
	 "an operator's Capture (the console's v) writes evidence folders only below\n"
	 "DIR (absolute, existing), on this host",
	 "(none: no captures over the API)"},
	/* ---- service ---- */
	{"hardened", NULL, SERVE_FLAG, 0, 0, NULL, AT(d.hardened), 0, SERVE_SECTION_SERVICE, NULL,
	 "refuse to start, naming every violation, unless the kernel tier is proven and\n"
	 "pinned (--tier kernel), every listener off loopback has TLS, callers\n"
	 "authenticate per principal (a clients file, no --open), and --max-sessions,\n"
	 "--per-principal, --per-owner, --memory-budget and --rate are set",
	 "false"},
	{"log-format", NULL, SERVE_CHOICE, 0, 0,
	 (const struct serve_choice[]){{"text", DAEMON_LOG_TEXT}, {"json", DAEMON_LOG_JSON}, {0}},
	 AT(d.log_format), 0, SERVE_SECTION_SERVICE, "text|json",
	 "the daemon's lines on stderr: text, or one JSON object a line with its level\n"
	 "(for journald); the \"ready\" line on stdout stays as it is",
	 "text"},
	{"verbose", "-v", SERVE_COUNT, 0, 3, NULL, AT(verbose), 0, SERVE_SECTION_SERVICE, NULL,
	 "more of the engine's lines: -v its information, -v -v its debugging too", "0"},
	{"config", NULL, SERVE_META, 0, 0, NULL, AT(config_path), 0, SERVE_SECTION_SERVICE, "FILE",
	 "read the settings from FILE (which must exist) instead of\n" SERVE_CONFIG_DEFAULT
	 " (read when it exists); flags override the file",
	 NULL},
	{"no-config", NULL, SERVE_META, 0, 0, NULL, AT(no_config), 0, SERVE_SECTION_SERVICE, NULL,
	 "read no config file", NULL},
	{"print-config", NULL, SERVE_META, 0, 0, NULL, AT(print_config), 0, SERVE_SECTION_SERVICE, NULL,
	 "print the effective settings in the config file's format and exit", NULL},
	{"help", "-h", SERVE_META, 0, 0, NULL, AT(help), 0, SERVE_SECTION_SERVICE, NULL,
	 "print this and exit", NULL},
};

const size_t serve_options_count = sizeof serve_options / sizeof serve_options[0];

_Static_assert(sizeof serve_options / sizeof serve_options[0] <=
		       sizeof((struct serve_settings *)0)->given,
	       "struct serve_settings.given has a place for every option");

const struct serve_option *serve_option_find(const char *name)
{
	for (size_t i = 0; i < serve_options_count; i++)
		if (!strcmp(serve_options[i].name, name))
			return &serve_options[i];
	return NULL;
}
