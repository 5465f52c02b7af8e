/* The incident report (src/report/): per suspect — a finding of the leak
 * finder — its timeline (events, records and the calls a dead engine was
 * running, in time order), each record's code and output, each record's
 * digest and chain link checked (bh_chain_step, the one check `bulkhead
 * verify` makes), the host, the engine's pid, the versions, and the
 * evidence captured of it (its MANIFEST verified again, the bundle's digest
 * as it lists it). Markdown for people, JSON for tools; the JSON's schema
 * is docs/report.schema.json. One definition, written by the console's `e`
 * in :leaks (which collects the rows through its source, from an embedded
 * engine, a daemon or a store) and by `bulkhead report` (which collects
 * them with bh_report_collect from a state directory's read-only engine or
 * a copy of a store). Everything in it is anyone's bytes: the JSON's
 * strings are UTF-8 (U+FFFD for a byte outside a sequence), the Markdown's
 * cells and fences escaped so no sandbox's output can shape the page. */
#ifndef BULKHEAD_REPORT_H
#define BULKHEAD_REPORT_H

#include "bulkhead.h"
#include "record.h"

#include <stdio.h>

#define BH_REPORT_FORMAT "bulkhead.report.v1"
#define BH_REPORT_RECORDS 1000u /* read per suspect: one page */
#define BH_REPORT_CELLS 200u
#define BH_REPORT_EVENTS 1000u  /* the newest, of all */
#define BH_REPORT_OUTPUT 4096u  /* bytes of each stream and of code shown (the store keeps more) */

typedef struct bh_report bh_report;
enum bh_report_format { BH_REPORT_MARKDOWN, BH_REPORT_JSON };

/* where: one line saying where the rows come from (the console's header);
 * kind: "embedded", "attached", "store", "none" (the console's sources) or
 * "state" (`bulkhead report` on a state directory); engine_pid: the engine
 * that read them when it is the writer's own process and the sandboxes
 * are its own (an embedding console), else 0 — a dead engine's pid is
 * what each finding's holder names. */
bh_report *bh_report_new(const char *where, const char *kind, int64_t engine_pid);
void bh_report_free(bh_report *r);

/* A suspect; returns its index for the calls below. */
size_t bh_report_add_suspect(bh_report *r, const struct bh_leak *l);
/* Its records in chain order (each checked against the one before as it
 * is added), its stored cells, the calls a dead engine was running. */
void bh_report_add_record(bh_report *r, size_t suspect, const struct bh_record *rec,
			  const char *language, const char *flags, int exit_code);
void bh_report_add_cell(bh_report *r, size_t suspect, uint64_t sequence, const void *code,
			size_t code_len, const void *out, size_t out_len, const void *err,
			size_t err_len);
void bh_report_add_intent(bh_report *r, size_t suspect, const struct bh_inflight *in);
/* The evidence folder of it (absolute), verified again when written. */
void bh_report_set_capture(bh_report *r, size_t suspect, const char *dir);
/* Why some of its rows could not be read (the first reason is kept). */
void bh_report_suspect_error(bh_report *r, size_t suspect, const char *why);
/* Events of all suspects, oldest first; each is shown under the suspects
 * whose session or sandbox it names. */
void bh_report_add_event(bh_report *r, const struct bh_event *ev);
void bh_report_events_error(bh_report *r, const char *why);
size_t bh_report_suspects(const bh_report *r);
/* A suspect's session ("" for none: an orphan, an image, a cgroup). */
const char *bh_report_suspect_session(const bh_report *r, size_t suspect);

/* The capture a folder holds a suspect's evidence of, by the target its
 * MANIFEST names: the suspect whose sandbox or session it is. Fails
 * naming the folder when its MANIFEST cannot be read or names none. */
int bh_report_attach_capture(bh_report *r, const char *dir, bh_error **err);

/* Every suspect's rows read synchronously, the way the console reads them
 * through its source: records (a page from the first), cells (the newest
 * page), intents (an engine's; a store copy's are not read), then the
 * newest events. Exactly one of e and h. */
int bh_report_collect(bh_report *r, bh_engine *e, bh_history *h, bh_error **err);

/* Writes the report to f (not closed). */
int bh_report_write(bh_report *r, enum bh_report_format format, FILE *f, bh_error **err);

/* One Markdown table cell's text: what a person reads is the value, never
 * another cell, a row, a link, an image or HTML — `|` and Markdown's
 * punctuation are backslash-escaped, line breaks become spaces and control
 * bytes show as \xHH. */
void bh_report_md_cell(FILE *f, const char *s);

#endif
