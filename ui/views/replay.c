/* Replay: until the Scenarios issue lands its player, this lists the
 * recorded scenarios present in data/scenarios (or $BULKHEAD_SCENARIOS)
 * with what each teaches. It executes nothing. */
#include "app.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const headers[] = {"SCENARIO", "TEACHES"};
static const int widths[] = {28, 0};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *b = n >= 0 && n < (1 << 22) ? malloc((size_t)n + 1) : NULL;
	if (b && fread(b, 1, (size_t)n, f) == (size_t)n)
		b[n] = '\0';
	else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static void load(struct app *a, struct view *v)
{
	(void)a;
	const char *dir = getenv("BULKHEAD_SCENARIOS");
	if (!dir || !*dir)
		dir = "data/scenarios";
	snprintf(v->sub, sizeof v->sub, "(%s)", dir);
	table_clear(&v->t);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char *text = slurp(path);
		cJSON *j = text ? cJSON_Parse(text) : NULL;
		const char *teaches = cJSON_GetStringValue(cJSON_GetObjectItem(j, "teaches"));
		if (!teaches)
			teaches = cJSON_GetStringValue(cJSON_GetObjectItem(j, "title"));
		struct trow *r = table_add(&v->t, e->d_name, j ? C_NORMAL : C_BAD);
		table_cell(r, 0, "%.*s", (int)(n - 5), e->d_name);
		table_cell(r, 1, "%s", j ? (teaches ? teaches : "") : "(not a scenario: unreadable JSON)");
		cJSON_Delete(j);
		free(text);
	}
	if (d)
		closedir(d);
	table_index(&v->t, v->filter, NULL);
}

static void enter(struct app *a, struct view *v, const struct trow *row)
{
	(void)v;
	app_flash(a, C_INFO, "%s: the hop-by-hop player comes with the Scenarios issue", row->key);
}

const struct view_ops view_replay = {
	.name = "replay",
	.title = "Replay",
	.ncols = sizeof headers / sizeof headers[0],
	.headers = headers,
	.widths = widths,
	.load = load,
	.enter = enter,
};
