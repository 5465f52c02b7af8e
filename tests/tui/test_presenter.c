/* The replay for a class, with no runtime at all (like test_replay.c): the
 * real `bulkhead replay --script` headless, PATH empty, HOME fresh.
 *
 * - presenter: presenter mode over the shipped concurrent_calls at 80x24,
 *   200x60 and in ASCII (LC_ALL=C), jumping to a step by number, play that
 *   pauses by itself at STOPPED HERE, q back to the player.
 * - lanes: the three calls of concurrent_calls on a time axis (running,
 *   waiting, refused), the cursor moved through the moments; a recording
 *   with no call times says so.
 * - handout: `bulkhead replay --handout` holds every step's code and
 *   answer; the console's `e` writes one and flashes its absolute path; an
 *   existing file is never overwritten.
 * Whole screens are compared with tests/tui/expected/ (BH_TUI_UPDATE=1
 * rewrites them; read each by eye). */
#include "scenario.h"
#include "screen_compare.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHIPPED BH_SOURCE_DIR "/data/scenarios"
#define FIXTURES BH_SOURCE_DIR "/tests/tui/fixtures/scenarios"

static char dir[PATH_MAX]; /* this test's: work/, home/, bin/ (empty) */

static void setup(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	snprintf(dir, sizeof dir, "%s/presenter-XXXXXX", r && *r ? r : "/tmp");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	char sub[PATH_MAX + 16];
	for (const char *const *d = (const char *const[]){"work", "home", "bin", NULL}; *d; d++) {
		snprintf(sub, sizeof sub, "%s/%s", dir, *d);
		cr_assert_eq(mkdir(sub, 0700), 0);
	}
}

