/* The clients file's parser (src/daemon/clients.c): an operator's file may
 * be anything; parsing accepts or refuses with a message, never crashes or
 * leaks, and what it accepts holds: every name is unique, a certificate-only
 * client (DIGEST "-") has a subject, a subject is printable, unique and
 * within its bound, and the approval is one of the three. */
#include "clients.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client_entry *v = NULL;
	size_t n = 0;
	char *why = NULL;
	if (clients_parse((const char *)data, size, &v, &n, &why) < 0) {
		if (!why || v)
			abort(); /* a refusal always says why, and keeps nothing */
		free(why);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct client_entry *e = &v[i];
		size_t sl = strlen(e->subject);
		if (!e->name[0] || (e->no_token && !sl) || sl > CLIENTS_SUBJECT_MAX || e->line == 0)
			abort();
		for (size_t k = 0; k < sl; k++)
			if ((unsigned char)e->subject[k] < 0x21 || (unsigned char)e->subject[k] == 0x7f)
				abort();
		if (e->approval != CLIENT_APPROVAL_DEFAULT && e->approval != CLIENT_APPROVAL_REQUIRED &&
		    e->approval != CLIENT_APPROVAL_NONE)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(v[j].name, e->name) || (sl && !strcmp(v[j].subject, e->subject)))
				abort();
	}
	free(v);
	return 0;
}
