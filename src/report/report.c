/* The incident report (report.h): what a suspect's rows say, kept as they
 * are added, then written as Markdown or JSON. The rows are copied when
 * added (a caller's rows live only during its callback); a record's digest
 * and chain link are checked then, in the order they come (chain order). */
#include "report.h"
#include "wire_operator.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

struct rep_record {
	uint64_t sequence;
	int64_t started_ms;
	char record[65], previous[65], language[16], flags[96];
	int exit_code;
	enum bh_chain_verdict verdict;
};

struct rep_cell {
	uint64_t sequence;
	char *code, *out, *err;
};

struct rep_intent {
	uint64_t sequence;
	int64_t started_ms, engine_pid;
	char code_sha256[65], language[16], principal[65], owner[65];
	char *code; /* "" when the store keeps digests only */
	bool code_kept, interrupted;
};

struct rep_event {
	int64_t id, at_ms;
	char kind[24], session[65], sandbox[64], actor[65];
	char *detail;
};

struct rep_suspect {
	struct bh_leak l;
	struct rep_record *records;
	size_t n_records;
	struct bh_chain_walk walk;
	struct rep_cell *cells;
	size_t n_cells;
	struct rep_intent *intents;
	size_t n_intents;
	char *capture;
	char error[256];
};

struct bh_report {
	char *where, *kind;
	int64_t engine_pid;
	struct rep_suspect *s;
	size_t n;
	struct rep_event *events;
	size_t n_events;
	char events_error[256];
};

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, (n + 1) * size);
	if (!q)
		abort();
	return q;
}

static char *dup0(const char *s)
{
	char *c = strdup(s ? s : "");
	if (!c)
		abort();
	return c;
}

static void copy_to(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* At most BH_REPORT_OUTPUT bytes of anyone's; a NUL inside is shown as the
 * control byte it is, not an end. */
static char *copy_bytes(const void *p, size_t n)
{
	if (n > BH_REPORT_OUTPUT)
		n = BH_REPORT_OUTPUT;
	char *c = malloc(n + 1);
	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	c[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!c[i])
			c[i] = 0x01;
	return c;
}

bh_report *bh_report_new(const char *where, const char *kind, int64_t engine_pid)
{
	bh_report *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	r->where = dup0(where);
	r->kind = dup0(kind);
	r->engine_pid = engine_pid;
	return r;
}

void bh_report_free(bh_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct rep_suspect *s = &r->s[i];
		free(s->records);
		for (size_t c = 0; c < s->n_cells; c++) {
			free(s->cells[c].code);
			free(s->cells[c].out);
			free(s->cells[c].err);
		}
		free(s->cells);
		for (size_t c = 0; c < s->n_intents; c++)
			free(s->intents[c].code);
		free(s->intents);
		free(s->capture);
	}
	free(r->s);
	for (size_t i = 0; i < r->n_events; i++)
		free(r->events[i].detail);
	free(r->events);
	free(r->where);
	free(r->kind);
	free(r);
}

size_t bh_report_add_suspect(bh_report *r, const struct bh_leak *l)
{
	r->s = grow(r->s, r->n, sizeof *r->s);
	memset(&r->s[r->n], 0, sizeof r->s[r->n]);
	r->s[r->n].l = *l;
	return r->n++;
}

size_t bh_report_suspects(const bh_report *r)
{
	return r->n;
}

const char *bh_report_suspect_session(const bh_report *r, size_t suspect)
{
	return r->s[suspect].l.fingerprint;
}

