/* serve's settings from the table (serve_options.c): one option's value
 * checked and stored, the command line, the flags laid over the file,
 * --print-config and --help. */
#include "serve_settings.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int serve_fail(char **why, const char *fmt, ...)
{
	if (!why)
		return -1;
	free(*why);
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(why, fmt, ap) < 0)
		abort();
	va_end(ap);
	return -1;
}

/* A number from lo to hi written in digits only; -1 otherwise ("8x" is not
 * 8, "" is not 0). */
static long long number_in(const char *s, long long lo, long long hi)
{
	if (!*s || s[strspn(s, "0123456789")] || strlen(s) > 10)
		return -1;
	long long v = atoll(s);
	return v >= lo && v <= hi ? v : -1;
}

/* "500ms", "2s", "5m", "1h" (digits alone: seconds) -> milliseconds; -1
 * when it is none of those. */
static long long duration_ms(const char *s)
{
	/* Digits first (strtoll would take " 5" and "+5"), and few enough that
	 * hours in milliseconds cannot overflow. */
	if (*s < '0' || *s > '9' || strspn(s, "0123456789") > 9)
		return -1;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (!strcmp(end, "ms"))
		return v;
	if (!strcmp(end, "s") || !*end)
		return v * 1000;
	if (!strcmp(end, "m"))
		return v * 60000;
	if (!strcmp(end, "h"))
		return v * 3600000;
	return -1;
}

/* ---- remote: absolute, a directory that exists (resolved again at each
 * Capture) ---- */
static bool directory_ok(const char *dir)
{
	struct stat st;
	return dir[0] == '/' && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A value --print-config can write back as one line that reads the same. */
static bool string_ok(const char *s)
{
	if (!*s || s[0] == ' ' || s[0] == '\t' || s[strlen(s) - 1] == ' ' ||
	    s[strlen(s) - 1] == '\t')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static void *field(struct serve_settings *s, const struct serve_option *o)
{
	return (char *)s + o->offset;
}

static void store(void *at, size_t size, long long v)
{
	switch (size) {
	case sizeof(uint8_t): /* bool */
		*(bool *)at = v != 0;
		break;
	case sizeof(uint32_t):
		*(uint32_t *)at = (uint32_t)v;
		break;
	default:
		*(uint64_t *)at = (uint64_t)v;
	}
}

static long long load(const void *at, size_t size)
{
	switch (size) {
	case sizeof(uint8_t):
		return *(const bool *)at;
	case sizeof(uint32_t):
		return *(const uint32_t *)at;
	default:
		return (long long)*(const uint64_t *)at;
	}
}

int serve_option_set(struct serve_settings *s, const struct serve_option *o, const char *text,
		     char **why)
{
	void *at = field(s, o);
	long long v = -1;
	switch (o->kind) {
	case SERVE_FLAG:
		if (strcmp(text, "true") && strcmp(text, "false"))
			return serve_fail(why, "not a valid value (true or false)");
		store(at, o->size, !strcmp(text, "true"));
		return 0;
	case SERVE_COUNT:
	case SERVE_NUMBER:
		if ((v = number_in(text, o->lo, o->hi)) < 0)
			return serve_fail(why, "not a valid value (a number from %lld to %lld)",
					  o->lo, o->hi);
		store(at, o->size, v);
		return 0;
	case SERVE_DURATION:
		if ((v = duration_ms(text)) < o->lo || v > o->hi)
			return serve_fail(
				why, "not a valid value (a duration: a number with ms, s, m or h)");
		store(at, o->size, v);
		return 0;
	case SERVE_CHOICE:
		for (const struct serve_choice *c = o->choices; c->word; c++)
			if (!strcmp(c->word, text)) {
				store(at, o->size, c->value);
				return 0;
			}
		return serve_fail(why, "not a valid value (%s)", o->arg);
	case SERVE_DIR:
		if (!directory_ok(text))
			return serve_fail(
				why,
				"not a valid value (an absolute path of a directory that exists)");
		*(const char **)at = text;
		return 0;
	case SERVE_STRING:
	case SERVE_META:
		if (!string_ok(text))
			return serve_fail(
				why,
				"not a valid value (not empty, no control characters, no blank at "
				"either end)");
		*(const char **)at = text;
		return 0;
	case SERVE_LIST: {
		unsigned *n = (unsigned *)((char *)s + o->count_offset);
		if (!string_ok(text))
			return serve_fail(
				why,
				"not a valid value (not empty, no control characters, no blank at "
				"either end)");
		if (*n >= (unsigned)o->hi)
			return serve_fail(why, "given more than %lld times", o->hi);
		((const char **)at)[(*n)++] = text;
		return 0;
	}
	}
	return serve_fail(why, "not a valid value");
}

/* "--name" or "--name=value" or the alias: the option, and *inline_value
 * when the value came after "=". */
static const struct serve_option *flag_option(const char *a, const char **inline_value)
{
	*inline_value = NULL;
	for (size_t i = 0; i < serve_options_count; i++) {
		const struct serve_option *o = &serve_options[i];
		if (o->alias && !strcmp(a, o->alias))
			return o;
		size_t n = strlen(o->name);
		if (strncmp(a, "--", 2) || strncmp(a + 2, o->name, n))
			continue;
		if (!a[2 + n])
			return o;
		if (a[2 + n] == '=' && o->arg) {
			*inline_value = a + 3 + n;
			return o;
		}
	}
	return NULL;
}

static bool takes_value(const struct serve_option *o)
{
	return o->arg != NULL;
}

int serve_parse_argv(struct serve_settings *s, int argc, char **argv, char **why)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		const struct serve_option *o = flag_option(a, &v);
		if (o && !takes_value(o)) {
			if (o->kind == SERVE_COUNT)
				store(field(s, o), o->size, load(field(s, o), o->size) + 1);
			else
				store(field(s, o), o->size, 1);
			if (!strcmp(o->name, "no-config"))
				s->config_path = NULL;
			s->given[o - serve_options] = true;
			continue;
		}
		if (!v) {
			if (i + 1 >= argc || a[0] != '-')
				return serve_fail(why, "serve: unexpected \"%s\"", a);
			v = argv[++i];
		}
		if (o && o->kind == SERVE_LIST && !s->given[o - serve_options])
			*(unsigned *)((char *)s + o->count_offset) = 0;
		if (!o)
			return serve_fail(
				why, "serve: %s %s: not an option, or not a valid value for it", a,
				v);
		char *w = NULL;
		if (serve_option_set(s, o, v, &w) < 0) {
			/* The command's old words, then what the value should be. */
			static const char invalid[] = "not a valid value ";
			bool paren = !strncmp(w, invalid, sizeof invalid - 1);
			serve_fail(why,
				   "serve: %s %s: not an option, or not a valid value for it%s%s",
				   a, v, paren ? " " : ": ", paren ? w + sizeof invalid - 1 : w);
			free(w);
			return -1;
		}
		s->given[o - serve_options] = true;
		/* Of --config and --no-config, the later counts (a test's
		 * harness says --no-config, the test itself --config). */
		if (!strcmp(o->name, "config"))
			s->no_config = false;
	}
	return 0;
}

