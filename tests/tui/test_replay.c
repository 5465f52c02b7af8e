/* The replay, tested without any runtime: `bulkhead replay` executes
 * nothing, so these run the real binary headless (tig's method, as
 * test_console.c does) with a PATH holding no program at all, a fresh empty
 * HOME and a state directory that must never be made.
 *
 * - replay: screens of the pick list and the player (80x24, whole screens
 *   compared with tests/tui/expected/, BH_TUI_UPDATE=1 rewrites them) over a
 *   hand-written fixture (tests/tui/fixtures/scenarios), the keys, play,
 *   errors before any screen; then the shipped recordings in data/scenarios:
 *   the acceptance screens (floor refused at the daemon, freshSandbox after
 *   suspend, the owner cap's retry) and every scenario replayed to its end.
 * - scenario: the loader alone — its error messages, and no crash on any
 *   prefix or mutation of a real file. */
#include "scenario.h"
#include "screen_compare.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIXTURES BH_SOURCE_DIR "/tests/tui/fixtures/scenarios"
#define SHIPPED BH_SOURCE_DIR "/data/scenarios"

/* The scenarios bulkhead ships (docs/scenarios.md): each must be there and load. */
static const char *const shipped[] = {"one_turn",     "next_turn",    "suspend",	   "guest_error",
				      "javascript",   "floor_refused", "owner_cap",	   "pause_resume",
				      "hibernate_restore", "leak_gc",	   "concurrent_calls",
				      /* ---- approvals ---- */
				      "approval_granted", "approval_denied",
				      /* ---- egress and projects ---- */
				      "brokered_call", "egress_refused", "project_run"};

static char root[PATH_MAX]; /* this test's directory */
static char work[PATH_MAX + 16], home[PATH_MAX + 16], bin[PATH_MAX + 16];

static void setup(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	snprintf(root, sizeof root, "%s/replay-XXXXXX", r && *r ? r : "/tmp");
	cr_assert_not_null(mkdtemp(root), "mkdtemp %s: %s", root, strerror(errno));
	snprintf(work, sizeof work, "%s/work", root);
	snprintf(home, sizeof home, "%s/home", root);
	snprintf(bin, sizeof bin, "%s/bin", root);
	cr_assert_eq(mkdir(work, 0700), 0);
	cr_assert_eq(mkdir(home, 0700), 0);
	cr_assert_eq(mkdir(bin, 0700), 0); /* PATH: empty, so no crun, no runsc, nothing */
}

static void teardown(void)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (*root && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

/* Writes a script (`:save-display NAME` saves WORK/NAME.txt) and runs
 * `bulkhead replay ARGS --script` in the fixed environment; its exit status,
 * and what it said on stdout and stderr in *said (caller frees). */
static int replay(const char *scenarios, const char *args, const char *script, char **said)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/script.txt", work);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	for (const char *p = script; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n > 14 && !strncmp(p, ":save-display ", 14))
			fprintf(f, ":save-display %s/%.*s.txt\n", work, (int)(n - 14), p + 14);
		else
			fprintf(f, "%.*s\n", (int)n, p);
		p += n + (e ? 1 : 0);
	}
	fclose(f);
	char cmd[40000];
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && exec timeout 60 /usr/bin/env -i PATH='%s' HOME='%s' BULKHEAD_STATE='%s/state' "
		 "TERM=xterm LINES=24 COLUMNS=80 TZ=UTC NO_COLOR=1 LC_ALL=C.UTF-8 %s%s%s "
		 "ASAN_OPTIONS=\"$ASAN_OPTIONS\" UBSAN_OPTIONS=\"$UBSAN_OPTIONS\" "
		 "'%s' replay %s --script '%s' 2>&1",
		 work, bin, home, home, scenarios ? "BULKHEAD_SCENARIOS='" : "", scenarios ? scenarios : "",
		 scenarios ? "'" : "", BH_TEST_CLI, args, path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 4096, n = 0, got;
	char *out = malloc(cap);
	while ((got = fread(out + n, 1, cap - n - 1, p)) > 0)
		if ((n += got) + 1 >= cap)
			out = realloc(out, cap *= 2);
	out[n] = '\0';
	int st = pclose(p);
	*said = out;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A replay that must succeed quietly. */
static void replay_ok(const char *scenarios, const char *args, const char *script)
{
	char *said = NULL;
	int st = replay(scenarios, args, script, &said);
	cr_assert_eq(st, 0, "bulkhead replay %s exited %d: %s", args, st, said);
	cr_assert_str_empty(said, "bulkhead replay %s said: %s", args, said);
	free(said);
}

static char *shot(const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s.txt", work, name);
	char *s = screen_slurp(path);
	cr_assert_not_null(s, "no screen %s was saved", name);
	return s;
}

/* The directories vary with the checkout. */
static char *normalise(const char *screen)
{
	char *out = malloc(strlen(screen) * 2 + 64), *o = out;
	for (const char *p = screen; *p;) {
		if (!strncmp(p, FIXTURES, strlen(FIXTURES))) {
			o += sprintf(o, "<FIXTURES>");
			p += strlen(FIXTURES);
		} else if (!strncmp(p, SHIPPED, strlen(SHIPPED))) {
			o += sprintf(o, "<SCENARIOS>");
			p += strlen(SHIPPED);
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	/* A title holding the checkout's path is centred by its length, which
	 * varies with where the tree was cloned: left-justify such lines. */
	char *w = out;
	for (char *line = out; *line;) {
		char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line + 1) : strlen(line);
		size_t skip = 0;
		if (memmem(line, n, "<FIXTURES>", 10) || memmem(line, n, "<SCENARIOS>", 11))
			skip = strspn(line, " ");
		memmove(w, line + skip, n - skip);
		w += n - skip;
		line += n;
	}
	*w = '\0';
	return out;
}

/* WORK/NAME.txt against tests/tui/expected/NAME.txt, whole. */
static void screen(const char *name)
{
	char *raw = shot(name), *got = normalise(raw);
	free(raw);
	screen_compare(BH_TUI_EXPECTED, name, got);
}

static void screen_has(const char *name, const char *text)
{
	char *s = shot(name);
	cr_assert_not_null(strstr(s, text), "screen %s lacks \"%s\":\n%s", name, text, s);
	free(s);
}

/* The line of a screen that holds text, and the column where it is. */
static const char *line_with(const char *s, const char *text, int *col)
{
	const char *hit = strstr(s, text);
	if (!hit)
		return NULL;
	const char *bol = hit;
	while (bol > s && bol[-1] != '\n')
		bol--;
	*col = (int)(hit - bol);
	return bol;
}

/* A script of n space keys: the next step, each step whole. */
static void steps(char *buf, size_t n, size_t count)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < count && used + 10 < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "<Space>\n");
}