void bh_report_add_record(bh_report *r, size_t suspect, const struct bh_record *rec,
			  const char *language, const char *flags, int exit_code)
{
	struct rep_suspect *s = &r->s[suspect];
	s->records = grow(s->records, s->n_records, sizeof *s->records);
	struct rep_record *x = &s->records[s->n_records++];
	*x = (struct rep_record){.sequence = rec->sequence,
				 .started_ms = rec->started_unix_ms,
				 .exit_code = exit_code,
				 .verdict = bh_chain_step(&s->walk, rec)};
	/* The next record is judged by its own link to this one as the store
	 * keeps it (the records view's rule): one tampered record is one ✗,
	 * not every record after it. */
	if (x->verdict != BH_CHAIN_OK && *rec->session) {
		copy_to(s->walk.session, sizeof s->walk.session, rec->session);
		s->walk.sequence = rec->sequence;
		copy_to(s->walk.previous, sizeof s->walk.previous, rec->record_sha256);
	}
	copy_to(x->record, sizeof x->record, rec->record_sha256);
	copy_to(x->previous, sizeof x->previous, rec->previous_sha256);
	copy_to(x->language, sizeof x->language, language);
	copy_to(x->flags, sizeof x->flags, flags);
}

void bh_report_add_cell(bh_report *r, size_t suspect, uint64_t sequence, const void *code,
			size_t code_len, const void *out, size_t out_len, const void *err,
			size_t err_len)
{
	struct rep_suspect *s = &r->s[suspect];
	s->cells = grow(s->cells, s->n_cells, sizeof *s->cells);
	s->cells[s->n_cells++] = (struct rep_cell){.sequence = sequence,
						   .code = copy_bytes(code, code_len),
						   .out = copy_bytes(out, out_len),
						   .err = copy_bytes(err, err_len)};
}

void bh_report_add_intent(bh_report *r, size_t suspect, const struct bh_inflight *in)
{
	struct rep_suspect *s = &r->s[suspect];
	s->intents = grow(s->intents, s->n_intents, sizeof *s->intents);
	struct rep_intent *x = &s->intents[s->n_intents++];
	*x = (struct rep_intent){.sequence = in->sequence,
				 .started_ms = in->started_ms,
				 .engine_pid = in->engine_pid,
				 .code = copy_bytes(in->code ? in->code : "", in->code ? in->code_len : 0),
				 .code_kept = in->code_kept,
				 .interrupted = in->interrupted};
	copy_to(x->code_sha256, sizeof x->code_sha256, in->code_sha256);
	copy_to(x->language, sizeof x->language, in->language);
	copy_to(x->principal, sizeof x->principal, in->principal);
	copy_to(x->owner, sizeof x->owner, in->owner);
}

void bh_report_set_capture(bh_report *r, size_t suspect, const char *dir)
{
	free(r->s[suspect].capture);
	r->s[suspect].capture = dup0(dir);
}

void bh_report_suspect_error(bh_report *r, size_t suspect, const char *why)
{
	if (!*r->s[suspect].error)
		copy_to(r->s[suspect].error, sizeof r->s[suspect].error, why);
}

void bh_report_add_event(bh_report *r, const struct bh_event *ev)
{
	r->events = grow(r->events, r->n_events, sizeof *r->events);
	struct rep_event *x = &r->events[r->n_events++];
	*x = (struct rep_event){.id = ev->id, .at_ms = ev->at_unix_ms, .detail = dup0(ev->detail)};
	copy_to(x->kind, sizeof x->kind, ev->kind);
	copy_to(x->session, sizeof x->session, ev->session);
	copy_to(x->sandbox, sizeof x->sandbox, ev->sandbox);
	copy_to(x->actor, sizeof x->actor, ev->actor);
}

void bh_report_events_error(bh_report *r, const char *why)
{
	if (!*r->events_error)
		copy_to(r->events_error, sizeof r->events_error, why);
}

/* ---- a capture's folder ---- */

