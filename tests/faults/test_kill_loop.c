/* The fault loop: kill -9 of the process that owns the engine, again and
 * again on one state directory, at every named point (inside open, inside a
 * cell, right after a record's commit, inside pause, hibernate and close,
 * and right after a hibernation is stored) and at random times. A worker
 * process runs sessions in both tiers and tells this process, over a pipe,
 * every record digest it was given and every session it hibernated, before
 * it dies. After each kill the next engine on the directory must show:
 *   - no container, cgroup, process, bundle or image left (and the engine's
 *     own leak report empty);
 *   - every record that had been returned is in the store;
 *   - every session the worker hibernated restores with its variables;
 *   - PRAGMA quick_check ok.
 * It ends with "N kills, 0 leaked sandboxes, 0 lost records" and asserts
 * the zeros. BH_FAULTS_SEED=n replays the random kills of a run. */
#include "faults.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RANDOM_KILLS 12
#define MAX_HIBERNATED 64

/* The named points, each with the occurrence the worker's script reaches
 * (see worker(): a container round, then a kernel round, repeating). */
static const char *const named[] = {
	"open:1",	/* the container sandbox being created */
	"cell:2",	/* a cell in flight */
	"commit:3",	/* a record committed, its answer not yet given */
	"pause:1",	/* a freeze in flight */
	"close:1",	/* the row ended, kill and delete in flight */
	"open:2",	/* a kernel sandbox being created */
	"cell:7",	/* a kernel cell in flight */
	"pause:2",	/* a kernel pause in flight */
	"hibernate:1",	/* a checkpoint in flight */
	"hibernated:1", /* the store says hibernated, the caller not yet told */
	"close:2",	/* the second round's close, a restored kernel one before it */
};
#define N_NAMED (sizeof named / sizeof named[0])

static struct harness h;
static char state[4096];

static void setup(void)
{
	harness_open(&h, NULL); /* the directory, and (cached) evidence */
	snprintf(state, sizeof state, "%s", h.state_dir);
	bh_engine_close(h.e);
	h.e = NULL;
}

static void teardown(void)
{
	harness_close(&h); /* an engine opened here reaps whatever a failure left */
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (write(fd, line, (size_t)n) != n)
		_exit(3);
}

/* Runs until killed (the hook, or the parent). Exit codes say what went
 * wrong when it stops on its own. Reports, one a line:
 *   R <record digest>          a cell's answer was given
 *   h <id> <fp> <value>        about to hibernate a session holding value
 *   H <id>                     it hibernated
 *   W <id>                     about to wake a hibernated one (it is awake
 *                              from then on: a kill reaps it)
 *   C <id>                     a hibernated one was restored and closed */