TestSuite(replay, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the fixture: the list, the player, its keys ---- */

Test(replay, the_pick_list_shows_each_scenario_and_names_what_is_wrong_with_a_broken_one)
{
	replay_ok(FIXTURES, "",
		  ":save-display replay-list\n"
		  "G\n"
		  "<Enter>\n"
		  ":save-display replay-list-broken\n"
		  "g\n"
		  "<Enter>\n"
		  ":save-display replay-list-opened\n"
		  "<Esc>\n"
		  ":save-display replay-list-back\n");
	screen("replay-list");
	screen("replay-list-broken");
	screen_has("replay-list-broken", "typo: step 3: unknown hop \"demon\"");
	screen_has("replay-list-opened", "Replay (orders_tour: step 1/8)");
	screen_has("replay-list-back", "Replay[2]");
}

Test(replay, the_player_lights_each_steps_hops_and_stops_a_refused_call_at_its_hop)
{
	replay_ok(FIXTURES, "orders_tour",
		  ":save-display player-first\n"
		  "<Space>\n"
		  ":save-display player-call\n"
		  "<Right>\n"
		  "<Space>\n"
		  ":save-display player-wait\n"
		  "<Space>\n"
		  "<Space>\n"
		  ":save-display player-fresh-sandbox\n"
		  "<Space>\n"
		  ":save-display player-refused\n"
		  "<Backspace>\n"
		  "<Left>\n"
		  ":save-display player-back\n"
		  "G\n"
		  ":save-display player-last\n"
		  "<Space>\n"
		  ":save-display player-past-the-end\n"
		  "g\n"
		  ":save-display player-again\n");
	screen("player-first");
	screen("player-call");
	screen("player-fresh-sandbox");
	screen("player-refused");
	/* A hook lights agent, manager, daemon and sandbox, in that order. */
	screen_has("player-first", "HOOK turn_start");
	screen_has("player-call", "freshSandbox true");
	screen_has("player-call", "recordSha256 f20f971669a4\n");
	screen_has("player-call", "daemon procedures so far: OpenSession 1, SessionRun 1 (+1), CloseSession 0");
	screen_has("player-wait", "WAIT 3500 ms");
	screen_has("player-refused", "REFUSED: nothing ran");
	screen_has("player-back", "step 5/8");
	screen_has("player-last", "step 8/8");
	screen_has("player-past-the-end", "the last step (8/8)");
	screen_has("player-again", "step 1/8");
	/* STOPPED HERE stands under the daemon, the hop that refused. */
	char *s = shot("player-refused");
	int dcol, scol;
	const char *names = line_with(s, "daemon -->", &dcol);
	const char *marks = line_with(s, "STOPPED HERE", &scol);
	cr_assert(names && marks, "%s", s);
	cr_assert(scol <= dcol && scol + 12 >= dcol + 6, "STOPPED HERE at %d, daemon at %d:\n%s", scol, dcol, s);
	free(s);
}

Test(replay, play_advances_a_step_every_one_and_a_half_seconds_and_pauses)
{
	replay_ok(FIXTURES, "orders_tour",
		  "p\n"
		  ":save-display play-started\n"
		  ":sleep 1800\n"
		  ":save-display play-advanced\n"
		  "p\n"
		  ":sleep 1800\n"
		  ":save-display play-paused\n");
	screen_has("play-started", "Replay (orders_tour: step 1/8, playing)");
	screen_has("play-advanced", "Replay (orders_tour: step 2/8, playing)");
	screen_has("play-paused", "Replay (orders_tour: step 2/8)");
}

Test(replay, the_help_lists_the_players_keys_first_and_other_views_say_there_is_no_source)
{
	replay_ok(FIXTURES, "orders_tour",
		  "?\n"
		  ":save-display player-help\n"
		  ":sb\n"
		  ":save-display replay-no-source\n"
		  "n\n"
		  ":save-display replay-no-source-act\n");
	screen("player-help");
	screen("replay-no-source");
	screen_has("replay-no-source-act", "a replay has no engine: nothing can act");
}

Test(replay, a_bad_name_or_file_is_named_before_any_screen_with_status_2)
{
	char *said = NULL;
	int st = replay(FIXTURES, "nope", "", &said);
	cr_assert_eq(st, 2, "%s", said);
	cr_assert_not_null(strstr(said, "no scenario \"nope\": no " FIXTURES "/nope.json"), "%s", said);
	cr_assert_not_null(strstr(said, "(the scenarios: orders_tour, typo)"), "%s", said);
	cr_assert_null(strchr(said, '\033'), "a screen was drawn: %s", said);
	free(said);
	st = replay(FIXTURES, "typo", "", &said);
	cr_assert_eq(st, 2, "%s", said);
	cr_assert_not_null(strstr(said, FIXTURES "/typo.json: step 3: unknown hop \"demon\""), "%s", said);
	free(said);
	st = replay(NULL, "/nonexistent/x.json", "", &said);
	cr_assert_eq(st, 2, "%s", said);
	cr_assert_not_null(strstr(said, "no scenario file /nonexistent/x.json"), "%s", said);
	free(said);
}

/* ---- the shipped recordings ---- */

/* The 1-based index of the first step that pred accepts, after skip. */
static size_t find_step(const struct scenario *s, bool (*pred)(const struct scenario_step *), size_t after)
{
	for (size_t i = after; i < s->n_steps; i++)
		if (pred(&s->steps[i]))
			return i + 1;
	return 0;
}

static struct scenario *load_shipped(const char *name)
{
	char path[PATH_MAX], err[1024];
	snprintf(path, sizeof path, "%s/%s.json", SHIPPED, name);
	struct scenario *s = NULL;
	cr_assert_eq(scenario_load(path, &s, err, sizeof err), 0, "%s", err);
	return s;
}

/* ---- egress and projects ---- replays NAME to step n (1-based), then keys. */
static void replay_at(const char *name, size_t n, const char *keys)
{
	char script[16384];
	steps(script, sizeof script - 4096, n - 1);
	snprintf(script + strlen(script), sizeof script - strlen(script), "%s", keys);
	replay_ok(NULL, name, script);
}

/* Replays NAME to step n (1-based) and saves the screen as SHOT. */
static void replay_to(const char *name, size_t n, const char *shot_name)
{
	char tail[128];
	snprintf(tail, sizeof tail, ":save-display %s\n", shot_name);
	replay_at(name, n, tail);
}

static bool refused(const struct scenario_step *st)
{
	return st->kind == SCENARIO_CALL && st->outcome == SCENARIO_REFUSED;
}

static bool suspend_hook(const struct scenario_step *st)
{
	return st->kind == SCENARIO_HOOK && !strcmp(st->hook, "suspend");
}

static bool answered(const struct scenario_step *st)
{
	return st->kind == SCENARIO_CALL && st->outcome == SCENARIO_ANSWERED;
}

static bool retried(const struct scenario_step *st)
{
	return st->kind == SCENARIO_CALL && st->retried;
}

Test(replay, floor_refused_stops_the_call_at_the_daemon_hop_with_isolation)
{
	struct scenario *s = load_shipped("floor_refused");
	size_t at = find_step(s, refused, 0);
	cr_assert(at, "floor_refused has no refused call");
	cr_assert_eq(s->steps[at - 1].stopped_at, SCENARIO_HOP_DAEMON);
	scenario_free(s);
	replay_to("floor_refused", at, "floor-refused");
	char *sc = shot("floor-refused");
	int dcol, scol;
	cr_assert(line_with(sc, "daemon -->", &dcol) && line_with(sc, "STOPPED HERE", &scol), "%s", sc);
	cr_assert(scol <= dcol && scol + 12 >= dcol + 6, "STOPPED HERE is not under the daemon:\n%s", sc);
	cr_assert_not_null(strstr(sc, "REFUSED: nothing ran"), "%s", sc);
	cr_assert_not_null(strstr(sc, "Nothing ran (isolation)"), "%s", sc);
	free(sc);
}

/* ---- approvals ---- */
/* The held call's step shows what the operator saw and decided; denied, it
 * is refused (permission) with the operator's reason, and nothing ran. */
Test(replay, approval_scenarios_show_the_decision_under_the_held_call)
{
	replay_to("approval_granted", 2, "approval-granted");
	screen("approval-granted");
	/* Wrapped in the call's column: held, then who approved and why. */
	screen_has("approval-granted", "held: SessionRun of anonymous,");
	screen_has("approval-granted", "waiting for a decision; approved");
	screen_has("approval-granted", "by anonymous: writes one file in");
	screen_has("approval-granted", "ANSWER");
	replay_to("approval_denied", 2, "approval-denied");
	screen("approval-denied");
	screen_has("approval-denied", "REFUSED: nothing ran");
	screen_has("approval-denied", "Nothing ran (permission): denied by anonymous");
}

Test(replay, suspend_the_turn_after_the_idle_window_shows_a_fresh_sandbox)
{
	struct scenario *s = load_shipped("suspend");
	size_t hook = find_step(s, suspend_hook, 0);
	cr_assert(hook, "suspend has no suspend hook");
	size_t at = find_step(s, answered, hook);
	cr_assert(at, "suspend has no answered call after its suspend hook");
	cr_assert_gt(s->steps[at - 1].turn, s->steps[hook - 1].turn);
	scenario_free(s);
	replay_to("suspend", at, "suspend-fresh");
	screen_has("suspend-fresh", "freshSandbox true");
	screen_has("suspend-fresh", "ANSWER");
}

Test(replay, owner_cap_the_replaced_sandboxs_next_call_shows_the_retry_in_a_new_sandbox)
{
	struct scenario *s = load_shipped("owner_cap");
	size_t at = find_step(s, retried, 0);
	cr_assert(at, "owner_cap has no retried call");
	scenario_free(s);
	replay_to("owner_cap", at, "owner-cap-retried");
	screen_has("owner-cap-retried", "ANSWER (retried once in a new sandbox)");
	screen_has("owner-cap-retried", "freshSandbox true");
}

/* ---- hops: one call hop by hop (acceptance 1) ---- */

/* The line after the one holding `text`, from column col, n columns. */
static void under(const char *screen, const char *text, int col, int n, char *out)
{
	int c;
	const char *line = line_with(screen, text, &c);
	cr_assert_not_null(line, "no \"%s\" in:\n%s", text, screen);
	const char *next = strchr(line, '\n');
	cr_assert_not_null(next);
	next++;
	int i = 0;
	for (; i < col && next[i] && next[i] != '\n'; i++)
		;
	int k = 0;
	for (; k < n && next[i + k] && next[i + k] != '\n'; k++)
		out[k] = next[i + k];
	out[k] = '\0';
}

Test(replay, next_turn_one_call_hop_by_hop_shows_each_hops_own_narration)
{
	struct scenario *s = load_shipped("next_turn");
	size_t at = find_step(s, answered, 0);
	cr_assert(at, "next_turn has no answered call");
	const struct scenario_step *st = &s->steps[at - 1];
	cr_assert_eq(st->n_path, 11, "down six hops and back up five, not %zu", st->n_path);
	char want_after[64];
	char script[16384];
	steps(script, sizeof script - 4096, at - 1);
	for (size_t i = 1; i <= st->n_path; i++) {
		size_t used = strlen(script);
		snprintf(script + used, sizeof script - used, "l\n:save-display hop-%zu\n", i);
		/* Coming back up through the daemon, the answer carries the run
		 * record: enter opens it in the record view, verified there. */
		if (i == 7)
			strcat(script, "<Enter>\n:save-display hop-receipt\n<Esc>\n:save-display hop-after-receipt\n"
				       "j\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\nj\n"
				       ":save-display hop-wire-scrolled\nk\nk\nk\nk\nk\nk\nk\nk\n:save-display hop-wire-up\n");
	}
	strcat(script, "l\n:save-display hop-next-step\nh\n:save-display hop-back\n");
	replay_ok(NULL, "next_turn", script);
	for (size_t i = 1; i <= st->n_path; i++) {
		const struct scenario_visit *v = &st->path[i - 1];
		char name[32], want[128];
		snprintf(name, sizeof name, "hop-%zu", i);
		snprintf(want, sizeof want, "step %zu/%zu, hop %zu/11)", at, s->n_steps, i);
		screen_has(name, want);
		/* This hop's own words, said for this hop of this step ... */
		snprintf(want, sizeof want, "> %.40s", v->narration);
		screen_has(name, want);
		/* ... and no other hop's. */
		for (size_t k = 0; k < st->n_path; k++)
			if (k != i - 1)
				cr_assert_str_neq(st->path[k].narration, v->narration, "hops %zu and %zu say the same", k + 1, i);
	}
	screen("hop-1");
	screen("hop-5");
	screen("hop-11");
	screen_has("hop-1", "> down");
	screen_has("hop-1", "hop 1/11, going down: model; on the wire: the model's tool call");
	screen_has("hop-3", "ON THE WIRE: the executeCode arguments");
	screen_has("hop-5", "ON THE WIRE: plimsoll.v1 SessionRun request");
	screen_has("hop-5", "\"minimumIsolation\": \"container\"");
	screen_has("hop-7", "ON THE WIRE: SessionRun answer (HTTP 200)");
	screen_has("hop-7", "\"record\": {");
	screen("hop-receipt");
	screen_has("hop-receipt", "Receipt (a recorded call's receipt");
	screen_has("hop-receipt", "record_sha256 verifies: recomputed from the fields above");
	char digest[80];
	snprintf(digest, sizeof digest, "%.40s", scenario_answer_get(st, "recordSha256") + 1);
	screen_has("hop-receipt", digest);
	snprintf(want_after, sizeof want_after, "step %zu/%zu, hop 7/11)", at, s->n_steps);
	screen_has("hop-after-receipt", want_after);
	/* j scrolls the wire to its end, and no further. */
	screen_has("hop-7", "more lines: j scrolls)");
	screen_has("hop-wire-scrolled", "\"interpreterStarted\": true");
	screen_has("hop-wire-scrolled", "\n1002,grace,17.25                | }\n");
	screen_has("hop-wire-up", "\"recordSha256\": \"");
	screen_has("hop-9", "ON THE WIRE: the executeCode answer");
	screen_has("hop-11", "< back");
	screen_has("hop-11", "coming back up: model");
	screen_has("hop-11", "The model reads the answer: 2 orders");
	/* Past the last hop, l goes on to the next step's first hop; h back. */
	screen_has("hop-next-step", "hop 1/");
	char want[64];
	snprintf(want, sizeof want, "step %zu/%zu, hop 1/", at + 1, s->n_steps);
	screen_has("hop-next-step", want);
	snprintf(want, sizeof want, "step %zu/%zu)", at + 1, s->n_steps);
	screen_has("hop-back", want);
	scenario_free(s);
}

/* B22 a: with a vm floor on a kernel daemon no sandbox can exist, and the
 * warm-up now stops at the daemon that refused it. */
Test(replay, trigger_floor_refused_lights_no_sandbox_and_a_refusal_travels_back_up)
{
	struct scenario *s = load_shipped("trigger_floor_refused");
	for (size_t i = 0; i < s->n_steps; i++)
		for (size_t k = 0; k < s->steps[i].n_hops; k++)
			cr_assert_neq(s->steps[i].hops[k], SCENARIO_HOP_SANDBOX, "step %zu lights the sandbox", i + 1);
	scenario_free(s);
	replay_to("trigger_floor_refused", 1, "trigger-floor-warmup");
	char *sc = shot("trigger-floor-warmup");
	int col;
	cr_assert_not_null(line_with(sc, "--> sandbox", &col), "%s", sc);
	char mark[16];
	under(sc, "--> sandbox", col + 4, 7, mark);
	cr_assert_eq(strspn(mark, " "), strlen(mark), "a mark under the sandbox: \"%s\"\n%s", mark, sc);
	cr_assert_not_null(strstr(sc, "STOPPED HERE"), "%s", sc);
	free(sc);

	/* floor_refused hop by hop: down to the daemon, which stops it, then
	 * the refusal back up, its answer on the wire. */
	replay_ok(NULL, "floor_refused",
		  "l\nl\nl\nl\nl\n:save-display refused-at-daemon\nl\n:save-display refusal-back\n"
		  "l\nl\nl\n:save-display refusal-at-model\n");
	screen("refused-at-daemon");
	screen_has("refused-at-daemon", "hop 5/9, going down: daemon");
	screen_has("refused-at-daemon", "STOPPED HERE");
	screen_has("refused-at-daemon", "> The daemon refused OpenSession: Nothing ran (isolation)");
	screen("refusal-back");
	screen_has("refusal-back", "< refusal");
	screen_has("refusal-back", "hop 6/9, coming back up: manager");
	screen_has("refusal-back", "ON THE WIRE: OpenSession answer (HTTP 400)");
	screen_has("refusal-back", "\"failed_precondition\"");
	screen_has("refusal-at-model", "> The model reads: Nothing ran (isolation)");
}

/* Recorded by the TypeScript add-on against a real daemon, the Trigger.dev
 * call has a path like any other: the warm-up's refused open on the wire at
 * the daemon, where the call stopped, and the refusal back to the model. */
Test(replay, trigger_floor_refused_recorded_hop_by_hop_shows_the_refused_open_on_the_wire)
{
	replay_ok(NULL, "trigger_floor_refused",
		  "<Space>\nl\nl\nl\nl\n:save-display trigger-call-manager\nl\n"
		  ":save-display trigger-call-daemon\nl\nl\nl\nl\n:save-display trigger-call-model\n");
	screen_has("trigger-call-manager", "hop 4/9, going down: manager");
	screen_has("trigger-call-manager", "still opening from the turn's warm-up");
	screen("trigger-call-daemon");
	screen_has("trigger-call-daemon", "ON THE WIRE: plimsoll.v1 OpenSession request");
	screen_has("trigger-call-daemon", "\"minimumIsolation\": \"vm\"");
	screen_has("trigger-call-daemon", "> The daemon refused OpenSession (HTTP 400): the floor vm is");
	screen_has("trigger-call-model", "hop 9/9, coming back up: model");
	screen_has("trigger-call-model", "> The model reads: Nothing ran (isolation)");
}

/* The list's columns cut a title and its lesson; the pane under the list
 * shows the selected scenario's whole, wrapped (the review's "wrap, don't
 * clip"), and follows the selection. */
Test(replay, the_scenario_list_previews_the_selected_title_and_lesson_wrapped)
{
	replay_ok(NULL, "", "17\n:save-display replay-list-preview\nj\n:save-display replay-list-preview-next\n");
	screen("replay-list-preview");
	screen_has("replay-list-preview", " trigger_floor_refused: Trigger.dev: a floor above the tier is refused");
	screen_has("replay-list-preview", " at the daemon before any sandbox exists: Nothing ran (isolation).\n");
	screen_has("replay-list-preview-next", " trigger_guest_error: Trigger.dev: a guest error is a result");
}

/* Show the inputs (teachers' list 6) and wrap, don't clip (B22 c). */
Test(replay, the_files_sent_with_a_call_and_the_operators_output_are_shown_whole)
{
	replay_to("next_turn", 2, "files-sent");
	screen("files-sent");
	screen_has("files-sent", "-- orders.csv --");
	screen_has("files-sent", "1002,grace,17.25");
	replay_to("leak_gc", 3, "leak-wrapped");
	/* what the operator saw wraps in its pane, not cut at its edge */
	screen_has("leak-wrapped", "KIND          SANDBOX                SESSION\n");
	screen_has("leak-wrapped", "| REASON\n"); /* the table's last column, on the next row */
}

/* ---- egress and projects: the broker's part and a project, recorded ---- */

/* The step's visit of hop going leg (NULL when its path has none). */
static const struct scenario_visit *visit_of(const struct scenario_step *st, enum scenario_hop hop,
					     enum scenario_leg leg)
{
	for (size_t i = 0; i < st->n_path; i++)
		if (st->path[i].hop == hop && st->path[i].leg == leg)
			return &st->path[i];
	return NULL;
}

static void has(const char *text, const char *want, const char *what)
{
	cr_assert(text && strstr(text, want), "%s lacks \"%s\": %s", what, want, text ? text : "(none)");
}

/* Acceptance: a session opened with a profile; the cell's requests.get had
 * no credential, the broker on the host added it and the upstream saw it;
 * the egress event (method, origin, route, status, bytes, ms) on the
 * sandbox hop's wire; at 80x24, the narrator says it first. */
Test(replay, brokered_call_the_sandbox_hop_shows_the_broker_adding_the_credential_and_its_egress_event)
{
	struct scenario *s = load_shipped("brokered_call");
	const struct scenario_visit *open = visit_of(&s->steps[0], SCENARIO_HOP_DAEMON, SCENARIO_LEG_DOWN);
	cr_assert(open && open->wire, "the warm-up has no OpenSession on the wire");
	has(open->wire->text, "\"grantProfile\":\"orders-api\"", "the OpenSession request");
	has(visit_of(&s->steps[0], SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN)->narration,
	    "The daemon's egress event: holds profile orders-api: the broker serves it", "the warm-up's sandbox hop");
	size_t at = find_step(s, answered, 0);
	cr_assert(at, "brokered_call has no answered call");
	const struct scenario_step *st = &s->steps[at - 1];
	has(scenario_answer_get(st, "stdout"), "200 shipped\\nsent with an Authorization header: False", "stdout");
	cr_assert_null(strstr(st->code, "headers="), "the cell's code sends no header of its own");
	const struct scenario_visit *box = visit_of(st, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN);
	cr_assert(box && box->wire, "the call's sandbox hop has nothing on the wire");
	has(box->narration, "The broker on the host (profile orders-api) took the cell's requests: GET "
			    "https://127.0.0.2:9443 route /v1/orders/* -> 200; out 0 B, in ", "the sandbox hop");
	has(box->narration, "The upstream saw GET /v1/orders/1001 with the credential the broker added", "the sandbox hop");
	has(box->wire->what, "egress events (ListEvents)", "the wire's name");
	has(box->wire->text, "\"detail\":\"GET https://127.0.0.2:9443 route /v1/orders/* -> 200; out 0 B, in ", "the event");
	has(box->wire->text, " ms; profile orders-api\"", "the event");
	has(box->wire->text, "\"upstreamSaw\":[\"GET /v1/orders/1001 credential=matched\"]", "what the upstream saw");
	scenario_free(s);
	replay_at("brokered_call", at,
		  "l\nl\nl\nl\nl\nl\n:save-display brokered-sandbox\nj\nj\nj\nj\nj\nj\nj\nj\n"
		  ":save-display brokered-sandbox-wire\n");
	screen("brokered-sandbox");
	screen_has("brokered-sandbox", "hop 6/11, going down: sandbox; on the wire: the broker's egress events");
	screen_has("brokered-sandbox", "> The broker on the host (profile orders-api) took the cell's requests: GET");
	screen_has("brokered-sandbox", "upstream saw GET /v1/orders/1001 with the credential the broker added.");
	screen_has("brokered-sandbox-wire", "\"upstreamSaw\": [\"GET /v1/orders/1001 credenti");
}

/* The same session's cell asks a route the profile does not name: the
 * broker's 403 as the sandbox saw it, its event, nothing upstream; then a
 * profile this caller may not use is refused at the daemon, nothing ran. */
Test(replay, egress_refused_the_broker_refuses_a_route_and_the_daemon_a_profile_not_the_callers)
{
	struct scenario *s = load_shipped("egress_refused");
	size_t at = find_step(s, answered, 0);
	cr_assert(at, "egress_refused has no answered call");
	const struct scenario_step *st = &s->steps[at - 1];
	has(scenario_answer_get(st, "stdout"), "403 no route allows this request\\nbulkhead broker: no route allows",
	    "the cell's stdout");
	const struct scenario_visit *box = visit_of(st, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN);
	cr_assert(box && box->wire);
	has(box->narration, "GET https://127.0.0.2:9443 -> 403, refused: no route allows this request; out 0 B, in 0 B",
	    "the sandbox hop");
	has(box->narration, "The upstream saw nothing.", "the sandbox hop");
	has(box->wire->text, "\"upstreamSaw\":[]", "what the upstream saw");
	size_t no = find_step(s, refused, at);
	cr_assert(no, "egress_refused has no refused call");
	const struct scenario_step *r = &s->steps[no - 1];
	cr_assert_eq(r->stopped_at, SCENARIO_HOP_DAEMON);
	cr_assert_str_eq(r->error, "Nothing ran (permission): grant profile payroll is unknown or not available to "
				   "this caller");
	const struct scenario_visit *d = visit_of(r, SCENARIO_HOP_DAEMON, SCENARIO_LEG_DOWN);
	cr_assert(d && d->wire);
	has(d->wire->text, "\"grantProfile\":\"payroll\"", "the refused OpenSession request");
	for (size_t k = 0; k < r->n_hops; k++)
		cr_assert_neq(r->hops[k], SCENARIO_HOP_SANDBOX, "the refused open lights a sandbox");
	scenario_free(s);
	replay_at("egress_refused", no, "l\nl\nl\nl\nl\n:save-display profile-refused\n");
	screen_has("profile-refused", "STOPPED HERE");
	screen_has("profile-refused", "> The daemon refused OpenSession: Nothing ran (permission): grant profile");
}

/* A project: files, steps in order, one artifact, the typed outcome; the
 * Run answer's receipt verifies, its result digest recomputed in plimsoll's
 * project encoding; one changed byte in the recorded answer is caught. */
Test(replay, project_run_answers_its_typed_outcome_and_its_receipt_verifies_in_the_project_encoding)
{
	struct scenario *s = load_shipped("project_run");
	size_t at = find_step(s, answered, 0);
	cr_assert(at, "project_run has no answered call");
	const struct scenario_step *st = &s->steps[at - 1];
	cr_assert_str_eq(st->language, "project");
	cr_assert_str_eq(st->code, "$ python3 totals.py orders.csv totals.csv\n$ cat totals.csv\n");
	cr_assert_eq(st->n_files, 2);
	cr_assert_str_eq(scenario_answer_get(st, "outcome"), "\"completed\"");
	has(scenario_answer_get(st, "artifacts"),
	    "{\"path\":\"totals.csv\",\"bytes\":37,\"content\":\"customer,total\\nada,50.50\\ngrace,17.25\\n\"}",
	    "the artifacts");
	has(scenario_answer_get(st, "steps"), "{\"command\":\"cat totals.csv\",\"exitCode\":0}", "the steps");
	for (size_t k = 0; k < st->n_hops; k++)
		cr_assert_neq(st->hops[k], SCENARIO_HOP_MANAGER, "a project's Run lights the manager");
	const struct scenario_visit *up = visit_of(st, SCENARIO_HOP_DAEMON, SCENARIO_LEG_UP);
	cr_assert(up && up->wire);
	cr_assert_str_eq(up->wire->what, "Run answer (HTTP 200)");
	has(up->wire->text, "\"outcome\":\"PROJECT_OUTCOME_COMPLETED\"", "the Run answer");
	/* A copy whose recorded answer says another command ran. */
	char *text = screen_slurp(SHIPPED "/project_run.json");
	cr_assert_not_null(text);
	char *cmd = strstr(text, "\\\"command\\\":\\\"cat totals.csv\\\"");
	cr_assert_not_null(cmd, "no step command in the Run answer's wire text");
	memcpy(strstr(cmd, "cat"), "tac", 3);
	char dir[PATH_MAX + 32], path[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/tampered", root);
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/project_run.json", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	scenario_free(s);
	const char *to_receipt = "l\nl\nl\nl\nl\nl\n:save-display project-answer\n<Enter>\n:save-display project-receipt\n";
	replay_ok(NULL, "project_run", to_receipt);
	screen_has("project-answer", "hop 6/9, coming back up: daemon; on the wire: Run answer (HTTP 200)");
	screen_has("project-answer", "typed outcome completed");
	screen("project-receipt");
	screen_has("project-receipt", "record_sha256 verifies: recomputed from the fields above");
	screen_has("project-receipt", "project, exit 0, project encoding: digest matches");
	char *said = NULL;
	int st_code = replay(dir, "project_run", "l\nl\nl\nl\nl\nl\n<Enter>\n:save-display project-tampered\n", &said);
	cr_assert_eq(st_code, 0, "%s", said);
	free(said);
	screen_has("project-tampered", "project encoding: digest MISMATCH");
}

/* The plain base64 of n bytes (no padding), for the secret test below. */
static void b64(const unsigned char *in, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		for (int k = 18; k >= 0; k -= 6)
			out[o++] = t[v >> k & 63];
	}
	out[o] = '\0';
}

/* A credential never enters a scenario: for every script's test credential
 * (its "egress.credential.value"), no shipped scenario holds it — whole, its
 * first 12 characters, in base64 at any of the three alignments, in hex of
 * either case or percent-encoded. */
Test(replay, no_shipped_scenario_holds_the_credential_its_recording_used_in_any_encoding)
{
	DIR *d = opendir(SHIPPED "/scripts");
	cr_assert_not_null(d);
	struct scenario_entry *list = NULL;
	size_t n = 0;
	char err[512];
	cr_assert_eq(scenario_list(SHIPPED, &list, &n, err, sizeof err), 0, "%s", err);
	size_t creds = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/scripts/%s", SHIPPED, e->d_name);
		char *text = screen_slurp(path);
		cr_assert_not_null(text);
		const char *key = strstr(text, "\"credential\": {");
		const char *v = key ? strstr(key, "\"value\": \"") : NULL;
		if (!v) {
			free(text);
			continue;
		}
		v += 10;
		char cred[256];
		snprintf(cred, sizeof cred, "%.*s", (int)strcspn(v, "\""), v);
		free(text);
		creds++;
		cr_assert_geq(strlen(cred), 12, "%s: a credential too short to look for", path);
		char forms[8][1024];
		size_t nf = 0;
		snprintf(forms[nf++], sizeof forms[0], "%s", cred);
		snprintf(forms[nf++], sizeof forms[0], "%.12s", cred);
		for (size_t skip = 0; skip < 3; skip++) /* whatever precedes it in an encoded blob */
			b64((const unsigned char *)cred + skip, strlen(cred) - skip, forms[nf++]);
		char *hex = forms[nf++], *pct = forms[nf++];
		size_t h = 0, p = 0;
		for (const char *c = cred; *c; c++) {
			h += (size_t)sprintf(hex + h, "%02x", (unsigned char)*c);
			p += (size_t)sprintf(pct + p, "%%%02X", (unsigned char)*c);
		}
		for (size_t i = 0; i < n; i++) {
			char *body = screen_slurp(list[i].path);
			cr_assert_not_null(body);
			for (size_t k = 0; k < nf; k++)
				cr_assert_null(strcasestr(body, forms[k]), "%s holds %s's credential (form %zu: %s)",
					       list[i].path, e->d_name, k, forms[k]);
			free(body);
		}
	}
	closedir(d);
	scenario_list_free(list, n);
	cr_assert_geq(creds, 2, "the egress scripts' credentials were not found (%zu)", creds);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Acceptance 2: a replay makes no runtime call and opens no sandbox — every
 * shipped scenario, every step, with nothing on PATH (crun and runsc cannot
 * be found, nor anything else) and no state directory (HOME and
 * BULKHEAD_STATE point into an empty directory that stays empty). */
Test(replay, every_shipped_scenario_loads_and_replays_to_its_end_with_no_runtime_and_no_state, .timeout = 600)
{
	cr_assert_eq(entries(bin), 0, "PATH is not empty");
	struct scenario_entry *list = NULL;
	size_t n = 0;
	char err[512];
	cr_assert_eq(scenario_list(SHIPPED, &list, &n, err, sizeof err), 0, "%s", err);
	for (size_t k = 0; k < sizeof shipped / sizeof shipped[0]; k++) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(list[i].name, shipped[k]);
		cr_assert(found, "data/scenarios has no %s.json", shipped[k]);
	}
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(list[i].s, "%s does not load: %s", list[i].name, list[i].err);
		char script[65536], want[64], name[160];
		steps(script, sizeof script - 256, list[i].s->n_steps - 1);
		snprintf(name, sizeof name, "end-%s", list[i].name);
		size_t used = strlen(script);
		snprintf(script + used, sizeof script - used, ":save-display %s\n", name);
		replay_ok(NULL, list[i].name, script);
		snprintf(want, sizeof want, "step %zu/%zu", list[i].s->n_steps, list[i].s->n_steps);
		screen_has(name, want);
	}
	scenario_list_free(list, n);
	cr_assert_eq(entries(home), 0, "a replay left something in HOME (a state directory?)");
}

