/* `e` in :leaks — the incident report (report_view.h). One report at a
 * time: its state lives here. The suspects' rows are asked one after the
 * other through the source (records, then cells, per suspect; then the
 * newest events once), so it reads the same from an embedded engine, a
 * daemon or a store. */
#include "capture_view.h"
#include "record.h"
#include "report_view.h"
#include "ui_files.h"
#include "wire_operator.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define REPORT_RECORDS 1000 /* per suspect: one page */
#define REPORT_CELLS 200
#define REPORT_EVENTS 1000
#define REPORT_OUTPUT 4096  /* bytes of each stream shown (the store keeps more) */
#define CAPTURES_KEPT 32

/* ---- the captures made in this console ---- */

static struct {
	char target[65], dir[PATH_MAX];
} captures[CAPTURES_KEPT];
static size_t n_captures;

void capture_remember(const char *target, const char *dir)
{
	size_t i = n_captures < CAPTURES_KEPT ? n_captures++ : CAPTURES_KEPT - 1;
	snprintf(captures[i].target, sizeof captures[i].target, "%s", target);
	snprintf(captures[i].dir, sizeof captures[i].dir, "%s", dir);
}

const char *capture_recalled(const char *sandbox, const char *fingerprint)
{
	for (size_t i = n_captures; i-- > 0;)
		if ((*sandbox && !strcmp(captures[i].target, sandbox)) ||
		    (*fingerprint && !strcmp(captures[i].target, fingerprint)))
			return captures[i].dir;
	return NULL;
}

/* ---- collecting ---- */

struct cell_copy {
	uint64_t sequence;
	char *code, *out, *err;
};

struct suspect {
	struct bh_leak l;
	struct ui_record *records;
	size_t n_records;
	struct cell_copy *cells;
	size_t n_cells;
	char error[256];
};

static struct {
	bool busy;
	struct app *a;
	char stem[PATH_MAX];
	struct suspect *s;
	size_t n, at;
	struct ui_event *events;
	size_t n_events;
	char events_error[256];
} rep;

static void reset(void)
{
	for (size_t i = 0; i < rep.n; i++) {
		free(rep.s[i].records);
		for (size_t c = 0; c < rep.s[i].n_cells; c++) {
			free(rep.s[i].cells[c].code);
			free(rep.s[i].cells[c].out);
			free(rep.s[i].cells[c].err);
		}
		free(rep.s[i].cells);
	}
	free(rep.s);
	free(rep.events);
	memset(&rep, 0, sizeof rep);
}

static char *copy_bytes(const char *p, size_t n)
{
	if (n > REPORT_OUTPUT)
		n = REPORT_OUTPUT;
	char *c = malloc(n + 1);
	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	c[n] = '\0';
	/* A NUL inside is shown as the control byte it is, not an end. */
	for (size_t i = 0; i < n; i++)
		if (!c[i])
			c[i] = 0x01;
	return c;
}

static void next_suspect(void);
static void write_report(void);

static void events_loaded(void *arg, const struct ui_event *rows, size_t n, const char *err)
{
	(void)arg;
	if (err)
		snprintf(rep.events_error, sizeof rep.events_error, "%s", err);
	rep.events = calloc(n ? n : 1, sizeof *rows);
	if (!rep.events)
		abort();
	if (n)
		memcpy(rep.events, rows, n * sizeof *rows);
	rep.n_events = n;
	write_report();
}

static void cells_loaded(void *arg, const struct ui_cell *rows, size_t n, const char *err)
{
	struct suspect *s = arg;
	if (err && !*s->error)
		snprintf(s->error, sizeof s->error, "cells: %s", err);
	s->cells = calloc(n ? n : 1, sizeof *s->cells);
	if (!s->cells)
		abort();
	for (size_t i = 0; i < n; i++)
		s->cells[i] = (struct cell_copy){.sequence = rows[i].sequence,
						 .code = copy_bytes(rows[i].code, rows[i].code_len),
						 .out = copy_bytes(rows[i].out, rows[i].out_len),
						 .err = copy_bytes(rows[i].err, rows[i].err_len)};
	s->n_cells = n;
	rep.at++;
	next_suspect();
}

static void records_loaded(void *arg, const struct ui_record *rows, size_t n, const char *err)
{
	struct suspect *s = arg;
	if (err)
		snprintf(s->error, sizeof s->error, "records: %s", err);
	s->records = calloc(n ? n : 1, sizeof *rows);
	if (!s->records)
		abort();
	if (n)
		memcpy(s->records, rows, n * sizeof *rows);
	s->n_records = n;
	rep.a->src->ops->cells(rep.a->src, s->l.fingerprint, 0, REPORT_CELLS, cells_loaded, s);
}

