/* `bulkhead serve`'s settings, defined once (serve_options.c's table): the
 * argv parser, the config file's parser, --print-config and --help all
 * read that table, so a flag, its file key, its check and its help text
 * cannot drift apart. Nothing here prints or starts anything: a failure is
 * -1 with *why set to a malloc'd sentence. */
#ifndef BH_CLI_SERVE_SETTINGS_H
#define BH_CLI_SERVE_SETTINGS_H

#include "daemon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SERVE_CONFIG_DEFAULT "/etc/bulkhead/bulkhead.conf"
#define SERVE_CONFIG_MAX (64 * 1024) /* bytes a config file may hold */
#define SERVE_CONFIG_LINE_MAX 4096   /* bytes one of its lines may hold */

enum serve_option_kind {
	SERVE_FLAG,     /* no value on the command line; true|false in the file */
	SERVE_COUNT,    /* -v: each use counts one; a number in the file */
	SERVE_NUMBER,   /* digits, lo..hi */
	SERVE_DURATION, /* "500ms", "2s", "5m", "1h" (bare digits: seconds), lo..hi ms */
	SERVE_STRING,   /* a path, an address, a name: non-empty, no control characters */
	SERVE_DIR,      /* an absolute path of a directory that exists (now) */
	SERVE_CHOICE,   /* one of the words */
	SERVE_LIST,     /* a SERVE_STRING repeated, at most hi times */
	SERVE_META,     /* --config, --print-config...: the command line's only */
};

struct serve_choice {
	const char *word;
	int value;
};

enum serve_section {
	SERVE_SECTION_WHERE,
	SERVE_SECTION_TLS,
	SERVE_SECTION_ADMISSION,
	SERVE_SECTION_SESSIONS,
	SERVE_SECTION_LISTENERS,
	SERVE_SECTION_APPROVALS,
	SERVE_SECTION_EGRESS,
	SERVE_SECTION_LEFTOVERS,
	SERVE_SECTION_SERVICE,
	SERVE_SECTION_FLEET, /* ---- fleet (issue 20) ---- */
	SERVE_SECTION_COUNT,
};

struct serve_option {
	const char *name;  /* the long flag without "--", and the file's key */
	const char *alias; /* another spelling on the command line ("-v"), or NULL */
	enum serve_option_kind kind;
	long long lo, hi; /* numbers and durations (ms): the range; lists: hi names */
	const struct serve_choice *choices; /* SERVE_CHOICE: ended by a NULL word */
	size_t offset, size;                /* the field in struct serve_settings */
	size_t count_offset;                /* SERVE_LIST: its unsigned count */
	enum serve_section section;
	const char *arg;  /* in --help: "N", "DUR", "FILE" (NULL for a flag) */
	const char *help; /* --help's text; "\n" continues on an indented line */
	const char *dflt; /* the value when unset, in the file's syntax, or
			      "(words)" when it has none to write */
};

/* What serve runs with: the daemon's configuration plus the few settings
 * that land elsewhere. */
struct serve_settings {
	struct bh_daemon_config d;
	const char *state_dir; /* --state */
	int verbose;           /* -v */
	bool reap_leftovers;   /* d.engine.keep_leftovers is its opposite */
	/* The command line's own. */
	const char *config_path;
	bool no_config, print_config, help;
	/* Which settings were given (file or flags), by table index: what
	 * --print-config writes as a setting rather than a default comment. */
	bool given[64];
	char *text; /* the config file's text, which the strings point into */
};

extern const struct serve_option serve_options[];
extern const size_t serve_options_count;
extern const char *const serve_section_titles[SERVE_SECTION_COUNT];

const struct serve_option *serve_option_find(const char *name);
/* Replaces *why (when why is not NULL) with the text; returns -1. */
int serve_fail(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets one option from its text (a SERVE_FLAG takes "true" or "false").
 * -1 with *why ("not a valid value ...") when the text is not one of its
 * values. The text must outlive s. */
int serve_option_set(struct serve_settings *s, const struct serve_option *o, const char *text,
		     char **why);

/* The command line after "serve" (argv[0] is "serve"). Errors keep the
 * command's old wording: `unexpected "X"` and `X V: not an option, or not a
 * valid value for it`. */
int serve_parse_argv(struct serve_settings *s, int argc, char **argv, char **why);
/* A whole config file's text (len bytes, NUL-terminated at len; modified in
 * place and kept by s): "NAME:LINE: key: why" on the first problem, and s
 * is then to be thrown away. */
int serve_parse_config(struct serve_settings *s, char *text, size_t len, const char *name,
		       char **why);
/* Reads the file at path as a config file must be: regular, owned by root
 * or by us, not writable by group or others, at most SERVE_CONFIG_MAX
 * bytes. *missing (not NULL) is set when it does not exist. The text is
 * malloc'd and NUL-terminated. */
int serve_read_config(const char *path, char **text, size_t *len, bool *missing, char **why);
/* base, then every setting over's command line gave (a list replaced as a
 * whole): the flags override the file. */
void serve_settings_overlay(struct serve_settings *base, const struct serve_settings *over);

/* The effective settings in the file's format: a setting given is a line,
 * one left at its default a "# key = default" comment. */
void serve_print_config(FILE *out, const struct serve_settings *s);
/* The --help text, every option under its section. */
void serve_print_help(FILE *out);

#endif
