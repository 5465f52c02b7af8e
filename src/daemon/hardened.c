/* serve --hardened (hardened.h). */
#include "hardened.h"
#include "base.h"
#include "log.h"
#include "tls.h" /* daemon_listen_is_loopback: the one rule */
#include "why.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void add(struct hardened *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct hardened *h, const char *fmt, ...)
{
	if (h->n >= HARDENED_MAX_VIOLATIONS)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&h->lines[h->n], fmt, ap) < 0)
		abort();
	va_end(ap);
	h->n++;
}

void hardened_check_settings(struct hardened *h, const struct bh_daemon_config *cfg)
{
	if (cfg->open)
		add(h, "--open: callers are not authenticated; drop it and give each principal "
		       "a token in the clients file (--clients)");
	if (cfg->listen && !daemon_listen_is_loopback(cfg->listen) &&
	    !(cfg->tls.cert_path && cfg->tls.key_path))
		add(h, "--listen %s is off loopback without TLS: give --tls-cert and --tls-key%s",
		    cfg->listen,
		    cfg->insecure_cleartext ? " (--insecure-cleartext is not enough)" : "");
	if (cfg->tier != BH_TIER_KERNEL)
		add(h,
		    "the tier is not pinned to kernel (--tier %s): give --tier kernel, so "
		    "every session gets the kernel tier",
		    cfg->tier > BH_TIER_NONE ? bh_tier_name(cfg->tier)
					     : "unset: the strongest proven");
	static const struct {
		size_t at;
		const char *flag, *what;
	} caps[] = {
		{offsetof(struct bh_daemon_config, engine.policy.max_sessions), "--max-sessions",
		 "the sessions in all"},
		{offsetof(struct bh_daemon_config, engine.policy.max_per_principal),
		 "--per-principal", "one principal's sessions"},
		{offsetof(struct bh_daemon_config, engine.policy.max_per_owner), "--per-owner",
		 "one owner's sessions"},
		{offsetof(struct bh_daemon_config, engine.policy.memory_budget_mb),
		 "--memory-budget", "the sandboxes' memory in all"},
		{offsetof(struct bh_daemon_config, rate_per_minute), "--rate",
		 "one principal's calls a minute"},
	};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
		if (!*(const uint32_t *)((const char *)cfg + caps[i].at))
			add(h,
			    "%s is not set: the cap on %s must be chosen, not left to its default",
			    caps[i].flag, caps[i].what);
}

void hardened_take(struct hardened *h, char **why)
{
	add(h, "%s", *why);
	free(*why);
	*why = NULL;
}

/* Whether SIGTERM or SIGINT came (sigfd: the daemon's signalfd, which
 * holds them until its loop runs): the proof is not waited for then. */
static bool stop_asked(int sigfd)
{
	struct signalfd_siginfo si;
	while (sigfd >= 0 && read(sigfd, &si, sizeof si) == sizeof si)
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			return true;
	return false;
}

static void kernel_tier_check(struct hardened *h, bh_engine *e, int sigfd)
{
	uint64_t deadline = now_mono_ms() + HARDENED_PROOF_DEADLINE_MS;
	bool never = false;
	while (!bh_engine_proven(e) && now_mono_ms() < deadline) {
		if (stop_asked(sigfd)) {
			add(h, "the kernel tier's proof was not waited for: asked to stop");
			return;
		}
		bh_error *err = NULL;
		if (bh_engine_wait(e, &never, 100, &err) < 0 && err->code != BH_E_TIMEOUT) {
			add(h, "the kernel tier could not be proven: %s", err->msg);
			bh_error_free(err);
			return;
		}
		bh_error_free(err);
	}
	if (!bh_engine_proven(e)) {
		char what[512];
		bh_engine_proving(e, what, sizeof what);
		add(h, "the kernel tier's proof did not finish in %d s: %s",
		    HARDENED_PROOF_DEADLINE_MS / 1000, what);
		return;
	}
	const struct bh_tier_report *t = NULL;
	size_t n = bh_engine_tiers(e, &t);
	for (size_t i = 0; i < n; i++)
		if (t[i].tier == BH_TIER_KERNEL) {
			if (!t[i].offered)
				add(h, "the kernel tier is not proven here: %s",
				    t[i].reason && *t[i].reason ? t[i].reason
								: "its smoke test failed");
			return;
		}
	add(h, "the kernel tier is not proven here: the engine has no kernel tier");
}

static void report(struct hardened *h)
{
	for (size_t i = 0; i < h->n; i++)
		daemon_log(BH_LOG_ERROR, "hardened", "%s", h->lines[i]);
	h->reported = true;
}

int hardened_verdict(struct hardened *h, bh_engine *e, int sigfd, char **why)
{
	kernel_tier_check(h, e, sigfd);
	if (!h->n)
		return 0;
	report(h);
	return why_set(why, "--hardened: refusing to start: %zu violation%s (each logged above)",
		       h->n, h->n == 1 ? "" : "s");
}

void hardened_done(struct hardened *h)
{
	if (h->n && !h->reported)
		report(h);
	for (size_t i = 0; i < h->n; i++)
		free(h->lines[i]);
	h->n = 0;
}