static void next_suspect(void)
{
	while (rep.at < rep.n && !*rep.s[rep.at].l.fingerprint)
		rep.at++; /* an orphan, an image, a cgroup: no rows to ask for */
	if (rep.at == rep.n) {
		struct ui_page page = {.newest = true, .limit = REPORT_EVENTS};
		rep.a->src->ops->events(rep.a->src, &page, events_loaded, NULL);
		return;
	}
	struct suspect *s = &rep.s[rep.at];
	struct ui_page page = {.after = 0, .limit = REPORT_RECORDS};
	rep.a->src->ops->records(rep.a->src, s->l.fingerprint, &page, records_loaded, s);
}

/* ---- writing ---- */

/* Every string as UTF-8 (a byte outside a valid sequence as U+FFFD): a
 * sandbox's output or a name is anyone's bytes, the JSON is a reader's. */
static void add_str(cJSON *o, const char *key, const char *value)
{
	char *v = wire_utf8_lossy(value ? value : "");
	cJSON_AddStringToObject(o, key, v);
	free(v);
}

static void utc(int64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm)) {
		snprintf(out, 40, "-");
		return;
	}
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%03dZ", (int)(ms % 1000));
}

static const char *verdict_name(enum bh_chain_verdict v)
{
	switch (v) {
	case BH_CHAIN_OK:
		return "verifies";
	case BH_CHAIN_DIGEST:
		return "digest does not match its fields";
	case BH_CHAIN_LINK:
		return "chain breaks here";
	}
	return "?";
}

static const struct cell_copy *cell_of(const struct suspect *s, uint64_t seq)
{
	for (size_t i = 0; i < s->n_cells; i++)
		if (s->cells[i].sequence == seq)
			return &s->cells[i];
	return NULL;
}

/* The capture's MANIFEST, verified again now, and the bundle's digest as
 * it lists it. */
static cJSON *capture_json(FILE *md, const char *dir)
{
	cJSON *o = cJSON_CreateObject();
	add_str(o, "dir", dir);
	size_t n = 0;
	char sha[65] = "";
	char *problems = NULL;
	bh_error *err = NULL;
	int rc = bh_capture_verify(dir, &n, sha, &problems, &err);
	add_str(o, "manifestSha256", sha);
	cJSON_AddBoolToObject(o, "verifies", rc == 0 && !problems);
	cJSON_AddNumberToObject(o, "filesVerified", (double)n);
	add_str(o, "problems", rc < 0 ? err->msg : problems ? problems : "");
	char bundle[65] = "";
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/%s", dir, BH_CAPTURE_MANIFEST);
	FILE *m = fopen(path, "re");
	char line[512];
	while (m && fgets(line, sizeof line, m)) {
		char s[80], name[160];
		if (sscanf(line, "file %79s %*s %*s %*s %159s", s, name) == 2 &&
		    !strcmp(name, "config.json") && strlen(s) == 64)
			memcpy(bundle, s, sizeof bundle); /* 64 hex digits and the NUL */
	}
	if (m)
		fclose(m);
	cJSON_AddItemToObject(o, "bundleSha256", *bundle ? cJSON_CreateString(bundle) : cJSON_CreateNull());
	fprintf(md, "\nCapture: ");
	ui_md_cell(md, dir);
	fprintf(md, ", MANIFEST sha256 %s, %s (%zu files)%s%s.\n", sha,
		rc == 0 && !problems ? "verifies" : "DOES NOT VERIFY", n,
		*bundle ? ", bundle config.json sha256 " : "", bundle);
	free(problems);
	bh_error_free(err);
	return o;
}

static void md_text_block(FILE *md, const char *label, const char *text)
{
	if (!*text)
		return;
	/* A fence longer than any run of backticks inside cannot be closed by it. */
	size_t run = 0, longest = 0;
	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	size_t fence = longest < 3 ? 3 : longest + 1;
	fprintf(md, "%s:\n\n", label);
	for (size_t i = 0; i < fence; i++)
		fputc('`', md);
	fputc('\n', md);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '\n' || *p == '\t' || (*p >= 0x20 && *p != 0x7f))
			fputc(*p, md);
		else
			fprintf(md, "\\x%02x", *p);
	}
	if (text[strlen(text) - 1] != '\n')
		fputc('\n', md);
	for (size_t i = 0; i < fence; i++)
		fputc('`', md);
	fprintf(md, "\n\n");
}