void serve_settings_overlay(struct serve_settings *base, const struct serve_settings *over)
{
	for (size_t i = 0; i < serve_options_count; i++) {
		const struct serve_option *o = &serve_options[i];
		if (!over->given[i])
			continue;
		memcpy((char *)base + o->offset, (const char *)over + o->offset, o->size);
		if (o->kind == SERVE_LIST)
			memcpy((char *)base + o->count_offset, (const char *)over + o->count_offset,
			       sizeof(unsigned));
		base->given[i] = true;
	}
}

/* ---- --print-config ---- */

/* text after lead, each of its newlines written as `newline`. */
static void put_indented(FILE *out, const char *lead, const char *text, const char *newline)
{
	fputs(lead, out);
	for (const char *t = text; *t; t++)
		if (*t == '\n')
			fputs(newline, out);
		else
			fputc(*t, out);
}

static void print_duration(FILE *out, unsigned long long ms)
{
	static const struct {
		unsigned long long ms;
		const char *unit;
	} units[] = {{3600000, "h"}, {60000, "m"}, {1000, "s"}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (ms % units[i].ms == 0) {
			fprintf(out, "%llu%s", ms / units[i].ms, units[i].unit);
			return;
		}
	fprintf(out, "%llums", ms);
}

static void print_value(FILE *out, const struct serve_settings *s, const struct serve_option *o)
{
	const void *at = (const char *)s + o->offset;
	long long v = o->kind == SERVE_STRING || o->kind == SERVE_DIR ? 0 : load(at, o->size);
	fprintf(out, "%s = ", o->name);
	switch (o->kind) {
	case SERVE_FLAG:
		fputs(v ? "true" : "false", out);
		break;
	case SERVE_COUNT:
	case SERVE_NUMBER:
		fprintf(out, "%lld", v);
		break;
	case SERVE_DURATION:
		print_duration(out, (unsigned long long)v);
		break;
	case SERVE_CHOICE:
		for (const struct serve_choice *c = o->choices; c->word; c++)
			if (c->value == v) {
				fputs(c->word, out);
				break;
			}
		break;
	default:
		fputs(*(const char *const *)at, out);
	}
	fputc('\n', out);
}

void serve_print_config(FILE *out, const struct serve_settings *s)
{
	fputs("# bulkhead serve: the effective settings (bulkhead serve --print-config).\n"
	      "# A setting is \"key = value\", the key a flag's name without \"--\"; a line\n"
	      "# starting with # is a comment: here, a setting left at its default.\n",
	      out);
	for (int sec = 0; sec < SERVE_SECTION_COUNT; sec++) {
		fputs("\n", out);
		put_indented(out, "# ", serve_section_titles[sec], "\n# ");
		fputc('\n', out);
		for (size_t i = 0; i < serve_options_count; i++) {
			const struct serve_option *o = &serve_options[i];
			if (o->section != (enum serve_section)sec || o->kind == SERVE_META)
				continue;
			if (!s->given[i]) {
				fprintf(out, "# %s = %s\n", o->name, o->dflt);
				continue;
			}
			if (o->kind != SERVE_LIST) {
				print_value(out, s, o);
				continue;
			}
			unsigned n = *(const unsigned *)((const char *)s + o->count_offset);
			const char *const *names = (const void *)((const char *)s + o->offset);
			for (unsigned k = 0; k < n; k++)
				fprintf(out, "%s = %s\n", o->name, names[k]);
		}
	}
}

/* ---- --help ---- */

#define HELP_COLUMN 30
#define HELP_WIDTH 79

/* text word-wrapped from column `at` (the cursor is there) to HELP_WIDTH,
 * its newlines taken as spaces. */
static void put_wrapped(FILE *out, const char *text, int at)
{
	int col = at;
	for (const char *w = text; *w;) {
		while (*w == ' ' || *w == '\n')
			w++;
		size_t n = strcspn(w, " \n");
		if (!n)
			break;
		if (col > at && col + 1 + (int)n > HELP_WIDTH) {
			fprintf(out, "\n%*s", at, "");
			col = at;
		} else if (col > at) {
			fputc(' ', out);
			col++;
		}
		fwrite(w, 1, n, out);
		col += (int)n;
		w += n;
	}
}

void serve_print_help(FILE *out)
{
	fputs("usage: bulkhead serve [OPTION...]\n"
	      "Serves the engine over HTTP: plimsoll.v1.SandboxService and\n"
	      "bulkhead.v1.OperatorService (Connect unary JSON) on a unix socket, and on TCP\n"
	      "with --listen, until SIGTERM. SIGHUP reloads the clients file, the profiles\n"
	      "and the TLS certificate.\n"
	      "Every setting is also a line of the config file, " SERVE_CONFIG_DEFAULT "\n"
	      "(read when it exists) or --config FILE: \"key = value\", the key the flag's\n"
	      "name without \"--\", true or false for a flag, a repeatable key repeated, #\n"
	      "comments; flags override the file.\n"
	      "DUR is a number with ms, s, m or h (\"500ms\", \"5m\"); MiB a number of\n"
	      "mebibytes.\n",
	      out);
	for (int sec = 0; sec < SERVE_SECTION_COUNT; sec++) {
		fprintf(out, "\n%s\n", serve_section_titles[sec]);
		for (size_t i = 0; i < serve_options_count; i++) {
			const struct serve_option *o = &serve_options[i];
			if (o->section != (enum serve_section)sec)
				continue;
			int n = fprintf(out, "  %s%s--%s%s%s", o->alias ? o->alias : "",
					o->alias ? ", " : "", o->name, o->arg ? " " : "",
					o->arg ? o->arg : "");
			/* The text starts at its column, or on the next line. */
			if (n >= HELP_COLUMN - 1) {
				fputc('\n', out);
				n = 0;
			}
			fprintf(out, "%*s", HELP_COLUMN - n, "");
			char *text = NULL;
			bool dflt =
				o->dflt && strcmp(o->dflt, "false") && strcmp(o->dflt, "(none)");
			if (asprintf(&text, "%s%s%.*s%s", o->help, dflt ? " (default: " : "",
				     dflt ? (int)strlen(o->dflt) - (o->dflt[0] == '(' ? 2 : 0) : 0,
				     dflt ? o->dflt + (o->dflt[0] == '(') : "",
				     dflt ? ")" : "") < 0)
				abort();
			put_wrapped(out, text, HELP_COLUMN);
			free(text);
			fputc('\n', out);
		}
	}
}
