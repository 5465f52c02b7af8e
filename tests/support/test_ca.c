#include "test_ca.h"
#include "broker_harness.h" /* run_cmd */

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int rc = 0;
	char *out = run_cmd(cmd, &rc);
	cr_assert_eq(rc, 0, "%s failed: %s", cmd, out);
	free(out);
}

void test_ca_make(const char *dir, const char *name, const char *cn)
{
	sh("cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	   "-keyout %s.key -out %s.pem -days 2 -subj '/CN=%s' "
	   "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign "
	   ">/dev/null 2>&1",
	   dir, name, name, cn);
}

void test_ca_cert(const char *dir, const struct test_cert *c)
{
	/* -days -1: the validity ends a day before it began, i.e. now expired. */
	sh("cd '%s' && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	   "-keyout %s.key -out %s.csr -subj '%s' >/dev/null 2>&1 && "
	   "printf '%s%s%sextendedKeyUsage=%s\\n' > %s.ext && "
	   "openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial "
	   "-days %s -extfile %s.ext -out %s.pem >/dev/null 2>&1",
	   dir, c->name, c->name, c->subject, c->san ? "subjectAltName=" : "", c->san ? c->san : "",
	   c->san ? "\\n" : "", c->usage, c->name, c->name, c->ca, c->ca, c->expired ? "-1" : "2",
	   c->name, c->name);
}