static cJSON *suspect_json(FILE *md, const struct suspect *s)
{
	const struct bh_leak *l = &s->l;
	cJSON *o = cJSON_CreateObject();
	add_str(o, "kind", bh_leak_kind_name(l->kind));
	add_str(o, "sandbox", l->sandbox);
	add_str(o, "session", l->fingerprint);
	add_str(o, "runtime", l->runtime);
	add_str(o, "reason", l->reason);
	add_str(o, "holder", l->holder);
	cJSON_AddNumberToObject(o, "firstSeenUnixMs", (double)l->first_seen_ms);
	fprintf(md, "\n## %s ", bh_leak_kind_name(l->kind));
	ui_md_cell(md, *l->sandbox ? l->sandbox : l->fingerprint);
	fprintf(md, "\n\n- session: ");
	ui_md_cell(md, *l->fingerprint ? l->fingerprint : "-");
	fprintf(md, "\n- reason: ");
	ui_md_cell(md, l->reason);
	fprintf(md, "\n- holder: ");
	ui_md_cell(md, l->holder);
	fputc('\n', md);
	const char *dir = capture_recalled(l->sandbox, l->fingerprint);
	if (dir)
		cJSON_AddItemToObject(o, "capture", capture_json(md, dir));
	else {
		cJSON_AddNullToObject(o, "capture");
		fprintf(md, "\nCapture: none made in this console (`v` in :leaks, or bulkhead capture).\n");
	}
	add_str(o, "error", s->error);
	if (*s->error) {
		fprintf(md, "\nNot read: ");
		ui_md_cell(md, s->error);
		fputc('\n', md);
	}
	/* The timeline: events and records in time order. */
	cJSON *tl = cJSON_AddArrayToObject(o, "timeline");
	size_t e = 0, r = 0;
	struct bh_chain_walk walk = {0};
	size_t bad = 0;
	fprintf(md, "\n### Timeline\n\n| when (UTC) | what | detail |\n|---|---|---|\n");
	while (true) {
		const struct ui_event *ev = NULL;
		while (e < rep.n_events && (!*l->fingerprint || strcmp(rep.events[e].session, l->fingerprint)) &&
		       strcmp(rep.events[e].sandbox, l->sandbox))
			e++;
		if (e < rep.n_events)
			ev = &rep.events[e];
		const struct ui_record *rec = r < s->n_records ? &s->records[r] : NULL;
		if (!ev && !rec)
			break;
		char when[40];
		if (rec && (!ev || rec->started_ms <= ev->at_ms)) {
			struct bh_record b;
			ui_record_to_bh(rec, &b);
			enum bh_chain_verdict v = bh_chain_step(&walk, &b);
			bad += v != BH_CHAIN_OK;
			const struct cell_copy *c = cell_of(s, rec->sequence);
			cJSON *x = cJSON_CreateObject();
			add_str(x, "type", "record");
			cJSON_AddNumberToObject(x, "atUnixMs", (double)rec->started_ms);
			cJSON_AddNumberToObject(x, "sequence", (double)rec->sequence);
			add_str(x, "recordSha256", rec->record);
			add_str(x, "previousSha256", rec->previous);
			add_str(x, "language", rec->language);
			add_str(x, "flags", rec->flags);
			cJSON_AddNumberToObject(x, "exitCode", rec->exit_code);
			add_str(x, "verification",
						v == BH_CHAIN_OK ? "ok" : v == BH_CHAIN_DIGEST ? "digest" : "link");
			add_str(x, "code", c ? c->code : "");
			add_str(x, "stdout", c ? c->out : "");
			add_str(x, "stderr", c ? c->err : "");
			cJSON_AddItemToArray(tl, x);
			utc(rec->started_ms, when);
			char what[96];
			snprintf(what, sizeof what, "record %llu, exit %d, %s",
				 (unsigned long long)rec->sequence, rec->exit_code, verdict_name(v));
			fprintf(md, "| %s | ", when);
			ui_md_cell(md, what);
			fprintf(md, " | ");
			ui_md_cell(md, rec->record);
			fprintf(md, " |\n");
			r++;
		} else {
			cJSON *x = cJSON_CreateObject();
			add_str(x, "type", "event");
			cJSON_AddNumberToObject(x, "atUnixMs", (double)ev->at_ms);
			cJSON_AddNumberToObject(x, "id", (double)ev->id);
			add_str(x, "kind", ev->kind);
			add_str(x, "detail", ev->detail);
			cJSON_AddItemToArray(tl, x);
			utc(ev->at_ms, when);
			fprintf(md, "| %s | ", when);
			ui_md_cell(md, ev->kind);
			fprintf(md, " | ");
			ui_md_cell(md, ev->detail);
			fprintf(md, " |\n");
			e++;
		}
	}
	cJSON_AddBoolToObject(o, "recordsVerify", bad == 0);
	fprintf(md, "\n%zu record%s, %s.\n", s->n_records, s->n_records == 1 ? "" : "s",
		bad ? "SOME DO NOT VERIFY" : "every digest and chain link verifies");
	for (size_t i = 0; i < s->n_records; i++) {
		const struct cell_copy *c = cell_of(s, s->records[i].sequence);
		if (!c)
			continue;
		fprintf(md, "\n### Cell %llu\n\n", (unsigned long long)c->sequence);
		md_text_block(md, "code", c->code);
		md_text_block(md, "stdout", c->out);
		md_text_block(md, "stderr", c->err);
	}
	return o;
}