static void worker(int fd, const char *crash_at)
{
	char why[512];
	bh_engine *e = faults_engine_open(state, crash_at, why, sizeof why);
	if (!e)
		_exit(10);
	char prev_id[64] = "", prev_value[64] = "";
	for (unsigned round = 0;; round++) {
		enum bh_tier tier = round % 2 ? BH_TIER_KERNEL : BH_TIER_CONTAINER;
		struct faults_cell c;
		if (tier == BH_TIER_KERNEL && prev_id[0]) {
			/* The conversation comes back: restore, check, close. */
			bh_session *p = bh_engine_find_session(e, prev_id, FAULTS_PRINCIPAL);
			if (!p)
				_exit(20);
			say(fd, "W %s\n", prev_id);
			if (faults_cell(e, p, "v", 0, &c) < 0 || !strstr(c.out, prev_value))
				_exit(21);
			say(fd, "R %s\n", c.record);
			if (faults_close(e, p, why, sizeof why) < 0)
				_exit(22);
			say(fd, "C %s\n", prev_id);
			prev_id[0] = '\0';
		}
		bh_session *s = faults_open(e, tier, why, sizeof why);
		if (!s)
			_exit(11);
		for (int i = 0; i < 3; i++) {
			char code[64];
			snprintf(code, sizeof code, "x = %d; x", i);
			if (faults_cell(e, s, code, 0, &c) < 0)
				_exit(12);
			say(fd, "R %s\n", c.record);
		}
		if (faults_action(e, s, bh_session_pause, why, sizeof why) < 0)
			_exit(13);
		if (faults_cell(e, s, "x", 0, &c) < 0) /* wakes it */
			_exit(14);
		say(fd, "R %s\n", c.record);
		if (tier == BH_TIER_CONTAINER) {
			if (faults_close(e, s, why, sizeof why) < 0)
				_exit(15);
			continue;
		}
		char value[64], code[96];
		snprintf(value, sizeof value, "kept-%d-%u", (int)getpid(), round);
		snprintf(code, sizeof code, "v = '%s'", value);
		if (faults_cell(e, s, code, 0, &c) < 0)
			_exit(16);
		say(fd, "R %s\n", c.record);
		struct bh_session_info info;
		bh_session_get_info(s, &info);
		say(fd, "h %s %s %s\n", bh_session_id(s), info.fingerprint, value);
		if (faults_action(e, s, bh_session_hibernate, why, sizeof why) < 0)
			_exit(17);
		say(fd, "H %s\n", bh_session_id(s));
		snprintf(prev_id, sizeof prev_id, "%s", bh_session_id(s));
		snprintf(prev_value, sizeof prev_value, "%s", value);
	}
}

struct hibernated {
	char id[64], fp[65], value[64];
	bool confirmed; /* the worker was told it hibernated */
	bool woken;     /* and then woke it (a kill after that reaps it) */
};

static struct {
	int kills, leaked, lost_records, lost_hibernated, restored;
	char first[4096];
} tally;