static int fail(bh_error **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(bh_error **err, const char *fmt, ...)
{
	if (!err)
		return -1;
	*err = calloc(1, sizeof **err);
	va_list ap;
	va_start(ap, fmt);
	if (!*err || vasprintf(&(*err)->msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	(*err)->code = BH_E_INVALID;
	return -1;
}

int bh_report_attach_capture(bh_report *r, const char *dir, bh_error **err)
{
	struct bh_capture_manifest m;
	char sha[65];
	if (bh_capture_manifest_read(dir, &m, sha, err) < 0)
		return -1;
	size_t found = r->n;
	for (size_t i = 0; i < r->n && found == r->n; i++) {
		const struct bh_leak *l = &r->s[i].l;
		if ((*m.sandbox && !strcmp(m.sandbox, l->sandbox)) ||
		    (*m.session && !strcmp(m.session, l->fingerprint)))
			found = i;
	}
	char target[160];
	snprintf(target, sizeof target, "%s%s%s", m.sandbox, *m.sandbox && *m.session ? ", session " : "",
		 m.session);
	bh_capture_manifest_free(&m);
	if (found == r->n)
		return fail(err, "the capture %s is of %s, which is no suspect of this report", dir,
			    *target ? target : "nothing its MANIFEST names");
	/* The folder as the report shows it: absolute. */
	char abs[PATH_MAX];
	if (!realpath(dir, abs))
		snprintf(abs, sizeof abs, "%s", dir);
	bh_report_set_capture(r, found, abs);
	return 0;
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
	if (ms < 0 || !gmtime_r(&t, &tm)) {
		snprintf(out, 40, "-");
		return;
	}
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%03dZ", (int)(ms % 1000));
}

static const char *verdict_words(enum bh_chain_verdict v)
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

static const char *verdict_name(enum bh_chain_verdict v)
{
	return v == BH_CHAIN_OK ? "ok" : v == BH_CHAIN_DIGEST ? "digest" : "link";
}

static const struct rep_cell *cell_of(const struct rep_suspect *s, uint64_t seq)
{
	for (size_t i = 0; i < s->n_cells; i++)
		if (s->cells[i].sequence == seq)
			return &s->cells[i];
	return NULL;
}

/* The report is written twice, to Markdown or to JSON, from one walk: each
 * step says both, and the one not asked is not written (md NULL) or
 * dropped with its tree. */
struct out {
	FILE *md; /* NULL: JSON only */
};

static void md(const struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void md(const struct out *o, const char *fmt, ...)
{
	if (!o->md)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(o->md, fmt, ap);
	va_end(ap);
}

static void md_cell(const struct out *o, const char *s)
{
	if (o->md)
		bh_report_md_cell(o->md, s);
}

static void md_text_block(const struct out *o, const char *label, const char *text)
{
	if (!o->md || !*text)
		return;
	/* A fence longer than any run of backticks inside cannot be closed by it. */
	size_t run = 0, longest = 0;
	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	size_t fence = longest < 3 ? 3 : longest + 1;
	fprintf(o->md, "%s:\n\n", label);
	for (size_t i = 0; i < fence; i++)
		fputc('`', o->md);
	fputc('\n', o->md);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '\n' || *p == '\t' || (*p >= 0x20 && *p != 0x7f))
			fputc(*p, o->md);
		else
			fprintf(o->md, "\\x%02x", *p);
	}
	if (text[strlen(text) - 1] != '\n')
		fputc('\n', o->md);
	for (size_t i = 0; i < fence; i++)
		fputc('`', o->md);
	fprintf(o->md, "\n\n");
}

/* The capture's MANIFEST, verified again now, and the bundle's digest as
 * it lists it. */
static cJSON *capture_json(const struct out *out, const char *dir)
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
	struct bh_capture_manifest m;
	char again[65];
	if (rc == 0 && bh_capture_manifest_read(dir, &m, again, NULL) == 0) {
		for (size_t i = 0; i < m.n_files; i++)
			if (!strcmp(m.files[i].name, "config.json"))
				memcpy(bundle, m.files[i].sha256, sizeof bundle);
		bh_capture_manifest_free(&m);
	}
	cJSON_AddItemToObject(o, "bundleSha256", *bundle ? cJSON_CreateString(bundle) : cJSON_CreateNull());
	md(out, "\nCapture: ");
	md_cell(out, dir);
	md(out, ", MANIFEST sha256 %s, %s (%zu files)%s%s.\n", sha,
	   rc == 0 && !problems ? "verifies" : "DOES NOT VERIFY", n,
	   *bundle ? ", bundle config.json sha256 " : "", bundle);
	free(problems);
	bh_error_free(err);
	return o;
}

static bool names_suspect(const struct bh_leak *l, const char *session, const char *sandbox)
{
	return (*l->fingerprint && !strcmp(session, l->fingerprint)) ||
	       (*l->sandbox && !strcmp(sandbox, l->sandbox));
}

/* The next entry of a suspect's timeline: the earliest of its next
 * record, intent and event (a tie: record, then intent, then event). */
enum entry { ENTRY_NONE, ENTRY_RECORD, ENTRY_INTENT, ENTRY_EVENT };

static enum entry next_entry(const bh_report *r, const struct rep_suspect *s, size_t rec,
			     size_t in, size_t *ev)
{
	while (*ev < r->n_events &&
	       !names_suspect(&s->l, r->events[*ev].session, r->events[*ev].sandbox))
		(*ev)++;
	enum entry best = ENTRY_NONE;
	int64_t at = 0;
	if (rec < s->n_records)
		best = ENTRY_RECORD, at = s->records[rec].started_ms;
	if (in < s->n_intents && (best == ENTRY_NONE || s->intents[in].started_ms < at))
		best = ENTRY_INTENT, at = s->intents[in].started_ms;
	if (*ev < r->n_events && (best == ENTRY_NONE || r->events[*ev].at_ms < at))
		best = ENTRY_EVENT;
	return best;
}

static void timeline_row(const struct out *o, int64_t at_ms, const char *what, const char *detail)
{
	char when[40];
	utc(at_ms, when);
	md(o, "| %s | ", when);
	md_cell(o, what);
	md(o, " | ");
	md_cell(o, detail);
	md(o, " |\n");
}

static cJSON *record_json(const struct out *o, const struct rep_suspect *s,
			  const struct rep_record *rec)
{
	const struct rep_cell *c = cell_of(s, rec->sequence);
	cJSON *x = cJSON_CreateObject();
	add_str(x, "type", "record");
	cJSON_AddNumberToObject(x, "atUnixMs", (double)rec->started_ms);
	cJSON_AddNumberToObject(x, "sequence", (double)rec->sequence);
	add_str(x, "recordSha256", rec->record);
	add_str(x, "previousSha256", rec->previous);
	add_str(x, "language", rec->language);
	add_str(x, "flags", rec->flags);
	cJSON_AddNumberToObject(x, "exitCode", rec->exit_code);
	add_str(x, "verification", verdict_name(rec->verdict));
	add_str(x, "code", c ? c->code : "");
	add_str(x, "stdout", c ? c->out : "");
	add_str(x, "stderr", c ? c->err : "");
	char what[128];
	snprintf(what, sizeof what, "record %llu, exit %d, %s", (unsigned long long)rec->sequence,
		 rec->exit_code, verdict_words(rec->verdict));
	timeline_row(o, rec->started_ms, what, rec->record);
	return x;
}

static cJSON *intent_json(const struct out *o, const struct rep_intent *in)
{
	cJSON *x = cJSON_CreateObject();
	add_str(x, "type", "interrupted");
	cJSON_AddNumberToObject(x, "atUnixMs", (double)in->started_ms);
	cJSON_AddNumberToObject(x, "sequence", (double)in->sequence);
	add_str(x, "codeSha256", in->code_sha256);
	add_str(x, "language", in->language);
	add_str(x, "principal", in->principal);
	add_str(x, "owner", in->owner);
	cJSON_AddNumberToObject(x, "enginePid", (double)in->engine_pid);
	cJSON_AddBoolToObject(x, "wasRunning", in->interrupted);
	cJSON_AddBoolToObject(x, "codeKept", in->code_kept);
	add_str(x, "code", in->code);
	char what[160];
	snprintf(what, sizeof what, "%s: call %llu (%s), engine pid %lld",
		 in->interrupted ? "was running when its engine died" : "running",
		 (unsigned long long)in->sequence, in->language, (long long)in->engine_pid);
	char detail[320];
	snprintf(detail, sizeof detail, "principal %s, owner %s, code sha256 %s",
		 *in->principal ? in->principal : "-", *in->owner ? in->owner : "none",
		 in->code_sha256);
	timeline_row(o, in->started_ms, what, detail);
	return x;
}

static cJSON *event_json(const struct out *o, const struct rep_event *ev)
{
	cJSON *x = cJSON_CreateObject();
	add_str(x, "type", "event");
	cJSON_AddNumberToObject(x, "atUnixMs", (double)ev->at_ms);
	cJSON_AddNumberToObject(x, "id", (double)ev->id);
	add_str(x, "kind", ev->kind);
	add_str(x, "actor", ev->actor);
	add_str(x, "detail", ev->detail);
	timeline_row(o, ev->at_ms, ev->kind, ev->detail);
	return x;
}

static cJSON *suspect_json(const struct out *o, const bh_report *r, const struct rep_suspect *s)
{
	const struct bh_leak *l = &s->l;
	cJSON *x = cJSON_CreateObject();
	add_str(x, "kind", bh_leak_kind_name(l->kind));
	add_str(x, "sandbox", l->sandbox);
	add_str(x, "session", l->fingerprint);
	add_str(x, "runtime", l->runtime);
	add_str(x, "reason", l->reason);
	add_str(x, "holder", l->holder);
	cJSON_AddNumberToObject(x, "firstSeenUnixMs", (double)l->first_seen_ms);
	md(o, "\n## %s ", bh_leak_kind_name(l->kind));
	md_cell(o, *l->sandbox ? l->sandbox : l->fingerprint);
	md(o, "\n\n- session: ");
	md_cell(o, *l->fingerprint ? l->fingerprint : "-");
	md(o, "\n- reason: ");
	md_cell(o, l->reason);
	md(o, "\n- holder: ");
	md_cell(o, l->holder);
	md(o, "\n");
	if (s->capture)
		cJSON_AddItemToObject(x, "capture", capture_json(o, s->capture));
	else {
		cJSON_AddNullToObject(x, "capture");
		md(o, "\nCapture: none (`v` in :leaks, or bulkhead capture, then bulkhead report "
		      "--capture DIR).\n");
	}
	add_str(x, "error", s->error);
	if (*s->error) {
		md(o, "\nNot read: ");
		md_cell(o, s->error);
		md(o, "\n");
	}
	cJSON *tl = cJSON_AddArrayToObject(x, "timeline");
	md(o, "\n### Timeline\n\n| when (UTC) | what | detail |\n|---|---|---|\n");
	size_t rec = 0, in = 0, ev = 0, bad = 0;
	for (enum entry e; (e = next_entry(r, s, rec, in, &ev)) != ENTRY_NONE;) {
		if (e == ENTRY_RECORD) {
			bad += s->records[rec].verdict != BH_CHAIN_OK;
			cJSON_AddItemToArray(tl, record_json(o, s, &s->records[rec++]));
		} else if (e == ENTRY_INTENT)
			cJSON_AddItemToArray(tl, intent_json(o, &s->intents[in++]));
		else
			cJSON_AddItemToArray(tl, event_json(o, &r->events[ev++]));
	}
	cJSON_AddBoolToObject(x, "recordsVerify", bad == 0);
	md(o, "\n%zu record%s, %s.\n", s->n_records, s->n_records == 1 ? "" : "s",
	   bad ? "SOME DO NOT VERIFY" : "every digest and chain link verifies");
	for (size_t i = 0; i < s->n_records; i++) {
		const struct rep_cell *c = cell_of(s, s->records[i].sequence);
		if (!c)
			continue;
		md(o, "\n### Cell %llu\n\n", (unsigned long long)c->sequence);
		md_text_block(o, "code", c->code);
		md_text_block(o, "stdout", c->out);
		md_text_block(o, "stderr", c->err);
	}
	for (size_t i = 0; i < s->n_intents; i++) {
		md(o, "\n### Call %llu, %s\n\n", (unsigned long long)s->intents[i].sequence,
		   s->intents[i].interrupted ? "was running" : "running");
		md_text_block(o, "code", s->intents[i].code);
		if (!s->intents[i].code_kept)
			md(o, "(the store keeps digests only: no code)\n");
	}
	return x;
}

int bh_report_write(bh_report *r, enum bh_report_format format, FILE *f, bh_error **err)
{
	struct out o = {.md = format == BH_REPORT_MARKDOWN ? f : NULL};
	struct utsname u;
	uname(&u);
	char now[40];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	utc((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, now);
	cJSON *root = cJSON_CreateObject();
	add_str(root, "format", BH_REPORT_FORMAT);
	add_str(root, "generated", now);
	cJSON *host = cJSON_AddObjectToObject(root, "host");
	add_str(host, "name", u.nodename);
	add_str(host, "kernel", u.release);
	add_str(root, "source", r->where);
	add_str(root, "sourceKind", r->kind);
	if (r->engine_pid > 0)
		cJSON_AddNumberToObject(root, "enginePid", (double)r->engine_pid);
	else
		cJSON_AddNullToObject(root, "enginePid");
	cJSON *ver = cJSON_AddObjectToObject(root, "versions");
	add_str(ver, "bulkhead", BULKHEAD_VERSION);
	add_str(root, "eventsError", r->events_error);
	md(&o, "# bulkhead incident report\n\n- generated: %s\n- host: ", now);
	md_cell(&o, u.nodename);
	md(&o, " (Linux ");
	md_cell(&o, u.release);
	md(&o, ")\n- source: ");
	md_cell(&o, r->where);
	if (r->engine_pid > 0)
		md(&o, "\n- engine pid: %lld", (long long)r->engine_pid);
	md(&o, "\n- bulkhead %s\n- %zu suspect%s\n", BULKHEAD_VERSION, r->n, r->n == 1 ? "" : "s");
	if (*r->events_error) {
		md(&o, "- events not read: ");
		md_cell(&o, r->events_error);
		md(&o, "\n");
	}
	md(&o, "\n| kind | sandbox | session | reason | holder |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < r->n; i++) {
		const struct bh_leak *l = &r->s[i].l;
		/* Every cell escaped: a sandbox's name or a reason is not ours. */
		const char *cells[] = {bh_leak_kind_name(l->kind), l->sandbox,
				       *l->fingerprint ? l->fingerprint : "-", l->reason, l->holder};
		for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
			md(&o, c ? " | " : "| ");
			md_cell(&o, cells[c]);
		}
		md(&o, " |\n");
	}
	cJSON *arr = cJSON_AddArrayToObject(root, "suspects");
	for (size_t i = 0; i < r->n; i++)
		cJSON_AddItemToArray(arr, suspect_json(&o, r, &r->s[i]));
	int rc = 0;
	if (format == BH_REPORT_JSON) {
		char *text = cJSON_Print(root);
		if (!text || fprintf(f, "%s\n", text) < 0)
			rc = fail(err, "write the report: %s", strerror(errno));
		free(text);
	}
	cJSON_Delete(root);
	if (rc == 0 && (fflush(f) != 0 || ferror(f)))
		rc = fail(err, "write the report: %s", strerror(errno));
	return rc;
}
