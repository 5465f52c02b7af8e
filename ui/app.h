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

#define TABLE_MAX_COLS 20
struct trow {
	char *cells[TABLE_MAX_COLS];
	char key[128];       /* what enter drills into: a fingerprint, a record id */
	enum ui_color color;
	char copy[80];       /* what `c` copies, whole (a digest); "" copies the key */
	/* ---- usage ---- */
	/* A column's numeric sort key (table_num): when both rows being
	 * compared have one, the column sorts by it, not by its text. */
	int64_t num[TABLE_MAX_COLS];
	uint32_t has_num; /* bit per column */
};

/* How a column sorts: as text, as a number ("12", "3.5", "90%"), as a
 * duration or age ("45s", "2m", "1.5 ms") or as a time ("2026-12-01
 * 08:23:36", which sorts as text). A view that declares none sorts every
 * column as text. */
enum col_type { COL_TEXT = 0, COL_NUMBER, COL_DURATION, COL_TIME };

struct view_ops;
struct table {
	struct trow *rows;
	size_t n, cap;
	size_t *shown; /* indices after filter and sort */
	size_t nshown;
	size_t sel, top;
	int sort_col; /* -1: as loaded */
	/* ---- tables ---- */
	bool sort_desc;
	enum col_type sort_type; /* the sort column's, set with sort_col */
	size_t page;             /* rows the last draw showed: PgUp/PgDn's step */
	char want[128];          /* select this key when a load brings it (a sandbox just opened) */
};
void table_clear(struct table *t);
struct trow *table_add(struct table *t, const char *key, enum ui_color color);
void table_cell(struct trow *r, size_t col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Applies the filter and sort, keeping the selection on the same key. */
void table_index(struct table *t, const char *filter, const char *keep_key);
const struct trow *table_selected(const struct table *t);
/* ---- tables ---- */
/* The Shift+letter that sorts column col of a view (its header's first
 * letter no earlier column took and no binding uses), 0 for none. */
int table_sort_letter(const struct view_ops *o, size_t col);
/* Sorts t by col (type ty): ascending, or descending when it is already
 * sorted ascending by it. Keeps the selection on its row. */
void table_sort_by(struct table *t, int col, enum col_type ty, const char *filter);
/* A cell's value for sorting a number or a duration (seconds). */
double table_cell_number(const char *cell, enum col_type ty);
/* ---- usage ---- */
/* A cell's numeric sort key (bytes, millicores, a count), beside its text. */
void table_num(struct trow *r, size_t col, int64_t key);

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
	/* ---- tables ---- */
	const enum col_type *types; /* per column (ncols + nwide); NULL: all text */
	/* ---- fleet: columns (a bit each) drawn only over a fleet (HOST) ---- */
	uint32_t fleet_cols;
	size_t nwide;               /* columns after ncols shown by the wide toggle (ctrl-w) */
	/* ---- usage ---- */
	/* The columns drawn, in this order (NULL: 0..ncols-1), all below
	 * ncols; a column not listed is held for the filter only. The wide
	 * toggle adds ncols..ncols+nwide-1 after them, and drops none. */
	const size_t *order;
	size_t n_order;
	/* Per column: 0 is never dropped; when the screen is too narrow for
	 * every drawn column, the highest rank goes first (k9s's way). NULL:
	 * none is dropped, the last ones are cut. */
	const int *drop;
	/* Columns (a bit each) of live figures, drawn only when the source
	 * has an engine: a store opened read-only has none to show. */
	uint32_t live_cols;
	/* A new usage answer arrived (the console asks once per refresh). */
	void (*usage)(struct app *a, struct view *v);
	/* ---- presenter ---- */
	/* Drawn on the whole screen, with no header, hints, title or crumbs:
	 * draw gets rows 0 .. lines-2, the last row stays the flash's. */
	bool fullscreen;
	/* A key before the bindings see it (the presenter's digits): true
	 * when the view took it. */
	bool (*key)(struct app *a, struct view *v, int key);
	/* ---- ci: attribution ---- */
	/* The least a flexible column (width 0) needs when drop chooses what to
	 * leave out (0: FLEX_LEAST): events keep their detail legible and drop
	 * who acted first. */
	int flex_least;
	/* ---- replay: a pane under the table ---- */
	/* Rows the pane under the table takes (0: none) and its drawing: the
	 * scenario list's preview of the selected one, wrapped, not cut. */
	int (*pane_rows)(struct app *a, struct view *v, int top, int bottom);
	void (*pane_draw)(struct app *a, struct view *v, int top, int bottom);
};

struct view {
	const struct view_ops *ops;
	struct table t;
	char filter[128];
	char *arg;       /* what it was opened for: a session, a run key, a record id, a scenario file
			  * (whole: a path cut to fit would name another file) */
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
	/* ---- tables ---- */
	bool wide;          /* ctrl-w: the wide columns, and cut ones at their length */
	bool filter_is_arg; /* the filter is what it was opened for (a leak's timeline): esc goes back */
};

/* ---- fleet: a records or search row's session, whole, in a cell no view
 * draws: the record view is opened on "ID SESSION" and asks for the record
 * within its session (over a fleet, of the host that holds it). ---- */
#define RECORD_SESSION_CELL (TABLE_MAX_COLS - 1)
/* Views (views/ *.c). */
extern const struct view_ops view_sandboxes, view_runs, view_records, view_record, view_events,
	view_walls, view_leaks, view_replay, view_player, view_help;
