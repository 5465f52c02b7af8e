/* Capture from the console: the evidence folder asked for (an absolute path
 * shown, ./bulkhead-evidence-<sandbox>-<UTC> by default), the source asked
 * to capture, the folder and its MANIFEST's digest flashed. The reap path
 * calls capture_then() first, so a reap from the console never destroys
 * what was not captured. */
#ifndef BH_UI_CAPTURE_VIEW_H
#define BH_UI_CAPTURE_VIEW_H

#include "app.h"

/* Asks where, then captures the suspect (a sandbox name or a fingerprint). */
void capture_ask(struct app *a, const char *target, const char *sandbox);
/* Asks where, captures, then calls then (ok false: not captured, said why
 * in the flash; the caller must not reap). */
typedef void (*capture_then_fn)(struct app *a, bool ok, const char *dir, void *arg);
void capture_then(struct app *a, const char *target, const char *sandbox, capture_then_fn then,
		  void *arg);
/* The reap's door (inflight's leaks_reap.c, on y): one folder asked for,
 * each finding captured into FOLDER/<its sandbox or session>, one after
 * the other, then then(ok: every one captured). A finding not captured
 * is named in the flash and ok is false: the caller reaps nothing. */
void capture_all_then(struct app *a, const struct bh_leak *findings, size_t n,
		      capture_then_fn then, void *arg);
/* A default name's parts: the UTC second ("20261201T081848Z"), and a
 * name a sandbox or the store chose made harmless (letters, digits and
 * '-' kept, anything else '_'). */
void capture_stamp(char out[32]);
void capture_safe_name(const char *name, char *out, size_t n);
/* The folder for a typed answer: absolute as typed, else below the
 * console's working directory. false: no path (out holds why). */
bool capture_folder(const char *typed, char *out, size_t n);

#endif