static void teardown(void)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (*dir && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* All of a stream (caller frees). */
static char *read_all(FILE *f)
{
	size_t cap = 8192, n = 0, got;
	char *b = malloc(cap);
	while ((got = fread(b + n, 1, cap - n - 1, f)) > 0)
		if ((n += got) + 1 >= cap)
			b = realloc(b, cap *= 2);
	b[n] = '\0';
	return b;
}

/* Runs `bulkhead ARGS` in WORK at LINESxCOLS in the locale given; what it
 * said (caller frees) and its exit status. A script line
 * `:save-display NAME` saves WORK/NAME.txt. */
static char *run(int *status, int lines, int cols, const char *locale, const char *scenarios,
		 const char *args, const char *script)
{
	char path[PATH_MAX + 32], cmd[32768];
	if (script) {
		snprintf(path, sizeof path, "%s/work/script.txt", dir);
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		for (const char *p = script; *p;) {
			size_t n = strcspn(p, "\n");
			if (n > 14 && !strncmp(p, ":save-display ", 14))
				fprintf(f, ":save-display %s/work/%.*s.txt\n", dir, (int)(n - 14), p + 14);
			else
				fprintf(f, "%.*s\n", (int)n, p);
			p += n + (p[n] ? 1 : 0);
		}
		fclose(f);
	}
	char tail[PATH_MAX + 64] = "";
	if (script)
		snprintf(tail, sizeof tail, " --script '%s/work/script.txt'", dir);
	snprintf(cmd, sizeof cmd,
		 "cd '%s/work' && exec timeout 60 /usr/bin/env -i PATH='%s/bin' HOME='%s/home' "
		 "BULKHEAD_STATE='%s/home/state' BULKHEAD_SCENARIOS='%s' TERM=xterm LINES=%d COLUMNS=%d "
		 "TZ=UTC NO_COLOR=1 LC_ALL=%s ASAN_OPTIONS=\"$ASAN_OPTIONS\" UBSAN_OPTIONS=\"$UBSAN_OPTIONS\" "
		 "'%s' %s%s 2>&1",
		 dir, dir, dir, dir, scenarios, lines, cols, locale, BH_TEST_CLI, args, tail);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char *out = read_all(p);
	int st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return out;
}

/* A console that must run quietly. */
static void replay(int lines, int cols, const char *locale, const char *scenarios, const char *args,
		   const char *script)
{
	int st;
	char *said = run(&st, lines, cols, locale, scenarios, args, script);
	cr_assert_eq(st, 0, "bulkhead %s exited %d: %s", args, st, said);
	cr_assert_str_empty(said, "bulkhead %s said: %s", args, said);
	free(said);
}

static char *shot(const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/work/%s.txt", dir, name);
	char *s = screen_slurp(path);
	cr_assert_not_null(s, "no screen %s was saved", name);
	return s;
}

/* WORK/NAME.txt against tests/tui/expected/NAME.txt, whole; the test's
 * directory shows as <DIR>. */
static void screen(const char *name)
{
	char *raw = shot(name);
	size_t cap = strlen(raw) + 4096, o = 0;
	char *got = malloc(cap);
	for (const char *p = raw; *p;) {
		if (!strncmp(p, dir, strlen(dir))) {
			o += (size_t)sprintf(got + o, "<DIR>");
			p += strlen(dir);
		} else {
			got[o++] = *p++;
		}
	}
	got[o] = '\0';
	free(raw);
	screen_compare(BH_TUI_EXPECTED, name, got);
}

static void has(const char *name, const char *text)
{
	char *s = shot(name);
	cr_assert_not_null(strstr(s, text), "screen %s lacks \"%s\":\n%s", name, text, s);
	free(s);
}

static void lacks(const char *name, const char *text)
{
	char *s = shot(name);
	cr_assert_null(strstr(s, text), "screen %s shows \"%s\":\n%s", name, text, s);
	free(s);
}

/* The rows of a screen holding nothing. */
static int empty_rows(const char *name)
{
	char *s = shot(name);
	int n = 0;
	for (char *l = s; *l; l = strchr(l, '\n') + 1) {
		n += *l == '\n';
		if (!strchr(l, '\n'))
			break;
	}
	free(s);
	return n;
}

/* ---- presenter mode ---- */

TestSuite(presenter, .init = setup, .fini = teardown, .timeout = 120);

Test(presenter, presenter_mode_has_no_header_draws_the_hops_as_boxes_and_jumps_to_a_step_by_number)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       ":save-display presenter-80x24\n"
	       "3g\n"
	       ":save-display presenter-stopped-here\n"
	       "9g\n"
	       ":save-display presenter-no-step-9\n"
	       "q\n"
	       ":save-display presenter-back-in-the-player\n");
	screen("presenter-80x24");
	lacks("presenter-80x24", "bulkhead 0.1.0"); /* no header */
	lacks("presenter-80x24", "?:help");         /* no hints */
	has("presenter-80x24", "step 1/3 [");
	has("presenter-80x24", " ms  all hops  paused"); /* the step seen whole */
	has("presenter-80x24", "┃ model  ┃━━▶┃ agent  ┃");
	has("presenter-80x24", "The first call runs");
	screen("presenter-stopped-here");
	has("presenter-stopped-here", "step 3/3 [");
	has("presenter-stopped-here", "┃STOPPED ┃");
	has("presenter-stopped-here", "┃  HERE  ┃◁──│        │"); /* the sandbox never lit */
	has("presenter-stopped-here", "CALL python: REFUSED, nothing ran");
	has("presenter-no-step-9", "no step 9: this scenario has 3");
	/* q leaves the player where the presenter was (step 3), not step 1 */
	has("presenter-back-in-the-player", "Replay (concurrent_calls: step 3/3)");
}

/* l follows the call hop by hop along its recorded path, each hop with its
 * own narration and what crossed it on the wire; a refused call stops at
 * the daemon, and the refusal travels back up. */
