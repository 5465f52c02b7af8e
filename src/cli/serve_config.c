/* serve's config file (/etc/bulkhead/bulkhead.conf, or --config FILE):
 * "key = value" lines whose keys are serve's long flags. Whoever can write
 * it decides who may call and how much they may take, so it is read as
 * hostile: its owner and mode checked like the clients file's, its size and
 * lines bounded, and any line that is not exactly a setting refuses the
 * whole file. */
#include "serve_settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int checked_open(const char *path, struct stat *st, bool *missing, char **why)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int saved = errno;
		if (missing)
			*missing = saved == ENOENT;
		return serve_fail(why, "cannot open the config file %s: %s", path, strerror(saved));
	}
	const char *no = NULL;
	memset(st, 0, sizeof *st);
	if (fstat(fd, st) < 0)
		no = "cannot be looked at";
	else if (!S_ISREG(st->st_mode))
		no = "is not a regular file";
	else if (st->st_uid != 0 && st->st_uid != geteuid())
		no = "is owned by neither root nor us";
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		no = st->st_mode & S_IWOTH ? "is world-writable" : "is group-writable";
	else if ((uintmax_t)st->st_size > SERVE_CONFIG_MAX)
		no = "is larger than 64 KiB";
	if (no) {
		close(fd);
		/* Whoever can write it decides who may call: chmod go-w. */
		return serve_fail(
			why,
			"refusing the config file %s: it %s (owner uid %u, mode %04o); it must be "
			"a file of root's or ours that only its owner may write",
			path, no, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
	}
	return fd;
}

int serve_read_config(const char *path, char **text, size_t *len, bool *missing, char **why)
{
	if (missing)
		*missing = false;
	struct stat st;
	int fd = checked_open(path, &st, missing, why);
	if (fd < 0)
		return -1;
	char *buf = malloc((size_t)st.st_size + 2);
	if (!buf)
		abort();
	size_t got = 0;
	for (;;) {
		/* One byte past the size stat gave, to notice a file that grew. */
		ssize_t r = read(fd, buf + got, (size_t)st.st_size + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (got += (size_t)(r > 0 ? r : 0)) > (size_t)st.st_size) {
			int saved = r < 0 ? errno : 0;
			free(buf);
			close(fd);
			return saved ? serve_fail(why, "cannot read the config file %s: %s", path,
						  strerror(saved))
				     : serve_fail(why,
						  "the config file %s changed while it was read",
						  path);
		}
		if (r == 0)
			break;
	}
	close(fd);
	buf[got] = '\0';
	*text = buf;
	*len = got;
	return 0;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* [s, e) without blanks at either end, NUL-terminated in place. */
static char *trim(char *s, char *e)
{
	while (s < e && blank(*s))
		s++;
	while (e > s && blank(e[-1]))
		e--;
	*e = '\0';
	return s;
}

/* What a refusal quotes of a line it could not read as a setting: the text
 * when it is short and plain (a key is lowercase letters, digits and
 * dashes), else words, so that neither a terminal nor a JSON log line
 * carries the file's bytes. */
static const char *quotable(const char *text)
{
	size_t n = strlen(text);
	if (n > 64)
		return "(a long line)";
	for (const unsigned char *c = (const unsigned char *)text; *c; c++)
		if (*c < 0x20 || *c >= 0x7f)
			return "(characters other than printable ASCII)";
	return text;
}

int serve_parse_config(struct serve_settings *s, char *text, size_t len, const char *name,
		       char **why)
{
	unsigned first[sizeof s->given] = {0};
	char *p = text, *end = text + len;
	for (unsigned line = 1; p < end; line++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		if (memchr(p, '\0', (size_t)(e - p)))
			return serve_fail(why, "%s:%u: a NUL byte: not a text file", name, line);
		if (e - p > SERVE_CONFIG_LINE_MAX)
			return serve_fail(why, "%s:%u: the line is longer than %d bytes", name,
					  line, SERVE_CONFIG_LINE_MAX);
		char *next = nl ? nl + 1 : end;
		if (e > p && e[-1] == '\r')
			e--;
		char *l = trim(p, e);
		p = next;
		if (!*l || *l == '#')
			continue;
		char *eq = strchr(l, '=');
		if (!eq)
			return serve_fail(why, "%s:%u: %s: not a setting (key = value)", name, line,
					  quotable(l));
		char *key = trim(l, eq), *value = trim(eq + 1, eq + 1 + strlen(eq + 1));
		const struct serve_option *o = serve_option_find(key);
		if (!o)
			return serve_fail(
				why,
				"%s:%u: %s: not a setting of bulkhead serve (bulkhead serve "
				"--help lists them)",
				name, line, quotable(key));
		size_t i = (size_t)(o - serve_options);
		if (o->kind == SERVE_META)
			return serve_fail(why,
					  "%s:%u: %s: a flag of the command line, not a setting",
					  name, line, key);
		if (first[i] && o->kind != SERVE_LIST)
			return serve_fail(why, "%s:%u: %s: given twice (first on line %u)", name,
					  line, key, first[i]);
		char *w = NULL;
		if (serve_option_set(s, o, value, &w) < 0) {
			serve_fail(why, "%s:%u: %s: %s", name, line, key, w);
			free(w);
			return -1;
		}
		if (!first[i])
			first[i] = line;
		s->given[i] = true;
	}
	return 0;
}
