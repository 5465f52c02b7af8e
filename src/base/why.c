/* Error text for the small modules that take `char **why` last (base.h):
 * the daemon's and the profiles file's, one definition. */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		abort(); /* out of memory: nothing sane to report with */
	return s;
}

static void replace(char **why, char *text)
{
	free(*why);
	*why = text;
}

int why_set(char **why, const char *fmt, ...)
{
	if (!why)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	replace(why, vformat(fmt, ap));
	va_end(ap);
	return -1;
}

int why_errno(char **why, int err, const char *fmt, ...)
{
	if (!why)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *text = NULL;
	if (asprintf(&text, "%s: %s", head, strerror(err)) < 0)
		abort();
	free(head);
	replace(why, text);
	return -1;
}

void why_prefix(char **why, const char *fmt, ...)
{
	if (!why || !*why)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *text = NULL;
	if (asprintf(&text, "%s: %s", head, *why) < 0)
		abort();
	free(head);
	replace(why, text);
}
