/* A capture's MANIFEST read back (bulkhead.h's "report" block): the text
 * bh_capture_finish writes, parsed as anyone's bytes — a folder handed
 * over for an incident may be damaged or forged. Only lines exactly as
 * bulkhead writes them are taken; every other line that claims to be a
 * file is a problem, said in words. Nothing here touches a file: `capture
 * --verify` checks the listed files against what this returns, the report
 * names the capture's target and the bundle's digest from it, and the
 * fuzz target (tests/fuzz/fuzz_capture_manifest.c) feeds the parser any
 * bytes. Reading the file is bh_capture_manifest_read's, at the end. */
#include "capture_manifest.h"
#include "engine_priv.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#define MANIFEST_HEADER "bulkhead capture manifest 1\n"

bool capture_name_ok(const char *name)
{
	if (!name[0] || name[0] == '.' || strlen(name) > BH_CAPTURE_NAME_MAX ||
	    !strcmp(name, BH_CAPTURE_MANIFEST))
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
			return false;
	return true;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* "2026-12-01T22:28:01.123Z", as capture.c's utc() writes it. */
static bool is_utc(const char *s, size_t n)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	if (n != sizeof shape - 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
			return false;
	return true;
}

/* A size as bulkhead prints it: decimal digits, no sign, no leading zero,
 * at most 20 of them and no more than a uint64_t holds. */
static bool parse_size(const char *s, size_t n, uint64_t *out)
{
	if (!n || n > 20 || (n > 1 && s[0] == '0'))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static void problem(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct buf *b, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_append(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	buf_append(b, "\n", 1);
}

/* "file SHA256 BYTES CAPTURED WHOLE|CUT NAME": six fields, one space
 * between each, nothing after the name. */
static bool file_line(const char *l, size_t len, struct bh_capture_manifest_file *f)
{
	const char *field[6];
	size_t flen[6], n = 0;
	const char *p = l, *end = l + len;
	while (n < 6 && p <= end) {
		const char *sp = n < 5 ? memchr(p, ' ', (size_t)(end - p)) : end;
		if (!sp)
			return false;
		field[n] = p;
		flen[n] = (size_t)(sp - p);
		n++;
		p = sp + 1;
	}
	if (n != 6 || flen[0] != 4 || memcmp(field[0], "file", 4) || !is_hex64(field[1], flen[1]) ||
	    !parse_size(field[2], flen[2], &f->size) || !is_utc(field[3], flen[3]) ||
	    flen[5] > BH_CAPTURE_NAME_MAX || memchr(field[5], ' ', flen[5]))
		return false;
	if (flen[4] == 5 && !memcmp(field[4], "whole", 5))
		f->cut = false;
	else if (flen[4] == 3 && !memcmp(field[4], "cut", 3))
		f->cut = true;
	else
		return false;
	memcpy(f->sha256, field[1], 64);
	f->sha256[64] = '\0';
	memcpy(f->captured, field[3], flen[3]);
	f->captured[flen[3]] = '\0';
	memcpy(f->name, field[5], flen[5]);
	f->name[flen[5]] = '\0';
	return capture_name_ok(f->name);
}

/* "key: value" of the header, the value copied when it fits and holds no
 * control byte (bulkhead wrote them as spaces); else left "". */
static void header_value(const char *l, size_t len, const char *key, char *out, size_t cap)
{
	size_t k = strlen(key);
	if (len < k + 2 || memcmp(l, key, k) || l[k] != ':' || l[k + 1] != ' ')
		return;
	const char *v = l + k + 2;
	size_t n = len - k - 2;
	if (n >= cap)
		return;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return;
	memcpy(out, v, n);
	out[n] = '\0';
	if (!strcmp(out, "-"))
		out[0] = '\0';
}

int bh_capture_manifest_parse(const char *text, size_t len, struct bh_capture_manifest *out,
			      bh_error **err)
{
	memset(out, 0, sizeof *out);
	if (memchr(text, '\0', len))
		return bh_fail(err, BH_E_INVALID, 0, "it holds a NUL byte: not a manifest");
	size_t hl = sizeof MANIFEST_HEADER - 1;
	if (len < hl || memcmp(text, MANIFEST_HEADER, hl))
		return bh_fail(err, BH_E_INVALID, 0,
			       "it does not start \"bulkhead capture manifest 1\"");
	struct buf bad = {0};
	size_t lineno = 1;
	bool too_many = false;
	for (size_t at = hl; at < len;) {
		const char *l = text + at;
		const char *nl = memchr(l, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - l) : len - at;
		at += ll + (nl ? 1 : 0);
		lineno++;
		if (ll >= 5 && !memcmp(l, "file ", 5)) {
			struct bh_capture_manifest_file f;
			if (!file_line(l, ll, &f)) {
				problem(&bad, "MANIFEST line %zu is not a file line bulkhead writes", lineno);
				continue;
			}
			bool twice = false;
			for (size_t i = 0; i < out->n_files && !twice; i++)
				twice = !strcmp(out->files[i].name, f.name);
			if (twice) {
				problem(&bad, "%s: listed twice", f.name);
				continue;
			}
			/* A capture holds at most BH_CAPTURE_FILES_MAX: more is not
			 * bulkhead's, and bounds the work a forged one can ask. */
			if (out->n_files == BH_CAPTURE_FILES_MAX) {
				if (!too_many)
					problem(&bad, "MANIFEST line %zu: more than %u files, more than a "
						      "capture holds", lineno, BH_CAPTURE_FILES_MAX);
				too_many = true;
				continue;
			}
			if (!out->files) {
				out->files = calloc(BH_CAPTURE_FILES_MAX, sizeof *out->files);
				if (!out->files)
					abort();
			}
			out->files[out->n_files++] = f;
			continue;
		}
		header_value(l, ll, "sandbox", out->sandbox, sizeof out->sandbox);
		header_value(l, ll, "session", out->session, sizeof out->session);
		header_value(l, ll, "runtime", out->runtime, sizeof out->runtime);
	}
	/* A session is a fingerprint or nothing: anything else names none. */
	if (out->session[0] && !is_hex64(out->session, strlen(out->session)))
		out->session[0] = '\0';
	if (bad.len) {
		buf_append(&bad, "", 1);
		out->problems = (char *)bad.data;
	}
	return 0;
}

void bh_capture_manifest_free(struct bh_capture_manifest *m)
{
	free(m->files);
	free(m->problems);
	memset(m, 0, sizeof *m);
}

int bh_capture_manifest_read(const char *dir, struct bh_capture_manifest *out,
			     char manifest_sha256[65], bh_error **err)
{
	memset(out, 0, sizeof *out);
	manifest_sha256[0] = '\0';
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "open the evidence folder %s", dir);
	cleanup_close int mfd = openat(dfd, BH_CAPTURE_MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (mfd < 0 || fstat(mfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > CAPTURE_MANIFEST_CAP)
		return bh_fail(err, BH_E_INVALID, mfd < 0 ? errno : 0,
			       "%s has no readable MANIFEST (a regular file of at most %u bytes)", dir,
			       CAPTURE_MANIFEST_CAP);
	cleanup_free char *m = xzalloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(mfd, m + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	sha256_hex(m, got, manifest_sha256);
	bh_error *why = NULL;
	if (bh_capture_manifest_parse(m, got, out, &why) < 0) {
		int rc = bh_fail(err, BH_E_INVALID, 0, "%s/MANIFEST: %s", dir, why->msg);
		bh_error_free(why);
		return rc;
	}
	return 0;
}
