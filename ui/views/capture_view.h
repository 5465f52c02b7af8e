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
/* The folder for a typed answer: absolute as typed, else below the
 * console's working directory. false: no path (out holds why). */
bool capture_folder(const char *typed, char *out, size_t n);

#endif