/* ---- the loader alone ---- */

TestSuite(scenario, .timeout = 120);

#define HEAD                                                                                       \
	"{\"format\":\"bulkhead-scenario/1\",\"name\":\"t\",\"title\":\"T\",\"teaches\":\"x\",\"tier\":\"container\"," \
	"\"source\":{\"recorder\":\"r\",\"recorded_at\":\"2026-11-29T18:00:00Z\"},\"steps\":["
#define CALL_OK                                                                                   \
	"{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[\"model\",\"daemon\"],\"stopped_at\":null," \
	"\"daemon_calls\":{\"SessionRun\":1},\"call\":{\"language\":\"python\",\"code\":\"1\"},"   \
	"\"outcome\":\"answered\",\"answer\":{\"exitCode\":0,\"stdout\":\"1\\n\"},\"error\":null}"
#define WAIT "{\"kind\":\"wait\",\"turn\":1,\"narration\":\"n\",\"hops\":[],\"daemon_calls\":{},\"ms\":5}"

/* ---- hops ---- shared with test_replay_hops.c */
void refused_with(const char *json, const char *want);
void refused_with(const char *json, const char *want)
{
	struct scenario *s = (struct scenario *)1;
	char err[512];
	cr_assert_eq(scenario_parse(json, strlen(json), &s, err, sizeof err), -1, "accepted: %s", json);
	cr_assert_null(s);
	cr_assert_str_eq(err, want, "for %s: got \"%s\"", json, err);
}

