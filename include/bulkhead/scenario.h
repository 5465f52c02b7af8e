/* Recorded scenarios (docs/scenarios.md, format bulkhead-scenario/1): a
 * loader that turns a file into plain structs or says exactly what is
 * wrong with it ("step 3: unknown hop \"demon\""). The replay player draws
 * from these structs and executes nothing.
 *
 * This file and scenario.c need only libc and cJSON — no curses, no engine —
 * so a fuzz target can link them alone: scenario_parse never crashes and
 * never leaks, whatever the bytes. */
#ifndef BH_SCENARIO_H
#define BH_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SCENARIO_FORMAT "bulkhead-scenario/1"

/* The six stations a call passes, in pipeline order (plimsoll §7.1). */
enum scenario_hop {
	SCENARIO_HOP_NONE = -1,
	SCENARIO_HOP_MODEL,
	SCENARIO_HOP_AGENT,
	SCENARIO_HOP_EXECUTE_CODE,
	SCENARIO_HOP_MANAGER,
	SCENARIO_HOP_DAEMON,
	SCENARIO_HOP_SANDBOX,
	SCENARIO_HOP_COUNT
};
/* "execute_code": the name in the file. */
const char *scenario_hop_name(enum scenario_hop h);

enum scenario_kind { SCENARIO_HOOK, SCENARIO_CALL, SCENARIO_WAIT, SCENARIO_OPERATOR };
const char *scenario_kind_name(enum scenario_kind k);

enum scenario_outcome { SCENARIO_ANSWERED, SCENARIO_REFUSED, SCENARIO_MAY_HAVE_RUN };
const char *scenario_outcome_name(enum scenario_outcome o);

/* A value exactly as recorded: its key and its compact JSON text (and, for
 * a string, the string itself, to show output as the lines it holds). */
struct scenario_value {
	char *key;
	char *json;
	char *text; /* NULL unless the value is a string */
};

struct scenario_file {
	char *path, *content;
};

/* ---- hops: one hop of a step's path ---- */
enum scenario_leg { SCENARIO_LEG_DOWN, SCENARIO_LEG_UP };
const char *scenario_leg_name(enum scenario_leg l); /* "down", "up" */

/* What crossed a hop, as it was on the wire: the model's tool call, the
 * executeCode arguments, the plimsoll.v1 request and its answer, the run
 * record's digest. */
struct scenario_wire {
	char *what; /* "plimsoll.v1 SessionRun request" */
	char *text; /* as recorded: JSON for a request or an answer */
};

struct scenario_visit {
	enum scenario_hop hop;
	enum scenario_leg leg;
	char *narration;	    /* what this hop did in this step, recorded */
	struct scenario_wire *wire; /* NULL when nothing was recorded crossing it */
};

/* One daemon procedure and how many times it was called so far. */
struct scenario_count {
	char *name;
	long long n;
};

struct scenario_step {
	enum scenario_kind kind;
	int turn;           /* 1-based; 0 outside any turn */
	char *user_message; /* NULL when absent or null */
	char *narration;
	enum scenario_hop hops[SCENARIO_HOP_COUNT]; /* lit, in order */
	size_t n_hops;
	enum scenario_hop stopped_at; /* SCENARIO_HOP_NONE: nothing refused it */
	struct scenario_count *daemon_calls; /* cumulative, in recorded order */
	size_t n_daemon_calls;
	long long t_ms; /* -1 when absent */

	char *hook; /* kind hook: turn_start, suspend, complete */

	/* kind call: the executeCode input, what came of it */
	char *language, *code;
	struct scenario_file *files;
	size_t n_files;
	enum scenario_outcome outcome;
	struct scenario_value *answer; /* NULL when the answer was null */
	size_t n_answer;
	char *error;  /* NULL when answered */
	bool retried; /* once, in a new sandbox, after a session-ended refusal */

	long long ms; /* kind wait */

	char *action, *output; /* kind operator */

	/* ---- approvals ---- */
	/* kind call: what the operator saw and decided while the daemon held
	 * the call ("approval": {"output"}); NULL when it was not held. */
	char *approval;

	/* ---- hops: the call's path, one hop at a time ---- */
	/* What each hop did in this step, in the order a class follows it:
	 * down the pipeline to the deepest hop the step reached (a refused call
	 * stops at stopped_at), then back up the answer path (a refusal too
	 * travels back). NULL and 0 when the recording has none (it predates
	 * "path", or the step lit nothing); the down leg's hops are exactly
	 * `hops`, in order (the loader checks). */
	struct scenario_visit *path;
	size_t n_path;