Test(presenter, l_follows_a_call_hop_by_hop_to_the_hop_that_refused_it_and_back_up)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       "2g\n"
	       "l\n"
	       ":save-display presenter-hop-model\n"
	       "llll\n"
	       ":save-display presenter-hop-refused\n"
	       "l\n"
	       ":save-display presenter-hop-back\n"
	       "h\n"
	       ":save-display presenter-hop-refused-again\n"
	       "q\n"
	       ":save-display presenter-hop-back-in-the-player\n");
	screen("presenter-hop-model");
	has("presenter-hop-model", "step 3/3 [");
	has("presenter-hop-model", "hop 1/9");
	has("presenter-hop-model", "┃(1) now ┃");
	has("presenter-hop-model", "model, on the way down: Call 3 of 3");
	has("presenter-hop-model", "on the wire:");
	screen("presenter-hop-refused");
	has("presenter-hop-refused", "hop 5/9");
	has("presenter-hop-refused", "daemon, on the way down: The daemon refused it");
	has("presenter-hop-refused", "┃STOPPED ┃");
	has("presenter-hop-refused", "┃manager ┃━━▶┃ daemon ┃──▷│sandbox │");
	screen("presenter-hop-back");
	has("presenter-hop-back", "manager, on the way back: The refusal comes back");
	has("presenter-hop-back", "┃(6) now ┃◀━━┃  HERE  ┃◁──│"); /* the refusal's way back */
	has("presenter-hop-refused-again", "hop 5/9");
	/* q: the player is at the presenter's step and hop, its wire shown */
	screen("presenter-hop-back-in-the-player");
	has("presenter-hop-back-in-the-player", "Replay (concurrent_calls: step 3/3, hop 5/9)");
	has("presenter-hop-back-in-the-player", "hop 5/9, going down: daemon");
}

/* The player's last row says who recorded it, against what: whole when it
 * fits, else shortened a clause at a time (the day for the second, no
 * parenthesis, the daemon to its first comma, the recorder alone), never cut
 * mid-word, at 80 and at 120 columns. The title and its lesson wrap over
 * three rows on a screen of 30 lines; on 24 one row says it goes on. */
Test(presenter, the_players_recorded_by_line_is_shortened_not_cut_and_its_lesson_wraps)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay trigger_floor_refused",
	       ":save-display player-recorded-by-80\n");
	has("player-recorded-by-80", "\nrecorded 2026-");
	has("player-recorded-by-80", " by clients/typescript npm run record\n");
	has("player-recorded-by-80", "An agent that asks for the vm\xe2\x80\xa6\n"); /* goes on: … */
	replay(24, 120, "C.UTF-8", SHIPPED, "replay trigger_floor_refused",
	       ":save-display player-recorded-by-120\n");
	has("player-recorded-by-120",
	    " by clients/typescript npm run record against bulkhead serve 0.1.0 on loopback TCP, tier kernel\n");
	replay(24, 120, "C.UTF-8", SHIPPED, "replay next_turn", ":save-display player-recorded-by-120-c\n");
	has("player-recorded-by-120-c",
	    " by bulkhead record against bulkhead serve 0.1.0 on a unix socket, tier container\n");
	/* one that fits is said whole */
	replay(24, 200, "C.UTF-8", SHIPPED, "replay next_turn", ":save-display player-recorded-by-200\n");
	has("player-recorded-by-200", "\nrecorded by bulkhead record at 2026-");
	has("player-recorded-by-200", "against bulkhead serve 0.1.0 on a unix socket, tier container (crun");
	/* a projected screen of 40 lines has the rows: the lesson whole */
	replay(40, 100, "C.UTF-8", SHIPPED, "replay trigger_floor_refused",
	       ":save-display player-lesson-40\n");
	screen("player-lesson-40");
	has("player-lesson-40", "refused at the daemon before any sandbox exists: Nothing ran (isolation).\n");
}

Test(presenter, presenter_mode_scales_to_200x60_and_draws_ascii_boxes_under_lc_all_c)
{
	replay(60, 200, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       ":save-display presenter-200x60\n");
	screen("presenter-200x60");
	has("presenter-200x60", "executeCode"); /* a box wide enough for the whole name */
	/* The player left 40 rows empty at this size; the boxes and the
	 * narration now take the screen. */
	cr_assert_lt(empty_rows("presenter-200x60"), 30, "%d rows empty", empty_rows("presenter-200x60"));
	replay(24, 80, "C", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       "3g\n"
	       ":save-display presenter-ascii\n");
	screen("presenter-ascii");
	has("presenter-ascii", "# daemon #-->|sandbox |");
	has("presenter-ascii", "step 3/3 [###");
}