Test(scenario, a_sound_file_parses_into_its_steps)
{
	const char *j = HEAD CALL_OK "," WAIT "]}";
	struct scenario *s = NULL;
	char err[512];
	cr_assert_eq(scenario_parse(j, strlen(j), &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s->n_steps, 2);
	cr_assert_eq(s->steps[0].n_hops, 2);
	cr_assert_eq(s->steps[0].hops[1], SCENARIO_HOP_DAEMON);
	cr_assert_str_eq(scenario_answer_get(&s->steps[0], "stdout"), "\"1\\n\"");
	cr_assert_eq(s->steps[1].ms, 5);
	scenario_free(s);
}

Test(scenario, each_problem_is_named_with_its_step_and_key)
{
	refused_with("[1]", "not a bulkhead-scenario/1 file (the top level is not an object)");
	refused_with("{\"format\":\"other/2\"}", "not a bulkhead-scenario/1 file (its format is \"other/2\")");
	refused_with("{}", "not a bulkhead-scenario/1 file (no \"format\")");
	refused_with("{\"format\":", "not JSON (a syntax error at line 1, column 10)");
	char follows[128];
	snprintf(follows, sizeof follows, "not JSON (something follows the value at line 1, column %zu)",
		 strlen(HEAD WAIT "]} ") + 1);
	refused_with(HEAD WAIT "]} {}", follows);
	refused_with(HEAD "]}", "no steps");
	refused_with(HEAD WAIT "," WAIT ",{\"kind\":\"hook\",\"hook\":\"turn_start\",\"turn\":1,\"narration\":\"n\","
				       "\"hops\":[\"agent\",\"demon\"],\"daemon_calls\":{}}]}",
		     "step 3: unknown hop \"demon\"");
	refused_with(HEAD "{\"kind\":\"nap\"}]}", "step 1: unknown kind \"nap\"");
	refused_with(HEAD "{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[\"daemon\"],"
			  "\"stopped_at\":\"daemon\",\"daemon_calls\":{},\"call\":{\"language\":\"python\",\"code\":\"1\"},"
			  "\"outcome\":\"refused\",\"answer\":{\"exitCode\":0},\"error\":\"Nothing ran (isolation): x\"}]}",
		     "step 1: outcome \"refused\" with an \"answer\" (nothing was answered)");
	refused_with(HEAD "{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[\"model\"],"
			  "\"stopped_at\":\"daemon\",\"daemon_calls\":{},\"call\":{\"language\":\"python\",\"code\":\"1\"},"
			  "\"outcome\":\"refused\",\"error\":\"Nothing ran (isolation): x\"}]}",
		     "step 1: \"stopped_at\" \"daemon\" is not one of the step's hops");
	refused_with(HEAD CALL_OK ",{\"kind\":\"wait\",\"turn\":1,\"narration\":\"n\",\"hops\":[],"
				  "\"daemon_calls\":{\"SessionRun\":0},\"ms\":1}]}",
		     "step 2: \"daemon_calls.SessionRun\" went down from 1 to 0 (they are cumulative)");
	refused_with(HEAD "{\"kind\":\"call\",\"turn\":1,\"narration\":\"n\",\"hops\":[],\"daemon_calls\":{},"
			  "\"call\":{\"language\":\"python\",\"code\":\"1\"},\"outcome\":\"answered\","
			  "\"answer\":{\"exitCode\":0,\"recordSha256\":\"abc\"}}]}",
		     "step 1: \"answer.recordSha256\" is not a SHA-256 in lowercase hex");
	refused_with(HEAD "{\"kind\":\"wait\",\"turn\":-1}]}", "step 1: \"turn\" is -1, below 0");
	refused_with(HEAD "{\"kind\":\"wait\",\"turn\":1,\"narration\":\"n\",\"hops\":[],\"daemon_calls\":{}}]}",
		     "step 1: missing \"ms\"");
}

Test(scenario, a_file_must_be_named_after_its_scenario)
{
	char dir[] = "/tmp/bh-scenario-XXXXXX", path[64], err[512];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/other.json", dir);
	FILE *f = fopen(path, "w");
	fputs(HEAD WAIT "]}", f);
	fclose(f);
	struct scenario *s = NULL;
	cr_assert_eq(scenario_load(path, &s, err, sizeof err), -1);
	char want[256];
	snprintf(want, sizeof want, "%s: \"name\" is \"t\", not the file's name without .json", path);
	cr_assert_str_eq(err, want);
	unlink(path);
	rmdir(dir);
}

/* The recorder's write: a recording that does not load is refused before any
 * file exists (neither the scenario nor its .tmp), with the step that is
 * wrong; one that loads is written whole and loads back. */
Test(scenario, a_recording_is_written_only_if_it_loads)
{
	char dir[] = "/tmp/bh-scenario-XXXXXX", path[64], tmp[80], err[1024];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/t.json", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	const char *bad = HEAD WAIT ",{\"kind\":\"wait\",\"turn\":2000000,\"narration\":\"n\","
			  "\"hops\":[],\"daemon_calls\":{},\"ms\":5}]}";
	cr_assert_eq(scenario_save(path, bad, err, sizeof err), -1);
	char want[512];
	snprintf(want, sizeof want, "%s: not written: the recording does not load as a scenario: "
				    "step 2: \"turn\" is 2000000, past any conversation",
		 path);
	cr_assert_str_eq(err, want);
	cr_assert_neq(access(path, F_OK), 0, "a recording that does not load was written");
	cr_assert_neq(access(tmp, F_OK), 0, "its .tmp was left behind");

	cr_assert_eq(scenario_save(path, HEAD CALL_OK "]}", err, sizeof err), 0, "%s", err);
	cr_assert_neq(access(tmp, F_OK), 0);
	struct scenario *s = NULL;
	cr_assert_eq(scenario_load(path, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s->n_steps, 1);
	scenario_free(s);
	char *text = screen_slurp(path);
	cr_assert_str_eq(text, HEAD CALL_OK "]}\n", "written as given, with a final newline");
	free(text);
	unlink(path);
	rmdir(dir);
}

/* What the fuzz target will do at length, briefly: every prefix of a real
 * file, and random byte changes to it, parse or are refused with a reason
 * (under ASan this also proves no overrun and no leak). */
Test(scenario, no_prefix_or_mutation_of_a_real_file_crashes_it)
{
	char *text = screen_slurp(FIXTURES "/orders_tour.json");
	cr_assert_not_null(text);
	size_t n = strlen(text);
	char err[512];
	for (size_t len = 0; len < n; len++) {
		struct scenario *s = NULL;
		int r = scenario_parse(text, len, &s, err, sizeof err);
		/* Only the file without its final newline is whole. */
		cr_assert(r == -1 ? *err != '\0' : len + 1 == n, "a prefix of %zu bytes parsed", len);
		scenario_free(s);
	}
	srand(7);
	char *copy = malloc(n + 1);
	for (int i = 0; i < 3000; i++) {
		memcpy(copy, text, n + 1);
		for (int k = 0; k < 1 + i % 4; k++)
			copy[(size_t)rand() % n] = (char)(rand() % 256);
		struct scenario *s = NULL;
		int r = scenario_parse(copy, n, &s, err, sizeof err);
		cr_assert(r == 0 || *err, "a refusal without a reason");
		scenario_free(s);
	}
	free(copy);
	free(text);
}
