/* The daemon's own log: what an operator should know about the daemon (not
 * the audit trail, which is one JSON line per call). One line a message on
 * stderr, for journald: text for a person at a terminal, or one JSON object
 * a line (serve --log-format json; the packaged unit's default) that
 * journald, jq and a log shipper read without a parser of ours. */
#ifndef BH_DAEMON_LOG_H
#define BH_DAEMON_LOG_H

#include "bulkhead.h"
#include "daemon.h" /* enum daemon_log_format */

/* Set once at start, before the first line. */
void daemon_log_set_format(enum daemon_log_format format);

/* component names where the line comes from ("http", "broker", "profiles",
 * "clients", "approvals", "engine", "tls"...); NULL: the daemon itself.
 * text:  bulkhead serve: warn: broker: MSG
 * json:  {"t":1764643200.123,"level":"warn","component":"broker","msg":"MSG"} */
void daemon_log(enum bh_log_level level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

const char *daemon_log_level_name(enum bh_log_level level);

#endif