Test(presenter, play_goes_faster_with_plus_and_pauses_by_itself_at_stopped_here)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       "2g\n"
	       "+\n"
	       "+\n"
	       "+\n"
	       "+\n"
	       ":save-display presenter-fastest\n"
	       "<Space>\n"
	       ":sleep 4000\n"
	       ":save-display presenter-auto-paused\n"
	       "-\n"
	       ":save-display presenter-slower\n");
	has("presenter-fastest", "play: a move every 0.5 s");
	/* five hops into step 3, play stopped itself where the daemon refused */
	screen("presenter-auto-paused");
	has("presenter-auto-paused", "step 3/3 [");
	has("presenter-auto-paused", "hop 5/9");
	has("presenter-auto-paused", "paused (space plays)");
	has("presenter-auto-paused", "paused at STOPPED HERE (step 3): space plays on");
	has("presenter-slower", "play: a move every 1.0 s");
}

/* ---- lanes ---- */

Test(presenter, lanes_draw_three_calls_running_waiting_and_refused_on_one_time_axis)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "L\n"
	       ":save-display lanes-first\n"
	       "l\n"
	       "l\n"
	       ":save-display lanes-third-sent\n"
	       "l\n"
	       ":save-display lanes-third-answered\n"
	       "?\n"
	       ":save-display lanes-help\n");
	screen("lanes-first");
	screen("lanes-third-sent");
	/* The figures are the recording's own. */
	char err[512], line[256];
	struct scenario *s = NULL;
	cr_assert_eq(scenario_load(SHIPPED "/concurrent_calls.json", &s, err, sizeof err), 0, "%s", err);
	const struct scenario_step *c = s->steps;
	/* The third moment is the third call's send; how many moments follow
	 * depends on whether call 2 took a measurable time. */
	snprintf(line, sizeof line, "at +%lld ms (moment 3/", c[2].sent_ms - c[0].sent_ms);
	has("lanes-third-sent", line);
	snprintf(line, sizeof line, "waited %lld ms for call 1, ran %lld ms, exit 0",
		 c[0].answered_ms - c[1].sent_ms, c[1].answered_ms - c[0].answered_ms);
	has("lanes-third-sent", line);
	/* Its refusal came back at once or a millisecond or two later: at its
	 * send it is refused already, or being refused; the next moment, its
	 * answer, it is refused. */
	bool at_once = c[2].answered_ms == c[2].sent_ms;
	scenario_free(s);
	has("lanes-third-sent", "call 1: import time    ████");
	has("lanes-third-sent", "  running ");
	has("lanes-third-sent", "  waiting ");
	has("lanes-third-sent", at_once ? "  refused " : "  being refused ");
	has("lanes-third-answered", "  refused ");
	has("lanes-third-answered", "✗");
	has("lanes-third-sent", "░░░");
	has("lanes-third-sent", "✗");
	has("lanes-help", "space         lanes      play or pause the time cursor");
	replay(24, 80, "C", SHIPPED, "replay concurrent_calls", "L\nl\nl\n:save-display lanes-ascii\n");
	screen("lanes-ascii");
	has("lanes-ascii", "# running   ~ waiting its turn   x refused");
}

Test(presenter, lanes_of_a_recording_without_call_times_say_how_to_get_them)
{
	replay(24, 80, "C.UTF-8", FIXTURES, "replay orders_tour", "l\nL\n:save-display lanes-no-times\n");
	has("lanes-no-times", "No call of this scenario carries its times");
}

/* :present and :lanes open a scenario by name from anywhere; with none
 * shown and none named they say what they need. */
