/* The operator console: an ncurses dashboard over a source (the embedded
 * engine, a daemon, or a store opened read-only). */
#ifndef BH_UI_CONSOLE_H
#define BH_UI_CONSOLE_H

#include "bulkhead.h"

#include <stdbool.h>

/* What the console shows: its views reach data only through a source
 * (ui/source.h, private to the console). */
struct ui_source;

/* The embedded engine (the console owns it; closing the console closes its
 * sessions). */
struct ui_source *ui_source_embedded(const struct bh_config *cfg, char **why);
/* A store file opened read-only: no engine, no runtime call. */
struct ui_source *ui_source_store(const char *db_path, char **why);
/* A daemon: a unix socket path or http://127.0.0.1:PORT, and a token. */
struct ui_source *ui_source_attached(const char *target, const char *token, char **why);
/* ---- tls: the same with every client option (an https:// target's CA, a
 * client certificate) ---- */
struct bh_client_options;
struct ui_source *ui_source_attached_with(const struct bh_client_options *o, char **why);
/* ---- fleet: the hosts of a fleet on NATS (an observer of its bucket), each
 * host's sandboxes from its operator API (the api it publishes), with the
 * token and TLS options of o (its target unused); images_dir (NULL: none)
 * is the fleet's shared images directory, for :leaks. ---- */
struct ui_source *ui_source_fleet(const char *servers, const struct bh_client_options *o,
				  const char *images_dir, char **why);
/* bulkhead fleet leaks: the fleet source's :leaks without a screen (every
 * host's findings, their holder naming the host, and the fleet's own), *silent
 * the hosts that did not answer ("" none). 0, or -1 with *why. The caller
 * frees *out, *silent and *why. */
struct bh_leak;
int ui_fleet_leaks(struct ui_source *s, uint32_t timeout_ms, struct bh_leak **out, size_t *n,
		   char **silent, char **why);
/* Frees a source the console was not run on (ui_console_run takes its own). */
void ui_source_free(struct ui_source *s);
/* No source (`bulkhead replay`): every request answers that there is none. */
struct ui_source *ui_source_none(void);

struct ui_options {
	bool readonly;          /* no action that changes anything */
	const char *script;     /* keys and :commands from this file (headless tests) */
	bool no_display;        /* draw into memory only (with a script) */
	const char *start_view; /* "sandboxes" unless set */
	const char *start_scenario; /* with start_view "replay": this file opens in the player */
};

/* Runs until the user quits (or the script ends). Takes the source. */
int ui_console_run(struct ui_source *src, const struct ui_options *o);

#endif
