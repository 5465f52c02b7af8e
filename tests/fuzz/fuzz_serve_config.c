/* serve's config file parser (src/cli/serve_config.c): an operator's file
 * may hold anything; parsing accepts or refuses with "NAME:LINE: ...",
 * never crashes or leaks, and what it accepts --print-config writes back as
 * a file that parses to the same settings (printed twice, the same text). */
#include "serve_settings.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses text (copied: the parser writes into it) and prints the result;
 * NULL when refused. */
static char *parse_and_print(const char *data, size_t size, struct serve_settings *s)
{
	s->text = malloc(size + 1);
	if (!s->text)
		abort();
	memcpy(s->text, data, size);
	s->text[size] = '\0';
	char *why = NULL;
	if (serve_parse_config(s, s->text, size, "fuzz.conf", &why) < 0) {
		if (!why || strncmp(why, "fuzz.conf:", 10))
			abort(); /* a refusal names the file and the line */
		free(why);
		return NULL;
	}
	if (why)
		abort();
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	serve_print_config(f, s);
	fclose(f);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > SERVE_CONFIG_MAX)
		return 0; /* serve_read_config refuses it before the parser */
	struct serve_settings *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	if (!a || !b)
		abort();
	char *first = parse_and_print((const char *)data, size, a);
	if (first) {
		char *again = parse_and_print(first, strlen(first), b);
		if (!again || strcmp(first, again))
			abort();
		free(again);
	}
	free(first);
	free(a->text);
	free(b->text);
	free(a);
	free(b);
	return 0;
}
