/* The incident report from :leaks (`e`): asked where (a stem; STEM.md and
 * STEM.json are written beside each other, created new, never through a
 * link, the absolute paths flashed), then per suspect its timeline (events
 * and records with their code and output), each record's digest and chain
 * checked (bh_chain_step, the one check `bulkhead verify` makes), the host,
 * the engine's pid, the versions, and the capture made of it in this
 * console (its MANIFEST verified again, the bundle's digest from it). The
 * JSON's schema is docs/report.schema.json. */
#ifndef BH_UI_REPORT_VIEW_H
#define BH_UI_REPORT_VIEW_H

#include "app.h"

void report_ask(struct app *a, const struct bh_leak *findings, size_t n);
/* The capture of a suspect in this console, for its report: NULL if none. */
void capture_remember(const char *target, const char *dir);
const char *capture_recalled(const char *sandbox, const char *fingerprint);

#endif