Test(presenter, present_and_lanes_commands_open_a_named_scenario_or_say_what_they_need)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay",
	       ":lanes\n"
	       ":save-display lanes-nothing-shown\n"
	       ":present nope\n"
	       ":save-display present-no-such\n"
	       ":present concurrent_calls\n"
	       ":save-display present-by-name\n");
	has("lanes-nothing-shown", ":lanes NAME, or open a scenario first (:replay, then enter)");
	has("present-no-such", ":present: ");
	has("present-no-such", "nope");
	has("present-by-name", "A call while another runs waits; a third is refused\n step 1/3 [");
}

/* The scenario list: a scenario by its number, then enter. */
Test(presenter, a_scenarios_number_in_the_list_selects_it_and_enter_opens_it)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay",
	       "4\n"
	       ":save-display list-number-4\n"
	       "<Enter>\n"
	       ":save-display list-number-opened\n"
	       "<Esc>\n"
	       "99\n"
	       ":save-display list-number-99\n");
	has("list-number-4", "scenario 4: concurrent_calls (enter opens it)");
	has("list-number-opened", "Replay (concurrent_calls: step 1/3)");
	has("list-number-99", "no scenario 99: the list has ");
}

/* ---- a live call, on no source ---- */

Test(presenter, live_on_a_replay_says_it_needs_a_daemon_or_an_engine)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay", ":live\n:save-display live-no-source\n");
	has("live-no-source", "following a live call needs a daemon (bulkhead console --attach SOCK)");
	has("live-no-source", "waiting"); /* nothing lit but the daemon's wait */
	/* projected like presenter mode: no header, no hints, its keys below */
	lacks("live-no-source", "bulkhead 0.1.0");
	lacks("live-no-source", "?:help");
	has("live-no-source", "esc: back");
}

/* ---- handouts ---- */

Test(presenter, the_cli_handout_holds_every_steps_code_answer_and_narration_and_never_overwrites)
{
	const char *const names[] = {"next_turn", "concurrent_calls", "floor_refused"};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		char args[256], out[PATH_MAX + 64];
		snprintf(args, sizeof args, "replay --handout %s %s.md", names[k], names[k]);
		int st;
		char *said = run(&st, 24, 80, "C.UTF-8", SHIPPED, args, NULL);
		snprintf(out, sizeof out, "%s/work/%s.md", dir, names[k]);
		cr_assert_eq(st, 0, "%s: %s", args, said);
		char want[PATH_MAX + 96];
		snprintf(want, sizeof want, "handout written: %s\n", out);
		cr_assert_str_eq(said, want);
		free(said);
		char *md = screen_slurp(out), err[512], path[PATH_MAX + 64];
		cr_assert_not_null(md);
		snprintf(path, sizeof path, "%s/%s.json", SHIPPED, names[k]);
		struct scenario *s = NULL;
		cr_assert_eq(scenario_load(path, &s, err, sizeof err), 0, "%s", err);
		for (size_t i = 0; i < s->n_steps; i++) {
			const struct scenario_step *stp = &s->steps[i];
			char head[64];
			snprintf(head, sizeof head, "### Step %zu: %s", i + 1, scenario_kind_name(stp->kind));
			cr_assert_not_null(strstr(md, head), "%s lacks \"%s\"", names[k], head);
			for (size_t v = 0; v < stp->n_path; v++) { /* the path, hop by hop */
				char hop[128];
				snprintf(hop, sizeof hop, "\n%zu. %s (%s): ", v + 1, scenario_hop_name(stp->path[v].hop),
					 scenario_leg_name(stp->path[v].leg));
				cr_assert_not_null(strstr(md, hop), "%s step %zu lacks \"%s\"", names[k], i + 1, hop + 1);
			}
			if (stp->kind != SCENARIO_CALL)
				continue;
			cr_assert_not_null(strstr(md, stp->code), "%s step %zu: no code", names[k], i + 1);
			if (stp->outcome != SCENARIO_ANSWERED) {
				cr_assert_not_null(strstr(md, stp->error), "%s step %zu: no refusal", names[k], i + 1);
				continue;
			}
			char exit[64];
			snprintf(exit, sizeof exit, "- exitCode: `%s`", scenario_answer_get(stp, "exitCode"));
			cr_assert_not_null(strstr(md, exit), "%s step %zu: no exit", names[k], i + 1);
			for (size_t a = 0; a < stp->n_answer; a++)
				if (!strcmp(stp->answer[a].key, "stdout") && *stp->answer[a].text)
					cr_assert_not_null(strstr(md, stp->answer[a].text), "%s step %zu: no stdout",
							   names[k], i + 1);
		}
		scenario_free(s);
		free(md);
	}
	int st;
	char *said = run(&st, 24, 80, "C.UTF-8", SHIPPED, "replay --handout next_turn next_turn.md", NULL);
	cr_assert_neq(st, 0);
	cr_assert_not_null(strstr(said, "not overwritten, it exists"), "%s", said);
	free(said);
}

