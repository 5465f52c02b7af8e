/* Errors in the engine's shape (bh_error, freed with bh_error_free) and the
 * broker's log lines, which go to the config's sink and nowhere else. */
#include "broker_priv.h"

#include <stdio.h>
#include <string.h>

static char *vformat(const char *fmt, va_list ap)
{
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	return msg;
}

int broker_fail(bh_error **err, enum bh_error_code code, int sys_errno, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	bh_error *e = xzalloc(sizeof *e);
	e->code = code;
	e->sys_errno = sys_errno;
	if (sys_errno) {
		e->msg = xasprintf("%s: %s", msg, strerror(sys_errno));
		free(msg);
	} else {
		e->msg = msg;
	}
	bh_error_free(*err);
	*err = e;
	return -1;
}

void broker_log(struct bh_broker *b, enum bh_log_level level, const char *fmt, ...)
{
	if (!b->cfg.log)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	b->cfg.log(b->cfg.log_arg, level, msg);
	free(msg);
}
