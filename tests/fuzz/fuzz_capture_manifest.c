/* An evidence folder's MANIFEST as `bulkhead capture --verify` and the
 * report read it (src/engine/capture_manifest.c), fed any bytes: a folder
 * handed over for an incident may be forged. The parser must never read
 * past the bytes it was given, and what it takes keeps its promises: at
 * most BH_CAPTURE_FILES_MAX files, each a name an evidence folder may hold
 * (no path, no MANIFEST) listed once with a lower-case 64-digit SHA-256,
 * the problems one NUL-terminated line each, the target's fields free of
 * control bytes and the session a fingerprint or "". */
#include "capture_manifest.h"

#include <stdlib.h>
#include <string.h>

static void text_ok(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly the bytes, so ASan sees any read past them. */
	char *text = malloc(size ? size : 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	struct bh_capture_manifest m;
	bh_error *err = NULL;
	int rc = bh_capture_manifest_parse(text, size, &m, &err);
	if (rc < 0) {
		if (!err || !err->msg[0] || m.n_files || m.files || m.problems)
			abort();
		bh_error_free(err);
		free(text);
		return 0;
	}
	if (err || m.n_files > BH_CAPTURE_FILES_MAX)
		abort();
	for (size_t i = 0; i < m.n_files; i++) {
		const struct bh_capture_manifest_file *f = &m.files[i];
		if (!capture_name_ok(f->name) || strlen(f->sha256) != 64 ||
		    strspn(f->sha256, "0123456789abcdef") != 64 || strlen(f->captured) != 24)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m.files[j].name, f->name))
				abort();
	}
	text_ok(m.sandbox, sizeof m.sandbox);
	text_ok(m.runtime, sizeof m.runtime);
	text_ok(m.session, sizeof m.session);
	if (m.session[0] && strspn(m.session, "0123456789abcdef") != 64)
		abort();
	if (m.problems) {
		size_t n = strlen(m.problems);
		if (!n || m.problems[n - 1] != '\n')
			abort();
	}
	bh_capture_manifest_free(&m);
	free(text);
	return 0;
}