Test(presenter, e_in_the_player_writes_the_handout_and_flashes_its_absolute_path)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "e\n"
	       ":save-display handout-prompt\n"
	       "<Enter>\n"
	       ":save-display handout-written\n");
	has("handout-prompt", "handout (Markdown) to: concurrent_calls-handout.md");
	char path[PATH_MAX + 64], flash[PATH_MAX + 96];
	snprintf(path, sizeof path, "%s/work/concurrent_calls-handout.md", dir);
	snprintf(flash, sizeof flash, "handout written: %.40s", path); /* the flash is cut at 80 */
	has("handout-written", flash);
	char *md = screen_slurp(path);
	cr_assert_not_null(md, "no handout at %s", path);
	cr_assert_not_null(strstr(md, "print('second, after waiting its turn')"));
	cr_assert_not_null(strstr(md, "Nothing ran (capacity)"));
	free(md);
}

/* In presenter mode too: the prompt on the last row, the path in the flash. */
Test(presenter, e_in_presenter_mode_asks_on_the_last_row_and_writes_the_handout)
{
	replay(24, 80, "C.UTF-8", SHIPPED, "replay concurrent_calls",
	       "P\n"
	       "e\n"
	       "<Backspace><Backspace>\n"
	       "txt\n"
	       ":save-display presenter-handout-prompt\n"
	       "<Enter>\n"
	       ":save-display presenter-handout-written\n");
	has("presenter-handout-prompt", "handout (Markdown) to: concurrent_calls-handout.txt");
	has("presenter-handout-written", "handout written: ");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/work/concurrent_calls-handout.txt", dir);
	char *md = screen_slurp(path);
	cr_assert_not_null(md, "no handout at %s", path);
	cr_assert_not_null(strstr(md, "# A call while another runs waits; a third is refused"));
	free(md);
}

/* A scenario file is anyone's: its prose reads as text in the handout (no
 * link, image or HTML), and code holding a fence cannot close the one
 * around it. */
Test(presenter, a_hostile_scenarios_handout_escapes_its_prose_and_fences_its_code_longer)
{
	char err[512];
	struct scenario *s = NULL;
	cr_assert_eq(scenario_load(SHIPPED "/concurrent_calls.json", &s, err, sizeof err), 0, "%s", err);
	struct scenario_step *st = &s->steps[0];
	free(st->narration);
	free(st->code);
	st->narration = strdup("see [this](http://evil.example) <img src=x onerror=alert(1)>\x1b[2J");
	st->code = strdup("print(1)\n````\n# not a heading\n");
	char *md = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&md, &n);
	cr_assert_eq(scenario_handout(s, f), 0);
	fclose(f);
	scenario_free(s);
	cr_assert_not_null(strstr(md, "see \\[this\\](http://evil.example) \\<img src=x onerror=alert(1)\\>\\x1B\\[2J"),
			   "%s", md);
	cr_assert_not_null(strstr(md, "`````python\nprint(1)\n````\n# not a heading\n`````\n"), "%s", md);
	free(md);
}