static void first_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void first_problem(const char *fmt, ...)
{
	if (tally.first[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tally.first, sizeof tally.first, fmt, ap);
	va_end(ap);
}

/* One kill: the worker runs with crash_at (or is killed after delay_ms),
 * then the next engine's view is checked. */
static void one_kill(const char *crash_at, int delay_ms)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[0]);
		worker(p[1], crash_at);
	}
	close(p[1]);
	const char *where = crash_at ? crash_at : "random";
	if (delay_ms > 0)
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	size_t cap = 1 << 16, len = 0;
	char *log = malloc(cap);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bool sent = false;
	for (;;) {
		if (len + 4096 > cap)
			log = realloc(log, cap *= 2);
		ssize_t r = read(p[0], log + len, cap - len - 1);
		if (r > 0) {
			len += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		/* Non-blocking (a timed kill): wait a little, kill when due. */
		clock_gettime(CLOCK_MONOTONIC, &t);
		long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (!sent && ms >= delay_ms) {
			kill(pid, SIGKILL);
			sent = true;
		}
		usleep(5000);
	}
	log[len] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		  "the worker was not killed at %s (status %d: %s %d)", crash_at ? crash_at : "a random time",
		  st, WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	tally.kills++;

	/* The next engine, once the dead one's warden has let go. */
	harness_wait_for_warden(state);
	harness_open_at(&h, state, NULL);
	char report[8192] = "";
	int leaks = faults_leaks(h.e, state, report, sizeof report);
	if (leaks) {
		tally.leaked += leaks;
		first_problem("after the kill at %s (%s):\n%s", where, crash_at ? "named" : "random", report);
	}
	char out[65536];
	struct hibernated hib[MAX_HIBERNATED];
	int nh = 0;
	for (char *save = NULL, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == 'R') {
			faults_sh(out, sizeof out,
				  "sqlite3 '%s' \"SELECT count(*) FROM records WHERE record_sha256 = '%s'\"",
				  bh_engine_store_path(h.e), line + 2);
			if (strcmp(out, "1\n")) {
				tally.lost_records++;
				first_problem("after the kill at %s: returned record %s is not in the store",
					      where, line + 2);
			}
		} else if (line[0] == 'h' && nh < MAX_HIBERNATED) {
			struct hibernated *x = &hib[nh++];
			memset(x, 0, sizeof *x);
			sscanf(line + 2, "%63s %64s %63s", x->id, x->fp, x->value);
		} else if (line[0] == 'H' || line[0] == 'W' || line[0] == 'C') {
			for (int i = 0; i < nh; i++)
				if (!strcmp(hib[i].id, line + 2)) {
					if (line[0] == 'H')
						hib[i].confirmed = true;
					else if (line[0] == 'W')
						hib[i].woken = true;
					else
						hib[i].id[0] = '\0'; /* closed by the worker */
				}
		}
	}
	/* Every session whose row says hibernated (confirmed or caught by the
	 * kill right after the store said so) restores with its value. */
	for (int i = 0; i < nh; i++) {
		if (!hib[i].id[0])
			continue;
		faults_sh(out, sizeof out, "sqlite3 '%s' \"SELECT state FROM sessions WHERE fingerprint = '%s'\"",
			  bh_engine_store_path(h.e), hib[i].fp);
		bool stored = !strcmp(out, "hibernated\n");
		if (!stored) {
			if (hib[i].confirmed && !hib[i].woken) {
				tally.lost_hibernated++;
				first_problem("after the kill at %s: hibernated session %.12s is %s", where,
					      hib[i].fp, out);
			}
			continue;
		}
		bh_session *s = bh_engine_find_session(h.e, hib[i].id, FAULTS_PRINCIPAL);
		struct faults_cell c;
		if (!s || faults_cell(h.e, s, "v", 0, &c) < 0 || !strstr(c.out, hib[i].value)) {
			tally.lost_hibernated++;
			first_problem("after the kill at %s: hibernated session %.12s did not restore: %s",
				      where, hib[i].fp, s ? c.err : "not found");
			continue;
		}
		tally.restored++;
		char why[512];
		cr_assert_eq(faults_close(h.e, s, why, sizeof why), 0, "%s", why);
	}
	faults_sh(out, sizeof out, "sqlite3 '%s' 'PRAGMA quick_check'", bh_engine_store_path(h.e));
	cr_assert_str_eq(out, "ok\n", "quick_check after the kill at %s: %s", where, out);
	/* Nothing live is left for the next worker: what leaked is reaped so
	 * the rounds stay independent (and counted above). */
	if (leaks) {
		struct bh_leak *reaped = NULL;
		bh_engine_gc(h.e, &reaped);
		free(reaped);
	}
	bh_engine_close(h.e);
	h.e = NULL;
}

Test(faults, kill_9_at_every_named_point_and_at_random_times_loses_nothing, .init = setup,
     .fini = teardown, .timeout = 400)
{
	memset(&tally, 0, sizeof tally);
	unsigned seed = getenv("BH_FAULTS_SEED") ? (unsigned)atol(getenv("BH_FAULTS_SEED"))
						 : (unsigned)time(NULL) ^ (unsigned)getpid();
	srandom(seed);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < N_NAMED; i++)
		one_kill(named[i], 0);
	/* Random times: from the worker's start (engine open and its sweep
	 * included) to well into its second round. */
	for (int i = 0; i < RANDOM_KILLS; i++)
		one_kill(NULL, 100 + (int)(random() % 3900));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("faults: %d kills (%zu at named points, %d at random times, seed %u), %d leaked "
	       "sandboxes, %d lost records, %d lost hibernated sessions (%d restored) in %.0f s\n",
	       tally.kills, N_NAMED, RANDOM_KILLS, seed, tally.leaked, tally.lost_records,
	       tally.lost_hibernated, tally.restored,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("%d kills, %d leaked sandboxes, %d lost records\n", tally.kills, tally.leaked,
	       tally.lost_records);
	fflush(stdout);
	cr_assert_geq(tally.kills, 20);
	cr_assert_eq(tally.leaked, 0, "%s", tally.first);
	cr_assert_eq(tally.lost_records, 0, "%s", tally.first);
	cr_assert_eq(tally.lost_hibernated, 0, "%s", tally.first);
	cr_assert_gt(tally.restored, 0, "no hibernated session was ever caught by a kill");
}