static void write_report(void)
{
	struct app *a = rep.a;
	static const char *const exts[] = {"md", "json"};
	FILE *out[2];
	char names[2][256];
	rep.busy = false;
	app_busy(a, "");
	if (ui_create_set(rep.stem, exts, 2, out, names) < 0) {
		app_flash(a, C_BAD, "no report: cannot create %s.md (or a free name after it): %s",
			  rep.stem, strerror(errno));
		reset();
		return;
	}
	FILE *md = out[0];
	struct utsname u;
	uname(&u);
	char where[256], now[40];
	a->src->ops->describe(a->src, where, sizeof where);
	utc((int64_t)time(NULL) * 1000, now);
	bool embedded = !strcmp(a->src->ops->kind, "embedded");
	cJSON *root = cJSON_CreateObject();
	add_str(root, "format", "bulkhead.report.v1");
	add_str(root, "generated", now);
	cJSON *host = cJSON_AddObjectToObject(root, "host");
	add_str(host, "name", u.nodename);
	add_str(host, "kernel", u.release);
	add_str(root, "source", where);
	add_str(root, "sourceKind", a->src->ops->kind);
	/* The console is the engine when it embeds it; a daemon's or a dead
	 * engine's pid is what each finding's holder names. */
	if (embedded)
		cJSON_AddNumberToObject(root, "enginePid", (double)getpid());
	else
		cJSON_AddNullToObject(root, "enginePid");
	cJSON *ver = cJSON_AddObjectToObject(root, "versions");
	add_str(ver, "bulkhead", BULKHEAD_VERSION);
	add_str(root, "eventsError", rep.events_error);
	fprintf(md, "# bulkhead incident report\n\n- generated: %s\n- host: ", now);
	ui_md_cell(md, u.nodename);
	fprintf(md, " (Linux ");
	ui_md_cell(md, u.release);
	fprintf(md, ")\n- source: ");
	ui_md_cell(md, where);
	if (embedded)
		fprintf(md, "\n- engine pid: %d", (int)getpid());
	fprintf(md, "\n- bulkhead %s\n- %zu suspect%s\n", BULKHEAD_VERSION, rep.n, rep.n == 1 ? "" : "s");
	fprintf(md, "\n| kind | sandbox | session | reason | holder |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < rep.n; i++) {
		const struct bh_leak *l = &rep.s[i].l;
		/* Every cell escaped: a sandbox's name or a reason is not ours. */
		const char *cells[] = {bh_leak_kind_name(l->kind), l->sandbox,
				       *l->fingerprint ? l->fingerprint : "-", l->reason, l->holder};
		for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
			fputs(c ? " | " : "| ", md);
			ui_md_cell(md, cells[c]);
		}
		fputs(" |\n", md);
	}
	cJSON *arr = cJSON_AddArrayToObject(root, "suspects");
	for (size_t i = 0; i < rep.n; i++)
		cJSON_AddItemToArray(arr, suspect_json(md, &rep.s[i]));
	fclose(md);
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	fprintf(out[1], "%s\n", text ? text : "{}");
	fclose(out[1]);
	free(text);
	app_flash(a, C_GOOD, "wrote %s and %s", names[0], names[1]);
	reset();
}

static void on_stem(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (!text || !capture_folder(text, rep.stem, sizeof rep.stem)) {
		app_flash(a, C_INFO, "no report: %s", text ? rep.stem : "cancelled");
		reset();
		return;
	}
	/* The stem names the report; .md and .json are added to it. */
	size_t n = strlen(rep.stem);
	if (n > 3 && !strcmp(rep.stem + n - 3, ".md"))
		rep.stem[n - 3] = '\0';
	rep.busy = true;
	app_busy(a, "reading the suspects' records");
	next_suspect();
}

void report_ask(struct app *a, const struct bh_leak *findings, size_t n)
{
	if (rep.busy) {
		app_flash(a, C_WARN, "a report is being written already");
		return;
	}
	reset();
	rep.a = a;
	rep.s = calloc(n ? n : 1, sizeof *rep.s);
	if (!rep.s)
		abort();
	for (size_t i = 0; i < n; i++)
		rep.s[i].l = findings[i];
	rep.n = n;
	char stamp[32], initial[64];
	capture_stamp(stamp);
	snprintf(initial, sizeof initial, "./bulkhead-leaks-%s", stamp);
	prompt_text(a, "report to (.md and .json): ", initial, on_stem, NULL);
}
