#include "internal.h"

#include <stdio.h>
#include <string.h>

static bh_error *error_new(enum bh_error_code code, enum bh_refusal r, int sys_errno,
			   const char *fmt, va_list ap)
{
	bh_error *e = xzalloc(sizeof *e);
	e->code = code;
	e->refusal = r;
	e->sys_errno = sys_errno;
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	if (sys_errno) {
		e->msg = xasprintf("%s: %s", msg, strerror(sys_errno));
		free(msg);
	} else {
		e->msg = msg;
	}
	return e;
}

int bh_fail(bh_error **err, enum bh_error_code code, int sys_errno, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		bh_error *e = error_new(code, BH_REFUSAL_NONE, sys_errno, fmt, ap);
		va_end(ap);
		bh_error_free(*err);
		*err = e;
	}
	return -1;
}

int bh_refuse(bh_error **err, enum bh_refusal reason, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		bh_error *e = error_new(BH_E_NOT_DISPATCHED, reason, 0, fmt, ap);
		va_end(ap);
		bh_error_free(*err);
		*err = e;
	}
	return -1;
}

void bh_error_wrap(bh_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *prefix = NULL;
	if (vasprintf(&prefix, fmt, ap) < 0)
		abort();
	va_end(ap);
	char *msg = xasprintf("%s: %s", prefix, err->msg);
	free(prefix);
	free(err->msg);
	err->msg = msg;
}

bh_error *bh_error_copy(const bh_error *err)
{
	if (!err)
		return NULL;
	bh_error *c = xzalloc(sizeof *c);
	*c = *err;
	c->msg = xstrdup(err->msg);
	return c;
}

void bh_error_free(bh_error *err)
{
	if (!err)
		return;
	free(err->msg);
	free(err);
}
