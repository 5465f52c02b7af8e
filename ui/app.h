/* What the console's files share: requests, the table every list view
 * draws, views with their ops, and the app. */
#ifndef BH_UI_APP_H
#define BH_UI_APP_H

#include "base.h"
#include "console.h"
#include "source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACTS 1u

enum request {
	REQ_NONE = 0,
#define REQ(id, key, label, view, help, flags) REQ_##id,
#include "bindings.def"
#undef REQ
	REQ_COUNT
};

struct binding {
	enum request req;
	int key;
	const char *label, *view, *help;
	unsigned flags;
};
extern const struct binding ui_bindings[];
extern const size_t ui_n_bindings;

/* Colours by meaning (theme.c); monochrome when NO_COLOR is set or the
 * terminal has none. */
enum ui_color { C_NORMAL, C_HEADER, C_TITLE, C_GOOD, C_WARN, C_BAD, C_CALM, C_INFO, C_DIM, C_SELECT };
void theme_init(void);
int theme_attr(enum ui_color c);
enum ui_color theme_for_state(const char *state);

#define TABLE_MAX_COLS 12
struct trow {
	char *cells[TABLE_MAX_COLS];
	char key[128];       /* what enter drills into: a fingerprint, a record id */
	enum ui_color color;
};

struct table {
	struct trow *rows;
	size_t n, cap;
	size_t *shown; /* indices after filter and sort */
	size_t nshown;
	size_t sel, top;
	int sort_col; /* -1: as loaded */
};
void table_clear(struct table *t);
struct trow *table_add(struct table *t, const char *key, enum ui_color color);
void table_cell(struct trow *r, size_t col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Applies the filter and sort, keeping the selection on the same key. */
void table_index(struct table *t, const char *filter, const char *keep_key);
const struct trow *table_selected(const struct table *t);

struct app;
struct view;

struct view_ops {
	const char *name;   /* "sandboxes": also the :command */
	const char *alias;  /* "sb" */
	const char *title;  /* "Sandboxes" */
	size_t ncols;
	const char *const *headers;
	const int *widths;  /* 0: takes what is left */
	/* Asks the source for fresh rows (they arrive through its callback). */
	void (*load)(struct app *a, struct view *v);
	/* A request for this view; returns REQ_NONE when handled. */
	enum request (*request)(struct app *a, struct view *v, enum request r);
	void (*enter)(struct app *a, struct view *v, const struct trow *row);
	/* A view that is not a table draws its own body. */
	void (*draw)(struct app *a, struct view *v, int top, int bottom);
	void (*done)(struct view *v);
	/* Called on every turn of the loop (at least every 200 ms), for a view
	 * that moves by itself (the replay player's play). */
	void (*tick)(struct app *a, struct view *v, uint64_t now_ms);
	bool sourceless; /* draws without the source (replay, help) */
};

struct view {
	const struct view_ops *ops;
	struct table t;
	char filter[128];
	char arg[4096];  /* what it was opened for: a session, a run key, a record id, a scenario file */
	char sub[160];   /* shown after the title: "(session 3f2a…)" */
	void *priv;
	int loading;     /* requests in flight for this view */
	bool closing;    /* popped while a request was in flight */
	struct view *below;
	struct app *app; /* the console it is in: a source's answer brings only the view */
	/* The last load failed: why, and since when (HH:MM:SS). The rows of the
	 * load before stay, drawn dim, and the title says they are old, until
	 * a load succeeds again. */
	char stale[256];
	char stale_since[16];
	bool stale_told;  /* the failure was flashed (again on ctrl-r) */
	bool ever_loaded; /* some load succeeded: what is shown is stale, not missing */
};

/* Views (views/ *.c). */
extern const struct view_ops view_sandboxes, view_runs, view_records, view_record, view_events,
	view_walls, view_leaks, view_replay, view_player, view_help;
extern const struct view_ops view_cells, view_cell; /* stream */

struct app {
	struct ui_source *src;
	struct ui_options opt;
	struct view *view;
	bool quit;
	char flash[512];
	enum ui_color flash_color;
	uint64_t flash_until;
	char spinner_what[128]; /* a long operation in flight */
	/* header counts */
	char counts[160];
	char tiers[160];
	/* a modal prompt or confirm */
	struct prompt *prompt;
	uint64_t next_refresh;
	int lines, cols;
};

void app_flash(struct app *a, enum ui_color c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void app_busy(struct app *a, const char *what); /* "" when done */
struct view *app_push(struct app *a, const struct view_ops *ops, const char *arg);
void app_pop(struct app *a);
void app_refresh(struct app *a);
bool app_can_act(struct app *a, bool quiet);
/* Finished a request of v's: false when v was closed meanwhile (and is freed). */
bool view_done_loading(struct view *v);
/* Loads that fail (view_load.c). A load of v's failed: the error flashed
 * (when it is new or changed, or ctrl-r asked again, and v is on top), the
 * rows kept and marked stale in the title with why and since when. A view
 * that asks the source, on no source at all, shows its empty state instead:
 * no failure. */
void view_load_failed(struct app *a, struct view *v, const char *err);
/* A load of v's succeeded: the stale mark goes. */
void view_load_ok(struct view *v);
/* A load of v's answered (view_done_loading, then view_load_failed or
 * view_load_ok): true when its rows are to be drawn from the answer. */
bool view_answered(struct view *v, const char *err);

/* Modal input (prompt.c). */
typedef void (*prompt_fn)(struct app *a, const char *text, void *arg);
void prompt_text(struct app *a, const char *label, const char *initial, prompt_fn fn, void *arg);
void prompt_confirm(struct app *a, const char *question, prompt_fn yes, void *arg);
/* The cell prompt: multi-line, with a language switch. */
void prompt_cell(struct app *a, const char *fp, const char *language);
bool prompt_key(struct app *a, int key); /* true when the prompt took it */
void prompt_draw(struct app *a);

/* Small helpers for rows. */
void fmt_age(char *buf, size_t n, int64_t since_ms, int64_t now_ms);
void fmt_short(char *buf, size_t n, const char *hex); /* first 12 */

#endif
