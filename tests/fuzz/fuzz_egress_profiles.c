/* The profiles file's parser (src/egress/profiles_parse.c): an operator's
 * file may be anything; parsing accepts or refuses with a message, never
 * crashes or leaks, and what it accepts is canonical: every origin and
 * pattern it kept passes its own check again unchanged, and every profile is
 * found by its name. */
#include "egress_priv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bh_egress_profiles *set = NULL;
	char *why = NULL;
	if (egress_profiles_parse((const char *)data, size, &set, &why) < 0) {
		if (!why)
			abort(); /* a refusal always says why */
		free(why);
		return 0;
	}
	for (size_t i = 0; i < bh_egress_profiles_count(set); i++) {
		const struct bh_egress_profile *p = bh_egress_profiles_at(set, i);
		if (bh_egress_profiles_find(set, p->name) != p || !p->description)
			abort();
		for (size_t k = 0; k < p->n_origins; k++) {
			char *again = NULL;
			if (egress_origin_canonical(p->origins[k], strlen(p->origins[k]), &again,
						    NULL) < 0 ||
			    strcmp(again, p->origins[k]))
				abort();
			free(again);
		}
		for (size_t k = 0; k < p->n_routes; k++)
			if (egress_pattern_check(p->routes[k].pattern, strlen(p->routes[k].pattern),
						 NULL) < 0)
				abort();
		for (size_t k = 0; k < p->n_headers; k++)
			if (strpbrk(p->headers[k].template, "\r\n"))
				abort();
		(void)bh_egress_profile_allows(p, "ci");
	}
	bh_egress_profiles_unref(set);
	return 0;
}