extern const struct view_ops view_answers; /* ---- tables ---- */
/* ---- truth ---- */
extern const struct view_ops view_describe;
/* "UTC YYYY-MM-DD hh:mm:ss" of a Unix time in ms ("-" for 0). */
void fmt_utc(char *buf, size_t n, int64_t unix_ms);
/* ---- procs: inside a sandbox (views/processes.c, files.c, file.c) ---- */
extern const struct view_ops view_processes, view_files, view_file;
extern const struct view_ops view_approvals, view_approval; /* ---- approvals ---- */
extern const struct view_ops view_cells, view_cell; /* stream */
/* ---- presenter: for a class (presenter.c, lanes.c, live_call.c) ---- */
extern const struct view_ops view_presenter, view_lanes, view_live;
/* The scenario the view on top shows (the player's, the presenter's, the
 * lanes'): its file, or NULL. */
const char *presenter_scenario_of(const struct view *v);
/* Where the view on top is, for the presenter or the lanes to open there:
 * "STEP.HOP:PATH" (the step 0-based, the hop lit 1-based, 0 the whole
 * step). */
void presenter_arg_of(const struct view *v, const char *path, char *buf, size_t n);
/* `e`: asks for a path, writes the scenario's handout there and flashes
 * its absolute path. */
void presenter_handout_prompt(struct app *a, const char *scenario_path);
/* :present [NAME] and :lanes [NAME]: true when cmd was one of them. */
bool presenter_command(struct app *a, const char *cmd, const char *rest);
/* The scenario list's digits: the Nth scenario selected as its number is
 * typed (enter opens it). */
bool presenter_list_key(struct app *a, struct view *v, int k);
/* The player v (view_player) to step `step` (0-based) at hop `hop` (its
 * path's first hop visits lit, 0: the step whole): where the presenter was
 * when q left it. A step or hop past the recording's is not taken. */
void player_go_to(struct view *v, size_t step, size_t hop);
extern const struct view_ops view_timeline; /* ---- inflight ---- */
extern const struct view_ops view_hosts; /* ---- fleet ---- */

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
	/* ---- tables ---- */
	bool pasting;            /* between a bracketed paste's start and end */
	bool paste_told;         /* a paste outside an editor was flashed */
	int cells_running;       /* cells asked and not answered yet */
	size_t closes_on_quit;   /* sandboxes quitting would close (the console's own) */
	char last_language[16];  /* the cell editor's, kept between cells */
	struct answers *answers; /* recent cell answers, newest first (answers.c) */
	/* ---- truth ---- */
	bool refresh_asked;   /* ctrl-r: "refreshed" waits for the view's answer */
	uint64_t retry_ms;    /* while the link is down: the wait before the next try */
	/* ---- approvals ---- */
	size_t approvals_waiting; /* calls the daemon holds, for the header */
	/* ---- usage ---- */
	char host[160];    /* the header's host figures: "load 0.18 mem 5% ..." */
	char daemon[80];   /* "daemon 0.1.0 up 3m" (attached), "up 3m" (embedded) */
	bool utf8;         /* the locale draws Unicode blocks (sparklines) */
	/* The last usage answer, for the views that show it (sandboxes). */
	struct bh_session_usage *usage;
	size_t n_usage;
	int64_t usage_at_ms; /* when it was answered; 0: never */
	/* ---- inflight ---- */
	int banner_lines; /* header lines the dead engine's leftovers took (0..2) */
};
/* ---- usage ---- */
/* The last usage answer's row for a session, or NULL. */
const struct bh_session_usage *app_usage_of(const struct app *a, const char *fp);

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
/* yes is called with "yes" on y, and with NULL on any other answer (or
 * when the confirm goes unanswered), so that it can free arg. */
void prompt_confirm(struct app *a, const char *question, prompt_fn yes, void *arg);
/* The cell prompt: multi-line, with a language switch. */
void prompt_cell(struct app *a, const char *fp, const char *language);
bool prompt_key(struct app *a, int key); /* true when the prompt took it */
void prompt_draw(struct app *a);

/* ---- tables ---- */
/* Keys the terminal sends as sequences (bracketed paste), past ncurses' own. */
#define KEY_PASTE_START (KEY_MAX + 1)
#define KEY_PASTE_END (KEY_MAX + 2)
/* A text prompt whose fn is called on every edit too, and with the text
 * it started with when cancelled: the filter applies as it is typed. */
void prompt_text_live(struct app *a, const char *label, const char *initial, prompt_fn fn, void *arg);
void prompt_history_free(void);
/* "…" where the terminal speaks UTF-8, else ">". */
const char *ui_ellipsis(void);
/* Cancels an open prompt (ctrl-c, esc): true when there was one. */
bool prompt_cancel(struct app *a);
/* A pasted key: into the open editor as text; false when none is open. */
bool prompt_paste(struct app *a, int key);
/* The cell answers (answers.c): kept newest first, a pane under the
 * sandboxes table and the :answers view. */
struct ui_cell_answer;
void answers_add(struct app *a, const char *fp, const char *language, const struct ui_cell_answer *r,
		 const char *err);
int answers_pane_rows(struct app *a, int top, int bottom); /* rows the pane takes (0: none) */
void answers_draw_pane(struct app *a, int top, int bottom);
void answers_free(struct app *a);
/* A string drawn in at most w columns, ending in "…" when cut; control
 * bytes shown as ^X. */
void draw_clipped(int y, int x, int w, const char *s);
/* An absolute UTC time to the millisecond: "2026-12-01 08:23:36.872Z". */
void fmt_utc_ms(char *buf, size_t n, int64_t unix_ms);
/* Copies text to the terminal's clipboard (OSC 52) and flashes it whole. */
void app_copy(struct app *a, const char *what, const char *text);

/* Small helpers for rows. */
void fmt_age(char *buf, size_t n, int64_t since_ms, int64_t now_ms);
void fmt_short(char *buf, size_t n, const char *hex); /* first 12 */

#endif
