/* ---- egress: the broker's scrub of an upstream's answer (secrets.c). ---- */
#ifndef BH_BROKER_SECRETS_H
#define BH_BROKER_SECRETS_H

#include "base.h"
#include "egress.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCRUBBED "[redacted]"

/* The byte strings no answer may carry back: the credential and each
 * header value the profile adds (fixed text can be a secret too), as they
 * are and in the forms an echo takes them: percent-encoded (every byte or
 * some, %xx in either case, '+' for a space), hex (either case), and
 * base64 (standard and URL-safe). A secret `bytes` is matched in all its
 * byte-wise forms at once (secret_match); one that is not (a base64 form)
 * only as it is. */
struct secret {
	char *v;
	bool bytes;
};
struct secrets {
	struct secret v[32];
	size_t n;
};

/* The template with every {credential} replaced (malloc'd). */
char *secrets_render(const char *template, const char *credential);
/* The secrets of one hold: the credential and the profile's rendered headers. */
void secrets_fill(struct secrets *s, const struct bh_egress_profile *p, const char *cred);
void secrets_free(struct secrets *s);
/* data[0..len) with every secret, in any of its forms, replaced by SCRUBBED
 * (appended to out). */
void secrets_scrub(const struct secrets *s, const uint8_t *data, size_t len, struct buf *out);

#endif
