/* The daemon's log lines (log.h). */
#include "log.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static enum daemon_log_format log_format = DAEMON_LOG_TEXT;

void daemon_log_set_format(enum daemon_log_format format)
{
	log_format = format;
}

const char *daemon_log_level_name(enum bh_log_level level)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	return level <= BH_LOG_ERROR ? names[level] : "error";
}

void daemon_log(enum bh_log_level level, const char *component, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *lv = daemon_log_level_name(level);
	if (log_format == DAEMON_LOG_TEXT) {
		fprintf(stderr, "bulkhead serve: %s: %s%s%s\n", lv, component ? component : "",
			component ? ": " : "", msg);
		return;
	}
	/* cJSON escapes what a message may carry from outside (a path, a
	 * peer's words): a line stays one line and one object. */
	cJSON *o = cJSON_CreateObject();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	cJSON_AddNumberToObject(o, "t", (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1000.0);
	cJSON_AddStringToObject(o, "level", lv);
	if (component)
		cJSON_AddStringToObject(o, "component", component);
	cJSON_AddStringToObject(o, "msg", msg);
	char *line = cJSON_PrintUnformatted(o);
	if (line)
		fprintf(stderr, "%s\n", line);
	else /* out of memory: the message still reaches the operator */
		fprintf(stderr, "{\"level\":\"%s\",\"msg\":\"(log line lost: out of memory)\"}\n", lv);
	free(line);
	cJSON_Delete(o);
}

/* ---- config ---- */
void bh_daemon_log_line(enum daemon_log_format format, enum bh_log_level level,
			const char *component, const char *msg)
{
	/* Written only when it changes: the broker's threads read it. */
	if (log_format != format)
		log_format = format;
	daemon_log(level, component, "%s", msg);
}
