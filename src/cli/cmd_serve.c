/* bulkhead serve: the engine behind HTTP until SIGTERM. Its settings are
 * one table (serve_options.c): the flags, then the config file under them,
 * then the daemon. */
#include "cli.h"
#include "daemon.h"
#include "serve_settings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* serve's own complaints, in the daemon's log format: under --log-format
 * json every line on stderr is one JSON object, these too. */
static void say(enum daemon_log_format format, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(enum daemon_log_format format, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (format == DAEMON_LOG_JSON)
		bh_daemon_log_line(format, BH_LOG_ERROR, NULL, msg);
	else
		cli_error("%s", msg);
	free(msg);
}

/* The engine's lines, as many as -v asks for, through the daemon's log. */
static void engine_log(void *arg, enum bh_log_level level, const char *msg)
{
	const struct serve_settings *s = arg;
	int min = s->verbose >= 2 ? BH_LOG_DEBUG : s->verbose == 1 ? BH_LOG_INFO : BH_LOG_WARN;
	if ((int)level >= min)
		bh_daemon_log_line(s->d.log_format, level, "engine", msg);
}

static void on_ready(void *arg, const char *socket_path, int port)
{
	(void)arg;
	/* A line on stdout a supervisor or a test can wait for (the daemon
	 * logged where it listens). */
	printf("ready %s %d\n", socket_path, port);
	fflush(stdout);
}

/* The file under the flags: /etc/bulkhead/bulkhead.conf when it exists,
 * or the one --config names, which must. */
static int read_config(struct serve_settings *s, const struct serve_settings *flags, char **why)
{
	if (flags->no_config)
		return 0;
	const char *path = flags->config_path ? flags->config_path : SERVE_CONFIG_DEFAULT;
	size_t len = 0;
	bool missing = false;
	if (serve_read_config(path, &s->text, &len, &missing, why) < 0) {
		if (missing && !flags->config_path) {
			free(*why);
			*why = NULL;
			return 0;
		}
		return -1;
	}
	return serve_parse_config(s, s->text, len, path, why);
}

static int serve(struct serve_settings *s)
{
	struct cli_common common = {.state_dir = s->state_dir, .verbose = s->verbose};
	struct bh_daemon_config *d = &s->d;
	/* The pool serves the tier this daemon opens sessions on. */
	if (d->engine.policy.pool_size && d->tier > BH_TIER_NONE)
		d->engine.policy.pool_tiers = 1u << d->tier;
	struct bh_config parsed = d->engine;
	if (cli_engine_config(&common, &d->engine) < 0)
		return CLI_EXIT_BULKHEAD;
	d->engine.policy = parsed.policy;
	d->engine.memory_limit_mb = parsed.memory_limit_mb;
	d->engine.images_dir = parsed.images_dir; /* ---- fleet: --images-dir ---- */
	d->engine.keep_leftovers = !s->reap_leftovers; /* inflight */
	d->engine.log = engine_log;
	d->engine.log_arg = s;
	d->on_ready = on_ready;
	char *why = NULL;
	if (bh_daemon_serve(d, &why) < 0) {
		say(d->log_format, "serve: %s", why);
		free(why);
		return CLI_EXIT_BULKHEAD;
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_settings flags = {0};
	char *why = NULL;
	if (serve_parse_argv(&flags, argc, argv, &why) < 0) {
		if (flags.d.log_format == DAEMON_LOG_JSON)
			say(flags.d.log_format, "%s", why);
		else
			cli_error(
				"%s\nusage: bulkhead serve [OPTION...]  (bulkhead serve --help lists them)",
				why);
		free(why);
		return CLI_EXIT_USAGE;
	}
	if (flags.help) {
		serve_print_help(stdout);
		return 0;
	}
	struct serve_settings *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	int rc = 0;
	if (read_config(s, &flags, &why) < 0) {
		say(flags.given[serve_option_find("log-format") - serve_options]
			    ? flags.d.log_format
			    : s->d.log_format,
		    "serve: %s", why);
		free(why);
		rc = CLI_EXIT_USAGE;
	} else {
		serve_settings_overlay(s, &flags);
		if (flags.print_config)
			serve_print_config(stdout, s);
		else
			rc = serve(s);
	}
	free(s->text);
	free(s);
	return rc;
}