	/* ---- presenter ---- */
	/* kind call: when the call was sent and its answer (or refusal) came
	 * back, in ms since the recording started; -1 when not recorded (an
	 * older recording). The lanes view draws overlapping calls from them. */
	long long sent_ms, answered_ms;
};

struct scenario_source {
	char *recorder, *recorded_at;
	char *script, *daemon, *how; /* NULL when absent */
	char **fixtures;
	size_t n_fixtures;
	struct scenario_value *versions;
	size_t n_versions;
};

struct scenario {
	char *name, *title, *teaches, *tier;
	char *floor; /* NULL when absent or null */
	long long idle_window_ms;
	struct scenario_source source;
	struct scenario_step *steps;
	size_t n_steps;
};

/* Parses and validates len bytes of JSON. 0 and *out (free it with
 * scenario_free), or -1 with the problem in err ("step 3: unknown hop
 * \"demon\""; steps are counted from 1, as the player shows them). */
int scenario_parse(const char *json, size_t len, struct scenario **out, char *err, size_t errlen);
/* The same for a file, whose name must be the scenario's name + ".json";
 * err starts with the path. */
int scenario_load(const char *path, struct scenario **out, char *err, size_t errlen);
void scenario_free(struct scenario *s);

/* Writes a recording's text to path only if it loads: scenario_parse accepts
 * it, so the recorder never leaves a file the player would refuse. Written to
 * path.tmp, then renamed into place. -1 with err ("... does not load as a
 * scenario: step 3: ...", or why the write failed), and nothing written. The
 * name rule (the file is NAME.json) is the player's to apply: a recording may
 * be written anywhere. */
int scenario_save(const char *path, const char *text, char *err, size_t errlen);

/* The recorded value of key in a step's answer (compact JSON), or NULL. */
const char *scenario_answer_get(const struct scenario_step *st, const char *key);

/* ---- hops: a recording's claims checked against its answers ---- */
/* The contradictions between what a scenario's steps lit and what they
 * answered: a refused call lit past the hop that refused it, an answered
 * call that never reached the sandbox, a sandbox lit where no session could
 * be open (the floor is above the tier; a hook that opened and closed
 * nothing; a daemon dead since a kill), a path that does not come back up,
 * narration claiming a kept sandbox after the daemon was killed. Returns
 * how many; the first ones ("step 1: ...; step 3: ...") in why. */
size_t scenario_contradictions(const struct scenario *s, char *why, size_t whylen);

/* Where shipped scenarios are: $BULKHEAD_SCENARIOS, else the data directory
 * beside this binary (the source tree's data/scenarios next to a build
 * directory, or an installed share/bulkhead/scenarios), else
 * "data/scenarios". Written to buf, which is returned. */
const char *scenario_dir(char *buf, size_t n);

/* NAME (a scenario in dir) or a path (with a '/' or ending in .json) to the
 * file to load. -1 with err naming what was looked for. */
int scenario_resolve(const char *dir, const char *name_or_path, char *path, size_t n, char *err,
		     size_t errlen);

/* Every *.json in a directory, by name; a file that does not load keeps
 * its error and a NULL s. A missing directory is an empty list. */
struct scenario_entry {
	char name[128];
	char path[4096];
	struct scenario *s;
	char err[512];
};
int scenario_list(const char *dir, struct scenario_entry **out, size_t *n, char *err, size_t errlen);
void scenario_list_free(struct scenario_entry *e, size_t n);

/* ---- presenter: handouts (scenario_handout.c) ---- */
/* The scenario as Markdown for a class: its lesson, then every step with
 * its narration, the call's code and files, the answer or the refusal and
 * what the operator saw. Text from the file is escaped (prose) or fenced
 * (code, output) so it reads as what it is, never as Markdown. -1 when the
 * stream fails. */
int scenario_handout(const struct scenario *s, FILE *out);
/* The same, into a new file at path (never over an existing one, never
 * through a symlink; mode 0644): -1 with err naming the path and why, and
 * nothing left behind. */
int scenario_handout_save(const struct scenario *s, const char *path, char *err, size_t errlen);

#endif
